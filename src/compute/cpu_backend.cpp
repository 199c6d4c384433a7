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
#include "seam/error.h"

namespace seam {

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
  for (std::int64_t r = 0; r < n_rows; ++r) ops::rms_norm_row(x + r * n, w, n, eps, y + r * n);
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
  for (std::int64_t t = 0; t < n_tokens; ++t) {
    const float* c = cs + t * p.n_rot;
    for (std::int32_t h = 0; h < n_heads; ++h)
      ops::rope_head(x + (t * n_heads + h) * head_dim, p, c);
  }
}

void CpuBackend::attention(const AttentionArgs& a) { attention_tiled(a, pool_, attn_scratch_); }

void CpuBackend::gated_activation(const float* gate, const float* up, std::int64_t n,
                                  Activation act, float* out) {
  ops::gated_activation(gate, up, n, act, out);
}

void CpuBackend::add(float* x, const float* y, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) x[i] += y[i];
}

void CpuBackend::mul(float* x, const float* y, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) x[i] *= y[i];
}

void CpuBackend::copy_rows(const float* src, std::int64_t src_stride, std::int64_t n_rows,
                           std::int64_t width, float* dst, std::int64_t dst_stride) {
  const auto bytes = static_cast<std::size_t>(width) * sizeof(float);
  for (std::int64_t r = 0; r < n_rows; ++r)
    std::memcpy(dst + r * dst_stride, src + r * src_stride, bytes);
}

void CpuBackend::softplus(const float* x, std::int64_t n, float* y) { ops::softplus(x, n, y); }

void CpuBackend::sigmoid(const float* x, std::int64_t n, float* y) { ops::sigmoid(x, n, y); }

void CpuBackend::silu(const float* x, std::int64_t n, float* y) { ops::silu(x, n, y); }

void CpuBackend::l2_norm(const float* x, std::int64_t n_rows, std::int64_t n, float eps, float* y) {
  for (std::int64_t r = 0; r < n_rows; ++r) ops::l2_norm_row(x + r * n, n, eps, y + r * n);
}

void CpuBackend::rms_norm_gated(const float* x, const float* w, const float* z, std::int64_t n_rows,
                                std::int64_t n, float eps, float* y) {
  for (std::int64_t r = 0; r < n_rows; ++r) {
    ops::rms_norm_gated_row(x + r * n, w, z + r * n, n, eps, y + r * n);
  }
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
  for (std::int64_t r = 0; r < n_rows; ++r)
    for (std::int64_t i = 0; i < n; ++i) x[r * n + i] += bias[i];
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
  for (std::int64_t i = 0; i < n; ++i) x[i] = cap * std::tanh(x[i] / cap);
}

void CpuBackend::store_kv(void* k_cache, void* v_cache, KvType type, std::int64_t width,
                          std::span<const std::uint32_t> cells, const float* k, const float* v) {
  const std::size_t row_bytes = kv_row_bytes(type, width);
  for (std::size_t t = 0; t < cells.size(); ++t) {
    const std::size_t at = static_cast<std::size_t>(cells[t]) * row_bytes;
    ops::f32_to_kv_row(type, k + static_cast<std::int64_t>(t) * width,
                       static_cast<std::byte*>(k_cache) + at, width);
    ops::f32_to_kv_row(type, v + static_cast<std::int64_t>(t) * width,
                       static_cast<std::byte*>(v_cache) + at, width);
  }
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

void CpuBackend::matmul_experts(const ExpertsView& w, const float* x, std::int32_t x_slots,
                                std::int64_t n_tokens, const std::int32_t* ids, std::int32_t k,
                                const float* weights, float* y) {
  const std::int64_t n_in = w.w.n_in, n_out = w.w.n_out;
  const std::int64_t n_slots = n_tokens * k;
  for (std::int64_t i = 0; i < n_slots; ++i) {
    if (ids[i] < 0 || ids[i] >= w.n_expert) {
      throw Error(Errc::InvalidArgument, "expert id " + std::to_string(ids[i]) +
                                             " is outside the " + std::to_string(w.n_expert) +
                                             " experts of this layer");
    }
  }
  // Slots grouped by expert (expert_slots_), each used expert's rows gathered
  // into expert_x_ at its offset, then every expert's matmul in one dispatch.
  expert_slots_.clear();
  expert_jobs_.clear();
  std::vector<std::int64_t>& first = expert_first_;  // [job] its first entry in expert_slots_
  first.clear();
  for (std::int32_t e = 0; e < w.n_expert; ++e) {
    const std::size_t begin = expert_slots_.size();
    for (std::int64_t i = 0; i < n_slots; ++i) {
      if (ids[i] == e) expert_slots_.push_back(i);
    }
    if (expert_slots_.size() == begin) continue;  // never read: decode touches only the chosen
    MatmulJob job;
    job.w = w.expert(e);
    job.n_tokens = static_cast<std::int64_t>(expert_slots_.size() - begin);
    job.ldy = n_out;
    expert_jobs_.push_back(job);
    first.push_back(static_cast<std::int64_t>(begin));
  }
  const auto total = static_cast<std::int64_t>(expert_slots_.size());
  if (weights) std::fill(y, y + n_tokens * n_out, 0.0f);
  // Experts in groups whose gathered rows (inputs, then outputs) stay under
  // expert_group_bytes_, each expert whole so its GEMM sees all its tokens: a
  // 512-token prefill through 8 of 32 experts of width 2048 gathered 32 MiB of
  // inputs and 32 MiB of outputs at once. Outputs are added in the same slot
  // order whatever the grouping.
  const std::int64_t group_rows = std::max<std::int64_t>(
      1, expert_group_bytes_ / (std::max(n_in, n_out) * static_cast<std::int64_t>(sizeof(float))));
  const std::size_t n_jobs = expert_jobs_.size();
  for (std::size_t j0 = 0; j0 < n_jobs;) {
    const std::int64_t r0 = first[j0];
    std::size_t j1 = j0 + 1;
    while (j1 < n_jobs && first[j1] + expert_jobs_[j1].n_tokens - r0 <= group_rows) ++j1;
    const std::int64_t r1 = j1 < n_jobs ? first[j1] : total;
    const auto rows = static_cast<std::size_t>(r1 - r0);
    if (expert_x_.size() < rows * n_in) expert_x_.resize(rows * n_in);    // [slot][n_in] inputs
    if (expert_y_.size() < rows * n_out) expert_y_.resize(rows * n_out);  // [slot][n_out] outputs
    for (std::int64_t r = r0; r < r1; ++r) {
      const std::int64_t i = expert_slots_[r], t = i / k, j = i % k;
      const float* src = x + (t * x_slots + j % x_slots) * n_in;
      std::copy(src, src + n_in, expert_x_.data() + (r - r0) * n_in);
    }
    for (std::size_t jb = j0; jb < j1; ++jb) {
      expert_jobs_[jb].x = expert_x_.data() + (first[jb] - r0) * n_in;
      expert_jobs_[jb].y = expert_y_.data() + (first[jb] - r0) * n_out;
    }
    seam::matmul_many(std::span<const MatmulJob>(expert_jobs_.data() + j0, j1 - j0), pool_,
                      scratch_);
    for (std::int64_t r = r0; r < r1; ++r) {
      const std::int64_t i = expert_slots_[r];
      const float* src = expert_y_.data() + (r - r0) * n_out;
      if (weights) {
        float* dst = y + (i / k) * n_out;
        const float wt = weights[i];
        for (std::int64_t o = 0; o < n_out; ++o) dst[o] += wt * src[o];
      } else {
        std::copy(src, src + n_out, y + i * n_out);
      }
    }
    j0 = j1;
  }
}

void CpuBackend::add_expert_bias(float* y, const float* bias, std::int32_t n_expert, std::int64_t n,
                                 std::int64_t n_tokens, const std::int32_t* ids, std::int32_t k,
                                 const float* weights) {
  for (std::int64_t i = 0; i < n_tokens * k; ++i) {
    if (ids[i] < 0 || ids[i] >= n_expert) {
      throw Error(Errc::InvalidArgument, "expert id " + std::to_string(ids[i]) +
                                             " is outside the " + std::to_string(n_expert) +
                                             " experts of this layer");
    }
  }
  for (std::int64_t t = 0; t < n_tokens; ++t) {
    for (std::int32_t j = 0; j < k; ++j) {
      const std::int64_t slot = t * k + j;
      const float* b = bias + static_cast<std::int64_t>(ids[slot]) * n;
      float* row = weights ? y + t * n : y + slot * n;
      const float wt = weights ? weights[slot] : 1.0f;
      for (std::int64_t c = 0; c < n; ++c) row[c] += wt * b[c];
    }
  }
}

}  // namespace seam
