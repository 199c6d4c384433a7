// The Observer on real checkpoints: scores equal what the logits imply, the
// perplexity equals the numpy reference's, results do not depend on how the
// text is split nor on interjections, rolls keep observing.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <numbers>
#include <string>
#include <variant>
#include <vector>

#include "compute/logit_scan.h"
#include "observe/dedup.h"
#include "observe/stats.h"
#include "runtime/python_tools.h"
#include "runtime/test_model.h"
#include "seam/error.h"
#include "seam/observe.h"

namespace seam {
namespace {

using namespace seam::testing;

const char* kStory =
    "Once upon a time, there was a little girl named Lily. She loved to play outside in the "
    "park. One day, she saw a big red ball under a tree. She wanted to play with it.\n"
    "Lily ran to the ball and kicked it. The ball went very high! Lily laughed and clapped.\n"
    "Then a small dog came and took the ball. Lily was sad. The quantum chromodynamics of the "
    "Byzantine tax ledger exploded into seventeen purple theorems. Lily said, \"Give me my "
    "ball, please!\" The dog dropped the ball and wagged its tail. They played together all "
    "day. The end.\n";

struct Observed {
  std::vector<TokenEvent> tokens;
  std::vector<TriggerEvent> triggers;
  std::vector<InterjectionEvent> interjections;
  std::vector<RollEvent> rolls;
  std::vector<SummaryEvent> summaries;
};

void collect(Observer& obs, Observed& r) {
  for (ObserveEvent& e : obs.take_events()) {
    if (auto* t = std::get_if<TokenEvent>(&e)) r.tokens.push_back(std::move(*t));
    if (auto* t = std::get_if<TriggerEvent>(&e)) r.triggers.push_back(*t);
    if (auto* t = std::get_if<InterjectionEvent>(&e)) r.interjections.push_back(std::move(*t));
    if (auto* t = std::get_if<RollEvent>(&e)) r.rolls.push_back(*t);
    if (auto* t = std::get_if<SummaryEvent>(&e)) r.summaries.push_back(*t);
  }
}

// Feeds `text` in pieces of `chunk` bytes ("line": one line at a time).
Observed observe(std::shared_ptr<const Model> m, const std::string& text, ObserveOptions o,
                 std::size_t chunk = 4096, bool by_line = false) {
  Observer obs(std::move(m), std::move(o));
  Observed r;
  std::size_t p = 0;
  while (p < text.size()) {
    std::size_t n = chunk;
    if (by_line) {
      const std::size_t nl = text.find('\n', p);
      n = nl == std::string::npos ? text.size() - p : nl + 1 - p;
    }
    obs.feed(std::string_view(text).substr(p, n));
    collect(obs, r);
    p += n;
  }
  obs.finish();
  collect(obs, r);
  return r;
}

// The scores below are compared within float summation order (1e-4 bits and
// tighter), which an F16 cache's rounding exceeds: K and V stay F32.
ObserveOptions quiet() {
  ObserveOptions o;
  o.cache_type = CacheType::F32;
  o.interject = false;
  return o;
}

TEST(Observer, ScoresEqualWhatTheLogitsImply) {
  auto m = stories();
  ObserveOptions o = quiet();
  o.top_k = 8;
  const Observed r = observe(m, kStory, o);
  std::vector<Token> ids = m->tokenize(kStory, true, false);  // BOS first
  ASSERT_EQ(ids.front(), *m->bos());
  ASSERT_EQ(r.tokens.size() + 1, ids.size());
  auto s = m->session({512, 512, 1, CacheType::F32});
  const auto rows = decode_all(*s, ids, 0);
  double worst_s = 0, worst_h = 0;
  for (std::size_t k = 0; k < r.tokens.size(); ++k) {
    const TokenEvent& e = r.tokens[k];
    ASSERT_EQ(e.id, ids[k + 1]);
    ASSERT_TRUE(e.predicted);
    const std::vector<float>& row = rows[k];  // the row before token k predicts it
    long double mx = row[0];
    for (float l : row) mx = std::max<long double>(mx, l);
    long double z = 0, e1 = 0, e2 = 0;  // Z, sum e^d |d|, sum e^d d^2 (d = l - max)
    for (float l : row) {
      const long double d = static_cast<long double>(l) - mx;
      z += std::exp(d);
      e1 -= std::exp(d) * d;
      e2 += std::exp(d) * d * d;
    }
    const long double logz = std::log(z) + mx;
    long double h = 0;
    for (float l : row) {
      const long double lp = l - logz;
      h -= std::exp(lp) * lp;
    }
    const long double surprisal = (logz - row[static_cast<std::size_t>(e.id)]) / std::numbers::ln2;
    std::uint32_t rank = 1;
    for (std::size_t v = 0; v < row.size(); ++v) {
      const float lv = row[v], lt = row[static_cast<std::size_t>(e.id)];
      if (lv > lt || (lv == lt && static_cast<Token>(v) < e.id)) ++rank;
    }
    // The scan computes e^d in float (relative error eps = kExpRelErr, and
    // u |d| from rounding d, u = 2^-24) and sums in double. With E1 = E_p|d|
    // and E2 = E_p d^2: log Z is off by at most rho = eps + u E1 (surprisal),
    // and sum e^d d / Z by eps E1 + u E2 + E1 rho (entropy = log Z - that).
    // 1% and 1e-12 bits cover the second-order terms and the double sums.
    const double eps = logit::kExpRelErr, u = 1.0 / (1 << 24);
    const double m1 = static_cast<double>(e1 / z), m2 = static_cast<double>(e2 / z);
    const double rho = eps + u * m1;
    const double s_bound = 1.01 * rho / std::numbers::ln2 + 1e-12;
    const double h_bound = 1.01 * (rho + eps * m1 + u * m2 + m1 * rho) / std::numbers::ln2 + 1e-12;
    EXPECT_NEAR(e.surprisal_bits, static_cast<double>(surprisal), s_bound) << k;
    EXPECT_NEAR(e.entropy_bits, static_cast<double>(h / std::numbers::ln2), h_bound) << k;
    worst_s = std::max(worst_s, std::fabs(e.surprisal_bits - static_cast<double>(surprisal)));
    worst_h =
        std::max(worst_h, std::fabs(e.entropy_bits - static_cast<double>(h / std::numbers::ln2)));
    EXPECT_EQ(e.rank, rank) << k;
    ASSERT_EQ(e.top.size(), 8u);
    for (std::size_t j = 0; j < e.top.size(); ++j) {
      const float l = row[static_cast<std::size_t>(e.top[j].id)];
      // p = 2^-surprisal of the alternative: within its surprisal's bound, relatively.
      EXPECT_NEAR(e.top[j].p, std::exp(static_cast<double>(l - logz)),
                  2 * rho * e.top[j].p + 1e-15);
      // Exactly j tokens rank above the j-th alternative.
      std::size_t above = 0;
      for (std::size_t v = 0; v < row.size(); ++v)
        if (row[v] > l || (row[v] == l && static_cast<Token>(v) < e.top[j].id)) ++above;
      EXPECT_EQ(above, j);
    }
    if (e.rank == 1) {
      EXPECT_EQ(e.top[0].id, e.id);
    }
  }
  std::printf("worst differences: surprisal %.3g bits, entropy %.3g bits\n", worst_s, worst_h);
}

TEST(Observer, PerplexityEqualsTheNumpyReference) {
  const std::string text = kStory;
  auto m = stories();
  const Observed r = observe(m, text, quiet());
  ASSERT_EQ(r.summaries.size(), 1u);
  const std::vector<Token> ids = m->tokenize(text, true, false);
  const std::vector<float> ref = reference_logits(stories_path(), ids, "observe_ppl");
  const std::size_t nv = m->info().n_vocab;
  ASSERT_EQ(ref.size(), ids.size() * nv);
  double nll = 0;
  for (std::size_t k = 0; k + 1 < ids.size(); ++k) {
    const float* row = ref.data() + k * nv;
    double mx = row[0];
    for (std::size_t v = 0; v < nv; ++v) mx = std::max<double>(mx, row[v]);
    double z = 0;
    for (std::size_t v = 0; v < nv; ++v) z += std::exp(row[v] - mx);
    nll += std::log(z) + mx - row[ids[k + 1]];
  }
  const double ref_nll = nll / static_cast<double>(ids.size() - 1);
  const double our_nll = r.summaries[0].mean_surprisal_bits * std::numbers::ln2;
  std::printf("[ observe ] mean NLL %.8f nats (reference %.8f), perplexity %.6f\n", our_nll,
              ref_nll, r.summaries[0].perplexity);
  // stories260K is F32: logits agree with float64 numpy within ~1e-5 relative
  // of the logit range (|logits| < 20), so each NLL within ~4e-4 nats and the
  // mean within 1e-4 (the bound).
  EXPECT_NEAR(our_nll, ref_nll, 1e-4);
  EXPECT_NEAR(r.summaries[0].perplexity, std::exp(ref_nll), 1e-4 * std::exp(ref_nll));
  EXPECT_EQ(r.summaries[0].tokens, ids.size() - 1);
  EXPECT_EQ(r.summaries[0].scored, ids.size() - 1);
  EXPECT_EQ(r.summaries[0].bytes, text.size());
}

void expect_same_stream(const Observed& a, const Observed& b, double tol, const std::string& what) {
  ASSERT_EQ(a.tokens.size(), b.tokens.size()) << what;
  for (std::size_t k = 0; k < a.tokens.size(); ++k) {
    ASSERT_EQ(a.tokens[k].id, b.tokens[k].id) << what << " token " << k;
    EXPECT_EQ(a.tokens[k].offset, b.tokens[k].offset) << what << " token " << k;
    EXPECT_EQ(a.tokens[k].piece, b.tokens[k].piece) << what << " token " << k;
    EXPECT_NEAR(a.tokens[k].surprisal_bits, b.tokens[k].surprisal_bits, tol) << what << " " << k;
    EXPECT_NEAR(a.tokens[k].entropy_bits, b.tokens[k].entropy_bits, tol) << what << " " << k;
  }
}

TEST(Observer, ChunkInvariance) {
  std::string text;
  for (int i = 0; i < 3; ++i) text += kStory;
  auto m = stories();
  const Observed big = observe(m, text, quiet(), 4096);
  const Observed line = observe(m, text, quiet(), 0, true);
  const Observed byte = observe(m, text, quiet(), 1);
  const std::vector<Token> whole = m->tokenize(text, false, false);
  ASSERT_EQ(big.tokens.size(), whole.size());
  for (std::size_t k = 0; k < whole.size(); ++k) ASSERT_EQ(big.tokens[k].id, whole[k]);
  // Different chunkings run different matmul tile shapes: float32 sums in
  // another order move a logit by ~1e-6, a surprisal by far less than 1e-4 bits.
  expect_same_stream(big, line, 1e-4, "1 line vs 4 KiB");
  expect_same_stream(big, byte, 1e-4, "1 byte vs 4 KiB");
  std::string spelled;
  for (const auto& t : byte.tokens) spelled += t.piece;
  EXPECT_EQ(spelled, text);
}

TEST(Observer, StatisticsAndTriggersFollowTheSurprisals) {
  auto m = stories();
  ObserveOptions o = quiet();
  o.warmup = 16;
  o.cooldown = 8;
  o.z = 1.5;
  o.z_rearm = 0.5;
  for (Baseline b : {Baseline::Welford, Baseline::Ewma}) {
    for (std::uint32_t span : {1u, 3u}) {
      o.baseline = b;
      o.span = span;
      o.ewma_window = 16;
      const Observed r = observe(m, kStory, o);
      observe::Welford w;
      observe::Ewma e(16);
      observe::TriggerGate gate({o.z, o.z_rearm, o.warmup, o.cooldown});
      std::vector<double> hist;
      std::vector<std::uint64_t> expect;
      for (const TokenEvent& t : r.tokens) {
        const double mean = b == Baseline::Welford ? w.mean() : e.mean();
        const double sd = std::sqrt(b == Baseline::Welford ? w.variance() : e.variance());
        hist.push_back(t.surprisal_bits);
        const std::size_t n = std::min<std::size_t>(hist.size(), span);
        double sm = 0;
        for (std::size_t j = hist.size() - n; j < hist.size(); ++j) sm += hist[j];
        sm /= static_cast<double>(n);
        const double z = w.count() >= 2 ? (sm - mean) * std::sqrt(double(n)) / sd : 0.0;
        EXPECT_NEAR(t.z, z, 1e-9);
        EXPECT_NEAR(t.mean, mean, 1e-12);
        if (gate.decide(t.i, w.count(), z)) expect.push_back(t.i);
        w.add(t.surprisal_bits);
        e.add(t.surprisal_bits);
      }
      std::vector<std::uint64_t> got;
      for (const auto& t : r.triggers) got.push_back(t.i);
      EXPECT_EQ(got, expect);
      EXPECT_FALSE(got.empty()) << "z 1.5 over a story with a nonsense sentence must fire";
      EXPECT_EQ(r.summaries.at(0).triggers, got.size());
    }
  }
}

ObserveOptions chatty() {
  ObserveOptions o;
  o.cache_type = CacheType::F32;
  o.warmup = 8;
  o.cooldown = 12;
  o.z = 1.0;
  o.z_rearm = 0.0;
  o.interject_tokens = 12;
  o.seed = 7;
  return o;
}

TEST(Observer, ForkIsolation) {
  std::string text;
  for (int i = 0; i < 2; ++i) text += kStory;
  auto m = stories();
  ObserveOptions on = chatty(), off = chatty();
  off.interject = false;
  // Small chunks, so interjections run beside many stream chunks.
  const Observed a = observe(m, text, on, 40);
  const Observed b = observe(m, text, off, 40);
  ASSERT_GE(a.interjections.size(), 2u) << "the test needs interjections to run";
  // The interjection's rows share the stream's decode calls, so the engine's
  // matmul tiles (and their float32 summation order) differ: logits move by
  // ~1e-7 relative, surprisals by < 1e-6 bits (observed), bounded here as for
  // chunk invariance. Tokens, offsets and triggers are identical.
  expect_same_stream(a, b, 1e-4, "interjections on vs off");
  ASSERT_EQ(a.triggers.size(), b.triggers.size());
  for (std::size_t k = 0; k < a.triggers.size(); ++k) EXPECT_EQ(a.triggers[k].i, b.triggers[k].i);
  std::size_t said = 0;
  for (const auto& ij : a.interjections) {
    EXPECT_LE(ij.tokens, 12u);
    said += ij.tokens > 0 && !ij.text.empty();
  }
  EXPECT_GT(said, 0u);
}

TEST(Observer, InterjectionsSurviveRolls) {
  std::string text;
  for (int i = 0; i < 3; ++i) text += kStory;
  auto m = stories();
  ObserveOptions on = chatty(), off = chatty();
  on.n_ctx = off.n_ctx = 48;
  on.window = off.window = 16;
  on.sampler.temperature = 0;
  on.sampler.logit_bias = {{*m->eos(), -INFINITY}};  // full-length answers
  off.interject = false;
  const Observed a = observe(m, text, on, 4096);
  const Observed b = observe(m, text, off, 4096);
  ASSERT_GE(a.rolls.size(), 10u);
  ASSERT_GE(a.interjections.size(), 2u);
  // A 48-token context rolls every 32 tokens and a decode call carries up to
  // 32 stream tokens: an interjection of 12 tokens (12 calls) spans several rolls.
  std::size_t full = 0;
  for (const auto& ij : a.interjections) full += ij.tokens == 12u;
  EXPECT_GT(full, 0u);
  expect_same_stream(a, b, 1e-4, "with rolls, interjections on vs off");
  ASSERT_EQ(a.rolls.size(), b.rolls.size());
  for (std::size_t k = 0; k < a.rolls.size(); ++k) EXPECT_EQ(a.rolls[k].i, b.rolls[k].i);
}

TEST(Observer, DedupMarksNearDuplicates) {
  std::string text;
  for (int i = 0; i < 12; ++i)
    text += "The dog ran to the park. Purple theorems exploded in the ledger. ";
  auto m = stories();
  ObserveOptions o = chatty();
  o.dedup = 0.6;
  o.interject_tokens = 16;
  o.interject_prompt = "The dog";
  o.sampler.temperature = 0;  // greedy: the same passage, the same remark
  const Observed r = observe(m, text, o, 64);
  ASSERT_GE(r.interjections.size(), 3u);
  std::vector<std::set<std::string>> shown;
  std::size_t dups = 0;
  for (const auto& ij : r.interjections) {
    const auto g = observe::word_bigrams(ij.text);
    double worst = 0;
    const std::size_t from = shown.size() > 8 ? shown.size() - 8 : 0;
    for (std::size_t k = from; k < shown.size(); ++k)
      worst = std::max(worst, observe::overlap(g, shown[k]));
    EXPECT_EQ(ij.duplicate, worst > 0.6) << ij.text;
    if (ij.duplicate) {
      ++dups;
    } else {
      shown.push_back(g);
    }
  }
  std::printf("[ observe ] %zu interjections, %zu duplicates\n", r.interjections.size(), dups);
  EXPECT_EQ(r.summaries.at(0).interjections, r.interjections.size() - dups);
  EXPECT_GT(dups, 0u) << "a repetitive text gives repeated remarks";
}

TEST(Observer, RollsWhenTheContextFills) {
  std::string text;
  for (int i = 0; i < 4; ++i) text += kStory;
  auto m = stories();
  ObserveOptions o = quiet();
  o.n_ctx = 64;
  o.window = 24;
  o.roll = RollMode::Prefill;
  const Observed r = observe(m, text, o);
  const std::vector<Token> whole = m->tokenize(text, false, false);
  ASSERT_EQ(r.tokens.size(), whole.size());
  ASSERT_GE(r.rolls.size(), 5u);
  for (const RollEvent& e : r.rolls) EXPECT_EQ(e.kept, 24u);
  // The first token after each roll is predicted from BOS + the 24 kept tokens.
  auto s = m->session({64, 64, 1, CacheType::F32});
  for (const RollEvent& e : r.rolls) {
    std::vector<Token> ctx = {*m->bos()};
    ctx.insert(ctx.end(), whole.begin() + static_cast<std::ptrdiff_t>(e.i - 24),
               whole.begin() + static_cast<std::ptrdiff_t>(e.i));
    s->clear_seq(0);
    const auto rows = decode_all(*s, ctx, 0);
    const auto& row = rows.back();
    double mx = row[0];
    for (float l : row) mx = std::max<double>(mx, l);
    double z = 0;
    for (float l : row) z += std::exp(l - mx);
    const double bits = (std::log(z) + mx - row[whole[e.i]]) / std::numbers::ln2;
    EXPECT_NEAR(r.tokens[e.i].surprisal_bits, bits, 1e-4) << e.i;
  }
  EXPECT_EQ(r.summaries.at(0).rolls, r.rolls.size());
}

// Surprisal in bits of `target` under one logits row.
double surprisal_bits(std::span<const float> row, Token target) {
  double mx = row[0];
  for (float l : row) mx = std::max<double>(mx, l);
  double z = 0;
  for (float l : row) z += std::exp(l - mx);
  return (std::log(z) + mx - row[static_cast<std::size_t>(target)]) / std::numbers::ln2;
}

// The default roll moves the kept tokens' keys (Session::drop_positions) and
// decodes nothing again: the tokens after the first roll score as a session
// that holds BOS + the first 63 tokens, drops 39 of them and goes on.
TEST(Observer, RollShiftsWithoutPrefill) {
  std::string text;
  for (int i = 0; i < 4; ++i) text += kStory;
  auto m = stories();
  ObserveOptions o = quiet();
  o.n_ctx = 64;
  o.window = 24;
  std::string debug;
  o.debug_log = [&](const std::string& line) { debug += line + "\n"; };
  const Observed r = observe(m, text, o);
  const std::vector<Token> whole = m->tokenize(text, false, false);
  ASSERT_EQ(r.tokens.size(), whole.size());
  ASSERT_GE(r.rolls.size(), 5u);
  EXPECT_NE(debug.find("shift_ms="), std::string::npos);
  EXPECT_EQ(debug.find("prefill_ms="), std::string::npos) << "no roll decoded its tokens again";

  const RollEvent& e = r.rolls.at(0);
  ASSERT_EQ(e.i, 63u);  // BOS + 63 tokens fill the 64-token context
  ASSERT_EQ(e.kept, 24u);
  auto s = m->session({64, 64, 1, CacheType::F32});
  std::vector<Token> ctx = {*m->bos()};
  ctx.insert(ctx.end(), whole.begin(), whole.begin() + 63);
  const auto before = decode_all(*s, ctx, 0);
  // Token 63 is predicted by the row computed before the roll.
  EXPECT_NEAR(r.tokens[63].surprisal_bits, surprisal_bits(before.back(), whole[63]), 1e-4);
  s->drop_positions(0, 1, 1 + static_cast<std::int32_t>(e.dropped));
  const std::vector<Token> next(whole.begin() + 63, whole.begin() + 70);
  const auto after = decode_all(*s, next, 0, 25);
  for (std::size_t k = 0; k + 1 < next.size(); ++k)
    EXPECT_NEAR(r.tokens[64 + k].surprisal_bits, surprisal_bits(after[k], whole[64 + k]), 1e-4)
        << 64 + k;

  // Prefill rolls at the same tokens; the stream, offsets and roll events agree.
  o.roll = RollMode::Prefill;
  debug.clear();
  const Observed p = observe(m, text, o);
  EXPECT_NE(debug.find("prefill_ms="), std::string::npos);
  ASSERT_EQ(p.rolls.size(), r.rolls.size());
  for (std::size_t k = 0; k < r.rolls.size(); ++k) {
    EXPECT_EQ(p.rolls[k].i, r.rolls[k].i);
    EXPECT_EQ(p.rolls[k].dropped, r.rolls[k].dropped);
  }
  // Before the first roll both are the same computation.
  for (std::size_t k = 0; k < 63; ++k)
    EXPECT_NEAR(p.tokens[k].surprisal_bits, r.tokens[k].surprisal_bits, 1e-4) << k;
}

std::size_t rss_kib() {
  std::ifstream f("/proc/self/statm");
  std::size_t pages = 0, resident = 0;
  f >> pages >> resident;
  return resident * 4;  // 4 KiB pages
}

TEST(Observer, LongStreamRunsInFlatMemory) {
  auto m = stories();
  ObserveOptions o = quiet();
  o.n_ctx = 48;
  o.window = 16;
  o.top_k = 2;
  Observer obs(m, o);
  std::size_t tokens = 0, at_start = 0;
  const std::string chunk = kStory;
  // ~250 tokens per chunk; 7,500 tokens over ~240 rolls.
  for (int i = 0; i < 30; ++i) {
    obs.feed(chunk);
    for (auto& e : obs.take_events()) tokens += std::holds_alternative<TokenEvent>(e);
    if (i == 3) at_start = rss_kib();
  }
  obs.finish();
  obs.take_events();
  const std::size_t at_end = rss_kib();
  std::printf("[ observe ] %zu tokens, %llu rolls, RSS %zu KiB after 10%%, %zu KiB at the end\n",
              tokens, static_cast<unsigned long long>(obs.summary().rolls), at_start, at_end);
  EXPECT_GT(tokens, 7000u);
  EXPECT_GT(obs.summary().rolls, 200u);
#if defined(__SANITIZE_ADDRESS__)
  // AddressSanitizer holds freed memory in quarantine, so RSS grows with every
  // allocation; LeakSanitizer checks at exit that nothing is lost instead.
  GTEST_SKIP() << "RSS is not flat under AddressSanitizer (freed memory is quarantined)";
#endif
  // Nothing per token is kept: growth over 90% of the stream stays within
  // allocator noise (256 KiB), where keeping a 40-byte record per token would
  // add 260 KiB and the decoded tokens' KV (if not freed at each roll) far more.
  EXPECT_LT(at_end, at_start + 256);
}

TEST(Observer, RefusesBadOptions) {
  auto m = stories();
  ObserveOptions o;
  o.z_rearm = 5;
  o.z = 3;
  EXPECT_THROW({ Observer bad(m, o); }, Error);
  o = {};
  o.span = 0;
  EXPECT_THROW({ Observer bad(m, o); }, Error);
  o = {};
  o.n_ctx = 4;
  EXPECT_THROW({ Observer bad(m, o); }, Error);
  o = quiet();
  o.n_ctx = 64;
  o.window = 64;
  EXPECT_THROW({ Observer bad(m, o); }, Error);
  Observer ok(m, quiet());
  ok.finish();
  EXPECT_THROW(ok.feed("x"), Error);
}

TEST(Observer, EmptyInputGivesOnlyASummary) {
  Observer obs(stories(), quiet());
  obs.finish();
  const auto ev = obs.take_events();
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(std::get<SummaryEvent>(ev[0]).tokens, 0u);
}

}  // namespace
}  // namespace seam
