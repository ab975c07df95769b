#!/usr/bin/env bash
# Runs schemathesis (PyPI, pinned below) with the arguments given, installing it on first use into a
# virtualenv under the cargo target directory (outside the clone). tests/it/openapi.rs runs it against a
# live `argus serve`:
#   scripts/schemathesis.sh run http://127.0.0.1:PORT/api/openapi.json --max-examples 100 …
set -euo pipefail
cd "$(dirname "$0")/.."

PKG="schemathesis==4.32.5"
VENV="${CARGO_TARGET_DIR:-target}/schemathesis-venv"

if ! "$VENV/bin/python" -c 'import importlib.metadata as m, sys; sys.exit(m.version("schemathesis") != "'"${PKG#*==}"'")' >/dev/null 2>&1; then
  if ! python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then
    # Debian splits venv/ensurepip into python3-venv.
    if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
      echo "schemathesis: installing python3-venv" >&2
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-venv >/dev/null \
        || { apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-venv >/dev/null; }
    else
      echo "schemathesis: python3 with venv is required (apt-get install python3-venv)" >&2
      exit 2
    fi
  fi
  echo "schemathesis: installing $PKG into $VENV" >&2
  rm -rf "$VENV"
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check "$PKG" >&2
fi

exec "$VENV/bin/schemathesis" "$@"
