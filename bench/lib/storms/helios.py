#!/usr/bin/env python3
"""A storm from Helios' GPU cluster (SenseTime Earth, per virtual cluster, every minute of May 2020), with
injected faults as its ground truth.

usage: helios.py STEP OUT.jsonl TRUTH.json HELIOS_DIR      (HELIOS_DIR: shared/data/helios)

Each virtual cluster (earth_vcs/<vc>.csv) is a host; every column that varies (job, GPU-job and GPU counts,
running / pending / idle, by job size, gpu_utilization) is a metric. Training: May 1-7 (the threshold is each
metric's 99.5th percentile there, as make_storm.py); test: May 8-31, shifted to start at BASE.

Faults, fixed by SEED before anything was replayed: FAULTS_PER_VC per virtual cluster, at uniformly drawn
minutes of the test period at least 12 hours apart, each lasting 10-45 minutes: a node of 8 GPUs (a quarter
of the quota when that is more) fails, its jobs are requeued: running GPUs and GPU jobs drop, pending GPUs,
jobs and GPU jobs rise by as much, and idle GPUs stay (the failed node is not idle). Each fault is one
incident of the ground truth; it is alertable only when some rule's episode starts inside it.
"""
import csv, os, random, sys
from datetime import datetime, timezone
from rule import BASE, Series, evaluate, quantile, write, write_truth

SEED = 20261207
FAULTS_PER_VC = 6
TRAIN_DAYS = 7


def ts(s):
    return datetime.strptime(s, "%Y-%m-%d %H:%M:%S").replace(tzinfo=timezone.utc).timestamp()


def faults(n_minutes, rng):
    out = []
    while len(out) < FAULTS_PER_VC:
        start = rng.randrange(60, n_minutes - 60)
        if all(abs(start - s) >= 720 for s, _ in out):
            out.append((start, rng.randint(10, 45)))
    return sorted(out)


def inject(rows, start, length):
    for r in rows[start:start + length]:
        total = r["total_gpu_num"]
        k = min(max(8.0, total / 4), r["running_gpu_num"])
        jobs = min(max(1.0, k / 8), r["running_gpujob_num"])
        for col, d in (("running_gpu_num", -k), ("running_gpu_num_noless_8", -k), ("pending_gpu_num", k),
                       ("pending_gpu_num_noless_8", k), ("running_gpujob_num", -jobs), ("running_job_num", -jobs),
                       ("running_job_num_noless_8", -jobs), ("pending_gpujob_num", jobs), ("pending_job_num", jobs),
                       ("pending_job_num_noless_8", jobs)):
            r[col] = max(0.0, r[col] + d)
        r["gpu_utilization"] = r["running_gpu_num"] / total if total else 0.0


def main():
    step, out, truth, helios = float(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
    rng = random.Random(SEED)
    series, incidents = [], []
    vdir = os.path.join(helios, "earth_vcs")
    for name in sorted(os.listdir(vdir)):
        if not name.endswith(".csv"):
            continue
        with open(os.path.join(vdir, name)) as f:
            rows = [{k: (ts(v) if k == "time" else float(v)) for k, v in r.items()} for r in csv.DictReader(f)]
        cut = TRAIN_DAYS * 1440
        train, test = rows[:cut], rows[cut:]
        host = name[:-4]
        shift = BASE - test[0]["time"]
        for start, length in faults(len(test), rng):
            inject(test, start, length)
            incidents.append((host, test[start]["time"] + shift, test[start + length - 1]["time"] + shift))
        times = [r["time"] + shift for r in test]
        for col in rows[0]:
            if col == "time" or col.startswith("total_gpu_num"):
                continue
            vals = [r[col] for r in train]
            if min(vals) == max(vals):
                continue
            series.append(Series(host, col, times, [r[col] for r in test], quantile(vals, 0.995)))
    events, episodes = evaluate(series, step, cluster="helios")
    write(out, events)
    write_truth(truth, incidents, f"faults injected with seed {SEED}, rule every {step:g} s")
    print(f"helios step {step:g}s: {len(series)} series, {episodes} firing episodes, {len(incidents)} faults", file=sys.stderr)


if __name__ == "__main__":
    main()
