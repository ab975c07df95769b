#!/usr/bin/env python3
"""Side-by-side ingest benchmark: Argus's embedded store against VictoriaMetrics, same machine, same workload.

Each run starts one server on loopback with a fresh data directory, sends the GPU-cluster line-protocol
workload (bench/lib/gen_lp.py) with concurrent keep-alive writers, force-flushes, waits for background
merges to settle, and records: server CPU seconds (utime+stime from /proc) per million points, bytes per point
of the whole data directory, wall-clock ingest rate, peak RSS (VmHWM), then times a 24-hour full-resolution
range read of one series. Runs alternate between the servers (vm, argus, vm, argus, ...) and the table
reports medians. Standard library only. See bench/README.md.

usage: bench/ingest.py [--servers vm,argus] [--argus-bin target/release/argus] [--repeat 3]
                       [--nodes 64] [--minutes 30] [--out results.json]
"""
import argparse
import datetime
import json
import os
import platform
import shutil
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the checkout
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lib import client, report, server, workload  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
READ_SERIES = 'gpu_utilization{host="gpu-node-000",gpu="0"}'
DAY = 86400


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--servers", default="vm,argus", help="comma-separated, in alternation order: vm, argus")
    p.add_argument("--argus-bin", default=os.path.join(REPO, "target", "release", "argus"))
    p.add_argument("--argus-args", default="", help="extra arguments for `argus serve`")
    p.add_argument("--vm-bin", default="victoria-metrics")
    p.add_argument("--vm-args", default="", help="extra flags for victoria-metrics")
    p.add_argument("--repeat", type=int, default=3, help="runs per server (medians of these)")
    p.add_argument("--nodes", type=int, default=64)
    p.add_argument("--minutes", type=int, default=30, help="workload duration (10 s steps)")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--batch-lines", type=int, default=5000, help="lines per write request")
    p.add_argument("--writers", type=int, default=2, help="concurrent writer connections")
    p.add_argument("--min-points", type=int, default=1_000_000,
                   help="warn when the workload has fewer points (the issue asks for >= 1 M)")
    p.add_argument("--read-nodes", type=int, default=1, help="nodes in the 24 h read workload")
    p.add_argument("--read-reps", type=int, default=200, help="timed 24 h range reads per run (>= 100)")
    p.add_argument("--no-read", action="store_true", help="skip the 24 h range-read test")
    p.add_argument("--no-force-merge", action="store_true", help="skip the forced-merge size")
    p.add_argument("--settle-s", type=float, default=3.0,
                   help="data directory size must hold still this long (and merges be 0) to count as settled")
    p.add_argument("--settle-timeout", type=float, default=300.0)
    p.add_argument("--cooldown", type=float, default=2.0, help="seconds of idle between runs")
    p.add_argument("--work-dir", default="/tmp/argus-bench", help="workload cache and run data directories")
    p.add_argument("--keep-data", action="store_true", help="keep each run's data directory")
    p.add_argument("--gen-lp", help="path of a gen_lp.py (default: bench/lib/gen_lp.py)")
    p.add_argument("--out", help="write every run's raw figures as JSON here, and the tables to FILE.md")
    a = p.parse_args(argv)
    a.servers = [s.strip() for s in a.servers.split(",") if s.strip()]
    for s in a.servers:
        if s not in ("vm", "argus"):
            p.error(f"unknown server {s!r} (vm, argus)")
    if a.repeat < 1:
        p.error("--repeat must be >= 1")
    return a


# === workloads ===

def aligned(t):
    return int(t) // 10 * 10


def prepare_workloads(a):
    """The ingest workload ends ~25 h ago; the 24 h read workload follows it, so each server receives data in
    time order (main first, then the read day). Both are reused from --work-dir while less than a week old."""
    gen = workload.find_gen_lp(a.gen_lp)
    root = os.path.join(a.work_dir, "workloads")
    os.makedirs(root, exist_ok=True)
    anchor_path = os.path.join(root, "anchor.json")
    now = time.time()
    read_t0 = None
    if os.path.isfile(anchor_path):
        with open(anchor_path) as f:
            read_t0 = json.load(f).get("read_t0")
        if not read_t0 or read_t0 < now - 7 * DAY:
            read_t0 = None
    if read_t0 is None:
        read_t0 = aligned(now - DAY - 600)
        with open(anchor_path, "w") as f:
            json.dump({"read_t0": read_t0}, f)
    main_t0 = aligned(read_t0 - a.minutes * 60 - 600)
    main_dir, main_meta = workload.ensure(gen, root, f"main-{a.nodes}x{a.minutes}m-s{a.seed}", a.nodes,
                                          a.minutes, a.seed, main_t0, a.batch_lines, log)
    if main_meta["points"] < a.min_points:
        log(f"WARNING: workload has {main_meta['points']:,} points, fewer than {a.min_points:,}: "
            f"raise --minutes or --nodes for a result that counts")
    read = None
    if not a.no_read:
        read_dir, read_meta = workload.ensure(gen, root, f"read-{a.read_nodes}x24h-s{a.seed + 1}", a.read_nodes,
                                              DAY // 60, a.seed + 1, read_t0, a.batch_lines, log)
        read = (read_dir, read_meta)
    return (main_dir, main_meta), read


# === one run ===

def verify(srv, meta, nodes):
    """Series and sample counts after flush, through the Prometheus API. Warnings, never failures."""
    out = {"warnings": []}
    start, end = meta["t0"], meta["t0"] + meta["minutes"] * 60 - 10
    checks = [("gpu_utilization", nodes * 8, "series_gpu_utilization"),
              ('{cluster="prod"}', meta["series"], "series_all")]
    for match, want, key in checks:
        try:
            status, body, raw = client.get_json(srv.port, "/api/v1/series",
                                                {"match[]": match, "start": start, "end": end + 10})
        except OSError as e:
            status, body, raw = None, None, repr(e)
        if status == 200 and body and isinstance(body.get("data"), list):
            got = len(body["data"])
            out[key] = got
            if got != want:
                out["warnings"].append(f"/api/v1/series {match}: {got} series, expected {want}")
        else:
            out[key] = None
            out["warnings"].append(f"/api/v1/series {match} not verified: status {status} {raw or ''}".strip())
    want = meta["minutes"] * 6
    _, points, _, err, _, _ = client.time_range_reads(srv.port, READ_SERIES, start, end, "10s", reps=1, warmup=0)
    out["samples_one_series"] = points
    if err or points != want:
        out["warnings"].append(f"query_range {READ_SERIES} over the ingest window: {points} points, "
                               f"expected {want}{'; ' + err if err else ''}")
    return out


def one_run(a, spec, order, batches, meta, read):
    name = f"{order:02d}-{spec.name}"
    run_dir = os.path.join(a.work_dir, "runs", name)
    shutil.rmtree(run_dir, ignore_errors=True)
    os.makedirs(run_dir)
    data_dir = os.path.join(run_dir, "data")
    srv = server.Server(spec, data_dir, os.path.join(run_dir, "server.log"))
    r = {"server": spec.name, "order": order, "argv": srv.argv, "loadavg_before": os.getloadavg(),
         "points": meta["points"], "lines": meta["lines"], "batches": len(batches)}
    log(f"run {name}: starting {' '.join(srv.argv)}")
    srv.start()
    try:
        r["pid"] = srv.proc.pid
        cpu0 = srv.cpu_seconds()
        st = client.ingest(srv.port, batches, writers=a.writers)
        cpu_ack = srv.cpu_seconds()
        wall = st["last_ack"] - st["first_send"]
        r.update(ingest_wall_s=round(wall, 3), rate_points_per_s=meta["points"] / wall,
                 retries=st["retries"], retry_wait_s=st["retry_wait_s"], reconnects=st["reconnects"],
                 write_statuses=st["statuses"], request_bytes=st["bytes"], cpu_ingest_s=cpu_ack - cpu0,
                 rss_after_ingest_kib=srv.status_kib("VmRSS"))
        t = time.monotonic()
        status, _, body = srv.request("POST", "/internal/force_flush")
        r["flush_s"] = round(time.monotonic() - t, 3)
        if status not in (200, 204):
            raise RuntimeError(f"force_flush answered {status}: {body[:200]!r}")
        r["cpu_flush_s"] = srv.cpu_seconds() - cpu_ack
        r["settle_s"] = srv.settle(a.settle_s, a.settle_timeout)
        r["settled"] = r["settle_s"] < a.settle_timeout
        r["cpu_settle_s"] = srv.cpu_seconds() - cpu_ack - r["cpu_flush_s"]
        apparent, allocated, files = server.dir_size(data_dir)
        r.update(dir_bytes=apparent, dir_alloc_bytes=allocated, dir_files=files,
                 peak_rss_kib=srv.status_kib("VmHWM"))
        r["verify"] = verify(srv, meta, a.nodes)
        for w in r["verify"]["warnings"]:
            log(f"run {name}: WARNING {w}")
        r["merged_bytes"] = None
        if spec.force_merge and not a.no_force_merge:
            status, _, body = srv.request("POST", spec.force_merge)
            if status in (200, 204):
                time.sleep(0.5)
                r["force_merge_settle_s"] = srv.settle(a.settle_s, a.settle_timeout)
                r["merged_bytes"], r["merged_alloc_bytes"], _ = server.dir_size(data_dir)
            else:
                r["force_merge_status"] = status
        if read:
            r["read"] = read_test(a, srv, read)
        r["peak_rss_end_kib"] = srv.status_kib("VmHWM")
    finally:
        srv.stop()
    if not a.keep_data:
        shutil.rmtree(data_dir, ignore_errors=True)
    mp = meta["points"] / 1e6
    r["cpu_s_per_mpoint"] = r["cpu_ingest_s"] / mp
    r["cpu_s_per_mpoint_with_flush"] = (r["cpu_ingest_s"] + r["cpu_flush_s"]) / mp
    r["cpu_s_per_mpoint_settled"] = (r["cpu_ingest_s"] + r["cpu_flush_s"] + r["cpu_settle_s"]) / mp
    r["bytes_per_point"] = r["dir_bytes"] / meta["points"]
    r["alloc_bytes_per_point"] = r["dir_alloc_bytes"] / meta["points"]
    r["merged_bytes_per_point"] = r["merged_bytes"] / meta["points"] if r["merged_bytes"] else None
    rd = r.get("read") or {}
    log(f"run {name}: {r['rate_points_per_s']:,.0f} points/s, {r['cpu_s_per_mpoint']:.3f} CPU s/Mpoint, "
        f"{r['bytes_per_point']:.3f} B/point, peak RSS {r['peak_rss_kib'] / 1024:.0f} MiB, "
        f"24 h read p50 {report.fmt(rd.get('median_ms'))} ms")
    return r


def read_test(a, srv, read):
    """Ingest the 24 h workload, flush, settle, then time full-resolution range reads of one series."""
    read_dir, meta = read
    out = {"points_ingested": meta["points"]}
    st = client.ingest(srv.port, workload.load_batches(read_dir), writers=a.writers)
    out["ingest_wall_s"] = round(st["last_ack"] - st["first_send"], 3)
    status, _, body = srv.request("POST", "/internal/force_flush")
    if status not in (200, 204):
        out["error"] = f"force_flush answered {status}"
        return out
    out["settle_s"] = srv.settle(a.settle_s, a.settle_timeout)
    start, end = meta["t0"], meta["t0"] + DAY - 10
    lat, points, size, err, ttfb, server = client.time_range_reads(srv.port, READ_SERIES, start, end, "10s", a.read_reps)
    out.update(query=READ_SERIES, start=start, end=end, step="10s", reps=len(lat), points_returned=points,
               response_bytes=size, median_ms=report.median(lat), p99_ms=report.percentile(lat, 99),
               min_ms=min(lat) if lat else None, ttfb_median_ms=report.median(ttfb),
               ttfb_p99_ms=report.percentile(ttfb, 99), latencies_ms=[round(x, 4) for x in lat],
               ttfb_ms=[round(x, 4) for x in ttfb],
               server_median_ms=report.median(server) if server else None,
               server_p99_ms=report.percentile(server, 99) if server else None)
    if err:
        out["error"] = err
        log(f"24 h read: {err}")
    elif points != DAY // 10:
        out["error"] = f"{points} points returned, expected {DAY // 10}"
        log(f"24 h read: WARNING {out['error']}")
    return out


# === report ===

ROWS = [
    # (label, key or fn(run), digits)
    ("points ingested per run", lambda r: r["points"]),
    ("ingest wall time, s (first send to last ack)", lambda r: r["ingest_wall_s"]),
    ("**ingest rate, points/s**", lambda r: r["rate_points_per_s"]),
    ("server CPU to last ack, s", lambda r: r["cpu_ingest_s"]),
    ("**server CPU s per M points (to last ack)**", lambda r: r["cpu_s_per_mpoint"]),
    ("server CPU s per M points (+ force_flush)", lambda r: r["cpu_s_per_mpoint_with_flush"]),
    ("server CPU s per M points (+ merges settled)", lambda r: r["cpu_s_per_mpoint_settled"]),
    ("write retries (429/503)", lambda r: r["retries"]),
    ("force_flush call, s", lambda r: r["flush_s"]),
    ("settle after flush, s", lambda r: r["settle_s"]),
    ("data dir after flush + settle, MiB (apparent)", lambda r: r["dir_bytes"] / 2**20),
    ("**bytes per point (apparent size, after flush + settle)**", lambda r: r["bytes_per_point"]),
    ("bytes per point (allocated, st_blocks*512)", lambda r: r["alloc_bytes_per_point"]),
    ("bytes per point after force_merge (apparent)", lambda r: r.get("merged_bytes_per_point")),
    ("**peak RSS after ingest + flush, MiB (VmHWM)**", lambda r: r["peak_rss_kib"] / 1024),
    ("peak RSS at end of run, MiB (incl. 24 h read)", lambda r: r["peak_rss_end_kib"] / 1024),
    ("**24 h range read of one series, median ms**", lambda r: (r.get("read") or {}).get("median_ms")),
    ("24 h range read, p99 ms", lambda r: (r.get("read") or {}).get("p99_ms")),
    ("24 h range read, to response headers, median ms", lambda r: (r.get("read") or {}).get("ttfb_median_ms")),
    ("**24 h range read, server time (Server-Timing), median ms**", lambda r: (r.get("read") or {}).get("server_median_ms")),
    ("24 h range read, server time (Server-Timing), p99 ms", lambda r: (r.get("read") or {}).get("server_p99_ms")),
    ("24 h range read, response size, KiB", lambda r: ((r.get("read") or {}).get("response_bytes") or 0) / 1024 or None),
    ("24 h range read, points returned", lambda r: (r.get("read") or {}).get("points_returned")),
    ("series found / expected (gpu_utilization)", None),
]
RATIO_ROWS = {"**server CPU s per M points (to last ack)**", "server CPU s per M points (+ force_flush)",
              "server CPU s per M points (+ merges settled)", "**bytes per point (apparent size, after flush + settle)**",
              "bytes per point (allocated, st_blocks*512)", "bytes per point after force_merge (apparent)",
              "**ingest rate, points/s**", "**peak RSS after ingest + flush, MiB (VmHWM)**",
              "**24 h range read of one series, median ms**"}


def summarize(a, runs, specs, meta, read, versions, failed=()):
    names = [s.name for s in specs]
    labels = {s.name: s.label for s in specs}
    counts = {n: sum(r["server"] == n for r in runs) for n in names}
    header = ["median of runs"] + [f"{labels[n]} ({counts[n]} run{'s' if counts[n] != 1 else ''})" for n in names]
    both = "vm" in names and "argus" in names
    if both:
        header.append("argus / vm")
    rows = []
    for label, fn in ROWS:
        if fn is None:
            cells = []
            for n in names:
                got = [r["verify"].get("series_gpu_utilization") for r in runs if r["server"] == n]
                cells.append(", ".join("?" if g is None else str(g) for g in got) + f" of {a.nodes * 8}")
            rows.append([label] + cells + ([""] if both else []))
            continue
        meds = {}
        for n in names:
            vals = []
            for r in runs:
                if r["server"] == n:
                    try:
                        vals.append(fn(r))
                    except (KeyError, TypeError):
                        vals.append(None)
            meds[n] = report.median(vals)
        row = [label] + [report.fmt(meds[n]) for n in names]
        if both:
            row.append(report.fmt(report.ratio(meds["argus"], meds["vm"])) if label in RATIO_ROWS else "")
        rows.append(row)

    lines = [f"## Ingest benchmark, {datetime.date.today().isoformat()}", ""]
    lines.append(f"Workload: {meta['nodes']} nodes x {meta['minutes']} min at 10 s steps, {meta['lines']:,} lines, "
                 f"{meta['points']:,} points, {meta['series']:,} series, {meta['files']} batches "
                 f"of {a.batch_lines:,} lines, {a.writers} concurrent writers (keep-alive, `POST "
                 f"{client.WRITE_PATH}`).")
    if read:
        lines.append(f"24 h read: `{READ_SERIES}` over 24 h at step 10s ({DAY // 10:,} samples) after ingesting "
                     f"{read[1]['points']:,} more points ({a.read_nodes} node(s) x 24 h) and flushing; "
                     f"{a.read_reps} timed requests on one keep-alive connection (client-side latency over "
                     f"loopback including JSON encoding: an upper bound of server time).")
    lines.append(f"Machine: {platform.node()}, {os.cpu_count()} CPUs, "
                 f"{os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30:.0f} GiB; Python "
                 f"{platform.python_version()}. Versions: " + "; ".join(f"{labels[n]}: {versions[n]}" for n in names) + ".")
    order = sorted(list(runs) + list(failed), key=lambda r: r["order"])
    lines.append(f"Order: {', '.join(r['server'] for r in order)} (alternated). CPU = utime+stime of the server "
                 f"process from /proc/PID/stat. Sizes are the whole data directory.")
    lines += ["", report.table(header, rows), ""]
    per_run = [[f"{r['order']}", labels[r["server"]], report.fmt(r["rate_points_per_s"]),
                report.fmt(r["cpu_s_per_mpoint"]), report.fmt(r["bytes_per_point"]),
                report.fmt(r["peak_rss_kib"] / 1024), report.fmt((r.get("read") or {}).get("median_ms")),
                str(r["retries"]), " ".join(f"{x:.2f}" for x in r["loadavg_before"])] for r in runs]
    lines += ["Per run:", "", report.table(["#", "server", "points/s", "CPU s/Mpt", "B/pt", "peak RSS MiB",
                                             "read p50 ms", "retries", "load before"], per_run), ""]
    warnings = [f"run {r['order']} {r['server']}: {w}" for r in runs for w in r["verify"]["warnings"]]
    warnings += [f"run {r['order']} {r['server']}: 24 h read: {r['read']['error']}" for r in runs
                 if r.get("read") and r["read"].get("error")]
    warnings += [f"run {r['order']} {r['server']}: merges did not settle within {a.settle_timeout:.0f}s"
                 for r in runs if not r["settled"]]
    warnings += [f"run {f['order']} {f['server']}: FAILED: {f['error']}" for f in failed]
    if warnings:
        lines += ["Warnings:", ""] + [f"- {w}" for w in warnings] + [""]
    return "\n".join(lines)


def main(argv=None):
    a = parse_args(argv)
    specs = []
    versions = {}
    for s in a.servers:
        if s == "vm":
            binary = shutil.which(a.vm_bin)
            if not binary:
                sys.exit(f"{a.vm_bin} not found: run scripts/install-peers.sh (Debian package victoria-metrics)")
            specs.append(server.vm_spec(binary, a.vm_args))
            versions["vm"] = server.version_of(binary, ["-version"])
        else:
            binary = a.argus_bin if os.path.sep in a.argus_bin else shutil.which(a.argus_bin)
            if not binary or not os.access(binary, os.X_OK):
                sys.exit(f"argus binary not found at {a.argus_bin}: `cargo build --release` or pass --argus-bin")
            specs.append(server.argus_spec(os.path.abspath(binary), a.argus_args))
            versions["argus"] = server.version_of(binary, ["--version"])
    os.makedirs(a.work_dir, exist_ok=True)
    (main_dir, meta), read = prepare_workloads(a)
    batches = workload.load_batches(main_dir)
    runs, failed = [], []
    order = 0
    for rep in range(a.repeat):
        for spec in specs:
            order += 1
            if order > 1 and a.cooldown:
                time.sleep(a.cooldown)
            try:
                r = one_run(a, spec, order, batches, meta, read)
            except Exception as e:  # one failed run must not lose the others: report it and go on
                log_path = os.path.join(a.work_dir, "runs", f"{order:02d}-{spec.name}", "server.log")
                tail = ""
                if os.path.isfile(log_path):
                    with open(log_path, errors="replace") as f:
                        tail = "".join(f.readlines()[-5:]).strip()
                log(f"run {order:02d}-{spec.name}: FAILED: {e}" + (f"\nserver log tail:\n{tail}" if tail else ""))
                failed.append({"server": spec.name, "order": order, "repeat": rep, "error": str(e),
                               "server_log_tail": tail})
                continue
            r["repeat"] = rep
            runs.append(r)
    md = summarize(a, runs, specs, meta, read, versions, failed)
    print(md)
    if a.out:
        with open(a.out, "w") as f:
            json.dump({"date": datetime.datetime.now().isoformat(timespec="seconds"), "argv": sys.argv,
                       "args": vars(a), "versions": versions, "workload": meta,
                       "read_workload": read[1] if read else None, "runs": runs, "failed": failed}, f, indent=1)
        md_path = os.path.splitext(a.out)[0] + ".md"
        with open(md_path, "w") as f:
            f.write(md + "\n")
        log(f"wrote {a.out} and {md_path}")
    if failed:
        sys.exit(f"{len(failed)} of {len(failed) + len(runs)} runs failed")


if __name__ == "__main__":
    main()
