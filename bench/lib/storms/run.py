#!/usr/bin/env python3
"""Every storm of this package, replayed through alertd's shipped configuration and through the Alertmanager
baseline (alertmanager-by-host.yml), scored by score.py.

usage: python3 bench/lib/storms/run.py [--shared ../shared] [--replay PATH] [--config config/alertd.yml]
                                       [--work-dir /tmp/argus-storms] [--out FILE.json] [--only NAME,...]

Storms: SMD at rule steps of 15 s, 60 s and 300 s (smd_steps.py), NAB's server series at 60 s (nab.py), Helios'
virtual clusters with injected faults at 60 s (helios.py). --replay: `argus` (runs `argus alertd replay`) or
alertd's replay example.
"""
import argparse, json, os, subprocess, sys, time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, HERE)
from score import line, score  # noqa: E402

STORMS = {
    "smd-15s": ("smd_steps.py", "15", "smd"),
    "smd-60s": ("smd_steps.py", "60", "smd"),
    "smd-300s": ("smd_steps.py", "300", "smd"),
    "nab-60s": ("nab.py", "60", "nab"),
    "helios-60s": ("helios.py", "60", "helios"),
}


def replay(bin_, cfg, storm, out):
    cmd = [bin_, cfg, storm, out] if "examples" in bin_ else \
        [bin_, "alertd", "replay", "--config", cfg, "--input", storm, "--output", out]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"replay of {storm} through {cfg} failed: {r.stderr.strip()}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shared", default=os.path.join(REPO, "..", "shared"))
    ap.add_argument("--replay", default=os.path.join(os.environ.get("CARGO_TARGET_DIR", os.path.join(REPO, "target")),
                                                     "release", "argus"))
    ap.add_argument("--config", default=os.path.join(REPO, "config", "alertd.yml"))
    ap.add_argument("--work-dir", default="/tmp/argus-storms")
    ap.add_argument("--out")
    ap.add_argument("--only")
    a = ap.parse_args()
    os.makedirs(a.work_dir, exist_ok=True)
    configs = {"alertd": a.config, "alertmanager-by-host": os.path.join(HERE, "alertmanager-by-host.yml")}
    results = {}
    for name, (gen, step, data) in STORMS.items():
        if a.only and name not in a.only.split(","):
            continue
        storm, truth = os.path.join(a.work_dir, f"{name}.jsonl"), os.path.join(a.work_dir, f"{name}.truth.json")
        src = os.path.join(a.shared, "data", data)
        args = [os.path.join(src, d) for d in sorted(os.listdir(src)) if d.startswith("machine-")] if data == "smd" else [src]
        t = time.time()
        if not os.path.exists(storm):
            subprocess.run([sys.executable, os.path.join(HERE, gen), step, storm, truth, *args], check=True)
        results[name] = {"generate_s": round(time.time() - t, 1)}
        for cname, cfg in configs.items():
            out = os.path.join(a.work_dir, f"{name}.{cname}.out.jsonl")
            t = time.time()
            replay(a.replay, cfg, storm, out)
            s = score(storm, out, truth)
            s["replay_s"] = round(time.time() - t, 1)
            results[name][cname] = s
            print(f"{name:11} {cname:21} {line(s)}", flush=True)
    if a.out:
        with open(a.out, "w") as f:
            json.dump({"command": "python3 bench/lib/storms/run.py " + " ".join(sys.argv[1:]), "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
