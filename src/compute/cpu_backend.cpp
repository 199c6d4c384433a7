#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "compute/attention.h"
#include "compute/backend.h"
#include "compute/ops.h"
#include "compute/quant.h"
#include "compute/recurrent_ops.h"
#include "compute/vec.h"
#include "seam/error.h"

namespace seam {

// Floats a parallel piece of a row-wise op should hold at least: below this
// the hand-off to a worker (a few microseconds) costs more than it saves.
constexpr std::int64_t kMinParallelElements = std::int64_t{1} << 15;

void CpuBackend::for_items(std::int64_t n, std::int64_t item_elements,
                           FunctionRef<void(std::size_t, std::size_t)> fn) {
  const std::int64_t grain =
      (kMinParallelElements + item_elements - 1) / std::max<std::int64_t>(item_elements, 1);
  pool_.parallel_for(static_cast<std::size_t>(n), static_cast<std::size_t>(grain), fn);
}

void CpuBackend::for_elements(std::int64_t n, FunctionRef<void(std::int64_t, std::int64_t)> fn) {
  constexpr std::int64_t kBlock = 64;
  for_items((n + kBlock - 1) / kBlock, kBlock, [&](std::size_t b, std::size_t e) {
    fn(static_cast<std::int64_t>(b) * kBlock, std::min(static_cast<std::int64_t>(e) * kBlock, n));
  });
}

void CpuBackend::matmul(const WeightView& w, const float* x, std::int64_t n_tokens, float* y,
                        std::int64_t ldy) {
  seam::matmul(w, x, n_tokens, y, ldy, pool_, scratch_);
}

void CpuBackend::matmul_many(std::span<const MatmulJob> jobs) {
  seam::matmul_many(jobs, pool_, scratch_);
}

void CpuBackend::get_rows(const WeightView& w, std::span<const std::int32_t> ids, float* out) {
  for (std::size_t i = 0; i < ids.size(); ++i) {
    get_row(w, ids[i], out + static_cast<std::int64_t>(i) * w.n_in);
  }
}

void CpuBackend::rms_norm(const float* x, const float* w, std::int64_t n_rows, std::int64_t n,
                          float eps, float* y) {
  for_items(n_rows, n, [&](std::size_t b, std::size_t e) {
    for (auto r = static_cast<std::int64_t>(b); r < static_cast<std::int64_t>(e); ++r)
      ops::rms_norm_row(x + r * n, w, n, eps, y + r * n);
  });
}

const float* CpuBackend::rope_angles(std::span<const std::int32_t> pos, const RopeParams& p) {
  for (RopeTable& t : rope_tables_)
    if (t.p == p && std::equal(pos.begin(), pos.end(), t.pos.begin(), t.pos.end()))
      return t.cs.data();
  constexpr std::size_t kTables = 4;
  if (rope_tables_.size() < kTables) rope_tables_.emplace_back();
  RopeTable& t = rope_tables_[rope_next_ % rope_tables_.size()];
  rope_next_ = (rope_next_ + 1) % kTables;
  t.p = p;
  t.pos.assign(pos.begin(), pos.end());
  const auto n_rot = static_cast<std::size_t>(p.n_rot);
  t.cs.resize(pos.size() * n_rot);
  for (std::size_t i = 0; i < pos.size(); ++i) ops::rope_angles(pos[i], p, t.cs.data() + i * n_rot);
  return t.cs.data();
}

void CpuBackend::rope(float* x, std::int64_t n_tokens, std::int32_t n_heads, std::int32_t head_dim,
                      std::span<const std::int32_t> pos, const RopeParams& p) {
  const float* cs = rope_angles(pos.first(static_cast<std::size_t>(n_tokens)), p);
  for_items(n_tokens, std::int64_t{n_heads} * head_dim, [&](std::size_t b, std::size_t e) {
    for (auto t = static_cast<std::int64_t>(b); t < static_cast<std::int64_t>(e); ++t) {
      const float* c = cs + t * p.n_rot;
      for (std::int32_t h = 0; h < n_heads; ++h)
        ops::rope_head(x + (t * n_heads + h) * head_dim, p, c);
    }
  });
}

void CpuBackend::attention(const AttentionArgs& a) { attention_tiled(a, pool_, attn_scratch_); }

void CpuBackend::gated_activation(const float* gate, const float* up, std::int64_t n,
                                  Activation act, float* out) {
  for_elements(n, [&](std::int64_t b, std::int64_t e) {
    ops::gated_activation(gate + b, up + b, e - b, act, out + b);
  });
}

void CpuBackend::add(float* x, const float* y, std::int64_t n) {
  for_elements(n, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t i = b; i < e; ++i) x[i] += y[i];
  });
}

void CpuBackend::mul(float* x, const float* y, std::int64_t n) {
  for_elements(n, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t i = b; i < e; ++i) x[i] *= y[i];
  });
}

void CpuBackend::copy_rows(const float* src, std::int64_t src_stride, std::int64_t n_rows,
                           std::int64_t width, float* dst, std::int64_t dst_stride) {
  const auto bytes = static_cast<std::size_t>(width) * sizeof(float);
  for (std::int64_t r = 0; r < n_rows; ++r)
    std::memmove(dst + r * dst_stride, src + r * src_stride, bytes);
}

void CpuBackend::softplus(const float* x, std::int64_t n, float* y) {
  for_elements(n, [&](std::int64_t b, std::int64_t e) { ops::softplus(x + b, e - b, y + b); });
}

void CpuBackend::sigmoid(const float* x, std::int64_t n, float* y) {
  for_elements(n, [&](std::int64_t b, std::int64_t e) { ops::sigmoid(x + b, e - b, y + b); });
}

void CpuBackend::silu(const float* x, std::int64_t n, float* y) {
  for_elements(n, [&](std::int64_t b, std::int64_t e) { ops::silu(x + b, e - b, y + b); });
}

void CpuBackend::l2_norm(const float* x, std::int64_t n_rows, std::int64_t n, float eps, float* y) {
  for_items(n_rows, n, [&](std::size_t b, std::size_t e) {
    for (auto r = static_cast<std::int64_t>(b); r < static_cast<std::int64_t>(e); ++r)
      ops::l2_norm_row(x + r * n, n, eps, y + r * n);
  });
}

void CpuBackend::rms_norm_gated(const float* x, const float* w, const float* z, std::int64_t n_rows,
                                std::int64_t n, float eps, float* y) {
  for_items(n_rows, n, [&](std::size_t b, std::size_t e) {
    for (auto r = static_cast<std::int64_t>(b); r < static_cast<std::int64_t>(e); ++r)
      ops::rms_norm_gated_row(x + r * n, w, z + r * n, n, eps, y + r * n);
  });
}

void CpuBackend::ssm_conv(const float* x, std::int64_t n_tokens, std::int64_t n_ch, const float* w,
                          std::int32_t width, float* state, float* y) {
  // Channels are independent; a chunk of 256 keeps a thread's work above the
  // cost of waking it at decode (one token).
  pool_.parallel_for(static_cast<std::size_t>(n_ch), 256, [&](std::size_t c0, std::size_t c1) {
    ops::ssm_conv_channels(x, n_tokens, n_ch, w, width, state, y, static_cast<std::int64_t>(c0),
                           static_cast<std::int64_t>(c1));
  });
}

void CpuBackend::gated_delta_rule(const GatedDeltaArgs& a) {
  // Heads are independent (each owns its state matrix).
  pool_.parallel_for(static_cast<std::size_t>(a.n_head_v), 1, [&](std::size_t h0, std::size_t h1) {
    ops::gated_delta_rule_heads(a, static_cast<std::int32_t>(h0), static_cast<std::int32_t>(h1),
                                active_cpu_level());
  });
}

void CpuBackend::add_bias(float* x, const float* bias, std::int64_t n_rows, std::int64_t n) {
  for_items(n_rows, n, [&](std::size_t b, std::size_t e) {
    for (auto r = static_cast<std::int64_t>(b); r < static_cast<std::int64_t>(e); ++r)
      for (std::int64_t i = 0; i < n; ++i) x[r * n + i] += bias[i];
  });
}

void CpuBackend::scale(float* x, std::int64_t n, float s) {
  for (std::int64_t i = 0; i < n; ++i) x[i] *= s;
}

void CpuBackend::scale_rows(float* x, std::int64_t n_rows, std::int64_t n, const float* s) {
  for (std::int64_t r = 0; r < n_rows; ++r) scale(x + r * n, n, s[r]);
}

void CpuBackend::mul_rows(float* x, std::int64_t n_rows, std::int64_t n, const float* v) {
  for (std::int64_t r = 0; r < n_rows; ++r)
    for (std::int64_t i = 0; i < n; ++i) x[r * n + i] *= v[i];
}

void CpuBackend::scale_by_expert(float* weights, const std::int32_t* ids, std::int64_t n,
                                 const float* per_expert) {
  for (std::int64_t i = 0; i < n; ++i) weights[i] *= per_expert[ids[i]];
}

void CpuBackend::softcap(float* x, std::int64_t n, float cap) {
  for_elements(n,
               [&](std::int64_t b, std::int64_t e) { vec::vec_fns().softcap(x + b, e - b, cap); });
}

void CpuBackend::store_kv(void* k_cache, void* v_cache, KvType type, std::int64_t width,
                          std::span<const std::uint32_t> cells, const float* k, const float* v) {
  const std::size_t row_bytes = kv_row_bytes(type, width);
  for_items(static_cast<std::int64_t>(cells.size()), 2 * width, [&](std::size_t b, std::size_t e) {
    for (std::size_t t = b; t < e; ++t) {
      const std::size_t at = static_cast<std::size_t>(cells[t]) * row_bytes;
      ops::f32_to_kv_row(type, k + static_cast<std::int64_t>(t) * width,
                         static_cast<std::byte*>(k_cache) + at, width);
      ops::f32_to_kv_row(type, v + static_cast<std::int64_t>(t) * width,
                         static_cast<std::byte*>(v_cache) + at, width);
    }
  });
}

void CpuBackend::shift_keys(void* k_cache, KvType type, std::span<const std::uint32_t> cells,
                            std::int32_t n_heads, std::int32_t head_dim, const RopeParams& p,
                            std::int32_t delta) {
  RopeParams q = p;
  q.attn_factor = 1.0f;
  std::vector<float> cs(static_cast<std::size_t>(q.n_rot));  // [n_rot/2][cos, sin]
  ops::rope_angles(delta, q, cs.data());
  const std::int64_t width = std::int64_t{n_heads} * head_dim;
  const std::size_t row_bytes = kv_row_bytes(type, width);
  std::vector<float> row(static_cast<std::size_t>(width));
  for (const std::uint32_t c : cells) {
    std::byte* k = static_cast<std::byte*>(k_cache) + static_cast<std::size_t>(c) * row_bytes;
    // Keys are stored in the cache's type: rotate them in f32 and store back.
    ops::kv_row_to_f32(type, k, row.data(), width);
    for (std::int32_t h = 0; h < n_heads; ++h)
      ops::rope_head(row.data() + h * head_dim, q, cs.data());
    ops::f32_to_kv_row(type, row.data(), k, width);
  }
}

void CpuBackend::route(const float* logits, std::int64_t n_tokens, std::int32_t n_expert,
                       std::int32_t k, Routing mode, std::int32_t* ids, float* weights) {
  route_row_.resize(static_cast<std::size_t>(n_expert));
  for (std::int64_t t = 0; t < n_tokens; ++t) {
    float* p = route_row_.data();
    std::copy(logits + t * n_expert, logits + (t + 1) * n_expert, p);
    if (mode == Routing::Softmax) ops::softmax_row(p, n_expert);
    std::int32_t* id = ids + t * k;
    float* wt = weights + t * k;
    // Selection by repeated maximum: k is small (2 to 10) next to n_expert.
    for (std::int32_t j = 0; j < k; ++j) {
      std::int32_t best = -1;
      for (std::int32_t e = 0; e < n_expert; ++e) {
        bool taken = false;
        for (std::int32_t i = 0; i < j; ++i) taken = taken || id[i] == e;
        if (!taken && (best < 0 || p[e] > p[best])) best = e;
      }
      id[j] = best;
      wt[j] = p[best];
    }
    if (mode == Routing::Softmax) {
      // Renormalise the chosen probabilities; the floor keeps a row of
      // underflowed probabilities finite (llama.cpp's 6.1e-5, an F16 epsilon).
      float sum = 0.0f;
      for (std::int32_t j = 0; j < k; ++j) sum += wt[j];
      sum = std::max(sum, 6.103515625e-5f);
      for (std::int32_t j = 0; j < k; ++j) wt[j] /= sum;
    } else {
      ops::softmax_row(wt, k);
    }
  }
}

void CpuBackend::experts_ffn(const ExpertsFfn& f, const float* x, std::int64_t n_tokens,
                             const std::int32_t* ids, std::int32_t k, const float* weights,
                             float* y) {
  const std::int64_t n = f.gate.w.n_in, n_ff = f.gate.w.n_out;
  const std::int32_t n_expert = f.gate.n_expert;
  if (f.up.w.n_in != n || f.up.w.n_out != n_ff || f.down.w.n_in != n_ff || f.down.w.n_out != n ||
      f.up.n_expert != n_expert || f.down.n_expert != n_expert) {
    throw Error(Errc::InvalidArgument,
                "experts_ffn: the gate, up and down experts do not chain (gate " +
                    std::to_string(n) + " -> " + std::to_string(n_ff) + ", up " +
                    std::to_string(f.up.w.n_in) + " -> " + std::to_string(f.up.w.n_out) +
                    ", down " + std::to_string(f.down.w.n_in) + " -> " +
                    std::to_string(f.down.w.n_out) + ")");
  }
  if (!weights) throw Error(Errc::InvalidArgument, "experts_ffn needs the router's weights");
  const std::int64_t n_slots = n_tokens * k;
  for (std::int64_t i = 0; i < n_slots; ++i) {
    if (ids[i] < 0 || ids[i] >= n_expert) {
      throw Error(Errc::InvalidArgument, "expert id " + std::to_string(ids[i]) +
                                             " is outside the " + std::to_string(n_expert) +
                                             " experts of this layer");
    }
  }
  // Slots grouped by expert: expert_used_[u]'s are expert_slots_[first[u] ..
  // first[u + 1]), in slot order.
  expert_slots_.clear();
  expert_used_.clear();
  std::vector<std::int64_t>& first = expert_first_;
  first.clear();
  for (std::int32_t e = 0; e < n_expert; ++e) {
    const std::size_t begin = expert_slots_.size();
    for (std::int64_t i = 0; i < n_slots; ++i) {
      if (ids[i] == e) expert_slots_.push_back(i);
    }
    if (expert_slots_.size() == begin) continue;  // never read: decode touches only the chosen
    expert_used_.push_back(e);
    first.push_back(static_cast<std::int64_t>(begin));
  }
  const std::size_t n_used = expert_used_.size();
  first.push_back(static_cast<std::int64_t>(expert_slots_.size()));
  std::fill(y, y + n_tokens * n, 0.0f);

  // A group of whole experts at a time (each expert's GEMMs see all its
  // tokens), its rows' inputs, gate and up under expert_group_bytes_: the
  // whole batch's would be [n_tokens][k] rows of each, 12 MiB of gate alone
  // for a 512-token prefill through 8 experts of 768. The down outputs reuse
  // the inputs' rows. Each token's sum adds its slots in expert order
  // whatever the grouping.
  const std::int64_t row_bytes = (n + 2 * n_ff) * static_cast<std::int64_t>(sizeof(float));
  const std::int64_t group_rows = std::max<std::int64_t>(1, expert_group_bytes_ / row_bytes);
  for (std::size_t u0 = 0; u0 < n_used;) {
    const std::int64_t r0 = first[u0];
    std::size_t u1 = u0 + 1;
    while (u1 < n_used && first[u1 + 1] - r0 <= group_rows) ++u1;
    const std::int64_t rows = first[u1] - r0;
    const auto grow = [](std::vector<float>& v, std::int64_t size) {
      if (v.size() < static_cast<std::size_t>(size)) v.resize(static_cast<std::size_t>(size));
    };
    grow(expert_io_, rows * n);
    grow(expert_gate_, rows * n_ff);
    grow(expert_up_, rows * n_ff);
    for (std::int64_t r = r0; r < first[u1]; ++r) {
      const float* src = x + expert_slots_[r] / k * n;
      std::copy(src, src + n, expert_io_.data() + (r - r0) * n);
    }
    // Each expert's rows: gate and up in one dispatch (sharing the quantized
    // input), their biases, the activation over the group, then down.
    const auto each_expert = [&](auto&& fn) {
      for (std::size_t u = u0; u < u1; ++u)
        fn(expert_used_[u], first[u] - r0, first[u + 1] - first[u]);
    };
    expert_jobs_.clear();
    each_expert([&](std::int32_t e, std::int64_t at, std::int64_t m) {
      const float* in = expert_io_.data() + at * n;
      expert_jobs_.push_back({f.gate.expert(e), in, m, expert_gate_.data() + at * n_ff, n_ff});
      expert_jobs_.push_back({f.up.expert(e), in, m, expert_up_.data() + at * n_ff, n_ff});
    });
    seam::matmul_many(expert_jobs_, pool_, scratch_);
    each_expert([&](std::int32_t e, std::int64_t at, std::int64_t m) {
      if (f.gate_b)
        CpuBackend::add_bias(expert_gate_.data() + at * n_ff, f.gate_b + e * n_ff, m, n_ff);
      if (f.up_b) CpuBackend::add_bias(expert_up_.data() + at * n_ff, f.up_b + e * n_ff, m, n_ff);
    });
    ops::gated_activation(expert_gate_.data(), expert_up_.data(), rows * n_ff, f.act,
                          expert_gate_.data());
    expert_jobs_.clear();
    each_expert([&](std::int32_t e, std::int64_t at, std::int64_t m) {
      expert_jobs_.push_back(
          {f.down.expert(e), expert_gate_.data() + at * n_ff, m, expert_io_.data() + at * n, n});
    });
    seam::matmul_many(expert_jobs_, pool_, scratch_);
    if (f.down_b) {
      each_expert([&](std::int32_t e, std::int64_t at, std::int64_t m) {
        CpuBackend::add_bias(expert_io_.data() + at * n, f.down_b + e * n, m, n);
      });
    }
    for (std::int64_t r = r0; r < first[u1]; ++r) {
      const std::int64_t i = expert_slots_[r];
      const float* src = expert_io_.data() + (r - r0) * n;
      float* dst = y + i / k * n;
      const float wt = weights[i];
      for (std::int64_t o = 0; o < n; ++o) dst[o] += wt * src[o];
    }
    u0 = u1;
  }
}

}  // namespace seam
