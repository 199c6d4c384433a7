#include "runtime/per_layer_embd.h"

#include <cmath>

namespace seam {

PleScratch::PleScratch(const ModelSpec& spec, std::uint32_t n_batch) {
  const std::size_t p = spec.hp.n_embd_ple;
  if (p == 0) return;
  tok.resize(std::size_t{n_batch} * spec.hp.n_layer * p);
  proj.resize(tok.size());
  gate.resize(std::size_t{n_batch} * p);
}

void ple_inputs(const ModelSpec& spec, const ModelWeights& w, ComputeBackend& be,
                std::span<const std::int32_t> tokens, const float* x, PleScratch& s) {
  const Hparams& hp = spec.hp;
  const auto T = static_cast<std::int64_t>(tokens.size());
  const std::int64_t P = hp.n_embd_ple, LP = std::int64_t{hp.n_layer} * P;
  // proj [T][L*P]: the model half, normed per layer slice.
  be.matmul(w.ple_model_proj, x, T, s.proj.data(), LP);
  be.scale(s.proj.data(), T * LP, 1.0f / std::sqrt(static_cast<float>(hp.n_embd)));
  be.rms_norm(s.proj.data(), w.ple_proj_norm, T * hp.n_layer, P, hp.norm_eps, s.proj.data());
  // tok [T][L*P]: the token half.
  be.get_rows(w.ple_token_embd, tokens, s.tok.data());
  be.scale(s.tok.data(), T * LP, std::sqrt(static_cast<float>(P)));
  be.add(s.proj.data(), s.tok.data(), T * LP);
  be.scale(s.proj.data(), T * LP, 1.0f / std::sqrt(2.0f));
  // [T][L][P] -> [L][T][P]: a layer's inputs become one block.
  for (std::int64_t l = 0; l < hp.n_layer; ++l)
    be.copy_rows(s.proj.data() + l * P, LP, T, P, s.tok.data() + l * T * P, P);
}

void ple_layer(const ModelSpec& spec, const LayerWeights& L, ComputeBackend& be, std::uint32_t l,
               std::int64_t n_tokens, float* x, float* h, PleScratch& s) {
  const Hparams& hp = spec.hp;
  const std::int64_t P = hp.n_embd_ple, E = hp.n_embd;
  be.matmul(L.ple_gate, x, n_tokens, s.gate.data(), P);
  be.gated_activation(s.gate.data(), s.tok.data() + std::int64_t{l} * n_tokens * P, n_tokens * P,
                      Activation::GeluTanh, s.gate.data());
  be.matmul(L.ple_proj, s.gate.data(), n_tokens, h, E);
  be.rms_norm(h, L.ple_post_norm, n_tokens, E, hp.norm_eps, h);
  be.add(x, h, n_tokens * E);
}

}  // namespace seam
