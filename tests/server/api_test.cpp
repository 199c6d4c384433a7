// The wire format without a socket: stream encoding (tool calls included),
// tool-call extraction, body parsing limits, the error object.
#include <gtest/gtest.h>

#include "server/api.h"
#include "server/serve_process.h"

namespace seam::server {
namespace {

std::vector<Json> events(const std::string& s, bool* done) {
  std::vector<nlohmann::json> plain = test::sse_events(s, done);
  std::vector<Json> out;
  for (auto& e : plain) out.push_back(Json::parse(e.dump()));
  return out;
}

GenerateResult result(std::size_t prompt, std::size_t completion, FinishReason f) {
  GenerateResult r;
  r.prompt_tokens = prompt;
  r.completion_tokens = completion;
  r.cached_prompt_tokens = 2;
  r.finish = f;
  return r;
}

TEST(StreamEncoder, ChatChunksInOpenAIOrder) {
  CompletionRequest r;
  r.chat = true;
  r.include_usage = true;
  StreamEncoder enc(nullptr, r, "m");
  std::string s = enc.start() + enc.text("Hel", std::nullopt) + enc.text("", std::nullopt) +
                  enc.text("lo", std::nullopt) + enc.finish(result(5, 2, FinishReason::Stop));
  bool done = false;
  const auto ev = events(s, &done);
  EXPECT_TRUE(done);
  ASSERT_EQ(ev.size(), 5u);  // role, "Hel", "lo", finish, usage
  EXPECT_EQ(ev[0]["choices"][0]["delta"]["role"], "assistant");
  EXPECT_EQ(ev[1]["choices"][0]["delta"]["content"], "Hel");
  EXPECT_EQ(ev[2]["choices"][0]["delta"]["content"], "lo");
  EXPECT_EQ(ev[3]["choices"][0]["delta"], Json::object());
  EXPECT_EQ(ev[3]["choices"][0]["finish_reason"], "stop");
  EXPECT_TRUE(ev[4]["choices"].empty());
  EXPECT_EQ(ev[4]["usage"]["total_tokens"], 7);
  EXPECT_EQ(ev[4]["usage"]["prompt_tokens_details"]["cached_tokens"], 2);
  for (const Json& e : ev) {
    EXPECT_EQ(e["id"], ev[0]["id"]);
    EXPECT_EQ(e["object"], "chat.completion.chunk");
    EXPECT_EQ(e["model"], "m");
  }
}

TEST(StreamEncoder, ToolCallsStreamAsIndexIdNameThenArgumentFragments) {
  CompletionRequest r;
  r.chat = true;
  r.tool_format = chat::ToolCallFormat::Hermes;
  StreamEncoder enc(nullptr, r, "m");
  const std::string answer =
      "Checking.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
      "\"Z\xc3\xbcrich\", \"days\": 3, \"units\": \"metric\"}}\n</tool_call>\n<tool_call>\n"
      "{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>";
  std::string s = enc.start();
  for (std::size_t i = 0; i < answer.size(); i += 7) s += enc.text(answer.substr(i, 7), {});
  s += enc.finish(result(5, 40, FinishReason::Stop));
  bool done = false;
  const auto ev = events(s, &done);
  EXPECT_TRUE(done);
  std::string content;
  std::map<int, std::string> args, names, ids;
  for (std::size_t i = 1; i + 1 < ev.size(); ++i) {
    const Json& d = ev[i]["choices"][0]["delta"];
    if (d.contains("content")) content += d["content"].get<std::string>();
    if (!d.contains("tool_calls")) continue;
    ASSERT_EQ(d["tool_calls"].size(), 1u);
    const Json& tc = d["tool_calls"][0];
    const int idx = tc["index"];
    if (tc.contains("id")) {
      EXPECT_EQ(tc["type"], "function");
      EXPECT_FALSE(ids.count(idx));
      ids[idx] = tc["id"];
      names[idx] = tc["function"]["name"];
    } else {
      EXPECT_TRUE(ids.count(idx)) << "arguments before the call's id";
    }
    args[idx] += tc["function"]["arguments"].get<std::string>();
  }
  EXPECT_EQ(content, "Checking.");
  ASSERT_EQ(names.size(), 2u);
  EXPECT_EQ(names[0], "get_weather");
  EXPECT_EQ(names[1], "get_time");
  EXPECT_NE(ids[0], ids[1]);
  EXPECT_EQ(Json::parse(args[0]),
            Json::parse(R"({"city": "Zürich", "days": 3, "units": "metric"})"));
  EXPECT_EQ(Json::parse(args[1]), Json::object());
  EXPECT_EQ(ev.back()["choices"][0]["finish_reason"], "tool_calls");
}

TEST(StreamEncoder, CompletionChunksAndErrors) {
  CompletionRequest r;
  StreamEncoder enc(nullptr, r, "m");
  EXPECT_EQ(enc.start(), "");
  bool done = false;
  auto ev = events(enc.text("abc", {}) + enc.finish(result(3, 1, FinishReason::Length)), &done);
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[0]["object"], "text_completion");
  EXPECT_EQ(ev[0]["choices"][0]["text"], "abc");
  EXPECT_EQ(ev[1]["choices"][0]["finish_reason"], "length");
  EXPECT_FALSE(ev[0].contains("usage"));
  ev = events(enc.error("boom"), &done);
  EXPECT_TRUE(done);
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0]["error"]["message"], "boom");
}

TEST(ToolCalls, UnreadableCallsStayInTheContent) {
  const ToolCallsOut t =
      extract_tool_calls("ok <tool_call>{\"name\": </tool_call>", chat::ToolCallFormat::Hermes);
  EXPECT_TRUE(t.calls.empty());
  EXPECT_NE(t.content.find("<tool_call>{\"name\": </tool_call>"), std::string::npos);
}

TEST(ParseBody, RefusesDeepNestingMalformedAndNonObjects) {
  EXPECT_EQ(parse_body("{\"a\": [1, {\"b\": null}]}")["a"][1]["b"], nullptr);
  auto status_of = [](const std::string& body) {
    try {
      parse_body(body);
    } catch (const ApiError& e) {
      return e.status;
    }
    return 200;
  };
  EXPECT_EQ(status_of(std::string(65, '[') + std::string(65, ']')), 400);
  EXPECT_EQ(status_of("{\"a\": " + std::string(100000, '[')), 400);
  EXPECT_EQ(status_of(std::string(64, '[') + std::string(64, ']')), 400);  // not an object
  EXPECT_EQ(status_of("{"), 400);
  EXPECT_EQ(status_of(""), 400);
  EXPECT_EQ(status_of("\"x\""), 400);
}

TEST(ErrorBody, IsOpenAIsShape) {
  const Json j = error_body({404, "nope", "invalid_request_error", "", "not_found"});
  EXPECT_EQ(
      j.dump(),
      R"({"error":{"message":"nope","type":"invalid_request_error","param":null,"code":"not_found"}})");
}

}  // namespace
}  // namespace seam::server
