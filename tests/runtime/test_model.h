// Shared fixtures for runtime tests: the real stories260K checkpoint.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "seam/model.h"
#include "seam/session.h"

namespace seam::testing {

inline std::string stories_path() {
  return std::string(SEAM_SHARED_DIR) + "/models/stories260K.gguf";
}

inline std::shared_ptr<const Model> stories() {
  static std::shared_ptr<const Model> model = [] {
    LoadOptions lo;
    lo.n_threads = 2;
    return Model::load(stories_path(), lo);
  }();
  return model;
}

// Bounds on max |ours - other| / max |other| over each logits row, each a few
// times the worst figure observed (Zen 4, AVX-512 build, 2 threads; every test
// prints its own figure). A session for them comes from exact_config().
//
// F32/F16/BF16 weights against tools/reference.py (float64): both use the
// weights exactly, only float32 accumulation differs. Observed 7.5e-8 to
// 1.2e-6 (gemma2 with soft-caps) over the reference, architecture, RoPE-scaling,
// metadata-key, Hugging Face and shared-refmodel cases.
inline constexpr double kExactTol = 5e-6;
// Quantized weights against tools/reference.py, which decodes them exactly:
// seam quantizes activations to 8-bit blocks (Q8_0 / Q8_K, as llama.cpp
// does). Observed 1.7e-3 to 5.2e-3 (gemma2 Q8_0).
inline constexpr double kQuantTol = 8e-3;
// Against llama.cpp, which keeps K and V in F16 (11-bit mantissa) and rounds
// activations to F16/BF16 for F16/BF16 weights: F32/F16 weights observed 4e-5
// to 7.3e-4 (gemma3 with soft-cap and local/global RoPE), BF16 up to 9.8e-4;
// quantized files observed 1.1e-3 to 2e-3.
inline constexpr double kPeerExactTol = 2e-3;
inline constexpr double kPeerQuantTol = 5e-3;

// The session of every exactness test (logits against tools/reference.py or
// llama.cpp within a bound derived from float32 accumulation): F32 K/V. The
// bounds assume the cache stores K and V unrounded, so the cache is F32 (the
// default F16 cache is bounded against it in kv_cache_type_test.cpp).
inline SessionConfig exact_config(std::uint32_t n_ctx, std::uint32_t n_batch,
                                  std::uint32_t n_seq_max = 1) {
  SessionConfig c;
  c.n_ctx = n_ctx;
  c.n_batch = n_batch;
  c.n_seq_max = n_seq_max;
  c.cache_type = CacheType::F32;
  return c;
}

// BOS (id 1) then n - 1 ids drawn uniformly from [3, n_vocab): past the
// generators' special tokens, the same ids for the same seed.
inline std::vector<Token> random_prompt(std::size_t n_vocab, std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<Token> pick(3, static_cast<Token>(n_vocab) - 1);
  std::vector<Token> ids = {1};
  while (ids.size() < n) ids.push_back(pick(rng));
  return ids;
}

// Decodes `tokens` of `seq` from position `start` and returns the logits of every row.
inline std::vector<std::vector<float>> decode_all(Session& s, std::span<const Token> tokens,
                                                  std::uint32_t seq, std::int32_t start = 0) {
  std::vector<Decode> batch;
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    batch.push_back({tokens[i], start + static_cast<std::int32_t>(i), seq, true});
  }
  s.decode(batch);
  std::vector<std::vector<float>> out;
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    auto l = s.logits(i);
    out.emplace_back(l.begin(), l.end());
  }
  return out;
}

// seam serve's promise (docs/server.md, "Batch invariance"): sequence 0 gets
// the same logits, bit for bit, alone and beside 15 others in shared decode
// calls: prompts 0..7 prefilled in one call, then every step decodes the
// running sequences (16 rows once all have joined: the GEMM), and from step 2
// on one waiting prompt joins the call whole. The default F16 cache, as seam
// serve runs. One computation claimed reproducible, hence exact equality.
inline void expect_alone_equals_beside_others(const Model& m, std::size_t steps) {
  const std::size_t nv = m.info().n_vocab, n_seq = 16;
  std::vector<std::vector<Token>> prompts;
  for (std::size_t i = 0; i < n_seq; ++i) prompts.push_back(random_prompt(nv, 5 + 3 * i, 40 + i));
  const std::vector<Token> next = random_prompt(nv, steps + 1, 99);
  SessionConfig cfg;
  cfg.n_ctx = 1024;
  cfg.n_seq_max = n_seq;

  std::vector<std::vector<float>> alone;  // sequence 0 alone: its prompt, then a token per call
  {
    auto s = m.session(cfg);
    alone.push_back(decode_all(*s, prompts[0], 0).back());
    for (std::size_t j = 0; j < steps; ++j)
      alone.push_back(decode_all(*s, std::span(&next[j], 1), 0,
                                 static_cast<std::int32_t>(prompts[0].size() + j))[0]);
  }
  auto s = m.session(cfg);
  std::vector<Decode> batch;
  std::vector<std::int32_t> pos(n_seq, -1);
  auto add_prompt = [&](std::size_t i) {
    for (std::size_t k = 0; k < prompts[i].size(); ++k)
      batch.push_back({prompts[i][k], static_cast<std::int32_t>(k), static_cast<std::uint32_t>(i),
                       k + 1 == prompts[i].size()});
    pos[i] = static_cast<std::int32_t>(prompts[i].size());
  };
  for (std::size_t i = 0; i < 8; ++i) add_prompt(i);
  s->decode(batch);
  EXPECT_EQ(std::vector<float>(s->logits(prompts[0].size() - 1).begin(),
                               s->logits(prompts[0].size() - 1).end()),
            alone[0]);
  std::size_t waiting = 8;
  for (std::size_t j = 0; j < steps; ++j) {
    batch.clear();
    for (std::size_t i = 0; i < n_seq; ++i)
      if (pos[i] >= 0) batch.push_back({next[j], pos[i]++, static_cast<std::uint32_t>(i), true});
    if (j >= 2 && waiting < n_seq) add_prompt(waiting++);
    s->decode(batch);
    const auto got = s->logits(0);  // sequence 0 is always the first row
    EXPECT_EQ(std::vector<float>(got.begin(), got.end()), alone[j + 1])
        << "step " << j << ", " << batch.size() << " rows in the call";
  }
}

// max |a - b| / max |b|
inline double rel_diff(std::span<const float> a, std::span<const float> b) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    num = std::max(num, std::abs(static_cast<double>(a[i]) - b[i]));
    den = std::max(den, std::abs(static_cast<double>(b[i])));
  }
  return den > 0 ? num / den : num;
}

// The worst rel_diff over consecutive rows of n_vocab logits.
inline double worst_rel(std::span<const float> a, std::span<const float> b, std::size_t n_vocab) {
  double worst = 0;
  for (std::size_t i = 0; i + n_vocab <= a.size(); i += n_vocab) {
    worst = std::max(worst, rel_diff(a.subspan(i, n_vocab), b.subspan(i, n_vocab)));
  }
  return worst;
}

// A model file loaded as the tests run it: two compute threads.
inline std::shared_ptr<const Model> load_two_threads(const std::string& path) {
  LoadOptions lo;
  lo.n_threads = 2;
  return Model::load(path, lo);
}

// Prefills `ids` in chunks of 5 (so the KV cache path is covered), compares
// every position's logits with `ref` ([n_tokens][n_vocab]) within `tol`, and
// prints and returns the worst relative difference.
inline double expect_logits_match(const Model& model, std::span<const Token> ids,
                                  std::span<const float> ref, double tol, const std::string& name) {
  const std::size_t nv = model.info().n_vocab;
  EXPECT_EQ(ref.size(), ids.size() * nv);
  if (ref.size() != ids.size() * nv) return 1e30;
  auto s = model.session(exact_config(64, 5));
  auto got = decode_all(*s, ids, 0);
  double worst = 0;
  for (std::size_t t = 0; t < ids.size(); ++t) {
    const double r = rel_diff(got[t], ref.subspan(t * nv, nv));
    worst = std::max(worst, r);
    EXPECT_LT(r, tol) << name << " position " << t;
  }
  std::printf("[ %s ] worst relative logit difference %.3g (tolerance %.3g)\n", name.c_str(), worst,
              tol);
  return worst;
}

// Both models' logits for `prompt` (one session each, the prompt in one
// call), bit for bit: files that hold the same weights in other layouts.
inline void expect_same_logits_bitwise(const Model& a, const Model& b,
                                       std::span<const Token> prompt) {
  auto sa = a.session(exact_config(64, 64));
  auto sb = b.session(exact_config(64, 64));
  const auto la = decode_all(*sa, prompt, 0);
  const auto lb = decode_all(*sb, prompt, 0);
  ASSERT_EQ(la.size(), lb.size());
  for (std::size_t t = 0; t < la.size(); ++t) {
    ASSERT_EQ(la[t].size(), lb[t].size());
    EXPECT_EQ(std::memcmp(la[t].data(), lb[t].data(), la[t].size() * sizeof(float)), 0)
        << "position " << t;
  }
}

// Two sequences interleaved row by row in every decode call of `n_batch`
// rows (a position of each per pair of rows), so every matmul, expert group
// and recurrent fold sees both; each row's logits against its sequence's
// reference within `tol`. Prints and returns the worst relative difference.
inline double expect_mixed_batch_match(const Model& model, std::span<const Token> a,
                                       std::span<const Token> b, std::span<const float> ref_a,
                                       std::span<const float> ref_b, std::uint32_t n_batch,
                                       double tol, const std::string& name) {
  const std::size_t nv = model.info().n_vocab;
  EXPECT_EQ(a.size(), b.size());
  auto s = model.session(exact_config(64, n_batch, 2));
  std::vector<Decode> batch;
  for (std::size_t i = 0; i < a.size(); ++i) {
    batch.push_back({a[i], static_cast<std::int32_t>(i), 0, true});
    batch.push_back({b[i], static_cast<std::int32_t>(i), 1, true});
  }
  s->decode(batch);
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double ra = rel_diff(s->logits(2 * i), ref_a.subspan(i * nv, nv));
    const double rb = rel_diff(s->logits(2 * i + 1), ref_b.subspan(i * nv, nv));
    EXPECT_LT(ra, tol) << name << " mixed batch, sequence 0 position " << i;
    EXPECT_LT(rb, tol) << name << " mixed batch, sequence 1 position " << i;
    worst = std::max({worst, ra, rb});
  }
  std::printf("[ %s ] mixed batch worst relative logit difference %.3g\n", name.c_str(), worst);
  return worst;
}

}  // namespace seam::testing
