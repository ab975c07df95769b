#!/usr/bin/env python3
"""alertd storm parameters, chosen leave-one-machine-out on the shared SMD storm.

usage: python3 bench/storm_loo.py [--shared ../shared] [--replay PATH] [--work-dir /tmp/argus-storm-loo]
                                  [--out bench/results/storm_loo-2026-12-07b.json] [--jobs 2]

For each of the four SMD machines (the fold's held-out machine):
  1. the training storm is make_storm.py over the other three machines;
  2. every parameter set of GRID (below), written into a copy of config/alertd.yml, is scored on it:
     replayed in virtual time (`argus alertd replay`, or alertd's `replay` example: --replay) and scored
     with score_storm.py's rules;
  3. the selection rule (SELECTION) picks one set from the training scores alone;
  4. the chosen set is scored on the held-out machine's storm (make_storm.py over that machine alone).
The shipped defaults follow from the four fold choices by DEFAULTS_RULE, fixed before any held-out score
was seen. Nothing is fitted on all four machines at once.

Speed: alertd keeps incidents, backoff and flap state per host (the correlation labels of this storm are
its `host` label alone), so a three-machine storm's notifications are the union of its machines' own. Each
set is therefore replayed once per machine and a training score is the sum of its three machines' counts
(episodes, notifications, alertable and notified incidents, covering notifications; the median delay over
their incidents' delays). For each fold's chosen set the real three-machine training storm is replayed too
and the two scores are checked to be equal (`union_check` in the output); the script stops if they differ.
"""
import argparse, itertools, json, os, re, subprocess, sys, time
from concurrent.futures import ThreadPoolExecutor
from statistics import median

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "lib", "storms"))
from rule import write_truth  # noqa: E402
from score import score  # noqa: E402
import smd_steps  # noqa: E402

# The grid: the shipped values (2026-12-02) and neighbours on both sides, in each knob's own units, plus
# two longer flap memories (an alert that fires every few hours is "chronic": with a 6 h window and
# settle it keeps riding instead of leading a burst) and longer correlation windows (a host's intermittent
# alerts stay one incident, whose updates the backoff rations, instead of each opening a new incident).
# The recurrence window (2026-12-07b): off, as before, then either side of the principled default, the
# shipped backoff window (2h): the backoff counts a place's notifications over that window, so a
# recurrence closed within it is one the backoff can ration; a longer window links more but rations no
# more once the earlier page has left the backoff window.
GRID = {  # each knob's values from the more conservative (more notifications) to the less
    "window": ["10m", "30m", "1h"],
    "backoff_window": ["1h", "2h", "3h"],
    "backoff_step": [3, 2],
    "burst_window": ["3m", "2m"],
    "update_interval": ["5m", "10m"],
    "flap": ["1h/5/1h", "6h/6/6h", "24h/8/12h"],  # window/threshold/settle
    "recurrence_window": ["0s", "1h", "2h", "4h"],
}
SELECTION = ("maximise training reduction subject to training recall >= 95 % and training median delay <= "
             "2.0 min (1 minute after the raw alerts' own: a raw alert's first POST comes one 60 s step after "
             "its startsAt); reductions within 0.1 points tie, and a tie goes to the higher training recall, then "
             "the higher training precision, then the more conservative set (GRID order, earlier values of each "
             "knob first). When no set meets the floor: the highest training recall, then the highest reduction")
DEFAULTS_RULE = ("the parameter set chosen by the most folds; when no set is chosen by more folds than every other, "
                 "each knob's median over the four fold choices in GRID order, the two middle values resolved "
                 "towards the earlier (more conservative) one")
RECALL_FLOOR, DELAY_CEIL, TIE = 95.0, 2.0, 0.1


def write_config(base, p, path):
    """config/alertd.yml with the knobs of `p` (nothing else changed)."""
    fw, ft, fs = p["flap"].split("/")
    subs = [("correlation", "window", p["window"]), ("correlation", "burst_window", p["burst_window"]),
            ("correlation", "backoff_window", p["backoff_window"]), ("correlation", "backoff_step", p["backoff_step"]),
            ("correlation", "update_interval", p["update_interval"]),
            ("correlation", "recurrence_window", p["recurrence_window"]), ("flap", "window", fw),
            ("flap", "threshold", ft), ("flap", "settle", fs)]
    text = base
    for section, key, value in subs:
        m = re.search(rf"\n  {section}:\n((?:    .*\n|\s*#.*\n)*)", text)
        if not m:
            sys.exit(f"storm_loo: config/alertd.yml: no argus.{section} block")
        block, n = re.subn(rf"(?m)^(    {key}: )\S+", rf"\g<1>{value}", m[1])
        if n != 1:
            sys.exit(f"storm_loo: config/alertd.yml: expected one `{key}:` in argus.{section}, found {n}")
        text = text[:m.start(1)] + block + text[m.end(1):]
    with open(path, "w") as f:
        f.write(text)


def replay(replay_bin, cfg, storm, out):
    cmd = [replay_bin, cfg, storm, out] if "examples" in replay_bin else \
        [replay_bin, "alertd", "replay", "--config", cfg, "--input", storm, "--output", out]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"replay {cfg} {storm}: {r.stderr.strip()}")


def total(scores):
    """One score for the union of machines' storms, from each machine's own."""
    ep = sum(s["episodes"] for s in scores)
    notes = sum(s["notifications"] for s in scores)
    al = sum(s["alertable"] for s in scores)
    hit = sum(s["notified"] for s in scores)
    cov = sum(s["covering"] for s in scores)
    delays = [d for s in scores for d in s["delays_min"]]
    return {"episodes": ep, "notifications": notes, "reduction": round(100 * (1 - notes / ep), 1) if ep else 0.0,
            "alertable": al, "notified": hit, "recall": round(100 * hit / al, 1) if al else 100.0,
            "median_delay_min": round(median(delays), 2) if delays else None,
            "precision": round(100 * cov / notes, 1) if notes else 0.0}


def brief(s):
    return {k: s[k] for k in ("episodes", "notifications", "reduction", "alertable", "notified", "recall",
                              "median_delay_min", "precision")}


def order(p):
    """Position of each knob's value in GRID: smaller is more conservative (more notifications)."""
    return tuple(GRID[k].index(p[k]) for k in GRID)


def select(scored):
    ok = [(p, s) for p, s in scored if s["recall"] >= RECALL_FLOOR and (s["median_delay_min"] or 1e9) <= DELAY_CEIL]
    if not ok:
        best = max(scored, key=lambda ps: (ps[1]["recall"], ps[1]["reduction"]))
        return best[0], "no set met the recall floor on the training machines"
    top = max(s["reduction"] for _, s in ok)
    tied = [(p, s) for p, s in ok if s["reduction"] >= top - TIE]
    best = min(tied, key=lambda ps: (-ps[1]["recall"], -ps[1]["precision"], order(ps[0])))
    return best[0], f"{len(ok)} sets met the floor, {len(tied)} tied at the top"


def defaults(choices):
    keyed = [json.dumps(c, sort_keys=True) for c in choices]
    counts = {k: keyed.count(k) for k in keyed}
    top = max(counts.values())
    winners = [k for k, n in counts.items() if n == top]
    if len(winners) == 1:
        return json.loads(winners[0]), f"chosen by {top} of {len(choices)} folds"
    out = {}
    for k in GRID:
        vals = sorted(GRID[k].index(c[k]) for c in choices)
        out[k] = GRID[k][vals[(len(vals) - 1) // 2]]
    return out, "no set chosen by more folds than every other: each knob's median, the middle pair to the conservative side"


def main():
    ap = argparse.ArgumentParser()
    repo = os.path.dirname(HERE)
    ap.add_argument("--shared", default=os.path.join(repo, "..", "shared"))
    ap.add_argument("--replay", default=os.path.join(os.environ.get("CARGO_TARGET_DIR", os.path.join(repo, "target")),
                                                     "release", "argus"))
    ap.add_argument("--work-dir", default="/tmp/argus-storm-loo")
    ap.add_argument("--out", default=os.path.join(HERE, "results", "storm_loo-2026-12-07b.json"))
    ap.add_argument("--jobs", type=int, default=2)
    a = ap.parse_args()
    t_start = time.time()
    make_py = os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib", "make_storm.py")
    smd = os.path.join(a.shared, "data", "smd")
    machines = sorted(d for d in os.listdir(smd) if d.startswith("machine-"))
    base = open(os.path.join(repo, "config", "alertd.yml")).read()
    os.makedirs(a.work_dir, exist_ok=True)
    grid = [dict(zip(GRID, vals)) for vals in itertools.product(*GRID.values())]
    cfgs = []
    for i, p in enumerate(grid):
        cfgs.append(os.path.join(a.work_dir, f"cfg-{i:03d}.yml"))
        write_config(base, p, cfgs[i])

    def storm(name, members):
        path, truth = os.path.join(a.work_dir, f"{name}.jsonl"), os.path.join(a.work_dir, f"{name}.truth.json")
        if not (os.path.exists(path) and os.path.exists(truth)):
            subprocess.run([sys.executable, make_py, path, *[os.path.join(smd, m) for m in members]],
                           check=True, capture_output=True)
            write_truth(truth, [i for m in members for i in smd_steps.machine(os.path.join(smd, m))[1]],
                        "SMD label runs (score_storm.py's incidents)")
        return path, truth

    storms = {m: storm(m, [m]) for m in machines}

    def run(i, m, path=None, truth=None):
        path, truth = (path, truth) if path else storms[m]
        out = os.path.join(a.work_dir, f"out-{os.path.basename(path)}-{i:03d}")
        replay(a.replay, cfgs[i], path, out)
        s = score(path, out, truth)
        os.remove(out)
        return s

    with ThreadPoolExecutor(a.jobs) as ex:
        jobs = {(i, m): ex.submit(run, i, m) for i in range(len(grid)) for m in machines}
        per = {k: f.result() for k, f in jobs.items()}
    print(f"scored {len(grid)} sets on {len(machines)} machines in {time.time() - t_start:.0f} s", flush=True)

    folds, choices = [], []
    for m in machines:
        train_ms = [x for x in machines if x != m]
        train = [total([per[(i, x)] for x in train_ms]) for i in range(len(grid))]
        chosen, why = select(list(zip(grid, train)))
        ci = grid.index(chosen)
        held = brief(per[(ci, m)])
        path, truth = storm("train-" + m, train_ms)
        direct = brief(run(ci, None, path, truth))
        if direct != train[ci]:
            sys.exit(f"storm_loo: fold {m}: the three-machine replay {direct} differs from the union of its machines {train[ci]}")
        folds.append({"held_out": m, "training": train_ms, "chosen": chosen, "selection_note": why,
                      "training_score": train[ci], "union_check": "equal", "held_out_score": held,
                      "all_training_scores": [{"params": p, **s} for p, s in zip(grid, train)]})
        choices.append(chosen)
        print(f"fold {m}: chosen {chosen} ({why})\n  training {train[ci]}\n  held out {held}", flush=True)

    shipped, how = defaults(choices)
    si = grid.index(shipped)
    shipped_held = {m: brief(per[(si, m)]) for m in machines}
    print(f"defaults: {shipped} ({how})")
    for m in machines:
        print(f"  defaults on {m}: {shipped_held[m]}")
    # The shipped file before this change, for comparison (not a selection input).
    before = {"window": "10m", "backoff_window": "2h", "backoff_step": 2, "burst_window": "2m",
              "update_interval": "5m", "flap": "1h/5/1h", "recurrence_window": "0s"}
    before_held = {m: brief(per[(grid.index(before), m)]) for m in machines}

    def spread(key, scores):
        xs = [s[key] for s in scores]
        return {"min": min(xs), "median": median(xs), "max": max(xs)}

    keys = ("reduction", "recall", "precision", "median_delay_min")
    held = [f["held_out_score"] for f in folds]
    result = {
        "date": "2026-12-07",
        "command": "python3 bench/storm_loo.py " + " ".join(sys.argv[1:]),
        "replay": a.replay,
        "data": "shared/data/smd/machine-{1-6,1-7,2-1,2-2} through bench/lib/make_storm.py; score_storm.py's rules "
                "(bench/lib/storms/score.py)",
        "grid": GRID,
        "selection_rule": SELECTION,
        "defaults_rule": DEFAULTS_RULE,
        "folds": folds,
        "held_out_spread": {k: spread(k, held) for k in keys},
        "defaults": shipped,
        "defaults_note": how,
        "defaults_per_machine": shipped_held,
        "defaults_per_machine_spread": {k: spread(k, list(shipped_held.values())) for k in keys},
        "previous_defaults": before,
        "previous_defaults_per_machine": before_held,
        "wall_seconds": round(time.time() - t_start, 1),
    }
    for k in keys:
        print(f"held-out {k}: {result['held_out_spread'][k]}")
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out, "w") as f:
        json.dump(result, f, indent=1)
    print(f"wrote {a.out} in {result['wall_seconds']} s")


if __name__ == "__main__":
    main()
