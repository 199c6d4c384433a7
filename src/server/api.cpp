#include "server/api.h"

#include <cmath>
#include <ctime>
#include <limits>
#include <random>
#include <utility>

#include "seam/chat.h"
#include "seam/error.h"

namespace seam::server {

namespace {

// Per HTTP thread, seeded once from the system's entropy: response ids and
// the seeds of requests that give none.
std::mt19937_64& request_rng() {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  return rng;
}

[[noreturn]] void bad(const std::string& message, const std::string& param = "",
                      const std::string& code = "") {
  throw ApiError{400, message, "invalid_request_error", param, code};
}

const char* type_name(const Json& v) {
  switch (v.type()) {
    case Json::value_t::null:
      return "null";
    case Json::value_t::boolean:
      return "a boolean";
    case Json::value_t::string:
      return "a string";
    case Json::value_t::array:
      return "an array";
    case Json::value_t::object:
      return "an object";
    case Json::value_t::number_float:
      return "a number";
    default:
      return "an integer";
  }
}

[[noreturn]] void wrong_type(const std::string& param, const char* want, const Json& v) {
  bad("'" + param + "' must be " + want + ", got " + type_name(v), param);
}

// Each getter: absent or null -> fallback; wrong type -> 400 naming the field.
bool get_bool(const Json& o, const char* k, bool fallback) {
  auto it = o.find(k);
  if (it == o.end() || it->is_null()) return fallback;
  if (!it->is_boolean()) wrong_type(k, "a boolean", *it);
  return it->get<bool>();
}

double get_number(const Json& o, const char* k, double fallback) {
  auto it = o.find(k);
  if (it == o.end() || it->is_null()) return fallback;
  if (!it->is_number()) wrong_type(k, "a number", *it);
  const double v = it->get<double>();
  if (!std::isfinite(v)) bad("'" + std::string(k) + "' must be finite", k);
  return v;
}

std::int64_t get_int(const Json& o, const char* k, std::int64_t fallback) {
  auto it = o.find(k);
  if (it == o.end() || it->is_null()) return fallback;
  if (it->is_number_integer()) return it->get<std::int64_t>();
  if (it->is_number_unsigned()) {
    const auto u = it->get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
      bad("'" + std::string(k) + "' is too large", k);
    return static_cast<std::int64_t>(u);
  }
  if (it->is_number_float()) {
    const double d = it->get<double>();
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9e15)
      return static_cast<std::int64_t>(d);
  }
  wrong_type(k, "an integer", *it);
}

void range(const char* k, double v, double lo, double hi) {
  if (v < lo || v > hi) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "'%s' must be in [%g, %g], got %g", k, lo, hi, v);
    bad(buf, k);
  }
}

std::string in_quotes(const std::string& s) { return "'" + s + "'"; }

// The sampling fields both endpoints share.
void parse_sampling(const Json& b, const ApiContext& ctx, CompletionRequest& r) {
  GenerateConfig& g = r.config;
  SamplerConfig& s = g.sampler;
  // OpenAI's defaults: temperature 1, top_p 1, no top-k or min-p.
  s.temperature = static_cast<float>(get_number(b, "temperature", 1.0));
  range("temperature", s.temperature, 0, 2);
  s.top_p = static_cast<float>(get_number(b, "top_p", 1.0));
  range("top_p", s.top_p, 0, 1);
  // OpenAI accepts 0 (only the most likely token); the sampler wants > 0.
  if (s.top_p == 0) s.top_p = 1e-6f;
  const std::int64_t top_k = get_int(b, "top_k", 0);
  range("top_k", static_cast<double>(top_k), 0, 1e9);
  s.top_k = static_cast<std::int32_t>(top_k);
  s.min_p = static_cast<float>(get_number(b, "min_p", 0.0));
  range("min_p", s.min_p, 0, 1);
  s.presence_penalty = static_cast<float>(get_number(b, "presence_penalty", 0.0));
  range("presence_penalty", s.presence_penalty, -2, 2);
  s.frequency_penalty = static_cast<float>(get_number(b, "frequency_penalty", 0.0));
  range("frequency_penalty", s.frequency_penalty, -2, 2);
  s.repeat_penalty = static_cast<float>(get_number(b, "repeat_penalty", 1.0));
  if (!(s.repeat_penalty > 0)) bad("'repeat_penalty' must be > 0", "repeat_penalty");
  // Without a seed every request samples afresh, as OpenAI's API does; a
  // seed makes the same request give the same answer.
  if (b.contains("seed") && !b["seed"].is_null()) {
    s.seed = static_cast<std::uint64_t>(get_int(b, "seed", 0));
  } else {
    s.seed = request_rng()();
  }
  if (b.contains("logit_bias") && !b["logit_bias"].is_null()) {
    const Json& lb = b["logit_bias"];
    if (!lb.is_object()) wrong_type("logit_bias", "an object of token id -> bias", lb);
    for (const auto& [key, val] : lb.items()) {
      char* end = nullptr;
      errno = 0;
      const long id = std::strtol(key.c_str(), &end, 10);
      if (key.empty() || *end || errno || id < 0 || id >= ctx.model->info().n_vocab)
        bad("logit_bias key " + in_quotes(key) + " is not a token id of this model (0.." +
                std::to_string(ctx.model->info().n_vocab - 1) + ")",
            "logit_bias");
      if (!val.is_number()) wrong_type("logit_bias", "an object of token id -> number", val);
      const double bias = val.get<double>();
      range("logit_bias", bias, -100, 100);
      // OpenAI: -100 bans the token in practice.
      s.logit_bias.emplace_back(
          static_cast<Token>(id),
          bias <= -100 ? -std::numeric_limits<float>::infinity() : static_cast<float>(bias));
    }
  }
  // max_completion_tokens supersedes max_tokens (OpenAI deprecated the latter).
  std::int64_t max_tokens = get_int(b, "max_tokens", -1);
  const char* max_name = "max_tokens";
  if (b.contains("max_completion_tokens") && !b["max_completion_tokens"].is_null()) {
    max_tokens = get_int(b, "max_completion_tokens", -1);
    max_name = "max_completion_tokens";
  }
  if (max_tokens != -1 || (b.contains(max_name) && !b[max_name].is_null())) {
    if (max_tokens < 1)
      bad("'" + std::string(max_name) + "' must be at least 1, got " + std::to_string(max_tokens),
          max_name);
    g.max_tokens = static_cast<std::int32_t>(std::min<std::int64_t>(max_tokens, 1 << 30));
  } else {
    g.max_tokens = -1;  // until end of generation or the context is full
  }
  if (b.contains("stop") && !b["stop"].is_null()) {
    const Json& st = b["stop"];
    auto add = [&](const Json& v) {
      if (!v.is_string()) wrong_type("stop", "a string or an array of strings", v);
      const std::string text = v.get<std::string>();
      if (text.empty()) bad("'stop' strings must not be empty", "stop");
      g.stop.push_back(text);
    };
    if (st.is_array()) {
      if (st.size() > 16) bad("'stop' takes at most 16 strings", "stop");
      for (const Json& v : st) add(v);
    } else {
      add(st);
    }
  }
  g.ignore_eos = get_bool(b, "ignore_eos", false);  // extension (llama.cpp's name)
  const std::int64_t n = get_int(b, "n", 1);
  if (n != 1) bad("'n' must be 1: this server generates one choice per request", "n");
  r.stream = get_bool(b, "stream", false);
  if (b.contains("stream_options") && !b["stream_options"].is_null()) {
    const Json& so = b["stream_options"];
    if (!so.is_object()) wrong_type("stream_options", "an object", so);
    r.include_usage = get_bool(so, "include_usage", false);
  }
  try {
    validate(s, ctx.model->info().n_vocab);
  } catch (const Error& e) {
    bad(e.what());
  }
}

// `param`: the field the prompt came from ("messages" for a chat, "prompt").
void check_prompt_fits(const CompletionRequest& r, const ApiContext& ctx, const char* param) {
  if (r.prompt.empty()) bad("the prompt is empty", param);
  if (r.prompt.size() >= ctx.n_ctx)
    bad("the prompt has " + std::to_string(r.prompt.size()) + " tokens, but the context holds " +
            std::to_string(ctx.n_ctx) +
            " (with room for at least one generated token): shorten it or start the server "
            "with a larger -c",
        param, "context_length_exceeded");
}

// A message's content: a string, null, or an array of text parts.
Json message_content(const Json& m, std::size_t i) {
  const std::string p = "messages[" + std::to_string(i) + "].content";
  auto it = m.find("content");
  if (it == m.end() || it->is_null()) return nullptr;
  if (it->is_string()) return *it;
  if (!it->is_array()) wrong_type(p, "a string or an array of content parts", *it);
  std::string text;
  for (const Json& part : *it) {
    if (!part.is_object()) wrong_type(p, "an array of content part objects", part);
    auto t = part.find("type");
    if (t == part.end() || !t->is_string()) bad(p + ": every part needs a 'type'", p);
    const std::string type = t->get<std::string>();
    if (type != "text")
      bad(p + ": content part type " + in_quotes(type) + " is not supported (only 'text')", p);
    auto tx = part.find("text");
    if (tx == part.end() || !tx->is_string()) bad(p + ": a text part needs 'text'", p);
    text += tx->get<std::string>();
  }
  return text;
}

Json parse_messages(const Json& b) {
  auto it = b.find("messages");
  if (it == b.end() || it->is_null()) bad("'messages' is required", "messages");
  if (!it->is_array()) wrong_type("messages", "an array", *it);
  if (it->empty()) bad("'messages' must not be empty", "messages");
  Json out = Json::array();
  for (std::size_t i = 0; i < it->size(); ++i) {
    const Json& m = (*it)[i];
    const std::string p = "messages[" + std::to_string(i) + "]";
    if (!m.is_object()) wrong_type(p, "an object", m);
    auto role_it = m.find("role");
    if (role_it == m.end() || !role_it->is_string()) bad(p + ".role is required", p + ".role");
    std::string role = role_it->get<std::string>();
    if (role != "system" && role != "developer" && role != "user" && role != "assistant" &&
        role != "tool")
      bad(p + ".role " + in_quotes(role) +
              " is not one of system, developer, user, assistant, tool",
          p + ".role");
    // Chat templates know "system"; OpenAI's newer "developer" means the same.
    if (role == "developer") role = "system";
    Json msg = {{"role", role}, {"content", message_content(m, i)}};
    if (role == "assistant" && m.contains("tool_calls") && !m["tool_calls"].is_null()) {
      const Json& tcs = m["tool_calls"];
      if (!tcs.is_array()) wrong_type(p + ".tool_calls", "an array", tcs);
      Json calls = Json::array();
      for (const Json& tc : tcs) {
        if (!tc.is_object() || !tc.contains("function") || !tc["function"].is_object() ||
            !tc["function"].contains("name") || !tc["function"]["name"].is_string())
          bad(p + ".tool_calls: each call needs function.name", p + ".tool_calls");
        const Json& fn = tc["function"];
        Json args = Json::object();
        if (fn.contains("arguments")) {
          const Json& a = fn["arguments"];
          if (a.is_string()) {
            // Templates index arguments as a mapping; OpenAI sends a JSON string.
            Json parsed = Json::parse(a.get<std::string>(), nullptr, false);
            args = parsed.is_discarded() ? a : parsed;
          } else if (a.is_object()) {
            args = a;
          } else if (!a.is_null()) {
            wrong_type(p + ".tool_calls[].function.arguments", "a JSON string", a);
          }
        }
        Json call = {{"type", "function"},
                     {"function", {{"name", fn["name"]}, {"arguments", args}}}};
        if (tc.contains("id") && tc["id"].is_string()) call["id"] = tc["id"];
        calls.push_back(std::move(call));
      }
      msg["tool_calls"] = std::move(calls);
    } else if (msg["content"].is_null() && role != "assistant") {
      bad(p + ".content is required for role " + in_quotes(role), p + ".content");
    }
    if (role == "tool") {
      if (m.contains("tool_call_id") && !m["tool_call_id"].is_string())
        wrong_type(p + ".tool_call_id", "a string", m["tool_call_id"]);
      if (m.contains("tool_call_id")) msg["tool_call_id"] = m["tool_call_id"];
    }
    if (m.contains("name") && m["name"].is_string()) msg["name"] = m["name"];
    if (msg["content"].is_null()) msg["content"] = "";
    out.push_back(std::move(msg));
  }
  return out;
}

}  // namespace

Json error_body(const ApiError& e) {
  Json err = {{"message", e.message},
              {"type", e.type},
              {"param", e.param.empty() ? Json(nullptr) : Json(e.param)},
              {"code", e.code.empty() ? Json(nullptr) : Json(e.code)}};
  return {{"error", std::move(err)}};
}

namespace {
struct TooDeep {};
}  // namespace

Json parse_body(const std::string& body) {
  Json j;
  try {
    j = Json::parse(
        body,
        [](int depth, Json::parse_event_t, Json&) {
          if (depth > 64) throw TooDeep{};
          return true;
        },
        true);
  } catch (const TooDeep&) {
    bad("the JSON body nests deeper than 64 levels");
  } catch (const Json::exception& e) {
    bad(std::string("the body is not valid JSON: ") + e.what());
  }
  if (!j.is_object()) bad("the body must be a JSON object");
  return j;
}

CompletionRequest parse_chat_request(const Json& b, const ApiContext& ctx) {
  CompletionRequest r;
  r.chat = true;
  Json messages = parse_messages(b);
  parse_sampling(b, ctx, r);
  r.logprobs = get_bool(b, "logprobs", false);
  const std::int64_t top = get_int(b, "top_logprobs", 0);
  range("top_logprobs", static_cast<double>(top), 0, 20);
  if (b.contains("top_logprobs") && !b["top_logprobs"].is_null() && !r.logprobs)
    bad("'top_logprobs' needs 'logprobs': true", "top_logprobs");
  r.top_logprobs = static_cast<std::int32_t>(top);
  if (r.logprobs) r.config.logprobs = r.top_logprobs;
  if (b.contains("response_format") && !b["response_format"].is_null()) {
    const Json& rf = b["response_format"];
    if (!rf.is_object() || !rf.contains("type") || !rf["type"].is_string())
      bad("'response_format' must be an object with a 'type'", "response_format");
    const std::string type = rf["type"].get<std::string>();
    if (type != "text")
      bad("response_format type " + in_quotes(type) +
              " is not supported: this server has no constrained decoding yet (only 'text')",
          "response_format");
  }

  // Tools: rendered by the template, calls parsed from the answer.
  Json tools;
  std::string choice = "auto";
  if (b.contains("tools") && !b["tools"].is_null()) {
    const Json& t = b["tools"];
    if (!t.is_array()) wrong_type("tools", "an array", t);
    for (std::size_t i = 0; i < t.size(); ++i) {
      const Json& tool = t[i];
      const std::string p = "tools[" + std::to_string(i) + "]";
      if (!tool.is_object()) wrong_type(p, "an object", tool);
      if (!tool.contains("type") || tool["type"] != "function")
        bad(p + ".type must be 'function'", p + ".type");
      if (!tool.contains("function") || !tool["function"].is_object() ||
          !tool["function"].contains("name") || !tool["function"]["name"].is_string())
        bad(p + ".function.name is required", p + ".function");
    }
    if (!t.empty()) tools = t;
  }
  if (b.contains("tool_choice") && !b["tool_choice"].is_null()) {
    const Json& tc = b["tool_choice"];
    if (tc.is_string()) {
      choice = tc.get<std::string>();
      if (choice != "auto" && choice != "none" && choice != "required")
        bad("'tool_choice' must be auto, none, required or a named function", "tool_choice");
    } else if (tc.is_object() && tc.contains("function") && tc["function"].is_object() &&
               tc["function"].contains("name") && tc["function"]["name"].is_string()) {
      const std::string name = tc["function"]["name"].get<std::string>();
      Json only = Json::array();
      if (tools.is_array())
        for (const Json& tool : tools)
          if (tool["function"]["name"] == name) only.push_back(tool);
      if (only.empty())
        bad("tool_choice names function " + in_quotes(name) + ", which is not in 'tools'",
            "tool_choice");
      tools = only;
      choice = "required";
    } else {
      bad("'tool_choice' must be auto, none, required or {\"type\": \"function\", "
          "\"function\": {\"name\": ...}}",
          "tool_choice");
    }
  }
  if (choice == "required" && !tools.is_array())
    bad("tool_choice 'required' needs 'tools'", "tool_choice");
  if (tools.is_array() && choice != "none") {
    r.tool_format = chat::detect_tool_call_format(ctx.chat_template);
    if (!r.tool_format)
      bad("this server's chat template shows no tool-call syntax seam can parse; start it "
          "with --template naming a template that supports tools",
          "tools");
  }

  Json context = Json::object();
  if (auto bos = ctx.model->bos()) context["bos_token"] = ctx.model->detok(*bos, Detok::Text);
  if (auto eos = ctx.model->eos()) context["eos_token"] = ctx.model->detok(*eos, Detok::Text);
  context["add_generation_prompt"] = true;
  context["messages"] = std::move(messages);
  if (tools.is_array() && choice != "none") context["tools"] = tools;
  std::string text;
  try {
    text = render_chat_template(ctx.chat_template, context);
  } catch (const Error& e) {
    // raise_exception in a template is how it says the conversation is invalid.
    bad(std::string("the chat template refused the messages: ") + e.what(), "messages");
  }
  std::string bos_text;
  if (auto bos = ctx.model->bos()) bos_text = ctx.model->detok(*bos, Detok::Text);
  const bool add_bos = !bos_text.empty() && text.rfind(bos_text, 0) != 0;
  r.prompt = ctx.model->tokenize(text, add_bos, true);
  for (const std::string& s : ctx.chat_stops) r.config.stop.push_back(s);
  check_prompt_fits(r, ctx, "messages");
  return r;
}

CompletionRequest parse_completion_request(const Json& b, const ApiContext& ctx) {
  CompletionRequest r;
  auto it = b.find("prompt");
  if (it == b.end() || it->is_null()) bad("'prompt' is required", "prompt");
  const Json* p = &*it;
  if (p->is_array() && p->size() == 1 && ((*p)[0].is_string() || (*p)[0].is_array()))
    p = &(*p)[0];  // a batch of one
  if (p->is_string()) {
    r.prompt = ctx.model->tokenize(p->get<std::string>(), true, false);
  } else if (p->is_array()) {
    for (const Json& t : *p) {
      if (!t.is_number_integer())
        bad("'prompt' must be a string or an array of token ids (one prompt per request)",
            "prompt");
      const auto id = t.get<std::int64_t>();
      if (id < 0 || id >= ctx.model->info().n_vocab)
        bad("prompt token " + std::to_string(id) + " is outside the vocabulary (0.." +
                std::to_string(ctx.model->info().n_vocab - 1) + ")",
            "prompt");
      r.prompt.push_back(static_cast<Token>(id));
    }
  } else {
    wrong_type("prompt", "a string or an array of token ids", *p);
  }
  parse_sampling(b, ctx, r);
  if (get_bool(b, "echo", false)) bad("'echo' is not supported (only false)", "echo");
  if (get_int(b, "best_of", 1) != 1) bad("'best_of' must be 1", "best_of");
  if (b.contains("suffix") && !b["suffix"].is_null())
    bad("'suffix' (fill-in-the-middle) is not supported", "suffix");
  if (b.contains("logprobs") && !b["logprobs"].is_null()) {
    const std::int64_t lp = get_int(b, "logprobs", 0);
    range("logprobs", static_cast<double>(lp), 0, 20);
    r.logprobs = true;
    r.top_logprobs = static_cast<std::int32_t>(lp);
    r.config.logprobs = r.top_logprobs;
  }
  check_prompt_fits(r, ctx, "prompt");
  return r;
}

TokenizeRequest parse_tokenize_request(const Json& body) {
  auto it = body.find("content");
  if (it == body.end() || !it->is_string())
    throw ApiError{400, "'content' (a string) is required", "invalid_request_error", "content"};
  auto flag = [&](const char* k, bool fallback) {
    auto f = body.find(k);
    if (f == body.end() || f->is_null()) return fallback;
    if (!f->is_boolean())
      throw ApiError{400, "'" + std::string(k) + "' must be a boolean", "invalid_request_error", k};
    return f->get<bool>();
  };
  TokenizeRequest r;
  r.content = it->get<std::string>();
  r.add_special = flag("add_special", true);
  r.parse_special = flag("parse_special", true);
  r.with_pieces = flag("with_pieces", false);
  return r;
}

std::vector<Token> parse_detokenize_request(const Json& body, std::uint32_t n_vocab) {
  auto it = body.find("tokens");
  if (it == body.end() || !it->is_array())
    throw ApiError{400, "'tokens' (an array of token ids) is required", "invalid_request_error",
                   "tokens"};
  std::vector<Token> toks;
  for (const Json& t : *it) {
    if (!t.is_number_integer() || t.get<std::int64_t>() < 0 || t.get<std::int64_t>() >= n_vocab)
      throw ApiError{400,
                     "'tokens' must hold token ids in 0.." +
                         std::to_string(static_cast<std::int64_t>(n_vocab) - 1),
                     "invalid_request_error", "tokens"};
    toks.push_back(static_cast<Token>(t.get<std::int64_t>()));
  }
  return toks;
}

std::string finish_reason(const GenerateResult& r, bool tool_calls) {
  if (tool_calls) return "tool_calls";
  return r.finish == FinishReason::Stop ? "stop" : "length";
}

Json usage_json(const GenerateResult& r) {
  return {{"prompt_tokens", r.prompt_tokens},
          {"completion_tokens", r.completion_tokens},
          {"total_tokens", r.prompt_tokens + r.completion_tokens},
          {"prompt_tokens_details", {{"cached_tokens", r.cached_prompt_tokens}}}};
}

namespace {

Json bytes_of(const std::string& s) {
  Json a = Json::array();
  for (unsigned char c : s) a.push_back(static_cast<int>(c));
  return a;
}

}  // namespace

Json chat_logprobs_json(const Model& model, const std::vector<TokenLogprob>& lps) {
  Json content = Json::array();
  for (const TokenLogprob& lp : lps) {
    const std::string text = model.detok(lp.token, Detok::Text);
    Json top = Json::array();
    for (const TokenAlternative& a : lp.top) {
      const std::string t = model.detok(a.token, Detok::Text);
      top.push_back({{"token", t}, {"logprob", a.logprob}, {"bytes", bytes_of(t)}});
    }
    content.push_back({{"token", text},
                       {"logprob", lp.logprob},
                       {"bytes", bytes_of(text)},
                       {"top_logprobs", std::move(top)}});
  }
  return {{"content", std::move(content)}, {"refusal", nullptr}};
}

Json completion_logprobs_json(const Model& model, const std::vector<TokenLogprob>& lps,
                              std::size_t text_offset) {
  Json tokens = Json::array(), token_lps = Json::array(), tops = Json::array(),
       offsets = Json::array();
  for (const TokenLogprob& lp : lps) {
    const std::string text = model.detok(lp.token, Detok::Text);
    tokens.push_back(text);
    token_lps.push_back(lp.logprob);
    Json top = Json::object();
    for (const TokenAlternative& a : lp.top) top[model.detok(a.token, Detok::Text)] = a.logprob;
    tops.push_back(std::move(top));
    offsets.push_back(text_offset);
    text_offset += model.detok(lp.token, Detok::Plain).size();
  }
  return {{"tokens", std::move(tokens)},
          {"token_logprobs", std::move(token_lps)},
          {"top_logprobs", std::move(tops)},
          {"text_offset", std::move(offsets)}};
}

ToolCallsOut extract_tool_calls(const std::string& text, chat::ToolCallFormat format) {
  ToolCallsOut out;
  const chat::ParsedOutput parsed = chat::parse_tool_calls(text, format);
  out.content = parsed.content;
  // A call that could not be read stays visible as text, never dropped.
  for (const chat::ToolCallError& e : parsed.errors)
    out.content += (out.content.empty() ? "" : "\n") + e.text;
  for (const chat::ToolCall& c : parsed.calls) {
    out.calls.push_back(
        {{"id", c.id.empty() ? random_id("call_") : c.id},
         {"type", "function"},
         {"function",
          {{"name", c.name},
           {"arguments", c.arguments.dump(-1, ' ', false, Json::error_handler_t::replace)}}}});
  }
  return out;
}

StreamEncoder::StreamEncoder(const Model* model, const CompletionRequest& r, std::string model_id)
    : model_(model),
      chat_(r.chat),
      include_usage_(r.include_usage),
      logprobs_(r.logprobs),
      id_(random_id(r.chat ? "chatcmpl-" : "cmpl-")),
      model_id_(std::move(model_id)),
      created_(static_cast<std::int64_t>(std::time(nullptr))) {
  if (r.tool_format) tools_.emplace(*r.tool_format);
}

std::string StreamEncoder::chunk(Json choices, const Json* usage) const {
  Json c = {{"id", id_},
            {"object", chat_ ? "chat.completion.chunk" : "text_completion"},
            {"created", created_},
            {"model", model_id_},
            {"system_fingerprint", kSystemFingerprint},
            {"choices", std::move(choices)}};
  if (include_usage_) c["usage"] = usage ? *usage : Json(nullptr);
  return "data: " + c.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n\n";
}

Json StreamEncoder::choice(Json delta, Json logprobs, Json finish) const {
  if (chat_)
    return Json::array({{{"index", 0},
                         {"delta", std::move(delta)},
                         {"logprobs", std::move(logprobs)},
                         {"finish_reason", std::move(finish)}}});
  return Json::array({{{"text", delta.is_string() ? delta : Json("")},
                       {"index", 0},
                       {"logprobs", std::move(logprobs)},
                       {"finish_reason", std::move(finish)}}});
}

std::string StreamEncoder::start() {
  if (!chat_) return "";
  return chunk(
      choice({{"role", "assistant"}, {"content", ""}, {"refusal", nullptr}}, nullptr, nullptr));
}

std::string StreamEncoder::tool_events(const std::vector<chat::ToolCallEvent>& events, Json lp) {
  std::string out;
  for (const chat::ToolCallEvent& e : events) {
    Json delta;
    if (e.kind == chat::ToolCallEvent::Kind::Content) {
      delta = {{"content", e.text}};
    } else if (e.kind == chat::ToolCallEvent::Kind::Begin) {
      delta = {
          {"tool_calls", Json::array({{{"index", e.index},
                                       {"id", e.id.empty() ? random_id("call_") : e.id},
                                       {"type", "function"},
                                       {"function", {{"name", e.name}, {"arguments", ""}}}}})}};
    } else {
      delta = {{"tool_calls",
                Json::array({{{"index", e.index}, {"function", {{"arguments", e.text}}}}})}};
    }
    out += chunk(choice(std::move(delta), std::exchange(lp, nullptr), nullptr));
  }
  // Logprobs of tokens still held (a possible call) go out on their own.
  if (!lp.is_null()) out += chunk(choice({{"content", ""}}, std::move(lp), nullptr));
  return out;
}

std::string StreamEncoder::text(const std::string& text,
                                const std::optional<TokenLogprob>& logprob) {
  Json lp = nullptr;
  if (logprobs_ && logprob && model_) {
    const std::vector<TokenLogprob> one{*logprob};
    lp = chat_ ? chat_logprobs_json(*model_, one)
               : completion_logprobs_json(*model_, one, text_offset_);
  }
  if (tools_) return tool_events(tools_->feed(text), std::move(lp));
  if (text.empty() && lp.is_null()) return "";
  text_offset_ += text.size();
  return chunk(choice(chat_ ? Json{{"content", text}} : Json(text), std::move(lp), nullptr));
}

std::string StreamEncoder::finish(const GenerateResult& g) {
  std::string out;
  bool calls = false;
  if (tools_) {
    out += tool_events(tools_->finish(), nullptr);
    calls = tools_->calls() > 0;
  }
  out += chunk(choice(chat_ ? Json::object() : Json(""), nullptr, finish_reason(g, calls)));
  if (include_usage_) {
    const Json usage = usage_json(g);
    out += chunk(Json::array(), &usage);
  }
  out += "data: [DONE]\n\n";
  return out;
}

std::string StreamEncoder::error(const std::string& message) {
  return "data: " +
         error_body({500, message, "server_error"})
             .dump(-1, ' ', false, Json::error_handler_t::replace) +
         "\n\ndata: [DONE]\n\n";
}

std::string random_id(const std::string& prefix) {
  std::mt19937_64& rng = request_rng();
  static const char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  std::string id = prefix;
  for (int i = 0; i < 24; ++i) id += kAlphabet[rng() % (sizeof kAlphabet - 1)];
  return id;
}

}  // namespace seam::server
