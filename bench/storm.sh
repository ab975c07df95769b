#!/usr/bin/env bash
# alertd storm evaluation (issue 7): the alert stream a static-threshold rule set sends on the labelled
# SMD servers, replayed through config/alertd.yml in virtual time, scored against the labelled incidents.
#   bench/storm.sh [SHARED_DIR]      (default ../shared; results in $OUT, default /tmp/argus-storm)
set -euo pipefail
cd "$(dirname "$0")/.."
SHARED="${1:-../shared}"
OUT="${OUT:-/tmp/argus-storm}"
TARGET="${CARGO_TARGET_DIR:-target}"
mkdir -p "$OUT"
cargo build --release --bin argus
python3 "$SHARED/tools/make_storm.py" "$OUT/storm.jsonl" "$SHARED"/data/smd/machine-*
"$TARGET/release/argus" alertd replay --config config/alertd.yml --input "$OUT/storm.jsonl" --output "$OUT/out.jsonl"
python3 "$SHARED/tools/score_storm.py" "$OUT/storm.jsonl" "$OUT/out.jsonl" "$SHARED"/data/smd/machine-*
