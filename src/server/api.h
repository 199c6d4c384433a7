// The OpenAI wire format: request bodies -> what the engine runs, and what
// it produced -> response bodies and stream chunks. No HTTP here, so every
// rule is testable without a socket.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "chat/tool_call_stream.h"
#include "chat/tool_calls.h"
#include "seam/generate.h"
#include "seam/model.h"

namespace seam::server {

using Json = nlohmann::ordered_json;

inline constexpr const char* kSystemFingerprint = "seam-0.1.0";

// A request the client got wrong (or the server cannot take): the status and
// OpenAI's error object {"message", "type", "param", "code"}.
struct ApiError {
  ApiError(int status_, std::string message_, std::string type_ = "invalid_request_error",
           std::string param_ = "", std::string code_ = "")
      : status(status_),
        message(std::move(message_)),
        type(std::move(type_)),
        param(std::move(param_)),
        code(std::move(code_)) {}
  int status;
  std::string message;
  std::string type;
  std::string param;  // empty: null
  std::string code;   // empty: null
};
Json error_body(const ApiError& e);

// Parses a request body as a JSON object. Refuses malformed JSON, nesting
// deeper than 64 levels and anything that is not an object (400).
Json parse_body(const std::string& body);

// What the server knows when it reads a request.
struct ApiContext {
  const Model* model = nullptr;
  std::uint32_t n_ctx = 0;
  std::string chat_template;            // Jinja source
  std::vector<std::string> chat_stops;  // end-of-turn markers to stop on as text
};

struct CompletionRequest {
  bool chat = false;
  std::vector<Token> prompt;
  GenerateConfig config;  // logprobs >= 0 when asked
  bool stream = false;
  bool include_usage = false;
  bool logprobs = false;  // chat: logprobs true; completions: logprobs given
  std::int32_t top_logprobs = 0;
  // Chat with tools (and tool_choice not "none"): the output is parsed for calls.
  std::optional<chat::ToolCallFormat> tool_format;
};

// Throw ApiError for anything out of the spec or that this server refuses.
CompletionRequest parse_chat_request(const Json& body, const ApiContext& ctx);
CompletionRequest parse_completion_request(const Json& body, const ApiContext& ctx);

// /tokenize: {"content": string, "add_special", "parse_special", "with_pieces": booleans}.
struct TokenizeRequest {
  std::string content;
  bool add_special = true, parse_special = true, with_pieces = false;
};
// Throw ApiError (400) naming the field that is missing or of the wrong type.
TokenizeRequest parse_tokenize_request(const Json& body);
// /detokenize: {"tokens": [ids]}, each id in 0..n_vocab-1.
std::vector<Token> parse_detokenize_request(const Json& body, std::uint32_t n_vocab);

// OpenAI's finish_reason for a generation (timeout and cancel read as "length").
std::string finish_reason(const GenerateResult& r, bool tool_calls);

Json usage_json(const GenerateResult& r);
// Chat logprobs: {"content": [{token, logprob, bytes, top_logprobs}], "refusal": null}.
Json chat_logprobs_json(const Model& model, const std::vector<TokenLogprob>& lps);
// Legacy completions logprobs: {tokens, token_logprobs, top_logprobs, text_offset}.
Json completion_logprobs_json(const Model& model, const std::vector<TokenLogprob>& lps,
                              std::size_t text_offset);

// The calls in a chat answer, as OpenAI's message.tool_calls.
struct ToolCallsOut {
  std::string content;  // text left after the calls (unreadable calls kept as text)
  Json calls = Json::array();
};
ToolCallsOut extract_tool_calls(const std::string& text, chat::ToolCallFormat format);

// Server-sent events in OpenAI's chunk format, one request's worth: one
// shared id; for chat the first delta carries the role; the last chunk
// carries finish_reason; then the usage chunk when asked; then
// "data: [DONE]". With tools, text goes out as soon as it cannot be the start
// of a call (chat::ToolCallStream), and calls as OpenAI streams them:
// delta.tool_calls with index, id and name, then argument fragments as they
// are generated. Each call returns zero or more whole events.
class StreamEncoder {
 public:
  // `model` renders logprob token texts (may be null when logprobs are off).
  StreamEncoder(const Model* model, const CompletionRequest& request, std::string model_id);
  std::string start();
  std::string text(const std::string& text, const std::optional<TokenLogprob>& logprob);
  std::string finish(const GenerateResult& result);
  std::string error(const std::string& message);

 private:
  std::string chunk(Json choices, const Json* usage = nullptr) const;
  Json choice(Json delta, Json logprobs, Json finish) const;
  std::string tool_events(const std::vector<chat::ToolCallEvent>& events, Json logprobs);

  const Model* model_;
  bool chat_, include_usage_, logprobs_;
  std::string id_, model_id_;
  std::int64_t created_;
  std::size_t text_offset_ = 0;
  std::optional<chat::ToolCallStream> tools_;  // chat with tools
};

// "chatcmpl-..." / "cmpl-..." / "call_...": a random id.
std::string random_id(const std::string& prefix);

}  // namespace seam::server
