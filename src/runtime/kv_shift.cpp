#include "runtime/kv_shift.h"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "compute/ops.h"
#include "compute/quant.h"

namespace seam {

namespace {

// The rotation of one layer kind, as forward() builds it (runtime/forward.cpp):
// a change there must be made here too; the shift tests (YaRN, LongRoPE,
// local/global bases) compare a shifted cache with a cold prefill and fail on a
// mismatch.
RopeParams layer_rope(const ModelSpec& spec, const ModelWeights& w, const KvCache& kv, bool swa) {
  const Hparams& hp = spec.hp;
  RopeParams p;
  p.n_rot = static_cast<std::int32_t>(hp.n_rot);
  p.freq_base = swa ? hp.rope_base_swa : hp.rope_base;
  p.freq_scale = swa ? hp.rope_scale_swa : hp.rope_scale;
  p.neox = spec.recipe.rope_neox;
  p.freq_factors = w.rope_freqs;
  if (hp.longrope) p.freq_factors = kv.n_cells() > hp.n_ctx_orig ? w.rope_long : w.rope_short;
  p.ext_factor = hp.yarn_ext_factor;
  if (hp.yarn_ext_factor != 0.0f) {
    ops::yarn_corr_dims(p.n_rot, hp.n_ctx_orig, p.freq_base, hp.yarn_beta_fast, hp.yarn_beta_slow,
                        &p.corr_low, &p.corr_high);
  }
  p.attn_factor = 1.0f;  // applied once, when the key was stored
  return p;
}

}  // namespace

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
  const std::size_t width = kv.kv_width();
  std::vector<float> cs_full(hp.n_rot), cs_swa(hp.n_rot);  // [n_rot/2][cos, sin]
  const RopeParams rope = layer_rope(spec, w, kv, false), rope_swa = layer_rope(spec, w, kv, true);
  ops::rope_angles(delta, rope, cs_full.data());
  ops::rope_angles(delta, rope_swa, cs_swa.data());
  const std::size_t row_bytes = kv_row_bytes(kv.type(), static_cast<std::int64_t>(width));
  const auto n = static_cast<std::int64_t>(width);
  std::vector<float> row(width);  // [n_head_kv][head_dim]
  for (std::uint32_t l = 0; l < hp.n_layer; ++l) {
    const bool swa = hp.is_swa(l);
    const RopeParams& p = swa ? rope_swa : rope;
    const float* cs = swa ? cs_swa.data() : cs_full.data();
    auto* base = static_cast<std::byte*>(kv.k_mut(l));
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
      for (std::uint32_t h = 0; h < hp.n_head_kv; ++h)
        ops::rope_head(row.data() + h * hp.head_dim, p, cs);
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
