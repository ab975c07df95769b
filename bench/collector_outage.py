#!/usr/bin/env python3
"""The 10-minute store outage (issue 4): `argus collect` at the normal rate for an 8-GPU node (fake GPU
backend, 10 s interval, host/disk/net on) writes to `argus serve` by remote write; the server is stopped
for --outage seconds, then restarted on the same data directory; every sample must arrive.

    python3 bench/collector_outage.py --argus-bin target/release/argus [--before 120] [--outage 600] [--after 180]

The ground truth is a second sink of the same collector: gzip line protocol to a receiver in this script
(always up). After the collector stops (flushing), every (series, timestamp, value) the receiver got is
looked up in the store through /api/v1/query (a range selector per metric name, raw samples). Prints the
counts and the missing ones; exit 1 if any sample is missing. Standard library only.
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lib import gpu_fixture  # noqa: E402
from lib.lp_receiver import Receiver  # noqa: E402
from lib.server import free_port  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def serve(args, port, data):
    p = subprocess.Popen([args.argus_bin, "serve", "--listen", f"127.0.0.1:{port}", "--data-dir", data, "--no-collector"],
                         stdout=subprocess.DEVNULL, stderr=open(data + ".log", "a"))
    end = time.time() + 60
    while time.time() < end:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/-/ready", timeout=1).read()
            return p
        except Exception:
            time.sleep(0.2)
    raise RuntimeError("argus serve did not become ready")


def stop(p):
    p.send_signal(signal.SIGTERM)
    p.wait(timeout=120)


def query(port, q, t):
    url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": q, "time": f"{t:.3f}"})
    with urllib.request.urlopen(url, timeout=60) as r:
        return json.load(r)["data"]["result"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--argus-bin", default="target/release/argus")
    ap.add_argument("--before", type=float, default=120)
    ap.add_argument("--outage", type=float, default=600)
    ap.add_argument("--after", type=float, default=180)
    ap.add_argument("--interval", default="10s")
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="argus-outage-")
    port = free_port()
    truth = Receiver()
    fixture = os.path.join(work, "gpu8.json")
    gpu_fixture.widened(fixture, 8)
    cfg = os.path.join(work, "collector.toml")
    with open(cfg, "w") as f:
        f.write(f"""[collector]
interval = "{args.interval}"
data_dir = "{work}/collector"
[collector.gpu]
backend = "fake"
fake_fixture = "{fixture}"
kernel_log = ""
[collector.events]
enabled = false
[[collector.sink]]
name = "argus"
url = "http://127.0.0.1:{port}/api/v1/write"
max_backoff = "5s"
[[collector.sink]]
name = "truth"
url = "http://127.0.0.1:{truth.port}/api/v2/write"
format = "line_protocol"
""")
    data = os.path.join(work, "store")
    server = serve(args, port, data)
    start = time.time()
    collector = subprocess.Popen([args.argus_bin, "collect", "--config", cfg], stdout=subprocess.DEVNULL,
                                 stderr=open(os.path.join(work, "collector.log"), "w"))
    log(f"collecting; work dir {work}")
    time.sleep(args.before)
    stop(server)
    log(f"server stopped for {args.outage:.0f} s")
    time.sleep(args.outage)
    server = serve(args, port, data)
    log("server restarted")
    time.sleep(args.after)
    stop(collector)
    end = time.time()
    log("collector stopped; checking")
    got = truth.snapshot()
    truth.stop()
    expected = {}
    for m, tags, fields, ts in got:
        for field, v in fields.items():
            name = f"{m}_{field}"
            key = (name, tuple(sorted(tags.items())))
            expected.setdefault(name, {})[(key, ts)] = v
    window = int(end - start) + 120
    total = missing = wrong = 0
    examples = []
    for name, want in sorted(expected.items()):
        have = {}
        for s in query(port, f'{{__name__="{name}"}}[{window}s]', end + 60):
            labels = tuple(sorted((k, v) for k, v in s["metric"].items() if k != "__name__"))
            for t, v in s["values"]:
                have[((name, labels), round(float(t) * 1000))] = v
        for k, v in want.items():
            total += 1
            if k not in have:
                missing += 1
                if len(examples) < 10:
                    examples.append(f"missing {k}")
            elif v == v and float(have[k]) != v:
                wrong += 1
                if len(examples) < 10:
                    examples.append(f"value {k}: {have[k]} != {v}")
    stop(server)
    collections = len({ts for m, tags, _, ts in got if m == "argus_collector" and tags.get("source") == "gpu"})
    in_outage = sum(1 for m, tags, _, ts in got if m == "argus_collector" and tags.get("source") == "gpu"
                    and start + args.before <= ts / 1000 < start + args.before + args.outage)
    print(json.dumps({"samples": total, "missing": missing, "wrong_value": wrong, "series_names": len(expected),
                      "gpu_collections": collections, "gpu_collections_during_outage": in_outage,
                      "outage_s": args.outage, "before_s": args.before, "after_s": args.after,
                      "wall_s": round(end - start)}, indent=1))
    for e in examples:
        print(e)
    sys.exit(1 if missing or wrong else 0)


if __name__ == "__main__":
    main()
