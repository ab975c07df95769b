#!/usr/bin/env bash
# Crash proof, long form: SIGKILL the server at random moments (some during a flush) while a writer
# streams batches; after each restart every acknowledged batch must be whole and an in-flight batch
# whole or absent. The test suite runs 5 kills; this runs KILLS (default 25).
set -euo pipefail
cd "$(dirname "$0")/.."
ARGUS_CRASH_KILLS="${1:-25}" cargo test --release --test crash -- --nocapture
