#!/usr/bin/env bash
# On a machine with an NVIDIA GPU and driver: run the NVML backend against the real driver, record
# its readings as a fake-backend fixture, and print one collection of the gpu source as line protocol.
# Usage: scripts/record-nvml-fixture.sh [OUT_DIR]   (default: collector/tests/fixtures/gpu/recorded)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-collector/tests/fixtures/gpu/recorded}
mkdir -p "$out"
nvidia-smi -q > "$out/nvidia-smi-q.txt" || true
cargo run -q --release -p argus-collector --example nvml_snapshot > "$out/nvml.json"
cat > "$out/collector.toml" <<TOML
[collector]
[collector.labels]
host = "recorded"
[collector.host]
enabled = false
[collector.disk]
enabled = false
[collector.net]
enabled = false
[collector.events]
enabled = false
[collector.gpu]
dcgm_names = true
TOML
cargo run -q --release -- collect --once --format lp --config "$out/collector.toml" > "$out/collect-once.lp"
echo "recorded: $(ls "$out")"
grep -c . "$out/collect-once.lp"
