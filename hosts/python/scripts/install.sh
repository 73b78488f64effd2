#!/usr/bin/env bash
# Builds the component and installs the Python host into a venv the way a
# user does: cargo's dist command (incremental), a venv, `pip install
# ./hosts/python[test]` (its build step copies dist/toolprune.wasm into the
# package), then the package itself again so a rebuilt component or changed
# source is picked up. Used by ci.sh (then pytest) and scripts/bench.
#
#   hosts/python/scripts/install.sh
#
# TOOLPRUNE_WASM=path  use that component instead of building dist/ (no cargo)
# TOOLPRUNE_PY_VENV    the venv to (re)use (default hosts/python/.venv)
# PYTHON               the interpreter that makes the venv (default python3, ≥ 3.10)
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
repo="$(cd "$here/../.." && pwd)"
cd "$repo"

if [ -z "${TOOLPRUNE_WASM:-}" ]; then
    if [ -f "$HOME/.cargo/env" ]; then
        # shellcheck disable=SC1091
        . "$HOME/.cargo/env"
    fi
    if command -v cargo >/dev/null 2>&1; then
        # Always: cargo is incremental, and a stale dist/ would fail the shared vectors.
        cargo run -q -p toolprune-artifacts --bin toolprune-dist
    elif [ ! -f dist/toolprune.wasm ]; then
        echo "install.sh: dist/toolprune.wasm is missing and cargo is not installed" >&2
        exit 1
    fi
fi

python="${PYTHON:-python3}"
"$python" - <<'PY'
import sys
if sys.version_info < (3, 10):
    sys.exit(f"install.sh: Python >= 3.10 needed, this is {sys.version.split()[0]}")
PY
venv="${TOOLPRUNE_PY_VENV:-$here/.venv}"
if [ ! -x "$venv/bin/python" ]; then
    "$python" -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet --upgrade pip
# --force-reinstall --no-deps on the package itself: a rebuilt component is picked up.
"$venv/bin/python" -m pip install --quiet "$here[test]"
"$venv/bin/python" -m pip install --quiet --force-reinstall --no-deps "$here"
rm -rf "$here/build"
