#!/usr/bin/env python3
"""The collector's sources against node_exporter: CPU time per collection, per emitted sample, and resident
memory, on the same machine, runs alternated, medians quoted.

    python3 bench/collector_vs_node_exporter.py --argus-bin target/release/argus [--repeat 3] [--seconds 60] \\
        [--gpu-scenario collector/tests/fixtures/nvml/h100x8.json \\
         --fake-nvml target/release/libargus_fake_nvml.so] [--out results.json]

node_exporter (Debian's prometheus-node-exporter) runs with only the collectors matching ours:
cpu, stat, loadavg, meminfo (host); diskstats, filesystem (disk); netdev, netstat, infiniband (net).
It is scraped every --interval; its CPU per scrape is its utime+stime over the measured window divided by
the scrapes in it. `argus collect` runs host, disk and net (gpu and events off) at the same --interval,
shipping gzip line protocol to a receiver in this script (another process); its CPU per collection is
its utime+stime over the window divided by the host collections whose timestamps fall in it. Both include
encoding and HTTP. Samples are counted from what each emits (node_exporter's own go_/process_/promhttp_
series included, as a scrape pays for them; the collector's own argus_collector_* points included).
RSS is VmRSS at the end of the run, and VmHWM (peak).

With --gpu-scenario and --fake-nvml, every repetition also runs a second Argus configuration, `argus_gpu`:
host, disk, net and gpu, all at --interval, the gpu source reading NVML from the fake library
(collector/fake-nvml, libargus_fake_nvml.so) that answers from the scenario (docs/format/fake-nvml-scenario.md;
h100x8.json is an 8×H100 node, 18 NVLinks per GPU, GPM on). The kernel log is off (no /dev/kmsg: Xids come
through NVML's event set), and workload attribution is off (no kubelet, no scontrol). Its CPU per
collection counts one round of every source (the host source's rounds, as above); the gpu source's own
rounds, samples and distinct series are reported beside it. GPM series need a sample from an earlier
collection, so they appear from the gpu source's second collection on: the measured window starts after
the warm-up, in the steady state, and `gpu_series_first_collection` shows the first collection alone.
The series are the distinct (name, labels) pairs in the measured window, with the default families
(dcgm_names off): `gpu_series` is what one 8×H100 node writes from the gpu source, `series` the node's
total (host, disk and net depend on this machine's disks and interfaces). With --dcgm-names-series one
extra, untimed short run counts the gpu source's series with dcgm-exporter's names added.

The JSON (--out) holds every run (`runs`, one object each; the host/disk/net configuration keeps
`who: "argus"` and its keys), the medians and ratios (`summary`), and how the machine was loaded during
each run (`load1_before`/`_after`, and `machine_busy_ratio`: the share of all CPUs' time not idle over
the run, from /proc/stat). Standard library only.
"""
import argparse
import collections
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.dont_write_bytecode = True  # no __pycache__ in the checkout
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lib.lp_receiver import Receiver, cpu_seconds, memory_kib  # noqa: E402
from lib.server import free_port  # noqa: E402

NE_COLLECTORS = ["cpu", "stat", "loadavg", "meminfo", "diskstats", "filesystem", "netdev", "netstat", "infiniband"]
# Measurements the gpu source writes (DCGM_* only with dcgm_names); its self points are argus_collector{source="gpu"}.
GPU_MEASUREMENTS = ("gpu", "DCGM_FI_DEV", "DCGM_FI_PROF")
# Series names that come from NVML's GPM (two samples needed), per docs/metrics.md.
GPM_SERIES = (
    "gpu_sm_activity_ratio",
    "gpu_sm_occupancy_ratio",
    "gpu_tensor_activity_ratio",
    "gpu_dram_activity_ratio",
    "gpu_fp64_activity_ratio",
    "gpu_fp32_activity_ratio",
    "gpu_fp16_activity_ratio",
    "gpu_gpm_pcie_transmit_bytes_per_second",
    "gpu_gpm_pcie_receive_bytes_per_second",
    "gpu_gpm_nvlink_transmit_bytes_per_second",
    "gpu_gpm_nvlink_receive_bytes_per_second",
)
SCENARIO_ENV = "ARGUS_FAKE_NVML_SCENARIO"
WARM_UP_S = 3


def wait_http(url, deadline=20):
    end = time.time() + deadline
    while time.time() < end:
        try:
            urllib.request.urlopen(url, timeout=1).read()
            return
        except Exception:
            time.sleep(0.1)
    raise RuntimeError(f"{url} did not answer")


def cpu_times():
    """(busy, total) jiffies of all CPUs, from /proc/stat's first line."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    idle = v[3] + (v[4] if len(v) > 4 else 0)  # idle + iowait
    total = sum(v[:8])  # guest time is already in user/nice
    return total - idle, total


class MachineLoad:
    """How busy the whole machine was over a run: load average before and after, and the share of all
    CPUs' time that was not idle (the benchmarked process included)."""

    def __init__(self):
        self.load0 = os.getloadavg()[0]
        self.t0 = cpu_times()

    def finish(self):
        b1, t1 = cpu_times()
        b0, t0 = self.t0
        return {
            "load1_before": round(self.load0, 2),
            "load1_after": round(os.getloadavg()[0], 2),
            "machine_busy_ratio": round((b1 - b0) / max(t1 - t0, 1), 3),
        }


def series_name(measurement, field):
    """The series a line-protocol field becomes (`{measurement}_{field}`, as batch.rs documents)."""
    return f"{measurement}_{field}" if measurement else field


def run_node_exporter(args):
    port = free_port()
    cmd = [args.node_exporter, f"--web.listen-address=127.0.0.1:{port}", "--collector.disable-defaults"]
    cmd += [f"--collector.{c}" for c in NE_COLLECTORS]
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/metrics"
    try:
        wait_http(url)
        for _ in range(5):  # warm-up
            urllib.request.urlopen(url).read()
        scrapes, samples, node_samples = 0, [], []
        load = MachineLoad()
        c0 = cpu_seconds(p.pid)
        start = time.time()
        while time.time() - start < args.seconds:
            t = time.time()
            body = urllib.request.urlopen(url).read().decode()
            lines = [l for l in body.splitlines() if l and not l.startswith("#")]
            samples.append(len(lines))
            node_samples.append(sum(1 for l in lines if l.startswith("node_")))
            scrapes += 1
            time.sleep(max(0.0, args.interval - (time.time() - t)))
        cpu = cpu_seconds(p.pid) - c0
        mem = memory_kib(p.pid)
        machine = load.finish()
    finally:
        p.terminate()
        p.wait()
    per_collection = statistics.median(samples)
    return {
        "who": "node_exporter",
        "collections": scrapes,
        "cpu_s": cpu,
        "cpu_ms_per_collection": 1000 * cpu / scrapes,
        "samples_per_collection": per_collection,
        "node_samples_per_collection": statistics.median(node_samples),
        "cpu_us_per_sample": 1e6 * cpu / max(sum(samples), 1),
        "rss_kib": mem["VmRSS"],
        "hwm_kib": mem["VmHWM"],
        **machine,
    }


def argus_config(args, work, rport, gpu, dcgm_names=False):
    ms = int(args.interval * 1000)
    if gpu:
        gpu_section = f"""[collector.gpu]
enabled = true
nvml_library = "{os.path.abspath(args.fake_nvml)}"
kernel_log = ""
dcgm_names = {"true" if dcgm_names else "false"}
[collector.gpu.attribution]
kubernetes = false
slurm = false
"""
    else:
        gpu_section = "[collector.gpu]\nenabled = false\n"
    return f"""[collector]
interval = "{ms}ms"
data_dir = "{work}/data"
{gpu_section}[collector.events]
enabled = false
[[collector.sink]]
url = "http://127.0.0.1:{rport}/api/v2/write"
format = "line_protocol"
flush_interval = "1s"
"""


def start_argus(args, gpu, dcgm_names=False):
    """(process, receiver, work directory, stderr file) of a running `argus collect`."""
    rx = Receiver()
    work = tempfile.mkdtemp(prefix="argus-ne-")
    cfg = os.path.join(work, "collector.toml")
    with open(cfg, "w") as f:
        f.write(argus_config(args, work, rx.port, gpu, dcgm_names))
    env = {**os.environ, "RUST_LOG": "warn"}
    if gpu:
        env[SCENARIO_ENV] = os.path.abspath(args.gpu_scenario)
    else:
        env.pop(SCENARIO_ENV, None)
    err = open(os.path.join(work, "stderr.log"), "w+")
    p = subprocess.Popen([args.argus_bin, "collect", "--config", cfg], stdout=subprocess.DEVNULL, stderr=err, env=env)
    return p, rx, work, err


def stop_argus(p, rx, err):
    p.terminate()
    p.wait()
    rx.stop()
    err.seek(0)
    text = err.read()
    err.close()
    return text


def gpu_source_figures(lines, lo, hi):
    """What the gpu source wrote: per-round samples, distinct series in [lo, hi), the first round's
    series, failed rounds, and the series per family."""
    gpu_rounds = sorted(ts for m, tags, _, ts in lines if m == "argus_collector" and tags.get("source") == "gpu")
    window_rounds = [ts for ts in gpu_rounds if lo <= ts < hi]
    failed = sum(
        1
        for m, tags, fields, ts in lines
        if m == "argus_collector" and tags.get("source") == "gpu" and lo <= ts < hi and fields.get("source_success") == 0
    )
    series, per_family, per_gpu = set(), collections.Counter(), collections.Counter()
    samples = 0
    for m, tags, fields, ts in lines:
        if m not in GPU_MEASUREMENTS or not (lo <= ts < hi):
            continue
        samples += len(fields)
        for f in fields:
            key = (series_name(m, f), tuple(sorted(tags.items())))
            if key not in series:
                series.add(key)
                per_family[key[0]] += 1
                per_gpu[tags.get("gpu", "-")] += 1
    first = set()
    if gpu_rounds:
        # The first round's points are stamped with its time (an Xid counter's first point 1 ms before).
        t = gpu_rounds[0]
        for m, tags, fields, ts in lines:
            if m in GPU_MEASUREMENTS and t - 1 <= ts <= t:
                first.update((series_name(m, f), tuple(sorted(tags.items()))) for f in fields)
    gpm = sum(n for name, n in per_family.items() if name in GPM_SERIES)
    return {
        "gpu_collections": len(window_rounds),
        "gpu_failed_collections": failed,
        "gpu_samples_per_collection": samples / max(len(window_rounds), 1),
        "gpu_series": len(series),
        "gpu_gpm_series": gpm,
        "gpu_series_first_collection": len(first),
        "gpu_series_per_gpu": dict(sorted(per_gpu.items(), key=lambda kv: (kv[0] == "-", kv[0].zfill(4)))),
        "gpu_series_per_family": dict(sorted(per_family.items())),
    }


def run_argus(args, gpu=False):
    p, rx, work, err = start_argus(args, gpu)
    try:
        time.sleep(WARM_UP_S)  # warm-up: first collections (GPM's first sample), connections
        if p.poll() is not None:
            raise RuntimeError(f"argus collect exited with {p.returncode} during the warm-up ({work})")
        load = MachineLoad()
        t0 = time.time()
        c0 = cpu_seconds(p.pid)
        time.sleep(args.seconds)
        cpu = cpu_seconds(p.pid) - c0
        t1 = time.time()
        mem = memory_kib(p.pid)
        machine = load.finish()
        time.sleep(2)  # let the last flush arrive
    finally:
        log = stop_argus(p, rx, err)
    lines = rx.snapshot()
    lo, hi = int(t0 * 1000), int(t1 * 1000)
    window = [(m, tags, fields) for m, tags, fields, ts in lines if lo <= ts < hi]
    rounds = sum(1 for m, tags, _ in window if m == "argus_collector" and tags.get("source") == "host")
    data = sum(len(f) for m, _, f in window if m != "argus_collector")
    selfs = sum(len(f) for m, _, f in window if m == "argus_collector")
    series = {(series_name(m, f), tuple(sorted(tags.items()))) for m, tags, fields in window for f in fields}
    res = {
        "who": "argus_gpu" if gpu else "argus",
        "collections": rounds,
        "cpu_s": cpu,
        "cpu_ms_per_collection": 1000 * cpu / max(rounds, 1),
        "samples_per_collection": (data + selfs) / max(rounds, 1),
        "node_samples_per_collection": data / max(rounds, 1),
        "cpu_us_per_sample": 1e6 * cpu / max(data + selfs, 1),
        "series": len(series),
        "series_data": sum(1 for name, _ in series if not name.startswith("argus_collector_")),
        "rss_kib": mem["VmRSS"],
        "hwm_kib": mem["VmHWM"],
        **machine,
    }
    if gpu:
        res.update(gpu_source_figures(lines, lo, hi))
        if res["gpu_collections"] == 0 or res["gpu_failed_collections"]:
            print(f"argus_gpu: {res['gpu_collections']} gpu collections, {res['gpu_failed_collections']} failed; "
                  f"collector's stderr:\n{log[-4000:]}", file=sys.stderr)
    shutil.rmtree(work, ignore_errors=True)
    return res


def dcgm_names_series(args, seconds=6):
    """The gpu source's distinct series with dcgm_names on (untimed), once GPM has its second sample."""
    p, rx, work, err = start_argus(args, True, dcgm_names=True)
    try:
        time.sleep(WARM_UP_S)
        t0 = time.time()
        time.sleep(seconds)
        t1 = time.time()
        time.sleep(2)
    finally:
        stop_argus(p, rx, err)
    figs = gpu_source_figures(rx.snapshot(), int(t0 * 1000), int(t1 * 1000))
    shutil.rmtree(work, ignore_errors=True)
    dcgm = sum(n for name, n in figs["gpu_series_per_family"].items() if name.startswith("DCGM_"))
    return {"gpu_series": figs["gpu_series"], "dcgm_series": dcgm, "gpu_collections": figs["gpu_collections"]}


def version(cmd):
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=10)
        return (out.stdout or out.stderr).strip().splitlines()[0]
    except Exception as e:  # a missing binary is reported by the run itself
        return f"unknown ({e})"


def summarise(runs, whos):
    med = {}
    for who in whos:
        rs = [x for x in runs if x["who"] == who]
        keys = [k for k in rs[0] if isinstance(rs[0][k], (int, float)) and k != "rep"]
        med[who] = {k: statistics.median(x[k] for x in rs) for k in keys}
    out = {"medians": med, "ratios": {}}
    ne = med["node_exporter"]
    for who in whos[1:]:
        per_rep = []
        for r in sorted({x["rep"] for x in runs}):
            a = [x for x in runs if x["who"] == who and x["rep"] == r]
            n = [x for x in runs if x["who"] == "node_exporter" and x["rep"] == r]
            if a and n:
                per_rep.append(round(a[0]["cpu_us_per_sample"] / n[0]["cpu_us_per_sample"], 3))
        out["ratios"][who] = {
            "cpu_per_sample_vs_node_exporter": med[who]["cpu_us_per_sample"] / ne["cpu_us_per_sample"],
            "cpu_per_sample_vs_node_exporter_per_rep": per_rep,
            "cpu_per_collection_vs_node_exporter": med[who]["cpu_ms_per_collection"] / ne["cpu_ms_per_collection"],
        }
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--argus-bin", default="target/release/argus")
    ap.add_argument("--node-exporter", default="/usr/bin/prometheus-node-exporter")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--interval", type=float, default=0.5, help="seconds between collections/scrapes")
    ap.add_argument("--gpu-scenario", help="fake NVML scenario (JSON) for the argus_gpu configuration")
    ap.add_argument("--fake-nvml", help="libargus_fake_nvml.so, loaded as [collector.gpu] nvml_library")
    ap.add_argument("--dcgm-names-series", action="store_true",
                    help="also count the gpu source's series with dcgm_names on (one short untimed run)")
    ap.add_argument("--out", help="write every run's figures, the medians and the ratios as JSON here")
    args = ap.parse_args()
    if bool(args.gpu_scenario) != bool(args.fake_nvml):
        ap.error("--gpu-scenario and --fake-nvml go together")
    for path, what in ((args.gpu_scenario, "--gpu-scenario"), (args.fake_nvml, "--fake-nvml")):
        if path and not os.path.isfile(path):
            ap.error(f"{what} {path}: no such file")
    if args.dcgm_names_series and not args.gpu_scenario:
        ap.error("--dcgm-names-series needs --gpu-scenario and --fake-nvml")

    fns = [("node_exporter", run_node_exporter), ("argus", run_argus)]
    if args.gpu_scenario:
        fns.append(("argus_gpu", lambda a: run_argus(a, gpu=True)))
    whos = [w for w, _ in fns]
    started = time.time()
    runs = []
    for r in range(args.repeat):
        # Each repetition starts with the next configuration, so none always runs first.
        for who, fn in fns[r % len(fns):] + fns[: r % len(fns)]:
            res = fn(args)
            res["rep"] = r
            shown = {k: v for k, v in res.items() if k not in ("gpu_series_per_family",)}
            print(json.dumps(shown), file=sys.stderr)
            runs.append(res)
    summary = summarise(runs, whos)
    if args.dcgm_names_series:
        summary["dcgm_names"] = dcgm_names_series(args)

    med = summary["medians"]
    print("| | CPU ms / collection | samples / collection (data only) | µs CPU / sample | × node_exporter per sample "
          "| series | RSS MiB (peak) |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for who in whos:
        m = med[who]
        ratio = summary["ratios"].get(who, {}).get("cpu_per_sample_vs_node_exporter")
        cells = [
            who,
            f"{m['cpu_ms_per_collection']:.2f}",
            f"{m['samples_per_collection']:.0f} ({m['node_samples_per_collection']:.0f})",
            f"{m['cpu_us_per_sample']:.1f}",
            "" if ratio is None else f"{ratio:.2f}",
            f"{m['series']:.0f}" if "series" in m else "",
            f"{m['rss_kib'] / 1024:.1f} ({m['hwm_kib'] / 1024:.1f})",
        ]
        print("| " + " | ".join(cells) + " |")
    for who, r in summary["ratios"].items():
        print(f"\n{who} / node_exporter CPU per sample: {r['cpu_per_sample_vs_node_exporter']:.2f} (goal <= 0.5; "
              f"per repetition {r['cpu_per_sample_vs_node_exporter_per_rep']}); per collection "
              f"{r['cpu_per_collection_vs_node_exporter']:.2f}")
    if "argus_gpu" in med:
        g = med["argus_gpu"]
        print(f"\ngpu source: {g['gpu_series']:.0f} series per node ({g['gpu_gpm_series']:.0f} from GPM; "
              f"{g['gpu_series_first_collection']:.0f} in its first collection), "
              f"{g['gpu_samples_per_collection']:.0f} samples per collection; node total {g['series']:.0f} series")
        if "dcgm_names" in summary:
            d = summary["dcgm_names"]
            print(f"with dcgm_names: {d['gpu_series']} gpu-source series ({d['dcgm_series']} DCGM_*)")
    print(f"\n{args.repeat} alternated runs of {args.seconds:.0f} s each at {args.interval} s, medians; "
          f"{time.time() - started:.0f} s in all")
    if args.out:
        meta = {
            "argus": version([args.argus_bin, "--version"]),
            "node_exporter": version([args.node_exporter, "--version"]),
            "gpu_scenario": args.gpu_scenario,
            "fake_nvml": args.fake_nvml,
            "repeat": args.repeat,
            "seconds": args.seconds,
            "interval_s": args.interval,
            "cpus": os.cpu_count(),
            "kernel": platform.release(),
            "started": time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(started)),
        }
        with open(args.out, "w") as f:
            json.dump({"meta": meta, "runs": runs, "summary": summary}, f, indent=1)


if __name__ == "__main__":
    main()
