#!/usr/bin/env bash
# Runs every check and test of Argus, installing what the tests need when it is missing.
# This is the README's test command, and .ci/run calls exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."

# Peers the tests start on loopback (Prometheus as a real remote-write client, among others).
scripts/install-peers.sh
# Every peer is installed now, so a test that finds one missing fails instead of reporting itself
# skipped (argus_testkit::missing_peer): this command never drops a comparison silently.
export CI="${CI:-1}"

if ! command -v cargo >/dev/null 2>&1; then
  echo "test: cargo is required (install Rust stable with rustup)" >&2
  exit 1
fi
rustup component add rustfmt clippy >/dev/null 2>&1 || true

cargo fmt --all -- --check
cargo clippy --workspace --all-targets --locked -- -D warnings
cargo test --workspace --locked
