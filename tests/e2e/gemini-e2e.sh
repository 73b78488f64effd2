#!/usr/bin/env bash
# Run the Gemini CLI end-to-end probe (tests/e2e/test_gemini_probe.py) and the scripted
# API's own tests (tests/e2e/test_scripted_gemini.py) from a clean clone.
# Makes (once) a venv with pytest in the e2e cache; the tests themselves install Gemini CLI
# (npm) and mcp-server-fetch (PyPI) into the same cache on first use (gemini_harness.py).
#
#   tests/e2e/gemini-e2e.sh [pytest args…]
#
# TOOLPRUNE_E2E_CACHE   cache folder (default ~/.cache/toolprune-e2e)
# PYTHON                interpreter for the venv (default python3, >= 3.10)
# Needs Node >= 20 with npm on PATH. Every server it starts listens on 127.0.0.1.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cache="${TOOLPRUNE_E2E_CACHE:-$HOME/.cache/toolprune-e2e}"
venv="$cache/gemini-pytest-venv"
if [ ! -x "$venv/bin/pytest" ]; then
    mkdir -p "$cache"
    "${PYTHON:-python3}" -m venv "$venv"
    "$venv/bin/python" -m pip install -q --disable-pip-version-check pytest
fi
exec "$venv/bin/python" -m pytest -q -p no:cacheprovider "$here/test_scripted_gemini.py" "$here/test_gemini_probe.py" "$@"
