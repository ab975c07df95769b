#!/usr/bin/env bash
# Fuzzing: each cargo-fuzz target under fuzz/ for SECONDS (default 600) with the committed corpus
# (fuzz/corpus/<target>, grown in place; new crashes land in fuzz/artifacts/<target>).
# Needs nightly and cargo-fuzz (`cargo install cargo-fuzz`). Without AddressSanitizer (`-s none`):
# the targets are safe Rust, and instrumenting for coverage alone keeps the runs fast.
# JOBS=1 (the default) fuzzes in-process, so libFuzzer's own statistics reach the output; JOBS>1 runs
# libFuzzer's job mode, whose workers write fuzz-<n>.log in fuzz/. Each target's whole output is kept in
# ${LOG_DIR:-/tmp}/fuzz-<target>.log. AT_ONCE=N fuzzes N targets at the same time (each still for SECONDS of
# wall-clock time; on a machine with fewer free cores than N, each gets fewer executions).
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
SECONDS_EACH="${1:-600}"
JOBS="${JOBS:-1}"
LOG_DIR="${LOG_DIR:-/tmp}"
PARALLEL=()
if [ "$JOBS" -gt 1 ]; then PARALLEL=(-jobs="$JOBS" -workers="$JOBS"); fi
AT_ONCE="${AT_ONCE:-1}"
TARGETS="${TARGETS:-line_protocol remote_write promql alertd_config rule_file argus_toml alert_intake block_index}"
nice -n 19 cargo +nightly fuzz build -s none -O
fuzz_one() {
    local t="$1"
    nice -n 19 cargo +nightly fuzz run -s none -O "$t" "corpus/$t" -- \
        -max_total_time="$SECONDS_EACH" "${PARALLEL[@]}" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
        >"$LOG_DIR/fuzz-$t.log" 2>&1 || echo "== $t: exit status $? (see $LOG_DIR/fuzz-$t.log)"
    echo "== $t: ${SECONDS_EACH}s"
    grep -E "^#[0-9]+.*(DONE|pulse)|Done|ERROR|panicked|SUMMARY|crash-" "$LOG_DIR/fuzz-$t.log" | tail -3 || true
}
running=0
for t in $TARGETS; do
    fuzz_one "$t" &
    running=$((running + 1))
    if [ "$running" -ge "$AT_ONCE" ]; then
        wait -n || true
        running=$((running - 1))
    fi
done
wait
