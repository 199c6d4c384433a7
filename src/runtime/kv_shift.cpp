#include "runtime/kv_shift.h"

#include <cstdint>

namespace seam {

std::string key_shift_refusal(const ModelSpec& spec) {
  if (spec.hp.n_rot == 0)
    return "this model has no rotary position embedding, so its cached keys cannot be moved to "
           "other positions";
  return "";
}

void shift_keys(const ModelSpec& spec, const ModelWeights& w, ComputeBackend& be, KvCache& kv,
                std::span<const std::uint32_t> cells, std::int32_t delta) {
  const Hparams& hp = spec.hp;
  if (cells.empty() || delta == 0) return;
  // Each layer's rotation as forward() applies it (runtime/forward.cpp): a
  // change there must be made here too; the shift tests (YaRN, LongRoPE,
  // local/global bases) compare a shifted cache with a cold prefill.
  const float* freq_factors = w.rope_freqs;
  if (hp.longrope) freq_factors = kv.n_cells() > hp.n_ctx_orig ? w.rope_long : w.rope_short;
  for (std::uint32_t l = 0; l < spec.layers.size(); ++l) {
    const LayerSpec& L = spec.layers[l];
    if (kv.kv_width(l) == 0) continue;  // no cache of its own (shared, or not attention)
    RopeParams p = L.rope;
    if (L.rope_factors) p.freq_factors = freq_factors;
    be.shift_keys(kv.k_data(l), kv.type(), cells, static_cast<std::int32_t>(L.n_head_kv),
                  static_cast<std::int32_t>(L.head_dim), p, delta);
  }
}

}  // namespace seam
