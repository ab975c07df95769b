#!/usr/bin/env python3
"""Size-bounded retention through the real server: `[store] max_disk_size` (`--retention-size`).

Goal (fleet-mode issue): 24 h of data, written with accelerated timestamps in minutes, with `max_disk_size` at
half of what the data needs, stays under it, keeps the newest data queryable and loses no acknowledged sample
younger than what was dropped.

Two runs of `argus serve --no-collector`, each on a fresh data directory, receive the same workload: `--nodes`
H100 nodes (bench/lib/h100.py, 1,973 series each) at 10 s steps over `--hours` hours ending when the script
starts, in time order, `--batch-steps` steps of every node per request, on one keep-alive connection by default
(429/503 retried after Retry-After). Every batch's final answer is recorded; a batch is acknowledged on 2xx.
With two or more writers, neighbouring batches commit out of order now and then, and every series of the late
batch is rewritten into new runs of the head's chunk file (docs/format/head-chunks.md): at 3 h x 1 node the
head's chunk file peaked at 127 MiB with 2 writers against 5.4 MiB with one, so the default is strict time order.

1. calibration: no bound. After the write, `POST /internal/force_flush`, settle (data directory unchanged and
   the server idle for --settle-s): the data directory's apparent size is what the data needs.
2. bounded: `--retention-size` = --ratio (0.5) of that. While writing, a sampler reads the data directory's
   size and /metrics (`argus_store_disk_bytes`, `argus_store_max_disk_bytes`,
   `argus_store_blocks_deleted_size_total`) every --sample-s; the server log is searched for the 80 % warning,
   the size deletions and the "WAL and head alone" error. Then force_flush, settle, and:
   (a) the data directory's final size against the bound;
   (b) the newest data: the raw samples of a few reference series over the last --recent-hours are exactly
       the acknowledged ones (timestamps and values);
   (c) the drop boundary is the oldest sample held by the reference series; for every series of the workload,
       `count_over_time` over [boundary, end] must equal the acknowledged steps there (missing samples: must be
       0) and `count_over_time` before the boundary must be empty (no series keeps older data).
The calibration run gets the same checks (boundary = first step, nothing missing): a control for the script.

Blocks are cut from the head on 2-hour ranges (the head flushes when it spans 2 h of data) and compacted over
6 h and then 24 h aligned windows once the newest data is 2 h past them (docs/format/block.md), so with
accelerated timestamps compaction and size retention both happen while the data is written; upkeep
(flush, compaction, retention) runs every second. Deletion is by whole block: once the previous UTC day is
compacted into one block, one deletion may drop what is left of that day at once (docs/store.md).

The server runs with `--role store` by default (--argus-args): the default analyzer would watch the workload's
GPU series, write its own series at wall-clock time and keep state in the data directory.

Standard library only. Outputs JSON (--out) and a Markdown table on stdout.

usage: bench/retention_size.py [--argus-bin target/release/argus] [--nodes 4] [--hours 24] [--ratio 0.5]
                               [--work-dir /tmp/argus-retention-size] [--out FILE.json]
"""
import argparse
import datetime
import http.client
import json
import os
import platform
import queue
import re
import shutil
import sys
import threading
import time

sys.dont_write_bytecode = True  # no __pycache__ in the checkout
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lib import client, h100, report, server  # noqa: E402
from lib.procs import log  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WRITE_PATH = "/api/v2/write?precision=ns"
# (line index in Node.lines_, field) of the reference series, read raw: GPU 0's utilization, one NVLink
# counter, host load, a disk counter, a training loss, a vLLM histogram bucket.
REFERENCE = [(0, "utilization_ratio"), (0, "energy_joules_total"), (10, "nvlink_transmit_bytes_total"),
             (None, "load1"), (None, "read_bytes_total"), (None, "loss"), (-1, None)]
METRICS = ("argus_store_disk_bytes", "argus_store_disk_peak_bytes", "argus_store_max_disk_bytes", "argus_store_blocks_deleted_size_total",
           "argus_store_blocks_deleted_retention_total", "argus_store_blocks", "argus_store_blocks_bytes",
           "argus_store_head_chunk_file_bytes", 'argus_store_samples_dropped_total{reason="retention"}')
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--argus-bin", default=os.path.join(REPO, "target", "release", "argus"))
    p.add_argument("--argus-args", default="--role store", help="extra arguments for `argus serve`")
    p.add_argument("--nodes", type=int, default=4, help="H100 nodes (1,973 series each)")
    p.add_argument("--hours", type=float, default=24.0, help="hours of data, ending when the script starts")
    p.add_argument("--step-s", type=int, default=10)
    p.add_argument("--ratio", type=float, default=0.5, help="max_disk_size as a share of the calibrated size")
    p.add_argument("--retention-size", type=int, help="bound in bytes (skips the calibration run)")
    p.add_argument("--batch-steps", type=int, default=10, help="steps of every node per write request")
    p.add_argument("--writers", type=int, default=1,
                   help="concurrent keep-alive writer connections (more than 1: neighbouring batches may commit "
                        "out of order, which makes the head rewrite chunks into its chunk file)")
    p.add_argument("--sample-s", type=float, default=0.5, help="data directory / metrics sampling period")
    p.add_argument("--recent-hours", type=float, default=2.0, help="window of the newest-data check")
    p.add_argument("--settle-s", type=float, default=3.0)
    p.add_argument("--settle-timeout", type=float, default=300.0)
    p.add_argument("--work-dir", default="/tmp/argus-retention-size")
    p.add_argument("--keep-data", action="store_true", help="keep the data directories")
    p.add_argument("--out", help="JSON results (default bench/results/retention_size-<date>.json); "
                                 "the table goes to FILE.md too")
    a = p.parse_args(argv)
    if a.nodes < 1 or a.hours <= 0 or not 0 < a.ratio < 1 or a.batch_steps < 1 or a.writers < 1:
        p.error("--nodes, --hours, --batch-steps, --writers must be positive and --ratio in (0, 1)")
    if not a.out:
        a.out = os.path.join(REPO, "bench", "results", f"retention_size-{datetime.date.today().isoformat()}.json")
    return a


# === workload ===

class Workload:
    """The steps, the expected series and the reference series. Batches are generated on the fly from fresh
    Node objects (same seed), so both runs get the same bytes."""

    def __init__(self, a, t_end_s):
        self.a = a
        self.step_ms = a.step_s * 1000
        self.nsteps = int(a.hours * 3600 // a.step_s)
        self.t_end_ms = t_end_s * 1000
        self.t0_ms = self.t_end_ms - (self.nsteps - 1) * self.step_ms
        shapes = [h100.Node(i, interval_s=a.step_s) for i in range(a.nodes)]  # for their series only
        self.series_per_node = len(shapes[0].series())
        # Expected series, by metric name: a set of frozenset(label items) over all nodes.
        self.expected = {}
        for n in shapes:
            for ln in n.lines_:
                for name, labels in ln.series():
                    self.expected.setdefault(name, set()).add(frozenset(labels.items()))
        self.series = sum(len(v) for v in self.expected.values())
        if self.series != self.series_per_node * a.nodes:
            log(f"WARNING: {self.series} distinct series, Node.series() says {self.series_per_node} per node")
        self.refs = self._references(shapes)

    def _references(self, shapes):
        """[(node index, line index, field index, metric name, labels dict)] on the first and the last node."""
        refs = []
        for ni in sorted({0, len(shapes) - 1}):
            node = shapes[ni]
            for li, field in REFERENCE:
                if li is None:
                    li = next(i for i, ln in enumerate(node.lines_) if any(f == field for f, _ in ln.fields))
                if li < 0:
                    li = len(node.lines_) + li
                ln = node.lines_[li]
                fi = 0 if field is None else [f for f, _ in ln.fields].index(field)
                refs.append((ni, li, fi, *ln.series()[fi]))
        return refs

    def ts_ms(self, step):
        return self.t0_ms + step * self.step_ms

    def batches(self, ref_values, stop):
        """Yields (first step, steps, body bytes); fills ref_values[ref index][step] = written value text."""
        nodes = [h100.Node(i, interval_s=self.a.step_s) for i in range(self.a.nodes)]
        by_node = {}
        for r, (ni, li, fi, _, _) in enumerate(self.refs):
            by_node.setdefault(ni, []).append((r, li, fi))
        for first in range(0, self.nsteps, self.a.batch_steps):
            if stop.is_set():
                return
            steps = min(self.a.batch_steps, self.nsteps - first)
            out = []
            for s in range(first, first + steps):
                ts_ns = self.ts_ms(s) * 1_000_000
                for ni, n in enumerate(nodes):
                    lines = n.lines(ts_ns)
                    for r, li, fi in by_node.get(ni, ()):
                        fields = lines[li][len(n.lines_[li].prefix):].rsplit(" ", 1)[0]
                        # Field values are numbers: no escaped commas in them.
                        ref_values[r][s] = fields.split(",")[fi].split("=", 1)[1]
                    out.extend(lines)
            out.append("")
            yield first, steps, "\n".join(out).encode()


def value_of(text):
    return float(text[:-1]) if text.endswith("i") else float(text)


def selector(name, labels):
    return "{" + ",".join([f'__name__="{name}"'] + [f'{k}="{v}"' for k, v in sorted(labels.items())]) + "}"


# === writing ===

def write_all(port, wl, acked, ref_values, writers, on_batch=None):
    """Generates and sends every batch; acked[step] = 1 for every step of a batch answered 2xx. Returns stats."""
    work = queue.Queue(maxsize=2 * writers + 2)
    stop = threading.Event()
    lock = threading.Lock()
    st = {"batches": 0, "acked_batches": 0, "refused": [], "retries": 0, "retry_wait_s": 0.0, "reconnects": 0,
          "statuses": {}, "bytes": 0, "first_send": None, "last_ack": None, "generator_error": None}

    def producer():
        try:
            for b in wl.batches(ref_values, stop):
                work.put(b)
        except Exception as e:  # reported, the run fails
            st["generator_error"] = repr(e)
            stop.set()
        finally:
            for _ in range(writers):
                work.put(None)

    def writer():
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
        try:
            while True:
                item = work.get()
                if item is None:
                    return
                first, steps, body = item
                backoff, status, text = 0.05, None, b""
                for attempt in range(200):
                    with lock:
                        if st["first_send"] is None:
                            st["first_send"] = time.monotonic()
                    try:
                        conn.request("POST", WRITE_PATH, body=body, headers={"Content-Type": "text/plain"})
                        r = conn.getresponse()
                        text = r.read()
                        status = r.status
                    except (http.client.HTTPException, ConnectionError, TimeoutError) as e:
                        conn.close()
                        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
                        with lock:
                            st["reconnects"] += 1
                        status, text = None, repr(e).encode()
                        time.sleep(backoff)
                        backoff = min(2.0, backoff * 2)
                        continue
                    with lock:
                        st["statuses"][status] = st["statuses"].get(status, 0) + 1
                    if status in (429, 503):
                        backoff = client.retry_wait(r, backoff, st, lock)
                        continue
                    break
                with lock:
                    st["batches"] += 1
                    st["bytes"] += len(body)
                    if status is not None and 200 <= status < 300:
                        st["acked_batches"] += 1
                        st["last_ack"] = time.monotonic()
                        for s in range(first, first + steps):
                            acked[s] = 1
                    else:
                        st["refused"].append({"first_step": first, "steps": steps, "status": status,
                                              "body": text[:300].decode(errors="replace")})
                        if len(st["refused"]) <= 3:
                            log(f"batch at step {first} not acknowledged: {status} {text[:200]!r}")
                if on_batch:
                    on_batch(first + steps)
        finally:
            conn.close()

    threads = [threading.Thread(target=producer, name="producer", daemon=True)]
    threads += [threading.Thread(target=writer, name=f"writer-{i}", daemon=True) for i in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    st["retry_wait_s"] = round(st["retry_wait_s"], 3)
    st["refused_batches"] = len(st["refused"])
    st["refused"] = st["refused"][:20]
    return st


class Sampler(threading.Thread):
    """Every `period` s: the data directory's apparent and allocated size and the store's disk metrics."""

    def __init__(self, srv, bound, period):
        super().__init__(name="sampler", daemon=True)
        self.srv, self.bound, self.period = srv, bound, period
        self.halt = threading.Event()
        self.samples = []  # [t since start, apparent, allocated, store disk_bytes, blocks deleted for size]
        self.max_metrics = {}
        self.max_parts = {}  # largest wal/, head/, blocks/ seen (apparent bytes)
        self.at_max = {}     # wal/, head/, blocks/ when the whole directory was largest

    def run(self):
        t0 = time.monotonic()
        while not self.halt.is_set():
            t = time.monotonic() - t0
            apparent, allocated, _ = server.dir_size(self.srv.data_dir)
            sizes = {n: server.dir_size(os.path.join(self.srv.data_dir, n)) for n in ("wal", "head", "blocks")}
            parts = {n: v[0] for n, v in sizes.items()}
            if apparent > self.at_max.get("total", -1):
                self.at_max = dict(parts, total=apparent, t=round(t, 2),
                                   **{n + "_alloc": v[1] for n, v in sizes.items()})
            for n, v in parts.items():
                self.max_parts[n] = max(self.max_parts.get(n, 0), v)
            self.max_parts["wal+head"] = max(self.max_parts.get("wal+head", 0), parts["wal"] + parts["head"])
            m = self.srv.metrics() or {}
            for k in METRICS:
                if k in m:
                    self.max_metrics[k] = max(self.max_metrics.get(k, m[k]), m[k])
            self.samples.append([round(t, 2), apparent, allocated, m.get("argus_store_disk_bytes"),
                                 m.get("argus_store_blocks_deleted_size_total")])
            self.halt.wait(max(0.0, self.period - (time.monotonic() - t0 - t)))

    def summary(self):
        s = self.samples
        out = {"samples": len(s), "max_dir_bytes": max((x[1] for x in s), default=None),
               "max_dir_alloc_bytes": max((x[2] for x in s), default=None),
               "max_store_disk_bytes": max((x[3] for x in s if x[3] is not None), default=None),
               "max_metrics": self.max_metrics, "max_parts": self.max_parts, "parts_at_max": self.at_max}
        if self.bound:
            above, longest, run, episodes, above_store = 0.0, 0.0, 0.0, 0, 0.0
            for prev, cur in zip(s, s[1:]):
                dt = cur[0] - prev[0]
                if prev[1] > self.bound:
                    above += dt
                    run += dt
                    longest = max(longest, run)
                else:
                    run = 0.0
                if prev[3] is not None and prev[3] > self.bound:
                    above_store += dt
            episodes = sum(1 for prev, cur in zip([[0, 0]] + s, s) if cur[1] > self.bound >= prev[1])
            out.update(time_above_bound_s=round(above, 2), longest_above_bound_s=round(longest, 2),
                       episodes_above_bound=episodes, samples_above_bound=sum(1 for x in s if x[1] > self.bound),
                       store_gauge_time_above_bound_s=round(above_store, 2))
        return out


# === checks ===

def query(port, q, t_s):
    status, body, raw = client.get_json(port, "/api/v1/query", {"query": q, "time": f"{t_s:.3f}"}, timeout=300)
    if status != 200 or not body or body.get("status") != "success":
        raise RuntimeError(f"query {q!r} answered {status}: {(body or {}).get('error') or raw}")
    return body["data"]["result"]


def verify(a, srv, wl, acked, ref_values):
    """(a)-(c) of the module docstring."""
    step = wl.step_ms
    prefix = [0]
    for x in acked:
        prefix.append(prefix[-1] + x)

    def acked_between(lo_ms, hi_ms):  # steps with lo <= ts <= hi
        lo = max(0, -(-(lo_ms - wl.t0_ms) // step))
        hi = min(wl.nsteps - 1, (hi_ms - wl.t0_ms) // step)
        return prefix[hi + 1] - prefix[lo] if hi >= lo else 0

    end_ms = wl.t_end_ms + 5
    end_s = end_ms / 1000
    full_ms = wl.t_end_ms - wl.t0_ms + 3_600_000
    out = {"warnings": []}
    # Reference series: raw samples over the whole range.
    refs = []
    oldest = []
    for r, (ni, li, fi, name, labels) in enumerate(wl.refs):
        res = query(srv.port, f"{selector(name, labels)}[{full_ms}ms]", end_s)
        got = [(round(float(t) * 1000), float(v)) for t, v in res[0]["values"]] if res else []
        refs.append(got)
        if got:
            oldest.append(got[0][0])
    boundary = min(oldest) if oldest else None
    out["boundary_ms"] = boundary
    out["boundary_utc"] = datetime.datetime.fromtimestamp(boundary / 1000, datetime.timezone.utc).isoformat() \
        if boundary else None
    out["hours_kept"] = round((wl.t_end_ms - boundary + step) / 3_600_000, 3) if boundary else 0.0
    out["hours_dropped"] = round((boundary - wl.t0_ms) / 3_600_000, 3) if boundary else a.hours
    out["reference_oldest_ms"] = oldest
    # (b) newest data: the reference series hold their newest acknowledged sample, every sample they hold is
    # the value written at that time, and the samples of the last --recent-hours are all held (those older
    # than the boundary are counted apart: dropped by retention, not lost).
    recent_lo = wl.t_end_ms - int(a.recent_hours * 3_600_000) + step
    newest = max((s for s in range(wl.nsteps) if acked[s]), default=None)
    wrong, lost, examples = 0, 0, []
    newest_held = recent_checked = recent_dropped = 0
    for r, got in enumerate(refs):
        ni, li, fi, name, labels = wl.refs[r]
        tag = f"{name}{{host={labels['host']}}}"
        held = {t: v for t, v in got}
        for t, v in held.items():
            s = (t - wl.t0_ms) // step
            written = ref_values[r].get(s) if (t - wl.t0_ms) % step == 0 else None
            if written is None or value_of(written) != v:
                wrong += 1
                if len(examples) < 10:
                    examples.append(f"{tag} holds {v} at {t}, written {written}")
        if newest is not None and held.get(wl.ts_ms(newest)) is not None:
            newest_held += 1
        elif len(examples) < 10:
            examples.append(f"{tag}: newest acknowledged sample ({wl.ts_ms(newest) if newest is not None else None})"
                            f" not held")
        for s in range(wl.nsteps):
            t = wl.ts_ms(s)
            if t >= recent_lo and acked[s]:
                recent_checked += 1
                if t not in held:
                    if boundary is not None and t < boundary:
                        recent_dropped += 1
                    else:
                        lost += 1
                        if len(examples) < 10:
                            examples.append(f"{tag}: acknowledged sample at {t} not held")
    out.update(newest_step_ms=wl.ts_ms(newest) if newest is not None else None,
               reference_series=len(refs), reference_newest_held=newest_held, reference_value_mismatches=wrong,
               recent_window_h=a.recent_hours, recent_reference_samples_checked=recent_checked,
               recent_reference_dropped_before_boundary=recent_dropped, recent_reference_lost=lost,
               reference_examples=examples)
    # (c) every series: count over [boundary, end] == acknowledged steps there; nothing older than the boundary.
    series_seen = missing_series = 0
    missing = extra = held_older = 0
    examples = []
    expected_per_series = acked_between(boundary, wl.t_end_ms) if boundary else 0
    t_q = time.monotonic()
    for name, want in sorted(wl.expected.items()):
        if boundary is not None:
            w = end_ms - (boundary - 5)
            res = query(srv.port, f'count_over_time({{__name__="{name}"}}[{w}ms])', end_s)
        else:
            res = []
        got = {}
        for x in res:
            key = frozenset(x["metric"].items())
            got[key] = int(float(x["value"][1]))
        for key in want:
            n = got.get(key, 0)
            series_seen += key in got
            if n < expected_per_series:
                missing += expected_per_series - n
                if key not in got:
                    missing_series += 1
                if len(examples) < 10:
                    examples.append(f"{name}{dict(key)}: {n} of {expected_per_series}")
            elif n > expected_per_series:
                extra += n - expected_per_series
        unknown = [k for k in got if k not in want]
        if unknown:
            out["warnings"].append(f"{name}: {len(unknown)} series not in the workload")
        # Anything older than the boundary (a series keeping data another lost).
        at = (boundary - 5) / 1000 if boundary else end_s
        res = query(srv.port, f'count_over_time({{__name__="{name}"}}[{full_ms}ms] @ {at:.3f})', end_s)
        held_older += sum(int(float(x["value"][1])) for x in res)
    out.update(series_expected=wl.series, series_found=series_seen, series_missing=missing_series,
               acked_steps_younger_than_boundary=expected_per_series,
               acked_samples_younger_than_boundary=expected_per_series * wl.series,
               samples_missing_younger_than_boundary=missing, samples_unacked_but_held=extra,
               samples_held_older_than_boundary=held_older, missing_examples=examples,
               count_queries=2 * len(wl.expected), count_queries_s=round(time.monotonic() - t_q, 2),
               samples_held=expected_per_series * wl.series - missing + extra + held_older)
    return out


def blocks_on_disk(data_dir):
    out = []
    root = os.path.join(data_dir, "blocks")
    for d in sorted(os.listdir(root)) if os.path.isdir(root) else ():
        meta = os.path.join(root, d, "meta.json")
        if d.endswith((".tmp", ".deleted")) or not os.path.isfile(meta):
            continue
        try:
            with open(meta) as f:
                m = json.load(f)
        except (OSError, ValueError):
            continue
        size = sum(os.path.getsize(os.path.join(root, d, n)) for n in os.listdir(os.path.join(root, d)))
        out.append({"id": m.get("id"), "level": m.get("level"), "min_time": m.get("min_time"),
                    "max_time": m.get("max_time"), "samples": m.get("samples"), "series": m.get("series"),
                    "bytes": size})
    return sorted(out, key=lambda b: b["min_time"] or 0)


def parts_size(data_dir):
    """Apparent bytes of the data directory by top-level entry (blocks, wal, head, …)."""
    out = {}
    for n in sorted(os.listdir(data_dir)):
        p = os.path.join(data_dir, n)
        out[n] = server.dir_size(p)[0] if os.path.isdir(p) else os.path.getsize(p)
    return out


def scan_log(path):
    """What the server said about the bound."""
    out = {"warn_80": [], "size_deletions": [], "alone_errors": [], "other_warn_error": []}
    try:
        with open(path, errors="replace") as f:
            text = ANSI.sub("", f.read())
    except OSError:
        return out
    last_alone = None  # time of the last "WAL and head alone" error: the deletions of that upkeep tick follow it
    out["deleted_in_alone_ticks"] = 0
    for line in text.splitlines():
        m = re.match(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+)Z", line)
        when = datetime.datetime.fromisoformat(m.group(1)).timestamp() if m else None
        if "80 % of store.max_disk_size" in line:
            out["warn_80"].append(line.strip()[:400])
        elif "keep the data directory under store.max_disk_size" in line:
            d = {"line": line.strip()[:400]}
            for k in ("max_time", "bytes"):
                m = re.search(rf"\b{k}=(\d+)", line)
                d[k] = int(m.group(1)) if m else None
            d["after_alone_error"] = when is not None and last_alone is not None and 0 <= when - last_alone < 0.2
            out["deleted_in_alone_ticks"] += d["after_alone_error"]
            out["size_deletions"].append(d)
        elif "alone pass store.max_disk_size" in line:
            out["alone_errors"].append(line.strip()[:400])
            last_alone = when
        elif re.search(r"\b(WARN|ERROR)\b", line):
            out["other_warn_error"].append(line.strip()[:400])
    out["other_warn_error"] = out["other_warn_error"][:20]
    return out


# === one run ===

def one_run(a, wl, name, bound):
    run_dir = os.path.join(a.work_dir, name)
    shutil.rmtree(run_dir, ignore_errors=True)
    os.makedirs(run_dir)
    data_dir = os.path.join(run_dir, "data")
    extra = a.argus_args + (f" --retention-size {bound}" if bound else "")
    srv = server.Server(server.argus_spec(a.argus_bin, extra), data_dir, os.path.join(run_dir, "server.log"))
    r = {"name": name, "bound_bytes": bound, "argv": srv.argv}
    log(f"{name}: {' '.join(srv.argv)}")
    srv.start()
    acked = bytearray(wl.nsteps)
    ref_values = [dict() for _ in wl.refs]
    sampler = Sampler(srv, bound, a.sample_s)
    try:
        r["pid"] = srv.proc.pid
        cpu0 = srv.cpu_seconds()
        last_log = [time.monotonic()]

        def progress(done_step):
            if time.monotonic() - last_log[0] >= 30:
                last_log[0] = time.monotonic()
                log(f"{name}: step {done_step:,}/{wl.nsteps:,}, data dir "
                    f"{server.dir_size(data_dir)[0] / 2**20:.1f} MiB")

        sampler.start()
        t = time.monotonic()
        st = write_all(srv.port, wl, acked, ref_values, a.writers, progress)
        r["write_wall_s"] = round(time.monotonic() - t, 2)
        if st["generator_error"]:
            raise RuntimeError(f"workload generator failed: {st['generator_error']}")
        r["write"] = st
        r["cpu_write_s"] = round(srv.cpu_seconds() - cpu0, 2)
        r["dir_bytes_after_write"] = server.dir_size(data_dir)[0]
        t = time.monotonic()
        status, _, body = srv.request("POST", "/internal/force_flush")
        r["flush_s"] = round(time.monotonic() - t, 3)
        if status not in (200, 204):
            raise RuntimeError(f"force_flush answered {status}: {body[:200]!r}")
        r["settle_s"] = srv.settle(a.settle_s, a.settle_timeout)
        r["settled"] = r["settle_s"] < a.settle_timeout
        sampler.halt.set()
        sampler.join()
        r["during"] = sampler.summary()
        r["timeline"] = sampler.samples
        apparent, allocated, files = server.dir_size(data_dir)
        r.update(dir_bytes=apparent, dir_alloc_bytes=allocated, dir_files=files, parts=parts_size(data_dir),
                 blocks=blocks_on_disk(data_dir), metrics_end={k: v for k, v in (srv.metrics() or {}).items()
                                                               if k in METRICS},
                 peak_rss_kib=srv.status_kib("VmHWM"))
        r["samples_written"] = wl.nsteps * wl.series
        r["samples_acked"] = sum(acked) * wl.series
        log(f"{name}: written, flushed and settled; data dir {apparent / 2**20:.1f} MiB; verifying")
        r["verify"] = verify(a, srv, wl, acked, ref_values)
    finally:
        sampler.halt.set()
        srv.stop()
    r["log"] = scan_log(srv.log_path)
    dels = [d["max_time"] for d in r["log"]["size_deletions"] if d.get("max_time") is not None]
    r["newest_deleted_max_time"] = max(dels) if dels else None
    if not a.keep_data:
        shutil.rmtree(data_dir, ignore_errors=True)
    v = r["verify"]
    log(f"{name}: dir {r['dir_bytes'] / 2**20:.1f} MiB (bound {bound / 2**20 if bound else 0:.1f} MiB), max "
        f"during write {r['during']['max_dir_bytes'] / 2**20:.1f} MiB, kept {v['hours_kept']} h, missing "
        f"{v['samples_missing_younger_than_boundary']}")
    return r


# === report ===

def mib(x):
    return None if x is None else x / 2**20


def summarize(a, wl, runs, version):
    cols = [r["name"] for r in runs]
    rows = []

    def row(label, fn):
        cells = []
        for r in runs:
            try:
                cells.append(report.fmt(fn(r)))
            except (KeyError, TypeError, ValueError):
                cells.append("n/a")
        rows.append([label] + cells)

    row("max_disk_size (bound), MiB", lambda r: mib(r["bound_bytes"]) if r["bound_bytes"] else "none")
    row("samples written", lambda r: r["samples_written"])
    row("samples acknowledged (2xx)", lambda r: r["samples_acked"])
    row("batches refused (non-2xx final answer)", lambda r: r["write"]["refused_batches"])
    row("write retries (429/503)", lambda r: r["write"]["retries"])
    row("write wall time, s", lambda r: r["write_wall_s"])
    row("write rate, acked samples/s", lambda r: r["samples_acked"] / r["write_wall_s"])
    row("server CPU during write, s", lambda r: r["cpu_write_s"])
    row("**data dir after flush + settle, MiB**", lambda r: mib(r["dir_bytes"]))
    row("data dir / bound", lambda r: report.ratio(r["dir_bytes"], r["bound_bytes"]))
    row("**max data dir during write (to settle), MiB**", lambda r: mib(r["during"]["max_dir_bytes"]))
    row("max data dir / bound", lambda r: report.ratio(r["during"]["max_dir_bytes"], r["bound_bytes"]))
    row("**time above bound during write (to settle), s**", lambda r: r["during"].get("time_above_bound_s"))
    row("longest stretch above bound, s / episodes", lambda r: f"{r['during']['longest_above_bound_s']} / "
                                                             f"{r['during']['episodes_above_bound']}")
    row("at that max: wal / head / blocks, MiB", lambda r: " / ".join(
        report.fmt(mib(r["during"]["parts_at_max"].get(k))) for k in ("wal", "head", "blocks")))
    row("largest wal / head / blocks seen, MiB", lambda r: " / ".join(
        report.fmt(mib(r["during"]["max_parts"].get(k))) for k in ("wal", "head", "blocks")))
    row("max argus_store_disk_bytes (gauge, set by upkeep), MiB", lambda r: mib(r["during"]["max_store_disk_bytes"]))
    row("argus_store_disk_peak_bytes at the end (most held at once, blocks being written included), MiB",
        lambda r: mib(r["metrics_end"].get("argus_store_disk_peak_bytes")))
    row("blocks deleted for size (metric)", lambda r: r["metrics_end"].get("argus_store_blocks_deleted_size_total"))
    row("80 % warnings logged / size-deletion lines / 'WAL+head alone' errors",
        lambda r: f"{len(r['log']['warn_80'])} / {len(r['log']['size_deletions'])} / "
                  f"{len(r['log']['alone_errors'])}")
    row("blocks deleted in an upkeep tick where WAL + head alone passed the bound",
        lambda r: r["log"]["deleted_in_alone_ticks"])
    row("blocks left (levels)", lambda r: f"{len(r['blocks'])} ({','.join(str(b['level']) for b in r['blocks'])})")
    row("**drop boundary (oldest sample held), UTC**", lambda r: r["verify"]["boundary_utc"])
    row("**hours kept / dropped**", lambda r: f"{r['verify']['hours_kept']} / {r['verify']['hours_dropped']}")
    row("newest deleted block's max_time, UTC", lambda r: datetime.datetime.fromtimestamp(
        r["newest_deleted_max_time"] / 1000, datetime.timezone.utc).isoformat() if r["newest_deleted_max_time"]
        else "none")
    row("reference series holding their newest acked sample", lambda r: f"{r['verify']['reference_newest_held']} / "
                                                                       f"{r['verify']['reference_series']}")
    row("reference samples held with a value other than written", lambda r: r["verify"]["reference_value_mismatches"])
    row(f"reference samples of the newest {a.recent_hours} h: acked / dropped (older than boundary) / lost",
        lambda r: f"{r['verify']['recent_reference_samples_checked']} / "
                  f"{r['verify']['recent_reference_dropped_before_boundary']} / {r['verify']['recent_reference_lost']}")
    row("series found / expected", lambda r: f"{r['verify']['series_found']} / {r['verify']['series_expected']}")
    row("acked samples younger than boundary", lambda r: r["verify"]["acked_samples_younger_than_boundary"])
    row("**acked samples younger than boundary missing**",
        lambda r: r["verify"]["samples_missing_younger_than_boundary"])
    row("samples held older than boundary", lambda r: r["verify"]["samples_held_older_than_boundary"])
    row("samples_dropped_total{reason=retention} (absent: 0)",
        lambda r: r["metrics_end"].get('argus_store_samples_dropped_total{reason="retention"}', 0))
    row("peak RSS, MiB", lambda r: r["peak_rss_kib"] / 1024)
    t0 = datetime.datetime.fromtimestamp(wl.t0_ms / 1000, datetime.timezone.utc).isoformat()
    t1 = datetime.datetime.fromtimestamp(wl.t_end_ms / 1000, datetime.timezone.utc).isoformat()
    lines = [f"## Size-bounded retention, {datetime.date.today().isoformat()}", "",
             f"Workload: {a.nodes} H100 node(s) x {wl.series_per_node:,} series = {wl.series:,} series, "
             f"{wl.nsteps:,} steps of {a.step_s} s ({a.hours} h, {t0} .. {t1}), {wl.nsteps * wl.series:,} samples, "
             f"{a.batch_steps} steps of every node per request, {a.writers} writers, written in time order as fast "
             f"as the server acknowledges. Bound: {a.ratio} x the calibrated size. Server: `{version}`, "
             f"`argus serve --no-collector {a.argus_args}`. Machine: {platform.node()}, {os.cpu_count()} CPUs. Sizes: "
             f"apparent bytes of the whole data directory, sampled every {a.sample_s} s while writing.", "",
             report.table(["", *cols], rows), ""]
    for r in runs:
        if not r["bound_bytes"]:
            continue
        d, lg, bound = r["during"], r["log"], r["bound_bytes"]
        live = d["max_parts"].get("wal+head", 0)
        lines.append(f"{r['name']}: the WAL and the head's chunk file together reached up to {live / 2**20:.1f} MiB "
                     f"({report.fmt(live / bound)} x the bound) while writing; the store counts them against "
                     f"max_disk_size and never deletes them. {lg['deleted_in_alone_ticks']} of "
                     f"{len(lg['size_deletions'])} size deletions came in an upkeep tick that logged \"The WAL and "
                     f"the head alone pass store.max_disk_size\" ({len(lg['alone_errors'])} such ticks).")
    cal = [r for r in runs if not r["bound_bytes"]]
    if cal:
        c = cal[0]
        lines.append(f"calibration: {c['dir_bytes'] / 2**20:.1f} MiB after flush + settle (what the data needs); "
                     f"{c['during']['max_dir_bytes'] / 2**20:.1f} MiB at most while writing (WAL "
                     f"{c['during']['parts_at_max'].get('wal', 0) / 2**20:.1f} + head chunks "
                     f"{c['during']['parts_at_max'].get('head', 0) / 2**20:.1f} + blocks "
                     f"{c['during']['parts_at_max'].get('blocks', 0) / 2**20:.1f} MiB at that moment).")
    lines.append("")
    return "\n".join(lines)


def main(argv=None):
    a = parse_args(argv)
    if not os.access(a.argus_bin, os.X_OK):
        sys.exit(f"argus binary not found or not executable: {a.argus_bin}")
    os.makedirs(a.work_dir, exist_ok=True)
    t_end_s = int(time.time()) // a.step_s * a.step_s - a.step_s
    wl = Workload(a, t_end_s)
    log(f"workload: {a.nodes} node(s), {wl.series:,} series, {wl.nsteps:,} steps, "
        f"{wl.nsteps * wl.series:,} samples, {len(wl.expected)} metric names")
    version = server.version_of(a.argus_bin, ["--version"])
    started = time.time()
    runs = []
    bound = a.retention_size
    if not bound:
        cal = one_run(a, wl, "calibration", None)
        runs.append(cal)
        bound = int(cal["dir_bytes"] * a.ratio)
        log(f"calibration: data needs {cal['dir_bytes']:,} B; bound {bound:,} B")
    runs.append(one_run(a, wl, "bounded", bound))
    b = runs[-1]
    bv = b["verify"]
    verdict = {
        "final_under_bound": b["dir_bytes"] <= bound,
        "stayed_under_bound_during_write": b["during"]["max_dir_bytes"] <= bound,
        "newest_data_queryable": bv["reference_newest_held"] == bv["reference_series"] > 0
        and bv["reference_value_mismatches"] == 0 and bv["recent_reference_lost"] == 0,
        "newest_window_fully_kept": bv["recent_reference_dropped_before_boundary"] == 0,
        "no_acked_sample_younger_than_boundary_missing": bv["samples_missing_younger_than_boundary"] == 0
        and bv["boundary_ms"] is not None,
        "dropped_something": bv["hours_dropped"] > 0,
        "calibration_control_complete": all(r["verify"]["samples_missing_younger_than_boundary"] == 0
                                            and r["verify"]["hours_dropped"] == 0 for r in runs
                                            if r["name"] == "calibration") or None,
    }
    text = summarize(a, wl, runs, version)
    text += "\nVerdict: " + ", ".join(f"{k}={v}" for k, v in verdict.items()) + "\n"
    for r in runs:
        for w in r["verify"]["warnings"] + r["verify"]["missing_examples"] + r["verify"]["reference_examples"]:
            text += f"\n- {r['name']}: {w}"
        for line in r["log"]["warn_80"][:2] + r["log"]["alone_errors"][:2] + r["log"]["size_deletions"][:0]:
            text += f"\n- {r['name']} log: `{line}`"
    print(text)
    result = {"args": vars(a), "version": version, "machine": {"node": platform.node(), "cpus": os.cpu_count()},
              "started_utc": datetime.datetime.fromtimestamp(started, datetime.timezone.utc).isoformat(),
              "elapsed_s": round(time.time() - started, 1),
              "workload": {"nodes": a.nodes, "series": wl.series, "steps": wl.nsteps, "step_s": a.step_s,
                           "t0_ms": wl.t0_ms, "t_end_ms": wl.t_end_ms, "samples": wl.nsteps * wl.series,
                           "metric_names": len(wl.expected),
                           "reference_series": [selector(x[3], x[4]) for x in wl.refs]},
              "bound_bytes": bound, "verdict": verdict, "runs": runs}
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    with open(a.out, "w") as f:
        json.dump(result, f, indent=1)
    with open(a.out + ".md" if not a.out.endswith(".json") else a.out[:-5] + ".md", "w") as f:
        f.write(text + "\n")
    log(f"wrote {a.out}")
    must = ("final_under_bound", "newest_data_queryable", "no_acked_sample_younger_than_boundary_missing",
            "calibration_control_complete")
    return 0 if all(verdict[k] is not False for k in must) else 1


if __name__ == "__main__":
    sys.exit(main())
