#!/usr/bin/env bash
# The Hugging Face fixtures of the hf_config, hf_tokenizer and safetensors
# fuzz targets: small random-weight directories written by tools/hf.py, one
# per architecture and tokenizer shape. `llama/` lends its weights and
# tokenizer to every fuzzed config.json; every directory's config.json,
# tokenizer.json and safetensors files are seeds.
#
#   fuzz/make_hf_fixtures.sh OUT_DIR [PYTHON]
set -euo pipefail
out="$1"
py="${2:-python3}"
hf="$(dirname "$0")/../tools/hf.py"
mkdir -p "$out"
gen() {
  local name="$1"
  shift
  [ -f "$out/$name/config.json" ] || "$py" "$hf" gen --out "$out/$name" "$@" >/dev/null
}
gen llama --dim 32 --layers 2 --heads 2 --ffn 48 --seed 1
gen llama3_sharded --dim 32 --layers 2 --heads 4 --kv-heads 2 --ffn 48 --seed 2 \
  --llama3-rope-freqs --ctx 64 --shards 2 --st-dtype BF16
gen mistral_yarn --dim 32 --layers 1 --heads 2 --kv-heads 1 --ffn 48 --seed 3 \
  --hf-arch MistralForCausalLM --window 16 --yarn 4 --orig-ctx 64 --metaspace
gen qwen2 --arch qwen2 --dim 32 --layers 1 --heads 2 --kv-heads 1 --ffn 48 --seed 4 --st-dtype F16
gen qwen3 --arch qwen3 --dim 32 --layers 1 --heads 2 --kv-heads 1 --head-dim 16 --ffn 48 --seed 5 \
  --tied
gen phi3 --arch phi3 --dim 32 --layers 1 --heads 2 --kv-heads 1 --ffn 48 --rope-dim 8 --seed 6 \
  --longrope --orig-ctx 64 --template-list
gen gemma2 --arch gemma2 --dim 32 --layers 2 --heads 2 --kv-heads 1 --head-dim 16 --ffn 48 \
  --window 5 --attn-softcap 8 --final-softcap 6 --seed 7
gen gemma3 --arch gemma3 --hf-arch Gemma3ForConditionalGeneration --dim 32 --layers 2 --heads 2 \
  --kv-heads 1 --head-dim 16 --ffn 48 --window 4 --seed 8
# The per-layer families (tools/families.py's fixed shape): gpt-oss's U8 MXFP4 blocks, the
# hybrids' linear-attention keys and tensors, a multimodal class with text_config.
gen gpt_oss --arch gpt-oss --seed 9
gen qwen3next --arch qwen3next --seed 10
gen qwen35moe_cg --arch qwen35moe --hf-arch Qwen3_5MoeForConditionalGeneration --seed 11 \
  --st-dtype BF16
