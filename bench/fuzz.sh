#!/usr/bin/env bash
# Fuzzing: each cargo-fuzz target under fuzz/ for SECONDS (default 600).
#
# Corpora. Git holds only the named seeds (fuzz/seeds/<target>) and every input that ever crashed a
# target (fuzz/regressions/<target>); tests/it/fuzz_corpus.rs replays both. The corpus a run grows lives
# outside the repository, in ${FUZZ_CORPUS:-/var/cache/argus/fuzz-corpus}/<target>: created and filled
# from the seeds and regressions on first use, kept between runs, and the only directory libFuzzer
# writes to. The seeds and regressions are passed after it as read-only corpus directories, so a seed
# added to git later reaches an existing cache too. CMIN=1 minimises each target's cache after its run
# (`cargo fuzz cmin`, in place), keeping it small for the next one. A plain `cargo +nightly fuzz run T`
# in fuzz/ grows fuzz/corpus/T instead, which git ignores. The corpora minimised by the 10-minute runs of
# 2026-12-01 (21,734 inputs, then block_index's 1,377) are no longer in git but in its history; to start
# a new cache from them: git archive 1d08ea8b fuzz/corpus | tar -x --strip-components=2 -C "$FUZZ_CORPUS"
#
# Findings. New crashes land in fuzz/artifacts/<target>. Once fixed, copy the input to
# fuzz/regressions/<target>/<what-it-broke> so the test replays it from then on; an input of the cache
# that reaches code no seed reaches can likewise become a named seed in fuzz/seeds/<target>.
#
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
CORPUS="${FUZZ_CORPUS:-/var/cache/argus/fuzz-corpus}"
CMIN="${CMIN:-0}"
PARALLEL=()
if [ "$JOBS" -gt 1 ]; then PARALLEL=(-jobs="$JOBS" -workers="$JOBS"); fi
AT_ONCE="${AT_ONCE:-1}"
TARGETS="${TARGETS:-line_protocol remote_write promql alertd_config rule_file argus_toml alert_intake block_index}"
nice -n 19 cargo +nightly fuzz build -s none -O
# The target's committed inputs: its seeds, and its regressions when it has any.
committed() {
    echo "seeds/$1"
    if [ -d "regressions/$1" ]; then echo "regressions/$1"; fi
}
fuzz_one() {
    local t="$1" dir="$CORPUS/$1"
    local inputs
    mapfile -t inputs < <(committed "$t")
    if [ ! -d "$dir" ] || [ -z "$(ls -A "$dir")" ]; then
        mkdir -p "$dir"
        for d in "${inputs[@]}"; do cp "$d"/* "$dir"/; done
        echo "== $t: new corpus $dir, from ${inputs[*]}"
    fi
    nice -n 19 cargo +nightly fuzz run -s none -O "$t" "$dir" "${inputs[@]}" -- \
        -max_total_time="$SECONDS_EACH" "${PARALLEL[@]}" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
        >"$LOG_DIR/fuzz-$t.log" 2>&1 || echo "== $t: exit status $? (see $LOG_DIR/fuzz-$t.log)"
    echo "== $t: ${SECONDS_EACH}s"
    grep -E "^#[0-9]+.*(DONE|pulse)|Done|ERROR|panicked|SUMMARY|crash-" "$LOG_DIR/fuzz-$t.log" | tail -3 || true
    if [ "$CMIN" = 1 ]; then
        local before
        before=$(ls "$dir" | wc -l)
        nice -n 19 cargo +nightly fuzz cmin -s none -O "$t" "$dir" -- -timeout=10 -rss_limit_mb=2048 \
            >>"$LOG_DIR/fuzz-$t.log" 2>&1 || echo "== $t: cmin exit status $? (see $LOG_DIR/fuzz-$t.log)"
        echo "== $t: corpus minimised, $before -> $(ls "$dir" | wc -l) inputs"
    fi
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
