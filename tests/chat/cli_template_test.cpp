// End to end: `seam template` prints a shared case's exact expected bytes, and
// reports a template's raise_exception as one stderr line with a non-zero exit.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "chat/case_data.h"

namespace seam {
namespace {

struct RunResult {
  int exit_code = -1;
  std::string out, err;
};

RunResult run_seam(const std::string& args, const std::string& tag) {
  const std::filesystem::path dir = std::filesystem::path(SEAM_SCRATCH_DIR) / "chat_cli";
  std::filesystem::create_directories(dir);
  const std::string out = (dir / (tag + ".out")).string(), err = (dir / (tag + ".err")).string();
  const std::string cmd =
      std::string("'") + SEAM_BINARY + "' template " + args + " >'" + out + "' 2>'" + err + "'";
  const int status = std::system(cmd.c_str());
  RunResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = test::read_file(out);
  r.err = test::read_file(err);
  return r;
}

std::string write_context(const nlohmann::ordered_json& ctx, const std::string& tag) {
  const std::filesystem::path dir = std::filesystem::path(SEAM_SCRATCH_DIR) / "chat_cli";
  std::filesystem::create_directories(dir);
  const std::string path = (dir / (tag + ".json")).string();
  std::ofstream(path, std::ios::binary) << ctx.dump();
  return path;
}

const test::TemplateCase& find_case(const test::TemplateData& d, const std::string& tmpl,
                                    const std::string& fixture) {
  for (const auto& c : d.cases)
    if (c.template_name == tmpl && c.fixture == fixture) return c;
  throw std::runtime_error("case " + tmpl + " x " + fixture + " is not in cases.jsonl");
}

TEST(TemplateCli, RendersACaseByteIdentically) {
  const test::TemplateData d = test::load_template_data();
  // Llama 3.2 with tools reads the pinned clock and serialises tool schemas.
  const std::string name = "meta-llama-Llama-3.2-3B-Instruct";
  const auto& c = find_case(d, name, "tools-two");
  ASSERT_FALSE(c.expect_error);
  const auto& tmpl = d.templates.at(name);
  const std::string ctx = write_context(test::build_context(tmpl, d.fixtures.at(c.fixture)), "ok");
  const std::string file = test::templates_dir() + "/" + tmpl.at("file").get<std::string>();
  const RunResult r =
      run_seam("--template '" + file + "' --context '" + ctx + "' --now '" + d.clock + "'", "ok");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, c.expected);
  EXPECT_EQ(r.err, "");
}

TEST(TemplateCli, RaiseExceptionFailsWithOneLine) {
  const test::TemplateData d = test::load_template_data();
  const std::string name = "google-gemma-2-2b-it";
  const auto& c = find_case(d, name, "system-user");
  ASSERT_TRUE(c.expect_error);
  const auto& tmpl = d.templates.at(name);
  const std::string ctx = write_context(test::build_context(tmpl, d.fixtures.at(c.fixture)), "err");
  const std::string file = test::templates_dir() + "/" + tmpl.at("file").get<std::string>();
  const RunResult r = run_seam("--template '" + file + "' --context '" + ctx + "'", "err");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "seam: error: " + c.expected + "\n");
}

TEST(TemplateCli, BuiltinTemplateAndBadContext) {
  nlohmann::ordered_json ctx = {{"messages", {{{"role", "user"}, {"content", "Hi"}}}},
                                {"add_generation_prompt", true}};
  const std::string path = write_context(ctx, "builtin");
  const RunResult r = run_seam("--builtin chatml --context '" + path + "'", "builtin");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");

  const std::filesystem::path bad = std::filesystem::path(SEAM_SCRATCH_DIR) / "chat_cli/bad.json";
  std::ofstream(bad) << "[1, 2";
  const RunResult e = run_seam("--builtin chatml --context '" + bad.string() + "'", "bad");
  EXPECT_NE(e.exit_code, 0);
  EXPECT_EQ(e.out, "");
  EXPECT_NE(e.err.find("not valid JSON"), std::string::npos) << e.err;
}

}  // namespace
}  // namespace seam
