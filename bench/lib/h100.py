"""What one 8xH100 node sends to Argus every collection, as line protocol (issue 28, sizing).

A node is what `argus collect` writes on a DGX/HGX H100 class machine (docs/metrics.md, "Collector node
metrics"), series for series:
  - `gpu`: every per-GPU gauge and counter of the NVML backend with GPM (Hopper), the nine clock-event
    reasons, 18 NVLinks per GPU (six series each), one process owner per GPU (`pod_uid`);
  - `host`: CPU per mode (seconds and ratios), load, processes, memory and swap;
  - `disk`/`fs`: NVMe data disks and the OS disk, with their filesystems;
  - `net`: two Ethernet interfaces and the host-wide TCP/UDP counters;
  - `ib`: eight ConnectX ports (one per GPU, InfiniBand), every port and hw counter;
  - `event`: the error counters of the kernel log and one job log;
  - `train`: one training job with eight ranks (every field a trainer reports);
  - `scrape`: one vLLM-style inference server (gauges, counters and latency histograms).
Values move as telemetry does (bounded random walks; counters grow at realistic rates; error counters
stay flat and rarely step), so the stores' compression sees real, not constant, data.

`Node(index).lines(ts_ns)` returns the node's lines for one collection; `families()` counts its series
by the family names used in the sizing table.
"""
import random

STEP_S = 10
GPUS = 8
NVLINKS = 18
IB_PORTS = 8
NVME = 8
RANKS = 8

THROTTLE = ["gpu_idle", "applications_clocks_setting", "sw_power_cap", "hw_slowdown", "sync_boost",
            "sw_thermal_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown", "display_clock_setting"]
CPU_MODES = ["user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal"]


class Walk:
    """A bounded random walk (gauge)."""
    __slots__ = ("v", "lo", "hi", "step", "fmt")

    def __init__(self, rng, lo, hi, step, fmt="{:.4g}"):
        self.v, self.lo, self.hi, self.step, self.fmt = rng.uniform(lo, hi), lo, hi, step, fmt

    def next(self, rng):
        v = self.v + rng.gauss(0, self.step)
        self.v = self.lo if v < self.lo else self.hi if v > self.hi else v
        return self.fmt.format(self.v)


class Const:
    """A value that does not move (capacity, limits, flags)."""
    __slots__ = ("s",)

    def __init__(self, v):
        self.s = f"{v}"

    def next(self, rng):
        return self.s


class Counter:
    """A counter growing at `rate` per second with noise; `rate` below 1 steps rarely (error counters)."""
    __slots__ = ("v", "rate", "dt")

    def __init__(self, rng, rate, dt, start=None):
        self.v = rng.randint(0, 10**9) if start is None else start
        self.rate, self.dt = rate, dt

    def next(self, rng):
        mean = self.rate * self.dt
        if mean < 1:
            self.v += 1 if rng.random() < mean else 0
        else:
            self.v += max(0, int(rng.gauss(mean, mean * 0.2)))
        return f"{self.v}i"


def escape_tag(v):
    """A tag value as line protocol writes it (commas, equals signs and spaces escaped)."""
    return str(v).replace(",", "\\,").replace("=", "\\=").replace(" ", "\\ ")


class Line:
    """One line of a collection: a measurement, its tags (as labels, unescaped) and its fields."""
    __slots__ = ("measurement", "tags", "prefix", "fields")

    def __init__(self, measurement, tags, fields):
        self.measurement, self.tags = measurement, {k: str(v) for k, v in tags}
        self.prefix = measurement + "".join(f",{k}={escape_tag(v)}" for k, v in tags) + " "
        self.fields = fields  # [(name, generator)]

    def series(self):
        """(series name, labels) of each field."""
        return [(f"{self.measurement}_{n}", self.tags) for n, _ in self.fields]


class Node:
    def __init__(self, index, interval_s=10, seed=28, cluster="prod"):
        rng = self.rng = random.Random(seed * 100_003 + index)
        self.faults = []  # (start seconds, kind, gpu), applied once each by lines()
        self.xid_tags = []
        dt = interval_s
        host = f"h100-{index:04d}"
        base = [("cluster", cluster), ("rack", f"rack-{index // 16:03d}"), ("host", host)]
        lines = []
        W, C, K = (lambda lo, hi, step, fmt="{:.4g}": Walk(rng, lo, hi, step, fmt)), Const, \
            (lambda rate, start=None: Counter(rng, rate, dt, start))
        for g in range(GPUS):
            uuid = f"GPU-{index:04x}{g:04x}-5e1f-4a43-9c6d-{rng.getrandbits(48):012x}"
            gt = base + [("gpu", g), ("uuid", uuid), ("device", f"nvidia{g}"), ("model", "NVIDIA H100 80GB HBM3")]
            self.gpu_line = getattr(self, "gpu_line", [])
            self.gpu_line.append(len(lines))
            lines.append(Line("gpu", gt, [
                ("utilization_ratio", W(0, 1, 0.05)), ("memory_utilization_ratio", W(0, 1, 0.05)),
                ("memory_total_bytes", C("85520809984i")), ("memory_used_bytes", W(2e9, 8.4e10, 1e9, "{:.0f}i")),
                ("memory_free_bytes", W(1e9, 8.3e10, 1e9, "{:.0f}i")), ("temperature_celsius", W(30, 85, 0.6, "{:.0f}")),
                ("memory_temperature_celsius", W(30, 90, 0.6, "{:.0f}")), ("power_watts", W(70, 700, 20, "{:.1f}")),
                ("power_limit_watts", C(700)), ("energy_joules_total", K(450)),
                ("sm_clock_hertz", W(1.1e9, 1.98e9, 3e7, "{:.0f}")), ("memory_clock_hertz", C(2619000000)),
                ("pcie_transmit_bytes_per_second", W(0, 2.5e10, 5e8, "{:.0f}")),
                ("pcie_receive_bytes_per_second", W(0, 2.5e10, 5e8, "{:.0f}")), ("pcie_replays_total", K(1e-6, 0)),
                ("performance_state", C(0)), ("ecc_errors_corrected_total", K(1e-5, 0)),
                ("ecc_errors_uncorrected_total", K(0.0, 0)), ("ecc_errors_corrected_aggregate_total", K(1e-5, 3)),
                ("ecc_errors_uncorrected_aggregate_total", K(0.0, 0)), ("retired_pages_single_bit", C(0)),
                ("retired_pages_double_bit", C(0)), ("retired_pages_pending", C(0)),
                ("remapped_rows_correctable", C(0)), ("remapped_rows_uncorrectable", C(0)),
                ("remapped_rows_pending", C(0)), ("remapped_rows_failed", C(0)),
                ("sm_activity_ratio", W(0, 1, 0.05)), ("sm_occupancy_ratio", W(0, 1, 0.05)),
                ("tensor_activity_ratio", W(0, 1, 0.05)), ("dram_activity_ratio", W(0, 1, 0.05)),
                ("mig_enabled", C(0)), ("processes", C(1)),
            ]))
            for reason in THROTTLE:
                lines.append(Line("gpu", gt + [("reason", reason)], [("throttle_reason", C(1 if reason == "sw_power_cap" and g % 3 == 0 else 0))]))
            for link in range(NVLINKS):
                lines.append(Line("gpu", gt + [("link", link)], [
                    ("nvlink_active", C(1)), ("nvlink_transmit_bytes_total", K(2.0e10)),
                    ("nvlink_receive_bytes_total", K(2.0e10)), ("nvlink_replay_errors_total", K(1e-7, 0)),
                    ("nvlink_recovery_errors_total", K(0.0, 0)), ("nvlink_crc_errors_total", K(1e-7, 0)),
                ]))
            lines.append(Line("gpu", gt + [("pod_uid", f"{rng.getrandbits(128):032x}")],
                              [("process_memory_used_bytes", W(2e9, 8e10, 1e9, "{:.0f}i"))]))
            self.xid_tags.append(base + [("gpu", g), ("uuid", uuid)])
        cpus = 224
        for mode in CPU_MODES:
            lines.append(Line("host", base + [("mode", mode)], [
                ("cpu_seconds_total", K(cpus * {"user": 0.4, "idle": 0.5, "system": 0.06}.get(mode, 0.005))),
                ("cpu_utilization_ratio", W(0, 1 if mode in ("user", "idle") else 0.1, 0.02)),
            ]))
        lines.append(Line("host", base, [
            ("cpu_busy_ratio", W(0, 1, 0.03)), ("cpus", C(cpus)), ("load1", W(0, 200, 4)), ("load5", W(0, 200, 2)),
            ("load15", W(0, 200, 1)), ("threads", W(3000, 9000, 50, "{:.0f}")), ("processes_running", W(0, 200, 5, "{:.0f}")),
            ("processes_blocked", W(0, 10, 1, "{:.0f}")), ("forks_total", K(40)), ("context_switches_total", K(2e5)),
            ("boot_time_seconds", C(1_790_000_000)), ("uptime_seconds", K(1, 5_000_000)),
            ("memory_total_bytes", C("2164222787584i")), ("memory_free_bytes", W(1e11, 1.8e12, 1e9, "{:.0f}i")),
            ("memory_available_bytes", W(2e11, 1.9e12, 1e9, "{:.0f}i")), ("memory_used_bytes", W(2e11, 1.9e12, 1e9, "{:.0f}i")),
            ("memory_buffers_bytes", W(1e8, 1e10, 1e7, "{:.0f}i")), ("memory_cached_bytes", W(1e10, 1e12, 1e9, "{:.0f}i")),
            ("memory_shared_bytes", W(1e8, 1e11, 1e8, "{:.0f}i")), ("swap_total_bytes", C("0i")),
            ("swap_free_bytes", C("0i")), ("swap_used_bytes", C("0i")),
        ]))
        for d in ["sda"] + [f"nvme{i}n1" for i in range(NVME)]:
            lines.append(Line("disk", base + [("device", d)], [
                ("reads_completed_total", K(800)), ("reads_merged_total", K(20)), ("read_bytes_total", K(4e8)),
                ("read_time_seconds_total", K(0.2)), ("writes_completed_total", K(300)), ("writes_merged_total", K(40)),
                ("written_bytes_total", K(1e8)), ("write_time_seconds_total", K(0.1)), ("io_in_progress", W(0, 32, 2, "{:.0f}")),
                ("io_time_seconds_total", K(0.3)), ("io_time_weighted_seconds_total", K(0.5)),
                ("discards_completed_total", K(0.1)), ("discarded_bytes_total", K(1e5)), ("discard_time_seconds_total", K(0.001)),
                ("flushes_completed_total", K(2)), ("flush_time_seconds_total", K(0.002)), ("utilization_ratio", W(0, 1, 0.03)),
            ]))
        for dev, mnt, size in (("sda2", "/", 1.9e12), ("md0", "/raid", 2.8e13)):
            lines.append(Line("fs", base + [("device", dev), ("mountpoint", mnt), ("fstype", "ext4")], [
                ("size_bytes", C(f"{size:.0f}i")), ("free_bytes", W(size * 0.1, size * 0.9, size * 1e-4, "{:.0f}i")),
                ("avail_bytes", W(size * 0.1, size * 0.9, size * 1e-4, "{:.0f}i")),
                ("used_bytes", W(size * 0.1, size * 0.9, size * 1e-4, "{:.0f}i")), ("files", C(1e8)),
                ("files_free", W(5e7, 1e8, 1e4, "{:.0f}")), ("readonly", C(0)),
            ]))
        for iface in ("eno1", "bond0"):
            lines.append(Line("net", base + [("interface", iface)], [
                (f"receive_{f}", K(r)) for f, r in (("bytes_total", 1e8), ("packets_total", 1e5), ("errors_total", 0.0001),
                                                      ("drop_total", 0.01), ("fifo_total", 0), ("frame_total", 0),
                                                      ("multicast_total", 1))] + [
                (f"transmit_{f}", K(r)) for f, r in (("bytes_total", 1e8), ("packets_total", 1e5), ("errors_total", 0),
                                                       ("drop_total", 0), ("fifo_total", 0), ("collisions_total", 0),
                                                       ("carrier_total", 0))]))
        lines.append(Line("net", base, [
            (f, K(r)) for f, r in (("tcp_active_opens_total", 20), ("tcp_passive_opens_total", 20),
                                   ("tcp_attempt_fails_total", 0.05), ("tcp_established_resets_total", 0.1),
                                   ("tcp_in_segments_total", 2e4), ("tcp_out_segments_total", 2e4),
                                   ("tcp_retransmitted_segments_total", 2), ("tcp_in_errors_total", 0.001),
                                   ("tcp_out_resets_total", 0.5), ("udp_in_datagrams_total", 50),
                                   ("udp_out_datagrams_total", 50), ("udp_no_ports_total", 0.1),
                                   ("udp_in_errors_total", 0), ("udp_receive_buffer_errors_total", 0),
                                   ("udp_send_buffer_errors_total", 0))] + [("tcp_current_established", W(50, 2000, 20, "{:.0f}"))]))
        ib_counters = ["receive_errors_total", "transmit_discards_total", "transmit_wait_total", "symbol_errors_total",
                       "link_downed_total", "link_error_recovery_total", "local_link_integrity_errors_total",
                       "excessive_buffer_overrun_errors_total", "receive_remote_physical_errors_total",
                       "receive_switch_relay_errors_total", "receive_constraint_errors_total",
                       "transmit_constraint_errors_total", "vl15_dropped_total", "cnp_sent_total",
                       "ecn_marked_roce_packets_total", "cnp_handled_total", "cnp_ignored_total", "out_of_sequence_total",
                       "packet_sequence_errors_total", "local_ack_timeout_errors_total",
                       "implied_nak_sequence_errors_total", "rnr_nak_retry_errors_total", "duplicate_requests_total",
                       "roce_adaptive_retransmits_total", "roce_adaptive_retransmit_timeouts_total",
                       "roce_slow_restarts_total", "out_of_buffer_total", "requester_cqe_errors_total",
                       "responder_cqe_errors_total"]
        for p in range(IB_PORTS):
            self.ib_line = getattr(self, "ib_line", [])
            self.ib_line.append(len(lines))
            lines.append(Line("ib", base + [("device", f"mlx5_{p}"), ("port", 1), ("link_layer", "InfiniBand")], [
                ("port_state", C(4)), ("port_active", C(1)), ("port_physical_state", C(5)),
                ("port_rate_bits_per_second", C(400_000_000_000)), ("transmit_bytes_total", K(1.5e10)),
                ("receive_bytes_total", K(1.5e10)), ("transmit_packets_total", K(4e6)), ("receive_packets_total", K(4e6)),
            ] + [(c, K(1000 if c == "transmit_wait_total" else 1e-6, 0)) for c in ib_counters]))
        for kind in ("cuda_oom", "cuda_error", "nccl_timeout", "nccl_error", "ecc", "link_down"):
            for log in ("kernel", "/var/log/train/job.log"):
                lines.append(Line("event", base + [("kind", kind), ("log", log.replace("/", "/"))], [("errors_total", K(0.0, 0))]))
        job = f"llm-pretrain-{index // 32:03d}"
        for r in range(RANKS):
            lines.append(Line("train", base + [("job", job), ("rank", index * RANKS + r)], [
                ("step", K(0.5, 1000)), ("total_steps", C(500000)), ("epoch", W(0, 3, 0.001)), ("loss", W(1.5, 3.0, 0.01)),
                ("eval_loss", W(1.6, 3.1, 0.01)), ("grad_norm", W(0.1, 5, 0.1)), ("learning_rate", W(1e-5, 3e-4, 1e-6)),
                ("samples_per_second", W(40, 60, 1)), ("steps_per_second", W(0.4, 0.6, 0.01)),
                ("tokens_per_second", W(3e5, 4e5, 3e3)), ("mfu_ratio", W(0.35, 0.5, 0.005)),
                ("eta_seconds", W(1e5, 1e6, 100)), ("checkpoint_in_progress", C(0)),
                ("checkpoint_duration_seconds", W(30, 120, 1)), ("checkpoints_total", K(0.0005, 10)),
                ("stalled", C(0)), ("seconds_since_progress", W(0, 5, 1)),
            ]))
        # An inference server (vLLM's /metrics: per-model gauges, counters and three latency histograms).
        st = base + [("job", "vllm"), ("instance", f"{host}:8000"), ("model_name", "llama-3-70b")]
        lines.append(Line("scrape", base + [("job", "vllm"), ("instance", f"{host}:8000")], [
            ("up", C(1)), ("duration_seconds", W(0.002, 0.02, 0.001)), ("samples", C(120))]))
        lines.append(Line("vllm:num", st, [("requests_running", W(0, 64, 3, "{:.0f}")),
                                            ("requests_waiting", W(0, 32, 2, "{:.0f}")),
                                            ("preemptions_total", K(0.01, 0))]))
        lines.append(Line("vllm:gpu", st, [("cache_usage_perc", W(0, 1, 0.03))]))
        lines.append(Line("vllm:prompt", st, [("tokens_total", K(2e4))]))
        lines.append(Line("vllm:generation", st, [("tokens_total", K(4e3))]))
        lines.append(Line("vllm:request", st + [("finished_reason", "stop")], [("success_total", K(5))]))
        lines.append(Line("vllm:request", st + [("finished_reason", "length")], [("success_total", K(0.5))]))
        for hist, buckets, rate in (("time_to_first_token_seconds", 18, 5), ("time_per_output_token_seconds", 15, 4000),
                                    ("e2e_request_latency_seconds", 14, 5)):
            name = "vllm:" + hist.split("_", 1)[0]
            rest = hist.split("_", 1)[1]
            for b in range(buckets):
                le = "+Inf" if b == buckets - 1 else f"{0.001 * 2 ** b:g}"
                lines.append(Line(name, st + [("le", le)], [(rest + "_bucket", K(rate * (b + 1) / buckets))]))
            lines.append(Line(name, st, [(rest + "_sum", K(rate * 0.2)), (rest + "_count", K(rate))]))
        self.lines_ = lines

    def fault(self, start_s, kind, gpu=0):
        """Schedules a fault from `start_s` (Unix seconds) on GPU (or IB port) `gpu`:
        `xid79` (an Xid 79 counted, as the collector writes it: a 0 sample, then 1), `hot` (95 °C and the
        thermal clock-event reason held), `ecc` (one uncorrectable ECC error), `ib_down` (the port
        leaves ACTIVE), `util_drop` (utilisation falls to 0 while its peers keep working)."""
        assert kind in ("xid79", "hot", "ecc", "ib_down", "util_drop"), kind
        self.faults.append({"start": start_s, "kind": kind, "gpu": gpu, "done": False})

    def _set(self, line, field, gen):
        ln = self.lines_[line]
        ln.fields = [(n, gen if n == field else g) for n, g in ln.fields]

    def _apply(self, ts_s):
        """Applies the faults due at `ts_s`; returns the lines faults add (the Xid series)."""
        extra = []
        for f in self.faults:
            g = f["gpu"]
            if f["kind"] == "xid79" and ts_s >= f["start"] - STEP_S:
                # The collector's first sample of a new code is 0, just before the count.
                extra.append(Line("gpu", self.xid_tags[g] + [("code", 79)],
                                  [("xid_errors_total", Const("0i" if ts_s < f["start"] else "1i"))]))
            if f["done"] or ts_s < f["start"]:
                continue
            f["done"] = True
            gpu_line = self.gpu_line[g]
            if f["kind"] == "hot":
                self._set(gpu_line, "temperature_celsius", Const(95))
                hot = {**self.lines_[gpu_line].tags, "reason": "hw_thermal_slowdown"}
                for k, ln in enumerate(self.lines_):
                    if ln.tags == hot:
                        self._set(k, "throttle_reason", Const(1))
            elif f["kind"] == "ecc":
                dict(self.lines_[gpu_line].fields)["ecc_errors_uncorrected_total"].v += 1
            elif f["kind"] == "ib_down":
                self._set(self.ib_line[g], "port_active", Const(0))
                self._set(self.ib_line[g], "port_state", Const(1))
            elif f["kind"] == "util_drop":
                self._set(gpu_line, "utilization_ratio", Const(0))
                self._set(gpu_line, "sm_activity_ratio", Const(0))
        return extra

    def lines(self, ts_ns):
        rng = self.rng
        lines = (self._apply(ts_ns // 10**9) if self.faults else []) + self.lines_
        return [ln.prefix + ",".join(f"{n}={g.next(rng)}" for n, g in ln.fields) + f" {ts_ns}" for ln in lines]

    def series(self):
        """(series name, family) of every series this node sends."""
        return [(f"{ln.measurement}_{n}", family(ln.measurement, n)) for ln in self.lines_ for n, _ in ln.fields]


def family(measurement, field):
    if measurement == "gpu":
        if field.startswith("nvlink_"):
            return "GPU NVLink (8 GPUs x 18 links)"
        if field == "throttle_reason":
            return "GPU clock-event reasons"
        return "GPU (per-GPU gauges, counters, GPM, ECC/rows, processes, Xid)"
    if measurement in ("host",):
        return "host"
    if measurement in ("disk", "fs"):
        return "disks and filesystems"
    if measurement == "net":
        return "Ethernet and TCP/UDP"
    if measurement == "ib":
        return "InfiniBand ports (8)"
    if measurement == "event":
        return "log error counters"
    if measurement == "train":
        return "training (8 ranks)"
    return "inference (vLLM scrape)"
