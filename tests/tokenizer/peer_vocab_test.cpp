// Every vocab file llama.cpp ships with reference cases (models/ggml-vocab-*.gguf
// with .inp/.out, made by the Hugging Face tokenizers), token for token. The
// peer is installed in CI (SEAM_REQUIRE_PEER=1); elsewhere, without it, this test skips, and the
// shared/tokenizers case files (cases_test.cpp) and the hand-derived family
// tests (pretokenizer_test.cpp) still cover every family.
//
// .inp: the texts, each followed by "\n__ggml_vocab_test__\n".
// .out: one line of space-separated ids per text (no BOS/EOS, no special parsing).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "format/gguf.h"
#include "peer.h"
#include "seam/error.h"
#include "tokenizer/tokenizer.h"

namespace seam {
namespace {

namespace fs = std::filesystem;

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

fs::path models_dir() { return testing::peer_dir() / "llama.cpp-src" / "models"; }

TEST(PeerVocabs, EveryCaseFileMatchesExactly) {
  const fs::path dir = models_dir();
  SEAM_NEED_PEER(dir);
  std::vector<fs::path> vocabs;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.starts_with("ggml-vocab-") && e.path().extension() == ".gguf" &&
        fs::exists(e.path().string() + ".inp") && fs::exists(e.path().string() + ".out")) {
      vocabs.push_back(e.path());
    }
  }
  std::sort(vocabs.begin(), vocabs.end());
  ASSERT_FALSE(vocabs.empty()) << "no ggml-vocab-*.gguf with .inp/.out in " << dir;

  const std::string sep = "\n__ggml_vocab_test__\n";
  for (const fs::path& path : vocabs) {
    const std::string name = path.filename().string();
    std::unique_ptr<Tokenizer> tok;
    try {
      tok = Tokenizer::from_gguf(GgufFile::open(path.string()));
    } catch (const Error& e) {
      ADD_FAILURE() << name << " does not load: " << e.what();
      continue;
    }
    std::vector<std::string> texts;
    const std::string inp = slurp(path.string() + ".inp");
    for (std::size_t at = 0; at < inp.size();) {
      std::size_t end = inp.find(sep, at);
      if (end == std::string::npos) end = inp.size();
      texts.push_back(inp.substr(at, end - at));
      at = end + sep.size();
    }
    std::vector<std::vector<Token>> want;
    std::istringstream out(slurp(path.string() + ".out"));
    for (std::string line; std::getline(out, line);) {
      std::istringstream ids(line);
      want.emplace_back();
      for (Token id; ids >> id;) want.back().push_back(id);
    }
    ASSERT_EQ(texts.size(), want.size()) << name << ": .inp and .out disagree on the case count";
    int passed = 0, reported = 0;
    for (std::size_t i = 0; i < texts.size(); ++i) {
      if (tok->encode(texts[i], false, false) == want[i]) {
        ++passed;
      } else if (reported++ < 3) {
        ADD_FAILURE() << name << " case " << i << " differs: \"" << texts[i].substr(0, 60) << "\"";
      }
    }
    EXPECT_EQ(passed, static_cast<int>(texts.size())) << name;
    std::printf("  %-34s %d/%zu\n", name.c_str(), passed, texts.size());
  }
}

// Vocabs shipped without cases (aquila, baichuan, gpt-neox, nomic-bert-moe, ...)
// must load and give the text back.
TEST(PeerVocabs, EveryVocabLoadsAndRoundTrips) {
  const fs::path dir = models_dir();
  SEAM_NEED_PEER(dir);
  int n = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (!name.starts_with("ggml-vocab-") || e.path().extension() != ".gguf") continue;
    ++n;
    std::unique_ptr<Tokenizer> tok;
    try {
      tok = Tokenizer::from_gguf(GgufFile::open(e.path().string()));
    } catch (const Error& err) {
      ADD_FAILURE() << name << " does not load: " << err.what();
      continue;
    }
    const std::string text = "Hello world, 12345 times!";
    const auto ids = tok->encode(text, false, false);
    EXPECT_FALSE(ids.empty()) << name;
    // WordPiece lowercases; every other family gives the text back exactly.
    if (tok->model() != "bert") {
      EXPECT_EQ(tok->decode(ids, Detok::Plain), text) << name;
    }
  }
  EXPECT_GT(n, 0);
}

}  // namespace
}  // namespace seam
