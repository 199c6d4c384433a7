#include "runtime/kv_shift.h"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "compute/ops.h"
#include "compute/quant.h"

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
      switch (kv.type()) {
        case KvType::F32:
          std::memcpy(row.data(), k, row_bytes);
          break;
        case KvType::F16:
          ops::f16_to_f32_row(reinterpret_cast<const std::uint16_t*>(k), row.data(), n);
          break;
        case KvType::Q8_0:
          quant::dequantize_row(TensorType::Q8_0, k, row.data(), n);
          break;
      }
      for (std::uint32_t h = 0; h < L.n_head_kv; ++h)
        ops::rope_head(row.data() + h * L.head_dim, p, cs.data());
      switch (kv.type()) {
        case KvType::F32:
          std::memcpy(k, row.data(), row_bytes);
          break;
        case KvType::F16:
          ops::f32_to_f16_row(row.data(), reinterpret_cast<std::uint16_t*>(k), n);
          break;
        case KvType::Q8_0:
          quant::quantize_row(TensorType::Q8_0, row.data(), k, n);
          break;
      }
    }
  }
}

}  // namespace seam
