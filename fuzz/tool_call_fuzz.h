// Tool-call parsing fuzzing: any bytes, as model output, through every
// family's parser. Whatever comes back must serialise as JSON (valid UTF-8,
// objects as arguments); only seam::Error may be thrown. Header-only so the
// libFuzzer binary, the standalone driver and the gtest in tests/chat share it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "chat/tool_calls.h"

namespace seam::fuzz {

inline void tool_call_one_input(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  for (const auto f : {chat::ToolCallFormat::Hermes, chat::ToolCallFormat::Llama3,
                       chat::ToolCallFormat::Mistral, chat::ToolCallFormat::Gemma}) {
    const chat::ParsedOutput out = chat::parse_tool_calls(text, f);
    nlohmann::ordered_json j = {{"content", out.content}};
    for (const auto& c : out.calls) {
      if (!c.arguments.is_object()) {
        std::fprintf(stderr, "tool-call fuzz: arguments are not an object\n");
        std::abort();
      }
      j["calls"].push_back({{"name", c.name}, {"id", c.id}, {"arguments", c.arguments}});
    }
    for (const auto& e : out.errors) j["errors"].push_back({{"m", e.message}, {"t", e.text}});
    (void)j.dump();  // throws (and the fuzzer reports it) on invalid UTF-8
  }
}

// Seeds: a call of every family's syntax, well formed and broken.
inline std::vector<std::string> tool_call_seeds() {
  return {
      "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
      "\"Paris\", \"days\": 2}}\n</tool_call>",
      "<tool_call>\n<function=search>\n<parameter=query>\nbest pizza\n</parameter>\n"
      "<parameter=limit>\n5\n</parameter>\n</function>\n</tool_call>",
      "<|python_tag|>brave_search.call(query=\"seam runtime\", n=3)<|eom_id|>",
      "{\"name\": \"f\", \"parameters\": {\"a\": [1, 2, {\"b\": null}]}}",
      "[TOOL_CALLS][{\"name\": \"f\", \"arguments\": {\"x\": \"\\u00e9\"}, \"id\": \"abc123def\"}]",
      "[TOOL_CALLS]f[ARGS]{\"x\": 1}",
      "```tool_code\nprint(f(x=1, y='a'))\n```",
      "<tool_call>{\"name\": \"a\", \"arguments\": {\"x\": }</tool_call> ok <tool_call>{\"name\"",
  };
}

}  // namespace seam::fuzz
