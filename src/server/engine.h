// The server's engine: one Session with N slots (sequences) and a scheduler
// thread that packs the work of every live request into shared decode calls:
// prefill chunks of new requests beside the single decode tokens of running
// ones, within a per-step token budget. Each request is driven by the one
// generation loop (seam::Generation); the engine only schedules.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "seam/generate.h"
#include "seam/model.h"
#include "seam/session.h"
#include "server/metrics.h"

namespace seam::server {

// What a request produced in one scheduler step.
struct Piece {
  std::string text;
  std::optional<TokenLogprob> logprob;  // when the request asked for logprobs
};

// One request inside the engine. The HTTP thread creates it, submits it and
// reads its pieces; the scheduler thread fills them in.
struct Job {
  std::vector<Token> prompt;
  GenerateConfig config;  // seq, cancel and timeout are set by the engine
  std::atomic<bool> cancel{false};

  // Filled by the scheduler, read under `m`.
  std::mutex m;
  std::condition_variable cv;
  std::deque<Piece> pieces;
  bool done = false;
  GenerateResult result;
  std::optional<std::string> error;  // the request failed inside the engine
  int error_status = 500;            // 400 when its own values made it fail (all tokens banned)

  // Engine-private.
  std::chrono::steady_clock::time_point submitted;
  std::unique_ptr<Generation> gen;
  std::uint32_t slot = 0;
  std::size_t cached = 0;
  bool first_token_seen = false;
  std::chrono::steady_clock::time_point last_token;
  std::chrono::steady_clock::time_point last_fed;  // submitted, then its last prompt chunk
};

// The order in which prompts take a step's budget: one that has had no chunk
// for kStarvedS goes first (the longest starved first), so a long prompt
// still advances while short ones keep arriving; then the shortest left, so a
// short question is answered in a step or two instead of waiting out a long
// document; then the oldest.
struct PromptTurn {
  std::size_t left;  // prompt tokens still to read
  std::chrono::steady_clock::time_point last_fed, submitted;
};
inline constexpr double kStarvedS = 0.5;
bool goes_first(const PromptTurn& a, const PromptTurn& b,
                std::chrono::steady_clock::time_point now);

struct EngineConfig {
  std::uint32_t parallel = 4;
  std::uint32_t n_ctx = 0;
  std::uint32_t batch = 512;
  CacheType cache_type = CacheType::F16;
  // While requests are generating, a step with prompt tokens may take at most
  // this many times a step of their decode tokens alone (estimated from the
  // steps timed so far); the prompt chunk is cut to fit. Bounds the streams'
  // inter-token latency while long prompts arrive.
  double step_ratio = 1.5;
  // With nothing generating, a step of prompt tokens alone is cut to about
  // this long (never below kMinPromptStep tokens, where chunking starts to
  // cost prefill speed), so a request that arrives meanwhile waits at most
  // about that for the step in flight before its own prompt is read.
  double prompt_step_s = 0.25;
  std::uint32_t queue = 64;
  double timeout_s = 0;
};

class Engine {
 public:
  Engine(std::shared_ptr<const Model> model, const EngineConfig& config, Metrics& metrics);
  ~Engine();

  // Queues a job; false when the queue is full or the engine is stopping.
  bool submit(const std::shared_ptr<Job>& job);

  // Stops taking jobs; running and queued ones get until `deadline` to
  // finish, then they are cancelled. Returns once the scheduler is idle.
  void drain(std::chrono::steady_clock::time_point deadline);

  std::uint32_t n_ctx() const { return n_ctx_; }
  std::uint32_t parallel() const { return cfg_.parallel; }

 private:
  struct Slot {
    std::shared_ptr<Job> job;   // running job, or null when free
    std::vector<Token> cached;  // tokens in the KV cache for this sequence, in order
    std::uint64_t last_used = 0;
  };

  // A session of the configured size (at start, and after a failed step).
  std::unique_ptr<Session> open_session() const;
  void loop();
  void admit_waiting();
  bool step();  // one decode call; false when there was nothing to do
  void finish_job(Slot& slot);
  void fail_all_running(const std::string& why);
  void fail_job(Slot& slot, const std::string& why, int status);
  void evict_idle_cells(std::size_t need);
  void publish(Job& job, Piece piece);
  void update_gauges();
  std::size_t prefill_cap(std::size_t budget) const;
  std::size_t prompt_alone_cap(std::size_t budget) const;
  std::size_t prompt_tokens_in(double seconds, std::size_t at_least, std::size_t budget) const;
  void time_step(double seconds, std::size_t decode_rows, std::size_t prompt_rows);

  std::shared_ptr<const Model> model_;
  EngineConfig cfg_;
  Metrics& metrics_;
  std::uint32_t n_ctx_ = 0;
  std::unique_ptr<Session> session_;
  std::vector<Slot> slots_;
  std::uint64_t clock_ = 0;
  // Step-time model, scheduler thread only (moving averages, seconds).
  double decode_step_s_ = 0;   // a step holding only decode tokens
  double prompt_token_s_ = 0;  // what each prompt token adds to a step

  std::mutex m_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Job>> waiting_;
  std::uint32_t busy_ = 0;  // slots holding a job (under m_)
  bool stopping_ = false;
  bool exit_ = false;
  std::optional<std::chrono::steady_clock::time_point> deadline_;
  std::thread thread_;
};

}  // namespace seam::server
