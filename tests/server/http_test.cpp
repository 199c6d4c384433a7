// End-to-end tests of `seam serve` over real HTTP on loopback: every route's
// shape, SSE event by event, errors and their statuses, auth, continuous
// batching against requests run alone, disconnects, and abuse.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <set>
#include <thread>

#include "compute/cpu_level.h"
#include "seam/error.h"
#include "seam/server.h"
#include "server/serve_process.h"

namespace seam::test {
namespace {

Json post_json(httplib::Client& c, const std::string& path, const Json& body, int* status,
               const httplib::Headers& headers = {}) {
  auto r = c.Post(path, headers, body.dump(), "application/json");
  if (!r) {
    *status = -1;
    return nullptr;
  }
  *status = r->status;
  Json j = Json::parse(r->body, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << path << " answered non-JSON: " << r->body;
  return j;
}

struct Resp {
  int status;
  Json body;
};
Resp resp(const httplib::Result& r) {
  if (!r) return {-1, nullptr};
  return {r->status, Json::parse(r->body, nullptr, false)};
}

// OpenAI's error object, with the status that came with it.
void expect_error(const Resp& r, int want_status, const std::string& needle = "",
                  const std::string& param = "") {
  const Json& j = r.body;
  EXPECT_EQ(r.status, want_status) << j.dump();
  ASSERT_TRUE(j.is_object() && j.contains("error")) << j.dump();
  const Json& e = j["error"];
  ASSERT_TRUE(e["message"].is_string());
  EXPECT_TRUE(e["type"].is_string());
  EXPECT_TRUE(e.contains("param"));
  EXPECT_TRUE(e.contains("code"));
  if (!needle.empty()) {
    EXPECT_NE(e["message"].get<std::string>().find(needle), std::string::npos) << e.dump();
  }
  if (!param.empty()) {
    EXPECT_EQ(e["param"], param) << e.dump();
  }
}

Resp post(httplib::Client& c, const std::string& path, const Json& body,
          const httplib::Headers& headers = {}) {
  Resp r;
  r.body = post_json(c, path, body, &r.status, headers);
  return r;
}

TEST(ServeHttp, HealthModelsAndMetrics) {
  ServeProcess s({"-m", kStories, "--alias", "tiny", "--parallel", "2"});
  ASSERT_TRUE(s.ok());
  auto c = s.client();
  auto h = c.Get("/health");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
  EXPECT_EQ(Json::parse(h->body)["status"], "ok");
  auto m = c.Get("/v1/models");
  ASSERT_TRUE(m);
  const Json models = Json::parse(m->body);
  EXPECT_EQ(models["object"], "list");
  ASSERT_EQ(models["data"].size(), 1u);
  EXPECT_EQ(models["data"][0]["id"], "tiny");
  EXPECT_EQ(models["data"][0]["object"], "model");
  EXPECT_EQ(models["data"][0]["owned_by"], "seam");
  EXPECT_TRUE(models["data"][0]["created"].is_number_integer());
  auto one = c.Get("/v1/models/tiny");
  ASSERT_TRUE(one);
  EXPECT_EQ(one->status, 200);
  auto met = c.Get("/metrics");
  ASSERT_TRUE(met);
  EXPECT_EQ(met->status, 200);
  EXPECT_NE(met->get_header_value("Content-Type").find("text/plain"), std::string::npos);
  EXPECT_EQ(metric(met->body, "seam_slots_total"), 2);
  EXPECT_EQ(metric(met->body, "seam_slots_busy"), 0);
  for (const char* name :
       {"seam_prompt_tokens_total", "seam_generated_tokens_total",
        "seam_prompt_tokens_cached_total", "seam_requests_waiting", "seam_requests_running",
        "seam_decode_calls_total", "seam_time_to_first_token_seconds_count",
        "seam_inter_token_latency_seconds_count", "seam_decode_batch_tokens_count"})
    EXPECT_GE(metric(met->body, name), 0) << name << " missing from\n" << met->body;
  // Counted once answered: the access log runs after the response is written,
  // on the connection's own thread, so the count may trail the answer briefly.
  const char* health = "seam_requests_total{route=\"/health\",status=\"200\"}";
  for (int i = 0; i < 200 && metric(met->body, health) < 1; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    met = c.Get("/metrics");
    ASSERT_TRUE(met);
  }
  EXPECT_GE(metric(met->body, health), 1) << met->body;
}

TEST(ServeHttp, CompletionMatchesSeamRunAtTemperatureZero) {
  // `seam run --temp 0` through the CLI is the reference.
  int rc = 0;
  const std::string out =
      run_command(std::string(SEAM_BINARY) + " run -m " + kStories +
                      " -p 'Once upon a time' -n 24 --temp 0 --ignore-eos --json 2>/dev/null",
                  &rc);
  ASSERT_EQ(rc, 0);
  const Json ref = Json::parse(out);

  ServeProcess s({"-m", kStories});
  ASSERT_TRUE(s.ok());
  auto c = s.client();
  int st;
  const Json j = post_json(c, "/v1/completions",
                           {{"prompt", "Once upon a time"},
                            {"max_tokens", 24},
                            {"temperature", 0},
                            {"ignore_eos", true}},
                           &st);
  ASSERT_EQ(st, 200) << j.dump();
  EXPECT_EQ(j["object"], "text_completion");
  EXPECT_EQ(j["id"].get<std::string>().rfind("cmpl-", 0), 0u);
  EXPECT_EQ(j["choices"][0]["text"], ref["text"]);
  EXPECT_EQ(j["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(j["choices"][0]["index"], 0);
  EXPECT_TRUE(j["choices"][0]["logprobs"].is_null());
  EXPECT_EQ(j["usage"]["completion_tokens"], 24);
  EXPECT_EQ(j["usage"]["prompt_tokens"], ref["usage"]["prompt_tokens"]);
  EXPECT_EQ(j["usage"]["total_tokens"], j["usage"]["prompt_tokens"].get<int>() + 24);
  // The gauges are updated before the answer goes out, not on the next idle tick.
  auto met = c.Get("/metrics");
  ASSERT_TRUE(met);
  EXPECT_EQ(metric(met->body, "seam_requests_running"), 0) << met->body;
  EXPECT_EQ(metric(met->body, "seam_slots_busy"), 0) << met->body;

  // The same prompt again: its tokens are in a slot's cache (all but the last).
  const Json again = post_json(c, "/v1/completions",
                               {{"prompt", "Once upon a time"},
                                {"max_tokens", 24},
                                {"temperature", 0},
                                {"ignore_eos", true}},
                               &st);
  ASSERT_EQ(st, 200);
  EXPECT_EQ(again["choices"][0]["text"], ref["text"]);
  EXPECT_EQ(again["usage"]["prompt_tokens_details"]["cached_tokens"],
            again["usage"]["prompt_tokens"].get<int>() - 1);

  // A prompt as token ids gives the same answer as its text.
  auto tk = c.Post("/tokenize", Json{{"content", "Once upon a time"}}.dump(), "application/json");
  ASSERT_TRUE(tk);
  const Json ids = Json::parse(tk->body)["tokens"];
  EXPECT_EQ(ids.size(), ref["usage"]["prompt_tokens"].get<std::size_t>());
  const Json by_ids = post_json(
      c, "/v1/completions",
      {{"prompt", ids}, {"max_tokens", 24}, {"temperature", 0}, {"ignore_eos", true}}, &st);
  ASSERT_EQ(st, 200);
  EXPECT_EQ(by_ids["choices"][0]["text"], ref["text"]);
  auto dt = c.Post("/detokenize", Json{{"tokens", ref["tokens"]}}.dump(), "application/json");
  ASSERT_TRUE(dt);
  EXPECT_EQ(Json::parse(dt->body)["content"], ref["text"]);
}

// --cache-type (here in llama.cpp's spellings -ctk / -ctv, with -fa) reaches
// the server's session: q8_0 answers as `seam run --cache-type q8_0` does, and
// a model whose head size q8_0 cannot hold is refused when the server starts.
TEST(ServeHttp, CacheTypeReachesTheSession) {
  int rc = 0;
  const Json ref = Json::parse(run_command(std::string(SEAM_BINARY) + " run -m " + kKjv +
                                               " --cache-type q8_0 -p 'In the beginning' -n 16"
                                               " --temp 0 --ignore-eos --json 2>/dev/null",
                                           &rc));
  ASSERT_EQ(rc, 0);
  {
    ServeProcess s({"-m", kKjv, "-ctk", "q8_0", "-ctv", "q8_0", "-fa"});
    ASSERT_TRUE(s.ok());
    auto c = s.client();
    int st;
    const Json j = post_json(c, "/v1/completions",
                             {{"prompt", "In the beginning"},
                              {"max_tokens", 16},
                              {"temperature", 0},
                              {"ignore_eos", true}},
                             &st);
    ASSERT_EQ(st, 200) << j.dump();
    EXPECT_EQ(j["choices"][0]["text"], ref["text"]);
  }
  const std::string refused =
      run_command("timeout 60 " + std::string(SEAM_BINARY) + " serve --port 0 -m " + kStories +
                      " --cache-type q8_0 2>&1 >/dev/null",
                  &rc);
  EXPECT_NE(rc, 0);
  EXPECT_NE(refused.find("q8_0 KV cache needs a head size that is a multiple of 32"),
            std::string::npos)
      << refused;
}

TEST(ServeHttp, ChatCompletionShapeStopsAndLogprobs) {
  ServeProcess s({"-m", kKjv});
  ASSERT_TRUE(s.ok());
  auto c = s.client();
  int st;
  const Json req = {
      {"model", "whatever"},
      {"messages",
       {{{"role", "system"}, {"content", "Speak as the prophets."}},
        {{"role", "user"}, {"content", {{{"type", "text"}, {"text", "In the beginning"}}}}}}},
      {"max_tokens", 8},
      {"temperature", 0},
      {"logprobs", true},
      {"top_logprobs", 3},
      {"unknown_field", {{"ignored", true}}}};
  const Json j = post_json(c, "/v1/chat/completions", req, &st);
  ASSERT_EQ(st, 200) << j.dump();
  EXPECT_EQ(j["object"], "chat.completion");
  EXPECT_EQ(j["id"].get<std::string>().rfind("chatcmpl-", 0), 0u);
  EXPECT_TRUE(j["created"].is_number_integer());
  EXPECT_EQ(j["model"], "seam-kjv.gguf");
  const Json& ch = j["choices"][0];
  EXPECT_EQ(ch["message"]["role"], "assistant");
  ASSERT_TRUE(ch["message"]["content"].is_string());
  const int n = j["usage"]["completion_tokens"];
  EXPECT_GE(n, 1);
  EXPECT_LE(n, 8);
  EXPECT_EQ(ch["finish_reason"], n == 8 ? "length" : "stop");
  // One logprob entry per token; at temperature 0 without bias the token
  // taken is the most likely one, so it heads its own top list.
  const Json& lp = ch["logprobs"]["content"];
  ASSERT_EQ(lp.size(), static_cast<std::size_t>(n));
  for (const Json& e : lp) {
    EXPECT_LE(e["logprob"].get<double>(), 0.0);
    ASSERT_EQ(e["top_logprobs"].size(), 3u);
    EXPECT_EQ(e["top_logprobs"][0]["token"], e["token"]);
    EXPECT_FLOAT_EQ(e["top_logprobs"][0]["logprob"].get<float>(), e["logprob"].get<float>());
    EXPECT_GE(e["top_logprobs"][0]["logprob"].get<double>(),
              e["top_logprobs"][1]["logprob"].get<double>());
    EXPECT_TRUE(e["bytes"].is_array());
  }
  EXPECT_TRUE(j["usage"]["prompt_tokens_details"]["cached_tokens"].is_number_integer());

  // A stop string cuts the text before it: stopping on the text's own second
  // character leaves exactly its first.
  const Json base = post_json(c, "/v1/chat/completions",
                              {{"messages", {{{"role", "user"}, {"content", "And God said"}}}},
                               {"max_tokens", 12},
                               {"temperature", 0}},
                              &st);
  ASSERT_EQ(st, 200);
  const std::string text = base["choices"][0]["message"]["content"];
  ASSERT_GE(text.size(), 3u) << base.dump();
  const Json cut = post_json(c, "/v1/chat/completions",
                             {{"messages", {{{"role", "user"}, {"content", "And God said"}}}},
                              {"max_tokens", 12},
                              {"temperature", 0},
                              {"stop", {text.substr(1, 2)}}},
                             &st);
  ASSERT_EQ(st, 200);
  EXPECT_EQ(cut["choices"][0]["message"]["content"], text.substr(0, text.find(text.substr(1, 2))));
  EXPECT_EQ(cut["choices"][0]["finish_reason"], "stop");
  // The re-sent conversation reuses the cached prefix.
  EXPECT_GT(cut["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>(), 0);
}

TEST(ServeHttp, StreamingChatEventByEvent) {
  ServeProcess s({"-m", kKjv});
  ASSERT_TRUE(s.ok());
  auto c = s.client();
  const Json base = {{"messages", {{{"role", "user"}, {"content", "Blessed are"}}}},
                     {"max_tokens", 10},
                     {"temperature", 0}};
  int st;
  const Json whole = post_json(c, "/v1/chat/completions", base, &st);
  ASSERT_EQ(st, 200);

  Json req = base;
  req["stream"] = true;
  req["stream_options"] = {{"include_usage", true}};
  req["logprobs"] = true;
  auto r = c.Post("/v1/chat/completions", req.dump(), "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200);
  EXPECT_NE(r->get_header_value("Content-Type").find("text/event-stream"), std::string::npos);
  bool done = false;
  const std::vector<Json> ev = sse_events(r->body, &done);
  EXPECT_TRUE(done) << "no data: [DONE]";
  ASSERT_GE(ev.size(), 3u);
  const std::string id = ev[0]["id"];
  EXPECT_EQ(id.rfind("chatcmpl-", 0), 0u);
  EXPECT_EQ(ev[0]["choices"][0]["delta"]["role"], "assistant");
  std::string text;
  std::size_t lps = 0;
  for (std::size_t i = 0; i < ev.size(); ++i) {
    EXPECT_EQ(ev[i]["id"], id);
    EXPECT_EQ(ev[i]["object"], "chat.completion.chunk");
    EXPECT_TRUE(ev[i].contains("usage"));  // null until the usage chunk
    if (i + 1 < ev.size()) {
      EXPECT_TRUE(ev[i]["usage"].is_null());
      ASSERT_EQ(ev[i]["choices"].size(), 1u);
      const Json& ch = ev[i]["choices"][0];
      if (ch["delta"].contains("content")) text += ch["delta"]["content"].get<std::string>();
      if (!ch["logprobs"].is_null()) lps += ch["logprobs"]["content"].size();
      // finish_reason only on the last chunk before usage.
      EXPECT_EQ(ch["finish_reason"].is_null(), i + 2 < ev.size()) << ev[i].dump();
    }
  }
  EXPECT_EQ(text, whole["choices"][0]["message"]["content"]);
  EXPECT_EQ(ev[ev.size() - 2]["choices"][0]["finish_reason"], whole["choices"][0]["finish_reason"]);
  const Json& last = ev.back();
  EXPECT_TRUE(last["choices"].empty());
  EXPECT_EQ(last["usage"]["completion_tokens"], whole["usage"]["completion_tokens"]);
  EXPECT_EQ(lps, whole["usage"]["completion_tokens"].get<std::size_t>());

  // Without include_usage there is no usage key and no usage chunk.
  req.erase("stream_options");
  auto r2 = c.Post("/v1/chat/completions", req.dump(), "application/json");
  ASSERT_TRUE(r2);
  const std::vector<Json> ev2 = sse_events(r2->body);
  ASSERT_FALSE(ev2.empty());
  EXPECT_FALSE(ev2.back()["choices"].empty());
  for (const Json& e : ev2) EXPECT_FALSE(e.contains("usage"));

  // Completions stream too: text_completion chunks with the same text.
  auto r3 = c.Post(
      "/v1/completions",
      Json{{"prompt", "And God said"}, {"max_tokens", 6}, {"temperature", 0}, {"stream", true}}
          .dump(),
      "application/json");
  ASSERT_TRUE(r3);
  const std::vector<Json> ev3 = sse_events(r3->body);
  ASSERT_FALSE(ev3.empty());
  EXPECT_EQ(ev3[0]["object"], "text_completion");
  EXPECT_FALSE(ev3.back()["choices"][0]["finish_reason"].is_null());
}

TEST(ServeHttp, ErrorsHaveOpenAIShapeAndStatus) {
  ServeProcess s({"-m", kStories, "-c", "128", "--max-body", "10000"});
  ASSERT_TRUE(s.ok());
  auto c = s.client();
  const Json msgs = {{{"role", "user"}, {"content", "hi"}}};
  auto chat = [&](Json body) { return post(c, "/v1/chat/completions", body); };

  auto raw = c.Post("/v1/chat/completions", "{\"messages\": [", "application/json");
  ASSERT_TRUE(raw);
  expect_error(resp(raw), 400, "not valid JSON");
  raw = c.Post("/v1/chat/completions", "[1,2]", "application/json");
  expect_error(resp(raw), 400, "JSON object");
  expect_error(chat(Json::object()), 400, "messages", "messages");
  expect_error(chat({{"messages", "hi"}}), 400, "array", "messages");
  expect_error(chat({{"messages", Json::array()}}), 400, "empty", "messages");
  expect_error(chat({{"messages", {{{"role", "robot"}, {"content", "x"}}}}}), 400, "robot");
  expect_error(chat({{"messages", msgs}, {"temperature", "hot"}}), 400, "number", "temperature");
  expect_error(chat({{"messages", msgs}, {"temperature", -1}}), 400, "", "temperature");
  expect_error(chat({{"messages", msgs}, {"max_tokens", 0}}), 400, "at least 1", "max_tokens");
  expect_error(chat({{"messages", msgs}, {"max_completion_tokens", -5}}), 400, "",
               "max_completion_tokens");
  expect_error(chat({{"messages", msgs}, {"top_p", 1.5}}), 400, "", "top_p");
  EXPECT_EQ(chat({{"messages", msgs}, {"top_p", 0}, {"max_tokens", 1}}).status, 200);
  expect_error(chat({{"messages", msgs}, {"n", 2}}), 400, "'n'", "n");
  expect_error(chat({{"messages", msgs}, {"response_format", {{"type", "json_object"}}}}), 400,
               "json_object", "response_format");
  expect_error(chat({{"messages", msgs}, {"logit_bias", {{"99999", 1}}}}), 400, "99999",
               "logit_bias");
  expect_error(chat({{"messages", msgs}, {"stop", {1, 2}}}), 400, "", "stop");
  expect_error(chat({{"messages", msgs}, {"top_logprobs", 3}}), 400, "logprobs");
  expect_error(chat({{"messages", {{{"role", "user"}, {"content", {{{"type", "image_url"}}}}}}}}),
               400, "image_url");
  expect_error(chat({{"messages", msgs},
                     {"tools", {{{"type", "function"}, {"function", {{"name", "f"}}}}}}}),
               400, "tool-call syntax", "tools");
  // A prompt longer than the context names both numbers.
  std::string lng;
  for (int i = 0; i < 200; ++i) lng += "once upon a time ";
  const Resp too_long = post(c, "/v1/completions", {{"prompt", lng}});
  expect_error(too_long, 400, "128");
  EXPECT_EQ(too_long.body["error"]["code"], "context_length_exceeded");
  expect_error(post(c, "/v1/completions", {{"prompt", {1, 2, 100000}}}), 400, "100000", "prompt");
  expect_error(post(c, "/v1/completions", {{"prompt", "x"}, {"echo", true}}), 400, "echo");
  expect_error(post(c, "/tokenize", {{"text", "x"}}), 400, "content");
  expect_error(post(c, "/detokenize", {{"tokens", {-1}}}), 400, "tokens");

  auto nf = c.Get("/v1/nothing");
  ASSERT_TRUE(nf);
  expect_error(resp(nf), 404, "/v1/nothing");
  auto big = c.Post("/v1/chat/completions", std::string(20000, ' '), "application/json");
  ASSERT_TRUE(big);
  expect_error(resp(big), 413);
  auto ct = c.Post("/v1/chat/completions", Json{{"messages", msgs}}.dump(), "text/plain");
  ASSERT_TRUE(ct);
  expect_error(resp(ct), 415, "application/json");
  // A bias that bans every token fails that request alone, as the client's error.
  Json ban_all = Json::object();
  for (int t = 0; t < 512; ++t) ban_all[std::to_string(t)] = -100;
  expect_error(post(c, "/v1/completions", {{"prompt", "x"}, {"logit_bias", ban_all}}), 400,
               "banned");
  // None of that hurt: a normal request still works.
  EXPECT_EQ(chat({{"messages", msgs}, {"max_tokens", 2}}).status, 200);
}

// OpenAI's rule: a seed repeats an answer; without one each request samples afresh.
TEST(ServeHttp, ASeedRepeatsAnAnswerAndNoSeedSamplesAfresh) {
  ServeProcess s({"-m", kStories});
  ASSERT_TRUE(s.ok());
  auto c = s.client();
  auto text = [&](Json body) {
    int st;
    const Json r = post_json(c, "/v1/completions", body, &st);
    EXPECT_EQ(st, 200) << r.dump();
    return r["choices"][0]["text"].get<std::string>();
  };
  const Json body = {{"prompt", "Once upon a time"}, {"max_tokens", 24}, {"temperature", 1.0}};
  Json seeded = body;
  seeded["seed"] = 42;
  EXPECT_EQ(text(seeded), text(seeded));
  std::set<std::string> unseeded;
  for (int i = 0; i < 4; ++i) unseeded.insert(text(body));
  // Four samples of 24 tokens at temperature 1 from a 512-token vocabulary: all
  // alike only if every request drew the same numbers.
  EXPECT_GT(unseeded.size(), 1u);
}

TEST(ServeHttp, ApiKeyGuardsEverythingButHealthAndThePage) {
  ::setenv("SEAM_API_KEY", "sekrit", 1);
  ServeProcess s({"-m", kStories});
  ::unsetenv("SEAM_API_KEY");
  ASSERT_TRUE(s.ok());
  auto c = s.client();
  int st;
  const Json body = {{"prompt", "hi"}, {"max_tokens", 2}};
  expect_error(post(c, "/v1/completions", body), 401, "API key");
  const Resp wrong = post(c, "/v1/completions", body, {{"Authorization", "Bearer nope"}});
  expect_error(wrong, 401, "Incorrect");
  EXPECT_EQ(wrong.body["error"]["code"], "invalid_api_key");
  post_json(c, "/v1/completions", body, &st, {{"Authorization", "Bearer sekrit"}});
  EXPECT_EQ(st, 200);
  // The scheme is case-insensitive (RFC 7235); the key is not.
  post_json(c, "/v1/completions", body, &st, {{"Authorization", "bearer sekrit"}});
  EXPECT_EQ(st, 200);
  expect_error(post(c, "/v1/completions", body, {{"Authorization", "Bearer SEKRIT"}}), 401);
  // A browser's preflight is answered without the key, allowing the headers
  // its client asks for (the openai package sends X-Stainless-* ones).
  httplib::Headers preflight = {
      {"Origin", "http://example.com"},
      {"Access-Control-Request-Method", "POST"},
      {"Access-Control-Request-Headers", "authorization,content-type,x-stainless-retry-count"}};
  auto options = c.Options("/v1/chat/completions", preflight);
  ASSERT_TRUE(options);
  EXPECT_EQ(options->status, 204);
  EXPECT_EQ(options->get_header_value("Access-Control-Allow-Headers"),
            "authorization,content-type,x-stainless-retry-count");
  EXPECT_EQ(options->get_header_value("Access-Control-Allow-Origin"), "*");
  auto models = c.Get("/v1/models");
  ASSERT_TRUE(models);
  EXPECT_EQ(models->status, 401);
  auto metrics = c.Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_EQ(metrics->status, 401);
  auto health = c.Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  auto page = c.Get("/");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);
  EXPECT_NE(page->body.find("<title>seam chat</title>"), std::string::npos);
}

// A completion that streams for long enough to be interrupted: a context far
// beyond the prompt, end of generation ignored. stories260K decodes ~17,000
// tokens/s, so "long" is tens of thousands of tokens (megabytes of events, more
// than the socket buffers hold while the test does not read).
const Json kLongStream = {{"prompt", "Once upon a time"},
                          {"max_tokens", 60000},
                          {"ignore_eos", true},
                          {"temperature", 0},
                          {"stream", true}};

std::string http_post(const std::string& path, const Json& body) {
  const std::string b = body.dump();
  return "POST " + path + " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" +
         "Content-Length: " + std::to_string(b.size()) + "\r\n\r\n" + b;
}

// Polls /metrics (10 s at most) until the slot is free and one request was
// counted cancelled; returns the last body.
std::string await_cancelled(httplib::Client& c) {
  std::string body;
  for (int i = 0; i < 200; ++i) {
    auto metrics = c.Get("/metrics");
    if (metrics) body = metrics->body;
    if (metric(body, "seam_slots_busy") == 0 &&
        metric(body, "seam_requests_finished_total{reason=\"cancelled\"}") == 1)
      return body;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ADD_FAILURE() << "no request was cancelled:\n" << body;
  return body;
}

TEST(ServeHttp, DisconnectFreesTheSlotAndAFullQueueGets503) {
  ServeProcess s({"-m", kStories, "--parallel", "1", "--queue", "0", "-c", "65536"});
  ASSERT_TRUE(s.ok());
  auto c = s.client();
  RawSocket sock(s.port());
  ASSERT_TRUE(sock.ok());
  ASSERT_TRUE(sock.send(http_post("/v1/completions", kLongStream)));
  const std::string head = sock.read_until("data: {");
  ASSERT_NE(head.find("200"), std::string::npos) << head;

  // The one slot is busy and the queue holds none: 503 with Retry-After.
  auto busy = c.Post("/v1/completions", Json{{"prompt", "x"}, {"max_tokens", 1}}.dump(),
                     "application/json");
  ASSERT_TRUE(busy);
  expect_error(resp(busy), 503);
  EXPECT_FALSE(busy->get_header_value("Retry-After").empty());
  auto metrics = c.Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_EQ(metric(metrics->body, "seam_slots_busy"), 1) << metrics->body;

  sock.close();  // the client goes away mid-stream
  // It was cancelled long before its 60000 tokens.
  EXPECT_LT(metric(await_cancelled(c), "seam_generated_tokens_total"), 60000);
  int st;
  post_json(c, "/v1/completions", {{"prompt", "x"}, {"max_tokens", 1}}, &st);
  EXPECT_EQ(st, 200);
}

// The same for a whole (non-streamed) answer: nothing is written until it is
// done, so the handler must look for the hang-up itself.
TEST(ServeHttp, DisconnectCancelsAWholeAnswerToo) {
  ServeProcess s({"-m", kStories, "--parallel", "1", "-c", "65536"});
  ASSERT_TRUE(s.ok());
  auto c = s.client();
  Json whole = kLongStream;
  whole["stream"] = false;
  RawSocket sock(s.port());
  ASSERT_TRUE(sock.ok());
  ASSERT_TRUE(sock.send(http_post("/v1/completions", whole)));
  auto metrics = c.Get("/metrics");
  for (int i = 0; i < 200 && metric(metrics->body, "seam_slots_busy") != 1; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    metrics = c.Get("/metrics");
    ASSERT_TRUE(metrics);
  }
  ASSERT_EQ(metric(metrics->body, "seam_slots_busy"), 1) << metrics->body;
  sock.close();
  EXPECT_LT(metric(await_cancelled(c), "seam_generated_tokens_total"), 60000);
}

// A config value out of range is refused before anything binds, naming the
// field and its CLI option (a port above 65535 would otherwise wrap to 16 bits).
TEST(ServeHttp, ConfigOutOfRangeIsRefused) {
  auto refusal = [](const ServerConfig& sc) -> std::string {
    try {
      start_server(sc);
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Errc::InvalidArgument) << e.what();
      return e.what();
    }
    return "no error";
  };
  ServerConfig sc;
  sc.port = 65536 + 18081;
  EXPECT_NE(refusal(sc).find("port (--port) must be in 0..65535, got 83617"), std::string::npos);
  sc.port = -1;
  EXPECT_NE(refusal(sc).find("port (--port)"), std::string::npos);
  sc.port = 0;
  sc.parallel = 0;
  EXPECT_NE(refusal(sc).find("parallel (--parallel)"), std::string::npos);
}

TEST(ServeHttp, APortInUseIsRefused) {
  ServeProcess s({"-m", kStories});
  ASSERT_TRUE(s.ok());
  // A second server on the same port must fail, not share it.
  const std::string cmd = "timeout 20 " + std::string(SEAM_BINARY) + " serve -m " + kStories +
                          " --port " + std::to_string(s.port()) + " 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[4096];
  while (std::size_t n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  const int status = ::pclose(p);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) != 0 && WEXITSTATUS(status) != 124) << out;
  EXPECT_NE(out.find("in use"), std::string::npos) << out;
  auto c = s.client();
  int st;
  post_json(c, "/v1/completions", {{"prompt", "x"}, {"max_tokens", 1}}, &st);
  EXPECT_EQ(st, 200);
}

TEST(ServeHttp, SixteenConcurrentStreamsGetTheirTokensAlone) {
  ServeProcess s({"-m", kStories, "--parallel", "8", "-c", "2048"});
  ASSERT_TRUE(s.ok());
  const char* starts[] = {"Once upon a time", "The little dog", "Lily went to", "Tom had a",
                          "One day, a",       "The sun was",    "A girl named", "In the park"};
  std::vector<Json> reqs;
  for (int i = 0; i < 16; ++i) {
    reqs.push_back({{"prompt", std::string(starts[i % 8]) + (i < 8 ? "" : " and the")},
                    {"max_tokens", 12 + i},
                    {"temperature", 0},
                    {"ignore_eos", true},
                    {"stream", true}});
  }
  auto stream_text = [&](const Json& req) {
    auto c = s.client();
    auto r = c.Post("/v1/completions", req.dump(), "application/json");
    std::string text;
    if (!r || r->status != 200) return std::string("<failed>");
    for (const Json& e : sse_events(r->body)) text += e["choices"][0]["text"].get<std::string>();
    return text;
  };
  std::vector<std::string> alone;
  for (const Json& r : reqs) alone.push_back(stream_text(r));
  std::vector<std::string> together(reqs.size());
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < reqs.size(); ++i)
    threads.emplace_back([&, i] { together[i] = stream_text(reqs[i]); });
  for (auto& t : threads) t.join();
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    EXPECT_NE(alone[i], "<failed>");
    EXPECT_EQ(together[i], alone[i]) << "request " << i;
  }
  // They really shared decode calls: fewer calls than tokens decoded.
  auto m = s.client().Get("/metrics");
  ASSERT_TRUE(m);
  EXPECT_LT(metric(m->body, "seam_decode_calls_total"),
            metric(m->body, "seam_decode_tokens_total"));
}

// Beyond the tokens: the logits themselves are batch-invariant (attention.h,
// matmul.cpp), so every streamed logprob alone and among 15 other streams is
// the same float. On the bundled F16 model, whose 16-row decode steps take the
// GEMM, and on llama.cpp's Q4_K_M file, at the level the server picks for each
// (Model::batch_invariant; the next test).
void expect_sixteen_streams_get_the_logprobs_they_get_alone(const std::string& model) {
  SCOPED_TRACE(model);
  ServeProcess s({"-m", model, "--parallel", "16", "-c", "4096"});
  ASSERT_TRUE(s.ok());
  const char* starts[] = {"And God said",        "In the beginning", "The LORD is my",
                          "And it came to pass", "Blessed are the",  "Then Jesus",
                          "And the king",        "Behold, I"};
  std::vector<Json> reqs;
  for (int i = 0; i < 16; ++i) {
    reqs.push_back({{"prompt", std::string(starts[i % 8]) + (i < 8 ? "" : " and the")},
                    {"max_tokens", 16 + i},
                    {"temperature", 0},
                    {"ignore_eos", true},
                    {"logprobs", 1},
                    {"stream", true}});
  }
  auto stream_logprobs = [&](const Json& req) {
    auto c = s.client();
    auto r = c.Post("/v1/completions", req.dump(), "application/json");
    std::vector<double> lps;
    if (!r || r->status != 200) return lps;
    for (const Json& e : sse_events(r->body)) {
      const Json& lp = e["choices"][0]["logprobs"];
      if (lp.is_null()) continue;
      for (const Json& x : lp["token_logprobs"]) lps.push_back(x.get<double>());
    }
    return lps;
  };
  std::vector<std::vector<double>> alone;
  for (const Json& r : reqs) alone.push_back(stream_logprobs(r));
  std::vector<std::vector<double>> together(reqs.size());
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < reqs.size(); ++i)
    threads.emplace_back([&, i] { together[i] = stream_logprobs(reqs[i]); });
  for (auto& t : threads) t.join();
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    EXPECT_EQ(alone[i].size(), static_cast<std::size_t>(16 + i)) << "request " << i;
    EXPECT_EQ(together[i], alone[i]) << "request " << i;
  }
}

TEST(ServeHttp, SixteenConcurrentStreamsGetTheSameLogprobsAsAlone) {
  expect_sixteen_streams_get_the_logprobs_they_get_alone(kKjv);
  expect_sixteen_streams_get_the_logprobs_they_get_alone(kQ4KM);
}

// By default a CPU above AVX2 serves at the avx2 level (its kernels are the
// batch-invariant ones, above) unless the AVX-512 kernels are invariant for
// the model's weights as loaded (Model::batch_invariant: the stories model's
// F32 and the Q4_K_M file's interleaved Q4_K and Q6_K, not that file mapped
// with --mmap, which keeps the file's layout); --no-batch-invariant keeps the
// fastest level. The level is on the "serving" line of stderr.
TEST(ServeHttp, ServesAtTheFastestBatchInvariantLevelUnlessToldOtherwise) {
  if (std::getenv("SEAM_CPU")) GTEST_SKIP() << "SEAM_CPU is set: it decides the level";
  const CpuLevel fastest = std::min(detected_cpu_level(), CpuLevel::Avx512);
  const std::pair<std::vector<std::string>, bool> cases[] = {
      {{"-m", kStories}, true}, {{"-m", kQ4KM}, true}, {{"-m", kQ4KM, "--mmap"}, false}};
  for (const auto& [model_args, invariant_fastest] : cases) {
    for (const bool opt_out : {false, true}) {
      std::vector<std::string> args = model_args;
      if (opt_out) args.push_back("--no-batch-invariant");
      ServeProcess s(args);
      ASSERT_TRUE(s.ok());
      const CpuLevel want =
          opt_out || invariant_fastest ? fastest : std::min(fastest, CpuLevel::Avx2);
      const std::string line = std::string(cpu_level_name(want)) + " kernels)";
      for (int i = 0; i < 250 && s.stderr_text().find("seam: serving") == std::string::npos; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));  // it follows /health's 200
      EXPECT_NE(s.stderr_text().find(line), std::string::npos) << args.back() << "\n"
                                                               << s.stderr_text();
    }
  }
}

TEST(ServeHttp, AbuseLeavesHealthAnswering) {
  ServeProcess s({"-m", kStories, "--max-body", "65536"});
  ASSERT_TRUE(s.ok());
  std::atomic<bool> stop{false};
  std::atomic<int> health_fail{0}, health_ok{0};
  // /health must answer within 2 s throughout.
  std::thread watcher([&] {
    while (!stop.load()) {
      auto c = s.client(2);
      auto r = c.Get("/health");
      if (r && r->status == 200)
        ++health_ok;
      else
        ++health_fail;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
  // Slow clients: connections that send half a request and hold on.
  std::vector<std::unique_ptr<RawSocket>> slow;
  for (int i = 0; i < 24; ++i) {
    slow.push_back(std::make_unique<RawSocket>(s.port()));
    slow.back()->send("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Len");
  }
  const std::string nested = std::string(100000, '[') + std::string(100000, ']');
  const std::vector<std::pair<std::string, std::string>> garbage = {
      {"{\"prompt\": ", "application/json"},
      {nested, "application/json"},
      {"{\"messages\": " + std::string(100000, '[') + "}", "application/json"},
      {std::string(70000, 'x'), "application/json"},
      {"prompt=hello", "application/x-www-form-urlencoded"},
      {"\xff\xfe\x00garbage", "application/json"},
      {"{\"prompt\": \"\\ud800\", \"max_tokens\": -3}", "application/json"},
      {"{\"messages\": [{\"role\": \"user\", \"content\": 7}]}", "application/json"},
  };
  std::atomic<int> not4xx{0};
  std::mutex m;
  std::string bad_example;
  std::vector<std::thread> hammers;
  for (int t = 0; t < 4; ++t) {
    hammers.emplace_back([&, t] {
      auto c = s.client(10);
      for (int i = 0; i < 250; ++i) {
        const auto& [body, type] = garbage[static_cast<std::size_t>(t * 250 + i) % garbage.size()];
        const char* path = i % 2 ? "/v1/chat/completions" : "/v1/completions";
        auto r = c.Post(path, body, type);
        if (!r || r->status < 400 || r->status >= 500) {
          ++not4xx;
          std::lock_guard lock(m);
          bad_example = body.substr(0, 60) + " -> " + (r ? std::to_string(r->status) : "no answer");
        }
      }
    });
  }
  for (auto& h : hammers) h.join();
  stop.store(true);
  watcher.join();
  EXPECT_EQ(not4xx.load(), 0) << bad_example;
  EXPECT_EQ(health_fail.load(), 0);
  EXPECT_GT(health_ok.load(), 0);
  slow.clear();
  int st;
  auto c = s.client();
  post_json(c, "/v1/completions", {{"prompt", "Once"}, {"max_tokens", 3}}, &st);
  EXPECT_EQ(st, 200);
}

TEST(ServeHttp, ToolMessagesReachTheTemplate) {
  const std::string tmpl =
      std::string(SEAM_SHARED_DIR) + "/templates/Qwen-Qwen2.5-7B-Instruct.jinja";
  if (!fs::exists(tmpl)) GTEST_SKIP() << tmpl << " is absent";
  ServeProcess s({"-m", kStories, "--template", tmpl, "-c", "4096"});
  ASSERT_TRUE(s.ok());
  auto c = s.client();
  const Json tools = {
      {{"type", "function"},
       {"function",
        {{"name", "get_weather"},
         {"description", "Weather in a city"},
         {"parameters", {{"type", "object"}, {"properties", {{"city", {{"type", "string"}}}}}}}}}}};
  Json messages = {{{"role", "user"}, {"content", "Weather in Paris?"}}};
  int st;
  const Json first = post_json(
      c, "/v1/chat/completions",
      {{"messages", messages}, {"tools", tools}, {"max_tokens", 4}, {"temperature", 0}}, &st);
  ASSERT_EQ(st, 200) << first.dump();
  messages.push_back(
      {{"role", "assistant"},
       {"content", nullptr},
       {"tool_calls",
        {{{"id", "call_1"},
          {"type", "function"},
          {"function", {{"name", "get_weather"}, {"arguments", "{\"city\":\"Paris\"}"}}}}}}});
  messages.push_back(
      {{"role", "tool"}, {"tool_call_id", "call_1"}, {"content", "sunny, 22 degrees"}});
  const Json second = post_json(
      c, "/v1/chat/completions",
      {{"messages", messages}, {"tools", tools}, {"max_tokens", 4}, {"temperature", 0}}, &st);
  ASSERT_EQ(st, 200) << second.dump();
  // The second prompt is the first plus the rendered call and result (Qwen's
  // template writes the call as <tool_call> JSON and the result in
  // <tool_response>): its tokens are the first's and then some, so the
  // first's prompt is a cached prefix of it.
  const int p1 = first["usage"]["prompt_tokens"], p2 = second["usage"]["prompt_tokens"];
  auto tk = c.Post("/tokenize",
                   Json{{"content",
                         "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
                         "\"Paris\"}}\n</tool_call>"},
                        {"add_special", false}}
                       .dump(),
                   "application/json");
  ASSERT_TRUE(tk);
  const int call_tokens = static_cast<int>(Json::parse(tk->body)["tokens"].size());
  EXPECT_GT(p2, p1 + call_tokens);
  EXPECT_GT(second["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>(), p1 / 2);
}

}  // namespace
}  // namespace seam::test

namespace seam::test {
namespace {

TEST(ServeHttp, ChatHistoryPrefillsOnlyTheNewTurnOnItsOwnSlot) {
  ServeProcess s({"-m", kKjv, "--parallel", "2", "-c", "2048"});
  ASSERT_TRUE(s.ok());
  auto c = s.client();
  auto ask = [&](const Json& messages) {
    return post(c, "/v1/chat/completions",
                {{"messages", messages}, {"max_tokens", 8}, {"temperature", 0}});
  };
  Json a = {{{"role", "user"}, {"content", "In the beginning God created"}}};
  Json b = {{{"role", "user"}, {"content", "Blessed are the meek, for they"}}};
  const Resp a1 = ask(a);
  ASSERT_EQ(a1.status, 200);
  const Resp b1 = ask(b);  // takes the other slot: a's cache survives
  ASSERT_EQ(b1.status, 200);
  a.push_back({{"role", "assistant"}, {"content", a1.body["choices"][0]["message"]["content"]}});
  a.push_back({{"role", "user"}, {"content", "And the earth"}});
  const Resp a2 = ask(a);
  ASSERT_EQ(a2.status, 200);
  // The whole first prompt is reused; only the answer and the new turn are new.
  EXPECT_GE(a2.body["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>(),
            a1.body["usage"]["prompt_tokens"].get<int>());
  auto m = c.Get("/metrics");
  ASSERT_TRUE(m);
  EXPECT_GE(metric(m->body, "seam_prompt_tokens_cached_total"),
            a1.body["usage"]["prompt_tokens"].get<double>());
}

TEST(ServeHttp, TimeoutEndsARequestAndStopDrainsGracefully) {
  ServeProcess s({"-m", kStories, "-c", "65536", "--timeout", "0.3", "--grace", "5"});
  ASSERT_TRUE(s.ok());
  auto c = s.client();
  Json req = kLongStream;
  req.erase("stream");
  const Resp r = post(c, "/v1/completions", req);
  ASSERT_EQ(r.status, 200) << r.body.dump();
  EXPECT_EQ(r.body["choices"][0]["finish_reason"], "length");
  EXPECT_LT(r.body["usage"]["completion_tokens"].get<int>(), 60000);
  auto m = c.Get("/metrics");
  ASSERT_TRUE(m);
  EXPECT_EQ(metric(m->body, "seam_requests_finished_total{reason=\"timeout\"}"), 1);
}

TEST(ServeHttp, SigtermFinishesARunningStreamThenExitsZero) {
  ServeProcess s({"-m", kStories, "-c", "2048", "--grace", "30"});
  ASSERT_TRUE(s.ok());
  RawSocket sock(s.port());
  ASSERT_TRUE(sock.ok());
  Json req = kLongStream;
  req["max_tokens"] = 300;
  ASSERT_TRUE(sock.send(http_post("/v1/completions", req)));
  ASSERT_NE(sock.read_until("data: {").find("200"), std::string::npos);
  std::thread stopper([&] { EXPECT_EQ(s.stop(), 0) << s.stderr_text(); });
  // The running stream still completes: all its tokens, then [DONE].
  const std::string rest = sock.read_until("data: [DONE]", 30000);
  stopper.join();
  EXPECT_NE(rest.find("\"finish_reason\":\"length\""), std::string::npos) << rest.substr(0, 400);
  EXPECT_NE(rest.find("data: [DONE]"), std::string::npos);
  EXPECT_NE(s.stderr_text().find("stopped"), std::string::npos);
}

}  // namespace
}  // namespace seam::test

namespace seam::test {
namespace {

TEST(ServeHttp, DefaultModelAndJsonAccessLog) {
  ServeProcess s({"--log-format", "json", "--parallel", "1"});  // no -m: the bundled model
  ASSERT_TRUE(s.ok());
  {
    auto c = s.client();
    auto m = c.Get("/v1/models");
    ASSERT_TRUE(m);
    EXPECT_EQ(Json::parse(m->body)["data"][0]["id"], "seam-kjv.gguf");
    auto nf = c.Get("/nowhere");
    ASSERT_TRUE(nf);
  }
  EXPECT_EQ(s.stop(), 0);
  // One JSON object per request among the log lines.
  std::istringstream err(s.stderr_text());
  std::string line;
  std::set<std::string> seen;
  while (std::getline(err, line)) {
    if (line.empty() || line[0] != '{') continue;
    const Json j = Json::parse(line);
    for (const char* k : {"time", "remote", "method", "path", "status", "ms"})
      EXPECT_TRUE(j.contains(k)) << line;
    seen.insert(j["path"].get<std::string>() + " " + std::to_string(j["status"].get<int>()));
  }
  EXPECT_TRUE(seen.count("/v1/models 200")) << s.stderr_text();
  EXPECT_TRUE(seen.count("/nowhere 404")) << s.stderr_text();
}

}  // namespace
}  // namespace seam::test
