// Tool-call parsing: a model's raw output -> structured calls + remaining text.
//
// Each model family writes calls its own way; the parser for a family finds
// every call, keeps the text around them as content, and reports a call it
// cannot read (bad JSON, an unclosed tag, a missing name) as an error entry
// carrying the raw text, so nothing is dropped silently.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace seam::chat {

enum class ToolCallFormat {
  Hermes,   // Hermes / Qwen: <tool_call>{"name", "arguments"}</tool_call>, also Qwen3-Coder's
            // <tool_call><function=NAME><parameter=P>V</parameter></function></tool_call>
  Llama3,   // {"name", "parameters"} as the whole reply, or after <|python_tag|>
            // (JSON, or a built-in tool as name.call(k="v"))
  Mistral,  // [TOOL_CALLS][{"name", "arguments", "id"}] or [TOOL_CALLS]name[ARGS]{...}
  Gemma,    // ```tool_code\nname(k=v)\n``` blocks, ```json {"name", ...}``` blocks, or bare JSON
};

struct ToolCall {
  std::string name;
  nlohmann::ordered_json arguments = nlohmann::ordered_json::object();  // always an object
  std::string id;                                                       // when the model gave one
};

struct ToolCallError {
  std::string message;  // what is wrong, e.g. "invalid JSON in <tool_call>: ..."
  std::string text;     // the raw text of the call that could not be read
};

struct ParsedOutput {
  std::string content;  // the output with every call (readable or not) removed, trimmed
  std::vector<ToolCall> calls;
  std::vector<ToolCallError> errors;
};

ParsedOutput parse_tool_calls(std::string_view output, ToolCallFormat format);

// The format a chat template's tool-call instructions imply, from markers in
// its source; nullopt when the template shows no known tool-call syntax.
std::optional<ToolCallFormat> detect_tool_call_format(std::string_view chat_template);

}  // namespace seam::chat
