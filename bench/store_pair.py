#!/usr/bin/env python3
"""Store pair under a 10-minute outage of one store (fleet-mode issue, docs/scaling.md "A store pair").

Two embedded stores (`argus serve --role store --no-collector`, each with its own data directory and port
on 127.0.0.1) are fed by K collectors (`argus collect`), each with two `[[collector.sink]]` entries, one per
store, so each sink has its own spool (`<collector data_dir>/spool/store-a|store-b`). Every collector has its
own data directory, `host` label (`sp-node-N`, set through `[collector.labels]`) and `/metrics` listener,
and collects host, disk, net and GPU series (the `fake` GPU backend over collector/tests/fixtures/gpu/h100.json
widened to --gpus boards, Xid events left out) every --interval. The events source is off (it reads
/dev/kmsg); events are not series and are not compared.

Timeline: both stores up for --warm minutes, store B stopped (SIGKILL by default, --stop-signal term for a
clean stop), kept down --outage-minutes, restarted on the same data directory and port, then --after-minutes
for the spools to drain. The collectors are then stopped with SIGTERM (they flush), and the script waits
until both stores' `argus_store_samples_ingested_total` has not moved for --quiet-s seconds.

Check: every series either store holds with the bench's `cluster` label (its name from /api/v1/series),
less names the stores derive themselves (ALERTS*, the analyzer's argus_anomaly_score / argus_yhat*,
argus_host_last_seen_timestamp_seconds; with `--role store` no rules or analyzer run, so there are none)
is compared by `count_over_time(<series>[RANGE])` on both stores, one instant query per metric name at the
same evaluation time, with RANGE covering the whole run (from a minute before the first collector started
to the evaluation time). Series are matched by their full label set. The stores' own self metrics are
only on their /metrics, never written into a store; the collectors' `argus_collector_source_*` series are
collector-fed (shipped with every collection to both sinks) and are compared. Any name found in a store
without the bench's `cluster` label is reported as `other_names`.

    nice -n 19 python3 bench/store_pair.py --argus-bin target/release/argus \\
        [--collectors 4] [--warm 2] [--outage-minutes 10] [--after-minutes 3] [--stop-signal kill|term] \\
        [--interval 10s] [--gpus 8] [--work-dir /tmp/argus-store-pair] [--out bench/results/store_pair-DATE.json]

Reading the results: `samples missing on A` / `on B` are sums over series of the positive differences of
the two stores' counts (B − A and A − B); with the pair working both are 0, as are `series missing on A/B`
(series one store has and the other lacks) and the largest per-series difference. `samples in outage
window` counts each store's samples stamped while B was down: B's must equal A's (the spools resent them
after the restart). For every series that differs, the raw samples of both stores are fetched and the
missing timestamps are listed with the phase they fall in (warm, outage, after, stop), to tell a real loss
from an edge of the run. The spool table is each collector's /metrics per sink (points sent, spooled and
dropped just before the collectors were stopped; `argus_collector_spool_bytes` at the end of the outage,
which shows how much B's sink held, and before the stop) and what the spool directories hold after the
collectors exited: `argus_collector_spool_bytes` counts segment files and the last segment is kept after
it is delivered, so the drained state is `undelivered bytes` 0 (read from the spool's `ack` file), not
spool bytes 0. Exit status 1 when anything is missing, any points were dropped or any spool bytes are left
undelivered. Standard library only.
"""
import argparse
import datetime
import json
import math
import os
import platform
import shutil
import signal
import struct
import subprocess
import sys
import time
import zlib

sys.dont_write_bytecode = True  # no __pycache__ in the checkout
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lib import gpu_fixture, report, server  # noqa: E402
from lib.client import get_json  # noqa: E402
from lib.procs import log, scrape  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLUSTER = "store-pair-bench"
SINKS = ("store-a", "store-b")
# Series a store derives itself (rules and analyzer outputs, docs/metrics.md): excluded from the comparison.
DERIVED = {"argus_anomaly_score", "argus_yhat", "argus_yhat_lower", "argus_yhat_upper",
           "argus_host_last_seen_timestamp_seconds"}


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--argus-bin", default=os.path.join(REPO, "target", "release", "argus"))
    p.add_argument("--work-dir", default="/tmp/argus-store-pair",
                   help="data directories, configs and logs (its store-*/collector-* contents are replaced)")
    p.add_argument("--collectors", type=int, default=4, help="collector processes (K)")
    p.add_argument("--gpus", type=int, default=8, help="fake GPUs per collector (0: GPU source off)")
    p.add_argument("--interval", default="10s", help="collection interval of every source")
    p.add_argument("--warm", type=float, default=2.0, help="minutes with both stores up before the outage")
    p.add_argument("--outage-minutes", type=float, default=10.0, help="minutes store B is down")
    p.add_argument("--after-minutes", type=float, default=3.0, help="minutes after B's restart before the "
                   "collectors are stopped")
    p.add_argument("--stop-signal", choices=("kill", "term"), default="kill", help="how store B is stopped")
    p.add_argument("--max-backoff", default="30s", help="the sinks' max_backoff (the collector's default)")
    p.add_argument("--quiet-s", type=float, default=10.0,
                   help="both stores' ingest counters unchanged this long after the collectors exit = quiet")
    p.add_argument("--examples", type=int, default=10, help="differing series to fetch raw samples for")
    p.add_argument("--out", default=os.path.join(REPO, "bench", "results",
                                                 f"store_pair-{datetime.date.today().isoformat()}.json"))
    a = p.parse_args(argv)
    if a.collectors < 1:
        p.error("--collectors must be >= 1")
    return a


# === setup ===

def collector_config(a, i, work, ports, fixture, listen_port):
    data = os.path.join(work, f"collector-{i}")
    gpu = (f'[collector.gpu]\nbackend = "fake"\nfake_fixture = "{fixture}"\nkernel_log = ""\n' if a.gpus > 0
           else "[collector.gpu]\nenabled = false\n")
    sinks = "".join(f'[[collector.sink]]\nname = "{name}"\nurl = "http://127.0.0.1:{port}/api/v1/write"\n'
                    f'max_backoff = "{a.max_backoff}"\n' for name, port in zip(SINKS, ports))
    text = (f'[collector]\ninterval = "{a.interval}"\ndata_dir = "{data}"\nlisten = "127.0.0.1:{listen_port}"\n'
            f'[collector.labels]\nhost = "sp-node-{i}"\ncluster = "{CLUSTER}"\n{gpu}'
            f"[collector.events]\nenabled = false\n{sinks}")
    path = os.path.join(work, f"collector-{i}.toml")
    with open(path, "w") as f:
        f.write(text)
    return path, data


class Store:
    """One `argus serve --role store`, restartable on the same port and data directory."""

    def __init__(self, a, name, work):
        self.name = name
        self.spec = server.argus_spec(os.path.abspath(a.argus_bin), "--role store")
        self.data = os.path.join(work, name)
        self.work = work
        self.starts = 0
        self.srv = None
        self.port = server.free_port()

    def start(self):
        self.starts += 1
        srv = server.Server(self.spec, self.data, os.path.join(self.work, f"{self.name}.{self.starts}.log"))
        srv.port = self.port
        srv.argv = self.spec.argv(self.port, self.data)
        srv.start(timeout=120)
        self.srv = srv

    def kill(self, sig):
        p = self.srv.proc
        p.send_signal(sig)
        try:
            p.wait(120)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
        self.srv._log.close()
        return p.returncode

    def stop(self):
        if self.srv:
            self.srv.stop(timeout=120)

    def ingested(self):
        m = self.srv.metrics() if self.srv else None
        return None if m is None else m.get("argus_store_samples_ingested_total")

    def query(self, q, t):
        status, body, raw = get_json(self.port, "/api/v1/query", {"query": q, "time": f"{t:.3f}"}, timeout=300)
        if status != 200 or not body or body.get("status") != "success":
            raise RuntimeError(f"{self.name}: query {q!r} answered {status}: {body or raw}")
        return body["data"]["result"]

    def series(self, match, start, end):
        status, body, raw = get_json(self.port, "/api/v1/series",
                                     {"match[]": match, "start": f"{start:.3f}", "end": f"{end:.3f}"}, timeout=300)
        if status != 200 or not body or body.get("status") != "success":
            raise RuntimeError(f"{self.name}: series {match!r} answered {status}: {body or raw}")
        return body["data"]

    def names(self):
        status, body, raw = get_json(self.port, "/api/v1/label/__name__/values", {}, timeout=60)
        if status != 200 or not body:
            raise RuntimeError(f"{self.name}: label values answered {status}: {body or raw}")
        return body["data"]


def sink_figures(m):
    """Per sink: sent, spooled, dropped (all reasons), spool bytes, from one collector /metrics scrape."""
    zero = 0.0 if m is not None else None  # a counter not yet incremented is absent from /metrics
    out = {s: {"sent": zero, "spooled": zero, "dropped": zero, "spool_bytes": zero} for s in SINKS}
    for key, v in (m or {}).items():
        name = key.split("{")[0]
        for s in SINKS:
            if f'sink="{s}"' not in key:
                continue
            if name == "argus_collector_points_sent_total":
                out[s]["sent"] = v
            elif name == "argus_collector_points_spooled_total":
                out[s]["spooled"] = v
            elif name == "argus_collector_points_dropped_total":
                out[s]["dropped"] = (out[s]["dropped"] or 0.0) + v
            elif name == "argus_collector_spool_bytes":
                out[s]["spool_bytes"] = v
    return out


# === comparison ===

def key_of(metric):
    return tuple(sorted(metric.items()))


def counts(store, name, range_s, t):
    q = f'count_over_time({{__name__="{name}",cluster="{CLUSTER}"}}[{range_s}s])'
    return {key_of(dict(r["metric"], __name__=name)): int(float(r["value"][1])) for r in store.query(q, t)}


def raw_times(store, labels, range_s, t):
    sel = ",".join(f"{k}={json.dumps(v)}" for k, v in labels)  # includes __name__; JSON escapes as PromQL
    res = store.query(f"{{{sel}}}[{range_s}s]", t)
    return sorted(round(float(ts) * 1000) for s in res for ts, _ in s["values"])


def phase(ts_ms, marks):
    t = ts_ms / 1000
    if t < marks["b_down"]:
        return "warm"
    if t < marks["b_up"]:
        return "outage"
    if t < marks["collectors_stop"]:
        return "after"
    return "stop"


def compare(a, stores, marks):
    A, B = stores
    t_eval = math.ceil(time.time()) + 1
    range_s = int(t_eval - marks["first_start"]) + 60
    outage_range = int(math.ceil(marks["b_up"] - marks["b_down"]))
    outage_eval = marks["b_down"] + outage_range
    names_by_store = {}
    for s in stores:
        names_by_store[s.name] = {x["__name__"] for x in s.series(f'{{cluster="{CLUSTER}"}}',
                                                                   marks["first_start"] - 60, t_eval)}
    all_names = set().union(*names_by_store.values())
    excluded = sorted(n for n in all_names if n in DERIVED or n.startswith("ALERTS"))
    names = sorted(all_names - set(excluded))
    other = sorted(set(A.names()) | set(B.names()))
    other = [n for n in other if n not in all_names]
    log(f"comparing {len(names)} metric names at t={t_eval} over [{range_s}s]")
    per = {}
    outage_totals = {A.name: 0, B.name: 0}
    for n in names:
        ca, cb = counts(A, n, range_s, t_eval), counts(B, n, range_s, t_eval)
        for k in set(ca) | set(cb):
            per[k] = (ca.get(k), cb.get(k))
        for s in stores:
            outage_totals[s.name] += sum(counts(s, n, outage_range, outage_eval).values())
    missing_series_a = [k for k, (x, y) in per.items() if x is None]
    missing_series_b = [k for k, (x, y) in per.items() if y is None]
    diff = {k: (x or 0) - (y or 0) for k, (x, y) in per.items()}
    miss_a = sum(-d for d in diff.values() if d < 0)
    miss_b = sum(d for d in diff.values() if d > 0)
    largest = max(diff.items(), key=lambda kv: abs(kv[1]), default=(None, 0))
    differing = sorted((k for k, d in diff.items() if d), key=lambda k: -abs(diff[k]))
    examples = []
    for k in differing[:a.examples]:
        ta, tb = set(raw_times(A, k, range_s, t_eval)), set(raw_times(B, k, range_s, t_eval))
        only_a, only_b = sorted(ta - tb), sorted(tb - ta)
        examples.append({
            "series": dict(k), "count_a": per[k][0], "count_b": per[k][1],
            "raw_a": len(ta), "raw_b": len(tb),
            "missing_on_b": [[t, phase(t, marks)] for t in only_a[:20]],
            "missing_on_a": [[t, phase(t, marks)] for t in only_b[:20]],
        })
    fmt_key = lambda k: "{" + ",".join(f'{x}="{y}"' for x, y in k) + "}" if k else None
    return {
        "eval_time": t_eval, "range_s": range_s, "names": len(names), "series": len(per),
        "excluded_names": excluded, "other_names": other,
        "names_only_on": {s.name: sorted(all_names - names_by_store[s.name]) for s in stores},
        "samples": {A.name: sum(x or 0 for x, _ in per.values()), B.name: sum(y or 0 for _, y in per.values())},
        "outage_window": {"eval_time": outage_eval, "range_s": outage_range, "samples": outage_totals},
        "series_missing_on_a": len(missing_series_a), "series_missing_on_b": len(missing_series_b),
        "samples_missing_on_a": miss_a, "samples_missing_on_b": miss_b,
        "series_differing": len(differing),
        "largest_difference": {"series": fmt_key(largest[0]), "a_minus_b": largest[1]},
        "examples": examples,
        "missing_series_examples": {"on_a": [fmt_key(k) for k in missing_series_a[:10]],
                                    "on_b": [fmt_key(k) for k in missing_series_b[:10]]},
    }


# === run ===

def wait_quiet(stores, quiet_s, timeout=600):
    """Until every store's ingest counter has held still for quiet_s; returns seconds waited."""
    started = time.monotonic()
    last, since = None, time.monotonic()
    while time.monotonic() - started < timeout:
        now_vals = tuple(s.ingested() for s in stores)
        if now_vals != last:
            last, since = now_vals, time.monotonic()
        elif time.monotonic() - since >= quiet_s:
            return round(time.monotonic() - started, 1)
        time.sleep(1)
    log(f"stores not quiet after {timeout}s")
    return None


def run(a, work):
    fixture = os.path.join(work, "gpu.json")
    if a.gpus > 0:
        gpu_fixture.widened(fixture, a.gpus)
    stores = [Store(a, "store-a", work), Store(a, "store-b", work)]
    collectors = []
    marks, snaps = {}, {}
    try:
        for s in stores:
            s.start()
        log(f"stores up: {stores[0].name} :{stores[0].port}, {stores[1].name} :{stores[1].port}")
        marks["first_start"] = time.time()
        for i in range(a.collectors):
            lp = server.free_port()
            cfg, data = collector_config(a, i, work, [s.port for s in stores], fixture, lp)
            err = open(os.path.join(work, f"collector-{i}.log"), "wb")
            p = subprocess.Popen([a.argus_bin, "collect", "--config", cfg], stdout=subprocess.DEVNULL, stderr=err,
                                 stdin=subprocess.DEVNULL)
            collectors.append({"i": i, "proc": p, "port": lp, "data": data, "log": err})
        deadline = time.monotonic() + 60
        for c in collectors:
            while scrape(c["port"]) is None:
                if c["proc"].poll() is not None:
                    raise RuntimeError(f"collector {c['i']} exited with {c['proc'].returncode}; "
                                       f"see {work}/collector-{c['i']}.log")
                if time.monotonic() > deadline:
                    raise RuntimeError(f"collector {c['i']} /metrics not up; see {work}/collector-{c['i']}.log")
                time.sleep(0.2)
        log(f"{a.collectors} collectors up (interval {a.interval}, {a.gpus} fake GPUs each); warm {a.warm} min")
        time.sleep(a.warm * 60)

        snaps["before_outage"] = {c["i"]: sink_figures(scrape(c["port"])) for c in collectors}
        sig = signal.SIGKILL if a.stop_signal == "kill" else signal.SIGTERM
        marks["b_down"] = time.time()
        rc = stores[1].kill(sig)
        marks["b_down_done"] = time.time()
        log(f"store-b stopped with SIG{a.stop_signal.upper()} (exit {rc}); down {a.outage_minutes} min")
        time.sleep(max(0.0, a.outage_minutes * 60 - (time.time() - marks["b_down"])))
        snaps["end_of_outage"] = {c["i"]: sink_figures(scrape(c["port"])) for c in collectors}
        stores[1].start()
        marks["b_up"] = time.time()
        log(f"store-b restarted; {a.after_minutes} min for the spools to drain")
        time.sleep(a.after_minutes * 60)

        snaps["before_stop"] = {c["i"]: sink_figures(scrape(c["port"])) for c in collectors}
        marks["collectors_stop"] = time.time()
        for c in collectors:
            c["proc"].send_signal(signal.SIGTERM)
        for c in collectors:
            try:
                c["rc"] = c["proc"].wait(180)
            except subprocess.TimeoutExpired:
                log(f"collector {c['i']} did not exit 180 s after SIGTERM; killing it")
                c["proc"].kill()
                c["rc"] = c["proc"].wait()
            c["log"].close()
        marks["collectors_exited"] = time.time()
        quiet = wait_quiet(stores, a.quiet_s)
        marks["quiet"] = time.time()
        log(f"collectors exited ({[c['rc'] for c in collectors]}); stores quiet after {quiet} s; comparing")
        result = compare(a, stores, marks)
        result["quiet_wait_s"] = quiet
        result["collector_exit"] = {c["i"]: c["rc"] for c in collectors}
        result["spool_files_left"] = {c["i"]: {s: spool_left(c["data"], s) for s in SINKS} for c in collectors}
        result["collector_log_warnings"] = {f"collector-{c['i']}": log_lines(os.path.join(work, f"collector-{c['i']}.log"))
                                            for c in collectors}
        result["store_log_warnings"] = {f"{s.name}.{n}": log_lines(os.path.join(work, f"{s.name}.{n}.log"))
                                        for s in stores for n in range(1, s.starts + 1)}
        result["ingested_counter"] = {s.name: s.ingested() for s in stores}
        return result, marks, snaps
    finally:
        for c in collectors:
            if c["proc"].poll() is None:
                c["proc"].kill()
                c["proc"].wait()
        for s in stores:
            s.stop()


def spool_left(data, sink):
    """What a sink's spool directory holds after the collector exited: segment files, their bytes, and the
    bytes not yet delivered according to the `ack` file (docs/format/spool.md: segment u64, offset u64, crc32;
    records before that position are delivered). The last segment is kept after it is fully delivered, so
    bytes > 0 with undelivered 0 is a drained spool."""
    d = os.path.join(data, "spool", sink)
    segs = sorted(f for f in os.listdir(d) if f.endswith(".seg")) if os.path.isdir(d) else []
    sizes = {int(f[:-4]): os.path.getsize(os.path.join(d, f)) for f in segs}
    ack_seg, ack_off = (min(sizes) if sizes else 0), 8  # no ack: from the start of the lowest segment
    try:
        with open(os.path.join(d, "ack"), "rb") as f:
            raw = f.read()
        if len(raw) == 20 and zlib.crc32(raw[:16]) == struct.unpack("<I", raw[16:])[0]:
            ack_seg, ack_off = struct.unpack("<QQ", raw[:16])
    except OSError:
        pass
    undelivered = sum(size - (ack_off if seq == ack_seg else 8) for seq, size in sizes.items() if seq >= ack_seg)
    return {"segments": len(segs), "bytes": sum(sizes.values()), "undelivered_bytes": max(0, undelivered)}


def log_lines(path, limit=8):
    """WARN and ERROR lines of a log (the first `limit`, and how many in all)."""
    if not os.path.isfile(path):
        return {"count": 0, "first": []}
    with open(path, errors="replace") as f:
        hits = [l.rstrip() for l in f if " WARN " in l or " ERROR " in l]
    return {"count": len(hits), "first": [h[:300] for h in hits[:limit]]}


def summarize(a, r, marks, snaps, version):
    rows = [
        ["series compared (full label sets)", report.fmt(r["series"])],
        ["metric names compared", report.fmt(r["names"])],
        ["samples on A / on B", f"{r['samples']['store-a']:,} / {r['samples']['store-b']:,}"],
        ["samples in outage window, A / B",
         f"{r['outage_window']['samples']['store-a']:,} / {r['outage_window']['samples']['store-b']:,}"],
        ["series missing on A", str(r["series_missing_on_a"])],
        ["series missing on B", str(r["series_missing_on_b"])],
        ["samples missing on A", str(r["samples_missing_on_a"])],
        ["samples missing on B", str(r["samples_missing_on_b"])],
        ["series with a different count", str(r["series_differing"])],
        ["largest per-series difference (A − B)",
         f"{r['largest_difference']['a_minus_b']}" + (f" `{r['largest_difference']['series']}`"
                                                      if r["largest_difference"]["a_minus_b"] else "")],
    ]
    lines = [f"## Store pair, store B down {a.outage_minutes:g} min ({datetime.date.today().isoformat()})", ""]
    lines.append(f"{a.collectors} collectors (`argus collect`, interval {a.interval}, {a.gpus} fake GPUs each, host, "
                 f"disk, net; sinks store-a and store-b, max_backoff {a.max_backoff}) into two "
                 f"`argus serve --role store`; warm {a.warm:g} min, B stopped with SIG{a.stop_signal.upper()} for "
                 f"{a.outage_minutes:g} min, {a.after_minutes:g} min after its restart, collectors stopped with "
                 f"SIGTERM, stores quiet after {r['quiet_wait_s']} s. `count_over_time(...[{r['range_s']}s])` at "
                 f"t={r['eval_time']} on both, per metric name, matched by label set.")
    lines.append(f"Machine: {platform.node()}, {os.cpu_count()} CPUs; argus: {version}.")
    lines += ["", report.table(["", "value"], rows), ""]
    srows = []
    for i in sorted(snaps["before_stop"]):
        for s in SINKS:
            end = snaps["before_stop"][i][s]
            peak = snaps["end_of_outage"][i][s]
            left = r["spool_files_left"][i][s]
            srows.append([f"sp-node-{i}", s, report.fmt(end["sent"]), report.fmt(end["spooled"]),
                          report.fmt(end["dropped"]), report.fmt(peak["spool_bytes"]),
                          report.fmt(end["spool_bytes"]), f"{left['segments']} / {left['bytes']:,}",
                          f"{left['undelivered_bytes']:,}"])
    lines += ["Collector sinks: points sent, spooled and dropped from each collector's /metrics just before it was "
              "stopped; `argus_collector_spool_bytes` at the end of the outage and just before the stop (it counts "
              "the segment files, and the last segment stays after it is delivered); segment files / bytes left "
              "on disk after the collectors exited, and the bytes of those not yet delivered by the spool's "
              "`ack` file:", "",
              report.table(["collector", "sink", "points sent", "points spooled", "dropped",
                            "spool_bytes end of outage", "spool_bytes before stop", "segments / bytes left",
                            "undelivered bytes"], srows), ""]
    notes = []
    if r["excluded_names"]:
        notes.append(f"excluded (derived by a store): {', '.join(r['excluded_names'])}")
    if r["other_names"]:
        notes.append(f"names in a store without cluster=\"{CLUSTER}\": {', '.join(r['other_names'])}")
    for s, only in r["names_only_on"].items():
        if only:
            notes.append(f"names only on the other store than {s}: {', '.join(only)}")
    for e in r["examples"]:
        notes.append(f"differs: {e['series']}: count A {e['count_a']}, B {e['count_b']}; raw A {e['raw_a']}, "
                     f"B {e['raw_b']}; missing on B {e['missing_on_b']}; missing on A {e['missing_on_a']}")
    for k, v in list(r["collector_log_warnings"].items()) + list(r["store_log_warnings"].items()):
        if v["count"]:
            notes.append(f"log {k}: {v['count']} WARN/ERROR lines, first: {v['first'][0]}")
    if notes:
        lines += ["Notes:", ""] + [f"- {n}" for n in notes] + [""]
    return "\n".join(lines)


def main(argv=None):
    a = parse_args(argv)
    if not os.access(a.argus_bin, os.X_OK):
        sys.exit(f"argus binary not found at {a.argus_bin}: `cargo build --release` or pass --argus-bin")
    version = server.version_of(a.argus_bin, ["--version"])
    work = a.work_dir
    os.makedirs(work, exist_ok=True)
    for name in os.listdir(work):  # only what an earlier run of this script left
        if name.startswith(("store-a", "store-b", "collector-", "gpu.json")):
            p = os.path.join(work, name)
            shutil.rmtree(p) if os.path.isdir(p) and not os.path.islink(p) else os.remove(p)
    r, marks, snaps = run(a, work)
    md = summarize(a, r, marks, snaps, version)
    print(md)
    missing = (r["samples_missing_on_a"] + r["samples_missing_on_b"] + r["series_missing_on_a"]
               + r["series_missing_on_b"])
    dropped = sum(v["dropped"] or 0 for c in snaps["before_stop"].values() for v in c.values())
    undelivered = sum(v["undelivered_bytes"] for c in r["spool_files_left"].values() for v in c.values())
    if a.out:
        os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
        with open(a.out, "w") as f:
            json.dump({"date": datetime.datetime.now().isoformat(timespec="seconds"), "argv": sys.argv,
                       "args": vars(a), "version": version, "marks": marks, "collector_sinks": snaps,
                       "result": r, "ok": not missing and not dropped and not undelivered}, f, indent=1)
        with open(os.path.splitext(a.out)[0] + ".md", "w") as f:
            f.write(md + "\n")
        log(f"wrote {a.out}")
    if missing or dropped or undelivered:
        sys.exit(f"{missing} samples/series missing, {dropped:g} points dropped by the collectors, "
                 f"{undelivered} spool bytes undelivered")


if __name__ == "__main__":
    main()
