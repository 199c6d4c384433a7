#!/usr/bin/env bash
# Installs seam's build dependencies (Debian bookworm packages only), then
# configures and builds into build/ (or $SEAM_BUILD_DIR). Safe to rerun.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  cmake ninja-build g++ clang pkg-config git
  libgtest-dev libgmock-dev libbenchmark-dev
  nlohmann-json3-dev libcli11-dev libcpp-httplib-dev
  libpcre2-dev libutf8proc-dev libedit-dev
  tmux
  python3 python3-numpy
  jq  # bench/compare.sh reads the JSON of both engines
)
# Test tooling for the server's tests (tests/server: the `openai` npm client,
# the chat page in headless chromium); those tests skip without it.
test_packages=(nodejs chromium)
missing=()
for p in "${packages[@]}" "${test_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Debian's npm only where no npm came with nodejs (NodeSource's nodejs bundles
# its own, and Debian's npm package would conflict with it).
command -v npm >/dev/null 2>&1 || missing+=(npm)
if [ ${#missing[@]} -gt 0 ]; then
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${missing[@]}"
fi

build_dir="${SEAM_BUILD_DIR:-build}"
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release ${SEAM_CMAKE_ARGS:-}
cmake --build "$build_dir" -j "$(nproc)"
