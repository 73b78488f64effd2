#!/usr/bin/env bash
# The Python host's suite, from a clean clone (with ../shared beside it):
# build the component (cargo, incremental), make a venv, install the package
# the way a user does (`pip install ./hosts/python[test]`, which copies
# dist/toolprune.wasm into the package): all of that is install.sh; then run
# pytest on the installed package.
#
#   hosts/python/scripts/ci.sh [pytest args…]
#
# TOOLPRUNE_WASM=path  use that component instead of building dist/ (no cargo)
# TOOLPRUNE_PY_VENV    the venv to (re)use (default hosts/python/.venv)
# PYTHON               the interpreter that makes the venv (default python3, ≥ 3.10)
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
bash "$here/scripts/install.sh"
venv="${TOOLPRUNE_PY_VENV:-$here/.venv}"

# Run from the tests folder so `toolprune` is the installed package, not src/.
cd "$here/tests"
exec "$venv/bin/python" -m pytest -q -p no:cacheprovider "$@"
