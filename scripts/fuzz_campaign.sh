#!/usr/bin/env bash
# A fuzzing campaign: builds the libFuzzer targets with clang (ASan + UBSan,
# coverage-guided) into build-fuzz/, makes the Hugging Face fixtures
# (fuzz/make_hf_fixtures.sh), seeds each corpus from the target's own seeds,
# and runs every target for SECONDS (default 600), one at a time unless
# FUZZ_PARALLEL says otherwise. Each
# target's log and any crash, leak or timeout input are in
# build-fuzz/campaign/; summary.md holds one table row per target for
# docs/reliability.md. Add each crash as a regression test. A corpus left by
# an earlier campaign is resumed.
#
#   scripts/fuzz_campaign.sh [SECONDS] [TARGET ...]
#   targets: gguf template tool_call safetensors safetensors_index hf_config
#            hf_tokenizer tokenize server_request
#   env: PYTHON (python3 with numpy, for the fixtures), JOBS (build jobs, default 2),
#        SEAM_SHARED_DIR (default ../shared), SEAM_FUZZ_NO_BUILD=1 (use the binaries as built),
#        FUZZ_RUNS=N (a target also stops after N executions: the campaign goal is 10000000),
#        FUZZ_PARALLEL=N (targets run N at a time, one core each; default 1)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-600}"
shift || true
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(gguf template tool_call safetensors safetensors_index
  hf_config hf_tokenizer tokenize server_request)

if [ -z "${SEAM_FUZZ_NO_BUILD:-}" ]; then
cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_C_COMPILER=clang -DSEAM_LIBFUZZER=ON -DSEAM_SANITIZE=ON -DSEAM_NATIVE=OFF \
  -DSEAM_BUILD_TESTS=OFF -DSEAM_BUILD_BENCH=OFF >/dev/null
cmake --build build-fuzz -j "${JOBS:-2}" --target \
  $(for t in "${targets[@]}"; do printf '%s_libfuzzer ' "$t"; done)
fi

out=build-fuzz/campaign
mkdir -p "$out"
fuzz/make_hf_fixtures.sh build-fuzz/fixtures/hf "${PYTHON:-python3}"
export SEAM_FUZZ_HF_DIR="$PWD/build-fuzz/fixtures/hf"

# One target: its corpus seeded, libFuzzer run, and its summary row in $out/$t.row.
run_target() {
  local t="$1" corpus="$out/${1}_corpus" log="$out/${1}.log"
  mkdir -p "$corpus"
  SEAM_FUZZ_DUMP_SEEDS="$corpus" "build-fuzz/fuzz/${t}_libfuzzer"
  echo "== $t: ${seconds} s${FUZZ_RUNS:+ or $FUZZ_RUNS executions}"
  local start
  start=$(date +%s)
  # -timeout: one input may take at most 10 s; a template, 30 s: its render budget lets a
  # render scan up to 256 MB of strings (0.3 s in a Release build), which the coverage hooks
  # of this build stretch to about 10 s.
  local timeout=10
  [ "$t" = template ] && timeout=30
  # -rss_limit_mb: a parser that allocates by a header's count is caught here.
  # -fork=0 and -ignore_crashes=0: the run stops at the first finding, which is kept.
  ASAN_OPTIONS=detect_leaks=1 "build-fuzz/fuzz/${t}_libfuzzer" "$corpus" \
    -max_total_time="$seconds" -runs="${FUZZ_RUNS:--1}" -timeout="$timeout" -rss_limit_mb=4096 \
    -print_final_stats=1 -artifact_prefix="$out/${t}_" >"$log" 2>&1 || true
  local execs rate secs crashes leaks timeouts ooms
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || true)
  rate=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$log" | grep -o '[0-9]*$' || true)
  secs=$(($(date +%s) - start))
  crashes=$(ls "$out/${t}_"crash-* 2>/dev/null | wc -l || true)
  leaks=$(grep -c 'ERROR: LeakSanitizer' "$log" || true)
  timeouts=$(ls "$out/${t}_"timeout-* 2>/dev/null | wc -l || true)
  ooms=$(ls "$out/${t}_"oom-* 2>/dev/null | wc -l || true)
  echo "| $t | $secs | ${execs:-?} | ${rate:-?} | $crashes | $leaks | $timeouts | $ooms | $(ls "$corpus" | wc -l) |" >"$out/$t.row"
  cat "$out/$t.row"
  grep -E "^(==[0-9]+==ERROR|SUMMARY)" "$log" | head -5 || true
}

running=0
for t in "${targets[@]}"; do
  if [ "$running" -ge "${FUZZ_PARALLEL:-1}" ]; then
    wait -n || true
    running=$((running - 1))
  fi
  run_target "$t" &
  running=$((running + 1))
done
wait

summary="$out/summary.md"
echo "| target | seconds | executions | exec/s | crashes | leaks | timeouts | OOM | corpus |" >"$summary"
echo "|---|---|---|---|---|---|---|---|---|" >>"$summary"
for t in "${targets[@]}"; do cat "$out/$t.row" >>"$summary"; done
cat "$summary"
