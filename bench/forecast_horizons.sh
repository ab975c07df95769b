#!/usr/bin/env bash
# `argus eval forecast --horizon 15m,1h,6h` on the two shared forecast series (Helios Earth GPU demand and
# Philly active nodes, one point a minute): every model, the gradient-boosted one included, fitted on the
# first 80 % and scored on the last 20 %, the per-series choice made at each horizon on the first 80 % only.
# Writes bench/results/forecast_horizons-2026-12-07.json (or $OUT), held to: at +1 h, the selected
# forecaster's MAE at most 0.80x naive's on average over the two series and at most 1.0x on each.
#
#   bench/forecast_horizons.sh            # ARGUS=path/to/argus to use a built binary (default: cargo build)
#   PARALLEL=1 bench/forecast_horizons.sh # both series at once (each run's seconds then share the cores)
#   HORIZONS=15m,1h bench/forecast_horizons.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
shared=${SHARED:-$root/../shared}
out=${OUT:-$root/bench/results/forecast_horizons-2026-12-07.json}
horizons=${HORIZONS:-15m,1h,6h}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if [ -z "${ARGUS:-}" ]; then
  (cd "$root" && cargo build --release -q -p argus)
  ARGUS=${CARGO_TARGET_DIR:-$root/target}/release/argus
fi

series=(helios:helios_earth_8vc_gpu_demand_1m.csv philly:philly_active_nodes_1m.csv)
eval_one() { # name file
  local start=$SECONDS
  "$ARGUS" eval forecast --input "$shared/data/forecast/$2" --horizon "$horizons" --json "$work/$1.json" \
    > "$work/$1.txt"
  echo $((SECONDS - start)) > "$work/$1.seconds"
}
for s in "${series[@]}"; do
  if [ -n "${PARALLEL:-}" ]; then eval_one "${s%%:*}" "${s#*:}" & else eval_one "${s%%:*}" "${s#*:}"; fi
done
wait

commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
if ! git -C "$root" diff --quiet HEAD 2>/dev/null; then commit="$commit with uncommitted changes"; fi
python3 - "$work" "$out" "$horizons" "$commit" "${MACHINE:-$(nproc) CPUs}" "${PARALLEL:+both series at once}" \
  "${series[@]}" <<'EOF'
import json, os, sys
work, out, horizons, commit, machine, parallel = sys.argv[1:7]
names = [s.split(":")[0] for s in sys.argv[7:]]
labels = horizons.split(",")
runs = {}
for n in names:
    doc = json.load(open(os.path.join(work, n + ".json")))
    per = doc["horizons"] if "horizons" in doc else {labels[0]: doc}
    runs[n] = {"seconds": int(open(os.path.join(work, n + ".seconds")).read()),
               "input": "../shared/data/forecast/" + next(s.split(":")[1] for s in sys.argv[7:] if s.startswith(n + ":")),
               "horizons": per}


def fmt(v):
    return f"{v:.3f}"


figures = {}
goal_h = "1h"
if goal_h in labels:
    ratios = {n: runs[n]["horizons"][goal_h]["models"]["selected"]["rel_mae"] for n in names}
    mean = sum(ratios.values()) / len(ratios)
    met = mean <= 0.80 and all(r <= 1.0 for r in ratios.values())
    figures["**selected MAE / naive's at +1 h, mean over the series**"] = f"**{fmt(mean)}**"
    verdict = ("met" if met else "not met") + f": mean {fmt(mean)} (goal ≤ 0.80); " + ", ".join(
        f"{n} {fmt(r)}" for n, r in ratios.items()) + " (goal ≤ 1.0 each)"
else:
    verdict = "not measured: no 1h horizon in this run"
for n in names:
    for h in labels:
        r = runs[n]["horizons"][h]
        m = r["models"]
        best = min((k for k in m if k != "selected"), key=lambda k: m[k]["rel_mae"])
        figures[f"{n}, +{h}: selected (MAE / naive's; band coverage)"] = (
            f"{r['selected_model']} ({fmt(m['selected']['rel_mae'])}; {100 * m['selected']['coverage_80']:.1f} %)")
        figures[f"{n}, +{h}: gbdt; best single model"] = (
            f"{fmt(m['gbdt']['rel_mae'])}; {best} {fmt(m[best]['rel_mae'])}" if "gbdt" in m else
            f"–; {best} {fmt(m[best]['rel_mae'])}")
    figures[f"{n}: seconds for every horizon"] = runs[n]["seconds"]
record = {
    "title": "Analyzer: forecasting at 15 min, 1 h and 6 h",
    "area": "Analyzer",
    "what": "`argus eval forecast --horizon " + horizons + "` on the Helios GPU demand and Philly active-node "
            "series (1-minute steps): every model, the gradient-boosted `gbdt` included, fitted on the first 80 % "
            "and scored on the last 20 % with a rolling origin; the per-series choice made at each horizon on the "
            "first 80 % only. MAE / naive's is averaged over the horizon's steps (1 to 60 at +1 h).",
    "command": "bench/forecast_horizons.sh",
    "goal": "at +1 h, the selected forecaster's MAE ≤ 0.80× naive's on average over Helios and Philly and "
            "≤ 1.0× on each",
    "verdict": verdict,
    "date": "2026-12-07",
    "commit": commit,
    "machine": machine + ("; " + parallel if parallel else ""),
    "figures": figures,
    "series": runs,
}
with open(out, "w") as f:
    json.dump(record, f, indent=2, ensure_ascii=False)
    f.write("\n")
print(out)
print(verdict)
EOF
