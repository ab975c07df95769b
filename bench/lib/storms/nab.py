#!/usr/bin/env python3
"""A storm from NAB's real server series: each file a host, its value the metric.

usage: nab.py STEP OUT.jsonl TRUTH.json NAB_DIR      (NAB_DIR: shared/data/nab)

Files: data/realAWSCloudwatch/*.csv and data/realKnownCause/*.csv (CloudWatch CPU, disk, network, request
counts; machine temperature, request latency, ...): server metrics, as an alert rule set watches. Each file's
first 15 % is NAB's probationary period: the threshold is its 99.5th percentile (as make_storm.py takes train.csv's),
and the rest is the test period, shifted to start at BASE, so the files behave as hosts of one cluster. The rule
is evaluated every STEP seconds over the file's own samples (mostly 5-minute; a sample counts for up to two of
the file's steps, at least 5 minutes). Ground truth: NAB's labelled anomaly windows (labels/combined_windows.json)
that end after the probationary period, one incident each. An above-threshold rule sees only upward anomalies:
windows of drops have no episode and are not alertable (they count in no recall).
"""
import csv, json, os, sys
from datetime import datetime, timezone
from rule import BASE, Series, evaluate, quantile, write, write_truth

DIRS = ("realAWSCloudwatch", "realKnownCause")
PROBATION = 0.15


def ts(s):
    return datetime.strptime(s.split(".")[0], "%Y-%m-%d %H:%M:%S").replace(tzinfo=timezone.utc).timestamp()


def main():
    step, out, truth, nab = float(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
    windows = json.load(open(os.path.join(nab, "labels", "combined_windows.json")))
    series, incidents = [], []
    for d in DIRS:
        for name in sorted(os.listdir(os.path.join(nab, "data", d))):
            if not name.endswith(".csv"):
                continue
            with open(os.path.join(nab, "data", d, name)) as f:
                rows = [(ts(r["timestamp"]), float(r["value"])) for r in csv.DictReader(f)]
            cut = int(len(rows) * PROBATION)
            thr = quantile([v for _, v in rows[:cut]], 0.995)
            test = rows[cut:]
            shift = BASE - test[0][0]
            host = name[:-4]
            series.append(Series(host, "value", [t + shift for t, _ in test], [v for _, v in test], thr,
                                 {"source": d}))
            for a, b in windows.get(f"{d}/{name}", []):
                a, b = ts(a) + shift, ts(b) + shift
                if b >= BASE:
                    incidents.append((host, max(a, BASE), b))
    events, episodes = evaluate(series, step, cluster="nab")
    write(out, events)
    write_truth(truth, incidents, f"NAB combined_windows.json after the probationary period, rule every {step:g} s")
    print(f"nab step {step:g}s: {len(series)} hosts, {episodes} firing episodes, {len(incidents)} windows", file=sys.stderr)


if __name__ == "__main__":
    main()
