// Internal to the Hugging Face model import: what hf_model.cpp (the general
// mapping) shares with the per-family rules in hf_experts.cpp (mixture of
// experts) and hf_gemma.cpp (Gemma 2/3/4). Not part of the format module's
// interface; format/hf_model.h is.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "format/gguf.h"
#include "format/hf_json.h"
#include "format/safetensors.h"

namespace seam::hf_import {

using hf::json;
using KeyValues = std::vector<std::pair<std::string, GgufValue>>;
// Tensors computed from the config (rope factors), F32, by GGUF name.
using ExtraTensors = std::vector<std::pair<std::string, std::vector<float>>>;
// What the assembled file's owned tensor copies hang on.
using Keepalive = std::vector<std::shared_ptr<const void>>;

[[noreturn]] void bad(const std::string& file, const std::string& what);

// How a class names its mixture-of-experts tensors and keys.
enum class Moe {
  kNone,
  kGptOss,  // mlp.router, mlp.experts.{gate_up,down}_proj{_blocks,_scales,_bias}; num_local_experts
  kQwen,    // mlp.gate, mlp.experts.E.{gate,up,down}_proj; num_experts
  kMixtral,  // block_sparse_moe.gate, block_sparse_moe.experts.E.w{1,3,2}; num_local_experts
};

struct HfArch {
  std::string_view hf_name;  // config.json "architectures"[0]
  std::string_view arch;     // general.architecture
  bool permute_qk;           // HF "halves" rows -> GGUF adjacent pairs (llama only)
  Moe moe = Moe::kNone;
};

// Larger heads exist nowhere; the bound keeps hostile values from sizing loops.
constexpr std::uint64_t kMaxHeadDim = 1u << 16;
// Per-layer tables are sized by num_hidden_layers before the weights are read:
// far above any published model (a few hundred), far below a hostile value.
constexpr std::uint64_t kMaxLayers = 1u << 14;
// As the GGUF loader's bound (model/hparams.cpp): far above real models (512).
constexpr std::uint64_t kMaxExperts = 4096;

// The hyperparameters the mapping itself needs (the rest are copied as keys).
struct Config {
  const HfArch* arch = nullptr;
  std::uint64_t n_embd = 0, n_layer = 0, n_head = 0, n_head_kv = 0, head_dim = 0;
  std::uint64_t n_expert = 0;     // 0: a dense model
  std::uint64_t n_ff_expert = 0;  // each expert's FFN width
  struct {                        // gated-delta-net layers (hybrids)
    std::uint64_t d_conv = 0, head_k_dim = 0, head_v_dim = 0, n_head_k = 0, n_head_v = 0;
  } linear;
  bool tied = false;
};

// The row of config.json's "architectures"[0]; nullptr for a class seam lacks.
const HfArch* find_arch(std::string_view hf_name);
// HF tensor name -> GGUF tensor name for the tensors every family shares;
// nullopt for tensors the converters drop. Throws Error(Unsupported) for a
// name with no counterpart. (Expert matrices are expert_part's.)
std::optional<std::string> gguf_name(std::string_view name, const Config& c);
// A GGUF tensor over bytes it owns (kept alive by `keepalive`).
GgufTensor owned_tensor(std::string name, TensorType type, std::vector<std::uint64_t> ne,
                        std::shared_ptr<std::vector<std::byte>> data, Keepalive& keepalive);
// A 1-D F32 GGUF tensor of `values`.
GgufTensor owned_f32_tensor(std::string name, std::vector<float> values, Keepalive& keepalive);
// A float tensor's values as float32 (exact for F16/BF16).
std::vector<float> widen_to_f32(const SafetensorsTensor& st);
// A required key holding a count in [1, 2^31].
std::uint64_t require_positive(const json& cfg, std::string_view key, const std::string& file);
GgufValue u32_value(std::uint64_t v);
// Sets `key` in kv, replacing what read_config wrote for it.
void set_key(KeyValues& kv, const std::string& key, GgufValue v);
// "<N>.<rest>" with N below `limit`: {N, rest}.
std::optional<std::pair<std::uint64_t, std::string_view>> numbered(std::string_view s,
                                                                   std::uint64_t limit);
// "model.layers.<N>.<suffix>" with N below the layer count: {N, suffix}.
std::optional<std::pair<std::uint64_t, std::string_view>> layer_tensor(std::string_view name,
                                                                       const Config& c);

// ---- Mixture of experts (hf_experts.cpp) -----------------------------------

// The expert keys of config.json as llama.cpp's converters write them; sets
// c.n_expert.
void read_expert_config(const json& cfg, const std::string& file, Config& c, KeyValues& kv);

enum class ExpertMatrix { kGate, kUp, kDown, kGateUp /* fused 3-D: rows [gate; up] */ };

struct ExpertPart {
  std::uint64_t layer = 0;
  ExpertMatrix matrix = ExpertMatrix::kGate;
  std::optional<std::uint64_t> expert;  // nullopt: the fused 3-D tensor of every expert
};

// Where an expert weight goes; nullopt for any other tensor.
std::optional<ExpertPart> expert_part(std::string_view name, const Config& c);

// One layer's experts of one matrix: one tensor per expert, or the fused one
// (for gate and up: which half of each expert's rows of gate_up_proj).
struct ExpertStack {
  std::vector<const SafetensorsTensor*> per_expert;
  const SafetensorsTensor* fused = nullptr;
  std::optional<int> fused_half;  // 0: gate rows, 1: up rows; nullopt: all rows
};
using ExpertStacks = std::map<std::pair<std::uint64_t, ExpertMatrix>, ExpertStack>;

void collect_expert(const SafetensorsTensor& st, const ExpertPart& part, const Config& c,
                    ExpertStacks& stacks);
// The stacked GGUF tensor of one layer and matrix.
GgufTensor stack_experts(std::uint64_t layer, ExpertMatrix matrix, const ExpertStack& s,
                         const Config& c, Keepalive& keepalive);

// ---- gpt-oss (hf_gpt_oss.cpp) ----------------------------------------------

// The keys read_config does not write (the window), and refusals of what the
// recipe cannot run (another layer_types pattern, SwiGLU limit or alpha,
// quantization method), each naming its config key.
void read_gpt_oss_config(const json& cfg, const std::string& file, const Config& c, KeyValues& kv);
// gpt-oss's own names (post_attention_norm, sinks, router, output bias), else
// gguf_name's.
std::optional<std::string> gpt_oss_gguf_name(std::string_view name, const Config& c);

// One layer's expert tensors as the checkpoint names them.
struct GptOssLayerExperts {
  const SafetensorsTensor *gate_up_blocks = nullptr, *gate_up_scales = nullptr,
                          *down_blocks = nullptr, *down_scales = nullptr;
  const SafetensorsTensor *gate_up = nullptr, *down = nullptr;  // dequantized checkpoints
  const SafetensorsTensor *gate_up_bias = nullptr, *down_bias = nullptr;
};
using GptOssExpertSets = std::map<std::uint64_t, GptOssLayerExperts>;

// Files an expert tensor of a layer; false for any other tensor.
bool collect_gpt_oss_expert(const SafetensorsTensor& st, const Config& c, GptOssExpertSets& sets);
// A layer's six GGUF expert tensors (gate/up/down weights and biases), owned
// copies: MXFP4 re-packed, or the dequantized matrices transposed.
void gpt_oss_expert_tensors(std::uint64_t layer, const GptOssLayerExperts& L, const Config& c,
                            std::vector<GgufTensor>& out, Keepalive& keepalive);

// ---- Gated DeltaNet hybrids (hf_hybrid.cpp) --------------------------------

bool is_hybrid(const HfArch& a);
// The ssm.* keys, full_attention_interval (checked against layer_types), the
// partial rotary and Qwen3.5's M-RoPE sections, the shared expert's width;
// sets c.linear.
void read_hybrid_config(const json& cfg, const std::string& file, Config& c, KeyValues& kv);
// A tensor name with "language_model." removed (the ...ForConditionalGeneration
// layout); nullopt for the dropped MTP and vision tensors.
std::optional<std::string> hybrid_text_name(std::string_view hf_name);
// Appends the GGUF tensors of a hybrid-specific HF tensor (`name` as
// hybrid_text_name gives it) with the converters' value changes; false for a
// tensor the shared mapping handles.
bool hybrid_tensors(const SafetensorsTensor& st, std::string_view name, const Config& c,
                    std::vector<GgufTensor>& out, Keepalive& keepalive);

// ---- Gemma 2 / 3 / 4 (hf_gemma.cpp) ----------------------------------------

bool is_gemma(const HfArch& a);
// A Gemma configuration (text_config already merged) completed as
// transformers reads it: absent keys take its defaults, newer transformers'
// rope_parameters become the older keys; Gemma 4 experts are refused.
void gemma_text_config(json& cfg, const HfArch& arch, const std::string& file);
// The gemma2/gemma3 keys read_config does not write.
void read_gemma_config(const json& cfg, const std::string& file, const Config& c, KeyValues& kv);
// Gemma 4's keys and rope_freqs.weight.
void read_gemma4_config(const json& cfg, const std::string& file, const Config& c, KeyValues& kv,
                        ExtraTensors& extra);
// A Gemma HF tensor name -> GGUF name; nullopt for dropped tensors.
std::optional<std::string> gemma_gguf_name(std::string_view hf_name, const Config& c);
// The Gemma value changes of a mapped tensor (norms +1, trimmed embeddings).
void gemma_adjust(const SafetensorsTensor& st, const Config& c, std::uint64_t n_tokens,
                  GgufTensor& t, Keepalive& keepalive);

}  // namespace seam::hf_import
