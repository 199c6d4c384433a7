#include "runtime/forward.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "compute/ops.h"
#include "model/layers.h"
#include "seam/error.h"

namespace seam {

std::vector<std::uint32_t> kv_widths(const ModelSpec& spec) {
  std::vector<std::uint32_t> out(spec.layers.size(), 0);
  for (std::uint32_t l = 0; l < spec.layers.size(); ++l) {
    const LayerSpec& L = spec.layers[l];
    if (L.kind == LayerKind::Attention && L.kv_source == l) out[l] = L.kv_width();
  }
  return out;
}

RecurrentShape recurrent_shape(const ModelSpec& spec) {
  RecurrentShape shape;
  for (const LayerSpec& L : spec.layers) shape.n_layer += L.kind == LayerKind::GatedDeltaNet;
  if (shape.n_layer > 0) {
    shape.conv_floats = spec.hp.delta_net.conv_floats();
    shape.state_floats = spec.hp.delta_net.state_floats();
  }
  return shape;
}

namespace {

// How many of a batch's rows one FFN pass takes: a dense FFN kFfnRows, a MoE
// layer all of them, so that each expert's GEMM sees as many tokens as it can
// (passes of 128 made a MoE prefill 2-14% slower, and its file dwarfs the scratch).
std::int64_t ffn_rows_per_pass(const LayerSpec& L, std::int64_t n_rows) {
  return L.ffn == FfnKind::Moe || L.n_ff_dense > 0 ? n_rows : std::min(n_rows, kFfnRows);
}

}  // namespace

ForwardScratch::ForwardScratch(const ModelSpec& spec, std::uint32_t n_batch) : ple(spec, n_batch) {
  const std::size_t b = n_batch;
  const LayerMaxima m = layer_maxima(spec.layers);
  x.resize(b * spec.hp.n_embd);
  h.resize(b * spec.hp.n_embd);
  std::size_t f = 0;  // the FFN's rows per pass
  for (const LayerSpec& L : spec.layers)
    f = std::max(f, static_cast<std::size_t>(ffn_rows_per_pass(L, n_batch)));
  // Offsets into `phases`: attention's q (or gated_q's q_gate and q_raw), k, v;
  // the FFN's gate and up from the start again.
  const std::size_t qw = b * m.q_width, kvw = b * m.kv_width, ffw = f * m.ff_width;
  const std::size_t attention = (spec.recipe.gated_q ? 3 * qw : qw) + 2 * kvw;
  phases.resize(std::max(attention, 2 * ffw));
  float* at = phases.data();
  if (spec.recipe.gated_q) {  // q lives in q_raw
    q_gate = at;
    q_raw = at + qw;
    at += 3 * qw;
  } else {
    q = at;
    at += qw;
  }
  k = at;
  v = at + kvw;
  gate = phases.data();
  up = gate + ffw;
  router.resize(f * m.n_expert);
  expert_ids.resize(f * m.n_expert_used);
  expert_w.resize(f * m.n_expert_used);
  rows.resize(b * spec.hp.n_embd);
  if (std::any_of(spec.layers.begin(), spec.layers.end(),
                  [](const LayerSpec& L) { return L.n_ff_shexp > 0 || L.n_ff_dense > 0; })) {
    shexp.resize(f * spec.hp.n_embd);
    shexp_gate.resize(f);
  }
  if (m.n_expert > 0) experts_out.resize(f * spec.hp.n_embd);
  if (std::any_of(spec.layers.begin(), spec.layers.end(),
                  [](const LayerSpec& L) { return L.n_ff_dense > 0; })) {
    router_in.resize(f * spec.hp.n_embd);
  }
  if (recurrent_shape(spec).n_layer > 0) delta.emplace(spec.hp.delta_net, n_batch);
  tokens.resize(b);
  pos.resize(b);
  if (spec.hp.attn_temp_scale > 0.0f) q_temp.resize(b);
  for (const LayerSpec& L : spec.layers) {
    if (L.kind != LayerKind::Attention) continue;
    const bool known = std::any_of(masks.begin(), masks.end(),
                                   [&](const Mask& mk) { return mk.window == L.n_swa; });
    if (!known) masks.push_back({L.n_swa, {}, {}, {}});
  }
}

namespace {

// The routed experts of a MoE layer on h ([T][E]), weighted by the router
// (whose logits are in s.router), summed into out ([T][E], apart from h).
void routed_experts(const ModelSpec& spec, const LayerSpec& ls, const LayerWeights& L,
                    ComputeBackend& be, ForwardScratch& s, std::int64_t T, const float* h,
                    float* out) {
  const Recipe& r = spec.recipe;
  const std::int32_t n_exp = static_cast<std::int32_t>(ls.n_expert);
  const std::int32_t k = static_cast<std::int32_t>(ls.n_expert_used);
  be.route(s.router.data(), T, n_exp, k, r.routing, s.expert_ids.data(), s.expert_w.data());
  if (L.ffn_down_exps_scale) {
    be.scale_by_expert(s.expert_w.data(), s.expert_ids.data(), T * k, L.ffn_down_exps_scale);
  }
  ExpertsFfn f;
  f.gate = L.ffn_gate_exps;
  f.up = L.ffn_up_exps;
  f.down = L.ffn_down_exps;
  f.gate_b = L.ffn_gate_exps_b;  // gpt-oss: every expert matmul has a bias
  f.up_b = L.ffn_up_exps_b;
  f.down_b = L.ffn_down_exps_b;
  f.act = r.ffn_act;
  be.experts_ffn(f, h, T, s.expert_ids.data(), k, s.expert_w.data(), out);
}

// Gemma 4 26B-A4B: x += post_ffw_norm(post_ffw_norm_1(MLP(ffn_norm(x))) +
// post_ffw_norm_2(experts(pre_ffw_norm_2(x)))), the router reading
// rms(x) / sqrt(E) * ffn_gate_inp.scale. x and h are the chunk's rows.
void dense_and_experts_block(const ModelSpec& spec, const LayerSpec& ls, const LayerWeights& L,
                             ComputeBackend& be, ForwardScratch& s, std::int64_t T, float* x,
                             float* h) {
  const Hparams& hp = spec.hp;
  const Recipe& r = spec.recipe;
  const std::int64_t E = hp.n_embd, FD = ls.n_ff_dense;
  const float eps = hp.norm_eps;
  be.rms_norm(x, L.ffn_norm, T, E, eps, h);
  const MatmulJob gate_up[2] = {{L.ffn_gate, h, T, s.gate, FD}, {L.ffn_up, h, T, s.up, FD}};
  be.matmul_many(gate_up);
  be.gated_activation(s.gate, s.up, T * FD, r.ffn_act, s.gate);
  be.matmul(L.ffn_down, s.gate, T, s.shexp.data(), E);
  be.rms_norm(s.shexp.data(), L.post_ffn_norm_1, T, E, eps, s.shexp.data());

  be.rms_norm(x, nullptr, T, E, eps, s.router_in.data());
  be.scale(s.router_in.data(), T * E, 1.0f / std::sqrt(static_cast<float>(E)));
  be.mul_rows(s.router_in.data(), T, E, L.ffn_gate_inp_scale);
  be.matmul(L.ffn_gate_inp, s.router_in.data(), T, s.router.data(), ls.n_expert);
  be.rms_norm(x, L.pre_ffn_norm_2, T, E, eps, h);
  routed_experts(spec, ls, L, be, s, T, h, s.experts_out.data());
  be.rms_norm(s.experts_out.data(), L.post_ffn_norm_2, T, E, eps, h);
  be.add(h, s.shexp.data(), T * E);
  be.rms_norm(h, L.post_ffn_norm, T, E, eps, h);
  be.add(x, h, T * E);
}

// x += FFN(norm(x)) for T rows (one pass) x and h [T][E]: Wdown
// (act(Wgate h) * Wup h); a MoE layer sums that over its routed experts,
// weighted by the router, plus its shared expert scaled by sigmoid(w_shexp . h).
void ffn_rows(const ModelSpec& spec, const LayerSpec& ls, const LayerWeights& L, ComputeBackend& be,
              ForwardScratch& s, std::int64_t T, float* x, float* h) {
  const Hparams& hp = spec.hp;
  const Recipe& r = spec.recipe;
  const std::int64_t E = hp.n_embd;
  const std::int64_t FF = ls.n_ff;
  if (ls.n_ff_dense > 0) {
    dense_and_experts_block(spec, ls, L, be, s, T, x, h);
    return;
  }
  be.rms_norm(x, L.ffn_norm, T, E, hp.norm_eps, h);
  if (ls.n_ff_shexp > 0) {
    // Before the routed experts, which reuse gate and up: shexp [T][E].
    const std::int64_t FS = ls.n_ff_shexp;
    const MatmulJob gate_up[2] = {{L.ffn_gate_shexp, h, T, s.gate, FS},
                                  {L.ffn_up_shexp, h, T, s.up, FS}};
    be.matmul_many(gate_up);
    be.gated_activation(s.gate, s.up, T * FS, r.ffn_act, s.gate);
    be.matmul(L.ffn_down_shexp, s.gate, T, s.shexp.data(), E);
    WeightView gate_inp;  // the 1-D gate as a one-row matrix
    gate_inp.n_in = E;
    gate_inp.n_out = 1;
    gate_inp.data = reinterpret_cast<const std::byte*>(L.ffn_gate_inp_shexp);
    gate_inp.row_stride = static_cast<std::size_t>(E) * sizeof(float);
    be.matmul(gate_inp, h, T, s.shexp_gate.data(), 1);
    be.sigmoid(s.shexp_gate.data(), T, s.shexp_gate.data());
    be.scale_rows(s.shexp.data(), T, E, s.shexp_gate.data());
  }
  float* y = h;  // the FFN's output rows
  if (ls.ffn == FfnKind::Moe) {
    const std::int32_t n_exp = static_cast<std::int32_t>(ls.n_expert);
    be.matmul(L.ffn_gate_inp, h, T, s.router.data(), n_exp);
    if (L.ffn_gate_inp_b) be.add_bias(s.router.data(), L.ffn_gate_inp_b, T, n_exp);
    y = s.experts_out.data();
    routed_experts(spec, ls, L, be, s, T, h, y);
  } else {
    const MatmulJob gate_up[2] = {{L.ffn_gate, h, T, s.gate, FF}, {L.ffn_up, h, T, s.up, FF}};
    be.matmul_many(gate_up);
    be.gated_activation(s.gate, s.up, T * FF, r.ffn_act, s.gate);
    be.matmul(L.ffn_down, s.gate, T, h, E);
  }
  if (ls.n_ff_shexp > 0) be.add(y, s.shexp.data(), T * E);
  if (r.post_norms) be.rms_norm(y, L.post_ffn_norm, T, E, hp.norm_eps, y);
  be.add(x, y, T * E);
}

// The FFN of all T rows, ffn_rows_per_pass at a time: each row's FFN is its
// own, and passes keep a dense FFN's [rows][n_ff] buffers a fraction of a full
// batch's (32 MiB at 512 tokens for a 1B model) for the cost of reading its
// weights once per pass.
void ffn_block(const ModelSpec& spec, const LayerSpec& ls, const LayerWeights& L,
               ComputeBackend& be, ForwardScratch& s, std::int64_t T) {
  const std::int64_t E = spec.hp.n_embd;
  const std::int64_t step = ffn_rows_per_pass(ls, T);
  for (std::int64_t t0 = 0; t0 < T; t0 += step) {
    ffn_rows(spec, ls, L, be, s, std::min(step, T - t0), s.x.data() + t0 * E, s.h.data() + t0 * E);
  }
}

}  // namespace

void forward(const ModelSpec& spec, const ModelWeights& w, ComputeBackend& be, KvCache& kv,
             RecurrentStore& rec, std::span<const Decode> batch,
             std::span<const std::uint32_t> cells, ForwardScratch& s, float* logits) {
  const Hparams& hp = spec.hp;
  const Recipe& r = spec.recipe;
  const std::int64_t T = static_cast<std::int64_t>(batch.size());
  const std::int64_t E = hp.n_embd;

  for (std::int64_t t = 0; t < T; ++t) {
    s.tokens[t] = batch[t].token;
    s.pos[t] = batch[t].pos;
  }
  const std::span<const std::int32_t> pos(s.pos.data(), batch.size());
  if (hp.attn_temp_scale > 0.0f) {
    // Llama 4 / Mistral 3 attention temperature, one factor per row for every
    // layer: q *= 1 + beta ln(1 + floor(p / n_orig)).
    for (std::int64_t t = 0; t < T; ++t) {
      const double steps = std::floor(static_cast<double>(s.pos[t]) / hp.n_ctx_orig);
      s.q_temp[t] = static_cast<float>(1.0 + hp.attn_temp_scale * std::log1p(steps));
    }
  }
  for (ForwardScratch::Mask& m : s.masks) kv.build_mask(batch, m.begin, m.end, m.cells, m.window);

  be.get_rows(w.token_embd, std::span<const std::int32_t>(s.tokens.data(), batch.size()),
              s.x.data());
  if (r.embd_scale > 0.0f) be.scale(s.x.data(), T * E, r.embd_scale);
  if (hp.n_embd_ple > 0) {
    ple_inputs(spec, w, be, std::span<const std::int32_t>(s.tokens.data(), batch.size()),
               s.x.data(), s.ple);
  }

  // llama.cpp's LongRoPE choice: by the context the session was made for, so
  // every cached key was rotated with the same factors.
  const float* freq_factors = w.rope_freqs;
  if (hp.longrope) freq_factors = kv.n_cells() > hp.n_ctx_orig ? w.rope_long : w.rope_short;

  // Recurrent layers fold each sequence's rows in order (RecurrentStore's protocol).
  const bool recurrent = !rec.empty();
  if (recurrent) {
    s.runs = seq_runs(batch);
    rec.begin_batch(s.runs);
  }
  std::uint32_t rl = 0;  // recurrent layers so far

  for (std::uint32_t l = 0; l < hp.n_layer; ++l) {
    const LayerSpec& ls = spec.layers[l];
    const LayerWeights& L = w.layers[l];
    const std::int64_t QW = ls.q_width();
    const std::int64_t KW = ls.kv_width();
    if (ls.kind == LayerKind::GatedDeltaNet) {
      // x += mixer(norm(x)); the mixer reads h only before it writes its output there.
      be.rms_norm(s.x.data(), L.attn_norm, T, E, hp.norm_eps, s.h.data());
      delta_net_layer(hp.delta_net, L.delta_net, hp.norm_eps, be, rec, rl++, s.runs, s.h.data(), T,
                      *s.delta, s.h.data());
      be.add(s.x.data(), s.h.data(), T * E);
      ffn_block(spec, ls, L, be, s, T);
      continue;
    }
    RopeParams rope = ls.rope;
    if (ls.rope_factors) rope.freq_factors = freq_factors;

    // The queries: gated_q compacts them within q_raw, after its gates.
    float* q = r.gated_q ? s.q_raw : s.q;
    AttentionArgs att;
    att.q = q;
    att.out = q;  // in place: q is dead once its row's attention is done
    att.n_tokens = T;
    att.n_head = static_cast<std::int32_t>(ls.n_head);
    att.n_head_kv = static_cast<std::int32_t>(ls.n_head_kv);
    att.head_dim = static_cast<std::int32_t>(ls.head_dim);
    att.scale =
        r.attn_scale > 0.0f ? r.attn_scale : 1.0f / std::sqrt(static_cast<float>(ls.head_dim));
    att.softcap = r.attn_softcap;
    att.sinks = L.attn_sinks;
    for (const ForwardScratch::Mask& m : s.masks) {
      if (m.window != ls.n_swa) continue;
      att.mask = {m.begin, m.end, m.cells};
    }

    // Attention block: x += Wo attn(rope(Wq h), rope(Wk h), Wv h), h = norm(x).
    // A layer that shares another's KV cache computes only its queries.
    const bool owns_kv = ls.kv_source == l;
    be.rms_norm(s.x.data(), L.attn_norm, T, E, hp.norm_eps, s.h.data());
    // Q, K and V read the same h: one call, so the backend can quantize it once
    // and run the three in one dispatch. v_from_k (no attn_v): V is the raw K
    // projection, computed again rather than copied on the host so every step
    // stays a backend op.
    const MatmulJob qkv[3] = {r.gated_q ? MatmulJob{L.wq, s.h.data(), T, s.q_raw, 2 * QW}
                                        : MatmulJob{L.wq, s.h.data(), T, q, QW},
                              {L.wk, s.h.data(), T, s.k, KW},
                              {L.wv.data ? L.wv : L.wk, s.h.data(), T, s.v, KW}};
    be.matmul_many(std::span(qkv, owns_kv ? 3 : 1));
    if (r.gated_q) {
      // Per head [q | gate]: q_raw [T][H][2 D] -> q_gate [T][H][D], then the
      // queries compacted in place to q_raw's first [T][H][D].
      const std::int64_t D = ls.head_dim;
      be.copy_rows(s.q_raw + D, 2 * D, T * ls.n_head, D, s.q_gate, D);
      be.copy_rows(s.q_raw, 2 * D, T * ls.n_head, D, q, D);
    }
    if (r.qkv_bias) be.add_bias(q, L.bq, T, QW);
    if (r.qk_norm) {
      be.rms_norm(q, L.q_norm, T * ls.n_head, ls.head_dim, hp.norm_eps, q);
    }
    be.rope(q, T, att.n_head, att.head_dim, pos, rope);
    if (owns_kv) {
      if (r.qkv_bias) {
        be.add_bias(s.k, L.bk, T, KW);
        be.add_bias(s.v, L.bv, T, KW);
      }
      if (r.qk_norm) {
        be.rms_norm(s.k, L.k_norm, T * ls.n_head_kv, ls.head_dim, hp.norm_eps, s.k);
      }
      if (r.v_norm) {
        be.rms_norm(s.v, nullptr, T * ls.n_head_kv, ls.head_dim, hp.norm_eps, s.v);
      }
      be.rope(s.k, T, att.n_head_kv, att.head_dim, pos, rope);
    }
    if (hp.attn_temp_scale > 0.0f) be.scale_rows(q, T, QW, s.q_temp.data());

    if (owns_kv) {
      be.store_kv(kv.k_data(l), kv.v_data(l), kv.type(), KW, cells, s.k, s.v);
    }
    att.k = kv.k(ls.kv_source);
    att.v = kv.v(ls.kv_source);
    att.kv_type = kv.type();
    be.attention(att);
    if (r.gated_q) {
      be.sigmoid(s.q_gate, T * QW, s.q_gate);
      be.mul(q, s.q_gate, T * QW);
    }
    be.matmul(L.wo, q, T, s.h.data(), E);
    if (L.bo) be.add_bias(s.h.data(), L.bo, T, E);
    if (r.post_norms) be.rms_norm(s.h.data(), L.post_attn_norm, T, E, hp.norm_eps, s.h.data());
    be.add(s.x.data(), s.h.data(), T * E);

    ffn_block(spec, ls, L, be, s, T);
    if (hp.n_embd_ple > 0) ple_layer(spec, L, be, l, T, s.x.data(), s.h.data(), s.ple);
    if (L.out_scale) be.scale(s.x.data(), T * E, *L.out_scale);
  }

  if (recurrent) rec.commit_batch(s.runs);

  // LM head only for the rows that asked for logits.
  std::int64_t n_out = 0;
  for (std::int64_t t = 0; t < T;) {
    if (!batch[t].logits) {
      ++t;
      continue;
    }
    std::int64_t e = t + 1;  // a run of rows that want logits: one copy
    while (e < T && batch[e].logits) ++e;
    be.copy_rows(s.x.data() + t * E, E, e - t, E, s.rows.data() + n_out * E, E);
    n_out += e - t;
    t = e;
  }
  if (n_out == 0) return;
  be.rms_norm(s.rows.data(), w.output_norm, n_out, E, hp.norm_eps, s.rows.data());
  be.matmul(w.output, s.rows.data(), n_out, logits, hp.n_vocab);
  if (r.final_softcap > 0.0f) be.softcap(logits, n_out * std::int64_t{hp.n_vocab}, r.final_softcap);
}

}  // namespace seam
