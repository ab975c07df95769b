#!/usr/bin/env python3
"""Soak: `argus serve` under steady GPU-cluster ingest, dashboard queries and an alert storm, for a long time.

Starts a release `argus serve` (its own data directory and configuration under --work-dir, a free loopback port,
the default store settings: wal_sync "always", default memory limit) and, against it, at once:

- writers: --writers processes posting InfluxDB line protocol to /api/v2/write (batches of --batch-lines lines,
  precision=s) so that --series distinct series each get one sample every --interval seconds, i.e. --rate samples/s
  (rate = series / interval). The series are the collector's own names and labels for a fleet of 8-GPU nodes
  (`gpu_*` per GPU with cluster, rack, host, gpu, uuid, model; `host_*`; `disk_*` and `net_*` per device), values
  random walks and counters. Each writer owns a slice of the nodes and spreads its batches evenly over each
  interval; a batch answered 429/503 is retried after Retry-After, and counted as an error all the same;
- dashboards: --query-threads threads at --query-rate queries/s in all, each a random panel of the fleet dashboards
  (dashboards/{overview,gpu-fleet,node,network,storage,alerts}.json; variables set to this cluster, a random host,
  every GPU) as GET /api/v1/query_range over the last 1 h (step 15 s) or 6 h (step 30 s);
- an alert storm: the output of bench/lib/make_storm.py (--storm, made once into --work-dir when missing),
  its times compressed onto the run (every timestamp t becomes run start + (t - first) / speed, so the whole storm
  spans the run, or --storm-span) and POSTed to /api/v2/alerts at its rewritten times. alertd notifies a webhook receiver in this
  script, which counts what it gets.

Every --sample-every seconds it reads the server's VmRSS (and its anonymous and file-backed parts) from /proc, the load
average, the store's head gauges and jemalloc's account (`argus_allocator_bytes`: allocated, active, metadata, resident).
At the end it stops the server with SIGTERM (it flushes the head into blocks) and writes a JSON result: achieved
rates, every non-2xx answer and client error by kind, ingest/query/alert latency percentiles, the RSS series and
its growth after --warmup (largest sample after the warm-up against the sample at the warm-up).

usage: bench/soak.py [--duration 30m] [--series 500000] [--rate 50000] [--warmup 5m]
                     [--argus-bin target/release/argus] [--work-dir /tmp/argus-soak] [--out bench/results/soak.json]

Standard library only. Exit status 0 when errors are 0 and the RSS grew less than --max-growth (default 5 %).
"""
import argparse
import datetime
import http.client
import http.server
import json
import math
import multiprocessing as mp
import os
import random
import re
import shutil
import subprocess
import sys
import threading
import time
import urllib.parse

sys.dont_write_bytecode = True  # no __pycache__ in the checkout
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lib import client, server  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLUSTER = "soak"
GPUS = 8
DASHBOARDS = ("overview", "gpu-fleet", "node", "network", "storage", "alerts")


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def duration_s(text):
    m = re.fullmatch(r"(\d+(?:\.\d+)?)(ms|s|m|h)?", text.strip())
    if not m:
        raise argparse.ArgumentTypeError(f"not a duration: {text!r} (e.g. 90s, 30m, 1h)")
    return float(m.group(1)) * {"ms": 0.001, "s": 1, "m": 60, "h": 3600, None: 1}[m.group(2)]


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--duration", type=duration_s, default=duration_s("30m"), help="run length (30m, 180s, 1h)")
    p.add_argument("--series", type=int, default=500_000, help="distinct active series (rounded up to whole nodes)")
    p.add_argument("--rate", type=float, default=50_000.0, help="samples/s in all: each series gets one sample "
                   "every series/rate seconds")
    p.add_argument("--warmup", type=duration_s, default=duration_s("5m"),
                   help="RSS growth is measured from the sample at this time")
    p.add_argument("--argus-bin", default=os.path.join(REPO, "target", "release", "argus"))
    p.add_argument("--argus-args", default="", help="extra arguments for `argus serve`")
    p.add_argument("--work-dir", default="/tmp/argus-soak", help="data directory, configuration, logs, storm file")
    p.add_argument("--out", help="JSON result (default bench/results/soak-DATE.json)")
    p.add_argument("--memory-limit", help="[store] memory_limit for argus.toml (default: Argus' own, half of the "
                   "machine's memory)")
    p.add_argument("--writers", type=int, default=4, help="writer processes")
    p.add_argument("--batch-lines", type=int, default=5000, help="line-protocol lines per write request")
    p.add_argument("--query-rate", type=float, default=2.0, help="dashboard queries per second, all threads")
    p.add_argument("--query-threads", type=int, default=2)
    p.add_argument("--storm", help="make_storm.py output (default: made into --work-dir from the SMD data)")
    p.add_argument("--shared", default=os.path.join(os.path.dirname(REPO), "shared"),
                   help="the shared directory (data/smd) for making the storm")
    p.add_argument("--storm-span", type=duration_s, help="the whole storm is compressed to span this long "
                   "(default: the run's duration; a shorter run with a longer span replays the storm's start at "
                   "the pace of the longer run)")
    p.add_argument("--no-storm", action="store_true")
    p.add_argument("--sample-every", type=duration_s, default=duration_s("60s"), help="RSS sampling period")
    p.add_argument("--max-growth", type=float, default=5.0, help="RSS growth after warm-up that fails, percent")
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args(argv)
    if a.warmup >= a.duration:
        p.error("--warmup must be shorter than --duration")
    a.interval = a.series / a.rate
    if a.interval < 1:
        p.error(f"--series/--rate = {a.interval:.3f} s: each series would need more than one sample a second")
    return a


# === the workload: a fleet of 8-GPU nodes under the collector's names ===

# (field, kind, lo, hi, step or rate, integer)
#   gauge: a random walk in [lo, hi] with steps of ±step; const: lo; counter: grows by about rate per interval
GPU_FIELDS = [
    ("utilization_ratio", "gauge", 0.0, 1.0, 0.04, False),
    ("memory_used_bytes", "gauge", 1e9, 1.4e11, 2e9, True),
    ("memory_total_bytes", "const", 143771566080, 0, 0, True),
    ("temperature_celsius", "gauge", 30, 90, 0.5, False),
    ("memory_temperature_celsius", "gauge", 30, 95, 0.5, False),
    ("power_watts", "gauge", 80, 700, 15, False),
    ("power_limit_watts", "const", 700, 0, 0, False),
    ("sm_clock_hertz", "gauge", 1.2e9, 1.98e9, 2e7, True),
    ("pcie_replays_total", "counter", 0, 0, 0.01, True),
    ("ecc_errors_corrected_total", "counter", 0, 0, 0.02, True),
]
HOST_FIELDS = [
    ("uptime_seconds", "counter", 0, 0, None, True),  # grows by the interval
    ("cpus", "const", 192, 0, 0, True),
    ("load1", "gauge", 0, 192, 3, False),
    ("load5", "gauge", 0, 192, 1, False),
    ("memory_total_bytes", "const", 2199023255552, 0, 0, True),
    ("memory_used_bytes", "gauge", 1e10, 1.9e12, 1e9, True),
    ("memory_available_bytes", "gauge", 1e10, 1.9e12, 1e9, True),
    ("processes_blocked", "gauge", 0, 8, 0.5, True),
]
DISK_FIELDS = [
    ("reads_completed_total", "counter", 0, 0, 20000, True),
    ("writes_completed_total", "counter", 0, 0, 8000, True),
    ("read_bytes_total", "counter", 0, 0, 8e8, True),
    ("written_bytes_total", "counter", 0, 0, 3e8, True),
    ("io_time_seconds_total", "counter", 0, 0, 6, False),
]
NET_FIELDS = [
    ("receive_bytes_total", "counter", 0, 0, 1e9, True),
    ("transmit_bytes_total", "counter", 0, 0, 1e9, True),
    ("receive_drop_total", "counter", 0, 0, 0.3, True),
    ("receive_errors_total", "counter", 0, 0, 0.05, True),
]
DISKS = ("nvme0n1", "nvme1n1")
NICS = ("eth0", "ib0")
SERIES_PER_NODE = GPUS * len(GPU_FIELDS) + len(HOST_FIELDS) + len(DISKS) * len(DISK_FIELDS) + \
    len(NICS) * len(NET_FIELDS)
LINES_PER_NODE = GPUS + 1 + len(DISKS) + len(NICS)


def host_name(n):
    return f"gpu-node-{n:05d}"


class Line:
    """One measurement of one node (one line per interval): its tags, fields and their state."""
    __slots__ = ("head", "names", "fields", "vals")

    def __init__(self, measurement, tags, fields, rng, interval):
        self.head = measurement + "," + ",".join(f"{k}={v}" for k, v in sorted(tags.items())) + " "
        self.fields = []
        self.vals = []
        for name, kind, lo, hi, step, integer in fields:
            if kind == "gauge":
                v = rng.uniform(lo, hi)
            elif kind == "const":
                v = lo
            else:
                v = float(rng.randint(0, 10**6)) if step is None or step >= 1 else 0.0
                step = interval if step is None else step
            self.fields.append((name, kind, lo, hi, step, integer))
            self.vals.append(v)

    def render(self, rng, ts):
        out = []
        for i, (name, kind, lo, hi, step, integer) in enumerate(self.fields):
            v = self.vals[i]
            if kind == "gauge":
                v = min(hi, max(lo, v + (rng.random() - 0.5) * 2 * step))
            elif kind == "counter":
                v += step * (0.8 + 0.4 * rng.random()) if step >= 1 else (1.0 if rng.random() < step else 0.0)
            self.vals[i] = v
            out.append(f"{name}={int(v)}i" if integer else f"{name}={v:.4g}")
        return self.head + ",".join(out) + f" {ts}"


def node_lines(n, rng, interval):
    host, rack = host_name(n), f"rack-{n // 32:04d}"
    base = {"cluster": CLUSTER, "rack": rack, "host": host}
    lines = []
    for g in range(GPUS):
        uuid = f"GPU-{n:08x}-{g:04x}-{rng.getrandbits(48):012x}"
        lines.append(Line("gpu", dict(base, gpu=str(g), uuid=uuid, model="H200"), GPU_FIELDS, rng, interval))
    lines.append(Line("host", base, HOST_FIELDS, rng, interval))
    for d in DISKS:
        lines.append(Line("disk", dict(base, device=d), DISK_FIELDS, rng, interval))
    for d in NICS:
        lines.append(Line("net", dict(base, device=d), NET_FIELDS, rng, interval))
    return lines


def percentiles(xs):
    if not xs:
        return None
    xs = sorted(xs)

    def q(p):
        return xs[min(len(xs) - 1, max(0, math.ceil(p * len(xs)) - 1))]
    return {"n": len(xs), "p50_ms": q(0.5) * 1e3, "p90_ms": q(0.9) * 1e3, "p99_ms": q(0.99) * 1e3,
            "max_ms": xs[-1] * 1e3, "mean_ms": sum(xs) / len(xs) * 1e3}


class Tally:
    """Answers by status and client errors by kind, for one kind of request (thread-safe)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.ok = 0
        self.statuses = {}
        self.client_errors = {}
        self.examples = []
        self.latencies = []

    def answer(self, status, latency, body=b""):
        with self.lock:
            self.latencies.append(latency)
            if isinstance(status, int) and 200 <= status < 300:
                self.ok += 1
            else:
                self.statuses[str(status)] = self.statuses.get(str(status), 0) + 1
                if len(self.examples) < 10:
                    self.examples.append(f"{status}: {body[:300].decode(errors='replace')}")

    def client_error(self, e):
        with self.lock:
            k = type(e).__name__
            self.client_errors[k] = self.client_errors.get(k, 0) + 1
            if len(self.examples) < 10:
                self.examples.append(f"{k}: {e}")

    def errors(self):
        return sum(self.statuses.values()) + sum(self.client_errors.values())

    def summary(self):
        return {"ok": self.ok, "non_2xx": self.statuses, "client_errors": self.client_errors,
                "errors": self.errors(), "examples": self.examples, "latency": percentiles(self.latencies)}


def writer_main(idx, port, nodes, t_first, t_end, interval, batch_lines, seed, out):
    """One writer process: for each interval from t_first (a multiple of the interval) until t_end, one line per
    measurement of each of its nodes, timestamped with the interval's start, sent in batches spread evenly over
    the interval."""
    rng = random.Random(seed * 1000 + idx)
    lines = [ln for n in nodes for ln in node_lines(n, rng, interval)]
    n_batches = max(1, math.ceil(len(lines) / batch_lines))
    tally = Tally()
    samples_acked = 0
    retries = 0
    late = 0
    conn = None
    first_send = last_ack = None
    cpu0 = time.process_time()
    tick = t_first
    # start each writer's batches at its own offset in the interval, so the writers interleave
    offset = interval * idx / out["writers"] / n_batches
    q = out["queue"]
    # A writer behind schedule stops at the end of the run all the same (what it could not send is the
    # shortfall the achieved rate shows), so the result does not wait on a backlog.
    while tick + offset < t_end and time.time() < t_end:
        ts = int(tick)
        for b in range(n_batches):
            if time.time() >= t_end + interval:
                break
            due = tick + offset + interval * b / n_batches
            now = time.time()
            if now < due:
                time.sleep(due - now)
            elif now > due + interval:
                late += 1
            chunk = lines[b * batch_lines:(b + 1) * batch_lines]
            body = ("\n".join(ln.render(rng, ts) for ln in chunk) + "\n").encode()
            n_samples = sum(len(ln.fields) for ln in chunk)
            for attempt in range(100):
                if conn is None:
                    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
                t0 = time.monotonic()
                first_send = first_send or time.time()
                try:
                    conn.request("POST", "/api/v2/write?org=soak&bucket=soak&precision=s", body=body,
                                 headers={"Content-Type": "text/plain; charset=utf-8"})
                    r = conn.getresponse()
                    rbody = r.read()
                except (OSError, http.client.HTTPException) as e:
                    tally.client_error(e)
                    conn.close()
                    conn = None
                    retries += 1
                    time.sleep(0.5)
                    continue
                tally.answer(r.status, time.monotonic() - t0, rbody)
                if 200 <= r.status < 300:
                    samples_acked += n_samples
                    last_ack = time.time()
                    break
                if r.status in (429, 503):
                    retries += 1
                    time.sleep(client.retry_after_seconds(r.getheader("Retry-After"), 0.5))
                    continue
                break  # a refusal that a retry would not change: counted, not retried
        tick += interval
    if conn is not None:
        conn.close()
    res = tally.summary()
    res.update(writer=idx, nodes=len(nodes), lines_per_interval=len(lines), batches_per_interval=n_batches,
               samples_acked=samples_acked, retries=retries, late_batches=late, first_send=first_send,
               last_ack=last_ack, cpu_s=time.process_time() - cpu0, latencies=tally.latencies)
    q.put(res)


# === dashboards ===

def dashboard_queries():
    """(dashboard, panel title, expr) of every panel target in the fleet dashboards."""
    out = []
    for name in DASHBOARDS:
        with open(os.path.join(REPO, "dashboards", name + ".json")) as f:
            d = json.load(f)

        def walk(panels):
            for p in panels:
                walk(p.get("panels", []))
                for t in p.get("targets", []):
                    if t.get("expr"):
                        out.append((name, p.get("title", ""), t["expr"]))
        walk(d.get("panels", []))
    return out


def instantiate(expr, host, range_s):
    rng_text = f"{int(range_s)}s"
    subs = {"cluster": CLUSTER, "host": host, "gpu": "|".join(str(g) for g in range(GPUS)),
            "__rate_interval": "1m", "__range": rng_text, "__interval": "15s", "job": ".*", "metric": ".*",
            "detector": ".*", "horizon": "15m"}
    return re.sub(r"\$\{?(\w+)\}?", lambda m: subs.get(m.group(1), ".*"), expr)


def query_loop(port, queries, nodes, t_end, period, seed, tally, per_query):
    rng = random.Random(seed)
    conn = None
    next_at = time.time()
    while True:
        next_at += period
        now = time.time()
        if now >= t_end:
            break
        if next_at > now:
            time.sleep(next_at - now)
        dash, title, expr = rng.choice(queries)
        range_s, step = (3600, 15) if rng.random() < 0.7 else (6 * 3600, 30)
        q = instantiate(expr, host_name(rng.randrange(nodes)), range_s)
        end = int(time.time()) // step * step
        params = urllib.parse.urlencode({"query": q, "start": end - range_s, "end": end, "step": step})
        if conn is None:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        t0 = time.monotonic()
        try:
            conn.request("GET", "/api/v1/query_range?" + params)
            r = conn.getresponse()
            body = r.read()
        except (OSError, http.client.HTTPException) as e:
            tally.client_error(e)
            conn.close()
            conn = None
            continue
        dt = time.monotonic() - t0
        status = r.status
        if status == 200:
            try:
                if json.loads(body).get("status") != "success":
                    status = "200 with an error envelope"
            except ValueError:
                status = "200 not JSON"
        tally.answer(status, dt, body)
        with tally.lock:
            k = f"{dash}: {title}"
            s = per_query.setdefault(k, {"n": 0, "total_s": 0.0, "max_s": 0.0})
            s["n"] += 1
            s["total_s"] += dt
            s["max_s"] = max(s["max_s"], dt)
    if conn is not None:
        conn.close()


# === the alert storm ===

def parse_time(s):
    return datetime.datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()


def iso(t):
    return datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def load_storm(path):
    posts = []
    with open(path) as f:
        for line in f:
            if line.strip():
                e = json.loads(line)
                posts.append((parse_time(e["at"]), e["alerts"]))
    posts.sort(key=lambda p: p[0])
    return posts


def storm_loop(port, posts, t0, span, t_end, tally, sent):
    first, last = posts[0][0], posts[-1][0]
    speed = max(1.0, (last - first) / (span * 0.95))
    sent["speed"] = speed

    def at(t):
        return t0 + (t - first) / speed

    conn = None
    for t, alerts in posts:
        due = at(t)
        now = time.time()
        if due >= t_end:
            break
        if due > now:
            time.sleep(due - now)
        body = []
        for a in alerts:
            a = dict(a)
            for k in ("startsAt", "endsAt"):
                if a.get(k):
                    a[k] = iso(at(parse_time(a[k])))
            body.append(a)
        data = json.dumps(body).encode()
        if conn is None:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        t_req = time.monotonic()
        try:
            conn.request("POST", "/api/v2/alerts", body=data, headers={"Content-Type": "application/json"})
            r = conn.getresponse()
            rbody = r.read()
        except (OSError, http.client.HTTPException) as e:
            tally.client_error(e)
            conn.close()
            conn = None
            continue
        tally.answer(r.status, time.monotonic() - t_req, rbody)
        sent["posts"] += 1
        sent["alerts"] += len(body)
    if conn is not None:
        conn.close()


class Receiver(http.server.ThreadingHTTPServer):
    daemon_threads = True


def start_receiver():
    counts = {"requests": 0, "alerts": 0, "bytes": 0}
    lock = threading.Lock()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            try:
                n = len(json.loads(body).get("alerts", []))
            except ValueError:
                n = 0
            with lock:
                counts["requests"] += 1
                counts["alerts"] += n
                counts["bytes"] += len(body)
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    srv = Receiver(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv, counts


# === the run ===

def loadavg():
    with open("/proc/loadavg") as f:
        return [float(x) for x in f.read().split()[:3]]


def git_commit():
    try:
        out = subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
        dirty = subprocess.run(["git", "-C", REPO, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True).stdout.strip()
        return out.stdout.strip() + ("-dirty" if dirty else "")
    except OSError:
        return "?"


def make_storm(a):
    path = os.path.join(a.work_dir, "storm.jsonl")
    if not os.path.exists(path):
        smd = os.path.join(a.shared, "data", "smd")
        machines = sorted(os.path.join(smd, d) for d in os.listdir(smd) if d.startswith("machine-"))
        log(f"making the storm from {len(machines)} SMD machines into {path}")
        subprocess.run([sys.executable, os.path.join(REPO, "bench", "lib", "make_storm.py"), path + ".tmp"] + machines,
                       check=True)
        os.rename(path + ".tmp", path)
    return path


def write_config(a, receiver_port):
    with open(os.path.join(REPO, "config", "alertd.yml")) as f:
        yml = f.read()
    yml = yml.replace("http://127.0.0.1:9095/alerts", f"http://127.0.0.1:{receiver_port}/alerts")
    alertd_yml = os.path.join(a.work_dir, "alertd.yml")
    with open(alertd_yml, "w") as f:
        f.write(yml)
    toml = os.path.join(a.work_dir, "argus.toml")
    with open(toml, "w") as f:
        f.write(f'# bench/soak.py: the defaults, with alertd notifying the soak\'s webhook receiver\n'
                f'[alertd]\nconfig_file = "{alertd_yml}"\n')
        if a.memory_limit:
            f.write(f'[store]\nmemory_limit = "{a.memory_limit}"\n')
    return toml


def main(argv=None):
    a = parse_args(argv)
    os.makedirs(a.work_dir, exist_ok=True)
    data_dir = os.path.join(a.work_dir, "data")
    shutil.rmtree(data_dir, ignore_errors=True)
    nodes = math.ceil(a.series / SERIES_PER_NODE)
    n_series = nodes * SERIES_PER_NODE
    rate = n_series / a.interval
    storm = None if a.no_storm else load_storm(a.storm or make_storm(a))
    queries = dashboard_queries()
    receiver, notified = start_receiver()
    toml = write_config(a, receiver.server_address[1])
    spec = server.argus_spec(a.argus_bin, f"--config {toml} " + a.argus_args)
    srv = server.Server(spec, data_dir, os.path.join(a.work_dir, "server.log"))
    log(f"{nodes} nodes x {SERIES_PER_NODE} series = {n_series} series, one sample each every {a.interval:g} s "
        f"= {rate:,.0f} samples/s; {a.writers} writers; {len(queries)} dashboard panels; "
        f"storm {len(storm) if storm else 0} posts; {a.duration:g} s")
    srv.start()
    log(f"argus serve pid {srv.proc.pid} on port {srv.port}: {' '.join(srv.argv)}")

    t_start = time.time()
    t_end = t_start + a.duration
    t_first = math.ceil(t_start / a.interval) * a.interval  # the first interval starts on a multiple
    q = mp.Queue()
    procs = []
    for w in range(a.writers):
        mine = list(range(w, nodes, a.writers))
        p = mp.Process(target=writer_main, args=(w, srv.port, mine, t_first, t_end, a.interval, a.batch_lines,
                                                  a.seed, {"queue": q, "writers": a.writers}))
        p.start()
        procs.append(p)
    q_tally, per_query = Tally(), {}
    threads = [threading.Thread(target=query_loop, daemon=True,
                                args=(srv.port, queries, nodes, t_end, a.query_threads / a.query_rate,
                                      a.seed * 100 + i, q_tally, per_query))
               for i in range(a.query_threads)]
    s_tally, storm_sent = Tally(), {"posts": 0, "alerts": 0}
    if storm:
        threads.append(threading.Thread(target=storm_loop, daemon=True,
                                        args=(srv.port, storm, t_start, a.storm_span or a.duration, t_end, s_tally,
                                              storm_sent)))
    for t in threads:
        t.start()

    samples = []
    next_sample = t_start
    while True:
        now = time.time()
        if now >= next_sample:
            m = srv.metrics() or {}
            s = {"t_s": round(now - t_start, 1), "rss_kib": srv.status_kib("VmRSS"),
                 "rss_anon_kib": srv.status_kib("RssAnon"), "rss_file_kib": srv.status_kib("RssFile"),
                 "hwm_kib": srv.status_kib("VmHWM"), "load": loadavg(), "cpu_s": srv.cpu_seconds(),
                 "head_series": m.get("argus_store_head_series"), "head_samples": m.get("argus_store_head_samples"),
                 "head_bytes": m.get("argus_store_head_bytes"), "blocks": m.get("argus_store_blocks"),
                 "samples_ingested": m.get("argus_store_samples_ingested_total"),
                 **{f"alloc_{k}": m.get(f'argus_allocator_bytes{{kind="{k}"}}')
                    for k in ("allocated", "active", "metadata", "resident")}}
            samples.append(s)
            alloc = s["alloc_allocated"]
            log(f"t={s['t_s']:6.0f}s rss {s['rss_kib'] / 1024:7.1f} MiB"
                + (f" (allocated {alloc / 2**20:.1f} MiB)" if alloc is not None else "")
                + f", head {s['head_series']} series "
                f"{s['head_samples']} samples, load {s['load'][0]:.2f}; writes ok so far: "
                f"queries {q_tally.ok}/{q_tally.errors()} err, alerts {s_tally.ok}/{s_tally.errors()} err")
            next_sample += a.sample_every
            if next_sample > t_end + 1:
                break
        if srv.proc.poll() is not None:
            log(f"argus serve exited with {srv.proc.returncode}")
            break
        time.sleep(min(1.0, max(0.0, next_sample - time.time())))
    wall = time.time() - t_start
    results = [q.get(timeout=600) for _ in procs]
    for p in procs:
        p.join()
    for t in threads:
        t.join(timeout=120)
    cpu_total = srv.cpu_seconds() if srv.proc.poll() is None else None
    rss_end = srv.status_kib("VmRSS") if srv.proc.poll() is None else None
    t_stop = time.monotonic()
    srv.stop(timeout=600)
    stop_s = time.monotonic() - t_stop
    time.sleep(1)
    receiver.shutdown()

    w_lat = [x for r in results for x in r.pop("latencies")]
    w_err = sum(r["errors"] for r in results)
    acked = sum(r["samples_acked"] for r in results)
    first = min(r["first_send"] for r in results if r["first_send"])
    last = max(r["last_ack"] for r in results if r["last_ack"])
    warm = [s for s in samples if s["t_s"] >= a.warmup - 1]
    base = warm[0]["rss_kib"] if warm else None
    after = warm[1:]
    growth_max = (max(s["rss_kib"] for s in after) - base) / base * 100 if after and base else None
    growth_end = (after[-1]["rss_kib"] - base) / base * 100 if after and base else None
    res = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "commit": git_commit(), "argv": sys.argv, "argus": " ".join(srv.argv),
        "argus_version": server.version_of(a.argus_bin, ["--version"]),
        "nproc": os.cpu_count(),
        "config": {"duration_s": a.duration, "series": n_series, "nodes": nodes, "interval_s": a.interval,
                   "target_rate": rate, "writers": a.writers, "batch_lines": a.batch_lines,
                   "query_rate": a.query_rate, "query_threads": a.query_threads, "warmup_s": a.warmup},
        "wall_s": wall,
        "ingest": {"samples_acked": acked, "rate_achieved": acked / (last - first) if last > first else None,
                   "rate_over_run": acked / wall, "requests": sum(r["ok"] for r in results), "errors": w_err,
                   "retries": sum(r["retries"] for r in results),
                   "late_batches": sum(r["late_batches"] for r in results),
                   "latency": percentiles(w_lat), "writers": results,
                   "writer_cpu_s": sum(r["cpu_s"] for r in results)},
        "queries": dict(q_tally.summary(), per_panel=per_query),
        "storm": dict(s_tally.summary(), **storm_sent, notifications=dict(notified)),
        "errors": w_err + q_tally.errors() + s_tally.errors(),
        "rss": {"samples": samples, "warmup_kib": base, "growth_after_warmup_pct_max": growth_max,
                "growth_after_warmup_pct_end": growth_end, "end_kib": rss_end},
        "server": {"cpu_s": cpu_total, "stop_s": stop_s, "exit_code": srv.proc.returncode,
                   "hwm_kib": samples[-1]["hwm_kib"] if samples else None},
        "load_avg": [s["load"][0] for s in samples],
    }
    out = a.out or os.path.join(REPO, "bench", "results", f"soak-{time.strftime('%Y-%m-%d')}.json")
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out, "w") as f:
        json.dump(res, f, indent=1)
    log(f"wrote {out}")
    print(f"samples acknowledged {acked:,} ({res['ingest']['rate_achieved'] or 0:,.0f}/s between first send and "
          f"last ack, target {rate:,.0f}/s); write errors {w_err}, query errors {q_tally.errors()}, "
          f"alert errors {s_tally.errors()}; RSS at warm-up {base and base / 1024:.1f} MiB, growth after "
          f"{growth_max if growth_max is not None else float('nan'):.2f} % (max) "
          f"{growth_end if growth_end is not None else float('nan'):.2f} % (end)")
    for k, v in (("ingest", res["ingest"]["latency"]), ("query", res["queries"]["latency"]),
                 ("alerts", res["storm"]["latency"])):
        if v:
            print(f"{k:7} latency ms: p50 {v['p50_ms']:.1f} p90 {v['p90_ms']:.1f} p99 {v['p99_ms']:.1f} "
                  f"max {v['max_ms']:.1f} (n={v['n']})")
    ok = res["errors"] == 0 and growth_max is not None and growth_max < a.max_growth
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
