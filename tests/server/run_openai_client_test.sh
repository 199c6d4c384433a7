#!/usr/bin/env bash
# ctest driver for openai_client_test.mjs: installs the pinned `openai`
# package (npm ci, from tests/server/node/package-lock.json) when absent, and
# skips (exit 77) when node or npm is not installed.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "SKIP: node/npm not installed (apt-get install nodejs npm)"; exit 77
fi
if [ ! -d "$here/node/node_modules/openai" ]; then
  if ! (cd "$here/node" && npm ci --no-audit --no-fund --loglevel=error); then
    echo "SKIP: npm ci failed in tests/server/node (no registry?)"; exit 77
  fi
fi
exec node --test-reporter=spec "$here/openai_client_test.mjs" "$@"
