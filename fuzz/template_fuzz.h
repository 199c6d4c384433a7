// Chat-template fuzzing: one input is a Jinja template and a JSON context,
// separated by the first NUL byte (no NUL: the whole input is the template and
// the context is a small conversation). The render must end with a result or
// a seam::Error: never a crash, a hang past the render budget, or a leak.
// Header-only so the libFuzzer binary, the standalone driver and the gtest in
// tests/chat share one definition.
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "seam/chat.h"
#include "seam/error.h"

namespace seam::fuzz {

inline const nlohmann::ordered_json& default_template_context() {
  static const nlohmann::ordered_json ctx = nlohmann::ordered_json::parse(R"({
    "messages": [{"role": "system", "content": "Be brief."},
                 {"role": "user", "content": "Hi \u00e9\u4e2d"},
                 {"role": "assistant", "content": "Hello.",
                  "tool_calls": [{"type": "function",
                                  "function": {"name": "f", "arguments": {"x": 1}}}]},
                 {"role": "tool", "content": "42"},
                 {"role": "user", "content": "Again"}],
    "tools": [{"type": "function", "function": {"name": "f", "description": "d",
               "parameters": {"type": "object", "properties": {"x": {"type": "integer"}}}}}],
    "add_generation_prompt": true, "bos_token": "<s>", "eos_token": "</s>"})");
  return ctx;
}

// Runs one input; throws only seam::Error (a refused template or context).
inline void template_one_input(const std::uint8_t* data, std::size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  const std::size_t nul = in.find('\0');
  const std::string source(in.substr(0, nul));
  nlohmann::ordered_json ctx = default_template_context();
  if (nul != std::string_view::npos) {
    ctx = nlohmann::ordered_json::parse(in.substr(nul + 1), nullptr, /*allow_exceptions=*/false);
    if (ctx.is_discarded()) return;  // not JSON: nothing of ours to test
  }
  TemplateOptions opts;
  opts.now = parse_template_time("2025-02-05 10:00:00");  // no dependence on the clock
  (void)render_chat_template(source, ctx, opts);
}

// Seeds: every built-in template with the default context, and templates
// that reach the interpreter's loops, slices, namespaces, macros and filters.
inline std::vector<std::string> template_seeds() {
  std::vector<std::string> seeds;
  for (std::string_view name : builtin_chat_template_names())
    seeds.emplace_back(*builtin_chat_template(name));
  seeds.push_back("{{ [1,2,3][2::s] }}" + std::string(1, '\0') + R"({"s": 9223372036854775807})");
  seeds.push_back("{% set ns = namespace(a=1) %}{% set ns.a = ns %}ok");
  seeds.push_back(
      "{% macro m(x, y=2) %}{{ x ~ y }}{% if x < 3 %}{{ m(x + 1) }}{% endif %}{% endmacro %}"
      "{{ m(0) }}{% for k, v in d | dictsort %}{{ loop.index }}{{ k | upper }}={{ v | tojson }}"
      "{% endfor %}" +
      std::string(1, '\0') + R"({"d": {"b": [1, {"c": null}], "a": "x\u00e9"}})");
  seeds.push_back(
      "{% for m in messages if m.role != 'system' %}{{ m.content | trim | replace('a', 'bb') }}"
      "{{ m.content[::-1] }}{{ m.content | indent(2, true) }}{% else %}none{% endfor %}"
      "{{ strftime_now('%Y-%m-%d') }}{{ raise_exception('x') if false }}");
  seeds.push_back(
      "{%- set ns = namespace(s='x') -%}{%- for i in range(8) -%}{%- set ns.s = ns.s ~ ns.s -%}"
      "{%- endfor -%}{{ ns.s | length }}{{ 'abc'.split('b') | join('-') }}"
      "{{ messages | selectattr('role', 'equalto', 'user') | map(attribute='content') | list }}");
  // What seam renders as Jinja2 does where the reference refuses (docs/templates.md).
  seeds.push_back(
      "{% set m = {0: 'a', 16: [1, none, 2.5]} %}{{ m|string }}{{ m[16]|trim }}{{ 'ab' * 3 }}"
      "{{ nope ~ none }}{% for c in 'h\\u00e9' %}{{ c }}{% endfor %}{% for x in nope %}{% endfor %}"
      "{{ tools[0]['function']|string }}{{ [3, 1, 2]|reject('odd')|list }}{{ '\\101\\\nb' }}"
      "{% if 'a' < 'b' and none in [none] %}{{ m.items()|list|length }}{% endif %}");
  return seeds;
}

}  // namespace seam::fuzz
