#!/usr/bin/env bash
# Install the peer systems used by the side-by-side benchmarks and tests (see shared/peers.md):
#   victoria-metrics, prometheus, prometheus-alertmanager, prometheus-node-exporter, python3-aiosmtpd,
#   chromium (the status page's end-to-end test drives it headless),
#   slurmctld, slurm-client, munge (alertd's Slurm remediation is tested against a real slurmctld),
#   curl (the README's commands are run as written), systemd (systemd-analyze verifies the unit files)
# Idempotent: installs only what is missing, runs `apt-get update` at most once and only when something
# is missing. Must run as root (CI does). Package services are not started (policy-rc.d denies it while
# installing); scripts start each peer on loopback themselves. Prints the versions found.
set -euo pipefail

# package -> command that proves it is installed (empty: check with dpkg only)
declare -A CMD=(
  [victoria-metrics]=victoria-metrics
  [prometheus]=prometheus
  [prometheus-alertmanager]=prometheus-alertmanager
  [prometheus-node-exporter]=prometheus-node-exporter
  [python3-aiosmtpd]=
  [chromium]=chromium
  [slurmctld]=slurmctld
  [slurm-client]=scontrol
  [munge]=munged
  [curl]=curl
  [systemd]=systemd-analyze
)
PKGS=(victoria-metrics prometheus prometheus-alertmanager prometheus-node-exporter python3-aiosmtpd chromium
  slurmctld slurm-client munge curl systemd)

installed() {
  local pkg=$1 cmd=${CMD[$1]}
  # `dpkg -s` succeeds for removed packages whose config files remain: check the status instead.
  [ "$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null)" = "install ok installed" ] || return 1
  [ -z "$cmd" ] || command -v "$cmd" >/dev/null 2>&1
}

missing=()
for p in "${PKGS[@]}"; do installed "$p" || missing+=("$p"); done

if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "install-peers: must run as root to install: ${missing[*]}" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  # Keep the packages' services from starting: the benchmarks start their own instances on loopback.
  added_policy=0
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d && added_policy=1
  fi
  log=$(mktemp)
  trap 'rm -f "$log"; if [ $added_policy = 1 ]; then rm -f /usr/sbin/policy-rc.d; fi' EXIT
  # apt-get update once, only if the lists don't know a missing package yet (or are absent).
  need_update=0
  for p in "${missing[@]}"; do
    cand=$(apt-cache policy "$p" 2>/dev/null | awk '/Candidate:/ {print $2}')
    if [ -z "$cand" ] || [ "$cand" = "(none)" ]; then need_update=1; break; fi
  done
  if [ $need_update = 1 ]; then
    echo "install-peers: apt-get update"
    apt-get update -qq >"$log" 2>&1 || { cat "$log" >&2; exit 1; }
  fi
  echo "install-peers: installing ${missing[*]}"
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >"$log" 2>&1 || { cat "$log" >&2; exit 1; }
  for p in "${missing[@]}"; do
    installed "$p" || { echo "install-peers: $p did not install" >&2; exit 1; }
  done
fi

for p in "${PKGS[@]}"; do
  if installed "$p"; then v=$(dpkg-query -W -f='${Version}' "$p"); else v=missing; fi
  printf '%-26s %s\n' "$p" "$v"
done
