// Server request fuzzing: one input is an HTTP body, read as the server's
// routes read it (src/server/api.*, no HTTP): parse_body, then the chat,
// completion, tokenize and detokenize parsers on the same value, against the
// stories260K vocabulary and a real chat template with tools. Only ApiError
// (a 4xx/5xx the client sees) or seam::Error may come out; anything else would
// escape the route's handler. Header-only so the libFuzzer binary, the
// standalone driver and the gtest in tests/server share one definition.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "fixtures.h"
#include "seam/error.h"
#include "seam/model.h"
#include "server/api.h"

namespace seam::fuzz {

class ServerRequestTarget {
 public:
  explicit ServerRequestTarget(const std::string& shared = shared_dir()) {
    LoadOptions lo;
    lo.vocab_only = true;
    lo.n_threads = 1;
    model_ = Model::load(shared + "/models/stories260K.gguf", lo);
    ctx_.model = model_.get();
    ctx_.n_ctx = 256;
    ctx_.chat_template = read_file(shared + "/templates/Qwen-Qwen2.5-7B-Instruct.jinja");
    ctx_.chat_stops = {"<|im_end|>"};
  }

  // Throws ApiError or seam::Error for a refused body.
  void run(const std::uint8_t* data, std::size_t size) {
    const server::Json body = server::parse_body({reinterpret_cast<const char*>(data), size});
    attempt([&] { (void)server::parse_chat_request(body, ctx_); });
    attempt([&] { (void)server::parse_completion_request(body, ctx_); });
    attempt([&] { (void)server::parse_tokenize_request(body); });
    attempt([&] { (void)server::parse_detokenize_request(body, model_->info().n_vocab); });
  }

 private:
  template <class F>
  static void attempt(F&& f) {
    try {
      f();
    } catch (const server::ApiError&) {
    } catch (const Error&) {
    }
  }

  std::shared_ptr<const Model> model_;
  server::ApiContext ctx_;
};

// Bodies of each route: sampling fields, tools, logprobs, stream options,
// multi-part content, stop strings, token-id prompts, and broken ones.
inline std::vector<std::string> server_request_seeds() {
  return {
      R"({"model":"m","messages":[{"role":"system","content":"Be brief."},{"role":"user",)"
      R"("content":"Hi"}],"max_tokens":8,"temperature":0.7,"top_p":0.9,"seed":3,"stop":["\n"],)"
      R"("stream":true,"stream_options":{"include_usage":true},"logprobs":true,"top_logprobs":2})",
      R"({"messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"text",)"
      R"("text":"b"}]},{"role":"assistant","content":null,"tool_calls":[{"id":"call_1",)"
      R"("type":"function","function":{"name":"f","arguments":"{\"x\":1}"}}]},{"role":"tool",)"
      R"("tool_call_id":"call_1","content":"42"}],"tools":[{"type":"function","function":)"
      R"({"name":"f","description":"d","parameters":{"type":"object","properties":{"x":)"
      R"({"type":"integer"}}}}}],"tool_choice":"auto","n":1,"frequency_penalty":0.5})",
      R"({"prompt":"Once upon a time","max_tokens":16,"logprobs":3,"echo":false,)"
      R"("presence_penalty":-1,"stop":"the","min_p":0.05,"top_k":40,"repeat_penalty":1.1})",
      R"({"prompt":[1,2,3,400],"max_tokens":-1,"stream":false,"suffix":null})",
      R"({"prompt":["a","b"],"n":2,"best_of":3,"logit_bias":{"5":-100}})",
      R"({"content":"Hello <s> world","add_special":false,"parse_special":true,"with_pieces":true})",
      R"({"tokens":[1,2,3,511,512,-1,9223372036854775807]})",
      R"({"messages":[],"max_completion_tokens":1e30,"response_format":{"type":"json_object"}})",
      R"([1,2,{"a":)",
  };
}

}  // namespace seam::fuzz
