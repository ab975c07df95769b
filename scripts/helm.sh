#!/usr/bin/env bash
# Lints and renders the Helm chart deploy/helm/argus with real Helm, offline: helm-python-sdk (PyPI)
# bundles Helm's Go SDK as a shared library, so no helm binary and no cluster are needed. Installs it
# into a virtualenv under the cargo target directory on first use (beside scripts/validate-k8s.sh's).
#   scripts/helm.sh lint [CHART] [-f VALUES.yaml]…                 helm lint --strict
#   scripts/helm.sh template [CHART] [-f VALUES.yaml]… [--set K=V]… [--name N] [--namespace NS]
#                                                                  helm template: the manifests on stdout
# CHART defaults to deploy/helm/argus. Values are checked against the chart's values.schema.json before
# rendering, as `helm template` does. Exit 1 when lint finds an error or warning, or rendering fails
# (the reason on stderr); 2 on a usage error.
set -euo pipefail
cd "$(dirname "$0")/.."

PKG="helm-python-sdk==0.2.2"
VENV="${CARGO_TARGET_DIR:-target}/helm-venv"

usage() {
  echo "usage: scripts/helm.sh lint|template [CHART] [-f VALUES.yaml]… [--set K=V]… [--name N] [--namespace NS]" >&2
  exit 2
}
[ $# -ge 1 ] || usage
case "$1" in lint | template) ;; *) usage ;; esac

if ! "$VENV/bin/python" -c 'import helm_python' >/dev/null 2>&1; then
  if ! python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then
    echo "helm.sh: python3 with venv is required (apt-get install python3-venv)" >&2
    exit 2
  fi
  echo "helm.sh: installing $PKG into $VENV" >&2
  rm -rf "$VENV"
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check "$PKG" >&2
fi

exec "$VENV/bin/python" - "$@" <<'PY'
import sys
import helm_python as helm

args = sys.argv[1:]
cmd, rest = args[0], args[1:]
chart, files, sets, name, namespace = "deploy/helm/argus", [], [], "argus", "argus"
i = 0
while i < len(rest):
    a = rest[i]
    if a in ("-f", "--values", "--set", "--name", "--namespace"):
        if i + 1 >= len(rest):
            sys.exit(f"helm.sh: {a} needs a value")
        v = rest[i + 1]
        if a in ("-f", "--values"):
            files.append(v)
        elif a == "--set":
            sets.append(v)
        elif a == "--name":
            name = v
        else:
            namespace = v
        i += 2
    elif a.startswith("-"):
        sys.exit(f"helm.sh: unknown option {a}")
    else:
        chart = a
        i += 1


def merge(base, over):
    """Helm's coalescing of -f files and --set: maps merge key by key, anything else is replaced."""
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(base.get(k), dict):
            merge(base[k], v)
        else:
            base[k] = v
    return base


values = {}
for f in files:
    with open(f) as fh:
        values = merge(values, helm.values_from_yaml(fh.read()) or {})
for s in sets:
    values = merge(values, helm.parse_set_string(s))

try:
    if cmd == "lint":
        report = helm.lint(chart, values, strict=True, namespace=namespace)
        bad = False
        for m in report.get("messages") or []:
            level = {1: "INFO", 2: "WARNING", 3: "ERROR"}.get(m.get("severity"), "UNKNOWN")
            print(f"[{level}] {m.get('path')}: {m.get('error')}")
            bad |= m.get("severity", 0) >= 2
        for e in report.get("errors") or []:
            print(f"[ERROR] {e}")
            bad = True
        print(f"{report.get('total_charts_linted', 0)} chart(s) linted, {'failed' if bad else 'no failures'}")
        sys.exit(1 if bad else 0)
    with helm.Chart.load(chart) as c:
        c.validate_schema(c.merge_values(values))
        rendered = c.render(values, name=name, namespace=namespace, is_install=True)
except helm.HelmError as e:
    sys.exit(f"helm.sh: {cmd} {chart}: {e}")

for path in sorted(rendered):
    body = rendered[path].strip()
    # Helpers and notes are not manifests; templates that render nothing are left out, as helm does.
    if not path.endswith((".yaml", ".yml")) or not body or all(
        l.startswith("#") or not l.strip() for l in body.splitlines()
    ):
        continue
    print(f"---\n# Source: {path}\n{body}")
PY
