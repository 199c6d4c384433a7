#include "observe/stream_tokenizer.h"

#include <algorithm>

namespace seam::observe {

namespace {

constexpr std::size_t kContextTokens = 16;  // committed tokens re-tokenized as left context
// Without whitespace (a long number, base64, text in a script without spaces)
// there is no word boundary to wait for: past this many uncommitted bytes,
// everything but the last kNoSpaceTail bytes' tokens is committed.
constexpr std::size_t kNoSpaceLimit = 256;
constexpr std::size_t kNoSpaceTail = 64;

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

// Where a word boundary lets tokens be committed: the start of the last run of
// whitespace in `s` (tokens ending at or before it no longer change), or 0.
std::size_t commit_boundary(std::string_view s) {
  std::size_t i = s.size();
  while (i > 0 && !is_space(s[i - 1])) --i;
  if (i == 0) return s.size() > kNoSpaceLimit ? s.size() - kNoSpaceTail : 0;
  while (i > 0 && is_space(s[i - 1])) --i;
  return i;
}

}  // namespace

StreamTokenizer::StreamTokenizer(const Model& model) : model_(model) {
  // SentencePiece-style tokenizers put a space in front of the text ("a" -> "▁a").
  const std::vector<Token> probe = model.tokenize("a", false, false);
  std::string pieces;
  for (Token t : probe) pieces += model.detok(t, Detok::Text);
  dummy_prefix_ = pieces == " a";
}

std::vector<StreamToken> StreamTokenizer::feed(std::string_view text) {
  pending_.append(text);
  return commit(false);
}

std::vector<StreamToken> StreamTokenizer::finish() { return commit(true); }

std::vector<StreamToken> StreamTokenizer::commit(bool all) {
  std::vector<StreamToken> out;
  if (pending_.empty()) return out;
  const std::size_t limit = all ? pending_.size() : commit_boundary(pending_);
  if (limit == 0) return out;

  // Left context: the last committed tokens, from the latest one that starts
  // a word (a space: for a dummy-prefix tokenizer that space then plays the
  // dummy's part, as it does in the whole text), else from the first that
  // starts a UTF-8 character (byte-level tokens may split one).
  std::size_t from = context_.size();
  for (std::size_t k = context_.size(); k-- > 0;) {
    if (!context_[k].bytes.empty() && context_[k].bytes[0] == ' ') {
      from = k;
      break;
    }
  }
  if (from == context_.size()) {
    for (std::size_t k = 0; k < context_.size(); ++k) {
      const std::string& b = context_[k].bytes;
      if (!b.empty() && (static_cast<unsigned char>(b[0]) & 0xC0) != 0x80) {
        from = k;
        break;
      }
    }
  }
  std::string ctx;
  for (std::size_t k = from; k < context_.size(); ++k) ctx += context_[k].bytes;

  // The text handed to the tokenizer and what its pieces must spell.
  std::string body = ctx + pending_;
  std::size_t fake = 0;  // bytes the pieces hold that the input does not
  if (dummy_prefix_) {
    if (!body.empty() && body[0] == ' ' && consumed_ > 0) {
      body.erase(0, 1);  // the dummy space stands for this one
    } else {
      fake = 1;  // the dummy space is an addition (faithful at the start of the input)
    }
  }
  const std::vector<Token> ids = model_.tokenize(body, false, false);
  std::vector<std::string> pieces;
  pieces.reserve(ids.size());
  std::string spelled;
  for (Token t : ids) {
    pieces.push_back(model_.detok(t, Detok::Text));
    spelled += pieces.back();
  }
  // The dummy space is in the pieces whether it stands for a real space or not.
  const std::string expect = std::string(dummy_prefix_ ? " " : "") + body;
  // Position in `spelled` of input byte consumed_ (the start of pending_).
  const std::size_t lead = expect.size() - pending_.size();

  std::size_t j = 0, cum = 0;
  bool aligned = spelled == expect;
  if (aligned && lead > fake) {
    while (j < ids.size() && cum < lead) cum += pieces[j++].size();
    aligned = cum == lead;
  }
  if (!aligned) {
    // The pieces do not spell the input (a normalizing tokenizer, invalid
    // UTF-8 read as U+FFFD) or the last commit no longer falls on a token
    // boundary: tokenize the committable text alone and attribute bytes by
    // piece length, clamped to that text.
    std::string alone = pending_.substr(0, limit);
    std::size_t skip = 0;
    if (dummy_prefix_ && consumed_ > 0 && !alone.empty() && alone[0] == ' ') {
      alone.erase(0, 1);
    } else if (dummy_prefix_) {
      skip = 1;
    }
    const std::vector<Token> a = model_.tokenize(alone, false, false);
    std::size_t pos = 0;
    for (std::size_t k = 0; k < a.size(); ++k) {
      std::string p = model_.detok(a[k], Detok::Text);
      std::size_t len = p.size();
      if (k == 0 && skip) len = len > 0 ? len - 1 : 0;
      if (k + 1 == a.size()) len = limit - std::min(pos, limit);
      len = std::min(len, limit - std::min(pos, limit));
      out.push_back({a[k], consumed_ + pos, pending_.substr(pos, len)});
      pos += len;
    }
    consumed_ += limit;
    pending_.erase(0, limit);
  } else {
    // Tokens of pending_ start at j; commit those that end by `limit`.
    std::size_t pos = 0;  // in pending_
    for (std::size_t k = j; k < ids.size(); ++k) {
      std::size_t len = pieces[k].size();
      if (k == 0 && fake) len -= std::min<std::size_t>(len, fake);
      if (pos + len > limit) break;
      out.push_back({ids[k], consumed_ + pos, pending_.substr(pos, len)});
      pos += len;
    }
    consumed_ += pos;
    pending_.erase(0, pos);
  }
  for (const StreamToken& t : out) {
    context_.push_back(t);
    if (context_.size() > kContextTokens) context_.pop_front();
  }
  return out;
}

}  // namespace seam::observe
