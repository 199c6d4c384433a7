// The HTTP surface: routes, auth, SSE streaming, errors, access log. The
// engine (engine.h) does the work; the wire format lives in api.h.
#include <httplib.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <mutex>
#include <string_view>
#include <thread>

#include "seam/chat.h"
#include "seam/error.h"
#include "seam/server.h"
#include "server/api.h"
#include "server/chat_page.h"
#include "server/client_socket.h"
#include "server/engine.h"
#include "server/metrics.h"

namespace seam {

namespace server {
namespace {

using Clock = std::chrono::steady_clock;

// How often a whole answer's handler looks whether its client is still there.
constexpr std::chrono::milliseconds kClientCheck{100};

std::string dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

void send_json(httplib::Response& res, int status, const Json& body) {
  res.status = status;
  res.set_content(dump(body), "application/json");
}

void send_error(httplib::Response& res, const ApiError& e) {
  send_json(res, e.status, error_body(e));
}

// The routes metrics are kept for; anything else is "other" so random paths
// cannot grow the label set.
std::string route_label(const std::string& path) {
  static const char* kRoutes[] = {
      "/",           "/health",    "/metrics",        "/tokenize",
      "/detokenize", "/v1/models", "/v1/completions", "/v1/chat/completions"};
  for (const char* r : kRoutes)
    if (path == r) return r;
  if (path.rfind("/v1/models/", 0) == 0) return "/v1/models/{id}";
  return "other";
}

const char* status_text(int status) {
  switch (status) {
    case 400:
      return "the request is malformed";
    case 401:
      return "unauthorized";
    case 404:
      return "not found";
    case 405:
      return "method not allowed";
    case 408:
      return "the request took too long to arrive";
    case 413:
      return "the request body is too large";
    case 414:
      return "the request URI is too long";
    case 415:
      return "unsupported media type";
    case 429:
      return "too many requests";
    case 503:
      return "the server is busy";
    default:
      return "error";
  }
}

thread_local Clock::time_point t_request_start;

class HttpServer final : public ServerHandle {
 public:
  explicit HttpServer(const ServerConfig& cfg) : cfg_(cfg), created_(std::time(nullptr)) {
    // Each message names the ServerConfig field and the CLI option that sets it.
    if (cfg_.port < 0 || cfg_.port > 65535)
      throw Error(Errc::InvalidArgument,
                  "port (--port) must be in 0..65535, got " + std::to_string(cfg_.port));
    if (cfg_.parallel < 1 || cfg_.parallel > 256)
      throw Error(Errc::InvalidArgument,
                  "parallel (--parallel) must be in 1..256, got " + std::to_string(cfg_.parallel));
    if (cfg_.timeout_s < 0)
      throw Error(Errc::InvalidArgument, "timeout_s (--timeout) must be >= 0");
    if (cfg_.max_body < 1) throw Error(Errc::InvalidArgument, "max_body (--max-body) must be >= 1");
    setup();
  }

  ~HttpServer() override {
    stop();
    wait();
  }

  int port() const override { return port_; }

  void set_model(std::shared_ptr<const Model> model, std::string chat_template,
                 std::vector<std::string> chat_stops) override {
    ApiContext ctx;
    ctx.model = model.get();
    EngineConfig ec;
    ec.parallel = cfg_.parallel;
    ec.n_ctx = cfg_.n_ctx;
    ec.batch = cfg_.batch;
    ec.cache_type = cfg_.cache_type;
    ec.queue = cfg_.queue;
    ec.timeout_s = cfg_.timeout_s;
    auto engine = std::make_unique<Engine>(model, ec, metrics_);
    ctx.n_ctx = engine->n_ctx();
    validate_chat_template(chat_template);
    ctx.chat_template = std::move(chat_template);
    ctx.chat_stops = std::move(chat_stops);
    if (cfg_.model_id.empty())
      model_id_ = std::filesystem::path(model->info().path).filename().string();
    else
      model_id_ = cfg_.model_id;
    std::lock_guard lock(m_);
    model_ = std::move(model);
    ctx_ = ctx;
    engine_ = std::move(engine);
    ready_.store(true);
  }

  void bind() {
    if (cfg_.port == 0) {
      port_ = svr_.bind_to_any_port(cfg_.host);
      if (port_ <= 0) throw Error(Errc::Io, "cannot bind " + cfg_.host + " to a free port");
    } else {
      if (!svr_.bind_to_port(cfg_.host, cfg_.port))
        throw Error(Errc::Io, "cannot bind " + cfg_.host + ":" + std::to_string(cfg_.port) +
                                  " (in use, or not an address of this machine?)");
      port_ = cfg_.port;
    }
    // The library was built with a listen backlog of 5: a burst of clients
    // beyond that loses connections (SYNs dropped, then reset reads). Listening
    // again on the bound socket widens the queue to the system's limit.
    if (listen_fd_ < 0 || ::listen(listen_fd_, SOMAXCONN) != 0)
      throw Error(Errc::Io, "cannot listen on " + cfg_.host + ":" + std::to_string(port_));
    listener_ = std::thread([this] {
      svr_.listen_after_bind();
      listener_done_.store(true);
    });
  }

  void stop() override {
    {
      std::lock_guard lock(m_);
      stop_requested_ = true;
    }
    stop_cv_.notify_all();
  }

  void wait() override {
    {
      std::unique_lock lock(m_);
      stop_cv_.wait(lock, [&] { return stop_requested_; });
      if (stopped_) return;
      stopped_ = true;
    }
    stopping_.store(true);
    // Stop accepting connections; let running requests finish within the
    // grace period, then cancel them. httplib's stop() does nothing before its
    // accept loop has started, which then never ends: a model refused right
    // after the bind hung the process under load (seen once under ASan).
    while (listener_.joinable() && !svr_.is_running() && !listener_done_.load())
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    svr_.stop();
    if (engine_)
      engine_->drain(Clock::now() +
                     std::chrono::milliseconds(static_cast<long>(cfg_.grace_s * 1000)));
    if (listener_.joinable()) listener_.join();
  }

 private:
  void setup();
  bool authorized(const httplib::Request& req) const;
  void chat_or_completion(const Json& body, const httplib::Request& req, httplib::Response& res,
                          bool chat);
  void respond_whole(const httplib::Request& req, httplib::Response& res,
                     const std::shared_ptr<Job>& job, const CompletionRequest& r, bool chat);
  void respond_stream(httplib::Response& res, const std::shared_ptr<Job>& job,
                      const CompletionRequest& r, bool chat);
  void access_log(const httplib::Request& req, const httplib::Response& res);

  ServerConfig cfg_;
  httplib::Server svr_;
  Metrics metrics_;
  std::time_t created_;
  int port_ = 0;
  int listen_fd_ = -1;  // the bound socket, seen by the socket-options hook
  std::thread listener_;
  std::atomic<bool> listener_done_{false};  // listen_after_bind returned

  std::mutex m_;
  std::condition_variable stop_cv_;
  bool stop_requested_ = false, stopped_ = false;
  std::atomic<bool> ready_{false}, stopping_{false};
  std::shared_ptr<const Model> model_;
  std::unique_ptr<Engine> engine_;
  ApiContext ctx_;
  std::string model_id_;
  std::mutex log_m_;
};

bool HttpServer::authorized(const httplib::Request& req) const {
  if (cfg_.api_key.empty()) return true;
  const std::string h = req.get_header_value("Authorization");
  const std::string_view scheme = "bearer ";  // case-insensitive (RFC 7235)
  if (h.size() < scheme.size()) return false;
  for (std::size_t i = 0; i < scheme.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(h[i])) != scheme[i]) return false;
  const std::string_view key = std::string_view(h).substr(scheme.size());
  // Constant-time compare: the key's bytes must not leak through timing.
  if (key.size() != cfg_.api_key.size()) return false;
  unsigned char diff = 0;
  for (std::size_t i = 0; i < key.size(); ++i)
    diff |= static_cast<unsigned char>(key[i] ^ cfg_.api_key[i]);
  return diff == 0;
}

void HttpServer::access_log(const httplib::Request& req, const httplib::Response& res) {
  metrics_.request(route_label(req.path), res.status);
  // A request refused before routing (bad request line, URI too long) was
  // never stamped: its time is unknown, not the age of the connection.
  const double ms =
      t_request_start == Clock::time_point{}
          ? 0.0
          : std::chrono::duration<double, std::milli>(Clock::now() - t_request_start).count();
  t_request_start = {};
  const std::string method = req.method.empty() ? "-" : req.method;
  const std::string remote = req.remote_addr.empty() ? "-" : req.remote_addr;
  std::string line;
  if (cfg_.log_json) {
    Json j = {{"time", static_cast<std::int64_t>(std::time(nullptr))},
              {"remote", remote},
              {"method", method},
              {"path", req.path},
              {"status", res.status},
              {"ms", std::round(ms * 10) / 10}};
    line = dump(j) + "\n";
  } else {
    char buf[64];
    std::snprintf(buf, sizeof buf, " %d %.1f ms\n", res.status, ms);
    line = "seam: " + remote + " " + method + " " + (req.path.empty() ? "-" : req.path) + buf;
  }
  std::lock_guard lock(log_m_);
  std::fputs(line.c_str(), stderr);
}

void HttpServer::setup() {
  // Every connection holds a worker for its whole life (a stream for as long
  // as it generates), so there are enough for every slot, the queue, and
  // health checks and slow clients besides.
  const std::size_t workers = cfg_.parallel + std::min<std::size_t>(cfg_.queue, 256) + 32;
  svr_.new_task_queue = [workers] { return new httplib::ThreadPool(workers); };
  // SO_REUSEADDR lets a restarted server bind past TIME_WAIT; unlike the
  // library's default SO_REUSEPORT it does not let a second server share the
  // port, so "in use" stays an error.
  svr_.set_socket_options([this](int sock) {
    const int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    listen_fd_ = sock;
  });
  svr_.set_payload_max_length(cfg_.max_body);
  svr_.set_read_timeout(5, 0);
  svr_.set_write_timeout(5, 0);
  svr_.set_keep_alive_timeout(5);
  svr_.set_tcp_nodelay(true);
  svr_.set_default_headers({{"Access-Control-Allow-Origin", "*"}});

  svr_.set_logger(
      [this](const httplib::Request& req, const httplib::Response& res) { access_log(req, res); });

  svr_.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    t_request_start = Clock::now();
    if (req.method == "OPTIONS") return httplib::Server::HandlerResponse::Unhandled;
    const bool open = req.path == "/health" || req.path == "/";
    if (!open && !authorized(req)) {
      send_error(res, {401,
                       req.has_header("Authorization")
                           ? "Incorrect API key provided."
                           : "You didn't provide an API key: send it as 'Authorization: Bearer "
                             "KEY'.",
                       "invalid_request_error", "", "invalid_api_key"});
      return httplib::Server::HandlerResponse::Handled;
    }
    if (!open && !ready_.load() && req.path != "/metrics") {
      res.set_header("Retry-After", "1");
      send_error(res, {503, "the model is still loading; retry shortly", "server_error", "",
                       "model_loading"});
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });

  svr_.set_error_handler(
      httplib::Server::HandlerWithResponse([](const httplib::Request& req, httplib::Response& res) {
        if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
        ApiError e{res.status, status_text(res.status)};
        if (res.status == 404) {
          e.message = "unknown route " + req.method + " " + req.path;
          e.code = "not_found";
        } else if (res.status >= 500) {
          e.type = "server_error";
        }
        send_error(res, e);
        return httplib::Server::HandlerResponse::Handled;
      }));

  svr_.set_exception_handler(
      [](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
        std::string what = "internal error";
        try {
          std::rethrow_exception(ep);
        } catch (const std::exception& e) {
          what = e.what();
        } catch (...) {
        }
        send_error(res, {500, "internal error: " + what, "server_error"});
      });

  svr_.Options(".*", [](const httplib::Request& req, httplib::Response& res) {
    res.status = 204;
    res.set_header("Access-Control-Allow-Methods", "GET, POST, OPTIONS");
    // Whatever headers the page's client asks to send (the openai package adds
    // its X-Stainless-* headers to every request); the API key still guards.
    const std::string asked = req.get_header_value("Access-Control-Request-Headers");
    res.set_header("Access-Control-Allow-Headers",
                   asked.empty() ? std::string("Authorization, Content-Type") : asked);
  });

  svr_.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
    if (!ready_.load()) {
      res.set_header("Retry-After", "1");
      send_json(res, 503, {{"status", "loading"}});
    } else {
      // "auth" lets the chat page know whether to ask for a key first.
      send_json(res, 200, {{"status", "ok"}, {"auth", !cfg_.api_key.empty()}});
    }
  });

  svr_.Get("/", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(std::string(chat_page_html()), "text/html; charset=utf-8");
  });

  svr_.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(metrics_.render(), "text/plain; version=0.0.4; charset=utf-8");
  });

  auto model_json = [this] {
    return Json{{"id", model_id_},
                {"object", "model"},
                {"created", static_cast<std::int64_t>(created_)},
                {"owned_by", "seam"}};
  };
  svr_.Get("/v1/models", [model_json](const httplib::Request&, httplib::Response& res) {
    send_json(res, 200, {{"object", "list"}, {"data", Json::array({model_json()})}});
  });
  svr_.Get(
      "/v1/models/(.+)", [this, model_json](const httplib::Request& req, httplib::Response& res) {
        if (req.matches[1] != model_id_) {
          send_error(res, {404, "The model '" + std::string(req.matches[1]) + "' does not exist",
                           "invalid_request_error", "model", "model_not_found"});
          return;
        }
        send_json(res, 200, model_json());
      });

  // POST routes take JSON bodies; every client mistake becomes an ApiError.
  auto post =
      [this](const char* path,
             std::function<void(const Json&, const httplib::Request&, httplib::Response&)> fn) {
        svr_.Post(path, [fn](const httplib::Request& req, httplib::Response& res) {
          try {
            if (req.has_header("Content-Type")) {
              std::string ct = req.get_header_value("Content-Type");
              ct = ct.substr(0, ct.find(';'));
              for (char& c : ct) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
              while (!ct.empty() && ct.back() == ' ') ct.pop_back();
              if (ct != "application/json" && !(ct.size() > 5 && ct.ends_with("+json")))
                throw ApiError{415,
                               "the body must be JSON, sent with 'Content-Type: "
                               "application/json' (got '" +
                                   ct + "')"};
            }
            fn(parse_body(req.body), req, res);
          } catch (const ApiError& e) {
            send_error(res, e);
          } catch (const Error& e) {
            if (e.code() == Errc::InvalidArgument || e.code() == Errc::Template)
              send_error(res, {400, e.what()});
            else
              send_error(res, {500, e.what(), "server_error"});
          }
        });
      };

  post("/v1/chat/completions",
       [this](const Json& b, const httplib::Request& req, httplib::Response& res) {
         chat_or_completion(b, req, res, true);
       });
  post("/v1/completions",
       [this](const Json& b, const httplib::Request& req, httplib::Response& res) {
         chat_or_completion(b, req, res, false);
       });
  post("/tokenize", [this](const Json& b, const httplib::Request&, httplib::Response& res) {
    const TokenizeRequest r = parse_tokenize_request(b);
    const std::vector<Token> toks = model_->tokenize(r.content, r.add_special, r.parse_special);
    Json out = Json::array();
    for (Token t : toks) {
      if (r.with_pieces)
        out.push_back({{"id", t}, {"piece", model_->detok(t, Detok::Text)}});
      else
        out.push_back(t);
    }
    send_json(res, 200, {{"tokens", std::move(out)}});
  });
  post("/detokenize", [this](const Json& b, const httplib::Request&, httplib::Response& res) {
    const std::vector<Token> toks = parse_detokenize_request(b, model_->info().n_vocab);
    send_json(res, 200, {{"content", model_->detok(toks, Detok::Text)}});
  });

  bind();
}

void HttpServer::chat_or_completion(const Json& body, const httplib::Request& req,
                                    httplib::Response& res, bool chat) {
  CompletionRequest r =
      chat ? parse_chat_request(body, ctx_) : parse_completion_request(body, ctx_);
  auto job = std::make_shared<Job>();
  job->prompt = r.prompt;
  job->config = r.config;
  if (stopping_.load() || !engine_->submit(job)) {
    res.set_header("Retry-After", "1");
    throw ApiError{503,
                   stopping_.load() ? "the server is shutting down"
                                    : "the server is at capacity (every slot busy and the queue "
                                      "full); retry shortly",
                   "server_error", "", "server_overloaded"};
  }
  if (r.stream)
    respond_stream(res, job, r, chat);
  else
    respond_whole(req, res, job, r, chat);
}

void HttpServer::respond_whole(const httplib::Request& req, httplib::Response& res,
                               const std::shared_ptr<Job>& job, const CompletionRequest& r,
                               bool chat) {
  // A client that hangs up frees its slot (or queue place), as a stream's does.
  const int client = find_client_socket(port_, req.remote_addr, req.remote_port);
  {
    std::unique_lock lock(job->m);
    while (!job->cv.wait_for(lock, kClientCheck, [&] { return job->done; })) {
      if (client >= 0 && !job->cancel.load() && !client_connected(client)) job->cancel.store(true);
    }
  }
  if (job->error)
    throw ApiError{job->error_status, *job->error,
                   job->error_status < 500 ? "invalid_request_error" : "server_error"};
  const GenerateResult& g = job->result;
  Json choice;
  if (chat) {
    Json msg = {{"role", "assistant"}, {"content", g.text}, {"refusal", nullptr}};
    bool calls = false;
    if (r.tool_format) {
      ToolCallsOut tc = extract_tool_calls(g.text, *r.tool_format);
      calls = !tc.calls.empty();
      msg["content"] = calls && tc.content.empty() ? Json(nullptr) : Json(tc.content);
      if (calls) msg["tool_calls"] = std::move(tc.calls);
    }
    choice = {{"index", 0},
              {"message", std::move(msg)},
              {"logprobs", r.logprobs ? chat_logprobs_json(*model_, g.logprobs) : Json(nullptr)},
              {"finish_reason", finish_reason(g, calls)}};
  } else {
    choice = {
        {"text", g.text},
        {"index", 0},
        {"logprobs", r.logprobs ? completion_logprobs_json(*model_, g.logprobs, 0) : Json(nullptr)},
        {"finish_reason", finish_reason(g, false)}};
  }
  Json out = {{"id", random_id(chat ? "chatcmpl-" : "cmpl-")},
              {"object", chat ? "chat.completion" : "text_completion"},
              {"created", static_cast<std::int64_t>(std::time(nullptr))},
              {"model", model_id_},
              {"system_fingerprint", kSystemFingerprint},
              {"choices", Json::array({std::move(choice)})},
              {"usage", usage_json(g)}};
  send_json(res, 200, out);
}

void HttpServer::respond_stream(httplib::Response& res, const std::shared_ptr<Job>& job,
                                const CompletionRequest& r, bool) {
  auto enc = std::make_shared<StreamEncoder>(model_.get(), r, model_id_);
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  res.set_chunked_content_provider(
      "text/event-stream",
      [job, enc](std::size_t, httplib::DataSink& sink) {
        auto send = [&](const std::string& s) {
          if (s.empty() || sink.write(s.data(), s.size())) return true;
          job->cancel.store(true);  // the client went away: free the slot
          return false;
        };
        if (!send(enc->start())) return false;
        for (;;) {
          std::deque<Piece> pieces;
          bool done;
          {
            std::unique_lock lock(job->m);
            job->cv.wait_for(lock, std::chrono::seconds(1),
                             [&] { return job->done || !job->pieces.empty(); });
            pieces.swap(job->pieces);
            done = job->done;
          }
          if (pieces.empty() && !done) {
            // Nothing for a while (queued, or a long prefill): an SSE comment,
            // which clients ignore, tells whether the client is still there.
            if (!send(": keep-alive\n\n")) return false;
            continue;
          }
          std::string out;
          for (const Piece& p : pieces) out += enc->text(p.text, p.logprob);
          if (done) out += job->error ? enc->error(*job->error) : enc->finish(job->result);
          if (!send(out)) return false;
          if (done) {
            sink.done();
            return true;
          }
        }
      },
      [job](bool) { job->cancel.store(true); });
}

}  // namespace
}  // namespace server

std::unique_ptr<ServerHandle> start_server(const ServerConfig& config) {
  return std::make_unique<server::HttpServer>(config);
}

}  // namespace seam
