// Tool-call parsing per model family: calls found, content kept, and
// malformed calls reported as errors (never dropped).
#include <gtest/gtest.h>

#include "chat/tool_calls.h"

namespace seam::chat {
namespace {

using Json = nlohmann::ordered_json;

TEST(ToolCalls, HermesSingleAndParallelCalls) {
  const auto r = parse_tool_calls(
      "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
      "\"Paris\", \"days\": 2}}\n</tool_call>\n<tool_call>\n{\"name\": \"get_time\", "
      "\"arguments\": \"{\\\"tz\\\": \\\"CET\\\"}\"}\n</tool_call>",
      ToolCallFormat::Hermes);
  ASSERT_EQ(r.calls.size(), 2u);
  EXPECT_TRUE(r.errors.empty());
  EXPECT_EQ(r.content, "Let me check.");
  EXPECT_EQ(r.calls[0].name, "get_weather");
  EXPECT_EQ(r.calls[0].arguments, Json::parse(R"({"city": "Paris", "days": 2})"));
  EXPECT_EQ(r.calls[1].name, "get_time");  // string arguments are decoded
  EXPECT_EQ(r.calls[1].arguments, Json::parse(R"({"tz": "CET"})"));
}

TEST(ToolCalls, HermesMalformedCallsAreErrors) {
  const auto r = parse_tool_calls(
      "<tool_call>{\"name\": \"a\", \"arguments\": {\"x\": }</tool_call> ok "
      "<tool_call>{\"arguments\": {}}</tool_call><tool_call>{\"name\": \"b\"",
      ToolCallFormat::Hermes);
  EXPECT_TRUE(r.calls.empty());
  ASSERT_EQ(r.errors.size(), 3u);
  EXPECT_NE(r.errors[0].message.find("invalid JSON"), std::string::npos);
  EXPECT_EQ(r.errors[0].text, "<tool_call>{\"name\": \"a\", \"arguments\": {\"x\": }</tool_call>");
  EXPECT_NE(r.errors[1].message.find("name"), std::string::npos);
  EXPECT_NE(r.errors[2].message.find("unclosed"), std::string::npos);
  EXPECT_EQ(r.content, "ok");
}

TEST(ToolCalls, QwenCoderXmlCalls) {
  const auto r = parse_tool_calls(
      "<tool_call>\n<function=search>\n<parameter=query>\nbest pizza\n</parameter>\n"
      "<parameter=limit>\n5\n</parameter>\n</function>\n</tool_call>",
      ToolCallFormat::Hermes);
  ASSERT_EQ(r.calls.size(), 1u);
  EXPECT_EQ(r.calls[0].name, "search");
  EXPECT_EQ(r.calls[0].arguments, Json::parse(R"({"query": "best pizza", "limit": 5})"));
  EXPECT_EQ(r.content, "");
}

TEST(ToolCalls, PlainTextHasNoCalls) {
  for (auto f : {ToolCallFormat::Hermes, ToolCallFormat::Llama3, ToolCallFormat::Mistral,
                 ToolCallFormat::Gemma}) {
    const auto r = parse_tool_calls("  The capital of France is Paris.\n", f);
    EXPECT_TRUE(r.calls.empty());
    EXPECT_TRUE(r.errors.empty());
    EXPECT_EQ(r.content, "The capital of France is Paris.");
  }
}

TEST(ToolCalls, Llama3JsonAndPythonTag) {
  auto r = parse_tool_calls(
      "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Oslo\"}}<|eot_id|>",
      ToolCallFormat::Llama3);
  ASSERT_EQ(r.calls.size(), 1u);
  EXPECT_EQ(r.calls[0].name, "get_weather");
  EXPECT_EQ(r.calls[0].arguments, Json::parse(R"({"city": "Oslo"})"));
  EXPECT_EQ(r.content, "");

  r = parse_tool_calls("<|python_tag|>brave_search.call(query=\"seam runtime\", n=3)<|eom_id|>",
                       ToolCallFormat::Llama3);
  ASSERT_EQ(r.calls.size(), 1u);
  EXPECT_EQ(r.calls[0].name, "brave_search");
  EXPECT_EQ(r.calls[0].arguments, Json::parse(R"({"query": "seam runtime", "n": 3})"));

  r = parse_tool_calls(
      "<|python_tag|>wolfram_alpha.call(query=\"a; b\")\nbrave_search.call(query=\"c\")",
      ToolCallFormat::Llama3);
  ASSERT_EQ(r.calls.size(), 2u);
  EXPECT_EQ(r.calls[0].arguments, Json::parse(R"({"query": "a; b"})"));
  EXPECT_EQ(r.calls[1].name, "brave_search");
  r = parse_tool_calls(
      "<|python_tag|>{\"name\": \"a\", \"parameters\": {}}; {\"name\": \"b\", "
      "\"parameters\": {\"k\": [1, 2]}}",
      ToolCallFormat::Llama3);
  ASSERT_EQ(r.calls.size(), 2u);
  EXPECT_EQ(r.calls[1].arguments, Json::parse(R"({"k": [1, 2]})"));

  // A JSON answer that is not a call stays content; a broken call is an error.
  r = parse_tool_calls("{\"answer\": 42}", ToolCallFormat::Llama3);
  EXPECT_TRUE(r.calls.empty());
  EXPECT_TRUE(r.errors.empty());
  EXPECT_EQ(r.content, "{\"answer\": 42}");
  r = parse_tool_calls("{\"name\": \"get_weather\", \"parameters\": {\"city\": ",
                       ToolCallFormat::Llama3);
  EXPECT_TRUE(r.calls.empty());
  ASSERT_EQ(r.errors.size(), 1u);
  r = parse_tool_calls("<|python_tag|>search(query=unquoted)", ToolCallFormat::Llama3);
  EXPECT_TRUE(r.calls.empty());
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].text, "search(query=unquoted)");
}

TEST(ToolCalls, MistralArrayAndArgsForms) {
  auto r = parse_tool_calls(
      "Sure.[TOOL_CALLS][{\"name\": \"add\", \"arguments\": {\"a\": 1, \"b\": 2}, \"id\": "
      "\"abc123xyz\"}, {\"name\": \"neg\", \"arguments\": {\"a\": 3}}]</s>",
      ToolCallFormat::Mistral);
  ASSERT_EQ(r.calls.size(), 2u);
  EXPECT_EQ(r.content, "Sure.");
  EXPECT_EQ(r.calls[0].id, "abc123xyz");
  EXPECT_EQ(r.calls[1].name, "neg");

  r = parse_tool_calls(
      "[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Rome\"}[TOOL_CALLS]get_time[ARGS]{}",
      ToolCallFormat::Mistral);
  ASSERT_EQ(r.calls.size(), 2u);
  EXPECT_EQ(r.calls[0].name, "get_weather");
  EXPECT_EQ(r.calls[0].arguments, Json::parse(R"({"city": "Rome"})"));
  EXPECT_EQ(r.calls[1].name, "get_time");

  r = parse_tool_calls("[TOOL_CALLS][{\"name\": \"add\", \"arguments\": {\"a\": 1}",
                       ToolCallFormat::Mistral);
  EXPECT_TRUE(r.calls.empty());
  ASSERT_EQ(r.errors.size(), 1u);
  r = parse_tool_calls("[TOOL_CALLS]get_weather[ARGS]{\"city\": ", ToolCallFormat::Mistral);
  EXPECT_TRUE(r.calls.empty());
  ASSERT_EQ(r.errors.size(), 1u);
}

TEST(ToolCalls, GemmaToolCodeAndJson) {
  auto r = parse_tool_calls(
      "I'll look that up.\n```tool_code\nget_weather(city='Lisbon', units=\"metric\", "
      "days=[1, 2], exact=True)\n```",
      ToolCallFormat::Gemma);
  ASSERT_EQ(r.calls.size(), 1u);
  EXPECT_EQ(r.content, "I'll look that up.");
  EXPECT_EQ(r.calls[0].name, "get_weather");
  EXPECT_EQ(r.calls[0].arguments,
            Json::parse(R"({"city": "Lisbon", "units": "metric", "days": [1, 2], "exact": true})"));

  r = parse_tool_calls("```json\n{\"name\": \"f\", \"parameters\": {\"x\": 1}}\n```",
                       ToolCallFormat::Gemma);
  ASSERT_EQ(r.calls.size(), 1u);
  EXPECT_EQ(r.calls[0].name, "f");

  // A JSON code block that is an answer, not a call, stays in the content.
  r = parse_tool_calls("Here:\n```json\n{\"a\": 1}\n```", ToolCallFormat::Gemma);
  EXPECT_TRUE(r.calls.empty());
  EXPECT_EQ(r.content, "Here:\n```json\n{\"a\": 1}\n```");

  r = parse_tool_calls("```tool_code\nget_weather(city='Lisbon'\n```", ToolCallFormat::Gemma);
  EXPECT_TRUE(r.calls.empty());
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].text, "get_weather(city='Lisbon'");
  r = parse_tool_calls("```tool_code\nf(a=1)", ToolCallFormat::Gemma);
  EXPECT_TRUE(r.calls.empty());
  ASSERT_EQ(r.errors.size(), 1u);
}

TEST(ToolCalls, DetectsFormatFromTemplates) {
  EXPECT_EQ(detect_tool_call_format("{{ '<tool_call>' }}"), ToolCallFormat::Hermes);
  EXPECT_EQ(detect_tool_call_format("[TOOL_CALLS]"), ToolCallFormat::Mistral);
  EXPECT_EQ(detect_tool_call_format("<|python_tag|>"), ToolCallFormat::Llama3);
  EXPECT_EQ(detect_tool_call_format("```tool_code"), ToolCallFormat::Gemma);
  EXPECT_EQ(detect_tool_call_format("{{ messages }}"), std::nullopt);
}

// Model output may hold any bytes (issue 14, 3.7): what callers get is valid
// UTF-8, so their json::dump() cannot throw.
TEST(ToolCalls, InvalidUtf8InArgumentsIsReplaced) {
  const std::string bad = "\xd0";  // a lead byte with nothing after it
  const auto r = parse_tool_calls("<tool_call>\n<function=f" + bad + ">\n<parameter=p>\na" + bad +
                                      "b\n</parameter>\n<parameter=k" + bad + ">\n" + bad +
                                      "\n</parameter>\n</function>\n</tool_call>" + bad,
                                  ToolCallFormat::Hermes);
  ASSERT_EQ(r.calls.size(), 1u) << (r.errors.empty() ? "" : r.errors[0].message);
  EXPECT_NO_THROW((void)r.calls[0].arguments.dump());
  EXPECT_EQ(r.calls[0].name, "f\xEF\xBF\xBD");
  EXPECT_EQ(r.calls[0].arguments["p"],
            "a\xEF\xBF\xBD"
            "b");
  EXPECT_EQ(r.calls[0].arguments["k\xEF\xBF\xBD"], "\xEF\xBF\xBD");
  EXPECT_EQ(r.content, "\xEF\xBF\xBD");
  // Every family, on arbitrary bytes: the results always serialise.
  for (const auto f : {ToolCallFormat::Hermes, ToolCallFormat::Llama3, ToolCallFormat::Mistral,
                       ToolCallFormat::Gemma}) {
    const auto q = parse_tool_calls(
        "[TOOL_CALLS][{\"name\": \"x\xff\", \"arguments\": {\"v\": \"\xc3\"}}] "
        "<|python_tag|>f.call(q=\"\xe2\x82\")<tool_call>{\"name\": \"\xed\xa0\x80\"}",
        f);
    auto dump_all = [&] {
      for (const auto& c : q.calls) (void)Json::object({{"n", c.name}, {"a", c.arguments}}).dump();
      for (const auto& e : q.errors) (void)Json::object({{"m", e.message}, {"t", e.text}}).dump();
      (void)Json(q.content).dump();
    };
    EXPECT_NO_THROW(dump_all());
  }
}

}  // namespace
}  // namespace seam::chat
