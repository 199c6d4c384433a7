// Conversations that shared/templates' fixtures do not cover (tool-call
// arguments with unicode and numbers, null/empty/list contents, system
// messages mid-conversation, empty message lists, reasoning_content, complex
// tool schemas, documents with extra fields, every kwarg, empty/undefined
// special tokens, ...), each rendered with a real template from
// shared/templates. The expected outputs in data/unseen_cases.json came from
// @huggingface/jinja 0.5.11 and were cross-checked with Jinja2 3.1.6 (see the
// file's "about"); nothing here was produced by seam.
#include <gtest/gtest.h>

#include <filesystem>

#include "chat/case_data.h"
#include "seam/chat.h"
#include "seam/error.h"

namespace seam {
namespace {

TEST(UnseenTemplateCases, EveryCaseMatchesTheReference) {
  const std::string data_path = std::string(SEAM_SOURCE_DIR) + "/tests/chat/data/unseen_cases.json";
  const std::string tj_path = test::templates_dir() + "/templates.json";
  // shared/templates is part of every checkout's setup, as for TemplateCases:
  // a missing folder is a failure, not a reason to prove nothing.
  ASSERT_TRUE(std::filesystem::exists(tj_path)) << tj_path << " is missing (shared/templates)";
  const auto data = nlohmann::ordered_json::parse(test::read_file(data_path));
  std::map<std::string, nlohmann::ordered_json> templates, fixtures;
  const auto tj = nlohmann::ordered_json::parse(test::read_file(tj_path));
  for (const auto& t : tj.at("templates")) templates[t.at("name").get<std::string>()] = t;
  for (const auto& f : data.at("fixtures")) fixtures[f.at("id").get<std::string>()] = f;
  ASSERT_GE(data.at("cases").size(), 200u);

  TemplateOptions opts;
  opts.now = parse_template_time(data.at("strftime_now").get<std::string>());
  std::map<std::string, std::string> sources;
  int passed = 0;
  for (const auto& c : data.at("cases")) {
    const std::string name = c.at("template").get<std::string>();
    const std::string label = name + " x " + c.at("fixture").get<std::string>();
    SCOPED_TRACE(label);
    const auto& tmpl = templates.at(name);
    if (!sources.count(name))
      sources[name] =
          test::read_file(test::templates_dir() + "/" + tmpl.at("file").get<std::string>());
    const auto ctx = test::build_context(tmpl, fixtures.at(c.at("fixture").get<std::string>()));
    try {
      const std::string out = render_chat_template(sources[name], ctx, opts);
      if (c.contains("error")) {
        ADD_FAILURE() << "rendered, but the reference fails with: " << c.at("error");
      } else if (out != c.at("expected").get<std::string>()) {
        ADD_FAILURE() << "output differs from the reference";
      } else {
        ++passed;
      }
    } catch (const Error& e) {
      if (!c.contains("error")) {
        ADD_FAILURE() << "failed (" << e.what() << ") but the reference renders";
      } else if (c.at("error_kind") == "raise_exception" &&
                 std::string(e.what()) != c.at("error").get<std::string>()) {
        ADD_FAILURE() << "raised '" << e.what() << "', want " << c.at("error");
      } else if (c.at("error_kind") != "raise_exception" &&
                 !test::reference_refused_a_jinja2_construct(c.at("error").get<std::string>()) &&
                 test::runtime_error_kind(e.what()) !=
                     test::runtime_error_kind(c.at("error").get<std::string>())) {
        ADD_FAILURE() << "failed with '" << e.what() << "', the reference with " << c.at("error");
      } else {
        EXPECT_EQ(e.code(), Errc::Template);
        ++passed;
      }
    }
  }
  EXPECT_EQ(static_cast<std::size_t>(passed), data.at("cases").size());
}

}  // namespace
}  // namespace seam
