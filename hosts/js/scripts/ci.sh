#!/usr/bin/env bash
# CI for the JS host: install from the npm registry (lockfile), build the
# bindings (refreshing dist/toolprune.wasm with cargo first), type-check the
# declarations, run the tests.
set -euo pipefail
cd "$(dirname "$0")/.."
npm ci --no-audit --no-fund
TOOLPRUNE_REFRESH_WASM="${TOOLPRUNE_REFRESH_WASM:-1}" npm run build
npm run typecheck
npm test
