#!/usr/bin/env python3
# Copied unchanged from the project's shared tools, shared/tools/make_storm.py (sha256 e2700235d58d3879…), so that every
# benchmark reproduces from a clone of this repository alone. Change it here and there together.
"""Turn labelled multivariate test sets into the alert stream a static-threshold rule set would send.

usage: make_storm.py OUT.jsonl DIR [DIR ...]     (each DIR holds train.csv and test.csv as in ../data/smd)

For every metric column m of every machine: threshold = the 99.5th percentile of that metric in train.csv; the
rule fires when two consecutive test points exceed it (`for: 1m` at a 60 s step) and resolves when a point is
back under it. Like Prometheus, a firing alert is re-sent at every evaluation with endsAt = now + 4 steps, and
sent once more with endsAt = now when it resolves. Every machine's test period is shifted to start at the same
moment (2020-09-13T12:26:40Z), so the machines behave as hosts of one cluster.

Each output line is one POST to /api/v2/alerts at time `at`:
  {"at": "<RFC3339>", "alerts": [{"labels": {...}, "annotations": {...}, "startsAt": ..., "endsAt": ..., "generatorURL": ...}]}
A summary goes to stderr: firing episodes (what a system without aggregation would notify), hours, episodes/hour.
"""
import csv, json, os, sys
from datetime import datetime, timezone

BASE = 1600000000.0

def iso(t): return datetime.fromtimestamp(t, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")

def load(path):
    with open(path) as f:
        r = csv.reader(f); hdr = next(r); rows = [list(map(float, row)) for row in r]
    return hdr, rows

def quantile(xs, q):
    xs = sorted(xs); i = (len(xs) - 1) * q; lo = int(i); hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (i - lo)

def main():
    out, dirs = sys.argv[1], sys.argv[2:]
    events = {}  # t -> list of alerts
    episodes = 0; t_min = None; t_max = None
    for d in dirs:
        host = os.path.basename(os.path.normpath(d))
        hdr, train = load(os.path.join(d, "train.csv"))
        thdr, test = load(os.path.join(d, "test.csv"))
        shift = BASE - test[0][0]
        test = [[row[0] + shift] + row[1:] for row in test]
        metrics = [c for c in thdr[1:] if c != "label"]
        step = test[1][0] - test[0][0]
        t_min = test[0][0] if t_min is None else min(t_min, test[0][0])
        t_max = test[-1][0] if t_max is None else max(t_max, test[-1][0])
        for j, m in enumerate(metrics, start=1):
            thr = quantile([row[j] for row in train], 0.995)
            if thr >= 1.0:  # scaled to [0,1]: a metric already at its maximum in training cannot exceed it
                continue
            above = 0; starts = None
            for row in test:
                t, v = row[0], row[j]
                labels = {"alertname": "MetricHigh", "severity": "warning", "cluster": "smd", "host": host, "metric": m}
                ann = {"summary": f"{m} on {host} is {v:.3f}, above {thr:.3f}"}
                if v > thr:
                    above += 1
                    if above == 2:
                        starts = t - step; episodes += 1
                    if starts is not None:
                        events.setdefault(t, []).append({"labels": labels, "annotations": ann, "startsAt": iso(starts),
                            "endsAt": iso(t + 4 * step), "generatorURL": f"storm://{host}/{m}"})
                else:
                    if starts is not None:
                        events.setdefault(t, []).append({"labels": labels, "annotations": ann, "startsAt": iso(starts),
                            "endsAt": iso(t), "generatorURL": f"storm://{host}/{m}"})
                    above = 0; starts = None
    with open(out, "w") as f:
        for t in sorted(events):
            f.write(json.dumps({"at": iso(t), "alerts": events[t]}) + "\n")
    hours = (t_max - t_min) / 3600
    print(f"firing episodes {episodes}, {hours:.1f} h, {episodes / hours:.1f} per hour", file=sys.stderr)

if __name__ == "__main__":
    main()
