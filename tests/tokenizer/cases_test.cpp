// Token-for-token conformance against the reference tokenizers' outputs in
// shared/tokenizers (see its README.md). Every vocab and case file listed in
// MANIFEST.json is run; none is skipped silently.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "format/gguf.h"
#include "seam/error.h"
#include "tokenizer/tokenizer.h"

namespace seam {
namespace {

const std::string kDir = std::string(SEAM_SHARED_DIR) + "/tokenizers/";

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path);
  return nlohmann::json::parse(in);
}

std::string show(const std::vector<Token>& v) {
  std::ostringstream o;
  o << '[';
  for (std::size_t i = 0; i < v.size(); ++i) o << (i ? ", " : "") << v[i];
  o << ']';
  return o.str();
}

struct VocabCase {
  std::string name, gguf, model;
  std::vector<std::string> files;
};

std::vector<VocabCase> manifest() {
  std::vector<VocabCase> out;
  const auto m = read_json(kDir + "MANIFEST.json");
  for (const auto& v : m.at("vocabs")) {
    VocabCase c{v.at("name"), v.at("gguf"), v.at("tokenizer_model"), {}};
    for (const auto& [file, count] : v.at("cases").items()) c.files.push_back(file);
    out.push_back(std::move(c));
  }
  return out;
}

void PrintTo(const VocabCase& c, std::ostream* os) { *os << c.name << " (" << c.gguf << ")"; }

class CaseFiles : public ::testing::TestWithParam<VocabCase> {};

TEST_P(CaseFiles, MatchReference) {
  const VocabCase& vc = GetParam();
  const GgufFile file = GgufFile::open(kDir + vc.gguf);
  std::unique_ptr<Tokenizer> tok;
  try {
    tok = Tokenizer::from_gguf(file);
  } catch (const Error& e) {
    FAIL() << vc.name << " (tokenizer model '" << vc.model << "') cannot be loaded: " << e.what();
  }
  ASSERT_EQ(tok->model(), vc.model);

  for (const std::string& name : vc.files) {
    std::ifstream in(kDir + name);
    ASSERT_TRUE(in) << name;
    int total = 0, passed = 0, reported = 0;
    std::string line;
    while (std::getline(in, line)) {
      if (line.empty()) continue;
      const auto c = nlohmann::json::parse(line);
      const std::string text = c.at("text");
      const auto want = c.at("ids").get<std::vector<Token>>();
      ++total;
      std::string why;
      const auto got = tok->encode(text, false, false);
      if (got != want) why += "\n  ids      " + show(got) + "\n  expected " + show(want);
      if (c.contains("ids_parse_special")) {
        const auto want_sp = c.at("ids_parse_special").get<std::vector<Token>>();
        const auto got_sp = tok->encode(text, false, true);
        if (got_sp != want_sp) {
          why += "\n  parse_special " + show(got_sp) + "\n  expected      " + show(want_sp);
        }
      }
      if (c.contains("decoded")) {
        const std::string dec = tok->decode(want, Detok::Text);
        if (dec != c.at("decoded").get<std::string>()) {
          why += "\n  decoded  " +
                 nlohmann::json(dec).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
        }
      }
      if (why.empty()) {
        ++passed;
      } else if (reported++ < 8) {
        ADD_FAILURE() << name << " [" << c.value("cat", "") << "] " << c.at("text").dump() << why;
      }
    }
    std::printf("[ cases    ] %-48s %3d / %3d\n", name.c_str(), passed, total);
    EXPECT_GT(total, 0) << name;
    EXPECT_EQ(passed, total) << name;
  }
}

INSTANTIATE_TEST_SUITE_P(Manifest, CaseFiles, ::testing::ValuesIn(manifest()),
                         [](const auto& info) {
                           std::string n = info.param.name;
                           for (char& ch : n)
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return n;
                         });

TEST(Tokenizer, Stories260KWithBos) {
  const GgufFile file = GgufFile::open(std::string(SEAM_SHARED_DIR) + "/models/stories260K.gguf");
  const auto tok = Tokenizer::from_gguf(file);
  EXPECT_EQ(tok->encode("Once upon a time", true, false),
            (std::vector<Token>{1, 403, 407, 261, 378}));
  EXPECT_EQ(tok->decode(tok->encode("Once upon a time", true, false), Detok::Plain),
            "Once upon a time");
}

}  // namespace
}  // namespace seam
