// Gemma 2/3/4 import: transformers' config defaults and text_config, the
// sliding-window layers, Gemma 4's per-layer keys and proportional RoPE, the
// tensor names of the ...ForConditionalGeneration classes, and the norm and
// embedding value changes llama.cpp's converters make.
#include <algorithm>

#include "core/half.h"
#include "format/gemma_attention.h"
#include "format/hf_import.h"
#include "seam/error.h"

namespace seam::hf_import {

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

void gemma_text_config(json& cfg, const HfArch& arch, const std::string& file) {
  if (arch.arch != "gemma4") gemma_rope_parameters(cfg, file);
  for (const auto& item : gemma_defaults(arch.arch).items()) {
    if (!cfg.contains(item.key())) cfg[item.key()] = item.value();
  }
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
void read_gemma_config(const json& cfg, const std::string& file, const Config& c, KeyValues& kv) {
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
void read_gemma4_config(const json& cfg, const std::string& file, const Config& c, KeyValues& kv,
                        ExtraTensors& extra) {
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

  // The mixture-of-experts model (26B-A4B): a dense MLP and routed experts in
  // every layer (enable_moe_block), the keys as the converter writes them.
  const std::uint64_t n_expert = hf::get_uint(cfg, "num_experts", file).value_or(0);
  if (hf::get_bool(cfg, "enable_moe_block", file).value_or(n_expert > 0)) {
    const std::uint64_t experts = require_positive(cfg, "num_experts", file);
    if (experts > kMaxExperts) bad(file, "'num_experts' is out of range");
    const char* used_key = cfg.contains("top_k_experts") ? "top_k_experts" : "num_experts_per_tok";
    const std::uint64_t used = require_positive(cfg, used_key, file);
    if (used > experts) {
      bad(file, "'" + std::string(used_key) + "' = " + std::to_string(used) +
                    " exceeds 'num_experts' = " + std::to_string(experts));
    }
    kv.emplace_back(a + ".expert_count", u32(experts));
    kv.emplace_back(a + ".expert_used_count", u32(used));
    kv.emplace_back(a + ".expert_feed_forward_length",
                    u32(require_positive(cfg, "moe_intermediate_size", file)));
  }

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
        // The mixture-of-experts model's router, experts and their norms.
        {"router.proj.weight", "ffn_gate_inp.weight"},
        {"router.scale", "ffn_gate_inp.scale"},
        {"router.per_expert_scale", "ffn_down_exps.scale"},
        {"experts.gate_up_proj", "ffn_gate_up_exps.weight"},
        {"experts.down_proj", "ffn_down_exps.weight"},
        {"pre_feedforward_layernorm_2.weight", "pre_ffw_norm_2.weight"},
        {"post_feedforward_layernorm_1.weight", "post_ffw_norm_1.weight"},
        {"post_feedforward_layernorm_2.weight", "post_ffw_norm_2.weight"},
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
std::vector<float> gemma_norm_plus_one(const SafetensorsTensor& st) {
  std::vector<float> w = widen_to_f32(st);
  for (float& v : w) v = st.type == TensorType::F16 ? fp16_to_f32(f32_to_fp16(v + 1.0f)) : v + 1.0f;
  return w;
}

// Applies the gemma value changes to a mapped tensor: gemma2/3 norms get
// their +1 (an owned F32 copy; gemma4 stores its norms as they apply);
// gemma3/4's token_embd loses the padding rows past the tokenizer's tokens (a
// shorter view), one logit per token, and so does gemma4's
// per_layer_token_embd, which the recipe reads with the same row count.
// llama.cpp's converter trims token_embd too but counts the vocabulary
// differently (docs/architectures.md).
void gemma_adjust(const SafetensorsTensor& st, const Config& c, std::uint64_t n_tokens,
                  GgufTensor& t, Keepalive& keepalive) {
  std::string_view name = st.name;
  const bool trims = (c.arch->arch == "gemma3" && t.name == "token_embd.weight") ||
                     (c.arch->arch == "gemma4" &&
                      (t.name == "token_embd.weight" || t.name == "per_layer_token_embd.weight"));
  if (name.ends_with("norm.weight") && c.arch->arch != "gemma4") {
    t = owned_f32_tensor(t.name, gemma_norm_plus_one(st), keepalive);
  } else if (trims && t.ne.size() == 2 && n_tokens > 0 && t.ne[1] > n_tokens) {
    t.nbytes = t.nbytes / t.ne[1] * n_tokens;
    t.ne[1] = n_tokens;
  }
}

}  // namespace seam::hf_import
