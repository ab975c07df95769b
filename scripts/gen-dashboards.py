#!/usr/bin/env python3
"""Writes the Grafana dashboards in dashboards/*.json.

The JSON files are what Grafana loads and what tests/it/dashboards.rs checks; this script is how they are
made, so that every dashboard shares one set of template variables, one data source variable and one
layout. Edit here, run `python3 scripts/gen-dashboards.py`, and commit both.

Panels that are rightly empty on a healthy cluster carry `"argus": {"may_be_empty": true}` (see
dashboards/README.md); the test checks them for validity only, and allows at most one in ten panels.
"""

import json
import pathlib

OUT = pathlib.Path(__file__).resolve().parent.parent / "dashboards"
DS = {"type": "prometheus", "uid": "${datasource}"}

# Label filters every query of the fleet dashboards carries.
C = 'cluster=~"$cluster"'
CH = 'cluster=~"$cluster", host=~"$host"'
CHG = 'cluster=~"$cluster", host=~"$host", gpu=~"$gpu"'


def var_datasource():
    return {
        "name": "datasource",
        "label": "Data source",
        "type": "datasource",
        "query": "prometheus",
        "current": {"text": "Argus", "value": "argus"},
        "hide": 0,
    }


def var_query(name, label, query, multi=True, all_value=".*", sort=1):
    v = {
        "name": name,
        "label": label,
        "type": "query",
        "datasource": DS,
        "definition": query,
        "query": {"query": query, "refId": f"{name}-var"},
        "refresh": 2,
        "sort": sort,
        "multi": multi,
        "includeAll": multi,
        "current": {"text": ["All"], "value": ["$__all"]} if multi else {},
        "hide": 0,
    }
    if multi:
        v["allValue"] = all_value
    return v


def var_custom(name, label, values):
    return {
        "name": name,
        "label": label,
        "type": "custom",
        "query": ",".join(values),
        "options": [{"text": x, "value": x, "selected": i == 0} for i, x in enumerate(values)],
        "current": {"text": values[0], "value": values[0]},
        "multi": False,
        "includeAll": False,
        "hide": 0,
    }


CLUSTER = var_query("cluster", "Cluster", "label_values(host_uptime_seconds, cluster)")
HOST = var_query("host", "Host", 'label_values(host_uptime_seconds{cluster=~"$cluster"}, host)')
GPU = var_query("gpu", "GPU", 'label_values(gpu_utilization_ratio{cluster=~"$cluster", host=~"$host"}, gpu)')
TRAIN_JOB = var_query("job", "Training job", 'label_values(train_step{cluster=~"$cluster"}, job)')
SERVICE_JOB = var_query("job", "Inference service (scrape job)", "label_values(vllm:num_requests_running, job)")


def target(expr, legend="__auto", ref="A", instant=False, fmt=None):
    t = {"datasource": DS, "expr": expr, "legendFormat": legend, "refId": ref, "range": not instant}
    if instant:
        t["instant"] = True
    if fmt:
        t["format"] = fmt
    return t


def panel(kind, title, targets, description, unit=None, w=12, h=8, may_be_empty=False, **extra):
    p = {
        "type": kind,
        "title": title,
        "description": description,
        "datasource": DS,
        "targets": targets,
        "fieldConfig": {"defaults": {}, "overrides": []},
        "options": {},
        "_size": (w, h),
    }
    if unit:
        p["fieldConfig"]["defaults"]["unit"] = unit
    if may_be_empty:
        p["argus"] = {"may_be_empty": True}
    p.update(extra)
    return p


def ts(title, exprs, description, unit=None, w=12, h=8, **kw):
    targets = [target(e, legend, chr(ord("A") + i)) for i, (e, legend) in enumerate(exprs)]
    p = panel("timeseries", title, targets, description, unit, w, h, **kw)
    p["options"] = {"legend": {"displayMode": "table", "placement": "right", "calcs": ["lastNotNull", "max"]}}
    return p


def stat(title, expr, description, unit=None, w=4, h=4, thresholds=None, **kw):
    p = panel("stat", title, [target(expr, "", "A", instant=True)], description, unit, w, h, **kw)
    p["options"] = {"reduceOptions": {"calcs": ["lastNotNull"]}, "colorMode": "background", "graphMode": "area"}
    if thresholds:
        p["fieldConfig"]["defaults"]["thresholds"] = {
            "mode": "absolute",
            "steps": [{"color": c, "value": v} for v, c in thresholds],
        }
    return p


def table(title, exprs, description, w=12, h=8, **kw):
    targets = [target(e, legend, chr(ord("A") + i), instant=True, fmt="table") for i, (e, legend) in enumerate(exprs)]
    p = panel("table", title, targets, description, None, w, h, **kw)
    p["transformations"] = [{"id": "merge", "options": {}}]
    return p


def history(title, expr, legend, description, unit=None, w=24, h=10):
    """A per-series heatmap: one row per GPU, coloured by value (Grafana's status history)."""
    p = panel("status-history", title, [target(expr, legend)], description, unit, w, h)
    p["options"] = {"showValue": "never", "rowHeight": 0.9, "colWidth": 0.9}
    p["fieldConfig"]["defaults"]["color"] = {"mode": "continuous-GrYlRd"}
    return p


def heatmap(title, expr, description, unit=None, w=12, h=8):
    """The distribution of a value over many series, bucketed by Grafana."""
    p = panel("heatmap", title, [target(expr, "")], description, unit, w, h)
    p["options"] = {
        "calculate": True,
        "calculation": {"yBuckets": {"mode": "count", "value": "10"}},
        "color": {"mode": "scheme", "scheme": "Oranges"},
        "yAxis": {"unit": unit or "short"},
    }
    return p


def gauge(title, expr, legend, description, unit=None, w=12, h=6):
    p = panel("bargauge", title, [target(expr, legend, "A", instant=True)], description, unit, w, h)
    p["options"] = {"displayMode": "gradient", "orientation": "horizontal", "reduceOptions": {"calcs": ["lastNotNull"]}}
    p["fieldConfig"]["defaults"].update({"min": 0, "max": 1} if unit == "percentunit" else {})
    return p


def row(title):
    return {"type": "row", "title": title, "collapsed": False, "panels": [], "_size": (24, 1)}


def layout(panels):
    """Places panels left to right, wrapping at Grafana's 24 columns."""
    x = y = 0
    line_h = 0
    for i, p in enumerate(panels, start=1):
        w, h = p.pop("_size")
        if x + w > 24 or p["type"] == "row":
            x, y, line_h = 0, y + line_h, 0
        p["gridPos"] = {"x": x, "y": y, "w": w, "h": h}
        p["id"] = i
        x += w
        line_h = max(line_h, h)
        if p["type"] == "row":
            x, y, line_h = 0, y + h, 0
    return panels


def dashboard(uid, title, description, variables, panels, tags=()):
    return {
        "uid": uid,
        "title": title,
        "description": description,
        "tags": ["argus", *tags],
        "editable": True,
        "schemaVersion": 39,
        "version": 1,
        "refresh": "30s",
        "time": {"from": "now-6h", "to": "now"},
        "timezone": "browser",
        "graphTooltip": 1,
        "links": [{"title": "Argus", "type": "dashboards", "tags": ["argus"], "asDropdown": True}],
        "annotations": {
            "list": [
                {
                    "name": "Firing alerts",
                    "datasource": DS,
                    "enable": True,
                    "iconColor": "red",
                    "expr": 'ALERTS{alertstate="firing"}',
                    "step": "60s",
                    "titleFormat": "{{alertname}}",
                    "textFormat": "{{host}} {{severity}}",
                }
            ]
        },
        "templating": {"list": [var_datasource(), *variables]},
        "panels": layout(panels),
    }


def overview():
    return dashboard(
        "argus-overview",
        "Argus / Cluster overview",
        "GPU utilization and allocation, fleet health and alerts at a glance.",
        [CLUSTER],
        [
            stat("GPUs reporting", f"count(gpu_utilization_ratio{{{C}}})", "GPUs with a utilization sample in the last 5 minutes."),
            stat("Mean GPU utilization", f"avg(gpu_utilization_ratio{{{C}}})", "Mean over every GPU of the selected clusters.", "percentunit",
                 thresholds=[(None, "red"), (0.3, "orange"), (0.75, "green")]),
            stat("GPUs allocated", f"sum(gpu_processes{{{C}}} > bool 0)", "GPUs with at least one compute process on them."),
            stat("GPU memory allocated", f"sum(gpu_memory_used_bytes{{{C}}}) / sum(gpu_memory_total_bytes{{{C}}})", "Framebuffer in use over framebuffer size, whole fleet.", "percentunit"),
            stat("Hosts reporting", f"count(host_uptime_seconds{{{C}}})", "Hosts whose collector shipped host metrics in the last 5 minutes."),
            stat("Firing alerts", 'count(ALERTS{alertstate="firing"}) or vector(0)', "Alerts firing now, from alertd's rule evaluation.",
                 thresholds=[(None, "green"), (1, "red")]),
            ts("GPU utilization by host", [(f"avg by (host) (gpu_utilization_ratio{{{C}}})", "{{host}}")],
               "Mean utilization of each host's GPUs.", "percentunit"),
            ts("GPU allocation", [(f"sum(gpu_processes{{{C}}} > bool 0)", "allocated"), (f"count(gpu_utilization_ratio{{{C}}})", "total")],
               "GPUs running at least one process, against all GPUs."),
            heatmap("GPU utilization distribution", f"gpu_utilization_ratio{{{C}}}",
                    "How many GPUs sit at each utilization: a healthy packed fleet is concentrated at the top.", "percentunit"),
            ts("GPU memory used by host", [(f"sum by (host) (gpu_memory_used_bytes{{{C}}})", "{{host}}")], "Framebuffer allocated on each host.", "bytes"),
            ts("Unhealthy GPUs", [
                (f"sum(gpu_remapped_rows_pending{{{C}}} + gpu_remapped_rows_failed{{{C}}} > bool 0) or vector(0)", "remap pending or failed"),
                (f"sum(increase(gpu_ecc_errors_uncorrected_total{{{C}}}[$__rate_interval]) > bool 0) or vector(0)", "new uncorrected ECC"),
                (f"sum(gpu_throttle_reason{{{C}, reason=~\"hw_slowdown|hw_thermal_slowdown|hw_power_brake_slowdown\"}})", "hardware slowdown"),
            ], "GPUs that need attention: row remaps waiting for a reset or failed, uncorrectable ECC errors, hardware slowdowns."),
            ts("Collector health", [
                (f"sum by (source) (argus_collector_source_success{{{C}}} == bool 0)", "{{source}} failing"),
                (f"count(host_uptime_seconds{{{C}}})", "hosts reporting"),
            ], "Collector sources whose last round failed (per source, number of hosts), and hosts reporting."),
            ts("Alerts", [('count(ALERTS{alertstate="firing"}) or vector(0)', "firing"), ('count(ALERTS{alertstate="pending"}) or vector(0)', "pending")],
               "Alerts of alertd's rules over time. Incidents (grouped alerts, acknowledgements) are on the status page and /api/v1/incidents.", w=24),
        ],
    )


def gpu_fleet():
    gl = "{{host}} gpu {{gpu}}"
    return dashboard(
        "argus-gpu-fleet",
        "Argus / GPU fleet",
        "Every GPU: utilization heatmap, temperature, power, memory, clocks, ECC, Xid and NVLink errors.",
        [CLUSTER, HOST, GPU],
        [
            history("GPU utilization per GPU", f"gpu_utilization_ratio{{{CHG}}}", gl, "One row per GPU, coloured by utilization.", "percentunit"),
            history("GPU memory used per GPU", f"gpu_memory_used_bytes{{{CHG}}} / gpu_memory_total_bytes{{{CHG}}}", gl,
                    "One row per GPU, coloured by the share of its framebuffer allocated.", "percentunit"),
            ts("Temperature", [(f"gpu_temperature_celsius{{{CHG}}}", gl)], "GPU die temperature.", "celsius"),
            ts("Memory (HBM) temperature", [(f"gpu_memory_temperature_celsius{{{CHG}}}", gl)], "Where the board reports it.", "celsius"),
            ts("Power draw", [(f"gpu_power_watts{{{CHG}}}", gl)], "Board power draw.", "watt"),
            ts("Power against limit", [(f"gpu_power_watts{{{CHG}}} / gpu_power_limit_watts{{{CHG}}}", gl)],
               "Draw over the enforced limit: near 1 the board is power capped.", "percentunit"),
            ts("SM clock", [(f"gpu_sm_clock_hertz{{{CHG}}}", gl)], "SM clock; drops under load point at throttling.", "hertz"),
            ts("Clock throttle reasons", [(f"sum by (reason) (gpu_throttle_reason{{{CHG}, reason!=\"gpu_idle\"}})", "{{reason}}")],
               "GPUs held by each clocks-event reason (idle left out).", "short"),
            ts("ECC errors", [
                (f"sum by (host, gpu) (increase(gpu_ecc_errors_corrected_total{{{CHG}}}[$__rate_interval]))", "corrected {{host}}/{{gpu}}"),
                (f"sum by (host, gpu) (increase(gpu_ecc_errors_uncorrected_total{{{CHG}}}[$__rate_interval]))", "uncorrected {{host}}/{{gpu}}"),
            ], "ECC errors counted in each interval (volatile counters, since the driver loaded)."),
            ts("Row remapping", [
                (f"gpu_remapped_rows_uncorrectable{{{CHG}}}", "uncorrectable " + gl),
                (f"gpu_remapped_rows_pending{{{CHG}}}", "pending " + gl),
            ], "Rows remapped for uncorrectable errors, and remaps waiting for a GPU reset (Ampere and later)."),
            table("Xid errors in range", [(f"sum by (host, gpu, code) (increase(gpu_xid_errors_total{{{CHG}}}[$__range]))", "")],
                  "Xid errors reported by the driver in the dashboard's time range, per GPU and code. Empty on a healthy fleet: "
                  "the series appears with a GPU's first Xid.", may_be_empty=True),
            ts("PCIe replays", [(f"sum by (host, gpu) (rate(gpu_pcie_replays_total{{{CHG}}}[$__rate_interval]))", gl)],
               "PCIe replays per second; a steady rate points at a bad riser or slot.", "ops"),
            ts("NVLink errors", [
                (f"sum by (host, gpu) (rate(gpu_nvlink_crc_errors_total{{{CHG}}}[$__rate_interval]))", "CRC " + gl),
                (f"sum by (host, gpu) (rate(gpu_nvlink_replay_errors_total{{{CHG}}}[$__rate_interval]))", "replay " + gl),
            ], "NVLink CRC errors and replays per second, all links of a GPU.", "ops"),
            ts("NVLink throughput", [
                (f"sum by (host, gpu) (rate(gpu_nvlink_transmit_bytes_total{{{CHG}}}[$__rate_interval]))", "tx " + gl),
                (f"sum by (host, gpu) (rate(gpu_nvlink_receive_bytes_total{{{CHG}}}[$__rate_interval]))", "rx " + gl),
            ], "NVLink data rate, all links of a GPU.", "Bps"),
        ],
        tags=["gpu"],
    )


def node():
    return dashboard(
        "argus-node",
        "Argus / Node drill-down",
        "One host in detail: CPU, memory, its GPUs, disks, network and the collector itself.",
        [CLUSTER, HOST, GPU],
        [
            stat("Uptime", f"max(host_uptime_seconds{{{CH}}})", "Time since the host booted.", "s"),
            stat("CPUs", f"sum(host_cpus{{{CH}}})", "CPUs of the selected hosts."),
            stat("Load (1m) per CPU", f"sum(host_load1{{{CH}}}) / sum(host_cpus{{{CH}}})", "Above 1 the run queue is longer than the CPUs.", "short"),
            stat("Memory available", f"sum(host_memory_available_bytes{{{CH}}}) / sum(host_memory_total_bytes{{{CH}}})", "MemAvailable over MemTotal.", "percentunit",
                 thresholds=[(None, "red"), (0.1, "orange"), (0.2, "green")]),
            stat("Event log errors (range)", f"sum(increase(event_errors_total{{{CH}}}[$__range]))", "CUDA, NCCL, ECC and link errors found in the logs in the time range.",
                 thresholds=[(None, "green"), (1, "red")]),
            stat("Collector sources failing", f"sum(argus_collector_source_success{{{CH}}} == bool 0)", "Sources whose last round failed.",
                 thresholds=[(None, "green"), (1, "red")]),
            ts("CPU by mode", [(f"avg by (host, mode) (host_cpu_utilization_ratio{{{CH}, mode!=\"idle\"}})", "{{host}} {{mode}}")],
               "Share of CPU time per mode (idle left out).", "percentunit"),
            ts("Load", [(f"host_load1{{{CH}}}", "{{host}} 1m"), (f"host_load5{{{CH}}}", "{{host}} 5m")], "Load averages."),
            ts("Memory", [(f"host_memory_used_bytes{{{CH}}}", "{{host}} used"), (f"host_memory_cached_bytes{{{CH}}}", "{{host}} cached"),
                          (f"host_swap_used_bytes{{{CH}}}", "{{host}} swap used")], "Used (total − available), page cache and swap.", "bytes"),
            ts("Processes blocked on I/O", [(f"host_processes_blocked{{{CH}}}", "{{host}}")], "A steady non-zero count points at slow storage."),
            ts("GPU utilization", [(f"gpu_utilization_ratio{{{CHG}}}", "{{host}} gpu {{gpu}}")], "Per GPU.", "percentunit"),
            ts("GPU memory used", [(f"gpu_memory_used_bytes{{{CHG}}}", "{{host}} gpu {{gpu}}")], "Per GPU.", "bytes"),
            ts("GPU memory by owner", [(f"sum by (host, gpu, container_id, pod_uid, job, pid) (gpu_process_memory_used_bytes{{{CHG}}})",
                                         "{{host}}/{{gpu}} {{pod_uid}}{{job}}{{pid}}")], "Who holds the GPU memory: pod, Slurm job or process.", "bytes"),
            ts("Disk utilization", [(f"disk_utilization_ratio{{{CH}}}", "{{host}} {{device}}")], "Busy share of time per device.", "percentunit"),
            ts("Network", [(f"sum by (host) (rate(net_receive_bytes_total{{{CH}}}[$__rate_interval]))", "{{host}} rx"),
                           (f"sum by (host) (rate(net_transmit_bytes_total{{{CH}}}[$__rate_interval]))", "{{host}} tx")], "All interfaces.", "Bps"),
            ts("Event log errors", [(f"sum by (host, kind) (increase(event_errors_total{{{CH}}}[$__rate_interval]))", "{{host}} {{kind}}")],
               "Matching log lines per interval, by kind (cuda_oom, nccl_timeout, …)."),
            ts("Collector", [(f"argus_collector_source_duration_seconds{{{CH}}}", "{{host}} {{source}}")], "How long each source's last collection took.", "s"),
        ],
        tags=["node"],
    )


def storage():
    rl = "{{host}} {{device}}"
    return dashboard(
        "argus-storage",
        "Argus / Storage",
        "Block devices and filesystems: IOPS, throughput, latency, queue depth and space.",
        [CLUSTER, HOST],
        [
            ts("Read IOPS", [(f"sum by (host, device) (rate(disk_reads_completed_total{{{CH}}}[$__rate_interval]))", rl)], "Reads completed per second.", "iops"),
            ts("Write IOPS", [(f"sum by (host, device) (rate(disk_writes_completed_total{{{CH}}}[$__rate_interval]))", rl)], "Writes completed per second.", "iops"),
            ts("Read throughput", [(f"sum by (host, device) (rate(disk_read_bytes_total{{{CH}}}[$__rate_interval]))", rl)], "Bytes read per second.", "Bps"),
            ts("Write throughput", [(f"sum by (host, device) (rate(disk_written_bytes_total{{{CH}}}[$__rate_interval]))", rl)], "Bytes written per second.", "Bps"),
            ts("Read latency", [(f"rate(disk_read_time_seconds_total{{{CH}}}[$__rate_interval]) / rate(disk_reads_completed_total{{{CH}}}[$__rate_interval])", rl)],
               "Mean time per read. No point while a device reads nothing.", "s"),
            ts("Write latency", [(f"rate(disk_write_time_seconds_total{{{CH}}}[$__rate_interval]) / rate(disk_writes_completed_total{{{CH}}}[$__rate_interval])", rl)],
               "Mean time per write.", "s"),
            ts("Queue depth", [(f"rate(disk_io_time_weighted_seconds_total{{{CH}}}[$__rate_interval])", rl)], "Mean I/Os in flight."),
            ts("Utilization", [(f"disk_utilization_ratio{{{CH}}}", rl)], "Busy share of time; near 1 the device is saturated.", "percentunit"),
            ts("Filesystem used", [(f"fs_used_bytes{{{CH}}} / fs_size_bytes{{{CH}}}", "{{host}} {{mountpoint}}")], "Share of each filesystem in use.", "percentunit"),
            ts("Inodes free", [(f"fs_files_free{{{CH}}} / fs_files{{{CH}}}", "{{host}} {{mountpoint}}")], "Share of inodes still free.", "percentunit"),
            table("Filesystems", [(f"fs_avail_bytes{{{CH}}}", ""), (f"fs_readonly{{{CH}}}", "")],
                  "Space available to users, and 1 for filesystems mounted read-only.", w=24),
        ],
        tags=["storage"],
    )


def network():
    il = "{{host}} {{interface}}"
    pl = "{{host}} {{device}}:{{port}}"
    return dashboard(
        "argus-network",
        "Argus / Network and InfiniBand",
        "Ethernet interfaces, TCP, and InfiniBand / RoCE ports: bandwidth, errors, congestion.",
        [CLUSTER, HOST],
        [
            ts("Receive", [(f"rate(net_receive_bytes_total{{{CH}}}[$__rate_interval])", il)], "Bytes received per second.", "Bps"),
            ts("Transmit", [(f"rate(net_transmit_bytes_total{{{CH}}}[$__rate_interval])", il)], "Bytes sent per second.", "Bps"),
            ts("Drops and errors", [
                (f"sum by (host) (rate(net_receive_drop_total{{{CH}}}[$__rate_interval]) + rate(net_transmit_drop_total{{{CH}}}[$__rate_interval]))", "{{host}} drops"),
                (f"sum by (host) (rate(net_receive_errors_total{{{CH}}}[$__rate_interval]) + rate(net_transmit_errors_total{{{CH}}}[$__rate_interval]))", "{{host}} errors"),
            ], "Packets dropped and errors per second, all interfaces.", "pps"),
            ts("TCP retransmits", [(f"rate(net_tcp_retransmitted_segments_total{{{CH}}}[$__rate_interval]) / rate(net_tcp_out_segments_total{{{CH}}}[$__rate_interval])", "{{host}}")],
               "Share of TCP segments retransmitted.", "percentunit"),
            ts("InfiniBand transmit", [(f"rate(ib_transmit_bytes_total{{{CH}}}[$__rate_interval])", pl)], "Bytes sent per second per port.", "Bps"),
            ts("InfiniBand receive", [(f"rate(ib_receive_bytes_total{{{CH}}}[$__rate_interval])", pl)], "Bytes received per second per port.", "Bps"),
            ts("InfiniBand link use", [(f"rate(ib_transmit_bytes_total{{{CH}}}[$__rate_interval]) * 8 / ib_port_rate_bits_per_second{{{CH}}}", pl)],
               "Transmit rate over the link rate.", "percentunit"),
            ts("Ports not active", [(f"sum by (host) (1 - ib_port_active{{{CH}}})", "{{host}}")], "InfiniBand / RoCE ports that are not ACTIVE."),
            ts("InfiniBand errors", [
                (f"sum by (host, device, port) (increase(ib_symbol_errors_total{{{CH}}}[$__rate_interval]))", "symbol " + pl),
                (f"sum by (host, device, port) (increase(ib_link_downed_total{{{CH}}}[$__rate_interval]))", "link down " + pl),
                (f"sum by (host, device, port) (increase(ib_receive_errors_total{{{CH}}}[$__rate_interval]))", "rcv errors " + pl),
            ], "Physical and link errors per interval."),
            ts("Congestion", [
                (f"sum by (host) (rate(ib_transmit_wait_total{{{CH}}}[$__rate_interval]))", "{{host}} xmit wait"),
                (f"sum by (host) (rate(ib_cnp_sent_total{{{CH}}}[$__rate_interval]))", "{{host}} CNP sent"),
                (f"sum by (host) (rate(ib_ecn_marked_roce_packets_total{{{CH}}}[$__rate_interval]))", "{{host}} ECN marked"),
            ], "Credit waits (InfiniBand), congestion notifications and ECN marks (RoCE)."),
            ts("RoCE retransmits", [(f"sum by (host) (rate(ib_local_ack_timeout_errors_total{{{CH}}}[$__rate_interval]))", "{{host}} ack timeouts"),
                                    (f"sum by (host) (rate(ib_out_of_sequence_total{{{CH}}}[$__rate_interval]))", "{{host}} out of sequence")],
               "ACK timeouts and out-of-sequence packets per second.", "pps"),
        ],
        tags=["network"],
    )


def training():
    jl = "{{job}}"
    J = 'cluster=~"$cluster", job=~"$job"'
    return dashboard(
        "argus-training",
        "Argus / Training jobs",
        "Training progress, loss, throughput, ETA, checkpoints and stalls, from trainer logs and the progress push.",
        [CLUSTER, TRAIN_JOB],
        [
            gauge("Progress", f"max by (job) (train_step{{{J}}}) / max by (job) (train_total_steps{{{J}}})", jl,
                  "Step over total steps, for jobs that report a total.", "percentunit"),
            gauge("Time to finish", f"max by (job) (train_eta_seconds{{{J}}})", jl, "As the job reports it, else from its step rate.", "s"),
            ts("Loss", [(f"avg by (job) (train_loss{{{J}}})", "{{job}} train"), (f"avg by (job) (train_eval_loss{{{J}}})", "{{job}} eval")],
               "Training and evaluation loss, mean over ranks."),
            ts("Step", [(f"max by (job) (train_step{{{J}}})", jl)], "Optimizer step; a flat line is a stall."),
            ts("Throughput", [(f"sum by (job) (train_tokens_per_second{{{J}}})", "{{job}} tokens/s"),
                              (f"sum by (job) (train_samples_per_second{{{J}}})", "{{job}} samples/s")], "Summed over ranks."),
            ts("Stalled ranks", [(f"sum by (job) (train_stalled{{{J}}})", jl)], "Ranks whose step has not moved for the collector's stall_after."),
            ts("Seconds since progress", [(f"max by (job, rank) (train_seconds_since_progress{{{J}}})", "{{job}} rank {{rank}}")],
               "Per rank; a straggler stands out.", "s"),
            ts("Step rate per rank", [(f"train_steps_per_second{{{J}}}", "{{job}} rank {{rank}}")], "A slow rank holds back the whole job."),
            ts("Gradient norm", [(f"avg by (job) (train_grad_norm{{{J}}})", jl)], "Spikes precede divergence."),
            ts("Learning rate", [(f"avg by (job) (train_learning_rate{{{J}}})", jl)], "As logged."),
            ts("Model FLOPs utilization", [(f"avg by (job) (train_mfu_ratio{{{J}}})", jl)], "Only for jobs that report it.", "percentunit"),
            ts("Checkpoints", [(f"max by (job) (train_checkpoint_duration_seconds{{{J}}})", "{{job}} duration"),
                               (f"max by (job) (train_checkpoint_in_progress{{{J}}})", "{{job}} in progress")],
               "How long the last checkpoint took, and 1 while one is being written."),
        ],
        tags=["training"],
    )


def inference():
    J = 'job=~"$job"'
    return dashboard(
        "argus-inference",
        "Argus / Inference service",
        "vLLM-compatible serving metrics scraped by the collector: QPS, latency percentiles, queue, tokens, cache.",
        [SERVICE_JOB],
        [
            stat("QPS", f"sum(rate(vllm:request_success_total{{{J}}}[$__rate_interval]))", "Requests finished per second.", "reqps", w=6),
            stat("p99 latency", f"histogram_quantile(0.99, sum by (le) (rate(vllm:e2e_request_latency_seconds_bucket{{{J}}}[$__rate_interval])))",
                 "End-to-end request latency, 99th percentile.", "s", w=6),
            stat("Queued requests", f"sum(vllm:num_requests_waiting{{{J}}})", "Requests waiting to be scheduled.", w=6,
                 thresholds=[(None, "green"), (10, "orange"), (50, "red")]),
            stat("Targets up", "sum(scrape_up{job=~\"$job\"}) / count(scrape_up{job=~\"$job\"})", "Share of scrape targets answering.", "percentunit", w=6),
            ts("Requests per second", [(f"sum by (job, instance) (rate(vllm:request_success_total{{{J}}}[$__rate_interval]))", "{{job}} {{instance}}")],
               "Finished requests per second per instance.", "reqps"),
            ts("Latency percentiles", [
                (f"histogram_quantile({q}, sum by (le, job) (rate(vllm:e2e_request_latency_seconds_bucket{{{J}}}[$__rate_interval])))", f"{{{{job}}}} p{int(q * 100)}")
                for q in (0.5, 0.9, 0.99)
            ], "End-to-end request latency.", "s"),
            ts("Time to first token", [
                (f"histogram_quantile({q}, sum by (le, job) (rate(vllm:time_to_first_token_seconds_bucket{{{J}}}[$__rate_interval])))", f"{{{{job}}}} p{int(q * 100)}")
                for q in (0.5, 0.99)
            ], "Prefill latency.", "s"),
            ts("Queue", [(f"sum by (job) (vllm:num_requests_waiting{{{J}}})", "{{job}} waiting"), (f"sum by (job) (vllm:num_requests_running{{{J}}})", "{{job}} running")],
               "Requests waiting and running."),
            ts("Tokens per second", [(f"sum by (job) (rate(vllm:generation_tokens_total{{{J}}}[$__rate_interval]))", "{{job}} generated"),
                                     (f"sum by (job) (rate(vllm:prompt_tokens_total{{{J}}}[$__rate_interval]))", "{{job}} prompt")], "Token throughput."),
            ts("KV cache usage", [(f"avg by (job, instance) (vllm:kv_cache_usage_perc{{{J}}})", "{{job}} {{instance}}")],
               "Share of KV-cache blocks in use; near 1 requests get preempted.", "percentunit"),
            ts("Scrape", [("scrape_duration_seconds{job=~\"$job\"}", "{{job}} {{instance}}")], "How long each scrape of the service took.", "s", w=24),
        ],
        tags=["inference"],
    )


def anomalies():
    A = 'cluster=~"$cluster", host=~"$host"'
    return dashboard(
        "argus-anomalies",
        "Argus / Anomalies",
        "The analyzer's anomaly scores (above 1 is anomalous) and the dynamic-threshold bands they come from.",
        [CLUSTER, HOST,
         var_query("detector", "Detector", "label_values(argus_anomaly_score, detector)"),
         # The metrics the dynamic-threshold detector draws a band for (its now-casts), which the band panel shows.
         var_query("metric", "Metric", 'label_values(argus_yhat{horizon=~"0s|"}, metric)', multi=False)],
        [
            stat("Series scored", f"count(argus_anomaly_score{{{A}}})", "Series the analyzer scores now.", w=6),
            stat("Anomalous now", f"count(argus_anomaly_score{{{A}}} > 1) or vector(0)", "Scores above 1.", w=6,
                 thresholds=[(None, "green"), (1, "red")]),
            stat("Highest score", f"max(argus_anomaly_score{{{A}}})", "The highest score now.", w=6,
                 thresholds=[(None, "green"), (0.8, "orange"), (1, "red")]),
            stat("Anomalous in range", f"count(max_over_time(argus_anomaly_score{{{A}}}[$__range]) > 1) or vector(0)", "Series that went above 1 in the time range.", w=6),
            ts("Scores by detector", [(f"max by (detector) (argus_anomaly_score{{{A}, detector=~\"$detector\"}})", "{{detector}}")],
               "Highest score of each detector; the line at 1 is the anomaly threshold.", w=24,
               fieldConfig={"defaults": {"custom": {"thresholdsStyle": {"mode": "line"}},
                                          "thresholds": {"mode": "absolute", "steps": [{"color": "green", "value": None}, {"color": "red", "value": 1}]}},
                            "overrides": []}),
            table("Top anomalies", [(f"topk(20, max by (detector, metric, host, gpu) (argus_anomaly_score{{{A}, detector=~\"$detector\"}}))", "")],
                  "The 20 highest scores now, by detector, metric and entity."),
            table("Anomalous series now", [(f"argus_anomaly_score{{{A}, detector=~\"$detector\"}} > 1", "")],
                  "Every series scored above 1 now, with all its labels. Empty when nothing is anomalous.", may_be_empty=True),
            ts("Band and value", [
                ("{__name__=\"$metric\", " + A + "}", "{{host}} {{gpu}} value"),
                (f"argus_yhat{{metric=\"$metric\", {A}, horizon=~\"0s|\"}}", "{{host}} {{gpu}} expected"),
                (f"argus_yhat_lower{{metric=\"$metric\", {A}, horizon=~\"0s|\"}}", "{{host}} {{gpu}} lower"),
                (f"argus_yhat_upper{{metric=\"$metric\", {A}, horizon=~\"0s|\"}}", "{{host}} {{gpu}} upper"),
            ], "The selected metric against the band the dynamic-threshold detector expected it in (its now-cast, horizon 0s).", w=24, h=10),
            ts("Scores of the selected metric", [(f"argus_anomaly_score{{metric=\"$metric\", {A}, detector=~\"$detector\"}}", "{{detector}} {{host}} {{gpu}}")],
               "Per series and detector.", w=24),
            ts("Scores by host", [(f"max by (host) (argus_anomaly_score{{{A}}})", "{{host}}")], "Highest score per host, all detectors.", w=24),
        ],
        tags=["analyzer"],
    )


def forecasts():
    return dashboard(
        "argus-forecasts",
        "Argus / Forecasts and capacity",
        "Demand forecasts against what happened, and the capacity planner's recommendations.",
        [CLUSTER,
         var_custom("horizon", "Horizon", ["15m", "5m", "30m", "1h"]),
         # Forecast targets only: the anomaly detectors' bands (no horizon, or 0s) are argus_yhat too.
         var_query("metric", "Forecast target", 'label_values(argus_yhat{horizon="$horizon"}, metric)', multi=False)],
        [
            ts("Forecast against actual", [
                ("sum({__name__=\"$metric\", " + C + "})", "actual"),
                (f"sum(argus_yhat{{metric=\"$metric\", horizon=\"$horizon\", {C}}} offset $horizon)", "forecast made $horizon earlier"),
                (f"sum(argus_yhat_lower{{metric=\"$metric\", horizon=\"$horizon\", {C}}} offset $horizon)", "lower"),
                (f"sum(argus_yhat_upper{{metric=\"$metric\", horizon=\"$horizon\", {C}}} offset $horizon)", "upper"),
            ], "The target series and the forecast made one horizon before each point (shifted by the horizon, so the two line up). "
               "The actual line is the target summed over the selected clusters.", w=24, h=10),
            ts("Forecast ahead", [
                (f"argus_yhat{{metric=\"$metric\", horizon=\"$horizon\", {C}}}", "{{model}} forecast for +$horizon"),
                (f"argus_yhat_upper{{metric=\"$metric\", horizon=\"$horizon\", {C}}}", "{{model}} upper"),
            ], "What the forecaster expects one horizon from each point, drawn at the time the forecast was made."),
            ts("Forecast error", [
                (f"abs(sum(argus_yhat{{metric=\"$metric\", horizon=\"$horizon\", {C}}} offset $horizon) - sum({{__name__=\"$metric\", {C}}})) "
                 f"/ sum({{__name__=\"$metric\", {C}}})", "relative error"),
            ], "|forecast − actual| / actual, one horizon after each forecast.", "percentunit"),
            table("Capacity recommendations", [("{__name__=~\"argus_capacity_.*\", " + C + "}", "")],
                  "Every argus_capacity_* series the planner publishes now (per pool): recommended capacity, reservation and what it is based on.", w=24),
            ts("Capacity over time", [("{__name__=~\"argus_capacity_.*\", " + C + "}", "{{__name__}} {{pool}}")],
               "The planner's series over time: recommendations move with hysteresis, not with every forecast.", w=24),
        ],
        tags=["analyzer"],
    )


def alerts():
    return dashboard(
        "argus-alerts",
        "Argus / Alerts and incidents",
        "alertd's alerts, notifications and the health of the pipeline that feeds them.",
        [CLUSTER],
        [
            stat("Firing", 'count(ALERTS{alertstate="firing"}) or vector(0)', "Alerts firing now.", w=6, thresholds=[(None, "green"), (1, "red")]),
            stat("Pending", 'count(ALERTS{alertstate="pending"}) or vector(0)', "Alerts whose condition holds but not yet for their `for`.", w=6,
                 thresholds=[(None, "green"), (1, "orange")]),
            stat("Notifications failed (range)", 'sum(increase(argus_alertd_notifications_total{outcome="failed"}[$__range])) or vector(0)',
                 "Sends given up on in the time range.", w=6, thresholds=[(None, "green"), (1, "red")]),
            stat("Hosts silent > 5m", f"count(time() - argus_host_last_seen_timestamp_seconds{{{C}}} > 300) or vector(0)",
                 "Hosts whose latest sample is older than 5 minutes.", w=6, thresholds=[(None, "green"), (1, "red")]),
            ts("Alerts over time", [('count(ALERTS{alertstate="firing"}) or vector(0)', "firing"), ('count(ALERTS{alertstate="pending"}) or vector(0)', "pending")],
               "Firing and pending alerts. Incidents (alerts grouped, acknowledged, resolved) are on the status page and /api/v1/incidents."),
            ts("Firing by severity", [('count by (severity) (ALERTS{alertstate="firing"}) or label_replace(vector(0), "severity", "none", "", "")', "{{severity}}")],
               "Firing alerts per severity label."),
            table("Active alerts", [('ALERTS{alertstate="firing"}', ""), ("time() - ALERTS_FOR_STATE", "")],
                  "Every firing alert with its labels, and how long each alert has been active. Empty when nothing fires.", w=24, may_be_empty=True),
            ts("Notifications", [('sum by (receiver, outcome) (rate(argus_alertd_notifications_total[$__rate_interval]))', "{{receiver}} {{outcome}}")],
               "Send attempts per second by receiver and outcome. From Argus' own metrics (stored under job=\"argus\" by [self_monitoring]).", "ops"),
            ts("Time since last sample", [(f"time() - argus_host_last_seen_timestamp_seconds{{{C}}}", "{{host}}")], "What HostDown compares with its threshold.", "s"),
            ts("Store ingest", [("rate(argus_store_samples_ingested_total[$__rate_interval])", "samples/s"),
                                ("sum by (reason) (rate(argus_store_batches_rejected_total[$__rate_interval]))", "rejected {{reason}}")],
               "Samples stored per second and write requests refused. From Argus' own metrics (stored under job=\"argus\" by [self_monitoring]).", "ops"),
            ts("Collector delivery", [
                (f"sum by (host) (argus_collector_spool_bytes{{{C}}})", "{{host}} spooled bytes"),
            ], "Bytes waiting in collectors' spools (store unreachable). Needs the collectors' /metrics scraped.", "bytes"),
        ],
        tags=["alerts"],
    )


def main():
    OUT.mkdir(exist_ok=True)
    for make in (overview, gpu_fleet, node, storage, network, training, inference, anomalies, forecasts, alerts):
        d = make()
        name = d["uid"].removeprefix("argus-") + ".json"
        (OUT / name).write_text(json.dumps(d, indent=2, ensure_ascii=False) + "\n")
        print(f"dashboards/{name}: {len(d['panels'])} panels")


if __name__ == "__main__":
    main()
