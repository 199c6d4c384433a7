#!/usr/bin/env bash
# ctest driver for the Node tests in tests/server: installs the pinned test
# tooling (npm ci from tests/server/node/package-lock.json: `openai`,
# `puppeteer-core`) when absent, and skips (exit 77) when node or npm is not
# installed. Usage: run_node_test.sh TEST.mjs ARGS...
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "SKIP: node/npm not installed (apt-get install nodejs npm)"; exit 77
fi
# One installer at a time: ctest may start both Node tests together.
exec 9>"$here/node/.install.lock"
flock 9
if [ ! -d "$here/node/node_modules/openai" ] || [ ! -d "$here/node/node_modules/puppeteer-core" ]; then
  if ! (cd "$here/node" && npm ci --no-audit --no-fund --loglevel=error); then
    echo "SKIP: npm ci failed in tests/server/node (no registry?)"; exit 77
  fi
fi
flock -u 9
script="$1"; shift
exec node --test-reporter=spec "$here/$script" "$@"
