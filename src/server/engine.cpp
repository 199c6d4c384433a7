#include "server/engine.h"

#include <algorithm>

#include "seam/error.h"

namespace seam::server {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

std::size_t common_prefix(const std::vector<Token>& a, const std::vector<Token>& b) {
  const std::size_t n = std::min(a.size(), b.size());
  std::size_t i = 0;
  while (i < n && a[i] == b[i]) ++i;
  return i;
}

}  // namespace

Engine::Engine(std::shared_ptr<const Model> model, const EngineConfig& config, Metrics& metrics)
    : model_(std::move(model)), cfg_(config), metrics_(metrics) {
  if (cfg_.parallel < 1 || cfg_.parallel > 256)
    throw Error(Errc::InvalidArgument,
                "parallel (--parallel) must be in 1..256, got " + std::to_string(cfg_.parallel));
  if (cfg_.batch < cfg_.parallel)
    throw Error(Errc::InvalidArgument, "batch (--batch) " + std::to_string(cfg_.batch) +
                                           " must be at least parallel (--parallel) " +
                                           std::to_string(cfg_.parallel) +
                                           ": every running request puts one token into each step");
  n_ctx_ = cfg_.n_ctx ? cfg_.n_ctx : model_->info().n_ctx_train;
  session_ = open_session();
  slots_.resize(cfg_.parallel);
  metrics_.gauges(0, 0, 0, cfg_.parallel);
  thread_ = std::thread([this] { loop(); });
}

Engine::~Engine() {
  {
    std::lock_guard lock(m_);
    stopping_ = true;
    exit_ = true;
    if (!deadline_) deadline_ = Clock::now();
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

bool Engine::submit(const std::shared_ptr<Job>& job) {
  {
    std::lock_guard lock(m_);
    // Free slots take jobs at once; beyond them the queue holds cfg_.queue.
    if (stopping_ || waiting_.size() + busy_ >= std::size_t{cfg_.parallel} + cfg_.queue)
      return false;
    job->submitted = job->last_fed = Clock::now();
    waiting_.push_back(job);
  }
  cv_.notify_all();
  return true;
}

void Engine::drain(Clock::time_point deadline) {
  {
    std::lock_guard lock(m_);
    stopping_ = true;
    exit_ = true;
    deadline_ = deadline;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Engine::publish(Job& job, Piece piece) {
  if (piece.text.empty() && !piece.logprob) return;
  {
    std::lock_guard lock(job.m);
    job.pieces.push_back(std::move(piece));
  }
  job.cv.notify_all();
}

// A job that ends without ever running (cancelled or timed out in the queue).
static void complete_unrun(Job& job, FinishReason reason, Metrics& metrics) {
  {
    std::lock_guard lock(job.m);
    job.result.prompt_tokens = job.prompt.size();
    job.result.finish = reason;
    job.done = true;
  }
  metrics.finished(std::string(finish_reason_name(reason)));
  job.cv.notify_all();
}

void Engine::admit_waiting() {
  // Under m_: sweep the queue for jobs that no longer need a slot.
  const auto now = Clock::now();
  for (auto it = waiting_.begin(); it != waiting_.end();) {
    Job& j = **it;
    const bool timed_out =
        cfg_.timeout_s > 0 && seconds_between(j.submitted, now) >= cfg_.timeout_s;
    if (j.cancel.load() || timed_out) {
      complete_unrun(j, j.cancel.load() ? FinishReason::Cancelled : FinishReason::Timeout,
                     metrics_);
      it = waiting_.erase(it);
    } else {
      ++it;
    }
  }
  while (!waiting_.empty()) {
    // The free slot whose cache shares the longest prefix with the prompt,
    // provided that reuse is worth what it overwrites: the whole prompt is
    // cached there, or at least half of what the slot holds is kept.
    // Otherwise the free slot with the least cached (then least recently
    // used), so one conversation's cache is not overwritten to save the few
    // tokens of a chat template's header another conversation shares.
    std::shared_ptr<Job> job = waiting_.front();
    int best = -1;
    std::size_t best_len = 0;
    for (std::size_t s = 0; s < slots_.size(); ++s) {
      if (slots_[s].job) continue;
      const std::size_t len = common_prefix(slots_[s].cached, job->prompt);
      if (len == 0 || (len < job->prompt.size() && 2 * len < slots_[s].cached.size())) continue;
      if (best < 0 || len > best_len ||
          (len == best_len && slots_[s].last_used < slots_[best].last_used)) {
        best = static_cast<int>(s);
        best_len = len;
      }
    }
    for (std::size_t s = 0; best < 0 && s < slots_.size(); ++s) {
      if (slots_[s].job) continue;
      int pick = static_cast<int>(s);
      for (std::size_t t = s + 1; t < slots_.size(); ++t) {
        if (slots_[t].job) continue;
        const Slot &a = slots_[t], &b = slots_[static_cast<std::size_t>(pick)];
        if (a.cached.size() < b.cached.size() ||
            (a.cached.size() == b.cached.size() && a.last_used < b.last_used))
          pick = static_cast<int>(t);
      }
      best = pick;
    }
    if (best < 0) return;
    waiting_.pop_front();
    Slot& slot = slots_[static_cast<std::size_t>(best)];
    job->slot = static_cast<std::uint32_t>(best);
    job->config.seq = job->slot;
    job->config.cancel = &job->cancel;
    if (cfg_.timeout_s > 0)
      job->config.timeout_s = std::max(1e-3, cfg_.timeout_s - seconds_between(job->submitted, now));
    try {
      job->gen = std::make_unique<Generation>(*model_, job->prompt, job->config);
      job->cached = session_->begin_prompt(job->slot, job->gen->prompt());
    } catch (const Error& e) {
      job->gen.reset();
      {
        std::lock_guard lock(job->m);
        job->error = e.what();
        job->done = true;
      }
      metrics_.finished("error");
      job->cv.notify_all();
      continue;
    }
    slot.cached.resize(job->cached);
    job->gen->begin(job->cached);
    slot.job = std::move(job);
  }
}

void Engine::update_gauges() {
  std::uint32_t busy = 0;
  for (const Slot& s : slots_) busy += s.job ? 1 : 0;
  std::size_t waiting;
  {
    std::lock_guard lock(m_);
    waiting = waiting_.size();
    busy_ = busy;
  }
  metrics_.gauges(static_cast<std::uint32_t>(waiting), busy, busy, cfg_.parallel);
}

void Engine::finish_job(Slot& slot) {
  std::shared_ptr<Job> job = std::move(slot.job);
  slot.job.reset();
  slot.last_used = ++clock_;
  publish(*job, {job->gen->take_text(), std::nullopt});
  const GenerateResult& r = job->gen->result();
  metrics_.tokens(r.prompt_tokens, r.cached_prompt_tokens, r.completion_tokens);
  metrics_.finished(std::string(finish_reason_name(r.finish)));
  update_gauges();  // before the client hears, so /metrics agrees with its answer
  {
    std::lock_guard lock(job->m);
    job->result = r;
    job->done = true;
  }
  job->gen.reset();
  job->cv.notify_all();
}

void Engine::fail_job(Slot& slot, const std::string& why, int status) {
  std::shared_ptr<Job> job = std::move(slot.job);
  slot.job.reset();
  slot.last_used = ++clock_;
  {
    std::lock_guard lock(job->m);
    job->error = why;
    job->error_status = status;
    job->done = true;
  }
  job->gen.reset();
  metrics_.finished("error");
  update_gauges();
  job->cv.notify_all();
}

std::unique_ptr<Session> Engine::open_session() const {
  SessionConfig sc;
  sc.n_ctx = n_ctx_;
  sc.n_batch = cfg_.batch;
  sc.n_seq_max = cfg_.parallel;
  sc.cache_type = cfg_.cache_type;
  return model_->session(sc);
}

void Engine::fail_all_running(const std::string& why) {
  for (Slot& s : slots_) {
    s.cached.clear();
    if (!s.job) continue;
    std::shared_ptr<Job> job = std::move(s.job);
    s.job.reset();
    {
      std::lock_guard lock(job->m);
      job->error = why;
      job->done = true;
    }
    job->gen.reset();
    metrics_.finished("error");
    job->cv.notify_all();
  }
}

// Frees cells held only by idle slots' caches, least recently used first,
// until `need` cells are free or no idle cache is left.
void Engine::evict_idle_cells(std::size_t need) {
  while (session_->free_cells() < need) {
    Slot* victim = nullptr;
    for (Slot& s : slots_)
      if (!s.job && !s.cached.empty() && (!victim || s.last_used < victim->last_used)) victim = &s;
    if (!victim) return;
    session_->clear_seq(static_cast<std::uint32_t>(victim - slots_.data()));
    victim->cached.clear();
  }
}

bool goes_first(const PromptTurn& a, const PromptTurn& b, Clock::time_point now) {
  const bool starved_a = seconds_between(a.last_fed, now) >= kStarvedS;
  const bool starved_b = seconds_between(b.last_fed, now) >= kStarvedS;
  if (starved_a != starved_b) return starved_a;
  if (starved_a && a.last_fed != b.last_fed) return a.last_fed < b.last_fed;
  if (a.left != b.left) return a.left < b.left;
  return a.submitted < b.submitted;
}

// Prompt tokens that fit in `seconds` at the measured cost per token, within
// [at_least, budget].
std::size_t Engine::prompt_tokens_in(double seconds, std::size_t at_least,
                                     std::size_t budget) const {
  const double fit = seconds / prompt_token_s_;
  const std::size_t n = fit >= static_cast<double>(budget) ? budget : static_cast<std::size_t>(fit);
  return std::min(budget, std::max(at_least, n));
}

// How many prompt tokens a step of prompt alone may take: about
// prompt_step_s of them, never fewer than chunking can afford.
std::size_t Engine::prompt_alone_cap(std::size_t budget) const {
  constexpr std::size_t kMinPromptStep = 64;
  if (prompt_token_s_ <= 0) return budget;
  return prompt_tokens_in(cfg_.prompt_step_s, kMinPromptStep, budget);
}

// How many prompt tokens a step that also carries decode tokens may take:
// as many as fit in (step_ratio - 1) decode steps' time, at least a few so
// every prompt advances. Until both times are measured, a small chunk.
std::size_t Engine::prefill_cap(std::size_t budget) const {
  constexpr std::size_t kMinChunk = 8, kFirstChunk = 32;
  if (decode_step_s_ <= 0 || prompt_token_s_ <= 0) return std::min(budget, kFirstChunk);
  return prompt_tokens_in((cfg_.step_ratio - 1.0) * decode_step_s_, kMinChunk, budget);
}

// Updates the step-time model from one timed decode call: t = decode_step +
// prompt_rows * prompt_token. Moving averages follow the machine's load and
// the number of running streams.
void Engine::time_step(double seconds, std::size_t decode_rows, std::size_t prompt_rows) {
  constexpr double kAlpha = 0.2;
  auto mix = [&](double& avg, double x) { avg = avg <= 0 ? x : avg + kAlpha * (x - avg); };
  if (prompt_rows == 0) {
    if (decode_rows > 0) mix(decode_step_s_, seconds);
    return;
  }
  // A step of prompt tokens alone charges its fixed cost to them: an
  // overestimate, so the first mixed steps err on the short side.
  const double fixed = decode_rows > 0 ? std::min(decode_step_s_, seconds) : 0.0;
  mix(prompt_token_s_, (seconds - fixed) / static_cast<double>(prompt_rows));
}

bool Engine::step() {
  std::vector<Decode> batch;
  std::vector<std::uint32_t> owner;  // slot of each row
  std::size_t budget = cfg_.batch;
  std::size_t free = session_->free_cells();

  auto take = [&](Slot& slot, std::size_t n) {
    const std::size_t before = batch.size();
    slot.job->gen->next_decodes(batch, n);
    owner.resize(batch.size(), slot.job->slot);
    const std::size_t got = batch.size() - before;
    budget -= got;
    free -= got;
    if (slot.job->gen->done()) finish_job(slot);  // cancelled or timed out
  };

  // Running streams first: one token each, so a long prompt never stalls them.
  for (Slot& slot : slots_) {
    if (!slot.job || slot.job->gen->phase() != Generation::Phase::Decoding) continue;
    if (free == 0) {
      evict_idle_cells(1);
      free = session_->free_cells() > batch.size() ? session_->free_cells() - batch.size() : 0;
    }
    if (free == 0) {
      slot.job->gen->finish(FinishReason::Length);  // context full: end the answer
      finish_job(slot);
      continue;
    }
    take(slot, 1);
  }
  // Then prompt chunks within what is left of the budget: what keeps this
  // step short beside generating streams (a whole --batch of prompt would
  // stall every stream for its duration), else about prompt_step_s of it.
  const std::size_t decode_rows = batch.size();
  const std::size_t short_step = prefill_cap(budget);
  budget = decode_rows > 0 ? short_step : prompt_alone_cap(budget);
  std::vector<Slot*> prefilling;
  for (Slot& slot : slots_)
    if (slot.job && slot.job->gen->phase() == Generation::Phase::Prefill)
      prefilling.push_back(&slot);
  auto left = [](const Slot* s) { return s->job->prompt.size() - s->cached.size(); };
  const auto now = Clock::now();
  std::sort(prefilling.begin(), prefilling.end(), [&](Slot* a, Slot* b) {
    return goes_first({left(a), a->job->last_fed, a->job->submitted},
                      {left(b), b->job->last_fed, b->job->submitted}, now);
  });
  std::vector<Slot*> stalled;
  for (Slot* slot : prefilling) {
    if (budget == 0) break;
    // Cancellation is noticed by next_decodes even when no cell is free.
    if (slot->job->cancel.load()) {
      take(*slot, 1);
      continue;
    }
    // During prefill every token this slot decoded is a prompt token.
    std::size_t want = std::min(budget, left(slot));
    if (free < want) {
      evict_idle_cells(want + batch.size());
      const std::size_t f = session_->free_cells();
      free = f > batch.size() ? f - batch.size() : 0;
    }
    const std::size_t n = std::min(want, free);
    if (n == 0) {
      stalled.push_back(slot);
      continue;
    }
    const bool last_chunk = n == left(slot);
    slot->job->last_fed = now;
    take(*slot, n);
    // A prompt read to its end waits on this step for its first token: the
    // rest of the step stays as short as it would beside running streams.
    if (last_chunk) {
      const std::size_t prompt_rows = batch.size() - decode_rows;
      budget = std::min(budget, short_step > prompt_rows ? short_step - prompt_rows : 0);
    }
  }

  if (batch.empty()) {
    if (stalled.empty()) return false;
    // Partly prefilled prompts hold every free cell between them: send the
    // youngest back to the queue (its cells freed) so the older ones finish.
    Slot* young = *std::max_element(stalled.begin(), stalled.end(), [](Slot* a, Slot* b) {
      return a->job->submitted < b->job->submitted;
    });
    std::shared_ptr<Job> job = std::move(young->job);
    young->job.reset();
    job->gen.reset();
    session_->clear_seq(job->slot);
    young->cached.clear();
    std::lock_guard lock(m_);
    waiting_.push_front(std::move(job));
    return true;
  }

  const auto t0 = Clock::now();
  try {
    session_->decode(batch);
  } catch (const Error& e) {
    if (e.code() == Errc::ContextFull || e.code() == Errc::InvalidArgument) {
      // The session is unchanged, but the generations in this batch handed
      // their Decodes out and cannot continue.
      for (std::size_t i = 0; i < owner.size(); ++i) {
        Slot& s = slots_[owner[i]];
        if (!s.job) continue;
        std::shared_ptr<Job> job = std::move(s.job);
        s.job.reset();
        session_->clear_seq(owner[i]);
        s.cached.clear();
        {
          std::lock_guard lock(job->m);
          job->error = e.what();
          job->done = true;
        }
        job->gen.reset();
        metrics_.finished("error");
        job->cv.notify_all();
      }
      return true;
    }
    // A failed forward pass corrupts the session: recreate it.
    fail_all_running(std::string("the engine failed: ") + e.what());
    session_ = open_session();
    return true;
  }
  time_step(seconds_between(t0, Clock::now()), decode_rows, batch.size() - decode_rows);
  metrics_.decode_call(static_cast<std::uint32_t>(batch.size()));

  for (std::size_t i = 0; i < batch.size(); ++i) {
    Slot& slot = slots_[owner[i]];
    slot.cached.push_back(batch[i].token);
    if (!batch[i].logits || !slot.job) continue;
    Job& job = *slot.job;
    Step st;
    try {
      st = job.gen->on_logits(session_->logits(i));
    } catch (const Error& e) {
      // The sampler refused this request's values (e.g. a logit_bias that
      // bans every token): that request fails, the others go on.
      fail_job(slot, e.what(), e.code() == Errc::InvalidArgument ? 400 : 500);
      continue;
    }
    if (st.token) {
      const auto t = Clock::now();
      if (!job.first_token_seen) {
        job.first_token_seen = true;
        metrics_.ttft(seconds_between(job.submitted, t));
      } else {
        metrics_.inter_token(seconds_between(job.last_token, t));
      }
      job.last_token = t;
    }
    publish(job, {std::move(st.text), std::move(st.logprob)});
    if (job.gen->done()) finish_job(slot);
  }
  return true;
}

void Engine::loop() {
  for (;;) {
    bool any_running = false;
    for (const Slot& s : slots_) any_running = any_running || s.job != nullptr;
    {
      std::unique_lock lock(m_);
      if (!any_running && waiting_.empty()) {
        if (exit_) break;
        cv_.wait_for(lock, std::chrono::milliseconds(250),
                     [&] { return exit_ || !waiting_.empty(); });
      }
      if (deadline_ && Clock::now() >= *deadline_) {
        for (auto& j : waiting_) j->cancel.store(true);
        for (Slot& s : slots_)
          if (s.job) s.job->cancel.store(true);
      }
      admit_waiting();
      busy_ = 0;
      for (const Slot& s : slots_) busy_ += s.job ? 1 : 0;
    }
    update_gauges();
    try {
      step();
    } catch (const std::exception& e) {
      // Nothing may end this thread: fail what was running and start over
      // with a fresh session.
      fail_all_running(std::string("the engine failed: ") + e.what());
      try {
        session_ = open_session();
      } catch (const std::exception&) {
      }
    }
  }
  update_gauges();
}

}  // namespace seam::server
