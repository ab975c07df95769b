#!/usr/bin/env bash
# False pages and caught faults (docs/eval-pages.md): the shared GenAI, Helios and SMD telemetry with
# synthetic faults (seed 1) through the default analyzer and config/alertd.yml in virtual time.
#   bench/pages.sh [DATA_DIR]      (default ../shared/data; writes bench/results/pages-<date>.json)
# Extra arguments after the folder go to `argus eval pages` (e.g. --days 7 for a shorter subset).
set -euo pipefail
cd "$(dirname "$0")/.."
DATA="${1:-../shared/data}"
shift || true
TARGET="${CARGO_TARGET_DIR:-target}"
OUT="bench/results/pages-$(date -u +%Y-%m-%d).json"
cargo build --release --bin argus
for need in alibaba/cluster-trace-v2026-GenAI/pod_gpu_duty_cycle_anon.tar.gz helios/earth_vcs smd; do
  [ -e "$DATA/$need" ] || { echo "bench/pages.sh: $DATA/$need is missing" >&2; exit 1; }
done
/usr/bin/time -v "$TARGET/release/argus" eval pages --data "$DATA" --json "$OUT" "$@" 2> >(grep -E "Elapsed|Maximum resident" >&2)
echo "wrote $OUT"
