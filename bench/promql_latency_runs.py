#!/usr/bin/env python3
"""Several runs of bench/promql_latency.py taken together: per query, the median and p99 (nearest rank) of
every timed request of every run, per server, and their ratio; then all requests pooled. One run's p99 of
10 requests is its slowest request, so a single stall decides it; pooling three runs gives 30 requests a
query and server.

usage: bench/promql_latency_runs.py RUN.json [RUN.json ...] [--base argus] [--other vm] [--out FILE.md]

Standard library only.
"""
import argparse
import json
import os
import statistics
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the checkout
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lib import report  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("runs", nargs="+", help="JSON files written by bench/promql_latency.py --out")
    p.add_argument("--base", default="argus")
    p.add_argument("--other", default="vm")
    p.add_argument("--out", help="also write the Markdown table here")
    a = p.parse_args()
    runs = [json.load(open(path)) for path in a.runs]
    names = [q["name"] for q in runs[0]["queries"]]
    for path, r in zip(a.runs, runs):
        if [q["name"] for q in r["queries"]] != names:
            sys.exit(f"{path}: not the same query set as {a.runs[0]}")
    lines = [
        f"{len(runs)} runs ({', '.join(os.path.basename(x) for x in a.runs)}); per query every timed request of "
        f"every run; client wall time, ms; p99 nearest rank.",
        "",
        f"| query | {a.base} p50 | {a.other} p50 | ratio p50 | {a.base} p99 | {a.other} p99 | ratio p99 |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    pooled = {a.base: [], a.other: []}
    not_above = [0, 0]
    for i, name in enumerate(names):
        ms = {s: [x["ms"] for r in runs for x in r["queries"][i]["requests"][s]] for s in (a.base, a.other)}
        for s in pooled:
            pooled[s] += ms[s]
        b50, o50 = statistics.median(ms[a.base]), statistics.median(ms[a.other])
        b99, o99 = report.percentile(ms[a.base], 99), report.percentile(ms[a.other], 99)
        not_above[0] += b50 <= o50
        not_above[1] += b99 <= o99
        lines.append(f"| `{name}` | {report.fmt(b50)} | {report.fmt(o50)} | {b50 / o50:.2f} | {report.fmt(b99)} | "
                     f"{report.fmt(o99)} | {b99 / o99:.2f} |")
    b, o = pooled[a.base], pooled[a.other]
    lines.append(f"| **all requests pooled** | **{report.fmt(statistics.median(b))}** | "
                 f"**{report.fmt(statistics.median(o))}** | {statistics.median(b) / statistics.median(o):.2f} | "
                 f"**{report.fmt(report.percentile(b, 99))}** | **{report.fmt(report.percentile(o, 99))}** | "
                 f"{report.percentile(b, 99) / report.percentile(o, 99):.2f} |")
    lines += ["", f"{a.base} ≤ {a.other} on {not_above[0]} of {len(names)} queries by median, "
              f"{not_above[1]} of {len(names)} by p99."]
    text = "\n".join(lines)
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
