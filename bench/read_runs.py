#!/usr/bin/env python3
"""The 24-hour read of bench/ingest.py, repeated over fresh server starts on one kept data directory, with
runs alternated between Argus binaries (a base commit and a branch): per run a copy of the data directory,
a fresh server, 5 warm-up and 200 timed query_range requests on one keep-alive connection
(lib/client.time_range_reads, as bench/ingest.py times it). Prints one JSON line per run, then per binary
the median of the runs' Server-Timing medians and p99s and of the client-side times.

usage: bench/read_runs.py --data DIR --work-dir WORK [--runs 15] NAME=BINARY [NAME=BINARY ...]

DIR is an Argus data directory kept by `bench/ingest.py --servers argus --keep-data --work-dir WORK`
(WORK/runs/NN-argus/data); the read's 24 hours are those of WORK/workloads/anchor.json. Standard library only.
"""
import argparse
import json
import os
import shutil
import statistics
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the checkout
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lib import client, report, server  # noqa: E402

QUERY = 'gpu_utilization{host="gpu-node-000",gpu="0"}'


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", required=True, help="kept Argus data directory")
    p.add_argument("--work-dir", default="/tmp/argus-bench", help="bench/ingest.py's --work-dir (anchor.json)")
    p.add_argument("--runs", type=int, default=15)
    p.add_argument("--reps", type=int, default=200)
    p.add_argument("binaries", nargs="+", help="NAME=PATH of an argus binary")
    a = p.parse_args()
    bins = [b.split("=", 1) for b in a.binaries]
    with open(os.path.join(a.work_dir, "workloads", "anchor.json")) as f:
        start = json.load(f)["read_t0"]
    end = start + 86400 - 10
    scratch = os.path.join(a.work_dir, "read-runs-data")
    out = {name: [] for name, _ in bins}
    for i in range(a.runs):
        for name, binary in bins:
            shutil.rmtree(scratch, ignore_errors=True)
            shutil.copytree(a.data, scratch)
            srv = server.Server(server.argus_spec(os.path.abspath(binary), ""), scratch,
                                os.path.join(a.work_dir, "read-runs-server.log"))
            load = os.getloadavg()[0]
            srv.start()
            try:
                lat, points, size, err, _, st = client.time_range_reads(srv.port, QUERY, start, end, "10s", a.reps)
            finally:
                srv.stop()
            r = dict(bin=name, run=i, points=points, bytes=size, err=err, load=round(load, 2),
                     server_median=report.median(st), server_p99=report.percentile(st, 99),
                     client_median=report.median(lat), client_p99=report.percentile(lat, 99))
            out[name].append(r)
            print(json.dumps(r), flush=True)
    shutil.rmtree(scratch, ignore_errors=True)
    for name, rs in out.items():
        sm = sorted(r["server_median"] for r in rs if r["server_median"] is not None)
        if not sm:
            print(f"{name}: no Server-Timing figures")
            continue
        print(f"{name}: server medians sorted: " + " ".join(f"{x:.2f}" for x in sm))
        print(f"{name}: median of server medians {statistics.median(sm):.3f} ms; median server p99 "
              f"{statistics.median(r['server_p99'] for r in rs):.3f}; median client "
              f"{statistics.median(r['client_median'] for r in rs):.3f}; median client p99 "
              f"{statistics.median(r['client_p99'] for r in rs):.3f}; runs under 1 ms: {sum(x < 1 for x in sm)}/{len(sm)}")


if __name__ == "__main__":
    main()
