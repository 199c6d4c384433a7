#!/usr/bin/env bash
# A fuzzing campaign: builds the libFuzzer targets with clang (ASan + UBSan,
# coverage-guided) into build-fuzz/, seeds each corpus from the targets' own
# seeds, and runs every target for SECONDS (default 600). The executions and
# any crash, leak or timeout are in build-fuzz/campaign/<target>.log; record
# them in docs/reliability.md, and add each crash as a regression test.
#
#   scripts/fuzz_campaign.sh [SECONDS] [TARGET ...]    (targets: gguf template tool_call)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-600}"
shift || true
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(gguf template tool_call)

cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ \
  -DSEAM_LIBFUZZER=ON -DSEAM_SANITIZE=ON -DSEAM_NATIVE=OFF -DSEAM_BUILD_TESTS=OFF \
  -DSEAM_BUILD_BENCH=OFF
cmake --build build-fuzz -j "$(nproc)" --target \
  $(for t in "${targets[@]}"; do printf '%s_libfuzzer %s_fuzz ' "$t" "$t"; done)

mkdir -p build-fuzz/campaign
for t in "${targets[@]}"; do
  corpus="build-fuzz/campaign/${t}_corpus"
  mkdir -p "$corpus"
  "build-fuzz/fuzz/${t}_fuzz" --dump-seeds "$corpus"
  echo "== $t: ${seconds} s"
  # -timeout: one input may take at most 10 s (the template budget ends renders long before);
  # -rss_limit_mb: a parser that allocates by a header's count is caught here.
  ASAN_OPTIONS=detect_leaks=1 "build-fuzz/fuzz/${t}_libfuzzer" "$corpus" \
    -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 -print_final_stats=1 \
    -artifact_prefix="build-fuzz/campaign/${t}_" 2>&1 | tee "build-fuzz/campaign/${t}.log" |
    grep -E "stat::number_of_executed_units|ERROR|SUMMARY|Done" || true
done
