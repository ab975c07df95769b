#!/usr/bin/env python3
"""PromQL range-query latency: Argus against VictoriaMetrics and Prometheus on the same 24 h of GPU-cluster data.

Loads one workload (bench/lib/gen_lp.py, 64 nodes x 24 h at 10 s steps, ~48 M samples, 5,568 series,
ending near now) into all three: Argus and VictoriaMetrics by line protocol (`POST /api/v2/write`),
Prometheus by backfilling the same samples as OpenMetrics with `promtool tsdb create-blocks-from openmetrics`.
Checks that all three hold the same samples, then times the dashboard query set (bench/queries/dashboard.txt)
as `/api/v1/query_range` requests over loopback: one keep-alive connection per server, servers in rotating
order, the window moved back by a different whole number of steps on every repetition (VictoriaMetrics also
runs with -search.disableCache), >= 10 timed repetitions per query and server. Records client wall time to the
last byte, time to the response headers, Argus' Server-Timing, and each server's CPU time (/proc), and checks
that the answers agree with Prometheus'. Standard library only. See bench/README.md.

usage: bench/promql_latency.py [--servers argus,vm,prom] [--reps 10] [--out bench/results/promql_latency-DATE.json]
"""
import argparse
import datetime
import http.client
import json
import math
import os
import platform
import random
import shutil
import subprocess
import sys
import time
import urllib.parse

sys.dont_write_bytecode = True  # no __pycache__ in the checkout
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lib import client, report, server, workload  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HOUR = 3600
DAY = 86400
STEP_S = 10  # gen_lp.py's sample interval
LABELS = {"argus": "Argus", "vm": "VictoriaMetrics", "prom": "Prometheus"}

# Series whose sample counts must be equal on all three (count_over_time over the whole workload), and
# metrics whose total sample count is summed over all their series.
SPOT_SERIES = ['gpu_utilization{host="gpu-node-000",gpu="0"}',
               'gpu_xid_errors_total{host="gpu-node-063",gpu="7"}',
               'host_load1{host="gpu-node-031"}',
               'disk_read_bytes_total{host="gpu-node-017",device="nvme1n1"}',
               'net_receive_errs_total{host="gpu-node-042",device="ib0"}']
SPOT_METRICS = ["gpu_power_watts", "host_cpu_utilization", "disk_io_time_seconds_total", "net_transmit_bytes_total"]


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--servers", default="argus,vm,prom", help="comma-separated: argus, vm, prom")
    p.add_argument("--argus-bin", default=os.path.join(REPO, "target", "release", "argus"))
    p.add_argument("--argus-args", default="", help="extra arguments for `argus serve`")
    p.add_argument("--vm-bin", default="victoria-metrics")
    p.add_argument("--vm-args", default="-search.latencyOffset=0s",
                   help="extra flags for victoria-metrics (-search.disableCache is always on)")
    p.add_argument("--prom-bin", default="prometheus")
    p.add_argument("--promtool-bin", default="promtool")
    p.add_argument("--prom-args", default="", help="extra flags for prometheus")
    p.add_argument("--queries", default=os.path.join(REPO, "bench", "queries", "dashboard.txt"))
    p.add_argument("--only", default="", help="comma-separated query names to run (default: all)")
    p.add_argument("--reps", type=int, default=10, help="timed repetitions per query and server (>= 10)")
    p.add_argument("--warmup", type=int, default=1, help="untimed requests per query and server first")
    p.add_argument("--max-shift-steps", type=int, default=20,
                   help="each repetition moves the window back by a different 1..N steps (N >= reps)")
    p.add_argument("--nodes", type=int, default=64)
    p.add_argument("--hours", type=int, default=24)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--batch-lines", type=int, default=5000, help="lines per write request")
    p.add_argument("--writers", type=int, default=2, help="concurrent writer connections while loading")
    p.add_argument("--max-workload-age-h", type=float, default=48.0,
                   help="regenerate the workload when it ends longer ago than this")
    p.add_argument("--work-dir", default="/tmp/argus-bench")
    p.add_argument("--reuse-data", action="store_true",
                   help="start the servers on data directories loaded by an earlier run with the same workload")
    p.add_argument("--keep-data", action="store_true", help="keep the loaded data directories afterwards")
    p.add_argument("--settle-s", type=float, default=3.0)
    p.add_argument("--settle-timeout", type=float, default=600.0)
    p.add_argument("--timeout", type=float, default=300.0, help="per-request timeout, s")
    p.add_argument("--gen-lp", help="path of a gen_lp.py (default: bench/lib/gen_lp.py)")
    p.add_argument("--out", help="write the raw figures as JSON here and the Markdown to FILE.md")
    p.add_argument("--hold", action="store_true",
                   help="after the benchmark keep the servers running until Enter/EOF (for profiling)")
    a = p.parse_args(argv)
    a.servers = [s.strip() for s in a.servers.split(",") if s.strip()]
    for s in a.servers:
        if s not in LABELS:
            p.error(f"unknown server {s!r} (argus, vm, prom)")
    if a.reps < 1 or a.max_shift_steps < a.reps:
        p.error("need 1 <= --reps <= --max-shift-steps")
    return a


# === queries ===

def parse_duration(s):
    units = {"ms": 0.001, "s": 1, "m": 60, "h": HOUR, "d": DAY, "w": 7 * DAY}
    s = s.strip()
    for u in sorted(units, key=len, reverse=True):
        if s.endswith(u) and s[:-len(u)].replace(".", "", 1).isdigit():
            return float(s[:-len(u)]) * units[u]
    return float(s)


def load_queries(path, only):
    out = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            parts = [x.strip() for x in line.split("|", 3)]
            if len(parts) != 4:
                sys.exit(f"{path}:{n}: expected `name | range | step | query`")
            name, rng, step, expr = parts
            out.append({"name": name, "range": rng, "step": step, "range_s": parse_duration(rng),
                        "step_s": parse_duration(step), "query": expr})
    if only:
        want = set(only.split(","))
        out = [q for q in out if q["name"] in want]
        missing = want - {q["name"] for q in out}
        if missing:
            sys.exit(f"unknown query names: {', '.join(sorted(missing))}")
    return out


# === workload ===

def aligned(t, step=STEP_S):
    return int(t) // step * step


def prepare_workload(a):
    """The workload ends a few minutes before it is first generated; it is reused while it ended less than
    --max-workload-age-h ago."""
    gen = workload.find_gen_lp(a.gen_lp)
    root = os.path.join(a.work_dir, "workloads")
    os.makedirs(root, exist_ok=True)
    anchor_path = os.path.join(root, f"promql-anchor-{a.nodes}x{a.hours}h.json")
    minutes = a.hours * 60
    t0 = None
    if os.path.isfile(anchor_path):
        with open(anchor_path) as f:
            t0 = json.load(f).get("t0")
        if not t0 or t0 + minutes * 60 < time.time() - a.max_workload_age_h * HOUR:
            t0 = None
    if t0 is None:
        t0 = aligned(time.time() - minutes * 60 - 120)
        with open(anchor_path, "w") as f:
            json.dump({"t0": t0}, f)
    d, meta = workload.ensure(gen, root, f"promql-{a.nodes}x{a.hours}h-s{a.seed}", a.nodes, minutes, a.seed, t0,
                              a.batch_lines, log)
    meta["end"] = t0 + minutes * 60 - STEP_S  # the last sample's time
    return d, meta


def lp_files(d):
    return [os.path.join(d, fn) for fn in sorted(os.listdir(d)) if fn.endswith(".lp")]


def to_openmetrics(lp_dir, path):
    """The same samples as OpenMetrics text for promtool: `measurement_field{tags} value seconds`, in the
    workload's time order (so every series is in order), integer fields without their `i`, `# EOF` last.
    gen_lp.py writes no escapes, quotes or string fields, which this relies on."""
    tmp = path + ".tmp"
    n = 0
    with open(tmp, "w") as out:
        for fn in lp_files(lp_dir):
            buf = []
            with open(fn) as f:
                for line in f:
                    head, fields, ts = line.split(" ")
                    meas, _, tags = head.partition(",")
                    labels = ",".join(f'{k}="{v}"' for k, v in (t.split("=", 1) for t in tags.split(",")))
                    sec = ts[:-10]  # ns -> s; the workload's times are whole seconds
                    for fv in fields.split(","):
                        k, v = fv.split("=", 1)
                        if v.endswith("i"):
                            v = v[:-1]
                        buf.append(f"{meas}_{k}{{{labels}}} {v} {sec}\n")
            n += len(buf)
            out.write("".join(buf))
        out.write("# EOF\n")
    os.replace(tmp, path)
    return n


# === loading ===

def data_dir_of(a, name):
    return os.path.join(a.work_dir, "promql", f"data-{name}")


def marker_ok(a, name, meta):
    m = os.path.join(data_dir_of(a, name), "loaded.json")
    if not os.path.isfile(m):
        return False
    with open(m) as f:
        got = json.load(f)
    return got.get("t0") == meta["t0"] and got.get("points") == meta["points"]


def write_marker(a, name, meta, extra):
    with open(os.path.join(data_dir_of(a, name), "loaded.json"), "w") as f:
        json.dump(dict(t0=meta["t0"], points=meta["points"], **extra), f)


def load_lp(a, srv, lp_dir):
    """All batch files by line protocol, 100 files (~125 MB) in memory at a time, in time order."""
    files = lp_files(lp_dir)
    t = time.monotonic()
    retries = 0
    for i in range(0, len(files), 100):
        batches = []
        for fn in files[i:i + 100]:
            with open(fn, "rb") as f:
                batches.append(f.read())
        st = client.ingest(srv.port, batches, writers=a.writers)
        retries += st["retries"]
    wall = time.monotonic() - t
    status, _, body = srv.request("POST", "/internal/force_flush")
    if status not in (200, 204):
        raise RuntimeError(f"{srv.spec.name}: force_flush answered {status}: {body[:200]!r}")
    settle = srv.settle(a.settle_s, a.settle_timeout)
    return {"ingest_wall_s": round(wall, 1), "retries": retries, "settle_s": settle}


def load_prom(a, meta, lp_dir, data_dir):
    om = os.path.join(a.work_dir, "workloads", f"promql-{a.nodes}x{a.hours}h-s{a.seed}.om")
    t = time.monotonic()
    log(f"prom: writing OpenMetrics {om} ...")
    n = to_openmetrics(lp_dir, om)
    if n != meta["points"]:
        raise RuntimeError(f"OpenMetrics file has {n} samples, the workload {meta['points']}")
    conv = time.monotonic() - t
    log(f"prom: {n:,} samples in {conv:.0f} s; promtool tsdb create-blocks-from openmetrics ...")
    t = time.monotonic()
    # --max-block-duration (hidden in 2.42) lets promtool write 18 h blocks, as Prometheus' own compaction
    # would, instead of 12 two-hour blocks (each of which costs a pass over the file).
    out = subprocess.run([a.promtool_bin, "tsdb", "create-blocks-from", "openmetrics", "--max-block-duration=24h",
                          om, data_dir], capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"promtool failed: {out.stderr[-2000:]}")
    os.unlink(om)
    log(f"prom: blocks written in {time.monotonic() - t:.0f} s:\n{out.stdout.strip()}")
    return {"convert_s": round(conv, 1), "promtool_s": round(time.monotonic() - t, 1),
            "promtool_output": out.stdout.strip()}


# === checks ===

def instant_value(port, query, t):
    status, body, raw = client.get_json(port, "/api/v1/query", {"query": query, "time": t}, timeout=300)
    if status != 200 or not body or body.get("status") != "success":
        return f"error {status}: {(body or {}).get('error') or raw}"
    res = body["data"]["result"]
    if not res:
        return None
    return float(res[0]["value"][1]) if len(res) == 1 else f"{len(res)} series"


def verify(servers, meta):
    """Same samples everywhere: sample counts of single series and of whole metrics, and the series count."""
    t = meta["end"] + 1
    window = f"{int(t - meta['t0'] + HOUR) // 60}m"  # covers the whole workload with room on both sides
    checks = [(f"count_over_time({s}[{window}])", meta["minutes"] * 6) for s in SPOT_SERIES]
    checks += [(f"sum(count_over_time({m}[{window}]))", None) for m in SPOT_METRICS]
    rows = []
    for q, want in checks:
        got = {name: instant_value(srv.port, q, t) for name, srv in servers.items()}
        vals = list(got.values())
        ok = all(v == vals[0] for v in vals) and (want is None or vals[0] == want)
        rows.append({"query": q, "expected": want, "got": got, "ok": ok})
    got = {}
    for name, srv in servers.items():
        status, body, raw = client.get_json(srv.port, "/api/v1/series",
                                            {"match[]": '{cluster="prod"}', "start": meta["t0"], "end": t},
                                            timeout=300)
        got[name] = len(body["data"]) if status == 200 and body else f"error {status}: {raw}"
    rows.append({"query": '/api/v1/series {cluster="prod"}', "expected": meta["series"], "got": got,
                 "ok": all(v == meta["series"] for v in got.values())})
    for r in rows:
        log(f"verify: {'ok ' if r['ok'] else 'MISMATCH'} {r['query']}: {r['got']} (expected {r['expected']})")
    return rows


def answer_map(body):
    """{labels without __name__: {t: value}} of a query_range answer."""
    res = json.loads(body)["data"]["result"]
    out = {}
    for s in res:
        key = tuple(sorted((k, v) for k, v in s["metric"].items() if k != "__name__"))
        out[key] = {float(t): float(v) for t, v in s["values"]}
    return out


def compare(got, ref):
    """How far one answer is from the reference (Prometheus'): series and points present in both, and the
    relative differences of their values."""
    common = set(got) & set(ref)
    rels = []
    pts_got = sum(len(v) for v in got.values())
    pts_ref = sum(len(v) for v in ref.values())
    for k in common:
        g, r = got[k], ref[k]
        for t in set(g) & set(r):
            x, y = g[t], r[t]
            if math.isnan(x) and math.isnan(y) or x == y:
                rels.append(0.0)
            else:
                rels.append(abs(x - y) / max(abs(x), abs(y)))
    rels.sort()
    n = len(rels)
    # topk/bottomk pick any of the series tied at the cut: compare each step's values as a multiset too.
    def by_t(m):
        out = {}
        for pts in m.values():
            for t, v in pts.items():
                out.setdefault(t, []).append(v)
        return {t: sorted(vs) for t, vs in out.items()}
    bg, br = by_t(got), by_t(ref)
    same_multisets = set(bg) == set(br) and all(
        len(bg[t]) == len(br[t]) and all(x == y or abs(x - y) <= 1e-9 * max(abs(x), abs(y)) or
                                         (math.isnan(x) and math.isnan(y)) for x, y in zip(bg[t], br[t]))
        for t in bg)
    return {"same_values_per_step": same_multisets, "series": len(got), "series_ref": len(ref), "series_common": len(common), "points": pts_got,
            "points_ref": pts_ref, "points_common": n,
            "exact_1e9": sum(r <= 1e-9 for r in rels) / n if n else None,
            "within_1pct": sum(r <= 0.01 for r in rels) / n if n else None,
            "median_rel": rels[n // 2] if n else None, "max_rel": rels[-1] if n else None}


def verdict(c):
    """'equal' (every point within 1e-9), 'equal, ties' (each step's values equal as a multiset but tied
    series picked differently, as topk may), 'close' (same series, >= 99% of the points, median difference
    <= 1%), or 'DISAGREE'."""
    if c["series"] == c["series_ref"] == c["series_common"] and c["points"] == c["points_ref"] == c["points_common"] \
            and (c["exact_1e9"] in (None, 1.0)):
        return "equal"
    if c["series"] == c["series_ref"] and c["points"] == c["points_ref"] and c["same_values_per_step"]:
        return "equal, ties"
    if c["series"] == c["series_ref"] and c["points_common"] >= 0.99 * max(c["points"], c["points_ref"]) \
            and (c["median_rel"] or 0) <= 0.01:
        return "close"
    return "DISAGREE"


# === timing ===

class Conn:
    """One keep-alive connection to a server; reconnects after an error."""

    def __init__(self, srv, timeout):
        self.srv, self.timeout = srv, timeout
        self.c = None

    def get(self, path):
        if self.c is None:
            self.c = http.client.HTTPConnection("127.0.0.1", self.srv.port, timeout=self.timeout)
        cpu0 = self.srv.cpu_seconds()
        t = time.perf_counter()
        try:
            self.c.request("GET", path)
            r = self.c.getresponse()
            t_head = time.perf_counter()
            body = r.read()
        except (http.client.HTTPException, OSError):
            self.c.close()
            self.c = None
            raise
        t_end = time.perf_counter()
        cpu = self.srv.cpu_seconds() - cpu0
        timing = r.getheader("Server-Timing") or ""
        dur = [x.split("=", 1)[1] for x in timing.replace(",", ";").split(";") if x.strip().startswith("dur=")]
        return {"status": r.status, "body": body, "ms": (t_end - t) * 1000.0, "ttfb_ms": (t_head - t) * 1000.0,
                "server_ms": float(dur[0]) if dur else None, "cpu_s": cpu}

    def close(self):
        if self.c:
            self.c.close()


def window(q, meta, shift_steps):
    step = q["step_s"]
    end = math.floor(meta["end"] / step) * step - shift_steps * step
    return end - q["range_s"], end


def path_of(q, start, end):
    return "/api/v1/query_range?" + urllib.parse.urlencode(
        {"query": q["query"], "start": f"{start:.3f}".rstrip("0").rstrip("."),
         "end": f"{end:.3f}".rstrip("0").rstrip("."), "step": q["step"]})


def run_bench(a, servers, queries, meta):
    names = list(servers)
    conns = {n: Conn(servers[n], a.timeout) for n in names}
    rng = random.Random(a.seed)
    results = []
    try:
        # Warm-up at shift 0 on every server; these answers are the ones compared.
        for q in queries:
            start, end = window(q, meta, 0)
            answers = {}
            q_res = {"name": q["name"], "query": q["query"], "range": q["range"], "step": q["step"],
                     "requests": {n: [] for n in names}, "errors": {}, "compare": {}}
            for w in range(a.warmup):
                for n in names:
                    try:
                        r = conns[n].get(path_of(q, start, end))
                    except (http.client.HTTPException, OSError) as e:
                        q_res["errors"][n] = f"warm-up failed: {e!r}"
                        continue
                    if r["status"] != 200:
                        q_res["errors"][n] = f"status {r['status']}: {r['body'][:300]!r}"
                    elif w == 0:
                        try:
                            answers[n] = answer_map(r["body"])
                            q_res.setdefault("answer_series", {})[n] = len(answers[n])
                            q_res.setdefault("answer_points", {})[n] = sum(len(v) for v in answers[n].values())
                            q_res.setdefault("answer_bytes", {})[n] = len(r["body"])
                        except (ValueError, KeyError, TypeError) as e:
                            q_res["errors"][n] = f"unreadable answer: {e!r}"
            if "prom" in answers:
                for n in names:
                    if n != "prom" and n in answers:
                        c = compare(answers[n], answers["prom"])
                        c["verdict"] = verdict(c)
                        q_res["compare"][n] = c
            results.append(q_res)
            log(f"warm-up {q['name']}: " + ", ".join(
                f"{n} {q_res.get('answer_series', {}).get(n, '?')} series" for n in names)
                + "".join(f"; {n} vs prom: {c['verdict']}" for n, c in q_res["compare"].items())
                + "".join(f"; {n} ERROR {e}" for n, e in q_res["errors"].items()))
        # Timed: every repetition moves every query's window back by its own number of steps, the same for
        # all servers; the server order rotates with the query and the repetition.
        shifts = {q["name"]: rng.sample(range(1, a.max_shift_steps + 1), a.reps) for q in queries}
        for rep in range(a.reps):
            t_rep = time.monotonic()
            for qi, (q, q_res) in enumerate(zip(queries, results)):
                start, end = window(q, meta, shifts[q["name"]][rep])
                order = names[(rep + qi) % len(names):] + names[:(rep + qi) % len(names)]
                for n in order:
                    if n in q_res["errors"]:
                        continue
                    try:
                        r = conns[n].get(path_of(q, start, end))
                    except (http.client.HTTPException, OSError) as e:
                        q_res["errors"][n] = f"rep {rep}: {e!r}"
                        continue
                    if r["status"] != 200:
                        q_res["errors"][n] = f"rep {rep}: status {r['status']}: {r['body'][:300]!r}"
                        continue
                    q_res["requests"][n].append({"rep": rep, "shift_steps": shifts[q["name"]][rep],
                                                 "ms": round(r["ms"], 3), "ttfb_ms": round(r["ttfb_ms"], 3),
                                                 "server_ms": r["server_ms"], "cpu_s": r["cpu_s"],
                                                 "bytes": len(r["body"])})
            log(f"rep {rep + 1}/{a.reps} done in {time.monotonic() - t_rep:.0f} s, load {os.getloadavg()[0]:.2f}")
    finally:
        for c in conns.values():
            c.close()
    for q_res in results:
        for n in names:
            reqs = q_res["requests"][n]
            lat = [r["ms"] for r in reqs]
            st = [r["server_ms"] for r in reqs if r["server_ms"] is not None]
            q_res.setdefault("stats", {})[n] = {
                "n": len(lat), "median_ms": report.median(lat), "p99_ms": report.percentile(lat, 99),
                "min_ms": min(lat) if lat else None,
                "ttfb_median_ms": report.median([r["ttfb_ms"] for r in reqs]),
                "server_median_ms": report.median(st) if st else None,
                "server_p99_ms": report.percentile(st, 99) if st else None,
                "cpu_ms_per_request": sum(r["cpu_s"] for r in reqs) * 1000 / len(reqs) if reqs else None}
    return results


# === report ===

def geomean(xs):
    xs = [x for x in xs if x]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def summarize(a, results, names, meta, versions, verify_rows, load_info, started, loads):
    f = report.fmt
    has = {n: n in names for n in LABELS}
    lines = [f"Workload: `bench/lib/gen_lp.py`, {meta['nodes']} nodes x {meta['minutes'] // 60} h at 10 s steps, "
             f"{meta['points']:,} samples, {meta['series']:,} series, ending "
             f"{datetime.datetime.fromtimestamp(meta['end'], datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}. "
             f"{len(results)} queries (`{os.path.relpath(a.queries, REPO)}`), {a.warmup} untimed + {a.reps} timed "
             f"`/api/v1/query_range` requests per query and server, one keep-alive connection per server, "
             f"server order rotating, each repetition's window moved back by a different 1..{a.max_shift_steps} "
             f"steps. Client wall time to the last byte over loopback (JSON included); ms."]
    lines.append(f"Machine: {platform.node()}, {os.cpu_count()} CPUs, "
                 f"{os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30:.0f} GiB, load average "
                 f"{loads[0][0]:.2f} before, {loads[1][0]:.2f} after; started {started}. Versions: "
                 + "; ".join(f"{LABELS[n]}: {versions[n]}" for n in names) + ".")
    header = ["query", "range / step", "series"]
    for n in names:
        header += [f"{LABELS[n]} p50", "p99"]
    if has["argus"]:
        header += ["Argus server p50"]
    if has["argus"] and has["vm"]:
        header += ["Argus/VM p50", "Argus/VM p99"]
    if has["argus"] and has["prom"]:
        header += ["Argus/Prom p50"]
    rows = []
    ratios = {"vm50": [], "vm99": [], "prom50": [], "prom99": []}
    for q in results:
        st = q["stats"]
        series = q.get("answer_series", {})
        row = [f"`{q['name']}`", f"{q['range']} / {q['step']}",
               str(series.get("prom", series.get("argus", next(iter(series.values()), "?"))))]
        for n in names:
            row += [f(st[n]["median_ms"]), f(st[n]["p99_ms"])]
        if has["argus"]:
            row.append(f(st["argus"]["server_median_ms"]))
        for other, cols in (("vm", ("50", "99")), ("prom", ("50",))):
            if has["argus"] and has[other]:
                r50 = report.ratio(st["argus"]["median_ms"], st[other]["median_ms"])
                r99 = report.ratio(st["argus"]["p99_ms"], st[other]["p99_ms"])
                ratios[other + "50"].append(r50)
                ratios[other + "99"].append(r99)
                row.append(f(r50))
                if "99" in cols:
                    row.append(f(r99))
        rows.append(row)
    # Overall: all timed requests of the query set pooled, and the per-query ratios' geometric mean.
    pooled = {n: [r["ms"] for q in results for r in q["requests"][n]] for n in names}
    row = ["**all queries, pooled**", "", ""]
    for n in names:
        row += [f"**{f(report.median(pooled[n]))}**", f"**{f(report.percentile(pooled[n], 99))}**"]
    if has["argus"]:
        row.append(f(report.median([r["server_ms"] for q in results for r in q["requests"]["argus"]
                                    if r["server_ms"] is not None])))
    if has["argus"] and has["vm"]:
        row += [f"**{f(geomean(ratios['vm50']))}** (geomean)", f"**{f(geomean(ratios['vm99']))}** (geomean)"]
    if has["argus"] and has["prom"]:
        row.append(f"**{f(geomean(ratios['prom50']))}** (geomean)")
    rows.append(row)
    row = ["sum of per-query medians (one dashboard load)", "", ""]
    sums = {n: sum(q["stats"][n]["median_ms"] or 0 for q in results) for n in names}
    for n in names:
        row += [f(sums[n]), ""]
    if has["argus"]:
        row.append(f(sum(q["stats"]["argus"]["server_median_ms"] or 0 for q in results)))
    if has["argus"] and has["vm"]:
        row += [f(report.ratio(sums["argus"], sums["vm"])), ""]
    if has["argus"] and has["prom"]:
        row.append(f(report.ratio(sums["argus"], sums["prom"])))
    rows.append(row)
    lines += ["", report.table(header, rows), ""]

    wins = {}
    if has["argus"] and has["vm"]:
        w50 = sum(1 for q in results if (q["stats"]["argus"]["median_ms"] or 1e9) <= (q["stats"]["vm"]["median_ms"] or 0))
        w99 = sum(1 for q in results if (q["stats"]["argus"]["p99_ms"] or 1e9) <= (q["stats"]["vm"]["p99_ms"] or 0))
        wins = {"p50": w50, "p99": w99}
        lines.append(f"Argus ≤ VictoriaMetrics on {w50} of {len(results)} queries by median, {w99} of "
                     f"{len(results)} by p99.")
        lines.append("")

    # CPU per request: the shared machine's noise hits wall time much more than CPU time.
    cpu_rows = []
    for q in results:
        cpu_rows.append([f"`{q['name']}`"] + [f(q["stats"][n]["cpu_ms_per_request"]) for n in names])
    cpu_rows.append(["**sum**"] + [f(sum(q["stats"][n]["cpu_ms_per_request"] or 0 for q in results)) for n in names])
    lines += ["Server CPU time per request (utime+stime of the server process across the request, /proc, 10 ms "
              "ticks averaged over the repetitions), ms:", "",
              report.table(["query"] + [LABELS[n] for n in names], cpu_rows), ""]

    # Agreement with Prometheus.
    agree = []
    for q in results:
        for n, c in q["compare"].items():
            agree.append([f"`{q['name']}`", LABELS[n], c["verdict"], f"{c['series']} / {c['series_ref']}",
                          f"{c['points']:,} / {c['points_ref']:,}",
                          f(c["within_1pct"] * 100 if c["within_1pct"] is not None else None),
                          f"{c['median_rel']:.2g}" if c["median_rel"] is not None else "n/a",
                          f"{c['max_rel']:.2g}" if c["max_rel"] is not None else "n/a"])
    if agree:
        lines += ["Answers against Prometheus' (warm-up request, same window on all): equal = every point within "
                  "1e-9; equal, ties = each step's values equal, tied series picked differently (topk); close = same series, ≥ 99 % of the points, median difference ≤ 1 %.", "",
                  report.table(["query", "server", "verdict", "series / Prom", "points / Prom", "% within 1 %",
                                "median rel. diff", "max rel. diff"], agree), ""]
    bad = [f"- `{r['query']}`: {r['got']} (expected {r['expected']})" for r in verify_rows if not r["ok"]]
    lines.append("Loaded samples: " + ("identical on all servers (" + ", ".join(
        f"`{r['query']}` = {next(iter(r['got'].values()))}" for r in verify_rows[:1] + verify_rows[-1:]) + ", "
        f"{len(verify_rows)} checks)." if not bad else "MISMATCHES:"))
    lines += bad
    errs = [f"- `{q['name']}` {LABELS[n]}: {e}" for q in results for n, e in q["errors"].items()]
    if errs:
        lines += ["", "Errors:", ""] + errs
    return "\n".join(lines), wins


def main(argv=None):
    a = parse_args(argv)
    started = datetime.datetime.now().isoformat(timespec="seconds")
    queries = load_queries(a.queries, a.only)
    specs, versions = {}, {}
    prom_conf = os.path.join(a.work_dir, "promql", "prometheus.yml")
    os.makedirs(os.path.dirname(prom_conf), exist_ok=True)
    for s in a.servers:
        if s == "argus":
            binary = a.argus_bin if os.path.sep in a.argus_bin else shutil.which(a.argus_bin)
            if not binary or not os.access(binary, os.X_OK):
                sys.exit(f"argus binary not found at {a.argus_bin}: `cargo build --release` or pass --argus-bin")
            specs[s] = server.argus_spec(os.path.abspath(binary), a.argus_args)
            versions[s] = server.version_of(binary, ["--version"])
            try:
                rev = subprocess.run(["git", "-C", REPO, "log", "-1", "--format=%h %s"], capture_output=True,
                                     text=True).stdout.strip()
                versions[s] += f" (release build at `{rev[:60]}`)"
            except OSError:
                pass
        elif s == "vm":
            binary = shutil.which(a.vm_bin)
            if not binary:
                sys.exit(f"{a.vm_bin} not found: run scripts/install-peers.sh (Debian package victoria-metrics)")
            specs[s] = server.vm_spec(binary, a.vm_args)
            versions[s] = server.version_of(binary, ["-version"])
        else:
            binary = shutil.which(a.prom_bin)
            if not binary or not shutil.which(a.promtool_bin):
                sys.exit("prometheus/promtool not found: run scripts/install-peers.sh (Debian package prometheus)")
            with open(prom_conf, "w") as f:
                f.write("global:\n  scrape_interval: 10s\nscrape_configs: []\n")
            specs[s] = server.prom_spec(binary, prom_conf, a.prom_args)
            versions[s] = server.version_of(binary, ["--version"])
    lp_dir, meta = prepare_workload(a)
    log(f"workload: {meta['points']:,} samples, {meta['series']:,} series, {meta['t0']} .. {meta['end']}")

    load_info, servers = {}, {}
    try:
        # Prometheus first: promtool runs before any server, so it does not compete with them.
        for name in sorted(a.servers, key=lambda n: n != "prom"):
            spec = specs[name]
            d = data_dir_of(a, name)
            reuse = a.reuse_data and marker_ok(a, name, meta)
            if not reuse:
                shutil.rmtree(d, ignore_errors=True)
                os.makedirs(d)
                if name == "prom":
                    load_info[name] = load_prom(a, meta, lp_dir, d)
            srv = server.Server(spec, d, os.path.join(os.path.dirname(d), f"{name}.log"))
            log(f"{name}: starting {' '.join(srv.argv)}")
            srv.start(timeout=300)
            servers[name] = srv
            if reuse:
                log(f"{name}: reusing loaded data in {d}")
                load_info[name] = {"reused": True}
                srv.settle(a.settle_s, a.settle_timeout)
            elif name != "prom":
                log(f"{name}: loading {meta['points']:,} samples by line protocol ...")
                load_info[name] = load_lp(a, srv, lp_dir)
                log(f"{name}: loaded: {load_info[name]}")
            else:
                load_info[name]["settle_s"] = srv.settle(a.settle_s, a.settle_timeout)
            load_info[name]["data_dir_bytes"] = server.dir_size(d)[0]
            if not reuse:
                write_marker(a, name, meta, load_info[name])
        servers = {n: servers[n] for n in a.servers}  # timing order as given
        for name, srv in servers.items():
            load_info[name]["rss_before_queries_kib"] = srv.status_kib("VmRSS")
        verify_rows = verify(servers, meta)
        loads = [os.getloadavg()]
        log(f"benchmark: {len(queries)} queries x {a.reps} reps x {len(servers)} servers, load {loads[0][0]:.2f}")
        results = run_bench(a, servers, queries, meta)
        loads.append(os.getloadavg())
        for name, srv in servers.items():
            load_info[name]["peak_rss_kib"] = srv.status_kib("VmHWM")
        if a.hold:
            log("holding servers: " + ", ".join(f"{n} pid {s.proc.pid} port {s.port}" for n, s in servers.items())
                + "; press Enter to stop")
            sys.stdin.readline()
    finally:
        for srv in servers.values():
            srv.stop()
        if not a.keep_data and not a.reuse_data:
            for name in a.servers:
                shutil.rmtree(data_dir_of(a, name), ignore_errors=True)
    md, wins = summarize(a, results, list(servers), meta, versions, verify_rows, load_info, started, loads)
    print(md)
    for q in results:
        for n, c in q["compare"].items():
            if c["verdict"] == "DISAGREE":
                log(f"DISAGREE {q['name']} {n} vs prom: {c}")
    if a.out:
        os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
        with open(a.out, "w") as f:
            json.dump({"date": started, "argv": sys.argv, "args": vars(a), "versions": versions,
                       "machine": {"node": platform.node(), "cpus": os.cpu_count(), "loadavg": loads,
                                   "uname": platform.uname()._asdict()},
                       "workload": meta, "load": load_info, "verify": verify_rows, "wins": wins,
                       "queries": results}, f, indent=1)
        md_path = os.path.splitext(a.out)[0] + ".md"
        with open(md_path, "w") as f:
            f.write(md + "\n")
        log(f"wrote {a.out} and {md_path}")


if __name__ == "__main__":
    main()
