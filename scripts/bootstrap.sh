#!/usr/bin/env bash
# Installs seam's build dependencies (Debian bookworm packages only; with
# --tests also the test tooling), then configures and builds into build/ (or
# $SEAM_BUILD_DIR). Safe to rerun.
set -euo pipefail
cd "$(dirname "$0")/.."

# --tests: also the tooling only the test suite needs, so that the README's
# first command (build and run) stays quick on a fresh machine.
with_tests=0
[ "${1:-}" = "--tests" ] && with_tests=1

packages=(
  cmake ninja-build g++ pkg-config git
  libgtest-dev libgmock-dev libbenchmark-dev
  nlohmann-json3-dev libcli11-dev libcpp-httplib-dev
  libpcre2-dev libutf8proc-dev libedit-dev
  python3 python3-numpy
)
# clang: CI's second compiler; tmux: the terminal views under test; jq:
# bench/compare.sh; nodejs + chromium: the server's tests (the `openai` npm
# client, the chat page in headless Chromium) and the observer's HTML report.
test_packages=(clang tmux jq nodejs chromium)
wanted=("${packages[@]}")
[ "$with_tests" = 1 ] && wanted+=("${test_packages[@]}")
missing=()
for p in "${wanted[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Debian's npm only where no npm came with nodejs (NodeSource's nodejs bundles
# its own, and Debian's npm package would conflict with it).
[ "$with_tests" = 1 ] && { command -v npm >/dev/null 2>&1 || missing+=(npm); }
if [ ${#missing[@]} -gt 0 ]; then
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${missing[@]}"
fi
# The server tests' pinned Node packages (tests/server/node/package-lock.json).
if [ "$with_tests" = 1 ]; then
  (cd tests/server/node && npm ci --no-audit --no-fund --loglevel=error)
fi

build_dir="${SEAM_BUILD_DIR:-build}"
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release ${SEAM_CMAKE_ARGS:-}
cmake --build "$build_dir" -j "$(nproc)"
