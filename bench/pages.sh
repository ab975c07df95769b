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
# The run's commit (marked when the working tree differs from it) and machine, for docs/performance.md.
COMMIT="$(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
git diff --quiet HEAD 2>/dev/null || COMMIT="$COMMIT + working tree"
python3 - "$OUT" "$COMMIT" "$(nproc)" "$*" <<'PY'
import json, sys
path, commit, cpus, extra = sys.argv[1:5]
with open(path, encoding="utf-8") as f:
    d = json.load(f)
d["commit"] = commit
d["machine"] = {"node": "the 2-vCPU development VM" if cpus == "2" else "this machine", "cpus": int(cpus)}
d["command"] = ("bench/pages.sh " + extra).strip()
with open(path, "w", encoding="utf-8") as f:
    f.write(json.dumps(d, indent=2) + "\n")
PY
echo "wrote $OUT"
