#!/usr/bin/env bash
# Runs the PromQL differential corpus (tests/it/promql_diff.rs: Prometheus 2.42 against Argus on the same
# data) and writes its report to a file, for a record under bench/results/ (docs/performance.md). Differences are the result being measured,
# so they do not fail this script; it fails only when no report came out (no Prometheus, a build error,
# a harness failure).
#
#   bench/promql_diff.sh [REPORT_FILE]      default: target/promql_diff.txt
#   PROMQL_DIFF_ONLY=rate bench/promql_diff.sh   only the queries (or areas) containing "rate"
set -euo pipefail
cd "$(dirname "$0")/.."

out=$(realpath -m "${1:-target/promql_diff.txt}")
if ! command -v prometheus >/dev/null 2>&1; then
  echo "promql_diff: prometheus is not installed (sudo scripts/install-peers.sh)" >&2
  exit 1
fi
mkdir -p "$(dirname "$out")"
rm -f "$out"
status=0
PROMQL_DIFF_REPORT="$out" cargo test --locked --test it promql_diff::promql_answers_match_prometheus \
  -- --exact --nocapture >"$out.log" 2>&1 || status=$?
if [ ! -s "$out" ]; then
  echo "promql_diff: no report was written (cargo test exited $status); the end of $out.log:" >&2
  tail -n 40 "$out.log" >&2
  exit 1
fi
# The per-area table and the summary line; the whole report, every difference included, is in $out.
sed -n '/^| area/,/^$/p' "$out"
tail -n 1 "$out"
echo "report: $out (test exit status $status: nonzero when any query differs or the corpus drifted)"
