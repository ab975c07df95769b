#!/usr/bin/env bash
# Helios' CES (Hu et al., SC '21) and `argus simulate --demand` side by side: the peer's own run on Philly
# (shared/peers/helios-ces/run.sh, LightGBM), then Argus' reactive, ces and forecast policies on Philly and
# on each Helios Earth pool of shared/data/helios (GPU demand = running + pending GPUs, 8 GPUs a node),
# with no boot delay and with --boot 5m. Writes bench/results/ces-2026-12-07.json (or $OUT).
#
#   bench/ces.sh                     # ARGUS=path/to/argus to use a built binary (default: cargo build)
#   SKIP_PEER=1 bench/ces.sh         # Argus only (the peer needs pandas, numpy 1.x, lightgbm 3.3 from PyPI)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
shared=${SHARED:-$root/../shared}
out=${OUT:-$root/bench/results/ces-2026-12-07.json}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if [ -z "${ARGUS:-}" ]; then
  (cd "$root" && cargo build --release -q -p argus)
  ARGUS=${CARGO_TARGET_DIR:-$root/target}/release/argus
fi

# The peer's own figures.
peer="{}"
if [ -z "${SKIP_PEER:-}" ]; then
  start=$(date +%s)
  line=$(bash "$shared/peers/helios-ces/run.sh" | grep '^SUMMARY' || true)
  took=$(( $(date +%s) - start ))
  peer=$(python3 - "$line" "$took" <<'EOF'
import json, sys
f = sys.argv[1].split()[1:]
d = {k: float(v) for k, v in zip(f[::2], f[1::2])}
d["seconds"] = int(sys.argv[2])
print(json.dumps(d))
EOF
)
fi

# Helios pools as `timestamp,value` GPU demand.
pools=()
for f in "$shared"/data/helios/earth_vcs/*.csv; do
  vc=$(basename "$f" .csv)
  python3 - "$f" "$work/$vc.csv" <<'EOF'
import csv, sys
with open(sys.argv[2], "w") as out:
    out.write("timestamp,value\n")
    for r in csv.DictReader(open(sys.argv[1])):
        out.write(f"{r['time']},{int(r['running_gpu_num']) + int(r['pending_gpu_num'])}\n")
EOF
  pools+=("$vc")
done

runs="$work/runs.jsonl"
: > "$runs"
run() { # name file policy boot settings [flags...]
  local name=$1 file=$2 policy=$3 boot=$4 settings=$5
  shift 5
  local start=$SECONDS
  "$ARGUS" simulate --demand "$file" --policy "$policy" --boot "$boot" --ces-settings "$settings" \
    --json "$work/r.json" "$@" > /dev/null
  python3 - "$work/r.json" "$name" "$boot" $((SECONDS - start)) >> "$runs" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
r.update(series=sys.argv[2], boot=sys.argv[3], seconds=int(sys.argv[4]))
print(json.dumps(r))
EOF
}
for boot in 0s 5m; do
  for policy in reactive ces forecast; do
    run philly "$shared/peers/helios-ces/data/philly_node_sequence.csv" "$policy" "$boot" philly
    for vc in "${pools[@]}"; do
      run "$vc" "$work/$vc.csv" "$policy" "$boot" earth --gpus-per-node 8
    done
  done
done

python3 - "$runs" "$out" "$peer" "$("$ARGUS" --version 2>/dev/null || echo argus)" <<'EOF'
import json, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
peer = json.loads(sys.argv[3])
table = {}
for r in runs:
    table.setdefault(r["series"], {}).setdefault(r["boot"], {})[r["policy"]] = {
        k: r[k] for k in ("powered_off_node_hours", "shortfall_node_minutes", "power_ups",
                          "utilisation_of_powered", "powered_off_mean", "seconds")}
goals = {}
for s, boots in table.items():
    for b, p in boots.items():
        c, f = p.get("ces"), p.get("forecast")
        if c and f:
            goals.setdefault(s, {})[b] = {
                "forecast_off_ge_ces": f["powered_off_node_hours"] >= c["powered_off_node_hours"],
                "forecast_shortfall_le_half_ces": f["shortfall_node_minutes"] <= 0.5 * c["shortfall_node_minutes"],
            }
doc = {
    "date": "2026-12-07",
    "argus": sys.argv[4],
    "command": "bench/ces.sh",
    "peer": {"what": "shared/peers/helios-ces/run.sh (HeliosArtifact CES_Philly.py, LightGBM 3.3.5)", **peer},
    "runs": table,
    "goals": goals,
}
json.dump(doc, open(sys.argv[2], "w"), indent=2)
print(json.dumps({"peer": peer, "goals": goals}, indent=1))
for s, boots in table.items():
    for b, p in boots.items():
        for pol, r in p.items():
            print(f"{s:8} boot={b:3} {pol:9} off={r['powered_off_node_hours']:8.0f} h  short={r['shortfall_node_minutes']:7.0f} node-min  ups={r['power_ups']:4}  util={r['utilisation_of_powered']:.3f}")
EOF
