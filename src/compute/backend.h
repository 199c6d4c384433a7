// ComputeBackend: the ops the forward pass is written against (DESIGN.md §3).
//
// CpuBackend implements every op. An accelerator backend derives from
// CpuBackend and overrides the ops it accelerates; the rest fall back to the
// CPU implementations. The forward pass never calls a kernel directly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "compute/attention_scratch.h"
#include "compute/cpu_level.h"
#include "compute/matmul.h"
#include "core/thread_pool.h"

namespace seam {

// The gated FFN activations act(gate) * up. SwigluOai is gpt-oss's clamped
// SwiGLU (OpenAI's reference code; llama.cpp hard-codes the same constants):
// g = min(gate, 7), u = clamp(up, -7, 7), out = g sigmoid(1.702 g) (u + 1).
enum class Activation { Silu, GeluTanh, SwigluOai };

// How a mixture-of-experts router turns a token's logits into the weights of
// its k chosen experts.
enum class Routing : std::uint8_t {
  // p = softmax(logits); the k largest p, renormalised to sum 1 (Mixtral, Qwen3-MoE).
  Softmax,
  // The k largest logits; weights = softmax over those k (gpt-oss).
  SoftmaxSelected,
};

// n_expert matrices of one shape stored back to back: a 3-D GGUF tensor
// [n_in, n_out, n_expert]. Expert e is `w` moved by e * expert_stride bytes.
struct ExpertsView {
  WeightView w;  // expert 0
  std::int32_t n_expert = 0;
  std::size_t expert_stride = 0;  // bytes between experts

  WeightView expert(std::int32_t e) const {
    WeightView v = w;
    v.data = w.data + static_cast<std::size_t>(e) * expert_stride;
    return v;
  }
};

// A MoE layer's routed experts (backend experts_ffn): gate and up [n] -> [n_ff],
// down [n_ff] -> [n], and gpt-oss's per-expert biases ([n_expert][n_ff] for
// gate and up, [n_expert][n] for down; null where the model has none).
struct ExpertsFfn {
  ExpertsView gate, up, down;
  const float* gate_b = nullptr;
  const float* up_b = nullptr;
  const float* down_b = nullptr;
  Activation act = Activation::Silu;
};

struct RopeParams {
  std::int32_t n_rot = 0;  // rotated dims per head (<= head_dim), even
  float freq_base = 10000.0f;
  float freq_scale = 1.0f;              // linear scaling: positions are multiplied by it
  bool neox = false;                    // rotate (i, i + n_rot/2) instead of adjacent (2i, 2i+1)
  const float* freq_factors = nullptr;  // [n_rot/2] divisors of each frequency (Llama 3), or null
  // YaRN (ext_factor > 0): pair i rotates by a mix of the scaled and unscaled
  // angle, unscaled weight ext_factor * (1 - clamp((i - corr_low) / (corr_high - corr_low))).
  float ext_factor = 0.0f;
  float corr_low = 0.0f, corr_high = 0.0f;  // pair indices where the ramp starts / ends
  float attn_factor = 1.0f;                 // cos and sin are multiplied by it (YaRN, LongRoPE)

  bool operator==(const RopeParams&) const = default;
};

// How the KV cache stores K and V rows. Q8_0: blocks of 32 int8 with one F16
// scale (34 bytes), each kv head's part a whole number of blocks.
enum class KvType : std::uint8_t { F32, F16, Q8_0 };
// Bytes of n elements of one K or V row (n a multiple of 32 for Q8_0).
inline constexpr std::size_t kv_row_bytes(KvType t, std::int64_t n) {
  const auto u = static_cast<std::size_t>(n);
  return t == KvType::F32 ? 4 * u : t == KvType::F16 ? 2 * u : u / 32 * 34;
}

// Which KV cells each query row may see: row i attends to cells
// cells[begin[i] .. end[i]) (ascending positions). Rows may share cells: a
// sequence's cells are listed once and its rows see slices of that list, so
// a prefill of T rows over D cached cells lists D + T cells, not about T D.
struct AttentionMask {
  std::span<const std::uint32_t> begin;  // [n_tokens]
  std::span<const std::uint32_t> end;    // [n_tokens]
  std::span<const std::uint32_t> cells;
};

struct AttentionArgs {
  const float* q = nullptr;  // [n_tokens][n_head * head_dim]
  const void* k = nullptr;   // cache: [n_cells][n_head_kv * head_dim] of kv_type
  const void* v = nullptr;   // cache: [n_cells][n_head_kv * head_dim] of kv_type
  KvType kv_type = KvType::F32;
  // [n_tokens][n_head * head_dim]; may be q itself: a query's output is
  // written only after the query's last read (no [n_tokens] buffer of its own).
  float* out = nullptr;
  std::int64_t n_tokens = 0;
  std::int32_t n_head = 0;
  std::int32_t n_head_kv = 0;
  std::int32_t head_dim = 0;
  float scale = 1.0f;    // applied to q.k
  float softcap = 0.0f;  // if > 0: score = softcap * tanh(score / softcap)
  AttentionMask mask;
  // Attention sinks (gpt-oss), or null: head h's softmax denominator gets an
  // extra term e^sinks[h] that takes no value, so a head may attend to nothing.
  const float* sinks = nullptr;  // [n_head]
};

// How v-head h picks its k-head when there are fewer k-heads than v-heads
// (r = n_head_v / n_head_k): Tiled reads h mod n_head_k (qwen35* GGUFs, whose
// converter reorders V heads), Grouped reads h / r (Hugging Face order, qwen3next).
enum class KHeadMap : std::uint8_t { Tiled, Grouped };

struct GatedDeltaArgs {
  const float* q = nullptr;     // [n_tokens][n_head_k][dk]
  const float* k = nullptr;     // [n_tokens][n_head_k][dk]
  const float* v = nullptr;     // [n_tokens][n_head_v][dv]
  const float* g = nullptr;     // [n_tokens][n_head_v] log decay (<= 0 in the models)
  const float* beta = nullptr;  // [n_tokens][n_head_v] write strength
  float* state = nullptr;       // [n_head_v][dv][dk], updated in place
  float* out = nullptr;         // [n_tokens][n_head_v][dv]; may be v (read first)
  std::int64_t n_tokens = 0;    // tokens of ONE sequence, in order
  std::int32_t n_head_k = 0, n_head_v = 0, dk = 0, dv = 0;
  // Floats from one token's q to the next's, and alike for k, v and out, when
  // they are slices of one [n_tokens][stride] buffer (the conv's [q | k | v]
  // rows, out over v); 0: each packed as laid out above.
  std::int64_t row_stride = 0;
  float scale = 1.0f;  // applied to q
  KHeadMap map = KHeadMap::Tiled;
};

class ComputeBackend {
 public:
  virtual ~ComputeBackend() = default;
  virtual std::string_view name() const = 0;

  // y[t][r] = sum_k W[r][k] x[t][k]; x [n_tokens][w.n_in], y [n_tokens][ldy].
  virtual void matmul(const WeightView& w, const float* x, std::int64_t n_tokens, float* y,
                      std::int64_t ldy) = 0;
  // Several matmuls at once (a layer's Q, K and V; its gate and up): the same
  // results as matmul() on each job. A backend may share the work of jobs with
  // the same input and run them in one dispatch; this default calls matmul().
  virtual void matmul_many(std::span<const MatmulJob> jobs) {
    for (const MatmulJob& j : jobs) matmul(j.w, j.x, j.n_tokens, j.y, j.ldy);
  }
  // out[i] = row ids[i] of W, dequantized; out [ids.size()][w.n_in].
  virtual void get_rows(const WeightView& w, std::span<const std::int32_t> ids, float* out) = 0;
  // y[r] = x[r] / sqrt(mean(x[r]^2) + eps) * w  (w may be null: no scale); in place allowed.
  virtual void rms_norm(const float* x, const float* w, std::int64_t n_rows, std::int64_t n,
                        float eps, float* y) = 0;
  // Rotates each head of x [n_tokens][n_heads][head_dim] in place by its position.
  virtual void rope(float* x, std::int64_t n_tokens, std::int32_t n_heads, std::int32_t head_dim,
                    std::span<const std::int32_t> pos, const RopeParams& p) = 0;
  // out = softmax(q k^T * scale (+ softcap), masked) v, per head; GQA: query
  // head h reads kv head h / (n_head / n_head_kv). With sinks, e^sinks[h]
  // joins head h's denominator.
  virtual void attention(const AttentionArgs& a) = 0;
  // out[i] = act(gate[i]) * up[i]
  virtual void gated_activation(const float* gate, const float* up, std::int64_t n, Activation act,
                                float* out) = 0;
  // x[i] += y[i]
  virtual void add(float* x, const float* y, std::int64_t n) = 0;
  // x[i] *= y[i] (gated attention's output gate)
  virtual void mul(float* x, const float* y, std::int64_t n) = 0;
  // Row i of dst = row i of src, `width` floats each, for n_rows rows whose
  // starts are src_stride / dst_stride floats apart (splitting interleaved
  // heads, gathering rows, re-laying a [T][L][P] block as [L][T][P]). Rows
  // are copied in order, each as by memmove, so dst may compact src in place
  // (dst <= src, dst_stride <= src_stride).
  virtual void copy_rows(const float* src, std::int64_t src_stride, std::int64_t n_rows,
                         std::int64_t width, float* dst, std::int64_t dst_stride) = 0;

  // Recurrent (gated delta net) layers; the math of each is in compute/recurrent_ops.h.
  // y[i] = ln(1 + e^x[i]), stable for large |x|; in place allowed (also sigmoid, silu).
  virtual void softplus(const float* x, std::int64_t n, float* y) = 0;
  // y[i] = 1 / (1 + e^-x[i])
  virtual void sigmoid(const float* x, std::int64_t n, float* y) = 0;
  // y[i] = x[i] / (1 + e^-x[i])
  virtual void silu(const float* x, std::int64_t n, float* y) = 0;
  // y[r] = x[r] / max(||x[r]||_2, eps) per row of n; in place allowed.
  virtual void l2_norm(const float* x, std::int64_t n_rows, std::int64_t n, float eps,
                       float* y) = 0;
  // y[r] = x[r] / sqrt(mean(x[r]^2) + eps) * w * silu(z[r]) per row of n (z laid out like x).
  virtual void rms_norm_gated(const float* x, const float* w, const float* z, std::int64_t n_rows,
                              std::int64_t n, float eps, float* y) = 0;
  // Causal depthwise convolution of width `width` over the tokens of one
  // sequence with its window `state` [width-1][n_ch] (updated);
  // x, y [n_tokens][n_ch] (y may be x), w [n_ch][width].
  virtual void ssm_conv(const float* x, std::int64_t n_tokens, std::int64_t n_ch, const float* w,
                        std::int32_t width, float* state, float* y) = 0;
  // The gated delta rule over the tokens of one sequence (GatedDeltaArgs).
  virtual void gated_delta_rule(const GatedDeltaArgs& a) = 0;
  // x[r][i] += bias[i] for each of n_rows rows of length n.
  virtual void add_bias(float* x, const float* bias, std::int64_t n_rows, std::int64_t n) = 0;
  // x[i] *= s
  virtual void scale(float* x, std::int64_t n, float s) = 0;
  // x[r][i] *= s[r] for each of n_rows rows of length n (the shared expert's gate).
  virtual void scale_rows(float* x, std::int64_t n_rows, std::int64_t n, const float* s) = 0;
  // x[r][i] *= v[i] for each of n_rows rows of length n (a per-column factor).
  virtual void mul_rows(float* x, std::int64_t n_rows, std::int64_t n, const float* v) = 0;
  // weights[i] *= per_expert[ids[i]] for i < n: a router's weights scaled by a
  // factor of each chosen expert (Gemma 4's per-expert output scale).
  virtual void scale_by_expert(float* weights, const std::int32_t* ids, std::int64_t n,
                               const float* per_expert) = 0;
  // x[i] = cap * tanh(x[i] / cap), cap > 0 (Gemma's logit soft-capping).
  virtual void softcap(float* x, std::int64_t n, float cap) = 0;
  // Writes row t of k and v ([n_tokens][width] f32, n_tokens = cells.size())
  // to row cells[t] of the caches ([n_cells][width] of `type`), converted.
  virtual void store_kv(void* k_cache, void* v_cache, KvType type, std::int64_t width,
                        std::span<const std::uint32_t> cells, const float* k, const float* v) = 0;
  // Rotates the cached keys in rows `cells` of k_cache (n_heads heads of
  // head_dim, stored as `type`) by `delta` positions with `p` (its
  // attn_factor ignored: it was applied when the key was stored). A context
  // shift: a key rotated to position q and then by delta equals one rotated to
  // q + delta, up to the cache type's rounding.
  virtual void shift_keys(void* k_cache, KvType type, std::span<const std::uint32_t> cells,
                          std::int32_t n_heads, std::int32_t head_dim, const RopeParams& p,
                          std::int32_t delta) = 0;
  // Mixture-of-experts router: for each of n_tokens rows of `logits`
  // ([n_tokens][n_expert]) the k chosen experts, best first (ties: lower id),
  // and their weights as `mode` says; ids, weights [n_tokens][k].
  virtual void route(const float* logits, std::int64_t n_tokens, std::int32_t n_expert,
                     std::int32_t k, Routing mode, std::int32_t* ids, float* weights) = 0;
  // The routed experts of a mixture-of-experts FFN, f.gate's n_in = n, n_out
  // = n_ff (f.up's alike, f.down's the reverse). For token t of x ([n_tokens][n])
  // and slot j < k with e = ids[t * k + j] and w = weights[t * k + j]:
  //   y[t] = sum_j w (down_e act(gate_e x[t] + gate_b[e], up_e x[t] + up_b[e]) + down_b[e])
  // (y: [n_tokens][n], not overlapping x; an absent bias counts as zero). Rows
  // are grouped by expert across the whole batch, so each used expert's
  // weights are read once and an unused expert's not at all. Throws
  // Error(InvalidArgument) for an id outside [0, n_expert) or experts whose
  // shapes do not chain.
  virtual void experts_ffn(const ExpertsFfn& f, const float* x, std::int64_t n_tokens,
                           const std::int32_t* ids, std::int32_t k, const float* weights,
                           float* y) = 0;
};

class CpuBackend : public ComputeBackend {
 public:
  // Throws Error(InvalidArgument) when SEAM_CPU names a level this CPU lacks,
  // before any work starts rather than inside a forward pass.
  explicit CpuBackend(int n_threads = 0) : pool_(n_threads) { active_cpu_level(); }
  std::string_view name() const override { return "cpu"; }
  int n_threads() const { return pool_.size(); }

  void matmul(const WeightView& w, const float* x, std::int64_t n_tokens, float* y,
              std::int64_t ldy) override;
  void matmul_many(std::span<const MatmulJob> jobs) override;
  void get_rows(const WeightView& w, std::span<const std::int32_t> ids, float* out) override;
  void rms_norm(const float* x, const float* w, std::int64_t n_rows, std::int64_t n, float eps,
                float* y) override;
  void rope(float* x, std::int64_t n_tokens, std::int32_t n_heads, std::int32_t head_dim,
            std::span<const std::int32_t> pos, const RopeParams& p) override;
  void attention(const AttentionArgs& a) override;
  void gated_activation(const float* gate, const float* up, std::int64_t n, Activation act,
                        float* out) override;
  void add(float* x, const float* y, std::int64_t n) override;
  void mul(float* x, const float* y, std::int64_t n) override;
  void copy_rows(const float* src, std::int64_t src_stride, std::int64_t n_rows, std::int64_t width,
                 float* dst, std::int64_t dst_stride) override;
  void softplus(const float* x, std::int64_t n, float* y) override;
  void sigmoid(const float* x, std::int64_t n, float* y) override;
  void silu(const float* x, std::int64_t n, float* y) override;
  void l2_norm(const float* x, std::int64_t n_rows, std::int64_t n, float eps, float* y) override;
  void rms_norm_gated(const float* x, const float* w, const float* z, std::int64_t n_rows,
                      std::int64_t n, float eps, float* y) override;
  void ssm_conv(const float* x, std::int64_t n_tokens, std::int64_t n_ch, const float* w,
                std::int32_t width, float* state, float* y) override;
  void gated_delta_rule(const GatedDeltaArgs& a) override;
  void add_bias(float* x, const float* bias, std::int64_t n_rows, std::int64_t n) override;
  void scale(float* x, std::int64_t n, float s) override;
  void scale_rows(float* x, std::int64_t n_rows, std::int64_t n, const float* s) override;
  void mul_rows(float* x, std::int64_t n_rows, std::int64_t n, const float* v) override;
  void scale_by_expert(float* weights, const std::int32_t* ids, std::int64_t n,
                       const float* per_expert) override;
  void softcap(float* x, std::int64_t n, float cap) override;
  void store_kv(void* k_cache, void* v_cache, KvType type, std::int64_t width,
                std::span<const std::uint32_t> cells, const float* k, const float* v) override;
  void shift_keys(void* k_cache, KvType type, std::span<const std::uint32_t> cells,
                  std::int32_t n_heads, std::int32_t head_dim, const RopeParams& p,
                  std::int32_t delta) override;
  void route(const float* logits, std::int64_t n_tokens, std::int32_t n_expert, std::int32_t k,
             Routing mode, std::int32_t* ids, float* weights) override;
  void experts_ffn(const ExpertsFfn& f, const float* x, std::int64_t n_tokens,
                   const std::int32_t* ids, std::int32_t k, const float* weights,
                   float* y) override;

  // experts_ffn runs a group of experts at a time, their rows' inputs and
  // intermediates at most this many bytes (or one expert's, if more): 8 MiB
  // unless set, e.g. by a test that wants several groups from small matrices.
  void set_expert_group_bytes(std::int64_t bytes) { expert_group_bytes_ = bytes; }

 protected:
  ThreadPool& pool() { return pool_; }

 private:
  ThreadPool pool_;
  MatmulScratch scratch_;
  AttentionScratch attn_scratch_;
  // The angles of a call's positions, [n_tokens][n_rot/2][cos, sin]: every
  // layer's q and k of one forward pass rotate by the same ones, so the last
  // few tables (one per distinct RopeParams, e.g. local and global layers) are
  // kept and reused while the positions and parameters match exactly.
  struct RopeTable {
    RopeParams p;
    std::vector<std::int32_t> pos;
    std::vector<float> cs;
  };
  std::vector<RopeTable> rope_tables_;
  std::size_t rope_next_ = 0;  // the table to replace next
  const float* rope_angles(std::span<const std::int32_t> pos, const RopeParams& p);
  // fn(b, e) over n items of `item_elements` floats each: split over the
  // pool when the call holds enough work to pay for a worker's hand-off (a
  // prefill's rows), on the calling thread otherwise (a decode's one row).
  void for_items(std::int64_t n, std::int64_t item_elements,
                 FunctionRef<void(std::size_t, std::size_t)> fn);
  // fn(b, e) over the elements [0, n), split at multiples of 64 so that an
  // element falls in a kernel's vector body or tail as it would unsplit.
  void for_elements(std::int64_t n, FunctionRef<void(std::int64_t, std::int64_t)> fn);
  std::vector<float> route_row_;
  // experts_ffn: a group's gathered inputs (then its down outputs), gate and up rows.
  std::vector<float> expert_io_, expert_gate_, expert_up_;
  std::vector<std::int64_t> expert_slots_;  // (t * k + j), grouped by expert
  std::vector<std::int64_t> expert_first_;  // each used expert's first entry in expert_slots_
  std::vector<std::int32_t> expert_used_;   // the experts some slot chose, ascending
  std::vector<MatmulJob> expert_jobs_;      // a group's matmuls
  std::int64_t expert_group_bytes_ = std::int64_t{8} << 20;
};

}  // namespace seam
