#!/usr/bin/env python3
"""How much a univariate forecaster can gain over naive at +15 minutes on the two forecast series.

`argus eval forecast` scores the last 20 % of a `timestamp,value` series with a rolling origin. This script
asks what that part leaves to win, using only what a univariate model may use (the series' own past and
the time of day / week), fitted on the first 80 % as the eval's models are:

1. Linear predictability: correlation of the next 15-minute change with past changes, and an ordinary
   least-squares forecast of the change from 9 past changes (MAE against naive's).
2. The ±8 % share at +15 min: naive's misses split into those after a calm 15 minutes (no move over 8 %)
   and those after a move. After a calm stretch, a forecaster beats naive only by announcing a > 8 % move
   before it starts, so a gradient-boosted classifier (14 lagged changes, the level, minute of day,
   weekday; fitted on the first 80 %) is asked to find such moves in the scored part. If it cannot, the
   misses after calm stretches bound the share any forecaster reaches, even one perfect everywhere else.
3. With `--helios-vcs DIR`: the same classifier on Helios with the per-VC series behind it added (running
   and pending jobs and GPUs, idle GPUs, quota: level, 15- and 60-minute changes), to see whether the
   richer inputs announce the steps.

    pip install numpy scikit-learn
    python3 bench/forecast_headroom.py --data /work/shared/data/forecast \
        --helios-vcs /work/shared/data/helios/earth_vcs

Needs numpy and scikit-learn (not standard library, unlike most bench scripts).
"""

import argparse
import csv
import datetime as dt
import os

import numpy as np
from sklearn.ensemble import HistGradientBoostingClassifier

H = 15
LAGS = [1, 2, 3, 5, 10, 15, 20, 30, 45, 60, 90, 120, 180, 240]


def load(path):
    with open(path) as f:
        rows = list(csv.reader(f))[1:]
    return np.array([float(r[1]) for r in rows]), [dt.datetime.fromisoformat(r[0]) for r in rows]


def vc_features(vc_dir, t, n):
    """Per-VC level and 15/60-minute changes of each count, for origins `t`; checks the VCs sum to the series."""
    cols = ("running_job_num", "pending_job_num", "running_gpu_num", "pending_gpu_num", "idle_gpu_num",
            "total_gpu_num")
    feats, demand = [], np.zeros(n)
    for name in sorted(os.listdir(vc_dir)):
        a = np.genfromtxt(os.path.join(vc_dir, name), delimiter=",", names=True, dtype=None, encoding=None)
        demand += a["running_gpu_num"] + a["pending_gpu_num"]
        for c in cols:
            x = a[c].astype(float)
            feats += [x[t], x[t] - x[t - 15], x[t] - x[t - 60]]
    return feats, demand


def announce(xs, cls, tr, te):
    model = HistGradientBoostingClassifier(max_iter=300, learning_rate=0.05, random_state=0).fit(xs[tr], cls[tr])
    pred = model.predict(xs[te])
    announced = pred > 0
    return announced, announced & (pred == cls[te])


def analyse(path, vc_dir=None):
    y, ts = load(path)
    n = len(y)
    start = int(n * 0.8)
    t = np.arange(max(LAGS), n - H)
    scored = t >= start - 1
    fitted = t + H < start
    fut = y[t + H] - y[t]
    nonzero = y[t + H] != 0

    print(f"## {os.path.basename(path)}: {n} points, {scored.sum()} scored origins")
    changes = {k: y[t] - y[t - k] for k in (1, 2, 5, 10, 15, 30, 60, 120, 240)}
    corr = " ".join(f"{k} min {np.corrcoef(c[scored], fut[scored])[0, 1]:+.2f}" for k, c in changes.items())
    print(f"- correlation of the next 15-minute change with the last k minutes' change: {corr}")
    x = np.column_stack(list(changes.values()) + [np.ones(len(t))])
    beta, *_ = np.linalg.lstsq(x[fitted], fut[fitted], rcond=None)
    mae_ols = np.mean(np.abs(fut[scored] - x[scored] @ beta))
    mae_naive = np.mean(np.abs(fut[scored]))
    print(f"- +15 min MAE: least squares on 9 past changes {mae_ols:.3f}, naive {mae_naive:.3f}: "
          f"ratio {mae_ols / mae_naive:.3f}")

    miss = (np.abs(fut) > 0.08 * np.abs(y[t + H])) & nonzero
    calm = np.abs(y[t] - y[t - 15]) <= 0.08 * np.abs(y[t])
    s = scored & nonzero
    print(f"- naive within ±8 % at +15 min: {100 * (1 - miss[s].mean()):.1f} % "
          f"({s.sum()} origins with a non-zero actual)")
    print(f"- origins after a calm 15 minutes: {100 * calm[s].mean():.1f} %; naive misses there: "
          f"{100 * (miss & calm)[s].mean():.1f} % of all origins ({100 * (miss & calm)[s].sum() / miss[s].sum():.0f} % "
          f"of its misses)")

    level = np.maximum(np.abs(y[t]), 1.0)
    feats = [(y[t] - y[t - k]) / level for k in LAGS]
    feats += [y[t], [d.hour * 60 + d.minute for d in (ts[i] for i in t)], [ts[i].weekday() for i in t]]
    xs = np.column_stack(feats)
    up = fut > 0.08 * np.abs(y[t + H])
    down = -fut > 0.08 * np.abs(y[t + H])
    cls = np.where(up, 2, np.where(down, 1, 0))
    tr = fitted & calm & nonzero
    te = s & calm
    announced, right = announce(xs, cls, tr, te)
    print(f"- after calm stretches, a classifier fitted on the first 80 % announces a > 8 % move at "
          f"{announced.sum()} of {te.sum()} scored origins, rightly at {right.sum()} "
          f"(actual moves: {(cls[te] > 0).sum()})")
    # An upper bound: wrong announcements, which would cost points naive gets right, are not charged.
    bound = 1 - ((miss & calm)[s].sum() - right.sum()) / s.sum()
    print(f"- bound on the ±8 % share for a forecaster perfect after every move and as good as this "
          f"classifier after calm stretches: {100 * bound:.1f} %")
    if vc_dir:
        extra, demand = vc_features(vc_dir, t, n)
        same = np.array_equal(demand, y)
        announced, right = announce(np.column_stack(feats + extra), cls, tr, te)
        print(f"- with the per-VC series of {vc_dir} (their demand sums to this series: {same}), the classifier "
              f"announces a > 8 % move at {announced.sum()} calm origins, rightly at {right.sum()}")
    print()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default="/work/shared/data/forecast", help="folder of timestamp,value CSVs")
    ap.add_argument("--helios-vcs", help="folder of the per-VC CSVs behind the Helios series")
    args = ap.parse_args()
    for name in sorted(os.listdir(args.data)):
        if name.endswith(".csv"):
            analyse(os.path.join(args.data, name), args.helios_vcs if name.startswith("helios") else None)


if __name__ == "__main__":
    main()
