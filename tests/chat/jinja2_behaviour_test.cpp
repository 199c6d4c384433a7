// Constructs that the reference renderer (@huggingface/jinja 0.5.11) refuses and
// Jinja2 (transformers' renderer) accepts: seam renders them as Jinja2 does, so
// that real templates which use them (Mistral Small 3.1's line continuations,
// Phi-4-mini's loop over absent tool calls, Apriel's `tool|string`, Llama 3.1's
// `builtin_tools|reject(...)`, GigaChat's `' ' * n`, Seed-OSS's integer keys)
// render the prompt the model was trained on. Every expected string below was
// produced by Jinja2 3.1 set up as transformers sets it up (trim_blocks,
// lstrip_blocks, loop controls, its tojson), and each row fails in the
// reference; nothing here was produced by seam. Where the reference renders,
// seam still follows it (template_cases_test, unseen_cases_test).
#include <gtest/gtest.h>

#include "seam/chat.h"
#include "seam/error.h"

namespace seam {
namespace {

struct Row {
  const char* source;
  const char* expected;
};

const char* const kContext =
    R"json({"s": "abc", "l": [1, 2, 3], "lm": [1, "a", null], "d": {"a": 1, "b": [1, 2], "c": {"x": "y"}}, "lo": [{"name": "x", "v": 2}, {"name": "y", "v": 1}], "fl": [2.5, 0.0001, 1e-05, 123456789.125, -0.5, 1.5e+300], "odd": {"q": "it's", "dq": "say \"hi\"", "both": "'\"", "u": "\u00df\u65e5", "c": "\u0007\u200b\u00a0\n\\", "t": true, "n": null}})json";

const Row kRows[] = {
    {"{{ l|reject(\"odd\")|join(\",\") }}|{{ l|select(\"odd\")|join(\",\") }}|{{ "
     "lm|select|join(\",\") }}|{{ [\"a\", \"b\", \"c\"]|reject(\"equalto\", \"b\")|join }}",
     "2|1,3|1,a|ac"},
    {"{{ [1]|trim }}|{{ lo|trim }}", "[1]|[{'name': 'x', 'v': 2}, {'name': 'y', 'v': 1}]"},
    {"{% if d[0] is defined %}yes{% else %}no{% endif %}{% if d[nope] is defined %}yes{% else "
     "%}no{% endif %}{% if l[nope] is defined %}yes{% else %}no{% endif %}",
     "nonono"},
    {"{{ d|string }}|{{ odd|string }}|{{ {\"f\": fl}|string }}",
     "{'a': 1, 'b': [1, 2], 'c': {'x': 'y'}}|{'q': \"it's\", 'dq': 'say \"hi\"', 'both': '\\'\"', "
     "'u': 'ß日', 'c': '\\x07\\u200b\\xa0\\n\\\\', 't': True, 'n': None}|{'f': [2.5, 0.0001, "
     "1e-05, 123456789.125, -0.5, 1.5e+300]}"},
    {"{{ \"a\" ~ nope ~ \"b\" ~ none }}", "abNone"},
    {"{{ \"ab\" * 3 }}{{ 2 * \"-\" }}{{ (\"x\" * 0)|length }}{{ (\"x\" * -2)|length }}|{{ ([1, 2] "
     "* 2)|join(\",\") }}",
     "ababab--00|1,2,1,2"},
    {"{% for x in nope %}{{ x }}{% else %}empty{% endfor %}|{% for c in \"héllo\" %}{{ c }}.{% "
     "endfor %}",
     "empty|h.é.l.l.o."},
    {"{{ \"a\\\nb\" }}|{{ \"\\d\\a\\101\\U0001F600\\7\" }}", "ab|\\d\007A😀\007"},
    {"{% set m = {0: \"zero\", 16: \"sixteen\"} %}{{ m[16] }} {{ m.get(0) }} {% if m[\"0\"] is "
     "defined %}yes{% else %}no{% endif %}|{% for k, v in {10: \"a\", 9: \"b\"}|dictsort %}{{ k + "
     "1 }}{{ v }}{% endfor %}|{% for k in m %}{{ k * 2 }},{% endfor %}{% if 0 in m and \"0\" not "
     "in m %}ok{% endif %}|{{ m|tojson }}|{{ m|string }}",
     "sixteen zero no|10b11a|0,32,ok|{\"0\": \"zero\", \"16\": \"sixteen\"}|{0: 'zero', 16: "
     "'sixteen'}"},
    {"{% set s = {\"items\": {\"type\": \"x\"}, \"k\": 1} %}{% for k, v in s.items() %}{{ k }};{% "
     "endfor %}{{ s.keys()|list|length }}",
     "items;k;2"},
    {"{% if none in [1, none] and nope not in [1] and none not in {\"a\": 1} %}ok{% endif %}",
     "ok"},
    {"{% for a, b in [(1, 2), (3, 4)] %}{{ a + b }}{% endfor %}", "37"},
    {"{{ nope|string }}|{{ nope|trim }}|", "||"},
    {"{% set ns = namespace(a=1) %}{% set ns.a = ns %}{{ ns|string }}|{{ {\"n\": ns}|string }}|{{ "
     "namespace(b=[1, \"x\"])|string }}",
     "<Namespace {'a': <Namespace {...}>}>|{'n': <Namespace {'a': <Namespace {...}>}>}|<Namespace "
     "{'b': [1, 'x']}>"},
};

TEST(Jinja2Behaviour, RendersWhatTheReferenceRefusesAsJinja2Does) {
  const auto ctx = nlohmann::ordered_json::parse(kContext);
  for (const Row& row : kRows) {
    SCOPED_TRACE(row.source);
    EXPECT_EQ(render_chat_template(row.source, ctx, {}), row.expected);
  }
}

void expect_template_error(const std::string& source, const std::string& message_part) {
  SCOPED_TRACE(source);
  try {
    const std::string out = render_chat_template(source, nlohmann::ordered_json::object(), {});
    ADD_FAILURE() << "rendered " << out.size() << " bytes";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::Template);
    EXPECT_NE(std::string(e.what()).find(message_part), std::string::npos) << e.what();
  }
}

TEST(Jinja2Behaviour, RepetitionStaysWithinTheRenderLimits) {
  expect_template_error("{{ 'ab' * 100000000 }}", "");
  expect_template_error("{{ ([1, 2] * 100000000)|length }}", "steps");
  expect_template_error(
      "{% set x = 'abcdefgh' * 1000 %}{% for i in range(100000) %}{% set y = x * 1000 %}"
      "{% endfor %}",
      "steps");
  // A loop over a string pays for its characters before they are made: 16 MB
  // ran 10 s and took 3.5 GB when only its bytes were charged.
  expect_template_error("{% set s = 'x' * 16000000 %}{% for c in s %}{% endfor %}", "steps");
}

TEST(Jinja2Behaviour, NamedEscapesAreRefusedNotMisread) {
  expect_template_error("{{ '\\N{EM DASH}' }}", "named escapes");
}

}  // namespace
}  // namespace seam
