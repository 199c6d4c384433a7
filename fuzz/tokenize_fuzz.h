// Tokenization fuzzing: arbitrary bytes through every tokenizer family, with
// the real vocabularies in ../shared/tokenizers. One input: a byte choosing
// the tokenizer, a byte of flags (add_special, parse_special), then the text.
// The tokenizers: SentencePiece (llama2, phi-3), byte-level BPE with every
// pre-tokenizer family this build implements (the GPT-2 vocabulary with its
// tokenizer.ggml.pre rewritten, plus the real qwen2/llama3/deepseek/falcon/
// starcoder vocabularies with their own), WordPiece (bert-bge) and Unigram
// (the llama2 pieces and scores read as a "t5" vocabulary). Every id must be
// in the vocabulary and must decode; only seam::Error may come out.
// Header-only so the libFuzzer binary, the standalone driver and the gtest in
// tests/tokenizer share one definition.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "fixtures.h"
#include "format/gguf.h"
#include "seam/error.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/tokenizer.h"

namespace seam::fuzz {

// One tokenizer of the set: a vocabulary file and the metadata rewritten in it.
struct TokenizerSpec {
  std::string name;   // for messages: "spm:llama2", "bpe:qwen2", "bpe-pre:falcon", ...
  std::string vocab;  // file name under ../shared/tokenizers
  std::string model;  // tokenizer.ggml.model to set; empty: as in the file
  std::string pre;    // tokenizer.ggml.pre to set; empty: as in the file
};

inline std::vector<TokenizerSpec> tokenizer_specs() {
  std::vector<TokenizerSpec> s = {
      {"spm:llama2", "llama2-vocab.gguf", "", ""},
      {"spm:phi-3", "ggml-vocab-phi-3.gguf", "", ""},
      {"wpm:bert-bge", "ggml-vocab-bert-bge.gguf", "", ""},
      {"ugm:llama2-pieces", "llama2-vocab.gguf", "t5", ""},
      {"bpe:qwen2", "qwen2-vocab.gguf", "", ""},
      {"bpe:llama3", "llama3-vocab.gguf", "", ""},
      {"bpe:deepseek-coder", "ggml-vocab-deepseek-coder.gguf", "", ""},
      {"bpe:deepseek-llm", "ggml-vocab-deepseek-llm.gguf", "", ""},
      {"bpe:falcon", "ggml-vocab-falcon.gguf", "", ""},
      {"bpe:starcoder", "ggml-vocab-starcoder.gguf", "", ""},
      {"bpe:mpt", "ggml-vocab-mpt.gguf", "", ""},
      {"bpe:refact", "ggml-vocab-refact.gguf", "", ""},
  };
  for (const Family& f : pre_families()) {
    s.push_back({"bpe-pre:" + std::string(f.name), "ggml-vocab-gpt-2.gguf",
                 (f.flags & kMetaspace) ? "gemma4" : "", std::string(f.name)});
  }
  return s;
}

// The set, each tokenizer built on first use (the byte-level ones are ~10 MB each).
class TokenizerSet {
 public:
  explicit TokenizerSet(std::string dir = shared_dir() + "/tokenizers")
      : dir_(std::move(dir)), specs_(tokenizer_specs()), built_(specs_.size()) {}

  std::size_t size() const { return specs_.size(); }
  const TokenizerSpec& spec(std::size_t i) const { return specs_[i]; }

  // Error(...) when the spec's vocabulary cannot be read or built.
  const Tokenizer& get(std::size_t i) {
    if (!built_[i]) built_[i] = build(specs_[i]);
    return *built_[i];
  }

 private:
  std::unique_ptr<Tokenizer> build(const TokenizerSpec& s) {
    const GgufFile& f = file(s.vocab);
    if (s.model.empty() && s.pre.empty()) return Tokenizer::from_gguf(f);
    GgufWriter w;
    for (const auto& [key, value] : f.metadata()) w.set(key, value);
    if (!s.model.empty()) w.set("tokenizer.ggml.model", GgufValue::str(s.model));
    if (!s.pre.empty()) w.set("tokenizer.ggml.pre", GgufValue::str(s.pre));
    const std::vector<std::byte> bytes = w.to_bytes();
    return Tokenizer::from_gguf(GgufFile::parse(bytes, s.name));
  }

  const GgufFile& file(const std::string& name) {
    for (auto& [n, f] : files_)
      if (n == name) return f;
    files_.emplace_back(name, GgufFile::open(dir_ + "/" + name));
    return files_.back().second;
  }

  std::string dir_;
  std::vector<TokenizerSpec> specs_;
  std::vector<std::unique_ptr<Tokenizer>> built_;
  std::vector<std::pair<std::string, GgufFile>> files_;
};

// Runs one input; a tokenizer that cannot be built is a seam::Error too.
inline void tokenize_one_input(TokenizerSet& set, const std::uint8_t* data, std::size_t size) {
  if (size < 2) return;
  const std::size_t which = data[0] % set.size();
  const bool add_special = data[1] & 1, parse_special = data[1] & 2;
  const std::string_view text(reinterpret_cast<const char*>(data + 2), size - 2);
  const Tokenizer& t = set.get(which);
  const std::vector<Token> ids = t.encode(text, add_special, parse_special);
  for (Token id : ids) {
    if (id < 0 || static_cast<std::size_t>(id) >= t.n_vocab()) {
      std::fprintf(stderr, "tokenize fuzz: %s gave id %d of %zu\n", set.spec(which).name.c_str(),
                   static_cast<int>(id), t.n_vocab());
      std::abort();
    }
  }
  (void)t.decode(ids, Detok::Text);
  (void)t.decode(ids, Detok::Plain);
}

// Text that reaches each family's special cases, once per tokenizer.
inline std::vector<std::string> tokenize_seeds(std::size_t n_tokenizers) {
  static const char* const kTexts[] = {
      "Hello world! It's 2025-02-05, 12345678 items.\n\n  \tindented   spaces",
      "<s>[INST] <<SYS>>\nbe nice\n<</SYS>> hi [/INST]</s><|im_start|>user\n<|endoftext|>",
      "caf\xc3\xa9 na\xc3\xafve \xe4\xb8\xad\xe6\x96\x87 \xf0\x9f\x98\x80 \xd0\x9f\xd1\x80\xd0\xb8",
      "bad utf-8: \xd0 \xff\xfe \xe4\xb8 \xf0\x9f\x98 \xc0\xaf end",
      "camelCaseWord HTTPServer __init__(self, x=1): return {'a': [1, 2.5e-3]}",
      "wide \xef\xbc\xa8\xef\xbd\x85 zero-width\xe2\x80\x8b mark \xcc\x81\x65\xcc\x81",
  };
  std::vector<std::string> seeds;
  for (std::size_t i = 0; i < n_tokenizers; ++i) {
    for (std::size_t k = 0; k < std::size(kTexts); ++k) {
      std::string s(2, '\0');
      s[0] = static_cast<char>(i);
      s[1] = static_cast<char>(k & 3);
      seeds.push_back(s + kTexts[k]);
    }
  }
  return seeds;
}

}  // namespace seam::fuzz
