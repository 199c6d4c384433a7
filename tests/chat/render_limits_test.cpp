// What a first fuzzing pass found in the template interpreter (issue 14,
// section 3): slices that overflow, a namespace that holds itself, and
// renders without a bound on work or size. Each now ends in a clear template
// error or a correct result; the sanitizer build (ASan's leak check, UBSan)
// is what proves the absence of the overflow and of the leak.
#include <gtest/gtest.h>
#include <pthread.h>

#include <cstdint>
#include <filesystem>
#include <limits>
#include <string>

#include "case_data.h"
#include "seam/chat.h"
#include "seam/error.h"

namespace seam {
namespace {

using Json = nlohmann::ordered_json;

std::string render(const std::string& source, const Json& ctx = Json::object()) {
  return render_chat_template(source, ctx);
}

void expect_template_error(const std::string& source, const std::string& needle,
                           const Json& ctx = Json::object()) {
  try {
    render(source, ctx);
    ADD_FAILURE() << "rendered; expected a template error containing '" << needle << "'";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::Template) << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(RenderLimits, SliceStepsAtTheEdgesOfInt64) {
  const std::int64_t max = std::numeric_limits<std::int64_t>::max();
  const std::int64_t min = std::numeric_limits<std::int64_t>::min();
  // Python: [1,2,3][2::huge] == [3]; [1,2,3][::-huge] == [3]; "abc"[::huge] == "a".
  EXPECT_EQ(render("{{ [1,2,3][2::s] }}", Json{{"s", max}}), "[3]");
  EXPECT_EQ(render("{{ [1,2,3][0::s] }}", Json{{"s", max}}), "[1]");
  EXPECT_EQ(render("{{ [1,2,3][::s] }}", Json{{"s", min}}), "[3]");
  EXPECT_EQ(render("{{ [1,2,3][::s] }}", Json{{"s", min + 1}}), "[3]");
  EXPECT_EQ(render("{{ 'abc'[::s] }}", Json{{"s", max}}), "a");
  EXPECT_EQ(render("{{ 'abc'[::s] }}", Json{{"s", min}}), "c");
  EXPECT_EQ(render("{{ 'abcdef'[s::2] }}", Json{{"s", min}}), "ace");
  EXPECT_EQ(render("{{ 'abcdef'[1:s:2] }}", Json{{"s", max}}), "bdf");
  // Ordinary steps keep Python's answers.
  EXPECT_EQ(render("{{ [1,2,3,4,5][::-2] }}"), "[5, 3, 1]");
  EXPECT_EQ(render("{{ [1,2,3,4,5][1:4:2] }}"), "[2, 4]");
  EXPECT_EQ(render("{{ 'hello'[::-1] }}"), "olleh");
}

TEST(RenderLimits, ANamespaceThatHoldsItselfRendersAndIsFreed) {
  // Leak-free under ASan's leak check (CI's sanitizer run).
  EXPECT_EQ(render("{% set ns = namespace(a=1) %}{% set ns.a = ns %}ok"), "ok");
  EXPECT_EQ(render("{% set a = namespace(x=1) %}{% set b = namespace(y=a) %}{% set a.x = b %}"
                   "{{ b.y.x.y.x is defined }}"),
            "true");
}

TEST(RenderLimits, NestedLoopsRunOutOfSteps) {
  expect_template_error(
      "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}", "steps");
  // A real conversation of a thousand turns is far inside the budget.
  Json msgs = Json::array();
  for (int i = 0; i < 1000; ++i) msgs.push_back({{"role", "user"}, {"content", "hi"}});
  const std::string out = render(
      "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}",
      Json{{"messages", msgs}});
  EXPECT_EQ(out.size(), 1000u * std::string("<|im_start|>user\nhi<|im_end|>\n").size());
}

TEST(RenderLimits, StringsAndOutputAreCapped) {
  // 40 doublings of one byte: 1 TiB asked for.
  expect_template_error(
      "{% set ns = namespace(s='x') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}"
      "{% endfor %}{{ ns.s | length }}",
      "MiB");
  // 5001 lines, each indented by the largest width indent() takes.
  expect_template_error(
      "{{ t | indent(4096, true) }}", "MiB",
      Json{{"t", std::string(10000, 'a').replace(0, 0, std::string(5000, '\n'))}});
  // 101 insertion points of 1 MiB each.
  expect_template_error("{{ t | replace('', s) }}", "MiB",
                        Json{{"t", std::string(100, 'a')}, {"s", std::string(1 << 20, 'y')}});
  EXPECT_EQ(render("{{ t | replace('a', 'bb') }}", Json{{"t", "aXa"}}), "bbXbb");
  // 8 MiB strings, each under the cap; the output of three is not.
  expect_template_error(
      "{% set ns = namespace(s='x') %}{% for i in range(23) %}{% set ns.s = ns.s ~ ns.s %}"
      "{% endfor %}{% for i in range(3) %}{{ ns.s }}{% endfor %}",
      "MiB");
  // Below the caps nothing changes: 2^20 bytes doubled from one.
  EXPECT_EQ(render("{% set ns = namespace(s='x') %}{% for i in range(20) %}"
                   "{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s | length }}"),
            "1048576");
}

// Found by the campaign of stop 29: work that a step per evaluation does not
// see. Each of these ran for minutes or more before; now each is stopped by
// the budget within a fraction of a second.
TEST(RenderLimits, WorkOnLargeValuesCountsAgainstTheBudget) {
  // An 8 MiB string copied a million times (each copy is one evaluation).
  expect_template_error(
      "{% set ns = namespace(s='x') %}{% for i in range(23) %}{% set ns.s = ns.s ~ ns.s %}"
      "{% endfor %}{% for i in range(1000000) %}{% set y = ns.s %}{% endfor %}",
      "steps");
  // ... or scanned by a test a million times.
  expect_template_error(
      "{% set ns = namespace(s='x') %}{% for i in range(23) %}{% set ns.s = ns.s ~ ns.s %}"
      "{% endfor %}{% for i in range(1000000) %}{% if 'z' in ns.s %}{% endif %}{% endfor %}",
      "steps");
  // A list of a million sorted nine hundred times.
  expect_template_error(
      "{% set l = range(999999) %}{% for i in range(900) %}{% set m = l|sort %}{% endfor %}",
      "steps");
  // A list that holds itself twice, forty levels down: 2^40 elements to print.
  const std::string nest =
      "{% set ns = namespace(a=[1]) %}{% for i in range(40) %}{% set ns.a = [ns.a, ns.a] %}"
      "{% endfor %}";
  expect_template_error(nest + "{{ ns.a }}", "steps");
  expect_template_error(nest + "{{ ns.a|tojson|length }}", "steps");
  expect_template_error(nest + "{{ ns.a ~ '' }}", "steps");
  // A dict whose 8 MiB value is copied out a thousand times.
  expect_template_error(
      "{% set ns = namespace(s='x') %}{% for i in range(23) %}{% set ns.s = ns.s ~ ns.s %}"
      "{% endfor %}{% set d = {'k': ns.s} %}{% for i in range(1000) %}{% set v = d.values() %}"
      "{% endfor %}",
      "steps");
}

// The budget must not cost real conversations anything: every shared template
// renders 2,000 turns of 2 KB each (4 MB of messages) within it.
TEST(RenderLimits, ALongConversationRendersWithEveryTemplate) {
  Json msgs = Json::array();
  for (int i = 0; i < 2000; ++i)
    msgs.push_back({{"role", i % 2 ? "assistant" : "user"},
                    {"content", std::string(2047, 'a' + i % 26) + "."}});
  msgs.push_back({{"role", "user"}, {"content", "last"}});
  const Json tool = Json::parse(R"({"type": "function", "function": {"name": "get_time",
      "description": "The time now", "parameters": {"type": "object", "properties": {}}}})");
  const Json ctx{{"messages", msgs},
                 {"tools", Json::array({tool})},
                 {"add_generation_prompt", true},
                 {"bos_token", "<s>"},
                 {"eos_token", "</s>"}};
  int rendered = 0;
  for (const auto& entry : std::filesystem::directory_iterator(test::templates_dir())) {
    if (entry.path().extension() != ".jinja") continue;
    SCOPED_TRACE(entry.path().filename().string());
    std::string out;
    ASSERT_NO_THROW(out = render(test::read_file(entry.path().string()), ctx));
    EXPECT_GT(out.size(), 2000u * 2048u);
    ++rendered;
  }
  EXPECT_GE(rendered, 20);
}

// Deep macro recursion ends in a template error, never a stack overflow, on
// whatever stack the caller renders on: each level takes several evaluator
// frames, more under the sanitizers, and a library caller's thread may have a
// small stack. (Hermes 3's template recurses without end on some tool schemas.)
TEST(RenderLimits, DeepRecursionFailsBeforeTheStackRunsOut) {
  struct Job {
    std::string error;
    bool template_error = false;
  };
  auto run = [](void* arg) -> void* {
    auto* job = static_cast<Job*>(arg);
    try {
      render_chat_template(
          "{% macro m(n) %}{% if (n + 1) * 2 > 0 and n is defined %}{{ ((n ~ 'x')|upper)[0] }}"
          "{{ m(n + 1) }}{% endif %}{% endmacro %}{{ m(0) }}",
          nlohmann::ordered_json::object(), {});
    } catch (const Error& e) {
      job->template_error = e.code() == Errc::Template;
      job->error = e.what();
    }
    return nullptr;
  };
  for (std::size_t stack_kib : {128, 512, 8192}) {
    SCOPED_TRACE(stack_kib);
    Job job;
    pthread_attr_t attr;
    ASSERT_EQ(pthread_attr_init(&attr), 0);
    ASSERT_EQ(pthread_attr_setstacksize(&attr, stack_kib << 10), 0);
    pthread_t thread;
    ASSERT_EQ(pthread_create(&thread, &attr, run, &job), 0);
    ASSERT_EQ(pthread_join(thread, nullptr), 0);
    pthread_attr_destroy(&attr);
    EXPECT_TRUE(job.template_error);
    EXPECT_NE(job.error.find("too deeply"), std::string::npos) << job.error;
  }
}

}  // namespace
}  // namespace seam
