// Incremental tokenization: any split of the text gives the tokens of the
// whole text, with byte offsets that spell the input back.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "observe/stream_tokenizer.h"
#include "seam/model.h"

namespace seam::observe {
namespace {

const char* kText =
    "Once upon a time, there was a little girl named Lily. She liked to play outside.\n"
    "One day,  she saw a big   dog!! It was 12345 years old... \"Hello,\" said the dog.\n"
    "\n\n  Indented line with\ttabs and trailing spaces   \n"
    "Numbers: 3.14159, 2718281828; words: incomprehensibilities, antidisestablishment.\n"
    "Unicode: café, naïve, 日本語のテキスト, emoji 🙂 and Ελληνικά.\n"
    "end";

std::vector<StreamToken> run(const Model& m, const std::string& text, std::size_t chunk) {
  StreamTokenizer t(m);
  std::vector<StreamToken> out;
  for (std::size_t p = 0; p < text.size(); p += chunk) {
    auto got = t.feed(std::string_view(text).substr(p, chunk));
    out.insert(out.end(), got.begin(), got.end());
  }
  auto rest = t.finish();
  out.insert(out.end(), rest.begin(), rest.end());
  return out;
}

void check_model(const std::string& path) {
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " is absent";
  LoadOptions lo;
  lo.vocab_only = true;
  auto m = Model::load(path, lo);
  const std::string text = kText;
  const std::vector<Token> whole = m->tokenize(text, false, false);
  for (std::size_t chunk : {std::size_t{1}, std::size_t{2}, std::size_t{7}, std::size_t{4096}}) {
    const std::vector<StreamToken> got = run(*m, text, chunk);
    std::vector<Token> ids;
    std::string spelled;
    std::uint64_t next = 0;
    for (const StreamToken& t : got) {
      ids.push_back(t.id);
      EXPECT_EQ(t.offset, next) << path << " chunk " << chunk;
      next = t.offset + t.bytes.size();
      spelled += t.bytes;
    }
    EXPECT_EQ(ids, whole) << path << " chunk " << chunk;
    EXPECT_EQ(spelled, text) << path << " chunk " << chunk;
  }
}

class StreamTokenizerVocab : public ::testing::TestWithParam<std::string> {};

TEST_P(StreamTokenizerVocab, AnySplitGivesTheWholeTextsTokens) {
  check_model(std::string(SEAM_SHARED_DIR) + "/" + GetParam());
}

INSTANTIATE_TEST_SUITE_P(
    Vocabularies, StreamTokenizerVocab,
    ::testing::Values("models/stories260K.gguf", "tokenizers/llama2-vocab.gguf",
                      "tokenizers/llama3-vocab.gguf", "tokenizers/qwen2-vocab.gguf",
                      "tokenizers/ggml-vocab-gpt-2.gguf", "tokenizers/ggml-vocab-phi-3.gguf",
                      "tokenizers/ggml-vocab-falcon.gguf", "tokenizers/ggml-vocab-starcoder.gguf"),
    [](const auto& info) {
      std::string n = std::filesystem::path(info.param).stem().string();
      for (char& c : n)
        if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
      return n;
    });

TEST(StreamTokenizer, BundledModel) {
  check_model(std::string(SEAM_SOURCE_DIR) + "/models/seam-kjv.gguf");
}

TEST(StreamTokenizer, HoldsTheWordBeingWritten) {
  auto m = Model::load(std::string(SEAM_SHARED_DIR) + "/models/stories260K.gguf",
                       {.n_threads = 1, .vocab_only = true});
  StreamTokenizer t(*m);
  EXPECT_TRUE(t.feed("Once upo").size() == 1u);  // "Once" is safe, "upo" may grow
  auto more = t.feed("n a time");
  std::string s;
  for (auto& x : more) s += x.bytes;
  EXPECT_EQ(s, " upon a");
  auto rest = t.finish();
  s.clear();
  for (auto& x : rest) s += x.bytes;
  EXPECT_EQ(s, " time");
}

}  // namespace
}  // namespace seam::observe
