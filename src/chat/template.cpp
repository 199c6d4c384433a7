// Public entry points of the chat-template module and the built-in templates.
#include <array>
#include <cstdio>

#include "chat/ast.h"
#include "chat/interpreter.h"
#include "seam/chat.h"
#include "seam/error.h"

namespace seam {

TemplateTime parse_template_time(std::string_view text) {
  TemplateTime t;
  char tail = 0;
  const std::string s(text);
  const int n = std::sscanf(s.c_str(), "%4d-%2d-%2d %2d:%2d:%2d%c", &t.year, &t.month, &t.day,
                            &t.hour, &t.minute, &t.second, &tail);
  const bool shape_ok = n == 6 && s.size() == 19 && s[4] == '-' && s[7] == '-' && s[10] == ' ' &&
                        s[13] == ':' && s[16] == ':';
  const bool leap = t.year % 4 == 0 && (t.year % 100 != 0 || t.year % 400 == 0);
  const int month_days[12] = {31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (!shape_ok || t.month < 1 || t.month > 12 || t.day < 1 || t.day > month_days[t.month - 1] ||
      t.hour > 23 || t.minute > 59 || t.second > 60 || t.hour < 0 || t.minute < 0 || t.second < 0)
    throw Error(
        Errc::InvalidArgument,
        "invalid time '" + s + "': expected \"YYYY-MM-DD HH:MM:SS\", e.g. \"2025-02-05 14:07:09\"");
  return t;
}

std::string render_chat_template(std::string_view source, const nlohmann::ordered_json& context,
                                 const TemplateOptions& opts) {
  const chat::Program program = chat::parse_template(source);
  return chat::render_program(program, context, opts);
}

void validate_chat_template(std::string_view source) { (void)chat::parse_template(source); }

namespace {

// Shared by the built-ins: a message's text whether content is a string or a
// list of {"type": "text"} parts.
#define SEAM_CONTENT_MACRO                                                                  \
  "{%- macro content_text(content) -%}"                                                     \
  "{%- if content is string -%}{{- content -}}"                                             \
  "{%- elif content is iterable -%}"                                                        \
  "{%- for part in content -%}{%- if part.type == 'text' -%}{{- part.text -}}{%- endif -%}" \
  "{%- endfor -%}"                                                                          \
  "{%- endif -%}"                                                                           \
  "{%- endmacro -%}\n"

constexpr std::string_view kChatml = SEAM_CONTENT_MACRO
    "{%- for message in messages -%}\n"
    "{{- '<|im_start|>' + message.role + '\\n' + content_text(message.content) + '<|im_end|>\\n' "
    "-}}\n"
    "{%- endfor -%}\n"
    "{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}{%- endif -%}\n";

constexpr std::string_view kLlama3 = SEAM_CONTENT_MACRO
    "{{- bos_token if bos_token is defined else '' -}}\n"
    "{%- for message in messages -%}\n"
    "{{- '<|start_header_id|>' + message.role + '<|end_header_id|>\\n\\n' -}}\n"
    "{{- content_text(message.content) | trim -}}{{- '<|eot_id|>' -}}\n"
    "{%- endfor -%}\n"
    "{%- if add_generation_prompt -%}"
    "{{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' -}}{%- endif -%}\n";

// Gemma has no system role: system text is prepended to the next user turn.
constexpr std::string_view kGemma = SEAM_CONTENT_MACRO
    "{{- bos_token if bos_token is defined else '' -}}\n"
    "{%- set ns = namespace(system='') -%}\n"
    "{%- for message in messages -%}\n"
    "{%- if message.role == 'system' -%}\n"
    "{%- set ns.system = ns.system + content_text(message.content) + '\\n\\n' -%}\n"
    "{%- else -%}\n"
    "{%- set role = 'model' if message.role == 'assistant' else 'user' -%}\n"
    "{{- '<start_of_turn>' + role + '\\n' -}}\n"
    "{%- if role == 'user' -%}{{- ns.system -}}{%- set ns.system = '' -%}{%- endif -%}\n"
    "{{- content_text(message.content) | trim -}}{{- '<end_of_turn>\\n' -}}\n"
    "{%- endif -%}\n"
    "{%- endfor -%}\n"
    "{%- if add_generation_prompt -%}{{- '<start_of_turn>model\\n' -}}{%- endif -%}\n";

#undef SEAM_CONTENT_MACRO

struct Builtin {
  std::string_view name;
  std::string_view source;
};
constexpr std::array<Builtin, 3> kBuiltins = {{
    {"chatml", kChatml},
    {"llama3", kLlama3},
    {"gemma", kGemma},
}};

}  // namespace

std::optional<std::string_view> builtin_chat_template(std::string_view name) {
  for (const auto& b : kBuiltins)
    if (b.name == name) return b.source;
  return std::nullopt;
}

std::vector<std::string_view> builtin_chat_template_names() {
  std::vector<std::string_view> out;
  for (const auto& b : kBuiltins) out.push_back(b.name);
  return out;
}

}  // namespace seam
