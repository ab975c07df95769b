#!/usr/bin/env bash
# alertd storm evaluation (issue 7): the alert stream a static-threshold rule set sends on the labelled
# SMD servers, replayed through config/alertd.yml in virtual time, scored against the labelled incidents.
#   bench/storm.sh [SHARED_DIR]      (default ../shared; results in $OUT, default /tmp/argus-storm)
# With LOO=1 it then chooses the storm parameters leave-one-machine-out (bench/storm_loo.py); with STORMS=1 it
# replays the further storms of bench/lib/storms (NAB, Helios with injected faults, SMD at 15 s / 5 m rule
# steps) through config/alertd.yml and the Alertmanager-by-host baseline.
set -euo pipefail
cd "$(dirname "$0")/.."
SHARED="${1:-../shared}"
OUT="${OUT:-/tmp/argus-storm}"
TARGET="${CARGO_TARGET_DIR:-target}"
mkdir -p "$OUT"
rc=0
cargo build --release --bin argus
python3 bench/lib/make_storm.py "$OUT/storm.jsonl" "$SHARED"/data/smd/machine-*
"$TARGET/release/argus" alertd replay --config config/alertd.yml --input "$OUT/storm.jsonl" --output "$OUT/out.jsonl"
python3 bench/lib/score_storm.py "$OUT/storm.jsonl" "$OUT/out.jsonl" "$SHARED"/data/smd/machine-* || rc=$?
if [ "${LOO:-0}" = 1 ]; then
  python3 bench/storm_loo.py --shared "$SHARED" --replay "$TARGET/release/argus" --work-dir "$OUT/loo" --out "$OUT/storm_loo.json"
fi
if [ "${STORMS:-0}" = 1 ]; then
  python3 bench/lib/storms/run.py --shared "$SHARED" --replay "$TARGET/release/argus" --work-dir "$OUT/storms" --out "$OUT/storms.json"
fi
exit "$rc"
