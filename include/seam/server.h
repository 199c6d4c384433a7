// seam::serve — an OpenAI-compatible HTTP server over one Model and one
// multi-sequence Session, with continuous batching (docs/server.md).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "seam/model.h"

namespace seam {

struct ServerConfig {
  std::string host = "127.0.0.1";
  int port = 8080;             // 0: pick a free port (ServerHandle::port() says which)
  std::string model_id{};      // the id /v1/models reports and responses carry
  std::uint32_t parallel = 4;  // slots: requests generating at once
  std::uint32_t n_ctx = 0;     // KV cells shared by the slots; 0 = the model's training context
  std::uint32_t batch = 512;   // most tokens per decode step (prefill chunks + decode tokens)
  CacheType cache_type = CacheType::F16;  // how the shared KV cache stores keys and values
  std::uint32_t queue = 64;               // requests waiting for a slot; beyond it: 503
  double timeout_s = 600;                 // per-request wall-clock limit (queue included); 0 = none
  std::string api_key{};                  // empty: no auth
  std::size_t max_body = 4u << 20;        // request bodies over this get 413
  bool log_json = false;                  // access log lines as JSON objects (else text)
  double grace_s = 10;                    // on stop(): running requests get this long to finish
};

// A running server. Listening starts in start(); the model may be attached
// later (set_model) so /health can answer 503 while it loads.
class ServerHandle {
 public:
  virtual ~ServerHandle() = default;
  // The bound port (after start()).
  virtual int port() const = 0;
  // Attaches the loaded model and opens the session; /health turns 200.
  // `chat_template` (Jinja source) renders /v1/chat/completions; `chat_stops`
  // are end-of-turn markers the vocabulary cannot stop on as a token.
  // Throws Error(InvalidArgument) for a config the model cannot serve.
  virtual void set_model(std::shared_ptr<const Model> model, std::string chat_template,
                         std::vector<std::string> chat_stops) = 0;
  // Blocks until stop() (from another thread or a signal watcher) has
  // drained the server: new requests refused, running ones finished or,
  // after the grace period, cancelled.
  virtual void wait() = 0;
  // Asks the server to stop; returns at once. Safe from any thread.
  virtual void stop() = 0;
};

// Binds the socket and starts serving (HTTP threads and the scheduler).
// Throws Error(Io) when the address cannot be bound, Error(InvalidArgument)
// for a config value out of range.
std::unique_ptr<ServerHandle> start_server(const ServerConfig& config);

}  // namespace seam
