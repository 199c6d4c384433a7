// Hugging Face model directories (config.json, *.safetensors, tokenizer.json,
// tokenizer_config.json) presented as a GgufFile with llama.cpp's metadata
// keys and tensor names, so that admission, weight binding and the tokenizer
// read them exactly as they read the GGUF conversion of the same checkpoint.
//
// Architectures (config.json "architectures"[0]): LlamaForCausalLM and
// MistralForCausalLM -> llama (Mistral's sliding_window is kept as
// llama.attention.sliding_window), MixtralForCausalLM -> llama with experts,
// Qwen2ForCausalLM -> qwen2, Qwen3ForCausalLM -> qwen3, Qwen3MoeForCausalLM ->
// qwen3moe (each layer's experts, one matrix per expert or transformers 5's
// fused gate_up_proj/down_proj, stacked into ffn_*_exps as an owned copy, as
// the converters stack them), Phi3ForCausalLM -> phi3 (fused qkv_proj and
// gate_up_proj, partial rotary, LongRoPE factors as rope_factors_long/short
// tensors), Ministral3ForCausalLM -> mistral3 (YaRN rope_parameters with
// mscale_all_dim and llama_4_scaling_beta), Gemma2ForCausalLM -> gemma2,
// Gemma3ForCausalLM and Gemma3ForConditionalGeneration -> gemma3 (the latter's
// text_config merged over the top level, its language model read from under
// "language_model.", vision tower and projector dropped; absent keys take
// transformers' config defaults; norms get HF's +1 as an owned F32 copy;
// gemma3's embedding rows past the tokenizer are trimmed; a
// query_pre_attn_scalar the recipe cannot reproduce is refused),
// Gemma4ForCausalLM and Gemma4ForConditionalGeneration -> gemma4,
// GptOssForCausalLM -> gpt-oss (MXFP4 expert blocks re-packed, gate/up
// de-interleaved: hf_gpt_oss.cpp), Qwen3NextForCausalLM -> qwen3next and the
// Qwen3_5[Moe]ForCausalLM / ...ForConditionalGeneration classes -> qwen35 /
// qwen35moe (norms +1, -exp(A_log), qkvz split, value-head order:
// hf_hybrid.cpp); others are refused by name. rope_scaling (or rope_parameters)
// becomes `<arch>.rope.scaling.*` keys: linear, yarn (with beta_fast/slow,
// attention_factor, mscale_all_dim), llama3 (rope_freqs.weight). For llama, HF stores Q/K rows in
// the "halves" RoPE layout; they are permuted at load into the adjacent-pair layout the GGUF
// converters write (an owned copy), so both load paths give the same weights byte for byte. Every
// other tensor points into the mapping.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "format/gguf.h"

namespace seam {

// True when `path` is a directory holding config.json.
bool is_hf_model_dir(const std::string& path);

// Reads a model directory. Throws Error(Io) for missing files, Error(BadFormat)
// for inconsistent ones and Error(Unsupported) naming an architecture, dtype,
// tensor or tokenizer this build cannot map.
GgufFile open_hf_model(const std::string& dir, Residency residency = Residency::kMapped);

// The tokenizer.ggml.* and tokenizer.chat_template* metadata of a directory's
// tokenizer.json + tokenizer_config.json (config.json supplies fallback
// bos/eos ids). Throws like open_hf_model.
std::vector<std::pair<std::string, GgufValue>> hf_tokenizer_metadata(const std::string& dir);

// Opens a model path of either kind: a GGUF file or a Hugging Face directory,
// its weight bytes held as `residency` says (core/mapped_file.h).
GgufFile open_model_file(const std::string& path, Residency residency = Residency::kMapped);

}  // namespace seam
