// Session::drop_positions: a shifted cache against a cold prefill at the new positions.
//
// The bound. A shift rotates each cached key once more, by the angles of the
// delta, where a cold prefill rotates it once by the angles of the new
// position; RoPE's angle is linear in the position, so the two agree up to
// float32 rounding: cos and sin rounded (u = 2^-24 relative each), each
// rotated element computed with two products and a sum (3 u), per rotation
// and pair at most 4 sqrt(2) u of the pair's length; with the cold key's own
// rotation and the two rotations of the shifted one, the keys differ by at
// most eps_k = 3 * 4 sqrt(2) u ~ 17 u relative. The queries and every other
// activation of the kept tokens were computed at other absolute angles,
// which perturbs them by the same order (we allow eps = 64 u in all, a few
// times eps_k). As in kv_cache_type_test.cpp: a relative perturbation eps of
// keys and values moves a layer's attention output by at most eps (1 + 2 A)
// with scores of size A <= 8, and each layer adds its own, so the logits move
// by at most n_layer (1 + 2 A) eps relative to their largest magnitude.
//
// What is exact: a pure shift (nothing dropped) in any model, since the
// kept tokens' states depend only on relative positions; a drop in a
// one-layer model, whose keys and values depend on the token alone. A drop in
// a deeper model is the context-shift approximation (session.h), and so is
// a pure shift with attention temperature (queries scaled by absolute position).
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <random>

#include "python_tools.h"
#include "seam/error.h"
#include "test_model.h"

namespace seam {
namespace {

using namespace seam::testing;

constexpr double kU32 = 1.0 / 16777216.0;  // 2^-24
constexpr double kU16 = 1.0 / 2048.0;      // 2^-11
constexpr double kMaxScore = 8.0;

double bound(const Model& m, double eps) { return m.info().n_layer * (1 + 2 * kMaxScore) * eps; }

std::vector<Token> ids_from(std::size_t n_vocab, std::size_t n, unsigned seed) {
  std::vector<Token> ids = random_prompt(n_vocab, n + 1, seed);
  ids.erase(ids.begin());  // no BOS: these continue a sequence
  return ids;
}

std::vector<float> flat(const std::vector<std::vector<float>>& rows) {
  std::vector<float> out;
  for (const auto& r : rows) out.insert(out.end(), r.begin(), r.end());
  return out;
}

// Cold: `ctx` at positions from `start`, then `cont` after it; the logits of `cont`.
std::vector<float> cold(const Model& m, CacheType type, const std::vector<Token>& ctx,
                        std::int32_t start, const std::vector<Token>& cont) {
  SessionConfig c = exact_config(128, 16);
  c.cache_type = type;
  auto s = m.session(c);
  decode_all(*s, ctx, 0, start);
  return flat(decode_all(*s, cont, 0, start + static_cast<std::int32_t>(ctx.size())));
}

// Decodes every sequence's continuation in ONE mixed batch; logits per sequence.
std::vector<std::vector<float>> continue_all(
    Session& s, const std::vector<std::pair<std::uint32_t, std::vector<Token>>>& conts) {
  std::vector<Decode> batch;
  for (const auto& [seq, cont] : conts) {
    const std::int32_t at = s.seq_next_pos(seq);
    for (std::size_t i = 0; i < cont.size(); ++i)
      batch.push_back({cont[i], at + static_cast<std::int32_t>(i), seq, true});
  }
  s.decode(batch);
  std::vector<std::vector<float>> out;
  std::size_t row = 0;
  for (const auto& [seq, cont] : conts) {
    std::vector<float> logits;
    for (std::size_t i = 0; i < cont.size(); ++i, ++row) {
      const auto l = s.logits(row);
      logits.insert(logits.end(), l.begin(), l.end());
    }
    out.push_back(std::move(logits));
  }
  return out;
}

// Sequence 0 starts at position D and is shifted to 0 (nothing dropped);
// sequence 1 is another text and sequence 2 a fork of sequence 0 made before
// the shift (its shared cells are copied, so it keeps its positions). Then
// one batch continues all three.
void check_pure_shift(const Model& m, const std::string& name, CacheType type, double eps) {
  const std::size_t nv = m.info().n_vocab;
  const std::vector<Token> ids = random_prompt(nv, 30, 7), other = random_prompt(nv, 19, 8);
  const std::vector<Token> cont = ids_from(nv, 6, 9);
  constexpr std::int32_t kD = 17;
  SessionConfig c = exact_config(128, 16, 3);
  c.cache_type = type;
  auto s = m.session(c);
  decode_all(*s, ids, 0, kD);
  decode_all(*s, other, 1, 0);
  s->copy_seq(0, 2);
  const std::uint32_t free_before = s->free_cells();
  s->drop_positions(0, 0, kD);
  EXPECT_EQ(s->seq_next_pos(0), static_cast<std::int32_t>(ids.size()));
  EXPECT_EQ(s->seq_length(0), ids.size());
  EXPECT_EQ(s->seq_next_pos(2), kD + static_cast<std::int32_t>(ids.size()));
  EXPECT_EQ(s->free_cells(), free_before - ids.size()) << "every shared cell was copied";
  const auto got = continue_all(*s, {{0, cont}, {1, cont}, {2, cont}});
  const double w0 = worst_rel(got[0], cold(m, type, ids, 0, cont), nv);
  const double w1 = worst_rel(got[1], cold(m, type, other, 0, cont), nv);
  const double w2 = worst_rel(got[2], cold(m, type, ids, kD, cont), nv);
  const double b = bound(m, eps);
  std::printf("[ %s ] pure shift: shifted %.3g, untouched %.3g, fork %.3g (bound %.3g)\n",
              name.c_str(), w0, w1, w2, b);
  EXPECT_LT(w0, b) << name;
  EXPECT_LT(w1, b) << name;
  EXPECT_LT(w2, b) << name;
}

// BOS + 29 tokens; positions [1, 12) dropped (BOS kept, as the observer
// does), the rest moved down by 11; a fork made before keeps the whole text.
void check_drop(const Model& m, const std::string& name) {
  ASSERT_EQ(m.info().n_layer, 1u) << "a drop is exact only with one layer";
  const std::size_t nv = m.info().n_vocab;
  const std::vector<Token> ids = random_prompt(nv, 30, 11);
  const std::vector<Token> cont = ids_from(nv, 6, 12);
  constexpr std::int32_t kFrom = 1, kTo = 12;
  auto s = m.session(exact_config(128, 16, 2));
  decode_all(*s, ids, 0, 0);
  s->copy_seq(0, 1);
  s->drop_positions(0, kFrom, kTo);
  EXPECT_EQ(s->seq_length(0), ids.size() - (kTo - kFrom));
  std::vector<Token> kept = {ids[0]};
  kept.insert(kept.end(), ids.begin() + kTo, ids.end());
  const auto got = continue_all(*s, {{0, cont}, {1, cont}});
  const double w0 = worst_rel(got[0], cold(m, CacheType::F32, kept, 0, cont), nv);
  const double w1 = worst_rel(got[1], cold(m, CacheType::F32, ids, 0, cont), nv);
  // The dropped text mattered: without the drop the logits differ by far more.
  const double effect = worst_rel(got[0], got[1], nv);
  const double b = bound(m, 64 * kU32);
  std::printf(
      "[ %s ] drop 11: shifted %.3g, fork %.3g (bound %.3g); the drop moves logits by %.3g\n",
      name.c_str(), w0, w1, b, effect);
  EXPECT_LT(w0, b) << name;
  EXPECT_LT(w1, b) << name;
  EXPECT_GT(effect, 100 * b) << name;
}

struct ShiftCase {
  std::string name, args;
};

class KvShift : public ::testing::TestWithParam<ShiftCase> {};

TEST_P(KvShift, PureShiftEqualsColdPrefillF32) {
  const ShiftCase& c = GetParam();
  auto m = load_two_threads(generate_model("shift_" + c.name, c.args));
  check_pure_shift(*m, c.name, CacheType::F32, 64 * kU32);
}

INSTANTIATE_TEST_SUITE_P(
    Archs, KvShift,
    ::testing::Values(
        // adjacent pairs (llama), GQA
        ShiftCase{"llama",
                  "--arch llama --dim 48 --layers 2 --heads 3 --kv-heads 1 --ffn 96 "
                  "--seed 41"},
        // neox pairs with q/k/v biases
        ShiftCase{"qwen2",
                  "--arch qwen2 --dim 64 --layers 2 --heads 4 --kv-heads 2 --ffn 96 "
                  "--seed 42"},
        // YaRN with attention factors: applied once, not again by the shift
        ShiftCase{"llama_yarn",
                  "--arch llama --dim 48 --layers 2 --heads 3 --kv-heads 1 --ffn 96 "
                  "--seed 43 --yarn 8 --orig-ctx 12 --yarn-attn-factor 1.3 "
                  "--rope-attn-factor 0.9"},
        ShiftCase{"qwen2_yarn",
                  "--arch qwen2 --dim 64 --layers 2 --heads 4 --kv-heads 2 --ffn 96 "
                  "--seed 44 --yarn 4 --orig-ctx 16"},
        // LongRoPE frequency factors (the 128-cell session is past n_ctx_orig:
        // the long factors), partial rotation
        ShiftCase{"phi3_longrope",
                  "--arch phi3 --dim 64 --layers 2 --heads 4 --kv-heads 2 "
                  "--ffn 96 --rope-dim 8 --ctx 256 --seed 45 --longrope "
                  "--orig-ctx 32"},
        // sliding-window layers with their own RoPE base
        ShiftCase{"gemma3_swa",
                  "--arch gemma3 --dim 32 --layers 6 --heads 2 --kv-heads 1 "
                  "--head-dim 16 --ffn 64 --tied --window 5 --rope-theta 1000000 "
                  "--seed 46"},
        // per-layer head sizes and bases, proportional RoPE (rope_freqs) on the
        // global layers, and layers that read a shifted cache they do not own
        ShiftCase{"gemma4", "--arch gemma4"}),
    [](const auto& info) { return info.param.name; });

TEST(KvShift, PureShiftStories260K) {
  check_pure_shift(*stories(), "stories260K", CacheType::F32, 64 * kU32);
  // F16: the shifted key is rounded to F16 twice, the cold one once.
  check_pure_shift(*stories(), "stories260K f16", CacheType::F16, 2 * kU16);
}

TEST(KvShift, DropEqualsColdPrefillOneLayerAdjacent) {
  check_drop(*load_two_threads(generate_model(
                 "shift_llama_1layer",
                 "--arch llama --dim 48 --layers 1 --heads 3 --kv-heads 1 --ffn 96 --seed 48")),
             "llama 1 layer");
}

TEST(KvShift, DropEqualsColdPrefillOneLayerNeox) {
  check_drop(*load_two_threads(generate_model(
                 "shift_qwen2_1layer",
                 "--arch qwen2 --dim 64 --layers 1 --heads 4 --kv-heads 2 --ffn 96 --seed 49")),
             "qwen2 1 layer");
}

// Attention temperature scales each query by its absolute position, so in a
// deeper model the kept tokens' later-layer states depend on where they were
// (session.h); with one layer the keys and values depend on the token alone
// and the new tokens' queries take their temperature from the new positions.
TEST(KvShift, DropEqualsColdPrefillOneLayerAttentionTemperature) {
  check_drop(*load_two_threads(generate_model(
                 "shift_mistral3_temp_1layer",
                 "--arch mistral3 --dim 64 --layers 1 --heads 4 --kv-heads 2 --head-dim 32 "
                 "--ffn 96 --seed 47 --yarn 8 --orig-ctx 8 --yarn-log-mul 1 "
                 "--attn-temp-scale 0.1")),
             "mistral3 temperature 1 layer");
}

TEST(KvShift, RefusalsLeaveTheSessionUnchanged) {
  auto m = stories();
  auto s = m->session(exact_config(20, 16, 2));
  decode_all(*s, random_prompt(m->info().n_vocab, 12, 3), 0, 0);
  s->copy_seq(0, 1);
  EXPECT_THROW(s->drop_positions(2, 0, 1), Error);
  EXPECT_THROW(s->drop_positions(0, -1, 1), Error);
  EXPECT_THROW(s->drop_positions(0, 5, 4), Error);
  // Dropping 2 moves 10 cells shared with sequence 1: 10 copies, 8 free cells.
  try {
    s->drop_positions(0, 0, 2);
    ADD_FAILURE() << "expected ContextFull";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::ContextFull) << e.what();
  }
  EXPECT_EQ(s->seq_length(0), 12u);
  EXPECT_EQ(s->seq_next_pos(0), 12);
  EXPECT_EQ(s->free_cells(), 8u);
  // Without the fork the same drop needs no copy.
  s->clear_seq(1);
  s->drop_positions(0, 0, 2);
  EXPECT_EQ(s->seq_length(0), 10u);
  EXPECT_EQ(s->seq_next_pos(0), 10);
  EXPECT_EQ(s->free_cells(), 10u);
  s->drop_positions(0, 3, 3);  // empty range: nothing changes
  EXPECT_EQ(s->seq_next_pos(0), 10);
}

}  // namespace
}  // namespace seam
