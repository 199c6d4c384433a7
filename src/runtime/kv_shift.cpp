#include "runtime/kv_shift.h"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "compute/ops.h"

namespace seam {

std::string key_shift_refusal(const ModelSpec& spec) {
  if (spec.hp.n_rot == 0)
    return "this model has no rotary position embedding, so its cached keys cannot be moved to "
           "other positions";
  return "";
}

void shift_keys(const ModelSpec& spec, const ModelWeights& w, KvCache& kv,
                std::span<const std::uint32_t> cells, std::int32_t delta) {
  const Hparams& hp = spec.hp;
  if (cells.empty() || delta == 0) return;
  // Each layer's rotation as forward() applies it (runtime/forward.cpp): a
  // change there must be made here too; the shift tests (YaRN, LongRoPE,
  // local/global bases) compare a shifted cache with a cold prefill.
  const float* freq_factors = w.rope_freqs;
  if (hp.longrope) freq_factors = kv.n_cells() > hp.n_ctx_orig ? w.rope_long : w.rope_short;
  std::vector<float> cs;   // [n_rot/2][cos, sin]
  std::vector<float> row;  // [n_head_kv][head_dim] of one layer
  for (std::uint32_t l = 0; l < spec.layers.size(); ++l) {
    const LayerSpec& L = spec.layers[l];
    const auto n = static_cast<std::int64_t>(kv.kv_width(l));
    if (n == 0) continue;  // no cache of its own (shared, or not attention)
    RopeParams p = L.rope;
    if (L.rope_factors) p.freq_factors = freq_factors;
    p.attn_factor = 1.0f;  // applied once, when the key was stored
    cs.resize(static_cast<std::size_t>(p.n_rot));
    ops::rope_angles(delta, p, cs.data());
    const std::size_t row_bytes = kv_row_bytes(kv.type(), n);
    row.resize(static_cast<std::size_t>(n));
    auto* base = static_cast<std::byte*>(kv.k_data(l));
    for (const std::uint32_t c : cells) {
      std::byte* k = base + static_cast<std::size_t>(c) * row_bytes;
      // Keys are stored in the cache's type: rotate them in f32 and store back.
      ops::kv_row_to_f32(kv.type(), k, row.data(), n);
      for (std::uint32_t h = 0; h < L.n_head_kv; ++h)
        ops::rope_head(row.data() + h * L.head_dim, p, cs.data());
      ops::f32_to_kv_row(kv.type(), row.data(), k, n);
    }
  }
}

}  // namespace seam
