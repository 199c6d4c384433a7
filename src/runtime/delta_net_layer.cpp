#include "runtime/delta_net_layer.h"

#include <algorithm>
#include <cmath>

namespace seam {
namespace {

// dst row i = src row rows[i] (`width` floats per row in both), one backend
// copy per run of consecutive rows: a sequence's rows are usually contiguous.
void gather_rows(ComputeBackend& be, const float* src, std::span<const std::uint32_t> rows,
                 std::int64_t width, float* dst) {
  for (std::size_t i = 0; i < rows.size();) {
    std::size_t e = i + 1;
    while (e < rows.size() && rows[e] == rows[e - 1] + 1) ++e;
    be.copy_rows(src + std::int64_t{rows[i]} * width, width, static_cast<std::int64_t>(e - i),
                 width, dst + static_cast<std::int64_t>(i) * width, width);
    i = e;
  }
}

// dst row rows[i] = src row i: gather_rows' inverse.
void scatter_rows(ComputeBackend& be, const float* src, std::span<const std::uint32_t> rows,
                  std::int64_t width, float* dst) {
  for (std::size_t i = 0; i < rows.size();) {
    std::size_t e = i + 1;
    while (e < rows.size() && rows[e] == rows[e - 1] + 1) ++e;
    be.copy_rows(src + static_cast<std::int64_t>(i) * width, width,
                 static_cast<std::int64_t>(e - i), width, dst + std::int64_t{rows[i]} * width,
                 width);
    i = e;
  }
}

}  // namespace

DeltaNetScratch::DeltaNetScratch(const DeltaNetParams& p, std::uint32_t n_batch) {
  const std::size_t n = n_batch;
  m.resize(n * p.conv_channels());
  z.resize(n * p.v_width());
  b.resize(n * 2 * p.n_head_v);
  a.resize(n * p.n_head_v);
  x.resize(n * p.conv_channels());
  gb.resize(n * 2 * p.n_head_v);
}

void delta_net_layer(const DeltaNetParams& p, const DeltaNetWeights& w, float eps,
                     ComputeBackend& be, RecurrentStore& store, std::uint32_t rl,
                     std::span<const SeqRun> runs, const float* h, std::int64_t n_tokens,
                     DeltaNetScratch& s, float* out) {
  const std::int64_t T = n_tokens;
  const std::int64_t C = p.conv_channels(), QK = p.qk_width(), V = p.v_width();
  const std::int64_t Hv = p.n_head_v, S = p.d_state;

  // Projections of every row at once, in one call (h quantized once, one
  // dispatch). A fused beta/alpha goes into x (free until the fold).
  const MatmulJob proj[4] = {{w.qkv, h, T, s.m.data(), C},
                             {w.gate, h, T, s.z.data(), V},
                             p.ba_fused ? MatmulJob{w.ba, h, T, s.x.data(), 2 * Hv}
                                        : MatmulJob{w.beta, h, T, s.b.data(), Hv},
                             {w.alpha, h, T, s.a.data(), Hv}};
  be.matmul_many(std::span(proj, p.ba_fused ? 3 : 4));
  if (p.ba_fused) {
    // Per k-head [beta x r | alpha x r]: v-head j*r + i takes beta at j*2r + i
    // and alpha at j*2r + r + i: b [T][2 Hv] -> a, b [T][Hv].
    const std::int64_t r = Hv / p.n_head_k;
    for (std::int64_t j = 0; j < p.n_head_k; ++j) {
      be.copy_rows(s.x.data() + j * 2 * r, 2 * Hv, T, r, s.b.data() + j * r, Hv);
      be.copy_rows(s.x.data() + j * 2 * r + r, 2 * Hv, T, r, s.a.data() + j * r, Hv);
    }
  }
  // beta = sigmoid(b); g = a_h * softplus(alpha + dt_bias) <= 0.
  be.sigmoid(s.b.data(), T * Hv, s.b.data());
  be.add_bias(s.a.data(), w.dt_bias, T, Hv);
  be.softplus(s.a.data(), T * Hv, s.a.data());
  be.mul_rows(s.a.data(), T, Hv, w.a);

  // The sequential part, one sequence's consecutive rows at a time. Rows
  // that lie together in the batch (a prompt's) are read and written where
  // they are; others are gathered first and scattered after.
  store.fold_layer(runs, rl, [&](const SeqRun& run, std::size_t first, std::size_t n_rows) {
    const auto n = static_cast<std::int64_t>(n_rows);
    const std::span<const std::uint32_t> rows(run.rows.data() + first, n_rows);
    const std::int64_t row0 = rows[0];
    const bool together = rows.back() - rows.front() + 1 == n_rows;  // rows ascend
    float* conv = s.m.data() + row0 * C;  // the conv's input, then (in place) its output
    const float *g_rows = s.a.data() + row0 * Hv, *beta_rows = s.b.data() + row0 * Hv;
    if (!together) {
      gather_rows(be, s.m.data(), rows, C, s.x.data());
      gather_rows(be, s.a.data(), rows, Hv, s.gb.data());
      gather_rows(be, s.b.data(), rows, Hv, s.gb.data() + n * Hv);
      conv = s.x.data();
      g_rows = s.gb.data();
      beta_rows = s.gb.data() + n * Hv;
    }
    be.ssm_conv(conv, n, C, w.conv1d, static_cast<std::int32_t>(p.d_conv), store.conv(rl, run.seq),
                conv);
    be.silu(conv, n * C, conv);
    // The conv's rows are [q | k | v]: the rule reads them there and writes
    // its outputs over v (row_stride).
    for (std::int64_t t = 0; t < n; ++t)
      be.l2_norm(conv + t * C, 2 * p.n_head_k, S, eps, conv + t * C);
    GatedDeltaArgs g;
    g.q = conv;
    g.k = conv + QK;
    g.v = conv + 2 * QK;
    g.out = conv + 2 * QK;
    g.row_stride = C;
    g.g = g_rows;        // [n][Hv]
    g.beta = beta_rows;  // [n][Hv]
    g.state = store.state(rl, run.seq);
    g.n_tokens = n;
    g.n_head_k = static_cast<std::int32_t>(p.n_head_k);
    g.n_head_v = static_cast<std::int32_t>(Hv);
    g.dk = g.dv = static_cast<std::int32_t>(S);
    g.scale = 1.0f / std::sqrt(static_cast<float>(S));
    g.map = p.k_head_map;
    be.gated_delta_rule(g);
    if (!together) scatter_rows(be, s.x.data(), rows, C, s.m.data());
  });

  // Every row's rule output now lies over its v in m: compacted to m's first
  // [T][V], then per head rms_norm(o) * norm * silu(z), and the output projection.
  be.copy_rows(s.m.data() + 2 * QK, C, T, V, s.m.data(), V);
  be.rms_norm_gated(s.m.data(), w.norm, s.z.data(), T * Hv, S, eps, s.m.data());
  be.matmul(w.out, s.m.data(), T, out, static_cast<std::int64_t>(w.out.n_out));
}

}  // namespace seam
