// Tool calls read while streaming: text released early, calls as name then
// argument fragments, and the same calls and content as parse_tool_calls on
// the whole answer however the answer is cut into pieces.
#include <gtest/gtest.h>

#include <map>
#include <random>

#include "../../fuzz/tool_call_fuzz.h"
#include "chat/tool_call_stream.h"

namespace seam::chat {
namespace {

using Json = nlohmann::ordered_json;
using Kind = ToolCallEvent::Kind;

struct Collected {
  std::string content;
  std::vector<std::string> names, ids, args;
};

void collect(const std::vector<ToolCallEvent>& events, Collected& c) {
  for (const ToolCallEvent& e : events) {
    if (e.kind == Kind::Content) {
      c.content += e.text;
    } else if (e.kind == Kind::Begin) {
      ASSERT_EQ(e.index, c.names.size()) << "calls begin in order, each once";
      c.names.push_back(e.name);
      c.ids.push_back(e.id);
      c.args.emplace_back();
    } else {
      ASSERT_LT(e.index, c.args.size()) << "arguments before their call began";
      c.args[e.index] += e.text;
    }
  }
}

// Streams `text` in pieces of `step` bytes.
Collected stream(std::string_view text, ToolCallFormat f, std::size_t step) {
  ToolCallStream s(f);
  Collected c;
  for (std::size_t i = 0; i < text.size(); i += step) collect(s.feed(text.substr(i, step)), c);
  collect(s.finish(), c);
  return c;
}

const ToolCallFormat kFormats[] = {ToolCallFormat::Hermes, ToolCallFormat::Llama3,
                                   ToolCallFormat::Mistral, ToolCallFormat::Gemma};

// Answers whose content (if any) comes before the calls, in every format.
const std::pair<ToolCallFormat, const char*> kAnswers[] = {
    {ToolCallFormat::Hermes,
     "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
     "\"Z\xc3\xbcrich\", \"days\": 2, \"tags\": [\"a}\", {\"b\": \"\\\"]\"}]}}\n</tool_call>\n"
     "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>"},
    {ToolCallFormat::Hermes,
     "<tool_call>\n{\"name\": \"f\", \"arguments\": \"{\\\"x\\\": 1}\"}\n</tool_call>"},
    {ToolCallFormat::Hermes,
     "<tool_call>\n<function=search>\n<parameter=query>\nbest pizza\n</parameter>\n"
     "</function>\n</tool_call>"},
    {ToolCallFormat::Hermes, "No call here, only a < b and <tool"},
    {ToolCallFormat::Llama3, "{\"name\": \"f\", \"parameters\": {\"a\": [1, 2, {\"b\": null}]}}"},
    {ToolCallFormat::Llama3,
     "<|python_tag|>{\"name\": \"f\", \"parameters\": {\"a\": 1}}; {\"name\": \"g\", "
     "\"parameters\": {}}"},
    {ToolCallFormat::Llama3, "<|python_tag|>brave_search.call(query=\"seam\", n=3)"},
    {ToolCallFormat::Llama3, "  {\"answer\": 42} is plain JSON"},
    {ToolCallFormat::Mistral,
     "Sure. [TOOL_CALLS][{\"name\": \"f\", \"arguments\": {\"x\": \"\\u00e9\"}, \"id\": "
     "\"abc123def\"}, {\"id\": \"xyz987abc\", \"name\": \"g\", \"arguments\": {\"y\": [1]}}]"},
    {ToolCallFormat::Mistral, "[TOOL_CALLS]f[ARGS]{\"x\": 1}"},
    {ToolCallFormat::Gemma, "Here:\n```tool_code\nf(x=1, y='a')\n```"},
    {ToolCallFormat::Gemma, "```json\n{\"name\": \"f\", \"parameters\": {\"q\": \"`\"}}\n```"},
    {ToolCallFormat::Gemma, "Use ```python\nprint(1)\n``` to print."},
};

TEST(ToolCallStream, SameCallsAndContentAsTheParserInAnyPieces) {
  for (const auto& [format, answer] : kAnswers) {
    const ParsedOutput want = parse_tool_calls(answer, format);
    ASSERT_TRUE(want.errors.empty()) << answer;
    for (std::size_t step : {1, 2, 3, 5, 8, 13, 1000}) {
      SCOPED_TRACE(std::string(answer) + " / pieces of " + std::to_string(step));
      const Collected got = stream(answer, format, step);
      EXPECT_EQ(got.content, want.content);
      ASSERT_EQ(got.names.size(), want.calls.size());
      for (std::size_t i = 0; i < want.calls.size(); ++i) {
        EXPECT_EQ(got.names[i], want.calls[i].name);
        if (!got.ids[i].empty()) {
          EXPECT_EQ(got.ids[i], want.calls[i].id);
        }
        const Json args = Json::parse(got.args[i], nullptr, false);
        EXPECT_EQ(args, want.calls[i].arguments) << got.args[i];
      }
    }
  }
}

TEST(ToolCallStream, TextBeforeACallAndArgumentsGoOutAsTheyArrive) {
  ToolCallStream s(ToolCallFormat::Hermes);
  Collected c;
  collect(s.feed("Let me check the weather"), c);
  EXPECT_EQ(c.content, "Let me check the weather");  // before the call is even begun
  collect(s.feed(" for you. <tool_"), c);
  EXPECT_EQ(c.content, "Let me check the weather for you.");  // "<tool_" may start a call
  collect(s.feed("call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Par"), c);
  ASSERT_EQ(c.names, std::vector<std::string>{"get_weather"});
  EXPECT_EQ(c.args[0], "{\"city\": \"Par");  // a fragment before the call is complete
  collect(s.feed("is\"}}\n</tool_call>"), c);
  EXPECT_EQ(c.args[0], "{\"city\": \"Paris\"}");
  const std::size_t before = c.args[0].size();
  collect(s.finish(), c);
  EXPECT_EQ(c.args[0].size(), before);  // nothing sent twice
  EXPECT_EQ(s.calls(), 1u);
  EXPECT_EQ(c.content, "Let me check the weather for you.");
}

TEST(ToolCallStream, AMarkerPrefixThatGoesNowhereIsReleased) {
  ToolCallStream s(ToolCallFormat::Mistral);
  Collected c;
  collect(s.feed("an array [TOOL"), c);
  EXPECT_EQ(c.content, "an array");
  collect(s.feed("S] of tools"), c);
  EXPECT_EQ(c.content, "an array [TOOLS] of tools");
  collect(s.finish(), c);
  EXPECT_TRUE(c.names.empty());
  EXPECT_EQ(s.calls(), 0u);
}

TEST(ToolCallStream, CallsNotWrittenAsJsonComeWholeAtTheEnd) {
  ToolCallStream s(ToolCallFormat::Gemma);
  Collected c;
  collect(s.feed("```tool_code\nget_time(zone='UTC')"), c);
  EXPECT_TRUE(c.names.empty());
  collect(s.feed("\n```"), c);
  collect(s.finish(), c);
  ASSERT_EQ(c.names, std::vector<std::string>{"get_time"});
  EXPECT_EQ(Json::parse(c.args[0]), Json::parse(R"({"zone": "UTC"})"));
}

TEST(ToolCallStream, CutOffCallStaysVisibleAsContent) {
  const std::string answer = "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"x\": 1";
  const Collected c = stream(answer, ToolCallFormat::Hermes, 4);
  EXPECT_EQ(c.names.size(), 1u);  // already begun when it was cut
  EXPECT_NE(c.content.find("{\"name\": \"f\""), std::string::npos);
}

// Mutated answers of every family: no crash, events serialise, and where the
// parser reads the whole answer without an error the streamed calls are its
// calls (a call begun from JSON that later proves unreadable is the one
// documented exception: it is also sent as content).
TEST(ToolCallStream, MutatedAnswersAgreeWithTheParser) {
  const auto seeds = fuzz::tool_call_seeds();
  std::mt19937 rng(0x5eed);
  const std::string alphabet = "{}[]\",:; <>/\n`_abcfnmegrtx[TOOL_CALLS]<tool_call>";
  for (int i = 0; i < 4000; ++i) {
    std::string s = seeds[static_cast<std::size_t>(i) % seeds.size()];
    const int edits = 1 + static_cast<int>(rng() % 3);
    for (int e = 0; e < edits && !s.empty(); ++e) {
      const std::size_t at = rng() % s.size();
      switch (rng() % 3) {
        case 0:
          s.erase(at, 1 + rng() % 4);
          break;
        case 1:
          s.insert(at, 1, alphabet[rng() % alphabet.size()]);
          break;
        default:
          s[at] = alphabet[rng() % alphabet.size()];
      }
    }
    for (const ToolCallFormat f : kFormats) {
      const ParsedOutput want = parse_tool_calls(s, f);
      const Collected got = stream(s, f, 1 + rng() % 9);
      Json all = {{"content", got.content}, {"names", got.names}, {"args", got.args}};
      EXPECT_NO_THROW((void)all.dump()) << s;
      if (!want.errors.empty()) continue;
      // The parser's calls, in order, among the streamed ones; a streamed
      // call the parser did not take was unreadable and shows as content.
      std::size_t k = 0;
      for (std::size_t g = 0; g < got.names.size() && k < want.calls.size(); ++g) {
        if (got.names[g] == want.calls[k].name &&
            Json::parse(got.args[g], nullptr, false) == want.calls[k].arguments)
          ++k;
      }
      EXPECT_EQ(k, want.calls.size()) << s;
      if (got.names.size() > want.calls.size()) {
        EXPECT_FALSE(got.content.empty()) << s;
      }
    }
  }
}

}  // namespace
}  // namespace seam::chat
