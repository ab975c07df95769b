#!/usr/bin/env bash
# Fuzzing: each cargo-fuzz target under fuzz/ for SECONDS (default 600) with the committed corpus
# (fuzz/corpus/<target>, grown in place; new crashes land in fuzz/artifacts/<target>).
# Needs nightly and cargo-fuzz (`cargo install cargo-fuzz`). Without AddressSanitizer (`-s none`):
# the targets are safe Rust, and instrumenting for coverage alone keeps the runs fast.
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
SECONDS_EACH="${1:-600}"
JOBS="${JOBS:-1}"
TARGETS="${TARGETS:-line_protocol remote_write promql alertd_config rule_file argus_toml alert_intake}"
nice -n 19 cargo +nightly fuzz build -s none -O
for t in $TARGETS; do
    echo "== $t: ${SECONDS_EACH}s"
    nice -n 19 cargo +nightly fuzz run -s none -O "$t" "corpus/$t" -- \
        -max_total_time="$SECONDS_EACH" -jobs="$JOBS" -workers="$JOBS" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
        2>&1 | grep -E "^#[0-9]+.*(DONE|pulse)|Done|ERROR|panicked|SUMMARY|crash-" | tail -3
done
