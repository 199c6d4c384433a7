#!/usr/bin/env bash
# bench/compare.sh: seam against llama.cpp on the same GGUF files, one engine
# after the other, and the ratio of their speeds (docs/performance.md).
#
# It makes the benchmark files once into a cache folder (random weights in real
# shapes, by ../shared/tools/mkgguf.py in F32, F16, Q8_0 and Q4_0; Q4_K_M,
# Q5_K_M and llama.cpp's other mixes by `seam quantize --mix`, any other type
# (Q4_1, Q6_K, ...) by `seam quantize --type`, both from the F16 file (8b: Q8_0); the
# per-layer shapes moe, moe-dense, hybrid and gemma3 in F32 (gemma2: F16) by
# tools/families.py or tools/reference.py, every other type by `seam quantize`
# from that), then for every file, thread count and depth runs `seam bench`
# and the peer's `llamacpp-cbench` with the same method
# (llama-bench's: pp = one decode of P random tokens, tg = N one-token
# decodes, D tokens already cached, R timed runs after a warm-up).
#
#   bench/compare.sh [--smoke] [--shapes "small 1b 8b moe moe-dense hybrid gemma3 gemma2"] [--types "F16 Q8_0 Q4_0 Q4_K_M"]
#                    [-t 1,2] [-d 0,4096] [-p 512] [-n 128] [-r 3] [--cache-type f16]
#                    [--cache DIR] [--seam BIN] [--peer DIR] [--python PY] [--membw GBPS]
#                    [--level avx2] [--rounds 1]
#
# --rounds N: the two engines N times in turn for each file and thread count,
# the table giving each figure's median. On a machine whose memory speed
# drifts from minute to minute (a shared guest), one round can set one
# engine's slow spell against the other's fast one.
# --level avx2: both engines at the AVX2 level on a machine that has more
# (seam by SEAM_CPU=avx2, llama.cpp by loading only its `haswell` CPU backend,
# the one it picks on an AVX2-only CPU such as Zen 3); without it each engine
# runs its best level.
# --smoke: tiny models, seconds in all (the test suite runs it): the llama
# shape "smoke" unless --shapes names others (hybrid-smoke: a tiny hybrid,
# timed on the llama.cpp side by our own harness). Without the
# peer (../peer, or $LLAMACPP_PEER_DIR) only seam's figures are printed.
set -euo pipefail
shopt -s inherit_errexit  # a file that failed to be made stops the script

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
shapes="small 1b"
types="F16 Q8_0 Q4_0 Q4_K_M"
threads="1,2"
depths="0,4096"
pp=512
tg=128
reps=3
cache_type=f16
cache="${SEAM_BENCH_CACHE:-$HOME/.cache/seam-bench}"
seam="$root/build/seam"
peer="${LLAMACPP_PEER_DIR:-$root/../peer}"
tools="$root/../shared/tools"
python=/usr/bin/python3
membw=()
level=""
rounds=1
smoke=0
shapes_given=0
types_given=0

die() { echo "compare.sh: $*" >&2; exit 1; }
while [ $# -gt 0 ]; do
  case "$1" in
    --smoke) smoke=1; shift ;;
    --shapes) shapes="$2"; shapes_given=1; shift 2 ;;
    --types) types="$2"; types_given=1; shift 2 ;;
    -t) threads="$2"; shift 2 ;;
    -d) depths="$2"; shift 2 ;;
    -p) pp="$2"; shift 2 ;;
    -n) tg="$2"; shift 2 ;;
    -r) reps="$2"; shift 2 ;;
    --cache-type) cache_type="$2"; shift 2 ;;
    --cache) cache="$2"; shift 2 ;;
    --seam) seam="$2"; shift 2 ;;
    --peer) peer="$2"; shift 2 ;;
    --tools) tools="$2"; shift 2 ;;
    --python) python="$2"; shift 2 ;;
    --membw) membw=(--membw "$2"); shift 2 ;;
    --level) level="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    -h|--help) sed -n '2,32p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option '$1' (see --help)" ;;
  esac
done
if [ "$smoke" = 1 ]; then
  [ "$shapes_given" = 1 ] || shapes="smoke"
  [ "$types_given" = 1 ] || types="F16 Q4_0 Q4_K_M"
  threads="1"; depths="0,16"; pp=16; tg=4; reps=1
  [ ${#membw[@]} -gt 0 ] || membw=(--membw 10)
fi

[ -x "$seam" ] || die "no seam binary at $seam (build it, or pass --seam)"
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || die "--rounds wants a positive count, not '$rounds'"
[ -f "$tools/mkgguf.py" ] || die "no $tools/mkgguf.py (pass --tools DIR)"
cbench="$peer/bin/llamacpp-cbench"
if [ ! -x "$cbench" ]; then
  echo "compare.sh: no llama.cpp peer at $cbench: seam only (see ../shared/peers/README.md)" >&2
  cbench=""
fi
mkdir -p "$cache"

# --level: seam's level by SEAM_CPU, llama.cpp's by a folder of its libraries
# holding only the matching CPU backend (llamacpp-cbench loads from
# $LLAMACPP_BINS the best backend it finds there).
bins=""
if [ -n "$level" ]; then
  [ "$level" = avx2 ] || die "--level: only avx2 (llama.cpp's haswell backend) can be forced"
  export SEAM_CPU="$level"
  if [ -n "$cbench" ]; then
    variant=$(find "$peer" -name 'libggml-cpu-haswell.so' | head -n 1)
    [ -n "$variant" ] || die "no libggml-cpu-haswell.so under $peer"
    bins=$(mktemp -d)
    for f in "$(dirname "$variant")"/*; do
      case "$(basename "$f")" in libggml-cpu-*) ;; *) ln -s "$f" "$bins/" ;; esac
    done
    ln -s "$variant" "$bins/"
    export LLAMACPP_BINS="$bins"
  fi
fi

# mkgguf.py shape per name; the context is raised so depth + pp fits.
shape_args() {
  case "$1" in
    smoke) echo "--arch llama --dim 64 --layers 2 --heads 4 --kv-heads 2 --ffn 128 --vocab 512 --ctx 256 --tied" ;;
    small) echo "--preset small --ctx 8192" ;;  # SmolLM-135M
    1b) echo "--preset 1b --ctx 8192" ;;        # Llama-3.2-1B
    8b) echo "--arch llama --dim 4096 --layers 32 --heads 32 --kv-heads 8 --ffn 14336
      --vocab 128256 --ctx 8192 --rope-theta 500000 --untied" ;;  # Llama-3.1-8B
    *) die "unknown shape '$1' (smoke, small, 1b, 8b, moe, moe-dense, hybrid, hybrid-smoke, gemma3, gemma2)" ;;
  esac
}

# The per-layer shapes, made in F32 by our own generators (tools/) and then
# quantized by seam. moe: Qwen3-30B-A3B's layer (E = 2048, 32 heads of 128, 4
# KV heads, experts of width 768, 8 used) with 8 layers, 32 experts and a
# 32,000-token vocabulary; moe-dense: a qwen3 of the same active size (FFN
# 8 x 768); hybrid: a Qwen3.5-0.8B-shaped gated-delta-net hybrid (24 layers,
# every 4th full attention, S = 128, 8 key / 16 value heads); gemma3: Gemma 3
# 1B (E = 1152, 26 layers, 4 heads of 256 with 1 KV head, GeGLU 6,912, a
# 262,144-token vocabulary tied to the LM head, a 512-cell window on five
# layers of six); gemma2: Gemma 2 2B (E = 2304, 26 layers, 8 heads of 256 with
# 4 KV heads, GeGLU 9,216, 256,000 tokens tied, a 4,096-cell window on every
# other layer, soft caps 50 on the scores and 30 on the logits).
families_gen() {  # OUT ARCH, then tools/families.py _gen_family keyword arguments
  "$python" -c "import sys; sys.path.insert(0, '$root/tools'); import families
families._gen_family('$1', '$2', seed=1, $3)"
}
family_gen() {
  local out=$1
  case "$2" in
    moe) families_gen "$out" qwen3moe "ctx=8192, experts=32, experts_used=8, dim=2048, layers=8,
      heads=32, kv_heads=4, head_dim=128, ffn_exp=768, vocab=32000" ;;
    moe-dense) "$python" "$root/tools/reference.py" gen --arch qwen3 --dim 2048 --layers 8 \
      --heads 32 --kv-heads 4 --head-dim 128 --ffn 6144 --vocab 32000 --ctx 8192 --seed 1 \
      --out "$out" 2>/dev/null ;;
    hybrid) families_gen "$out" qwen35 "ctx=8192, dim=1024, layers=24, heads=8, kv_heads=2,
      ffn=3072, vocab=32000, hybrid_head_dim=256, ssm_state=128, ssm_groups=8, ssm_heads=16" ;;
    hybrid-smoke) families_gen "$out" qwen35 "ctx=256" ;;
    gemma3) "$python" "$root/tools/reference.py" gen --arch gemma3 --dim 1152 --layers 26 \
      --heads 4 --kv-heads 1 --head-dim 256 --ffn 6912 --vocab 262144 --ctx 8192 --window 512 \
      --rope-theta 1000000 --norm-eps 1e-6 --tied --seed 1 --out "$out" 2>/dev/null ;;
    gemma2) "$python" "$root/tools/reference.py" gen --arch gemma2 --dim 2304 --layers 26 \
      --heads 8 --kv-heads 4 --head-dim 256 --ffn 9216 --vocab 256000 --ctx 8192 --window 4096 \
      --norm-eps 1e-6 --tied --seed 1 --dtype F16 --out "$out" 2>/dev/null ;;
    *) return 1 ;;
  esac
}
is_family() { case "$1" in moe | moe-dense | hybrid | hybrid-smoke | gemma3 | gemma2) return 0 ;; *) return 1 ;; esac; }
# The type a per-layer shape is generated in: F16 for gemma2, whose 2.6 B
# weights in F32 do not fit the generator's memory on a 24 GiB machine.
family_source() { case "$1" in gemma2) echo F16 ;; *) echo F32 ;; esac; }
is_recurrent() { case "$1" in hybrid | hybrid-smoke) return 0 ;; *) return 1 ;; esac; }

# The file a llama shape's other types are quantized from: F16, but Q8_0 for
# 8b, whose F16 file (15 GiB) would fill a small disk.
quant_source() { case "$1" in 8b) echo Q8_0 ;; *) echo F16 ;; esac; }

# Makes $cache/<shape>-<type>.gguf unless it is there; prints its path.
# llama.cpp's mixes (Q4_K_M, Q5_K_M, ..., Q2_K, IQ4_XS): made by `seam quantize --mix`.
is_mix() { [[ $1 == *_K_[MSL] || $1 == Q2_K || $1 == IQ4_NL || $1 == IQ4_XS ]]; }
# The types mkgguf.py writes itself; any other (Q4_1, Q5_0, Q6_K, ...) by
# `seam quantize --type` from quant_source's file.
is_generated() { [[ $1 == F32 || $1 == F16 || $1 == Q8_0 || $1 == Q4_0 ]]; }

model_file() {
  local shape=$1 type=$2 out="$cache/$1-$2.gguf"
  if [ ! -f "$out" ]; then
    if is_family "$shape" && [ "$type" = "$(family_source "$shape")" ]; then
      echo "compare.sh: generating $out" >&2
      family_gen "$out.tmp" "$shape" >/dev/null ||
        die "could not generate $out: the generator failed (out of memory for a big shape?)"
    elif is_family "$shape"; then
      local src; src=$(model_file "$shape" "$(family_source "$shape")")
      echo "compare.sh: quantizing $out" >&2
      if is_mix "$type"; then
        "$seam" quantize "$src" "$out.tmp" --mix "${type,,}" --no-eval >&2
      else
        "$seam" quantize "$src" "$out.tmp" --type "$type" --no-eval >&2
      fi
    elif is_mix "$type"; then
      local src; src=$(model_file "$shape" "$(quant_source "$shape")")
      echo "compare.sh: quantizing $out" >&2
      "$seam" quantize "$src" "$out.tmp" --mix "${type,,}" --no-eval >&2
    elif is_generated "$type"; then
      echo "compare.sh: generating $out" >&2
      # shellcheck disable=SC2046
      "$python" "$tools/mkgguf.py" $(shape_args "$shape") --dtype "$type" --seed 1 -o "$out.tmp" >/dev/null
    else
      local src; src=$(model_file "$shape" "$(quant_source "$shape")")
      echo "compare.sh: quantizing $out" >&2
      "$seam" quantize "$src" "$out.tmp" --type "$type" --no-eval >&2
    fi
    [ -s "$out.tmp" ] || die "could not make $out"
    mv "$out.tmp" "$out"
  fi
  echo "$out"
}

results=$(mktemp)
work=$(mktemp -d)
trap 'rm -rf "$results" "$work" ${bins:+"$bins"}' EXIT

# One row per file, thread count and depth: each figure the median of its rounds.
print_table() {
  [ "$rounds" = 1 ] || echo "medians of $rounds rounds, the engines in turn"
  jq -rs '
  def r2: (. * 100 | round) / 100;
  def median: map(select(. != null)) | sort
    | if length == 0 then null elif length % 2 == 1 then .[length / 2 | floor]
      else (.[length / 2 - 1] + .[length / 2]) / 2 end;
  def fmt: if . == null then "n/a" else (r2 | tostring) end;
  def ratio(a; b): if a == null or b == null or b == 0 then "n/a" else ((a / b) * 100 | round / 100 | tostring) + "×" end;
  ( [ .[] | select(.engine == "seam") | .file as $f | .bench as $b | $b.results[]
      | {file: $f, threads, depth, kind: (.test[0:2]), tps, bw_pct, cpu: $b.cpu_level} ] ) as $s
  | ( [ .[] | select(.engine == "llama.cpp") | {file, threads: .bench.threads, depth: .bench.depth,
        pp: .bench.pp_tps, tg: .bench.tg_tps} ] ) as $p
  | [ $s[] | {file, threads, depth, cpu} ] | unique | sort_by(.file, .threads, .depth)
  | ("| file | cpu | threads | depth | seam pp | llama.cpp pp | pp ratio | seam tg | llama.cpp tg | tg ratio | seam tg % bw |",
     "|---|---|---|---|---|---|---|---|---|---|---|"),
    (.[] | . as $k
      | ([$s[] | select(.file == $k.file and .threads == $k.threads and .depth == $k.depth)]) as $mine
      | ($mine | map(select(.kind == "pp") | .tps) | median) as $spp
      | ($mine | map(select(.kind == "tg")) | {tps: (map(.tps) | median), bw_pct: (map(.bw_pct) | median)}) as $stg
      | ([$p[] | select(.file == $k.file and .threads == $k.threads and .depth == $k.depth)]) as $peer
      | ($peer | map(.pp) | median) as $ppp | ($peer | map(.tg) | median) as $ptg
      | "| \($k.file) | \($k.cpu) | \($k.threads) | \($k.depth) | \($spp | fmt) | \(if $ppp == null or $ppp == 0 then "n/a" else ($ppp | fmt) end) | \(ratio($spp; $ppp)) | \($stg.tps | fmt) | \(if $ptg == null or $ptg == 0 then "n/a" else ($ptg | fmt) end) | \(ratio($stg.tps; $ptg)) | \(if $stg.bw_pct == null then "n/a" else ($stg.bw_pct | round | tostring) + "%" end) |")
' "$results"
}
# Interrupted (a long depth run cut short): the rows measured so far, which
# would otherwise go with the results file.
trap 'echo "compare.sh: interrupted; the rows measured so far:" >&2; print_table; exit 130' INT TERM

# llamacpp-cbench empties its context with llama_memory_seq_rm(mem, -1, -1,
# -1), which llama.cpp's recurrent memory refuses; hybrid files are timed by
# our own harness of the same method (bench/llamacpp_bench.c), built here
# against the peer's headers and libraries.
hybrid_bench=""
needs_harness=0
for shape in $shapes; do is_recurrent "$shape" && needs_harness=1; done
if [ -n "$cbench" ] && [ "$needs_harness" = 1 ]; then
  libllama=$(find "$peer" -name 'libllama.*.so' | head -n 1)
  [ -n "$libllama" ] || die "no libllama under $peer"
  libs=$(dirname "$libllama")
  hybrid_bench="$work/llamacpp_bench"
  gcc -O2 -I"$peer/llama.cpp-src/include" -I"$peer/llama.cpp-src/ggml/include" \
    "$here/llamacpp_bench.c" -o "$hybrid_bench" "$libllama" "$libs"/libggml.*.so \
    "$libs/libggml-base.so" -lm -Wl,-rpath,"$libs" || die "could not build $here/llamacpp_bench.c"
  hybrid_bench="env LLAMACPP_BINS=${LLAMACPP_BINS:-$libs} $hybrid_bench"
fi
for shape in $shapes; do
  for type in $types; do
    file=$(model_file "$shape" "$type")
    for t in ${threads//,/ }; do
      for round in $(seq "$rounds"); do
        echo "compare.sh: $shape $type, $t thread(s), round $round: seam" >&2
        "$seam" bench -m "$file" -p "$pp" -n "$tg" -d "$depths" -t "$t" -r "$reps" \
          --cache-type "$cache_type" "${membw[@]}" --json |
          jq -c --arg f "$shape-$type" '{engine: "seam", file: $f, bench: .}' >>"$results"
        if [ -n "$cbench" ]; then
          peer_bench=$cbench
          is_recurrent "$shape" && peer_bench=$hybrid_bench
          for d in ${depths//,/ }; do
            echo "compare.sh: $shape $type, $t thread(s), round $round, depth $d: llama.cpp" >&2
            # shellcheck disable=SC2086
            $peer_bench "$file" --threads "$t" --pp "$pp" --tg "$tg" --reps "$reps" --depth "$d" |
              tail -n 1 | jq -c --arg f "$shape-$type" '{engine: "llama.cpp", file: $f, bench: .}' >>"$results"
          done
        fi
      done
    done
  done
done

print_table
