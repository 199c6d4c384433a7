// Tokenizers read from a GGUF file's `tokenizer.ggml.*` metadata.
//
// Families (tokenizer.ggml.model):
//   "llama" - SentencePiece-style BPE: pieces merged by score, '▁' for spaces,
//             a dummy-prefix space, <0xXX> byte fallback.
//   "gpt2"  - byte-level BPE: the pre-tokenizer regex named by tokenizer.ggml.pre,
//             the GPT-2 byte<->unicode alphabet, merges applied by rank.
//   "gemma4" - SentencePiece-style BPE: '▁' for spaces, merges by rank over
//             UTF-8 characters, <0xXX> byte fallback, cut only at newline runs.
//   "bert"  - WordPiece (greedy longest-prefix, "##" continuations).
//   "t5"    - Unigram: precompiled-charsmap normalization, Viterbi over scores.
// Anything else, and any pre-tokenizer name we do not know, is refused by name.
//
// A Tokenizer is immutable after construction and safe to use from many
// threads at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "seam/types.h"
#include "tokenizer/token_texts.h"

namespace seam {

class GgufFile;

// tokenizer.ggml.token_type values 1..6 in this order (0, "undefined", reads as Normal).
enum class TokenAttr : std::uint8_t { Normal, Unknown, Control, UserDefined, Unused, Byte };

// Everything the families share, as read from the file. Built by from_gguf.
struct Vocab {
  TokenTexts text;                   // [n_vocab] raw vocab strings, indexed (text.find)
  std::vector<float> score;          // [n_vocab] SPM merge priority (0 where absent)
  std::vector<TokenAttr> attr;       // [n_vocab]
  std::vector<std::uint8_t> rstrip;  // [n_vocab] 1: whitespace after this special token is dropped

  std::string model;  // tokenizer.ggml.model
  std::string pre;    // tokenizer.ggml.pre ("default" when absent)
  std::optional<Token> bos, eos, unk, sep, pad, eot, eom;
  bool add_bos = false, add_eos = false;
  std::vector<Token> eog;  // sorted, unique
};

class Tokenizer {
 public:
  // Reads the tokenizer from a GGUF file's metadata. Throws Error(Unsupported)
  // naming an unknown tokenizer.ggml.model or tokenizer.ggml.pre, and
  // Error(BadFormat) for missing or inconsistent arrays (lengths, ids out of range,
  // malformed merges).
  static std::unique_ptr<Tokenizer> from_gguf(const GgufFile& file);
  virtual ~Tokenizer();

  std::size_t n_vocab() const { return v_.text.size(); }
  const std::string& model() const { return v_.model; }
  const std::string& pre() const { return v_.pre; }

  // Text -> token ids. `add_special` adds BOS/EOS as the file says
  // (tokenizer.ggml.add_bos_token / add_eos_token, with llama.cpp's defaults per
  // family). `parse_special` lets control tokens written in the text ("<|im_end|>")
  // become single tokens; user-defined tokens are split out either way. Input that
  // is not valid UTF-8 is tokenized, never rejected: SPM falls back to byte tokens,
  // byte-level BPE reads each invalid byte as U+FFFD (as llama.cpp does).
  std::vector<Token> encode(std::string_view text, bool add_special, bool parse_special) const;

  // The bytes token `t` contributes to the text: byte tokens give their raw byte,
  // SPM '▁' gives ' ', byte-level symbols give their bytes. Control, unknown and
  // unused tokens render as their text with Detok::Text and as "" with Detok::Plain.
  // A piece may be part of a UTF-8 character. Error(InvalidArgument) if out of range.
  std::string piece(Token t, Detok mode) const;

  // The concatenated pieces. For SPM vocabularies that add a dummy-prefix space,
  // the leading space of the first token after any leading control tokens is
  // removed, so decode(encode(s)) == s.
  std::string decode(std::span<const Token> tokens, Detok mode) const;

  std::string_view token_text(Token t) const;  // raw vocab string
  TokenAttr attr(Token t) const;
  float score(Token t) const;
  std::optional<Token> bos() const { return v_.bos; }
  std::optional<Token> eos() const { return v_.eos; }
  std::optional<Token> eot() const { return v_.eot; }
  std::optional<Token> unk() const { return v_.unk; }
  bool add_bos() const { return v_.add_bos; }
  bool add_eos() const { return v_.add_eos; }

  // End-of-generation: EOS, EOT, EOM and every token llama.cpp treats as ending a
  // turn (<|im_end|>, <|eot_id|>, <end_of_turn>, <|endoftext|>, ...).
  bool is_eog(Token t) const;
  const std::vector<Token>& eog_tokens() const { return v_.eog; }

  std::optional<Token> find(std::string_view text) const;  // exact vocab lookup

 protected:
  explicit Tokenizer(Vocab v);

  // Tokenizes a stretch of text that holds no special token. `after_special` is
  // true at the start of the text and right after a special token.
  virtual void encode_fragment(std::string_view text, bool after_special,
                               std::vector<Token>& out) const = 0;
  // How a Normal/Byte token renders; other attributes are handled here.
  virtual std::string normal_piece(Token t) const = 0;
  // Whether decode() drops the first token's leading space (SPM dummy prefix).
  virtual bool strips_leading_space() const { return false; }

  void check(Token t) const;

  Vocab v_;

 private:
  // A byte trie over the special tokens' texts, for leftmost-longest splitting.
  struct TrieNode {
    std::vector<std::pair<unsigned char, std::uint32_t>> next;  // sorted by byte
    Token token = -1;
  };
  std::vector<TrieNode> trie_;
  void build_trie();
};

}  // namespace seam
