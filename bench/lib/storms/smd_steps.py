#!/usr/bin/env python3
"""The SMD storm of make_storm.py, sent by a rule evaluated every STEP seconds instead of every 60 s.

usage: smd_steps.py STEP OUT.jsonl TRUTH.json DIR [DIR ...]     (DIR: shared/data/smd/machine-*)

Thresholds as make_storm.py (99.5th percentile of train.csv per metric; metrics whose threshold is >= 1.0
skipped); the test period shifted to start at BASE. At STEP = 60 the alerts are make_storm.py's. At 15 s the
rule sees each 60 s sample four times (a 1-minute scrape evaluated every 15 s); at 300 s it sees every fifth.
Ground truth: the runs of label 1 in each test.csv, one incident each (score_storm.py's).
"""
import csv, os, sys
from rule import BASE, Series, evaluate, quantile, write, write_truth


def load(path):
    with open(path) as f:
        r = csv.reader(f)
        hdr = next(r)
        return hdr, [list(map(float, row)) for row in r]


def machine(d):
    host = os.path.basename(os.path.normpath(d))
    hdr, train = load(os.path.join(d, "train.csv"))
    thdr, test = load(os.path.join(d, "test.csv"))
    shift = BASE - test[0][0]
    times = [row[0] + shift for row in test]
    series, incidents, start, prev = [], [], None, None
    for j, m in enumerate(thdr[1:], start=1):
        if m == "label":
            continue
        thr = quantile([row[j] for row in train], 0.995)
        if thr >= 1.0:
            continue
        series.append(Series(host, m, times, [row[j] for row in test], thr))
    lab = thdr.index("label")
    for t, row in zip(times, test):
        if row[lab] == 1 and start is None:
            start = t
        if row[lab] != 1 and start is not None:
            incidents.append((host, start, prev))
            start = None
        prev = t
    if start is not None:
        incidents.append((host, start, prev))
    return series, incidents


def main():
    step, out, truth, dirs = float(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4:]
    series, incidents = [], []
    for d in dirs:
        s, i = machine(d)
        series += s
        incidents += i
    events, episodes = evaluate(series, step, cluster="smd")
    write(out, events)
    write_truth(truth, incidents, f"SMD label runs, rule evaluated every {step:g} s")
    print(f"smd step {step:g}s: {episodes} firing episodes, {len(incidents)} labelled incidents", file=sys.stderr)


if __name__ == "__main__":
    main()
