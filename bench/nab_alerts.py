#!/usr/bin/env python3
"""NAB read the way the analyzer runtime pages: how many labelled windows get an alert, and how many alerts
fall outside the windows, for `alert_after` / `alert_at_once` settings.

The per-point scores come from the NAB example, which runs the runtime's `threshold` detector with its
defaults (a single-detector rule, so the ensemble score is the detector's score):

    cargo build --release -p argus-analyzer --example nab
    NAB_DUMP=/tmp/nab-scores target/release/examples/nab /work/shared/data/nab
    python3 bench/nab_alerts.py --scores /tmp/nab-scores --nab /work/shared/data/nab

Like the runtime (`analyzer/src/runtime.rs`, `judge`): a step is anomalous when its score is above 1; an
alert fires after `alert_after` anomalous steps in a row, or at once when a step reaches `alert_at_once`;
it resolves after 3 normal steps. Each file's probationary period (NAB's: 15 % of the file, at most 750
points) is skipped. An alert counts for a window when it fires inside it.
"""

import argparse
import csv
import json
import os


def load(nab, scores):
    windows = json.load(open(os.path.join(nab, "labels", "combined_windows.json")))
    files = {}
    for path in sorted(windows):
        with open(os.path.join(nab, "data", path)) as f:
            stamps = [r["timestamp"] for r in csv.DictReader(f)]
        with open(os.path.join(scores, path)) as f:
            sc = [float(x) for x in f.read().split()]
        spans = [(stamps.index(a[:19]), stamps.index(b[:19])) for a, b in windows[path]]
        files[path] = (sc, spans)
    return files


def alerts(sc, after, at_once, resolve_after=3):
    start = min(int(0.15 * len(sc)), 750)
    run = normal = 0
    firing = False
    fired = []
    for i in range(start, len(sc)):
        if sc[i] > 1:
            run, normal = run + 1, 0
            if not firing and (run >= after or (at_once > 0 and sc[i] >= at_once)):
                firing = True
                fired.append(i)
        else:
            run, normal = 0, normal + 1
            if firing and normal >= resolve_after:
                firing = False
    return fired


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scores", required=True, help="the NAB_DUMP folder")
    ap.add_argument("--nab", default="/work/shared/data/nab")
    args = ap.parse_args()
    files = load(args.nab, args.scores)
    print("| alert_after | alert_at_once | alerts | outside windows | windows with an alert |")
    print("|---:|---:|---:|---:|---:|")
    for after, at_once in ((3, 0), (3, 2.0), (3, 2.5), (3, 4.0), (2, 0), (1, 0)):
        total = outside = caught = n_windows = 0
        for sc, spans in files.values():
            fired = alerts(sc, after, at_once)
            total += len(fired)
            outside += sum(1 for i in fired if not any(a <= i <= b for a, b in spans))
            caught += sum(1 for a, b in spans if any(a <= i <= b for i in fired))
            n_windows += len(spans)
        print(f"| {after} | {at_once:g} | {total} | {outside} | {caught} of {n_windows} |")


if __name__ == "__main__":
    main()
