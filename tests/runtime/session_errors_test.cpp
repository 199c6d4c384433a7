// Every rejected call leaves the session usable; a failed forward corrupts it.
#include <gtest/gtest.h>

#include <atomic>
#include <limits>
#include <random>
#include <set>

#include "core/thread_pool.h"
#include "runtime/model_impl.h"
#include "seam/error.h"
#include "test_model.h"

namespace seam {
namespace {

using testing::decode_all;
using testing::rel_diff;
using testing::stories;

Errc code_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.code();
  }
  ADD_FAILURE() << "expected a seam::Error";
  return Errc::Internal;
}

// After a rejected call the session must still give exactly the logits of a clean one.
void expect_still_works(Session& s, std::uint32_t seq, const std::vector<Token>& history) {
  const Token next = 42;
  auto got = decode_all(s, std::span(&next, 1), seq, static_cast<std::int32_t>(history.size()));
  auto model = stories();
  auto fresh = model->session({64, 512, 1});
  std::vector<Token> all = history;
  all.push_back(next);
  auto ref = decode_all(*fresh, all, 0);
  EXPECT_LT(rel_diff(got[0], ref.back()), 1e-5);
}

TEST(SessionErrors, RejectedBatchesChangeNothing) {
  auto model = stories();
  auto s = model->session({64, 512, 2});
  const std::vector<Token> history = {1, 400, 300};
  decode_all(*s, history, 0);
  const std::uint32_t free_before = s->free_cells();

  EXPECT_EQ(code_of([&] { s->decode({}); }), Errc::InvalidArgument);
  // Token outside the vocabulary, in a batch whose first row is fine.
  std::vector<Decode> bad_token = {{5, 3, 0, false}, {512, 4, 0, true}};
  EXPECT_EQ(code_of([&] { s->decode(bad_token); }), Errc::InvalidArgument);
  std::vector<Decode> neg_token = {{-1, 3, 0, true}};
  EXPECT_EQ(code_of([&] { s->decode(neg_token); }), Errc::InvalidArgument);
  std::vector<Decode> bad_seq = {{5, 0, 2, true}};
  EXPECT_EQ(code_of([&] { s->decode(bad_seq); }), Errc::InvalidArgument);
  std::vector<Decode> backwards = {{5, 4, 0, false}, {6, 3, 0, true}};
  EXPECT_EQ(code_of([&] { s->decode(backwards); }), Errc::InvalidArgument);
  std::vector<Decode> repeated = {{5, 3, 0, false}, {6, 3, 0, true}};
  EXPECT_EQ(code_of([&] { s->decode(repeated); }), Errc::InvalidArgument);
  std::vector<Decode> already_held = {{5, 2, 0, true}};
  EXPECT_EQ(code_of([&] { s->decode(already_held); }), Errc::InvalidArgument);
  std::vector<Decode> negative_pos = {{5, -1, 1, true}};
  EXPECT_EQ(code_of([&] { s->decode(negative_pos); }), Errc::InvalidArgument);
  // The largest int32 position would leave the sequence a next position past it.
  std::vector<Decode> last_pos = {{5, std::numeric_limits<std::int32_t>::max(), 1, true}};
  EXPECT_EQ(code_of([&] { s->decode(last_pos); }), Errc::InvalidArgument);
  std::vector<Decode> too_many;
  for (int i = 0; i < 62; ++i) too_many.push_back({7, i, 1, false});
  try {
    s->decode(too_many);
    ADD_FAILURE() << "expected ContextFull";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::ContextFull);
    EXPECT_NE(std::string(e.what()).find("needs 62"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("61"), std::string::npos) << e.what();
  }
  EXPECT_EQ(code_of([&] { s->clear_seq(2); }), Errc::InvalidArgument);
  EXPECT_EQ(code_of([&] { s->copy_seq(0, 7); }), Errc::InvalidArgument);
  EXPECT_EQ(code_of([&] { s->begin_prompt(9, history); }), Errc::InvalidArgument);
  EXPECT_EQ(s->free_cells(), free_before);
  EXPECT_EQ(s->seq_length(0), history.size());
  EXPECT_EQ(s->seq_length(1), 0u);
  expect_still_works(*s, 0, history);
}

TEST(SessionErrors, LogitsOnlyForRowsThatAskedForThem) {
  auto model = stories();
  auto s = model->session({64, 512, 1});
  std::vector<Decode> b = {{1, 0, 0, false}, {400, 1, 0, true}, {300, 2, 0, false}};
  s->decode(b);
  EXPECT_EQ(s->logits(1).size(), 512u);
  EXPECT_EQ(code_of([&] { (void)s->logits(0); }), Errc::InvalidArgument);
  EXPECT_EQ(code_of([&] { (void)s->logits(2); }), Errc::InvalidArgument);
  EXPECT_EQ(code_of([&] { (void)s->logits(3); }), Errc::InvalidArgument);
}

TEST(SessionErrors, BadConfigIsRejected) {
  auto model = stories();
  EXPECT_EQ(code_of([&] { model->session({0, 512, 1}); }), Errc::InvalidArgument);
  EXPECT_EQ(code_of([&] { model->session({64, 0, 1}); }), Errc::InvalidArgument);
  EXPECT_EQ(code_of([&] { model->session({64, 512, 0}); }), Errc::InvalidArgument);
  EXPECT_EQ(code_of([&] { model->session({64, 512, 100000}); }), Errc::InvalidArgument);
  auto s = model->session({64, 512, 64});
  EXPECT_EQ(s->n_seq_max(), 64u);
}

TEST(SessionErrors, ThreadCountsOutOfRangeAreRefusedAtLoad) {
  for (int n : {-1, kMaxThreads + 1, 100000}) {
    LoadOptions lo;
    lo.n_threads = n;
    EXPECT_EQ(code_of([&] { Model::load(testing::stories_path(), lo); }), Errc::InvalidArgument)
        << n;
  }
}

// A backend that overrides one op and inherits the CPU for the rest.
class CountingBackend : public CpuBackend {
 public:
  explicit CountingBackend(std::atomic<int>* calls, int fail_after = -1)
      : CpuBackend(1), calls_(calls), fail_after_(fail_after) {}
  void rms_norm(const float* x, const float* w, std::int64_t n_rows, std::int64_t n, float eps,
                float* y) override {
    const int c = calls_->fetch_add(1);
    if (fail_after_ >= 0 && c >= fail_after_) throw std::runtime_error("injected fault");
    CpuBackend::rms_norm(x, w, n_rows, n, eps, y);
  }

 private:
  std::atomic<int>* calls_;
  int fail_after_;
};

TEST(ComputeBackendSeam, OverridingOneOpFallsBackToCpuForTheRest) {
  auto model = stories();
  std::atomic<int> calls{0};
  auto s = make_session(*model, {64, 512, 1}, std::make_unique<CountingBackend>(&calls));
  const std::vector<Token> prompt = {1, 400, 300, 200};
  auto got = decode_all(*s, prompt, 0);
  // One rms_norm per block (attention, FFN) per layer, plus the output norm.
  EXPECT_EQ(calls.load(), 2 * 5 + 1);
  auto plain = model->session({64, 512, 1});
  auto ref = decode_all(*plain, prompt, 0);
  for (std::size_t i = 0; i < prompt.size(); ++i) EXPECT_LT(rel_diff(got[i], ref[i]), 1e-6);
}

TEST(ComputeBackendSeam, FailureInsideForwardCorruptsTheSession) {
  auto model = stories();
  std::atomic<int> calls{0};
  auto s = make_session(*model, {64, 512, 1}, std::make_unique<CountingBackend>(&calls, 3));
  const std::vector<Token> prompt = {1, 400, 300};
  EXPECT_EQ(code_of([&] { decode_all(*s, prompt, 0); }), Errc::BackendFailure);
  EXPECT_TRUE(s->corrupted());
  EXPECT_EQ(code_of([&] { decode_all(*s, prompt, 0); }), Errc::SessionCorrupted);
  EXPECT_EQ(code_of([&] { s->clear_seq(0); }), Errc::SessionCorrupted);
  EXPECT_EQ(code_of([&] { s->begin_prompt(0, prompt); }), Errc::SessionCorrupted);
  EXPECT_EQ(code_of([&] { (void)s->logits(0); }), Errc::SessionCorrupted);
}

// A few hundred random operations against a model of which cell each
// position of each sequence holds: cells never leak, lengths always agree,
// and logits spot-checked against recomputation.
TEST(SessionRandomized, OperationsKeepCellAccounting) {
  auto model = stories();
  constexpr std::uint32_t kCtx = 96, kSeqs = 6;
  // F32 cache: the check below is recomputation exactness (1e-5); with F16 a last-bit
  // difference of a cached element can flip its rounding (2^-11 relative).
  auto s = model->session({kCtx, 8, kSeqs, CacheType::F32});
  std::mt19937 rng(2024);
  std::vector<std::vector<std::pair<Token, int>>> hist(kSeqs);  // (token, instance id) per pos
  int next_instance = 0;
  auto used = [&] {
    std::set<int> ids;
    for (auto& h : hist)
      for (auto& [t, id] : h) ids.insert(id);
    return ids.size();
  };
  auto tokens_of = [&](std::uint32_t q) {
    std::vector<Token> t;
    for (auto& [tok, id] : hist[q]) t.push_back(tok);
    return t;
  };
  std::uniform_int_distribution<Token> tok(3, 511);
  int checks = 0;
  for (int op = 0; op < 400; ++op) {
    const std::uint32_t q = rng() % kSeqs;
    switch (rng() % 5) {
      case 0:
      case 1: {  // decode 1..6 tokens on one or two sequences
        std::vector<Decode> b;
        std::vector<std::uint32_t> seqs = {q, static_cast<std::uint32_t>(rng() % kSeqs)};
        if (seqs[0] == seqs[1]) seqs.pop_back();
        for (std::uint32_t sq : seqs) {
          const int n = 1 + static_cast<int>(rng() % 6);
          for (int i = 0; i < n; ++i)
            b.push_back({tok(rng), static_cast<std::int32_t>(hist[sq].size()) + i, sq, i == n - 1});
        }
        if (b.size() > s->free_cells()) {
          EXPECT_THROW(s->decode(b), Error);
          break;
        }
        s->decode(b);
        for (const Decode& d : b) hist[d.seq].push_back({d.token, next_instance++});
        break;
      }
      case 2: {
        const std::uint32_t dst = rng() % kSeqs;
        s->copy_seq(q, dst);
        if (dst != q) hist[dst] = hist[q];
        break;
      }
      case 3:
        s->clear_seq(q);
        hist[q].clear();
        break;
      case 4: {  // re-prompt with a random prefix of the history plus new tokens
        std::vector<Token> p = tokens_of(q);
        p.resize(rng() % (p.size() + 1));
        // All of a strict prefix of the history is reused, less the last token.
        const std::size_t keep_expected = p.empty() ? 0 : p.size() - 1;
        const int extra = static_cast<int>(rng() % 3);
        for (int i = 0; i < extra; ++i) p.push_back(tok(rng));
        const std::size_t n = s->begin_prompt(q, p);
        if (extra == 0) {
          EXPECT_EQ(n, keep_expected);
        }
        EXPECT_LE(n, p.empty() ? 0 : p.size() - 1);
        hist[q].resize(n);
        break;
      }
    }
    for (std::uint32_t sq = 0; sq < kSeqs; ++sq)
      ASSERT_EQ(s->seq_length(sq), hist[sq].size()) << op;
    ASSERT_EQ(s->free_cells(), kCtx - used()) << "op " << op;
    if (op % 40 == 39 && !hist[q].empty() && s->free_cells() > 0) {
      // The next token's logits of q must match a from-scratch computation.
      const Token t = tok(rng);
      std::vector<Decode> b = {{t, static_cast<std::int32_t>(hist[q].size()), q, true}};
      s->decode(b);
      std::vector<Token> all = tokens_of(q);
      all.push_back(t);
      hist[q].push_back({t, next_instance++});
      auto fresh = model->session({kCtx, 512, 1, CacheType::F32});
      auto ref = decode_all(*fresh, all, 0);
      EXPECT_LT(rel_diff(s->logits(0), ref.back()), 1e-5) << "op " << op;
      ++checks;
    }
  }
  EXPECT_GT(checks, 3);
}

}  // namespace
}  // namespace seam
