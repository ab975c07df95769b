#!/usr/bin/env bash
# The collector's sink on one core (issue 4): samples per CPU-second of the thread running the sink
# (batching, encoding, compression, HTTP) for each format, 3 runs each, alternated. See
# collector/examples/sink_throughput.rs for what is measured.
#   bench/collector_sink.sh [SAMPLES]      (default 2000000)
set -euo pipefail
cd "$(dirname "$0")/.."
SAMPLES="${1:-2000000}"
nice -n 10 cargo build --release -p argus-collector --example sink_throughput
BIN="${CARGO_TARGET_DIR:-target}/release/examples/sink_throughput"
for i in 1 2 3; do
  "$BIN" remote_write "$SAMPLES"
  "$BIN" line_protocol "$SAMPLES"
done
