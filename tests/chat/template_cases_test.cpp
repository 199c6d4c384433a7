// Conformance: every (template, fixture) case in shared/templates must render
// byte-identically to the reference renderer, or fail the way it fails: the
// same raise_exception message, or a runtime error of the same kind
// (test::runtime_error_kind).
#include <gtest/gtest.h>

#include <cstdio>

#include "chat/case_data.h"
#include "seam/chat.h"
#include "seam/error.h"

namespace seam {
namespace {

// Where two strings first differ, with a little context, for failure messages.
std::string first_difference(const std::string& want, const std::string& got) {
  std::size_t i = 0;
  while (i < want.size() && i < got.size() && want[i] == got[i]) ++i;
  const std::size_t from = i > 40 ? i - 40 : 0;
  return "at byte " + std::to_string(i) + "\n  want: " +
         nlohmann::json(want.substr(from, 100))
             .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) +
         "\n  got:  " +
         nlohmann::json(got.substr(from, 100))
             .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

TEST(TemplateCases, EveryCaseMatchesTheReference) {
  const test::TemplateData data = test::load_template_data();
  ASSERT_GT(data.cases.size(), 500u) << "shared/templates/cases.jsonl is missing or short";
  TemplateOptions opts;
  opts.now = parse_template_time(data.clock);

  std::map<std::string, std::string> sources;
  int passed = 0, rendered = 0, raised = 0, runtime = 0;
  std::vector<std::string> failures;
  for (const auto& c : data.cases) {
    const auto& tmpl = data.templates.at(c.template_name);
    if (!sources.count(c.template_name))
      sources[c.template_name] =
          test::read_file(test::templates_dir() + "/" + tmpl.at("file").get<std::string>());
    const auto ctx = test::build_context(tmpl, data.fixtures.at(c.fixture));
    const std::string label = c.template_name + " x " + c.fixture;
    try {
      const std::string out = render_chat_template(sources[c.template_name], ctx, opts);
      if (c.expect_error) {
        failures.push_back(label + ": rendered, but the reference fails with: " + c.expected);
      } else if (out != c.expected) {
        failures.push_back(label + ": output differs " + first_difference(c.expected, out));
      } else {
        ++passed;
        ++rendered;
      }
    } catch (const Error& e) {
      if (!c.expect_error) {
        failures.push_back(label + ": failed (" + e.what() + ") but the reference renders");
      } else if (e.code() != Errc::Template) {
        failures.push_back(label + ": wrong error code for " + e.what());
      } else if (c.error_kind == "raise_exception" && e.what() != c.expected) {
        failures.push_back(label + ": raised '" + e.what() + "', want '" + c.expected + "'");
      } else if (c.error_kind != "raise_exception" &&
                 test::runtime_error_kind(e.what()) != test::runtime_error_kind(c.expected)) {
        failures.push_back(label + ": failed with '" + e.what() + "', the reference with '" +
                           c.expected + "'");
      } else {
        ++passed;
        (c.error_kind == "raise_exception" ? raised : runtime)++;
      }
    }
  }
  std::printf("template cases: %d/%zu pass (%d rendered, %d raise_exception, %d runtime errors)\n",
              passed, data.cases.size(), rendered, raised, runtime);
  for (std::size_t k = 0; k < failures.size() && k < 25; ++k) ADD_FAILURE() << failures[k];
  EXPECT_EQ(static_cast<std::size_t>(passed), data.cases.size());
}

}  // namespace
}  // namespace seam
