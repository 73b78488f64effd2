#!/usr/bin/env bash
# The Gemini CLI end-to-end probe (test_gemini_probe.py) and the scripted API's own tests
# (test_scripted_gemini.py), through the suite's one entry point, tests/e2e/run (the e2e
# venv with pytest; the tests install Gemini CLI from npm and mcp-server-fetch from PyPI
# into the same cache on first use, gemini_harness.py).
#
#   tests/e2e/gemini-e2e.sh [pytest args…]
#
# TOOLPRUNE_E2E_CACHE   cache folder (default ${XDG_CACHE_HOME:-~/.cache}/toolprune-e2e)
# Needs Node >= 20 with npm on PATH. Every server it starts listens on 127.0.0.1.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
exec "$here/run" test_scripted_gemini.py test_gemini_probe.py "$@"
