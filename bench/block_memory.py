#!/usr/bin/env python3
"""Blocks at fleet scale: what an open block costs in memory, what a flush and a compaction cost, and how
fast reads over blocks are — two Argus binaries side by side (an older build against the current one).

Each run starts `argus serve` (the store alone: alertd and the analyzer off) with a fresh data directory and writes --series series (GPU-cluster names:
metric × host × gpu) with one sample every --step-min minutes over --hours hours that end more than a day
ago, plus one sample now, so that the 2-hour blocks the flush cuts fall in a closed 6-hour window and are
compacted at once. It then calls /internal/force_flush (flush and compaction), sampling RSS every 20 ms
(peak and time), stops the server, starts it again on the same directory (every block opened), and records
RSS after open (anonymous and file-backed apart), then times reads that touch every block: /api/v1/series
for one host, /api/v1/labels, /api/v1/label/host/values, and a query_range summing one metric over 64
hosts × 8 GPUs over the whole span. Runs alternate between the binaries; tables give medians.
Standard library only. See bench/README.md.

usage: bench/block_memory.py --bin old=/path/to/argus --bin new=target/release/argus [--series 500000]
                             [--repeat 3] [--out results.json]
"""
import argparse
import datetime
import json
import os
import shutil
import sys
import threading
import time
import urllib.parse

sys.dont_write_bytecode = True  # no __pycache__ in the checkout
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lib import client, report, server  # noqa: E402

METRICS = ["gpu_util", "gpu_mem_used", "gpu_temp", "gpu_power", "gpu_sm_clock",
           "gpu_ecc_sbe", "gpu_pcie_tx", "gpu_pcie_rx", "gpu_nvlink_tx", "gpu_nvlink_rx"]
GPUS = 8
DAY_MS = 86_400_000
SIX_H_MS = 6 * 3_600_000


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bin", action="append", required=True, metavar="NAME=PATH",
                   help="a binary to measure; give two or more, runs alternate in this order")
    p.add_argument("--series", type=int, default=500_000, help="series written (a multiple of 80 is exact)")
    p.add_argument("--hours", type=int, default=4, help="hours of samples (a 6-hour window holds them)")
    p.add_argument("--step-min", type=int, default=10, help="minutes between a series' samples")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--reads", type=int, default=10, help="timed repetitions of each read")
    p.add_argument("--batch-lines", type=int, default=5000)
    p.add_argument("--writers", type=int, default=2)
    p.add_argument("--settle-s", type=float, default=5.0, help="wait after restart before reading RSS")
    p.add_argument("--work-dir", default="/tmp/argus-block-bench")
    p.add_argument("--out", help="write every run's raw figures as JSON here, and the tables to FILE.md")
    a = p.parse_args(argv)
    a.bins = []
    for b in a.bin:
        name, sep, path = b.partition("=")
        if not sep or not os.path.exists(path):
            p.error(f"--bin wants NAME=PATH of an existing binary, got {b!r}")
        a.bins.append((name, os.path.abspath(path)))
    return a


def workload(a):
    """Line-protocol batches (one line per host, gpu and time, a field per metric) and the time span."""
    hosts = max(1, a.series // (len(METRICS) * GPUS))
    now = int(time.time() * 1000)
    # The start of a 6-hour window that closed more than a day ago: its blocks are compacted at once.
    start = (now - DAY_MS - SIX_H_MS) // SIX_H_MS * SIX_H_MS
    step = a.step_min * 60_000
    times = list(range(start, start + a.hours * 3_600_000, step))
    lines = []
    for t in times:
        for h in range(hosts):
            for g in range(GPUS):
                fields = ",".join(f"{m[4:]}={(h * 7 + g * 3 + t // step) % 100}" for m in METRICS)
                lines.append(f"gpu,cluster=c{h % 4},host=node-{h:05d},gpu={g} {fields} {t}")
    lines.append(f"gpu,cluster=c0,host=node-00000,gpu=0 util=1 {now}")
    batches = ["\n".join(lines[i:i + a.batch_lines]).encode() for i in range(0, len(lines), a.batch_lines)]
    return batches, hosts, times[0], times[-1], len(lines) * len(METRICS)


def proc_status(pid):
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("VmRSS", "VmHWM", "RssAnon", "RssFile"):
                out[k] = int(v.split()[0]) / 1024.0  # MiB
    return out


def timed_flush(srv):
    """POST /internal/force_flush while sampling RSS every 20 ms: (seconds, peak RSS MiB, RSS before MiB)."""
    before = proc_status(srv.proc.pid)["VmRSS"]
    peak = [before]
    done = threading.Event()

    def sample():
        while not done.is_set():
            try:
                peak[0] = max(peak[0], proc_status(srv.proc.pid)["VmRSS"])
            except OSError:
                return
            time.sleep(0.02)

    th = threading.Thread(target=sample)
    th.start()
    t = time.monotonic()
    status, _, body = srv.request("POST", "/internal/force_flush", timeout=3600)
    dt = time.monotonic() - t
    done.set()
    th.join()
    if status != 200:
        raise RuntimeError(f"force_flush answered {status}: {body[:300]!r}")
    return dt, peak[0], before


def timed(fn, reps):
    lat = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        lat.append((time.perf_counter() - t) * 1000.0)
    return report.median(lat)


def get_ok(srv, path, params):
    status, _, body = srv.request("GET", path + "?" + urllib.parse.urlencode(params, doseq=True), timeout=600)
    if status != 200:
        raise RuntimeError(f"{path} answered {status}: {body[:300]!r}")
    return json.loads(body)["data"]


def reads(srv, a, hosts, t0, t1):
    start, end = t0 / 1000.0, t1 / 1000.0
    host = f"node-{hosts // 2:05d}"
    n_series = len(get_ok(srv, "/api/v1/series", {"match[]": f'{{host="{host}"}}', "start": start, "end": end}))
    n_labels = len(get_ok(srv, "/api/v1/labels", {"start": start, "end": end}))
    n_hosts = len(get_ok(srv, "/api/v1/label/host/values", {"start": start, "end": end}))
    q = {"query": 'sum by (gpu) (gpu_util{host=~"node-000[0-5][0-9]|node-0006[0-3]"})',
         "start": start, "end": end, "step": a.step_min * 60}
    res = get_ok(srv, "/api/v1/query_range", q)
    checks = {"series_one_host": n_series, "label_names": n_labels, "host_values": n_hosts,
              "range_series": len(res["result"]), "range_points": sum(len(s["values"]) for s in res["result"])}
    lat = {
        "series_ms": timed(lambda: get_ok(srv, "/api/v1/series",
                                          {"match[]": f'{{host="{host}"}}', "start": start, "end": end}), a.reads),
        "labels_ms": timed(lambda: get_ok(srv, "/api/v1/labels", {"start": start, "end": end}), a.reads),
        "host_values_ms": timed(lambda: get_ok(srv, "/api/v1/label/host/values", {"start": start, "end": end}),
                                a.reads),
        "range_ms": timed(lambda: get_ok(srv, "/api/v1/query_range", q), a.reads),
    }
    want = {"series_one_host": GPUS * len(METRICS), "host_values": hosts, "range_series": GPUS}
    wrong = {k: (checks[k], v) for k, v in want.items() if checks[k] != v}
    if wrong:
        raise RuntimeError(f"reads answered wrong counts (got, want): {wrong}")
    return checks, lat


def blocks_of(data_dir):
    d = os.path.join(data_dir, "blocks")
    names = sorted(n for n in os.listdir(d) if n.startswith("b-")) if os.path.isdir(d) else []
    size = 0
    for root, _, files in os.walk(d):
        size += sum(os.path.getsize(os.path.join(root, f)) for f in files)
    return len(names), size / 2**20


def run_one(name, binary, a, batches, hosts, t0, t1, i):
    data = os.path.join(a.work_dir, f"{name}-{i}")
    shutil.rmtree(data, ignore_errors=True)
    conf = os.path.join(a.work_dir, "store-only.toml")
    with open(conf, "w") as f:
        f.write("[alertd]\nenabled = false\n\n[analyzer]\nenabled = false\n")
    spec = server.argus_spec(binary, f"--config {conf}")
    srv = server.Server(spec, data, os.path.join(a.work_dir, f"{name}-{i}.log"))
    srv.start(timeout=120)
    r = {"bin": name, "run": i}
    try:
        t = time.monotonic()
        st = client.ingest(srv.port, batches, writers=a.writers, path="/api/v2/write?precision=ms")
        r["ingest_s"] = round(time.monotonic() - t, 2)
        r["ingest_retries"] = st["retries"]
        r["flush_s"], r["flush_peak_rss_mib"], r["rss_before_flush_mib"] = timed_flush(srv)
        r["hwm_mib"] = proc_status(srv.proc.pid)["VmHWM"]
    finally:
        srv.stop(timeout=600)
    r["blocks"], r["blocks_mib"] = blocks_of(data)
    srv = server.Server(spec, data, os.path.join(a.work_dir, f"{name}-{i}-reopen.log"))
    t = time.monotonic()
    srv.start(timeout=600)
    r["reopen_s"] = round(time.monotonic() - t, 2)
    try:
        time.sleep(a.settle_s)
        s = proc_status(srv.proc.pid)
        r["open_rss_mib"], r["open_anon_mib"], r["open_file_mib"] = s["VmRSS"], s["RssAnon"], s["RssFile"]
        r["checks"], r["reads"] = reads(srv, a, hosts, t0, t1)
        s = proc_status(srv.proc.pid)
        r["after_reads_rss_mib"], r["after_reads_anon_mib"] = s["VmRSS"], s["RssAnon"]
    finally:
        srv.stop(timeout=600)
        shutil.rmtree(data, ignore_errors=True)
    log(f"{name} run {i}: {json.dumps(r)}")
    return r


def main():
    a = parse_args()
    os.makedirs(a.work_dir, exist_ok=True)
    batches, hosts, t0, t1, samples = workload(a)
    series = hosts * GPUS * len(METRICS)
    log(f"{series:,} series, {samples:,} samples in {len(batches)} batches over {a.hours} h")
    runs = []
    for i in range(a.repeat):
        for name, binary in a.bins:
            runs.append(run_one(name, binary, a, batches, hosts, t0, t1, i + 1))
    keys = [("ingest_s", "ingest s"), ("flush_s", "flush + compaction s"),
            ("flush_peak_rss_mib", "peak RSS in flush + compaction MiB"), ("rss_before_flush_mib", "RSS before flush MiB"),
            ("blocks", "blocks after"), ("blocks_mib", "blocks MiB"), ("reopen_s", "reopen s"),
            ("open_rss_mib", "RSS after reopen MiB"), ("open_anon_mib", "  of it anonymous MiB"),
            ("open_file_mib", "  of it file-backed MiB"), ("after_reads_rss_mib", "RSS after the reads MiB"),
            ("after_reads_anon_mib", "  of it anonymous MiB")]
    read_keys = [("series_ms", "/api/v1/series, one host ms"), ("labels_ms", "/api/v1/labels ms"),
                 ("host_values_ms", "/api/v1/label/host/values ms"), ("range_ms", "query_range, 512 series ms")]
    names = [n for n, _ in a.bins]
    rows = []
    for k, label in keys:
        rows.append([label] + [report.fmt(report.median([r[k] for r in runs if r["bin"] == n])) for n in names])
    for k, label in read_keys:
        rows.append([label] + [report.fmt(report.median([r["reads"][k] for r in runs if r["bin"] == n]))
                               for n in names])
    checks = {n: [r["checks"] for r in runs if r["bin"] == n][0] for n in names}
    md = (f"{series:,} series, {samples:,} samples over {a.hours} h (one every {a.step_min} min), "
          f"{a.repeat} alternated runs each, medians; {datetime.date.today()}\n\n"
          + report.table(["figure"] + names, rows)
          + "\n\nanswers (first run): " + "; ".join(f"{n}: {json.dumps(c)}" for n, c in checks.items()) + "\n")
    print(md)
    if a.out:
        with open(a.out, "w") as f:
            json.dump({"args": vars(a), "runs": runs}, f, indent=1)
        with open(a.out + ".md", "w") as f:
            f.write(md)


if __name__ == "__main__":
    main()
