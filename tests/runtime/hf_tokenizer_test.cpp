// tokenizer.json -> tokenizer.ggml.*: the shared vocabularies are written as
// Hugging Face tokenizer.json files by tools/hf.py (SPM merges derived from
// scores, byte-level pre-tokenizers spelled as HF spells them), read back
// through hf_tokenizer_metadata, and must reproduce the reference ids of the
// shared tokenizer cases (which come from HF / sentencepiece).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "format/gguf.h"
#include "format/hf_model.h"
#include "python_tools.h"
#include "seam/error.h"
#include "tokenizer/tokenizer.h"

namespace seam {
namespace {

struct VocabCase {
  const char* gguf;   // in shared/tokenizers
  const char* cases;  // JSONL with text / ids / ids_parse_special
  const char* pre;    // tokenizer.ggml.pre expected from the regex match ("" for SPM)
};

class HfTokenizer : public ::testing::TestWithParam<VocabCase> {};

TEST_P(HfTokenizer, TokenizerJsonReproducesTheReferenceIds) {
  const VocabCase& c = GetParam();
  const std::string shared = std::string(SEAM_SHARED_DIR) + "/tokenizers/";
  const std::string dir = testing::scratch_dir() + "/hftok_" + c.gguf;
  if (!std::filesystem::exists(dir + "/tokenizer.json")) {
    const std::string tmp = testing::private_tmp(dir);
    testing::run_command(std::string(SEAM_PYTHON) + " " + SEAM_SOURCE_DIR +
                         "/tools/hf.py tokenizer " + shared + c.gguf + ".gguf --out " + tmp +
                         " && " + testing::publish(tmp, dir));
  }
  const GgufFile file = GgufFile::assemble(dir, hf_tokenizer_metadata(dir), {}, {});
  if (*c.pre) {
    EXPECT_EQ(file.get_string("tokenizer.ggml.pre").value_or(""), c.pre);
  }
  const auto tok = Tokenizer::from_gguf(file);
  const GgufFile original = GgufFile::open(shared + c.gguf + ".gguf");
  const auto ref_tok = Tokenizer::from_gguf(original);
  EXPECT_EQ(tok->n_vocab(), ref_tok->n_vocab());
  EXPECT_EQ(tok->model(), ref_tok->model());
  EXPECT_EQ(tok->bos(), ref_tok->bos());
  EXPECT_EQ(tok->eos(), ref_tok->eos());

  std::ifstream in(shared + c.cases);
  ASSERT_TRUE(in) << c.cases;
  std::string line;
  int n = 0, bad = 0;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const auto j = nlohmann::json::parse(line);
    const std::string text = j["text"].get<std::string>();
    const auto want = j["ids"].get<std::vector<Token>>();
    const auto got = tok->encode(text, false, false);
    ++n;
    if (got != want) {
      if (++bad <= 5) ADD_FAILURE() << c.gguf << ": ids differ for " << j["text"].dump();
    }
    if (j.contains("ids_parse_special")) {
      EXPECT_EQ(tok->encode(text, false, true), j["ids_parse_special"].get<std::vector<Token>>())
          << j["text"].dump();
    }
  }
  EXPECT_GT(n, 20);
  EXPECT_EQ(bad, 0) << bad << " of " << n << " cases differ";
}

INSTANTIATE_TEST_SUITE_P(
    Vocabs, HfTokenizer,
    ::testing::Values(VocabCase{"llama2-vocab", "llama2-cases.jsonl", ""},
                      VocabCase{"ggml-vocab-gpt-2", "gpt2-cases.jsonl", "gpt-2"},
                      VocabCase{"llama3-vocab", "llama3-cases.jsonl", "llama-bpe"},
                      VocabCase{"qwen2-vocab", "qwen2-cases.jsonl", "qwen2"},
                      VocabCase{"ggml-vocab-starcoder", "ggml-vocab-starcoder.upstream-cases.jsonl",
                                "starcoder"}),
    [](const ::testing::TestParamInfo<VocabCase>& i) {
      std::string s = i.param.gguf;
      for (char& ch : s) {
        if (ch == '-') ch = '_';
      }
      return s;
    });

}  // namespace
}  // namespace seam
