#!/usr/bin/env python3
"""Argus's isolation forest against scikit-learn's, on the same data in the same run.

Both fit 100 trees of 256 samples on an SMD machine's train.csv (raw metrics) and score its test.csv;
runs alternate (sklearn, argus, sklearn, argus, ...) and medians are quoted. Times are measured inside
each process around fit and score only (CSV loading excluded on both sides). Argus's side runs either
`argus eval anomaly --plain-iforest` or the analyzer example `anomaly_eval --plain`.

    pip install numpy scikit-learn
    cargo build --release -p argus-analyzer --example anomaly_eval
    python3 bench/iforest_vs_sklearn.py --bin target/release/examples/anomaly_eval \\
        --data /work/shared/data/smd --repeat 5 --out bench/results/iforest_vs_sklearn.json

Needs numpy and scikit-learn (not standard library, unlike the other bench scripts).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import sklearn
from sklearn.ensemble import IsolationForest
from sklearn.metrics import average_precision_score, roc_auc_score


def load(path):
    with open(path) as f:
        header = f.readline().strip().split(",")
    data = np.loadtxt(path, delimiter=",", skiprows=1)
    if header[-1] == "label":
        return data[:, 1:-1], data[:, -1]
    return data[:, 1:], None


def run_sklearn(train, test, labels, seed, n_jobs):
    t0 = time.perf_counter()
    forest = IsolationForest(n_estimators=100, max_samples=256, random_state=seed, n_jobs=n_jobs).fit(train)
    t1 = time.perf_counter()
    scores = -forest.score_samples(test)
    t2 = time.perf_counter()
    return {
        "fit_seconds": t1 - t0,
        "score_seconds": t2 - t1,
        "auc_roc": roc_auc_score(labels, scores),
        "auc_pr": average_precision_score(labels, scores),
    }


def run_argus(binary, train_path, test_path, seed):
    if os.path.basename(binary) == "argus":
        with tempfile.NamedTemporaryFile(suffix=".json") as out:
            cmd = [binary, "eval", "anomaly", "--plain-iforest", "--seed", str(seed),
                   "--train", train_path, "--test", test_path, "--json", out.name]
            subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
            return json.load(open(out.name))
    cmd = [binary, "--plain", "--seed", str(seed), train_path, test_path]
    return json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True, help="target/release/argus or target/release/examples/anomaly_eval")
    ap.add_argument("--data", default="/work/shared/data/smd", help="folder of machine-*/train.csv, test.csv")
    ap.add_argument("--machines", default="", help="comma-separated machine folders (default: all)")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--out", help="write every run's figures here (JSON)")
    args = ap.parse_args()

    machines = args.machines.split(",") if args.machines else sorted(
        d for d in os.listdir(args.data) if os.path.isdir(os.path.join(args.data, d)))
    runs = []
    print(f"scikit-learn {sklearn.__version__}, numpy {np.__version__}, {os.cpu_count()} cores", file=sys.stderr)
    for m in machines:
        train_path = os.path.join(args.data, m, "train.csv")
        test_path = os.path.join(args.data, m, "test.csv")
        train, _ = load(train_path)
        test, labels = load(test_path)
        for rep in range(args.repeat):
            for side in ("sklearn", "sklearn_all_cores", "argus"):
                if side == "argus":
                    r = run_argus(args.bin, train_path, test_path, rep)
                else:
                    r = run_sklearn(train, test, labels, rep, None if side == "sklearn" else -1)
                r.update(machine=m, side=side, rep=rep, total_seconds=r["fit_seconds"] + r["score_seconds"])
                runs.append(r)
                print(f"{m} rep {rep} {side:18s} fit {r['fit_seconds']:.3f} s score {r['score_seconds']:.3f} s "
                      f"AUC-ROC {r['auc_roc']:.4f}", file=sys.stderr)

    def med(side, key, m=None):
        return statistics.median(r[key] for r in runs if r["side"] == side and (m is None or r["machine"] == m))

    print("| machine | side | fit s | score s | fit+score s | AUC-ROC | AUC-PR |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for m in machines:
        for side in ("sklearn", "sklearn_all_cores", "argus"):
            print(f"| {m} | {side} | {med(side, 'fit_seconds', m):.3f} | {med(side, 'score_seconds', m):.3f} | "
                  f"{med(side, 'total_seconds', m):.3f} | {med(side, 'auc_roc', m):.4f} | {med(side, 'auc_pr', m):.4f} |")
    print()
    for peer in ("sklearn", "sklearn_all_cores"):
        ratios = [med("argus", "total_seconds", m) / med(peer, "total_seconds", m) for m in machines]
        print(f"argus / {peer} fit+score time, per machine: " + ", ".join(f"{x:.3f}" for x in ratios)
              + f"; median {statistics.median(ratios):.3f}")
    # Seed spread: per machine, the mean AUC-ROC over seeds on each side, the difference and its standard
    # error (Welch); "equal" means the difference is within two standard errors.
    print()
    print("| machine | sklearn AUC-ROC mean ± sd | argus AUC-ROC mean ± sd | argus − sklearn | 2 × std. error |")
    print("|---|---:|---:|---:|---:|")
    for m in machines:
        sk = [r["auc_roc"] for r in runs if r["side"] == "sklearn" and r["machine"] == m]
        ar = [r["auc_roc"] for r in runs if r["side"] == "argus" and r["machine"] == m]
        if len(sk) < 2 or len(ar) < 2:
            continue
        se = (statistics.variance(sk) / len(sk) + statistics.variance(ar) / len(ar)) ** 0.5
        print(f"| {m} | {statistics.mean(sk):.4f} ± {statistics.stdev(sk):.4f} | "
              f"{statistics.mean(ar):.4f} ± {statistics.stdev(ar):.4f} | "
              f"{statistics.mean(ar) - statistics.mean(sk):+.4f} | {2 * se:.4f} |")
    print()
    for side in ("sklearn", "sklearn_all_cores", "argus"):
        mean_roc = statistics.mean(med(side, "auc_roc", m) for m in machines)
        mean_pr = statistics.mean(med(side, "auc_pr", m) for m in machines)
        print(f"{side}: mean over machines of median AUC-ROC {mean_roc:.4f}, AUC-PR {mean_pr:.4f}")
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"sklearn": sklearn.__version__, "runs": runs}, f, indent=1)


if __name__ == "__main__":
    main()
