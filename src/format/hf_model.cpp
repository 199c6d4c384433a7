#include "format/hf_model.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <numbers>
#include <optional>
#include <span>
#include <string_view>

#include "core/half.h"
#include "format/gemma_attention.h"
#include "format/hf_json.h"
#include "format/safetensors.h"
#include "seam/error.h"

namespace seam {

namespace {

using hf::json;
namespace fs = std::filesystem;

[[noreturn]] void bad(const std::string& file, const std::string& what) {
  throw Error(Errc::BadFormat, "[hf] " + file + ": " + what);
}

// How a class names its mixture-of-experts tensors and keys.
enum class Moe {
  kNone,
  kQwen,     // mlp.gate, mlp.experts.E.{gate,up,down}_proj; num_experts
  kMixtral,  // block_sparse_moe.gate, block_sparse_moe.experts.E.w{1,3,2}; num_local_experts
};

struct HfArch {
  std::string_view hf_name;  // config.json "architectures"[0]
  std::string_view arch;     // general.architecture
  bool permute_qk;           // HF "halves" rows -> GGUF adjacent pairs (llama only)
  Moe moe = Moe::kNone;
};

constexpr HfArch kArchs[] = {
    {"LlamaForCausalLM", "llama", true},
    {"MistralForCausalLM", "llama", true},
    {"MixtralForCausalLM", "llama", true, Moe::kMixtral},
    {"Qwen2ForCausalLM", "qwen2", false},
    {"Qwen3ForCausalLM", "qwen3", false},
    {"Qwen3MoeForCausalLM", "qwen3moe", false, Moe::kQwen},
    {"Phi3ForCausalLM", "phi3", false},
    {"Ministral3ForCausalLM", "mistral3", true},
    {"Gemma2ForCausalLM", "gemma2", false},
    {"Gemma3ForCausalLM", "gemma3", false},
    {"Gemma3ForConditionalGeneration", "gemma3", false},
    {"Gemma4ForCausalLM", "gemma4", false},
    {"Gemma4ForConditionalGeneration", "gemma4", false},
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
  std::uint64_t n_expert = 0;  // 0: a dense model
  bool tied = false;
};

std::uint64_t require_positive(const json& cfg, std::string_view key, const std::string& file) {
  auto v = hf::get_uint(cfg, key, file);
  if (!v) bad(file, "lacks required key '" + std::string(key) + "'");
  if (*v == 0 || *v > (1ull << 31)) {
    bad(file, "'" + std::string(key) + "' = " + std::to_string(*v) + " is out of range");
  }
  return *v;
}

// Llama 3 rope frequency factors as the GGUF converters compute them; the
// converters hold the base frequencies in float32, so they are rounded to
// float32 here too, the rest is double, the factors are rounded to float32
// (tools/hf.py computes the same numbers).
std::vector<float> llama3_rope_factors(const json& rs, double base, std::uint64_t dim,
                                       const std::string& file) {
  const double factor = hf::get_number(rs, "factor", file).value_or(8.0);
  const double low = hf::get_number(rs, "low_freq_factor", file).value_or(1.0);
  const double high = hf::get_number(rs, "high_freq_factor", file).value_or(4.0);
  const double old_ctx =
      hf::get_number(rs, "original_max_position_embeddings", file).value_or(8192.0);
  if (!(factor > 0) || !(low > 0) || !(high > low) || !(old_ctx > 0)) {
    bad(file, "rope_scaling (llama3) needs factor > 0 and 0 < low_freq_factor < high_freq_factor");
  }
  const double low_wavelen = old_ctx / low, high_wavelen = old_ctx / high;
  std::vector<float> out;
  for (std::uint64_t i = 0; i < dim; i += 2) {
    const float freq =
        static_cast<float>(1.0 / std::pow(base, static_cast<double>(i) / static_cast<double>(dim)));
    const double wavelen = 2.0 * std::numbers::pi / freq;
    double f;
    if (wavelen < high_wavelen) {
      f = 1.0;
    } else if (wavelen > low_wavelen) {
      f = factor;
    } else {
      const double smooth = (old_ctx / wavelen - low) / (high - low);
      f = 1.0 / ((1.0 - smooth) / factor + smooth);
    }
    out.push_back(static_cast<float>(f));
  }
  return out;
}

// LongRoPE frequency divisors from config.json, one per rotated pair.
std::vector<float> longrope_factors(const json& rs, std::string_view key, std::uint64_t n_rot,
                                    const std::string& file) {
  const auto it = rs.find(key);
  if (it == rs.end() || !it->is_array() || it->size() != n_rot / 2) {
    bad(file, "rope_scaling (longrope) needs '" + std::string(key) + "' with " +
                  std::to_string(n_rot / 2) + " numbers (one per rotated pair)");
  }
  std::vector<float> out;
  for (const json& v : *it) {
    if (!v.is_number() || !(v.get<double>() > 0.0 && v.get<double>() < 1e9)) {
      bad(file,
          "rope_scaling '" + std::string(key) + "' holds a non-positive or non-numeric entry");
    }
    out.push_back(static_cast<float>(v.get<double>()));
  }
  return out;
}

GgufValue u32_value(std::uint64_t v) { return GgufValue::u32(static_cast<std::uint32_t>(v)); }

// The mixture-of-experts keys, as llama.cpp's converters write them. Both
// engines renormalise the chosen experts' weights to sum 1 (llama.cpp's
// qwen3moe graph does so unconditionally) and put experts in every layer, so
// a Qwen3-MoE config that asks otherwise is refused rather than run
// differently from how it was trained.
void read_expert_config(const json& cfg, const std::string& file, Config& c,
                        std::vector<std::pair<std::string, GgufValue>>& kv) {
  const bool qwen = c.arch->moe == Moe::kQwen;
  const std::string a(c.arch->arch);
  const char* count_key = qwen ? "num_experts" : "num_local_experts";
  c.n_expert = require_positive(cfg, count_key, file);
  if (c.n_expert > kMaxExperts) {
    bad(file, "'" + std::string(count_key) + "' = " + std::to_string(c.n_expert) +
                  " is out of range (at most " + std::to_string(kMaxExperts) + ")");
  }
  const std::uint64_t used = require_positive(cfg, "num_experts_per_tok", file);
  if (used > c.n_expert) {
    bad(file, "'num_experts_per_tok' = " + std::to_string(used) + " exceeds '" + count_key +
                  "' = " + std::to_string(c.n_expert));
  }
  kv.emplace_back(a + ".expert_count", u32_value(c.n_expert));
  kv.emplace_back(a + ".expert_used_count", u32_value(used));
  if (!qwen) return;
  kv.emplace_back(a + ".expert_feed_forward_length",
                  u32_value(require_positive(cfg, "moe_intermediate_size", file)));
  if (!hf::get_bool(cfg, "norm_topk_prob", file).value_or(false)) {
    throw Error(Errc::Unsupported,
                "[hf] " + file +
                    ": 'norm_topk_prob' is false (transformers' default when the key is absent); "
                    "seam, like llama.cpp, runs Qwen3-MoE with the chosen experts' weights "
                    "renormalised to sum 1");
  }
  if (const auto step = hf::get_uint(cfg, "decoder_sparse_step", file); step && *step != 1) {
    throw Error(Errc::Unsupported, "[hf] " + file +
                                       ": 'decoder_sparse_step' = " + std::to_string(*step) +
                                       "; seam's qwen3moe recipe has experts in every layer");
  }
  if (const auto it = cfg.find("mlp_only_layers"); it != cfg.end() && !it->is_null()) {
    if (!it->is_array()) bad(file, "'mlp_only_layers' must be a list of layer numbers");
    if (!it->empty()) {
      throw Error(Errc::Unsupported,
                  "[hf] " + file +
                      ": 'mlp_only_layers' names dense layers; seam's qwen3moe recipe has experts "
                      "in every layer");
    }
  }
}

Config read_config(const json& cfg, const std::string& file,
                   std::vector<std::pair<std::string, GgufValue>>& kv,
                   std::vector<std::pair<std::string, std::vector<float>>>& extra) {
  Config c;
  const auto archs = cfg.find("architectures");
  if (archs == cfg.end() || !archs->is_array() || archs->empty() || !(*archs)[0].is_string()) {
    bad(file, "lacks an 'architectures' list naming the model class");
  }
  const std::string hf_name = (*archs)[0].get<std::string>();
  for (const HfArch& a : kArchs) {
    if (a.hf_name == hf_name) c.arch = &a;
  }
  if (!c.arch) {
    std::string known;
    for (const HfArch& a : kArchs) known += (known.empty() ? "" : ", ") + std::string(a.hf_name);
    throw Error(Errc::Unsupported, "[hf] " + file + ": unsupported Hugging Face architecture '" +
                                       hf_name + "' (supported: " + known + ")");
  }
  const std::string a(c.arch->arch);
  c.n_embd = require_positive(cfg, "hidden_size", file);
  c.n_layer = require_positive(cfg, "num_hidden_layers", file);
  if (c.n_layer > kMaxLayers) {
    bad(file, "'num_hidden_layers' = " + std::to_string(c.n_layer) + " is out of range (at most " +
                  std::to_string(kMaxLayers) + ")");
  }
  c.n_head = require_positive(cfg, "num_attention_heads", file);
  c.n_head_kv = hf::get_uint(cfg, "num_key_value_heads", file).value_or(c.n_head);
  if (c.n_head_kv == 0 || c.n_head_kv > c.n_head) {
    bad(file, "'num_key_value_heads' = " + std::to_string(c.n_head_kv) + " is out of range");
  }
  const std::uint64_t n_ff = require_positive(cfg, "intermediate_size", file);
  const auto head_dim = hf::get_uint(cfg, "head_dim", file);
  if (head_dim && (*head_dim == 0 || *head_dim > kMaxHeadDim)) {
    bad(file, "'head_dim' = " + std::to_string(*head_dim) + " is out of range");
  }
  if (!head_dim && c.n_embd % c.n_head != 0) {
    bad(file, "'num_attention_heads' does not divide 'hidden_size' and there is no 'head_dim'");
  }
  c.head_dim = head_dim.value_or(c.n_embd / c.n_head);
  const double eps = hf::get_number(cfg, "rms_norm_eps", file).value_or(1e-6);
  // Newer transformers write "rope_parameters" (with rope_theta inside) where
  // older ones wrote "rope_scaling"; both mean the same fields.
  auto rs = cfg.find("rope_scaling");
  if (rs == cfg.end() || rs->is_null()) rs = cfg.find("rope_parameters");
  // gemma4's rope_parameters, one entry per attention type, are read_gemma4_config's.
  const bool has_rs = a != "gemma4" && rs != cfg.end() && !rs->is_null();
  if (has_rs && !rs->is_object()) bad(file, "'rope_scaling' must be an object");
  std::optional<double> theta_opt = hf::get_number(cfg, "rope_theta", file);
  if (!theta_opt && has_rs) theta_opt = hf::get_number(*rs, "rope_theta", file);
  const double theta = theta_opt.value_or(10000.0);
  c.tied = hf::get_bool(cfg, "tie_word_embeddings", file).value_or(false);

  const auto& u32 = u32_value;
  kv.emplace_back(a + ".block_count", u32(c.n_layer));
  if (auto ctx = hf::get_uint(cfg, "max_position_embeddings", file)) {
    kv.emplace_back(a + ".context_length", u32(std::min<std::uint64_t>(*ctx, UINT32_MAX / 4)));
  }
  kv.emplace_back(a + ".embedding_length", u32(c.n_embd));
  kv.emplace_back(a + ".feed_forward_length", u32(n_ff));
  kv.emplace_back(a + ".attention.head_count", u32(c.n_head));
  kv.emplace_back(a + ".attention.head_count_kv", u32(c.n_head_kv));
  kv.emplace_back(a + ".rope.freq_base", GgufValue::f32(static_cast<float>(theta)));
  kv.emplace_back(a + ".attention.layer_norm_rms_epsilon", GgufValue::f32(static_cast<float>(eps)));
  if (head_dim) {
    kv.emplace_back(a + ".attention.key_length", u32(*head_dim));
    kv.emplace_back(a + ".attention.value_length", u32(*head_dim));
  }
  // Partial rotary (phi3 family): the converters' int(pct * n_embd) // n_head.
  std::uint64_t n_rot = c.head_dim;
  if (auto pct = hf::get_number(cfg, "partial_rotary_factor", file)) {
    if (!(*pct > 0.0 && *pct <= 1.0)) bad(file, "'partial_rotary_factor' must be in (0, 1]");
    n_rot = static_cast<std::uint64_t>(*pct * static_cast<double>(c.n_embd)) / c.n_head;
  }
  kv.emplace_back(a + ".rope.dimension_count", u32(n_rot));
  const auto max_pos = hf::get_uint(cfg, "max_position_embeddings", file);
  if (a == "phi3") {
    // As phi3's converter writes them: the training context, and the window
    // (0 for none), which the recipe leaves unapplied as llama.cpp does.
    std::optional<std::uint64_t> orig;
    if (has_rs) orig = hf::get_uint(*rs, "original_max_position_embeddings", file);
    if (!orig) orig = hf::get_uint(cfg, "original_max_position_embeddings", file);
    if (orig) {
      if (*orig < 2 || *orig > UINT32_MAX / 4)
        bad(file, "'original_max_position_embeddings' is out of range");
      kv.emplace_back(a + ".rope.scaling.original_context_length", u32(*orig));
    }
    const auto window = hf::get_uint(cfg, "sliding_window", file);
    kv.emplace_back(a + ".attention.sliding_window",
                    u32(std::min<std::uint64_t>(window.value_or(0), UINT32_MAX)));
  }
  if (c.arch->moe != Moe::kNone) read_expert_config(cfg, file, c, kv);
  if (c.arch->hf_name == "MistralForCausalLM" || c.arch->hf_name == "MixtralForCausalLM") {
    // HF applies Mistral's and Mixtral's window to every layer; llama.cpp's
    // converter drops it, seam keeps it (the llama recipe applies a window the
    // file states).
    if (const auto window = hf::get_uint(cfg, "sliding_window", file); window && *window > 0) {
      if (*window > UINT32_MAX / 4) bad(file, "'sliding_window' is out of range");
      kv.emplace_back(a + ".attention.sliding_window", u32(*window));
    }
  }
  if (auto vocab = hf::get_uint(cfg, "vocab_size", file)) {
    kv.emplace_back(a + ".vocab_size", u32(std::min<std::uint64_t>(*vocab, UINT32_MAX / 4)));
  }
  if (has_rs) {
    auto type = hf::get_string(*rs, "rope_type", file);
    if (!type) type = hf::get_string(*rs, "type", file);
    if (!type) bad(file, "'rope_scaling' names no 'rope_type'");
    const std::string r = a + ".rope.scaling.";
    const auto f32 = [](double v) { return GgufValue::f32(static_cast<float>(v)); };
    if (*type == "llama3") {
      extra.emplace_back("rope_freqs.weight", llama3_rope_factors(*rs, theta, c.head_dim, file));
    } else if ((*type == "longrope" || *type == "su") && a == "phi3") {
      // phi3's converter: the factors as tensors, no scaling type, and the
      // attention factor. HF's definition of the latter is followed where the
      // converter differs: an explicit attention_factor / factor wins over
      // sqrt(1 + ln s / ln n_orig) with s = max_position_embeddings / n_orig.
      extra.emplace_back("rope_factors_long.weight",
                         longrope_factors(*rs, "long_factor", n_rot, file));
      extra.emplace_back("rope_factors_short.weight",
                         longrope_factors(*rs, "short_factor", n_rot, file));
      std::optional<std::uint64_t> orig =
          hf::get_uint(*rs, "original_max_position_embeddings", file);
      if (!orig) orig = hf::get_uint(cfg, "original_max_position_embeddings", file);
      if (!orig || *orig < 2 || !max_pos) {
        bad(file,
            "rope_scaling (longrope) needs 'original_max_position_embeddings' (>= 2) and "
            "'max_position_embeddings'");
      }
      double attn = 1.0;
      if (auto af = hf::get_number(*rs, "attention_factor", file)) {
        if (!(*af > 0.0 && *af < 1e3)) bad(file, "rope_scaling 'attention_factor' is out of range");
        attn = *af;
      } else {
        const double scale =
            hf::get_number(*rs, "factor", file)
                .value_or(static_cast<double>(*max_pos) / static_cast<double>(*orig));
        if (scale > 1.0)
          attn = std::sqrt(1.0 + std::log(scale) / std::log(static_cast<double>(*orig)));
      }
      kv.emplace_back(r + "attn_factor", f32(attn));
    } else if (*type != "default") {
      // Copied as the converters do; the architecture's recipe accepts or
      // refuses the type by name at admission.
      kv.emplace_back(r + "type", GgufValue::str(*type));
      if (auto f = hf::get_number(*rs, "factor", file)) kv.emplace_back(r + "factor", f32(*f));
      if (auto orig = hf::get_uint(*rs, "original_max_position_embeddings", file)) {
        kv.emplace_back(r + "original_context_length", u32(*orig));
      }
      if (*type == "yarn") {
        if (auto v = hf::get_number(*rs, "beta_fast", file))
          kv.emplace_back(r + "yarn_beta_fast", f32(*v));
        if (auto v = hf::get_number(*rs, "beta_slow", file))
          kv.emplace_back(r + "yarn_beta_slow", f32(*v));
        if (auto v = hf::get_number(*rs, "attention_factor", file)) {
          kv.emplace_back(r + "yarn_attn_factor", f32(*v));
        }
        // HF's mscale / mscale_all_dim ratio; seam (like llama.cpp) holds only
        // mscale_all_dim and takes mscale as 1.
        const auto mscale = hf::get_number(*rs, "mscale", file);
        const auto all_dim = hf::get_number(*rs, "mscale_all_dim", file);
        if (a == "mistral3") {
          // Ministral 3: Llama 4 attention temperature over the original context.
          if (auto beta = hf::get_number(*rs, "llama_4_scaling_beta", file)) {
            kv.emplace_back(a + ".attention.temperature_scale", f32(*beta));
          }
        }
        if (mscale && all_dim && *mscale != 0.0 && *all_dim != 0.0) {
          if (*mscale != 1.0) {
            throw Error(Errc::Unsupported, "[hf] " + file + ": yarn 'mscale' = " +
                                               std::to_string(*mscale) + " (only 1 is supported)");
          }
          kv.emplace_back(r + "yarn_log_multiplier", f32(*all_dim));
        }
      }
    }
  }
  return c;
}

// "<N>.<rest>" with N below `limit`: {N, rest}.
std::optional<std::pair<std::uint64_t, std::string_view>> numbered(std::string_view s,
                                                                   std::uint64_t limit) {
  std::size_t n = 0;
  std::uint64_t value = 0;
  while (n < s.size() && n < 9 && s[n] >= '0' && s[n] <= '9') {
    value = value * 10 + static_cast<std::uint64_t>(s[n] - '0');
    ++n;
  }
  if (n == 0 || n >= s.size() || s[n] != '.' || value >= limit) return std::nullopt;
  return std::pair{value, s.substr(n + 1)};
}

// "model.layers.<N>.<suffix>" with N below the layer count: {N, suffix}.
std::optional<std::pair<std::uint64_t, std::string_view>> layer_tensor(std::string_view name,
                                                                       const Config& c) {
  constexpr std::string_view prefix = "model.layers.";
  if (!name.starts_with(prefix)) return std::nullopt;
  return numbered(name.substr(prefix.size()), c.n_layer);
}

// HF tensor name -> GGUF tensor name; nullopt for tensors the converters drop.
// Throws Error(Unsupported) for a name with no counterpart. (Expert matrices
// are expert_part's.)
std::optional<std::string> gguf_name(std::string_view name, const Config& c) {
  if (name == "model.embed_tokens.weight") return "token_embd.weight";
  if (name == "model.norm.weight") return "output_norm.weight";
  if (name == "lm_head.weight") {
    if (c.tied) return std::nullopt;  // the embedding matrix serves as output
    return "output.weight";
  }
  if (const auto lt = layer_tensor(name, c)) {
    const auto [layer, suffix] = *lt;
    static constexpr std::pair<std::string_view, std::string_view> kLayerNames[] = {
        {"input_layernorm.weight", "attn_norm.weight"},
        {"self_attn.q_proj.weight", "attn_q.weight"},
        {"self_attn.k_proj.weight", "attn_k.weight"},
        {"self_attn.v_proj.weight", "attn_v.weight"},
        {"self_attn.q_proj.bias", "attn_q.bias"},
        {"self_attn.k_proj.bias", "attn_k.bias"},
        {"self_attn.v_proj.bias", "attn_v.bias"},
        {"self_attn.qkv_proj.weight", "attn_qkv.weight"},  // phi3: rows [q; k; v]
        {"self_attn.o_proj.weight", "attn_output.weight"},
        {"self_attn.q_norm.weight", "attn_q_norm.weight"},
        {"self_attn.k_norm.weight", "attn_k_norm.weight"},
        {"post_attention_layernorm.weight", "ffn_norm.weight"},
        {"mlp.gate_proj.weight", "ffn_gate.weight"},
        {"mlp.up_proj.weight", "ffn_up.weight"},
        {"mlp.gate_up_proj.weight", "ffn_up.weight"},  // phi3: rows [gate; up]
        {"mlp.down_proj.weight", "ffn_down.weight"},
    };
    const std::string blk = "blk." + std::to_string(layer) + ".";
    // Rotary caches some exporters save are recomputed from the config.
    if (suffix == "self_attn.rotary_emb.inv_freq") return std::nullopt;
    for (const auto& [hf, gg] : kLayerNames) {
      if (suffix == hf) return blk + std::string(gg);
    }
    const std::string_view router = c.arch->moe == Moe::kQwen      ? "mlp.gate.weight"
                                    : c.arch->moe == Moe::kMixtral ? "block_sparse_moe.gate.weight"
                                                                   : "";
    if (!router.empty() && suffix == router) return blk + "ffn_gate_inp.weight";
  }
  throw Error(Errc::Unsupported, "[hf] tensor '" + std::string(name) +
                                     "' has no counterpart in seam's " + std::string(c.arch->arch) +
                                     " layout");
}

// ---- Mixture of experts -----------------------------------------------------
// Checkpoints hold one matrix per expert (transformers' fused 3-D form holds
// one per layer); GGUF holds one [n_expert, rows, cols] tensor per layer and
// matrix, which the converters stack. The stacks are owned copies.

enum class ExpertMatrix { kGate, kUp, kDown, kGateUp /* fused 3-D: rows [gate; up] */ };

struct ExpertPart {
  std::uint64_t layer = 0;
  ExpertMatrix matrix = ExpertMatrix::kGate;
  std::optional<std::uint64_t> expert;  // nullopt: the fused 3-D tensor of every expert
};

// Where an expert weight goes; nullopt for any other tensor.
std::optional<ExpertPart> expert_part(std::string_view name, const Config& c) {
  if (c.arch->moe == Moe::kNone) return std::nullopt;
  const auto lt = layer_tensor(name, c);
  if (!lt) return std::nullopt;
  const auto [layer, suffix] = *lt;
  const std::string_view prefix =
      c.arch->moe == Moe::kQwen ? "mlp.experts." : "block_sparse_moe.experts.";
  if (!suffix.starts_with(prefix)) return std::nullopt;
  std::string_view rest = suffix.substr(prefix.size());
  if (c.arch->moe == Moe::kQwen) {
    // transformers >= 5 saves the experts of a layer fused (llama.cpp reads both forms).
    if (rest == "gate_up_proj" || rest == "gate_up_proj.weight")
      return ExpertPart{layer, ExpertMatrix::kGateUp, std::nullopt};
    if (rest == "down_proj" || rest == "down_proj.weight")
      return ExpertPart{layer, ExpertMatrix::kDown, std::nullopt};
  }
  const auto numbered_expert = numbered(rest, c.n_expert);
  if (!numbered_expert) return std::nullopt;
  const std::uint64_t expert = numbered_expert->first;
  rest = numbered_expert->second;
  static constexpr std::pair<std::string_view, ExpertMatrix> kQwen[] = {
      {"gate_proj.weight", ExpertMatrix::kGate},
      {"up_proj.weight", ExpertMatrix::kUp},
      {"down_proj.weight", ExpertMatrix::kDown}};
  static constexpr std::pair<std::string_view, ExpertMatrix> kMixtral[] = {
      {"w1.weight", ExpertMatrix::kGate},
      {"w3.weight", ExpertMatrix::kUp},
      {"w2.weight", ExpertMatrix::kDown}};
  for (const auto& [hf, matrix] :
       c.arch->moe == Moe::kQwen ? std::span(kQwen) : std::span(kMixtral)) {
    if (rest == hf) return ExpertPart{layer, matrix, expert};
  }
  return std::nullopt;
}

// One layer's experts of one matrix: one tensor per expert, or the fused one
// (for gate and up: which half of each expert's rows of gate_up_proj).
struct ExpertStack {
  std::vector<const SafetensorsTensor*> per_expert;
  const SafetensorsTensor* fused = nullptr;
  std::optional<int> fused_half;  // 0: gate rows, 1: up rows; nullopt: all rows
};
using ExpertStacks = std::map<std::pair<std::uint64_t, ExpertMatrix>, ExpertStack>;

void collect_expert(const SafetensorsTensor& st, const ExpertPart& part, const Config& c,
                    ExpertStacks& stacks) {
  const ExpertMatrix key = part.matrix == ExpertMatrix::kGateUp ? ExpertMatrix::kGate : part.matrix;
  ExpertStack& s = stacks[{part.layer, key}];
  if (!part.expert) {
    const bool fused_gate_up = part.matrix == ExpertMatrix::kGateUp;
    if (st.shape.size() != 3 || st.shape[0] != c.n_expert ||
        (fused_gate_up && st.shape[1] % 2 != 0)) {
      bad(st.name, "a fused expert tensor must be [" + std::to_string(c.n_expert) + ", " +
                       (fused_gate_up ? "2 x n_ff" : "rows") + ", cols]");
    }
    s.fused = &st;
    if (fused_gate_up) {
      s.fused_half = 0;
      ExpertStack& up = stacks[{part.layer, ExpertMatrix::kUp}];
      up.fused = &st;
      up.fused_half = 1;
    }
    return;
  }
  if (st.shape.size() != 2) bad(st.name, "an expert matrix must be 2-D");
  s.per_expert.resize(c.n_expert, nullptr);
  s.per_expert[*part.expert] = &st;
}

std::string_view expert_tensor_name(ExpertMatrix m) {
  switch (m) {
    case ExpertMatrix::kGate:
      return "ffn_gate_exps.weight";
    case ExpertMatrix::kUp:
      return "ffn_up_exps.weight";
    default:
      return "ffn_down_exps.weight";
  }
}

// The stacked GGUF tensor of one layer and matrix.
GgufTensor stack_experts(std::uint64_t layer, ExpertMatrix matrix, const ExpertStack& s,
                         const Config& c, std::vector<std::shared_ptr<const void>>& keepalive) {
  GgufTensor t;
  t.name = "blk." + std::to_string(layer) + "." + std::string(expert_tensor_name(matrix));
  const std::uint64_t n_expert = c.n_expert;
  if (s.fused) {
    if (!s.per_expert.empty()) bad(s.fused->name, "experts stored both fused and one by one");
    const SafetensorsTensor& st = *s.fused;
    t.type = st.type;
    const std::uint64_t rows = s.fused_half ? st.shape[1] / 2 : st.shape[1], cols = st.shape[2];
    t.ne = {cols, rows, n_expert};
    t.nbytes = st.data.size() / (s.fused_half ? 2 : 1);
    if (!s.fused_half) {
      t.data = st.data.data();
      return t;
    }
    // Each expert's rows are [gate; up]: its gate half, then its up half.
    const std::size_t part = st.data.size() / (2 * n_expert);
    const std::size_t skip = static_cast<std::size_t>(*s.fused_half) * part;
    auto owned = std::make_shared<std::vector<std::byte>>(t.nbytes);
    for (std::uint64_t e = 0; e < n_expert; ++e) {
      std::memcpy(owned->data() + e * part, st.data.data() + e * 2 * part + skip, part);
    }
    t.data = owned->data();
    keepalive.push_back(std::move(owned));
    return t;
  }
  const SafetensorsTensor* first = s.per_expert.empty() ? nullptr : s.per_expert[0];
  for (std::uint64_t e = 0; e < n_expert; ++e) {
    const SafetensorsTensor* st = e < s.per_expert.size() ? s.per_expert[e] : nullptr;
    if (!st) {
      bad("model.layers." + std::to_string(layer),
          "lacks expert " + std::to_string(e) + " of " + std::string(expert_tensor_name(matrix)) +
              " (" + std::to_string(n_expert) + " experts are configured)");
    }
    if (st->type != first->type || st->shape != first->shape) {
      bad(st->name, "differs in type or shape from " + first->name);
    }
  }
  t.type = first->type;
  t.ne = {first->shape[1], first->shape[0], n_expert};
  const std::size_t part = first->data.size();
  t.nbytes = part * n_expert;
  auto owned = std::make_shared<std::vector<std::byte>>(t.nbytes);
  for (std::uint64_t e = 0; e < n_expert; ++e) {
    std::memcpy(owned->data() + e * part, s.per_expert[e]->data.data(), part);
  }
  t.data = owned->data();
  keepalive.push_back(std::move(owned));
  return t;
}

// Q/K rows of each head from the "halves" order [x_0..x_{d/2-1}, y_0..y_{d/2-1}]
// to adjacent pairs [x_0, y_0, x_1, y_1, ...]: GGUF row h*d + 2i + j holds HF
// row h*d + j*d/2 + i (the converters' reshape(n_head, 2, d/2, n).swapaxes(1, 2)).
std::shared_ptr<std::vector<std::byte>> permute_rows(std::span<const std::byte> data,
                                                     std::uint64_t rows, std::uint64_t n_head,
                                                     const std::string& name) {
  if (rows == 0 || rows % (2 * n_head) != 0 || data.size() % rows != 0) {
    bad(name, std::to_string(rows) + " rows cannot be split into " + std::to_string(n_head) +
                  " heads of rotary pairs");
  }
  const std::size_t row = data.size() / rows;
  const std::uint64_t d = rows / n_head, half = d / 2;
  auto out = std::make_shared<std::vector<std::byte>>(data.size());
  for (std::uint64_t h = 0; h < n_head; ++h) {
    for (std::uint64_t i = 0; i < half; ++i) {
      for (std::uint64_t j = 0; j < 2; ++j) {
        std::memcpy(out->data() + (h * d + 2 * i + j) * row,
                    data.data() + (h * d + j * half + i) * row, row);
      }
    }
  }
  return out;
}

// ---- Gemma 2 / Gemma 3 (and what Gemma 4 shares with them) -----------------

bool is_gemma(const HfArch& a) {
  return a.arch == "gemma2" || a.arch == "gemma3" || a.arch == "gemma4";
}

constexpr std::uint64_t kMaxGemmaLayers = 1u << 12;

// transformers' Gemma2Config / Gemma3TextConfig defaults for the keys real
// config.json files leave out (llama.cpp's converter reads configs through
// AutoConfig, so it sees these values too). Structural sizes (hidden_size,
// num_hidden_layers, intermediate_size) stay required.
const json& gemma_defaults(std::string_view arch) {
  static const json gemma2 = {
      {"num_attention_heads", 8u},
      {"num_key_value_heads", 4u},
      {"head_dim", 256u},
      {"rms_norm_eps", 1e-6},
      {"rope_theta", 10000.0},
      {"max_position_embeddings", 8192u},
      {"query_pre_attn_scalar", 256u},
      {"sliding_window", 4096u},
      {"attn_logit_softcapping", 50.0},
      {"final_logit_softcapping", 30.0},
      {"tie_word_embeddings", true},
  };
  static const json gemma3 = {
      {"num_attention_heads", 8u},
      {"num_key_value_heads", 4u},
      {"head_dim", 256u},
      {"rms_norm_eps", 1e-6},
      {"rope_theta", 1000000.0},
      {"max_position_embeddings", 131072u},
      {"query_pre_attn_scalar", 256u},
      {"sliding_window", 4096u},
      {"sliding_window_pattern", 6u},
      {"rope_local_base_freq", 10000.0},
      {"attn_logit_softcapping", nullptr},
      {"final_logit_softcapping", nullptr},
      {"tie_word_embeddings", true},
  };
  // Gemma 4: only what every released config agrees on; sizes, heads, layer
  // types and RoPE stay required (read_gemma4_config names them).
  static const json gemma4 = {
      {"rms_norm_eps", 1e-6},
      {"attn_logit_softcapping", nullptr},
      {"final_logit_softcapping", nullptr},
      {"tie_word_embeddings", true},
  };
  return arch == "gemma2" ? gemma2 : arch == "gemma3" ? gemma3 : gemma4;
}

// Newer transformers write Gemma 3's RoPE as "rope_parameters" with one entry
// per attention type; they become the older keys (rope_theta and rope_scaling
// of the global layers, rope_local_base_freq of the local ones), as the
// converter reads them. Local layers rotate unscaled in the recipe, so a
// scaled sliding_attention entry is refused.
void gemma_rope_parameters(json& cfg, const std::string& file) {
  const auto rp = cfg.find("rope_parameters");
  if (rp == cfg.end() || !rp->is_object() ||
      !(rp->contains("full_attention") || rp->contains("sliding_attention"))) {
    return;
  }
  const json nested = *rp;
  cfg.erase("rope_parameters");
  for (const std::string kind : {"full_attention", "sliding_attention"}) {
    const auto it = nested.find(kind);
    if (it == nested.end() || it->is_null()) continue;
    if (!it->is_object()) bad(file, "'rope_parameters." + kind + "' must be an object");
    const auto theta = hf::get_number(*it, "rope_theta", file);
    auto type = hf::get_string(*it, "rope_type", file);
    if (!type) type = hf::get_string(*it, "type", file);
    const bool scaled = type && *type != "default";
    if (kind == "full_attention") {
      if (theta) cfg["rope_theta"] = *theta;
      cfg["rope_scaling"] = scaled ? *it : json(nullptr);
    } else {
      if (scaled) {
        throw Error(Errc::Unsupported, "[hf] " + file +
                                           ": rope_parameters.sliding_attention has rope_type '" +
                                           *type + "'; Gemma's local layers rotate unscaled");
      }
      if (theta) cfg["rope_local_base_freq"] = *theta;
    }
  }
}

// Gemma 4's mixture-of-experts models (26B-A4B) are a recipe seam lacks.
void refuse_gemma4_experts(const json& cfg, const std::string& file) {
  std::string setting;  // the key that asks for experts, as "'key' = value"
  for (const char* key : {"num_experts", "num_local_experts"}) {
    if (const auto n = hf::get_uint(cfg, key, file); n && *n > 0 && setting.empty())
      setting = "'" + std::string(key) + "' = " + std::to_string(*n);
  }
  if (setting.empty() && hf::get_bool(cfg, "enable_moe_block", file).value_or(false))
    setting = "'enable_moe_block' = true";
  if (!setting.empty()) {
    throw Error(Errc::Unsupported, "[hf] " + file + ": Gemma 4 with experts (" + setting +
                                       ") is not supported; seam's gemma4 recipe runs the "
                                       "dense models (E2B, E4B)");
  }
}

// The configuration a Gemma class reads: the ...ForConditionalGeneration
// classes keep their language model's keys under "text_config", which the
// converter merges over the top level; absent keys take transformers'
// defaults. Other architectures' configs are returned unchanged.
json text_config(const json& raw, const std::string& file) {
  const auto archs = raw.find("architectures");
  if (archs == raw.end() || !archs->is_array() || archs->empty() || !(*archs)[0].is_string()) {
    return raw;  // read_config reports it
  }
  const std::string hf_name = (*archs)[0].get<std::string>();
  const HfArch* arch = nullptr;
  for (const HfArch& a : kArchs) {
    if (a.hf_name == hf_name) arch = &a;
  }
  if (!arch || !is_gemma(*arch)) return raw;
  json cfg = raw;
  if (const auto tc = raw.find("text_config"); tc != raw.end() && !tc->is_null()) {
    if (!tc->is_object()) bad(file, "'text_config' must be an object");
    for (const auto& item : tc->items()) {
      if (item.key() != "architectures") cfg[item.key()] = item.value();
    }
  }
  if (arch->arch == "gemma4") {
    refuse_gemma4_experts(cfg, file);
  } else {
    gemma_rope_parameters(cfg, file);
  }
  for (const auto& item : gemma_defaults(arch->arch).items()) {
    if (!cfg.contains(item.key())) cfg[item.key()] = item.value();
  }
  return cfg;
}

// Which layers use the sliding window, as HF decides it: "layer_types" when
// the config lists them, else gemma2's even layers / gemma3's period
// (`sliding_window_pattern`: layer l is local unless (l + 1) % P == 0).
std::vector<bool> gemma_swa_layers(const json& cfg, const std::string& file, const Config& c) {
  std::vector<bool> flags(c.n_layer);
  if (const auto lt = cfg.find("layer_types"); lt != cfg.end() && !lt->is_null()) {
    if (!lt->is_array() || lt->size() != c.n_layer) {
      bad(file, "'layer_types' must list one entry per layer (" + std::to_string(c.n_layer) + ")");
    }
    for (std::uint64_t l = 0; l < c.n_layer; ++l) {
      const json& t = (*lt)[l];
      if (t == "sliding_attention") {
        flags[l] = true;
      } else if (t != "full_attention") {
        bad(file, "'layer_types' entries must be \"sliding_attention\" or \"full_attention\"");
      }
    }
    return flags;
  }
  std::uint64_t period = 2;
  if (c.arch->arch == "gemma3") {
    const auto p = hf::get_uint(cfg, "sliding_window_pattern", file);
    if (!p || *p == 0) bad(file, "'sliding_window_pattern' must be a positive integer");
    period = *p;
  }
  for (std::uint64_t l = 0; l < c.n_layer; ++l) flags[l] = (l + 1) % period != 0;
  return flags;
}

// The period P the flags follow (layer l local unless (l + 1) % P == 0, as
// llama.cpp's sliding_window_pattern), or 0 when they follow none. P = 1:
// every layer global; P > n_layer: every layer local. The first global layer
// fixes the only candidate.
std::uint64_t swa_period_of(const std::vector<bool>& flags) {
  const auto first_global = std::find(flags.begin(), flags.end(), false);
  const auto p = static_cast<std::uint64_t>(first_global - flags.begin()) + 1;
  for (std::uint64_t l = 0; l < flags.size(); ++l) {
    if (flags[l] != ((l + 1) % p != 0)) return 0;
  }
  return p;
}

// The gemma keys read_config does not write: soft-caps, the window and its
// layers, gemma3's local RoPE base. Refuses what the recipes cannot express,
// naming the config key.
void read_gemma_config(const json& cfg, const std::string& file, const Config& c,
                       std::vector<std::pair<std::string, GgufValue>>& kv) {
  const std::string a(c.arch->arch);
  const auto f32 = [](double v) { return GgufValue::f32(static_cast<float>(v)); };
  // Per-layer flags are built below; no Gemma has more than a few dozen layers.
  if (c.n_layer > kMaxGemmaLayers) {
    bad(file, "'num_hidden_layers' = " + std::to_string(c.n_layer) + " is out of range");
  }

  // GGUF has no key for the attention scale (format/gemma_attention.h): a config asking for
  // another one than the recipe computes cannot be honoured.
  const bool is_27b = gemma::is_27b(a, c.n_layer);
  const auto recipe_scalar = static_cast<double>(
      gemma::query_pre_attn_scalar(a, c.n_layer, c.n_embd, c.n_head, c.head_dim));
  const double qpas = hf::get_number(cfg, "query_pre_attn_scalar", file).value_or(256.0);
  if (qpas != recipe_scalar) {
    throw Error(Errc::Unsupported,
                "[hf] " + file + ": query_pre_attn_scalar = " + std::to_string(qpas) +
                    ", but seam's " + a + " recipe scales attention by 1/sqrt(" +
                    std::to_string(static_cast<std::uint64_t>(recipe_scalar)) + ") (" +
                    (is_27b ? "n_embd / n_head for a " + std::to_string(c.n_layer) + "-layer model"
                            : std::string("head_dim")) +
                    "); GGUF carries no key for other scales");
  }

  const auto cap = [&](const char* key) -> std::optional<double> {
    const auto v = hf::get_number(cfg, key, file);
    if (v && !(*v > 0.0 && *v < 1e9)) {
      bad(file, "'" + std::string(key) + "' = " + std::to_string(*v) + " must be positive");
    }
    return v;
  };
  const auto attn_cap = cap("attn_logit_softcapping");
  const auto final_cap = cap("final_logit_softcapping");
  if (a == "gemma2") {
    // The recipe soft-caps always (missing keys mean 50 / 30, as in llama.cpp).
    for (const auto& [key, v] : {std::pair{"attn_logit_softcapping", attn_cap},
                                 std::pair{"final_logit_softcapping", final_cap}}) {
      if (!v) {
        throw Error(Errc::Unsupported, "[hf] " + file + ": '" + key +
                                           "' is null; seam's gemma2 recipe always soft-caps");
      }
    }
    kv.emplace_back(a + ".attn_logit_softcapping", f32(*attn_cap));
    kv.emplace_back(a + ".final_logit_softcapping", f32(*final_cap));
  } else {
    if (attn_cap) {
      throw Error(Errc::Unsupported,
                  "[hf] " + file + ": 'attn_logit_softcapping' is set, but Gemma 3 has none");
    }
    if (final_cap) kv.emplace_back(a + ".final_logit_softcapping", f32(*final_cap));
  }

  const std::uint64_t window = hf::get_uint(cfg, "sliding_window", file).value_or(0);
  if (window > UINT32_MAX / 4) bad(file, "'sliding_window' is out of range");
  const std::vector<bool> flags = gemma_swa_layers(cfg, file, c);
  const std::string wkey = a + ".attention.sliding_window";
  const std::string pkey = a + ".attention.sliding_window_pattern";
  const std::uint64_t period = swa_period_of(flags);
  const std::uint64_t default_period = a == "gemma2" ? 2 : 6;
  const auto u32 = [](std::uint64_t v) { return GgufValue::u32(static_cast<std::uint32_t>(v)); };
  if (window == 0 || period == 1) {
    // Every layer global. gemma3 states no window (its converter omits the key
    // for pattern 1); gemma2's window defaults to 4096 when unstated, so it
    // gets period 1 (a window of 0 would mask everything in llama.cpp).
    if (a == "gemma2") kv.emplace_back(pkey, u32(1));
  } else {
    kv.emplace_back(wkey, u32(window));
    if (period == 0) {
      // No period fits (layer_types can say anything): per-layer flags, which
      // seam reads; llama.cpp reads only a period and would use its default.
      std::vector<GgufValue> items;
      for (const bool f : flags) items.push_back(GgufValue::boolean(f));
      kv.emplace_back(pkey, GgufValue::array(GgufValueType::BOOL, std::move(items)));
    } else if (period != default_period) {
      kv.emplace_back(pkey, u32(period));
    }
  }
  if (a == "gemma3") {
    const double local_base = hf::get_number(cfg, "rope_local_base_freq", file).value_or(10000.0);
    if (!(local_base > 0.0)) bad(file, "'rope_local_base_freq' must be positive");
    kv.emplace_back(a + ".rope.freq_base_swa", f32(local_base));
  }
}

// ---- Gemma 4 --------------------------------------------------------------

// Sets `key` in kv, replacing what read_config wrote for it.
void set_key(std::vector<std::pair<std::string, GgufValue>>& kv, const std::string& key,
             GgufValue v) {
  for (auto& p : kv) {
    if (p.first == key) {
      p.second = std::move(v);
      return;
    }
  }
  kv.emplace_back(key, std::move(v));
}

// The full_attention layers' value of a per-type setting: the top-level key,
// else `per_layer_config`'s entry for the lowest full_attention layer that
// states it (the converter takes the first one it meets).
std::optional<std::uint64_t> gemma4_full_value(const json& cfg, std::string_view key,
                                               std::string_view per_layer_key,
                                               const std::vector<bool>& swa,
                                               const std::string& file) {
  if (auto v = hf::get_uint(cfg, key, file)) return v;
  const auto plc = cfg.find("per_layer_config");
  if (plc == cfg.end() || plc->is_null()) return std::nullopt;
  if (!plc->is_object()) bad(file, "'per_layer_config' must be an object");
  std::optional<std::uint64_t> best_layer, value;
  for (const auto& item : plc->items()) {
    const std::string& k = item.key();
    if (k.empty() || k.size() > 9 ||
        !std::all_of(k.begin(), k.end(), [](char ch) { return ch >= '0' && ch <= '9'; })) {
      bad(file, "'per_layer_config' keys must be layer numbers");
    }
    const std::uint64_t l = std::stoull(k);
    if (l >= swa.size() || swa[l] || !item.value().is_object()) continue;
    const auto v = hf::get_uint(item.value(), per_layer_key, file);
    if (v && (!best_layer || l < *best_layer)) {
      best_layer = l;
      value = v;
    }
  }
  return value;
}

// Gemma 4 (the E models): the keys read_config does not write or writes for
// one layer kind only, as llama.cpp's Gemma4Model converter writes them, and
// rope_freqs.weight for the global layers' "proportional" RoPE. Refuses what
// the gemma4 recipe cannot express, naming the config key.
void read_gemma4_config(const json& cfg, const std::string& file, const Config& c,
                        std::vector<std::pair<std::string, GgufValue>>& kv,
                        std::vector<std::pair<std::string, std::vector<float>>>& extra) {
  const std::string a = "gemma4";
  const auto u32 = [](std::uint64_t v) { return GgufValue::u32(static_cast<std::uint32_t>(v)); };
  const auto f32 = [](double v) { return GgufValue::f32(static_cast<float>(v)); };
  // Per-layer arrays are INT32, as the converter's writer types a list of ints.
  const auto i32 = [](std::uint64_t v) { return GgufValue::i32(static_cast<std::int32_t>(v)); };
  if (c.n_layer > kMaxGemmaLayers) {
    bad(file, "'num_hidden_layers' = " + std::to_string(c.n_layer) + " is out of range");
  }
  const auto require = [&](const json& obj, std::string_view key, std::string_view where) {
    if (!obj.contains(key) || obj.at(std::string(key)).is_null()) {
      bad(file, "lacks required key '" + std::string(where) + std::string(key) + "' (Gemma 4)");
    }
  };
  require(cfg, "head_dim", "");
  require(cfg, "layer_types", "");
  require(cfg, "num_kv_shared_layers", "");

  if (hf::get_number(cfg, "attn_logit_softcapping", file)) {
    throw Error(Errc::Unsupported,
                "[hf] " + file + ": 'attn_logit_softcapping' is set, but Gemma 4 has none");
  }
  if (const auto cap = hf::get_number(cfg, "final_logit_softcapping", file)) {
    if (!(*cap > 0.0 && *cap < 1e9)) bad(file, "'final_logit_softcapping' must be positive");
    kv.emplace_back(a + ".final_logit_softcapping", f32(*cap));
  }

  // Local and global layers: one flag per layer, always (the recipe reads no period).
  const std::vector<bool> swa = gemma_swa_layers(cfg, file, c);
  const bool any_swa = std::find(swa.begin(), swa.end(), true) != swa.end();
  const auto window = hf::get_uint(cfg, "sliding_window", file);
  if (window && (*window == 0 || *window > UINT32_MAX / 4)) {
    bad(file, "'sliding_window' is out of range");
  }
  if (any_swa && !window) bad(file, "has sliding_attention layers but no 'sliding_window'");
  if (window) kv.emplace_back(a + ".attention.sliding_window", u32(*window));
  std::vector<GgufValue> flags;
  for (const bool f : swa) flags.push_back(GgufValue::boolean(f));
  kv.emplace_back(a + ".attention.sliding_window_pattern",
                  GgufValue::array(GgufValueType::BOOL, std::move(flags)));

  // Head sizes: head_dim is the local layers', global_head_dim the global ones'.
  const auto hd_full = gemma4_full_value(cfg, "global_head_dim", "head_dim", swa, file);
  if (!hd_full) {
    bad(file,
        "lacks 'global_head_dim' (the full_attention layers' head size), in the config "
        "or its per_layer_config");
  }
  if (*hd_full == 0 || *hd_full > kMaxHeadDim || *hd_full % 2 != 0) {
    bad(file, "'global_head_dim' = " + std::to_string(*hd_full) + " is out of range");
  }
  const std::uint64_t hd_swa = c.head_dim;
  set_key(kv, a + ".attention.key_length", u32(*hd_full));
  set_key(kv, a + ".attention.value_length", u32(*hd_full));
  kv.emplace_back(a + ".attention.key_length_swa", u32(hd_swa));
  kv.emplace_back(a + ".attention.value_length_swa", u32(hd_swa));

  // KV heads per layer kind, when the global layers have their own count.
  if (const auto kv_full =
          gemma4_full_value(cfg, "num_global_key_value_heads", "num_key_value_heads", swa, file)) {
    if (*kv_full == 0 || *kv_full > c.n_head) {
      bad(file, "'num_global_key_value_heads' = " + std::to_string(*kv_full) + " is out of range");
    }
    std::vector<GgufValue> heads;
    for (const bool f : swa) heads.push_back(i32(f ? c.n_head_kv : *kv_full));
    set_key(kv, a + ".attention.head_count_kv",
            GgufValue::array(GgufValueType::INT32, std::move(heads)));
  }

  // Shared KV, and the double-wide FFN of the layers that share.
  const std::uint64_t shared = hf::get_uint(cfg, "num_kv_shared_layers", file).value_or(0);
  if (shared >= c.n_layer) {
    bad(file, "'num_kv_shared_layers' = " + std::to_string(shared) + " leaves no layer of the " +
                  std::to_string(c.n_layer) + " owning a KV cache");
  }
  kv.emplace_back(a + ".attention.shared_kv_layers", u32(shared));
  if (hf::get_bool(cfg, "use_double_wide_mlp", file).value_or(false)) {
    const std::uint64_t n_ff = require_positive(cfg, "intermediate_size", file);
    if (n_ff > UINT32_MAX / 8) bad(file, "'intermediate_size' is out of range");
    std::vector<GgufValue> widths;
    for (std::uint64_t l = 0; l < c.n_layer; ++l) {
      widths.push_back(i32(l < c.n_layer - shared ? n_ff : 2 * n_ff));
    }
    set_key(kv, a + ".feed_forward_length",
            GgufValue::array(GgufValueType::INT32, std::move(widths)));
  }
  const std::uint64_t ple = hf::get_uint(cfg, "hidden_size_per_layer_input", file).value_or(0);
  if (ple > 65536) bad(file, "'hidden_size_per_layer_input' is out of range");
  kv.emplace_back(a + ".embedding_length_per_layer_input", u32(ple));

  // RoPE, one entry per attention type. Global layers: "proportional", i.e.
  // the first partial_rotary_factor of the pairs rotate at the frequencies of
  // a global_head_dim rotation and the rest stay put (divisor 1e30).
  const auto rp = cfg.find("rope_parameters");
  if (rp == cfg.end() || !rp->is_object() || !rp->contains("full_attention") ||
      !(*rp)["full_attention"].is_object()) {
    bad(file,
        "lacks 'rope_parameters.full_attention' (Gemma 4 configures RoPE per "
        "attention type)");
  }
  const json& full = (*rp)["full_attention"];
  const auto full_type = hf::get_string(full, "rope_type", file).value_or("default");
  if (full_type != "proportional") {
    throw Error(Errc::Unsupported, "[hf] " + file +
                                       ": rope_parameters.full_attention has "
                                       "rope_type '" +
                                       full_type +
                                       "'; seam's gemma4 recipe takes Gemma 4's 'proportional'");
  }
  const auto full_theta = hf::get_number(full, "rope_theta", file);
  if (!full_theta || !(*full_theta > 0.0)) {
    bad(file, "'rope_parameters.full_attention.rope_theta' must be present and positive");
  }
  const double pct = hf::get_number(full, "partial_rotary_factor", file).value_or(1.0);
  if (!(pct > 0.0 && pct <= 1.0)) {
    bad(file, "'rope_parameters.full_attention.partial_rotary_factor' must be in (0, 1]");
  }
  set_key(kv, a + ".rope.freq_base", f32(*full_theta));
  set_key(kv, a + ".rope.dimension_count", u32(*hd_full));
  const auto n_pairs = static_cast<std::uint64_t>(static_cast<double>(*hd_full) * pct / 2.0);
  std::vector<float> divisors(*hd_full / 2, 1e30f);  // [global_head_dim / 2]
  std::fill_n(divisors.begin(), std::min<std::uint64_t>(n_pairs, divisors.size()), 1.0f);
  extra.emplace_back("rope_freqs.weight", std::move(divisors));

  // Local layers rotate unscaled at their own base; a partial factor (the
  // sliding_attention entry's, else the rope_parameters' own, as the
  // converter reads it) rotates the first dims only.
  const auto sl = rp->find("sliding_attention");
  if (sl != rp->end() && !sl->is_null() && !sl->is_object()) {
    bad(file, "'rope_parameters.sliding_attention' must be an object");
  }
  const json local = sl != rp->end() && sl->is_object() ? *sl : json::object();
  if (const auto t = hf::get_string(local, "rope_type", file); t && *t != "default") {
    throw Error(Errc::Unsupported, "[hf] " + file +
                                       ": rope_parameters.sliding_attention has rope_type '" + *t +
                                       "'; Gemma's local layers rotate unscaled");
  }
  const auto local_theta = hf::get_number(local, "rope_theta", file);
  if (any_swa && (!local_theta || !(*local_theta > 0.0))) {
    bad(file, "'rope_parameters.sliding_attention.rope_theta' must be present and positive");
  }
  if (local_theta) kv.emplace_back(a + ".rope.freq_base_swa", f32(*local_theta));
  auto local_pct = hf::get_number(local, "partial_rotary_factor", file);
  if (!local_pct) local_pct = hf::get_number(*rp, "partial_rotary_factor", file);
  if (local_pct && !(*local_pct > 0.0 && *local_pct <= 1.0)) {
    bad(file, "'rope_parameters.sliding_attention.partial_rotary_factor' must be in (0, 1]");
  }
  kv.emplace_back(
      a + ".rope.dimension_count_swa",
      u32(static_cast<std::uint64_t>(static_cast<double>(hd_swa) * local_pct.value_or(1.0))));
}

// Gemma tensor names: the language model of a ...ForConditionalGeneration
// ("model.language_model." or "language_model.model.") is read as the text
// model, its vision tower and projector are dropped, as is gemma2's lm_head
// (the converter always ties it); the pre/post norms have their own names.
std::optional<std::string> gemma_gguf_name(std::string_view hf_name, const Config& c) {
  std::string name(hf_name);
  if (const auto at = name.find("language_model."); at != std::string::npos) {
    name.erase(at, std::string_view("language_model.").size());
  }
  if (c.arch->hf_name.ends_with("ForConditionalGeneration")) {
    for (const std::string_view part : {"vision_tower.", "multi_modal_projector.", "audio_tower.",
                                        "embed_vision.", "embed_audio."}) {
      if (name.find(part) != std::string::npos) return std::nullopt;
    }
  }
  if (c.arch->arch == "gemma4") {
    // Per-Layer Embeddings (model-wide), as llama.cpp names them.
    static constexpr std::pair<std::string_view, std::string_view> kPle[] = {
        {"model.embed_tokens_per_layer.weight", "per_layer_token_embd.weight"},
        {"model.per_layer_model_projection.weight", "per_layer_model_proj.weight"},
        {"model.per_layer_projection_norm.weight", "per_layer_proj_norm.weight"},
    };
    for (const auto& [hf, gg] : kPle) {
      if (name == hf) return std::string(gg);
    }
  }
  if (name == "lm_head.weight" && c.arch->arch == "gemma2") return std::nullopt;
  constexpr std::string_view prefix = "model.layers.";
  if (name.starts_with(prefix)) {
    static constexpr std::pair<std::string_view, std::string_view> kGemmaNorms[] = {
        {"post_attention_layernorm.weight", "post_attention_norm.weight"},
        {"pre_feedforward_layernorm.weight", "ffn_norm.weight"},
        {"post_feedforward_layernorm.weight", "post_ffw_norm.weight"},
    };
    // gemma4: the per-layer input's gate, projection and norm, the output scale.
    static constexpr std::pair<std::string_view, std::string_view> kGemma4Layer[] = {
        {"per_layer_input_gate.weight", "inp_gate.weight"},
        {"per_layer_projection.weight", "proj.weight"},
        {"post_per_layer_input_norm.weight", "post_norm.weight"},
        {"layer_scalar", "layer_output_scale.weight"},
    };
    const std::string_view rest = std::string_view(name).substr(prefix.size());
    const std::size_t dot = rest.find('.');
    std::uint64_t layer = 0;
    bool digits = dot != std::string_view::npos && dot > 0 && dot < 10;
    for (std::size_t i = 0; digits && i < dot; ++i) {
      digits = rest[i] >= '0' && rest[i] <= '9';
      layer = layer * 10 + static_cast<std::uint64_t>(rest[i] - '0');
    }
    if (digits && layer < c.n_layer) {
      for (const auto& [hf, gg] : kGemmaNorms) {
        if (rest.substr(dot + 1) == hf)
          return "blk." + std::to_string(layer) + "." + std::string(gg);
      }
      for (const auto& [hf, gg] : kGemma4Layer) {
        if (c.arch->arch == "gemma4" && rest.substr(dot + 1) == hf)
          return "blk." + std::to_string(layer) + "." + std::string(gg);
      }
    }
  }
  return gguf_name(name, c);
}

// Gemma's norms compute x * (1 + w); the converter stores w + 1 as F32, adding
// in the checkpoint's precision for F16 (torch's f16 add: f32 sum rounded to
// f16) and in F32 for BF16 (cast to F32 first) and F32. The same values here
// keep the directory and its conversion bitwise equal.
std::shared_ptr<std::vector<float>> gemma_norm_plus_one(const SafetensorsTensor& st) {
  const std::size_t n = static_cast<std::size_t>(st.n_elements());
  auto out = std::make_shared<std::vector<float>>(n);  // [n]
  const auto* p = reinterpret_cast<const unsigned char*>(st.data.data());
  for (std::size_t i = 0; i < n; ++i) {
    float v;
    if (st.type == TensorType::F32) {
      std::memcpy(&v, p + 4 * i, 4);
      v += 1.0f;
    } else {
      std::uint16_t h;
      std::memcpy(&h, p + 2 * i, 2);
      if (st.type == TensorType::F16) {
        v = fp16_to_f32(f32_to_fp16(fp16_to_f32(h) + 1.0f));
      } else {
        v = bf16_to_f32(h) + 1.0f;
      }
    }
    (*out)[i] = v;
  }
  return out;
}

// Applies the gemma value changes to a mapped tensor: gemma2/3 norms get
// their +1 (an owned F32 copy; gemma4 stores its norms as they apply);
// gemma3/4's token_embd loses the padding rows past the tokenizer's tokens (a
// shorter view), one logit per token, and so does gemma4's
// per_layer_token_embd, which the recipe reads with the same row count.
// llama.cpp's converter trims token_embd too but counts the vocabulary
// differently (docs/architectures.md).
void gemma_adjust(const SafetensorsTensor& st, const Config& c, std::uint64_t n_tokens,
                  GgufTensor& t, std::vector<std::shared_ptr<const void>>& keepalive) {
  std::string_view name = st.name;
  const bool trims = (c.arch->arch == "gemma3" && t.name == "token_embd.weight") ||
                     (c.arch->arch == "gemma4" &&
                      (t.name == "token_embd.weight" || t.name == "per_layer_token_embd.weight"));
  if (name.ends_with("norm.weight") && c.arch->arch != "gemma4") {
    auto owned = gemma_norm_plus_one(st);
    t.type = TensorType::F32;
    t.nbytes = owned->size() * sizeof(float);
    t.data = reinterpret_cast<const std::byte*>(owned->data());
    keepalive.push_back(std::move(owned));
  } else if (trims && t.ne.size() == 2 && n_tokens > 0 && t.ne[1] > n_tokens) {
    t.nbytes = t.nbytes / t.ne[1] * n_tokens;
    t.ne[1] = n_tokens;
  }
}

}  // namespace

bool is_hf_model_dir(const std::string& path) {
  std::error_code ec;
  return fs::is_directory(path, ec) && fs::is_regular_file(fs::path(path) / "config.json", ec);
}

GgufFile open_hf_model(const std::string& dir, Residency residency) {
  const std::string cfg_path = (fs::path(dir) / "config.json").string();
  const json cfg = text_config(hf::read_json_object(cfg_path), cfg_path);
  std::vector<std::pair<std::string, GgufValue>> kv;
  std::vector<std::pair<std::string, std::vector<float>>> extra;  // computed f32 tensors
  std::vector<std::pair<std::string, GgufValue>> arch_kv;
  const Config c = read_config(cfg, cfg_path, arch_kv, extra);
  if (c.arch->arch == "gemma4") {
    read_gemma4_config(cfg, cfg_path, c, arch_kv, extra);
  } else if (is_gemma(*c.arch)) {
    read_gemma_config(cfg, cfg_path, c, arch_kv);
  }

  std::string name = hf::get_string(cfg, "_name_or_path", cfg_path).value_or("");
  if (name.empty()) name = fs::path(dir).lexically_normal().filename().string();
  if (name.empty()) name = fs::path(dir).lexically_normal().parent_path().filename().string();
  kv.emplace_back("general.architecture", GgufValue::str(std::string(c.arch->arch)));
  kv.emplace_back("general.name", GgufValue::str(name));
  for (auto& p : arch_kv) kv.push_back(std::move(p));
  std::uint64_t n_tokens = 0;  // the tokenizer's vocabulary size
  for (auto& p : hf_tokenizer_metadata(dir)) {
    if (p.first == "tokenizer.ggml.tokens" && p.second.type == GgufValueType::ARRAY) {
      n_tokens = std::get<GgufArray>(p.second.v).items.size();
    }
    kv.push_back(std::move(p));
  }

  const SafetensorsSet weights = SafetensorsSet::open_dir(dir, residency);
  std::vector<std::shared_ptr<const void>> keepalive;
  for (auto& m : weights.mappings()) keepalive.push_back(m);
  std::vector<GgufTensor> tensors;
  ExpertStacks experts;
  for (const SafetensorsTensor* st : weights.tensors()) {
    if (const auto part = expert_part(st->name, c)) {
      collect_expert(*st, *part, c, experts);
      continue;
    }
    const auto gname = is_gemma(*c.arch) ? gemma_gguf_name(st->name, c) : gguf_name(st->name, c);
    if (!gname) continue;
    GgufTensor t;
    t.name = *gname;
    t.type = st->type;
    t.ne.assign(st->shape.rbegin(), st->shape.rend());
    if (t.ne.empty()) t.ne.push_back(1);  // a scalar is a 1-element vector
    t.nbytes = st->data.size();
    t.data = st->data.data();
    const bool is_q = gname->ends_with(".attn_q.weight") || gname->ends_with(".attn_q.bias");
    const bool is_k = gname->ends_with(".attn_k.weight") || gname->ends_with(".attn_k.bias");
    if (c.arch->permute_qk && (is_q || is_k)) {
      const std::uint64_t rows = st->shape.empty() ? 1 : st->shape[0];
      auto owned = permute_rows(st->data, rows, is_q ? c.n_head : c.n_head_kv, st->name);
      t.data = owned->data();
      keepalive.push_back(std::move(owned));
    }
    if (is_gemma(*c.arch)) gemma_adjust(*st, c, n_tokens, t, keepalive);
    tensors.push_back(std::move(t));
  }
  for (const auto& [key, stack] : experts) {
    tensors.push_back(stack_experts(key.first, key.second, stack, c, keepalive));
  }
  for (auto& [tname, values] : extra) {
    auto owned = std::make_shared<std::vector<float>>(std::move(values));
    GgufTensor t;
    t.name = tname;
    t.type = TensorType::F32;
    t.ne = {owned->size()};
    t.nbytes = owned->size() * sizeof(float);
    t.data = reinterpret_cast<const std::byte*>(owned->data());
    keepalive.push_back(std::move(owned));
    tensors.push_back(std::move(t));
  }
  return GgufFile::assemble(dir, std::move(kv), std::move(tensors), std::move(keepalive));
}

GgufFile open_model_file(const std::string& path, Residency residency) {
  if (is_hf_model_dir(path)) return open_hf_model(path, residency);
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    throw Error(Errc::Io, "[hf] " + path +
                              " is a directory without config.json; expected a GGUF file or a "
                              "Hugging Face model directory");
  }
  return GgufFile::open(path, residency);
}

}  // namespace seam
