// Focused semantics of the interpreter. Every expected string in kRows was
// produced by the reference renderer (@huggingface/jinja 0.5.11, with the
// pinned clock 2025-02-05 14:07:09), not by this implementation.
#include <gtest/gtest.h>

#include "seam/chat.h"
#include "seam/error.h"

namespace seam {
namespace {

struct Row {
  const char* source;
  const char* expected;  // output, or for failures the exact raise_exception message ("" = any)
  bool fails;
};

const char* const kContext =
    R"json({"s": "abc", "sp": "  Hi There\t\n", "l": [1, 2, 3], "lm": [1, "a", null], "d": {"a": 1, "b": [1, 2], "c": {"x": "y"}}, "dn": {"2": "two", "10": "ten", "k": "v"}, "n": null, "fl": 2.5, "uni": "\u00df \u00dcn\u00efc\u00f6d\u00e9 \u65e5\u672c", "lo": [{"name": "x", "v": 2}, {"name": "y", "v": 1}, {"name": "z"}]})json";

const Row kRows[] = {
    {"{{ lm ~ \"|\" }}{{ \"|\" + l }}{{ lm }}", "1,a,undefined||1,2,3[1, \"a\", null]", false},
    {"{{ d|tojson }}|{{ d|tojson(indent=2) }}|{{ [[], {}]|tojson(indent=2) }}|{{ "
     "d|tojson(separators=(\",\", \":\")) }}",
     "{\"a\": 1, \"b\": [1, 2], \"c\": {\"x\": \"y\"}}|{\n  \"a\": 1,\n  \"b\": [\n    1,\n    2\n "
     " ],\n  \"c\": {\n    \"x\": \"y\"\n  }\n}|[\n  [],\n  "
     "{}\n]|{\"a\":1,\"b\":[1,2],\"c\":{\"x\":\"y\"}}",
     false},
    {"{{ uni|tojson }}{{ uni|tojson(ensure_ascii=true) }}{{ uni|length }}{{ uni|upper }}",
     "\"ß Ünïcödé 日本\"\"\\u00df \\u00dcn\\u00efc\\u00f6d\\u00e9 \\u65e5\\u672c\"12SS ÜNÏCÖDÉ "
     "日本",
     false},
    {"{% for x in dn %}{{ x }},{% endfor %}{{ dn|tojson }}",
     "2,10,k,{\"2\": \"two\", \"10\": \"ten\", \"k\": \"v\"}", false},
    {"{{ true }}{{ none }}{{ undefined_var }}{{ 1.0 }}{{ 2.5 }}{{ 10 / 4 }}{{ 10 / 5 }}{{ 7 // 2 "
     "}}{{ -7 % 3 }}{{ 100000000000 * 100000000000 * 1000 }}{{ 1000000.0 * 1000000000000000.0 * "
     "1000000 }}{{ 0.1 + 0.2 }}",
     "true1.02.52.52.03-11e+251e+270.30000000000000004", false},
    {"{{ fl|string }}{{ 3.0|string }}{{ 3.0 ~ \"\" }}{{ [3.0, 0.0000001, 0.5] }}",
     "2.53.03[3, 1e-7, 0.5]", false},
    {"{{ l[1:] }}{{ l[::-1] }}{{ s[1:] }}{{ s[-1] }}{{ l[-1] }}{{ l[5] is defined }}",
     "[2, 3][3, 2, 1]bcc3false", false},
    {"{% set x = 1 %}{% for i in l %}{% set x = x + i %}{{ x }}{% endfor %}|{{ x }}", "247|1",
     false},
    {"{% if true %}{% set y = 5 %}{% endif %}{{ y }}", "5", false},
    {"{% set ns = namespace(c=0) %}{% for i in l %}{% set ns.c = ns.c + i %}{% endfor %}{{ ns.c }}",
     "6", false},
    {"{% macro m(a, b=2, c=\"x\") %}{{ a }}-{{ b }}-{{ c }}-{{ s }}{% endmacro %}{{ m(1) }}|{{ "
     "m(1, c=\"z\") }}|{{ m(c=3, a=0) }}",
     "1-2-x-abc|1-2-z-abc|0-2-3-abc", false},
    {"{% macro m() %}{{ varargs }}{{ kwargs }}{% endmacro %}{{ m(1, 2, k=3) }}", "[1, 2]{\"k\": 3}",
     false},
    {"{% macro m(x) %}[{{ caller() }}{{ x }}]{% endmacro %}{% call m(1) %}inner{% endcall %}",
     "[inner1]", false},
    {"{% set b %}  block {{ s }}  {% endset %}[{{ b }}]", "[  block abc  ]", false},
    {"{% for i in l if i > 1 %}{{ i }}{{ loop.index }}{{ loop.last }}{% endfor %}", "21false32true",
     false},
    {"{% for i in l %}{% if i == 1 %}{% break %}{% endif %}{{ i }}{% else %}E{% endfor %}", "E",
     false},
    {"{% for i in l %}{{ loop.previtem }}>{{ loop.nextitem }};{% endfor %}", ">2;1>3;2>;", false},
    {"  {% if true %}\n  yes\n  {% endif %}\n  {{ s }}  \n{# c #}\n  {%- if true -%}  a  {%- endif "
     "-%}  \n",
     "  yes\n  abc  \na", false},
    {"a\r\n  {% if true %}\r\n  b\r\n  {% endif %}\r\nc", "a\r\n\r\n  b\r\n\r\nc", false},
    {"{% generation %}gen{% endgeneration %}\n{%- generation -%}  x  {%- endgeneration %}", "genx",
     false},
    {"{{ sp.strip() }}|{{ sp|trim }}|{{ sp.split() }}|{{ \"a,b,,c\".split(\",\") }}|{{ \"a b "
     "c\".split(\" \", 1) }}|{{ s.replace(\"\", \"-\") }}",
     "Hi There|Hi There|[\"Hi\", \"There\"]|[\"a\", \"b\", \"\", \"c\"]|[\"a\", \"b c\"]|-a-b-c-",
     false},
    {"{{ \"hello world\"|title }}{{ \"hELLO\"|capitalize }}{{ s is lower }}{{ \"ABC\" is upper }}",
     "Hello WorldHELLOtruetrue", false},
    {"{{ lo|selectattr(\"v\")|map(attribute=\"name\")|join(\",\") }}|{{ lo|rejectattr(\"name\", "
     "\"equalto\", \"x\")|map(attribute=\"v\", default=0)|list }}|{{ lo|sort(attribute=\"name\", "
     "reverse=true)|map(attribute=\"name\")|join }}",
     "x,y|[1, 0]|zyx", false},
    {"{{ d|items }}{{ d.keys()|list }}{{ d|dictsort }}{{ \"a\" in d }}{{ d.get(\"zz\", \"dflt\") "
     "}}{{ d.get(\"zz\") }}",
     "[[\"a\", 1], [\"b\", [1, 2]], [\"c\", {\"x\": \"y\"}]][\"a\", \"b\", \"c\"][[\"a\", 1], "
     "[\"b\", [1, 2]], [\"c\", {\"x\": \"y\"}]]truedflt",
     false},
    {"{{ [1, \"a\"] == [1, \"a\"] }}{{ l == l }}{{ 1 == true }}{{ \"1\" == 1 }}{{ none == "
     "undefined_var }}{{ \"a\" in [\"a\"] }}{{ 2 in l }}",
     "falsetruetruetruetruetruetrue", false},
    {"{{ not [] }}{{ [] and 1 }}{{ 0 or \"x\" }}{{ \"\" or none }}|{{ 1 if false }}|", "true[]x||",
     false},
    {"{{ [\"b\", \"A\", \"c\"]|sort }}{{ [3, 1, 2]|sort(reverse=true) }}{{ [1, 1, \"1\", 2]|unique "
     "}}{{ l|reverse }}{{ l|first }}{{ l|last }}{{ l|length }}",
     "[\"A\", \"b\", \"c\"][3, 2, 1][1, \"1\", 2][3, 2, 1]133", false},
    {"{{ \"42\"|int + 1 }}{{ \"x\"|int }}{{ \"3.5e1z\"|float }}{{ 3.7|int }}{{ -3|abs }}{{ "
     "\"x\"|default(\"d\") }}{{ undefined_var|default(\"d\") }}{{ \"\"|default(\"d\", true) }}",
     "43035.033xdd", false},
    {"{{ \"line1\nline2\n\nline4\"|indent }}|{{ \"a\nb\"|indent(2, true) }}",
     "line1\n    line2\n\n    line4|  a\n  b", false},
    {"{{ strftime_now('%d %b %Y') }} {{ strftime_now('%B %d, %Y') }} {{ strftime_now('%A "
     "%H:%M:%S') }}",
     "05 Feb 2025 February 05, 2025 Wednesday 14:07:09", false},
    {"{{ range(3)|list }}{{ range(1, 7, 2)|join(\",\") }}{{ 2 ** 10 }}{{ 2 ** -1 }}",
     "[0, 1, 2]1,3,510240.5", false},
    {"{{ \"a\" \"b\" }}{{ \"\\n\\t\\u00e9\\x41\" }}{{ 3 - -2 }}{{ 1 + 2 * 3 }}", "ab\n\téA57",
     false},
    {"{{ 1 // 0 }}{{ 5 % 0 }}{{ -1 // 0 }}", "InfinityNaN-Infinity", false},
    {"{{ none + 1 }}", "", true},
    {"{{ l.append(4) }}", "", true},
    {"{% for x in none %}{% endfor %}", "", true},
    {"{{ (1, 2)|tojson }}", "", true},
    {"{% if %}", "", true},
    {"{{ x", "", true},
    {"{% for %}", "", true},
    {"{% endfor %}", "", true},
    {"{{ \"abc }}", "", true},
    {"{% set ns = 1 %}{% set ns.a = 2 %}", "", true},
    {"{{ raise_exception(\"custom: \" ~ s) }}", "custom: abc", true},
    {"{% macro m(a) %}{% endmacro %}{{ m(1, 2) }}", "", true},
    {"{% break %}", "", true},
};

TEST(TemplateSemantics, MatchesReferenceOnFocusedTemplates) {
  const auto ctx = nlohmann::ordered_json::parse(kContext);
  TemplateOptions opts;
  opts.now = parse_template_time("2025-02-05 14:07:09");
  for (const Row& row : kRows) {
    SCOPED_TRACE(row.source);
    if (!row.fails) {
      EXPECT_EQ(render_chat_template(row.source, ctx, opts), row.expected);
      continue;
    }
    try {
      const std::string out = render_chat_template(row.source, ctx, opts);
      ADD_FAILURE() << "rendered '" << out << "' but the reference fails";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Errc::Template);
      if (*row.expected) {
        EXPECT_EQ(std::string(e.what()), row.expected);
      }
    }
  }
}

TEST(TemplateSemantics, BuiltinTemplates) {
  const auto ctx = nlohmann::ordered_json::parse(R"({
    "messages": [{"role": "system", "content": "Be brief."},
                 {"role": "user", "content": [{"type": "text", "text": " Hi "}]},
                 {"role": "assistant", "content": "Hello."}],
    "add_generation_prompt": true, "bos_token": "<BOS>"})");
  EXPECT_EQ(render_chat_template(*builtin_chat_template("chatml"), ctx),
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\n Hi <|im_end|>\n"
            "<|im_start|>assistant\nHello.<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(render_chat_template(*builtin_chat_template("llama3"), ctx),
            "<BOS><|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\nHello.<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
  EXPECT_EQ(render_chat_template(*builtin_chat_template("gemma"), ctx),
            "<BOS><start_of_turn>user\nBe brief.\n\nHi<end_of_turn>\n"
            "<start_of_turn>model\nHello.<end_of_turn>\n<start_of_turn>model\n");
  EXPECT_FALSE(builtin_chat_template("nope").has_value());
  EXPECT_EQ(builtin_chat_template_names().size(), 3u);
}

TEST(TemplateSemantics, ContextMustBeAnObjectAndTimeIsValidated) {
  EXPECT_THROW(render_chat_template("x", nlohmann::ordered_json::array()), Error);
  EXPECT_THROW(parse_template_time("2025-02-05"), Error);
  EXPECT_THROW(parse_template_time("2025-13-05 10:00:00"), Error);
  EXPECT_THROW(parse_template_time("2024-02-30 00:00:00"), Error);
  EXPECT_THROW(parse_template_time("2023-02-29 00:00:00"), Error);
  EXPECT_THROW(parse_template_time("2025-04-31 00:00:00"), Error);
  EXPECT_EQ(parse_template_time("2024-02-29 00:00:00").day, 29);  // a leap year
  EXPECT_EQ(parse_template_time("2000-02-29 00:00:00").day, 29);
  const TemplateTime t = parse_template_time("2025-02-05 14:07:09");
  EXPECT_EQ(t.year, 2025);
  EXPECT_EQ(t.second, 9);
}

TEST(TemplateSemantics, HostileTemplatesFailCleanly) {
  const auto ctx = nlohmann::ordered_json::object();
  std::string deep;
  for (int i = 0; i < 5000; ++i) deep += "(";
  EXPECT_THROW(render_chat_template("{{ " + deep + " }}", ctx), Error);
  EXPECT_THROW(render_chat_template("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}", ctx), Error);
  EXPECT_THROW(render_chat_template("{{ range(100000000)|length }}", ctx), Error);
  for (const char* bad :
       {"{{", "{%", "{#", "{{ 'a", "{{ a[ }}", "{% if x %}", "{{ x|tojson(indent=-1) }}"}) {
    EXPECT_THROW(render_chat_template(bad, ctx), Error) << bad;
  }
}

}  // namespace
}  // namespace seam
