#!/usr/bin/env bash
# Crash proof, long form: SIGKILL `argus serve` at random moments (during ingest, a flush, rule
# evaluation and webhook notification) while a writer streams batches and alertd fires one alert per
# round to a loopback webhook receiver. After each restart every acknowledged batch must be whole, an
# in-flight batch whole or absent, and the store must reopen; at the end every fired alert must have
# been delivered, a repeat only under the same Idempotency-Key. The test suite runs 5 kills; this
# runs KILLS (default 50).
set -euo pipefail
cd "$(dirname "$0")/.."
# PROFILE=dev uses the debug build (dependencies are optimised in it too) where a release build is too slow.
PROFILE="${PROFILE:-release}"
ARGUS_CRASH_KILLS="${1:-50}" nice -n 19 cargo test --profile "$PROFILE" --test it crash:: -- --nocapture
