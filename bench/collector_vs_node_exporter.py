#!/usr/bin/env python3
"""The collector's host/disk/net sources against node_exporter (issue 4): CPU time per collection, per
emitted sample, and resident memory, on the same machine, runs alternated, medians quoted.

    python3 bench/collector_vs_node_exporter.py --argus-bin target/release/argus [--repeat 3] [--seconds 60]

node_exporter (Debian's prometheus-node-exporter) runs with only the collectors matching ours:
cpu, stat, loadavg, meminfo (host); diskstats, filesystem (disk); netdev, netstat, infiniband (net).
It is scraped every --interval; its CPU per scrape is its utime+stime over the measured window divided by
the scrapes in it. `argus collect` runs host, disk and net (gpu and events off) at the same --interval,
shipping gzip line protocol to a receiver in this script (another process); its CPU per collection is
its utime+stime over the window divided by the host collections whose timestamps fall in it. Both include
encoding and HTTP. Samples are counted from what each emits (node_exporter's own go_/process_/promhttp_
series included, as a scrape pays for them). RSS is VmRSS at the end of the run, and VmHWM (peak).
Standard library only.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lib.lp_receiver import Receiver, cpu_seconds, memory_kib  # noqa: E402
from lib.server import free_port  # noqa: E402

NE_COLLECTORS = ["cpu", "stat", "loadavg", "meminfo", "diskstats", "filesystem", "netdev", "netstat", "infiniband"]
def wait_http(url, deadline=20):
    end = time.time() + deadline
    while time.time() < end:
        try:
            urllib.request.urlopen(url, timeout=1).read()
            return
        except Exception:
            time.sleep(0.1)
    raise RuntimeError(f"{url} did not answer")


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
    finally:
        p.terminate()
        p.wait()
    return {
        "who": "node_exporter",
        "collections": scrapes,
        "cpu_s": cpu,
        "cpu_ms_per_collection": 1000 * cpu / scrapes,
        "samples_per_collection": statistics.median(samples),
        "node_samples_per_collection": statistics.median(node_samples),
        "rss_kib": mem["VmRSS"],
        "hwm_kib": mem["VmHWM"],
    }


def run_argus(args):
    rx = Receiver()
    rport = rx.port
    work = tempfile.mkdtemp(prefix="argus-ne-")
    cfg = os.path.join(work, "collector.toml")
    ms = int(args.interval * 1000)
    with open(cfg, "w") as f:
        f.write(f"""[collector]
interval = "{ms}ms"
data_dir = "{work}/data"
[collector.gpu]
enabled = false
[collector.events]
enabled = false
[[collector.sink]]
url = "http://127.0.0.1:{rport}/api/v2/write"
format = "line_protocol"
flush_interval = "1s"
""")
    p = subprocess.Popen([args.argus_bin, "collect", "--config", cfg], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, env={**os.environ, "RUST_LOG": "warn"})
    try:
        time.sleep(3)  # warm-up: first collections, connections
        t0 = time.time()
        c0 = cpu_seconds(p.pid)
        time.sleep(args.seconds)
        cpu = cpu_seconds(p.pid) - c0
        t1 = time.time()
        mem = memory_kib(p.pid)
        time.sleep(2)  # let the last flush arrive
    finally:
        p.terminate()
        p.wait()
        rx.stop()
    lo, hi = int(t0 * 1000), int(t1 * 1000)
    window = [(m, tags, len(fields)) for m, tags, fields, ts in rx.snapshot() if lo <= ts < hi]
    rounds = sum(1 for m, tags, _ in window if m == "argus_collector" and tags.get("source") == "host")
    data = sum(n for m, _, n in window if m != "argus_collector")
    selfs = sum(n for m, _, n in window if m == "argus_collector")
    return {
        "who": "argus",
        "collections": rounds,
        "cpu_s": cpu,
        "cpu_ms_per_collection": 1000 * cpu / max(rounds, 1),
        "samples_per_collection": (data + selfs) / max(rounds, 1),
        "node_samples_per_collection": data / max(rounds, 1),
        "rss_kib": mem["VmRSS"],
        "hwm_kib": mem["VmHWM"],
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--argus-bin", default="target/release/argus")
    ap.add_argument("--node-exporter", default="/usr/bin/prometheus-node-exporter")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--interval", type=float, default=0.5, help="seconds between collections/scrapes")
    ap.add_argument("--out", help="write every run's figures as JSON here")
    args = ap.parse_args()
    runs = []
    for r in range(args.repeat):
        for fn in (run_node_exporter, run_argus):
            res = fn(args)
            res["rep"] = r
            print(json.dumps(res), file=sys.stderr)
            runs.append(res)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(runs, f, indent=1)
    med = {}
    for who in ("node_exporter", "argus"):
        rs = [x for x in runs if x["who"] == who]
        med[who] = {k: statistics.median(x[k] for x in rs) for k in rs[0] if k not in ("who", "rep")}
    print("| | CPU ms / collection | samples / collection (data only) | µs CPU / sample | RSS MiB (peak) |")
    print("|---|---|---|---|---|")
    for who, m in med.items():
        per_sample = 1000 * m["cpu_ms_per_collection"] / m["samples_per_collection"]
        print(f"| {who} | {m['cpu_ms_per_collection']:.2f} | {m['samples_per_collection']:.0f} ({m['node_samples_per_collection']:.0f}) "
              f"| {per_sample:.1f} | {m['rss_kib'] / 1024:.1f} ({m['hwm_kib'] / 1024:.1f}) |")
    ratio = med["argus"]["cpu_ms_per_collection"] / med["node_exporter"]["cpu_ms_per_collection"]
    print(f"\nargus / node_exporter CPU per collection: {ratio:.2f} (goal <= 0.5); "
          f"{args.repeat} alternated runs of {args.seconds:.0f} s each at {args.interval} s, medians")


if __name__ == "__main__":
    main()
