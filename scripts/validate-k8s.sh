#!/usr/bin/env bash
# Validates Kubernetes manifests against the OpenAPI schema of one Kubernetes release, offline, with
# kubernetes-validate (PyPI; it bundles the schemas). Installs it into a virtualenv under the cargo
# target directory on first use. Strict: unknown fields are errors.
#   scripts/validate-k8s.sh FILE…            exit 0 when every resource validates, 1 otherwise
# KUBERNETES_VERSION overrides the release (default below, the newest the pinned package bundles).
set -euo pipefail
cd "$(dirname "$0")/.."

K8S_VERSION="${KUBERNETES_VERSION:-1.37.0}"
PKG="kubernetes-validate==1.37.0"
VENV="${CARGO_TARGET_DIR:-target}/deploy-venv"

if [ $# -eq 0 ]; then
  echo "usage: scripts/validate-k8s.sh FILE…" >&2
  exit 2
fi

if ! "$VENV/bin/python" -c 'import kubernetes_validate' >/dev/null 2>&1; then
  if ! python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then
    # Debian splits venv/ensurepip into python3-venv.
    if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
      echo "validate-k8s: installing python3-venv" >&2
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-venv >/dev/null \
        || { apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-venv >/dev/null; }
    else
      echo "validate-k8s: python3 with venv is required (apt-get install python3-venv)" >&2
      exit 2
    fi
  fi
  echo "validate-k8s: installing $PKG into $VENV" >&2
  rm -rf "$VENV"
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check "$PKG" >&2
fi

exec "$VENV/bin/kubernetes-validate" --kubernetes-version "$K8S_VERSION" --strict "$@"
