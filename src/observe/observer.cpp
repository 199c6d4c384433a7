// The Observer: tokens in, scores and triggers out, interjections on a fork.
//
// Sequence 0 holds the observed stream (BOS first when the model adds one),
// sequence 1 the interjection in flight. Every decode call carries the next
// chunk of the stream and, beside it, the interjection's next Decodes, so an
// interjection never pauses observation.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <deque>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "observe/dedup.h"
#include "observe/score.h"
#include "observe/stats.h"
#include "observe/stream_tokenizer.h"
#include "seam/chat.h"
#include "seam/error.h"
#include "seam/generate.h"
#include "seam/observe.h"

namespace seam {

std::string_view default_interject_prompt() {
  return "In one short sentence, what is surprising about the text so far?";
}

namespace {

using Clock = std::chrono::steady_clock;
constexpr std::uint32_t kMain = 0, kScratch = 1;
constexpr std::size_t kRecentInterjections = 8;
constexpr std::size_t kMaxWaiting = 4;  // triggers queued behind the running interjection

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

void check_options(const ObserveOptions& o) {
  auto bad = [](const std::string& m) { throw Error(Errc::InvalidArgument, m); };
  if (o.n_batch == 0) bad("n_batch must be at least 1");
  if (o.span == 0) bad("span (--span) must be at least 1");
  if (o.ewma_window == 0) bad("the EWMA window must be at least 1");
  if (!std::isfinite(o.z) || !std::isfinite(o.z_rearm))
    bad("z and z_rearm (--z, --z-rearm) must be finite");
  if (o.z_rearm > o.z)
    bad("z_rearm (--z-rearm) " + std::to_string(o.z_rearm) + " must not exceed z (--z) " +
        std::to_string(o.z) + ": the gate would never re-arm");
  if (!(o.dedup >= 0 && o.dedup <= 1)) bad("dedup (--dedup) must be in [0, 1] (1 = off)");
  if (o.interject && o.interject_tokens < 1)
    bad("interject_tokens (--interject-tokens) must be at least 1 (or turn interject off)");
  validate(o.sampler);
}

// The interjection prompt as tokens: a user turn of the chat template, or plain text.
std::vector<Token> ask_tokens(const Model& m, const std::string& prompt) {
  if (const auto& tmpl = m.info().chat_template) {
    try {
      nlohmann::ordered_json ctx;
      ctx["messages"] = nlohmann::ordered_json::array({{{"role", "user"}, {"content", prompt}}});
      ctx["add_generation_prompt"] = true;
      ctx["bos_token"] = "";  // the observed text already began the context
      ctx["eos_token"] = m.eos() ? m.detok(*m.eos(), Detok::Text) : "";
      const std::string text = render_chat_template(*tmpl, ctx);
      std::vector<Token> t = m.tokenize("\n" + text, false, true);
      if (!t.empty()) return t;
    } catch (const Error&) {
      // A template that cannot render a lone user turn: fall back to plain text.
    }
  }
  return m.tokenize("\n\n" + prompt + "\n", false, false);
}

}  // namespace

struct Observer::Impl {
  std::shared_ptr<const Model> model;
  std::shared_ptr<const Model> cmp;  // the compare model, or null
  ObserveOptions o;
  observe::StreamTokenizer tok;
  std::unique_ptr<Session> session;
  std::unique_ptr<Session> cmp_session;  // the compare model on the same tokens
  std::vector<float> cmp_last_row;
  std::optional<Token> bos;  // set when the model's prompts start with BOS
  std::uint32_t n_ctx = 0, main_limit = 0, window = 0;
  std::uint32_t reserve = 0;  // KV cells for the interjection beside the stream
  std::vector<Token> ask;

  std::vector<Token> main_tokens;          // sequence 0 from position 0
  std::uint64_t main_first_i = 0;          // stream index of the first stream token in main_tokens
  std::deque<observe::StreamToken> queue;  // committed, not yet decoded
  std::vector<float> last_row;             // logits predicting the next stream token
  bool have_row = false;
  std::uint64_t next_i = 0;

  observe::Welford welford;
  observe::Ewma ewma;
  observe::SpanMean span;
  observe::TriggerGate gate;
  double sum_bits = 0;
  std::uint64_t scored = 0, scored_bytes = 0;
  double word_bits = 0;
  bool in_word = false, word_scored = false, prev_space = true;
  double sum_word_bits = 0;
  std::uint64_t words = 0;
  std::uint64_t triggers = 0, interjections = 0, rolls = 0;
  bool can_shift = true;                       // false once a session refused drop_positions
  observe::Welford kl_stats;                   // KL per scored token (bits)
  double sum_xent = 0;                         // cross-entropy over scored tokens (bits)
  std::deque<std::pair<double, double>> bino;  // (surprisal, xent) of the last compare_window
  double bino_s = 0, bino_x = 0;

  std::optional<Generation> gen;
  std::uint64_t gen_i = 0;
  std::deque<std::uint64_t> waiting;  // triggers whose interjection has not started
  std::deque<std::set<std::string>> recent;

  std::vector<ObserveEvent> events;
  bool finished = false, started = false;
  Clock::time_point t_start, t_end;
  std::optional<SummaryEvent> final_summary;

  Impl(std::shared_ptr<const Model> m, ObserveOptions opts, std::shared_ptr<const Model> c)
      : model(std::move(m)),
        cmp(std::move(c)),
        o((check_options(opts), std::move(opts))),
        tok(*model),
        ewma(o.ewma_window),
        span(o.span),
        gate({o.z, o.z_rearm, o.warmup, o.cooldown}) {
    const Model& mm = *model;
    const std::vector<Token> probe = mm.tokenize("", true, false);
    if (mm.bos() && !probe.empty() && probe.front() == *mm.bos()) bos = mm.bos();
    if (o.top_k > mm.info().n_vocab)
      throw Error(Errc::InvalidArgument, "top_k (--top-k) " + std::to_string(o.top_k) +
                                             " exceeds the vocabulary of " +
                                             std::to_string(mm.info().n_vocab) + " tokens");
    // The interjection's room (its prompt and answer) comes on top of the
    // observed context, and the default context leaves it whether or not
    // interjections are on: rolls, and so every score, never depend on them.
    ask = ask_tokens(mm, o.interject_prompt.empty() ? std::string(default_interject_prompt())
                                                    : o.interject_prompt);
    reserve = static_cast<std::uint32_t>(ask.size()) +
              static_cast<std::uint32_t>(std::max(o.interject_tokens, 1)) + 1;
    n_ctx = o.n_ctx;
    if (n_ctx == 0) {
      const std::uint32_t train = mm.info().n_ctx_train;
      n_ctx = train ? std::min<std::uint32_t>(4096, train) : 4096;
      n_ctx = n_ctx > reserve + 64 ? n_ctx - reserve : n_ctx / 2;
    }
    if (n_ctx < 8)
      throw Error(Errc::InvalidArgument, "the context of " + std::to_string(n_ctx) +
                                             " tokens is too small; use n_ctx (-c) 8 or more");
    main_limit = n_ctx;
    window = o.window ? o.window : main_limit / 2;
    if (window + (bos ? 1u : 0u) >= main_limit)
      throw Error(Errc::InvalidArgument,
                  "window (--window) " + std::to_string(window) + " must be smaller than the " +
                      std::to_string(main_limit - (bos ? 1 : 0)) + " text tokens the context of " +
                      std::to_string(main_limit) + " holds" + (bos ? " after BOS" : ""));
    if (window == 0) window = 1;
    // KV cells: the stream's context, and for an interjection its own room
    // plus the old context it may still share after a roll.
    session = mm.session({o.interject ? 2 * n_ctx + reserve : n_ctx, o.n_batch, 2, o.cache_type});
    if (cmp) {
      // Same tokens, same ids: the vocabularies must agree token for token.
      const Model& cm = *cmp;
      bool same = cm.info().n_vocab == mm.info().n_vocab && cm.bos() == mm.bos();
      for (std::uint32_t t = 0; same && t < mm.info().n_vocab; ++t)
        same = cm.detok(static_cast<Token>(t), Detok::Text) ==
               mm.detok(static_cast<Token>(t), Detok::Text);
      if (!same)
        throw Error(Errc::InvalidArgument,
                    "the compare model " + cm.info().name + " has another vocabulary than " +
                        mm.info().name + ": --compare needs two models that share a tokenizer");
      if (o.compare_window == 0)
        throw Error(Errc::InvalidArgument, "compare_window must be at least 1");
      cmp_session = cm.session({n_ctx, o.n_batch, 1, o.cache_type});
    }
  }

  void log(const std::string& line) {
    if (o.debug_log) o.debug_log(line);
  }

  void start_clock() {
    if (!started) {
      started = true;
      t_start = Clock::now();
    }
  }

  // ------------------------------------------------------------ scoring

  void observe_token(const observe::StreamToken& t, std::span<const float> row,
                     std::span<const float> cmp_row, bool predicted) {
    TokenEvent e;
    e.i = next_i++;
    e.id = t.id;
    e.piece = t.bytes;
    e.offset = t.offset;
    e.predicted = predicted;
    const bool space_start = !t.bytes.empty() && is_space(t.bytes.front());
    const bool all_space =
        !t.bytes.empty() && std::all_of(t.bytes.begin(), t.bytes.end(), is_space);
    e.word_start = !all_space && (space_start || prev_space || !in_word);
    if (predicted) {
      observe::RowScore s = observe::score_row(row, t.id, o.top_k);
      e.surprisal_bits = s.surprisal_bits;
      e.entropy_bits = s.entropy_bits;
      e.rank = s.rank;
      for (auto& [id, p] : s.top) e.top.push_back({id, model->detok(id, Detok::Text), p});
      const bool w = o.baseline == Baseline::Welford;
      const std::uint64_t before = welford.count();
      e.mean = w ? welford.mean() : ewma.mean();
      e.std = std::sqrt(w ? welford.variance() : ewma.variance());
      span.add(e.surprisal_bits);
      const double n_span = static_cast<double>(std::min<std::uint64_t>(before + 1, o.span));
      e.z = (before >= 2 && e.std > 0) ? (span.mean() - e.mean) * std::sqrt(n_span) / e.std : 0.0;
      if (cmp) {
        const observe::RowCompare c = observe::compare_rows(row, cmp_row);
        e.kl_bits = c.kl_bits;
        e.xent_bits = c.xent_bits;
        kl_stats.add(c.kl_bits);
        sum_xent += c.xent_bits;
        bino.emplace_back(e.surprisal_bits, c.xent_bits);
        bino_s += e.surprisal_bits;
        bino_x += c.xent_bits;
        if (bino.size() > o.compare_window) {
          bino_s -= bino.front().first;
          bino_x -= bino.front().second;
          bino.pop_front();
        }
        e.binoculars = bino_x > 0 ? bino_s / bino_x : std::numeric_limits<double>::quiet_NaN();
      } else {
        e.kl_bits = e.xent_bits = e.binoculars = std::numeric_limits<double>::quiet_NaN();
      }
      welford.add(e.surprisal_bits);
      ewma.add(e.surprisal_bits);
      sum_bits += e.surprisal_bits;
      ++scored;
      scored_bytes += t.bytes.size();
      std::string why;
      const bool fire = gate.decide(e.i, before, e.z, o.debug_log ? &why : nullptr);
      if (o.debug_log && e.z > o.z) log(why);
      account_word(e, all_space);
      events.emplace_back(std::move(e));
      if (fire) on_trigger(next_i - 1, std::get<TokenEvent>(events.back()).z);
      return;
    }
    e.surprisal_bits = e.entropy_bits = e.z = std::numeric_limits<double>::quiet_NaN();
    e.kl_bits = e.xent_bits = e.binoculars = std::numeric_limits<double>::quiet_NaN();
    e.mean = e.std = std::numeric_limits<double>::quiet_NaN();
    account_word(e, all_space);
    events.emplace_back(std::move(e));
  }

  // Word surprisal: the sum over a word's tokens, the leading space's token included.
  void account_word(const TokenEvent& e, bool all_space) {
    if (all_space || e.word_start) close_word();
    if (!all_space) {
      in_word = true;
      if (e.predicted) {
        word_bits += e.surprisal_bits;
        word_scored = true;
      }
    }
    prev_space = !e.piece.empty() && is_space(e.piece.back());
  }
  void close_word() {
    if (in_word && word_scored) {
      ++words;
      sum_word_bits += word_bits;
    }
    in_word = word_scored = false;
    word_bits = 0;
  }

  // ------------------------------------------------------- interjections

  void on_trigger(std::uint64_t i, double z) {
    ++triggers;
    events.emplace_back(TriggerEvent{i, z, o.span});
    if (!o.interject) return;
    if (waiting.size() >= kMaxWaiting) {
      log("trigger i=" + std::to_string(i) + ": " + std::to_string(kMaxWaiting) +
          " interjections already wait, none queued");
      return;
    }
    waiting.push_back(i);
    start_interjection();
  }

  // Starts the oldest waiting interjection when none is in flight. Fork at
  // token i: the scratch sequence shares the stream's cells up to i
  // (begin_prompt drops the ones after it) and asks its question there.
  void start_interjection() {
    if (gen || waiting.empty()) return;
    const std::uint64_t i = waiting.front();
    waiting.pop_front();
    const std::size_t upto =
        static_cast<std::size_t>(i - main_first_i) + (bos ? 1u : 0u) + 1;  // tokens through i
    std::vector<Token> prompt(main_tokens.begin(),
                              main_tokens.begin() + static_cast<std::ptrdiff_t>(upto));
    prompt.insert(prompt.end(), ask.begin(), ask.end());
    GenerateConfig gc;
    gc.max_tokens = o.interject_tokens;
    gc.sampler = o.sampler;
    gc.sampler.seed = o.seed + i;
    gc.seq = kScratch;
    session->copy_seq(kMain, kScratch);
    gen.emplace(*model, prompt, gc);
    gen->begin(session->begin_prompt(kScratch, gen->prompt()));
    gen_i = i;
  }

  void end_interjection() {
    const GenerateResult& r = gen->result();
    InterjectionEvent e;
    e.i = gen_i;
    e.text = r.text;
    e.tokens = static_cast<std::uint32_t>(r.tokens.size());
    std::set<std::string> grams = observe::word_bigrams(e.text);
    for (const auto& prev : recent)
      if (observe::overlap(grams, prev) > o.dedup) e.duplicate = true;
    if (!e.duplicate) {
      ++interjections;
      recent.push_back(std::move(grams));
      if (recent.size() > kRecentInterjections) recent.pop_front();
    }
    events.emplace_back(std::move(e));
    gen.reset();
    session->clear_seq(kScratch);
    start_interjection();
  }

  // --------------------------------------------------------------- decode

  // Drops the oldest tokens, keeping BOS and the last `window`: shifted in
  // place, or sequence 0 rebuilt from them.
  void roll() {
    // A running interjection goes on: its sequence keeps the cells it shares
    // with the old context (the session has room for both, copies included).
    const std::size_t have = main_tokens.size() - (bos ? 1u : 0u);
    const std::size_t keep = std::min<std::size_t>(window, have);
    std::vector<Token> kept;
    if (bos) kept.push_back(*bos);
    kept.insert(kept.end(), main_tokens.end() - static_cast<std::ptrdiff_t>(keep),
                main_tokens.end());
    const auto t0 = Clock::now();
    const bool shifted = o.roll == RollMode::Shift && can_shift && shift(have - keep);
    if (!shifted) prefill_kept(kept);
    main_first_i += have - keep;
    main_tokens = std::move(kept);
    // A waiting interjection whose trigger was dropped has nothing to fork from.
    const std::size_t before = waiting.size();
    std::erase_if(waiting, [&](std::uint64_t i) { return i < main_first_i; });
    if (waiting.size() != before)
      log("roll: " + std::to_string(before - waiting.size()) +
          " waiting interjections dropped with their tokens");
    ++rolls;
    log("roll dropped=" + std::to_string(have - keep) + " kept=" + std::to_string(keep) +
        (shifted ? " shift_ms=" : " prefill_ms=") +
        std::to_string(std::chrono::duration<double, std::milli>(Clock::now() - t0).count()));
    events.emplace_back(RollEvent{next_i, have - keep, keep});
  }

  // Drops `n` stream tokens after BOS from both sessions without decoding;
  // false (and a prefill follows) when a session cannot move its keys. The
  // last row stays: it predicts the next token from the whole old context.
  bool shift(std::size_t n) {
    const std::int32_t p0 = bos ? 1 : 0, p1 = p0 + static_cast<std::int32_t>(n);
    try {
      session->drop_positions(kMain, p0, p1);
      if (cmp_session) cmp_session->drop_positions(kMain, p0, p1);
      return true;
    } catch (const Error& e) {
      // Unsupported stays so; a shared cell without room to copy it may not.
      if (e.code() == Errc::Unsupported) can_shift = false;
      if (e.code() != Errc::Unsupported && e.code() != Errc::ContextFull) throw;
      log(std::string("roll: no shift, prefill instead: ") + e.what());
      return false;
    }
  }

  void prefill_kept(const std::vector<Token>& kept) {
    session->clear_seq(kMain);
    std::vector<Decode> batch;
    for (std::size_t p = 0; p < kept.size(); ++p)
      batch.push_back({kept[p], static_cast<std::int32_t>(p), kMain, p + 1 == kept.size()});
    session->decode(batch);
    const auto row = session->logits(batch.size() - 1);
    last_row.assign(row.begin(), row.end());
    have_row = true;
    if (cmp_session) {
      cmp_session->clear_seq(kMain);
      cmp_session->decode(batch);
      const auto crow = cmp_session->logits(batch.size() - 1);
      cmp_last_row.assign(crow.begin(), crow.end());
    }
  }

  // One decode call: the next chunk of the stream and the interjection's next Decodes.
  // Returns false when there was nothing to do.
  bool decode_once() {
    if (queue.empty() && !gen) return false;
    if (!queue.empty() && main_tokens.size() >= main_limit) roll();
    std::vector<Decode> batch;
    std::size_t n_main = 0;
    if (!queue.empty()) {
      if (main_tokens.empty() && bos) {
        batch.push_back({*bos, 0, kMain, true});
        main_tokens.push_back(*bos);
      }
      // The interjection's share of the call: a quarter while its prompt is
      // prefilled, one token while it generates.
      const std::size_t gen_share = !gen ? 0
                                    : gen->phase() == Generation::Phase::Prefill
                                        ? std::max<std::size_t>(1, o.n_batch / 4)
                                        : 1;
      const std::size_t room = main_limit - main_tokens.size();
      const std::size_t cap =
          o.n_batch > gen_share + batch.size() ? o.n_batch - gen_share - batch.size() : 1;
      n_main = std::min({queue.size(), room, cap});
      for (std::size_t k = 0; k < n_main; ++k) {
        batch.push_back({queue[k].id, static_cast<std::int32_t>(main_tokens.size()), kMain, true});
        main_tokens.push_back(queue[k].id);
      }
    }
    const std::size_t first_gen = batch.size();
    if (gen) {
      if (gen->phase() == Generation::Phase::Decoding && session->free_cells() <= batch.size()) {
        gen->finish(FinishReason::Length);
      } else {
        const std::size_t budget =
            o.n_batch > batch.size() ? o.n_batch - batch.size() : std::size_t{1};
        gen->next_decodes(batch, budget);
      }
    }
    if (gen && batch.size() > session->free_cells()) {
      // No room for both (cannot happen with the cells reserved; kept as a
      // guard): the interjection ends as it stands, the stream goes on.
      batch.resize(first_gen);
      gen->finish(FinishReason::Length);
      end_interjection();
    }
    if (batch.empty()) {
      if (gen && gen->done()) end_interjection();
      return true;
    }
    const auto t0 = Clock::now();
    session->decode(batch);
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    if (o.debug_log) {
      char buf[200];
      std::snprintf(buf, sizeof buf,
                    "decode tokens=%zu stream=%zu scratch=%zu stream_pos=%d ms=%.3f", batch.size(),
                    first_gen, batch.size() - first_gen, first_gen ? batch[first_gen - 1].pos : -1,
                    ms);
      log(buf);
    }
    // The compare model reads the same stream rows (its own session, no interjections).
    if (cmp_session && first_gen > 0) cmp_session->decode(std::span(batch).first(first_gen));
    // The interjection first: scoring the stream may start the next one.
    if (gen) {
      if (batch.size() > first_gen && batch.back().logits)
        gen->on_logits(session->logits(batch.size() - 1));
      if (gen->done()) end_interjection();
    }
    const std::size_t first_main = first_gen - n_main;
    for (std::size_t k = 0; k < n_main; ++k) {
      const observe::StreamToken t = std::move(queue.front());
      queue.pop_front();
      auto cmp_at = [&](std::size_t r) {
        return cmp_session ? cmp_session->logits(r) : std::span<const float>();
      };
      if (k == 0) {
        if (first_main == 1) {  // BOS went in this call: its row predicts token 0
          observe_token(t, session->logits(0), cmp_at(0), true);
        } else {
          observe_token(t, last_row, cmp_last_row, have_row);
        }
      } else {
        observe_token(t, session->logits(first_main + k - 1), cmp_at(first_main + k - 1), true);
      }
    }
    if (n_main) {
      const auto row = session->logits(first_main + n_main - 1);
      last_row.assign(row.begin(), row.end());
      have_row = true;
      if (cmp_session) {
        const auto crow = cmp_session->logits(first_main + n_main - 1);
        cmp_last_row.assign(crow.begin(), crow.end());
      }
    }
    return true;
  }

  void enqueue(std::vector<observe::StreamToken> toks) {
    for (auto& t : toks) queue.push_back(std::move(t));
    while (!queue.empty()) decode_once();
  }

  SummaryEvent summary() const {
    SummaryEvent s;
    s.tokens = next_i;
    s.scored = scored;
    s.bytes = tok.bytes_in();
    s.mean_surprisal_bits = scored ? sum_bits / static_cast<double>(scored) : 0.0;
    s.perplexity = std::exp2(s.mean_surprisal_bits);
    s.bits_per_byte = scored_bytes ? sum_bits / static_cast<double>(scored_bytes) : 0.0;
    s.words = words;
    s.mean_word_surprisal_bits = words ? sum_word_bits / static_cast<double>(words) : 0.0;
    s.triggers = triggers;
    s.interjections = interjections;
    s.rolls = rolls;
    if (cmp) {
      s.mean_kl_bits = kl_stats.mean();
      s.mean_kl_stderr_bits =
          kl_stats.count() > 1
              ? std::sqrt(kl_stats.variance() / static_cast<double>(kl_stats.count()))
              : 0.0;
      s.binoculars = sum_xent > 0 ? sum_bits / sum_xent : std::numeric_limits<double>::quiet_NaN();
    } else {
      s.mean_kl_bits = s.mean_kl_stderr_bits = s.binoculars =
          std::numeric_limits<double>::quiet_NaN();
    }
    if (started) {
      const auto end = finished ? t_end : Clock::now();
      const double sec = std::chrono::duration<double>(end - t_start).count();
      if (sec > 0) s.tokens_per_s = static_cast<double>(next_i) / sec;
    }
    return s;
  }
};

Observer::Observer(std::shared_ptr<const Model> model, ObserveOptions options,
                   std::shared_ptr<const Model> compare) {
  if (!model) throw Error(Errc::InvalidArgument, "Observer needs a model");
  impl_ = std::make_unique<Impl>(std::move(model), std::move(options), std::move(compare));
}

Observer::~Observer() = default;

void Observer::feed(std::string_view text) {
  if (impl_->finished) throw Error(Errc::InvalidArgument, "feed() after finish()");
  impl_->start_clock();
  impl_->enqueue(impl_->tok.feed(text));
}

bool Observer::step() {
  if (impl_->finished || !impl_->gen) return false;
  return impl_->decode_once();
}

bool Observer::busy() const { return impl_->gen.has_value(); }

void Observer::finish() {
  Impl& m = *impl_;
  if (m.finished) return;
  m.start_clock();
  m.enqueue(m.tok.finish());
  while (m.gen) m.decode_once();
  m.close_word();
  m.t_end = Clock::now();
  m.finished = true;
  m.events.emplace_back(m.summary());
}

std::vector<ObserveEvent> Observer::take_events() {
  std::vector<ObserveEvent> out;
  out.swap(impl_->events);
  return out;
}

SummaryEvent Observer::summary() const { return impl_->summary(); }
const ObserveOptions& Observer::options() const { return impl_->o; }
std::uint32_t Observer::n_ctx() const { return impl_->n_ctx; }

}  // namespace seam
