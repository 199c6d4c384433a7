// Mixture-of-experts import: the expert keys of config.json and the stacking
// of per-expert (or fused 3-D) matrices into GGUF's [n_expert, rows, cols]
// tensors.
#include <cstring>
#include <span>

#include "format/hf_import.h"
#include "seam/error.h"

namespace seam::hf_import {

// The mixture-of-experts keys, as llama.cpp's converters write them. Both
// engines renormalise the chosen experts' weights to sum 1 (llama.cpp's
// qwen3moe graph does so unconditionally) and put experts in every layer, so
// a Qwen3-MoE config that asks otherwise is refused rather than run
// differently from how it was trained.
void read_expert_config(const json& cfg, const std::string& file, Config& c, KeyValues& kv) {
  const bool qwen = c.arch->moe == Moe::kQwen;
  const std::string a(c.arch->arch);
  const char* count_key = qwen ? "num_experts" : "num_local_experts";
  // OpenAI's own name for it, in gpt-oss configs beside transformers' one.
  const char* used_key = c.arch->moe == Moe::kGptOss && !cfg.contains("num_experts_per_tok")
                             ? "experts_per_token"
                             : "num_experts_per_tok";
  c.n_expert = require_positive(cfg, count_key, file);
  if (c.n_expert > kMaxExperts) {
    bad(file, "'" + std::string(count_key) + "' = " + std::to_string(c.n_expert) +
                  " is out of range (at most " + std::to_string(kMaxExperts) + ")");
  }
  const std::uint64_t used = require_positive(cfg, used_key, file);
  if (used > c.n_expert) {
    bad(file, "'" + std::string(used_key) + "' = " + std::to_string(used) + " exceeds '" +
                  count_key + "' = " + std::to_string(c.n_expert));
  }
  kv.emplace_back(a + ".expert_count", u32_value(c.n_expert));
  kv.emplace_back(a + ".expert_used_count", u32_value(used));
  if (c.arch->moe == Moe::kMixtral) return;
  // gpt-oss's intermediate_size is each expert's width (it has no dense FFN).
  c.n_ff_expert = require_positive(
      cfg, c.arch->moe == Moe::kGptOss ? "intermediate_size" : "moe_intermediate_size", file);
  kv.emplace_back(a + ".expert_feed_forward_length", u32_value(c.n_ff_expert));
  if (!qwen) return;
  // Qwen3.5-MoE's router always renormalises (its config drops the key).
  const auto norm_topk = hf::get_bool(cfg, "norm_topk_prob", file);
  if (!norm_topk.value_or(a == "qwen35moe")) {
    throw Error(Errc::Unsupported,
                "[hf] " + file +
                    ": 'norm_topk_prob' is false (transformers' default when the key is absent); "
                    "seam, like llama.cpp, runs " +
                    a + " with the chosen experts' weights renormalised to sum 1");
  }
  if (const auto step = hf::get_uint(cfg, "decoder_sparse_step", file); step && *step != 1) {
    throw Error(Errc::Unsupported, "[hf] " + file +
                                       ": 'decoder_sparse_step' = " + std::to_string(*step) +
                                       "; seam's " + a + " recipe has experts in every layer");
  }
  if (const auto it = cfg.find("mlp_only_layers"); it != cfg.end() && !it->is_null()) {
    if (!it->is_array()) bad(file, "'mlp_only_layers' must be a list of layer numbers");
    if (!it->empty()) {
      throw Error(Errc::Unsupported, "[hf] " + file +
                                         ": 'mlp_only_layers' names dense layers; seam's " + a +
                                         " recipe has experts in every layer");
    }
  }
}

// ---- Mixture of experts -----------------------------------------------------
// Checkpoints hold one matrix per expert (transformers' fused 3-D form holds
// one per layer); GGUF holds one [n_expert, rows, cols] tensor per layer and
// matrix, which the converters stack. The stacks are owned copies.

std::optional<ExpertPart> expert_part(std::string_view name, const Config& c) {
  if (c.arch->moe != Moe::kQwen && c.arch->moe != Moe::kMixtral) return std::nullopt;
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

namespace {

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

}  // namespace

GgufTensor stack_experts(std::uint64_t layer, ExpertMatrix matrix, const ExpertStack& s,
                         const Config& c, Keepalive& keepalive) {
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

}  // namespace seam::hf_import
