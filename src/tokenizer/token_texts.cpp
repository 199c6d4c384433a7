#include "tokenizer/token_texts.h"

#include <algorithm>
#include <bit>
#include <functional>
#include <limits>

#include "seam/error.h"

namespace seam {

void TokenTexts::reserve(std::size_t n_tokens, std::size_t n_bytes) {
  ends_.reserve(n_tokens);
  bytes_.reserve(n_bytes);
}

void TokenTexts::push_back(std::string_view text) {
  if (text.size() > std::numeric_limits<std::uint32_t>::max() - bytes_.size()) {
    throw Error(Errc::BadFormat, "the vocabulary's token texts exceed 4 GiB");
  }
  bytes_.insert(bytes_.end(), text.begin(), text.end());
  ends_.push_back(static_cast<std::uint32_t>(bytes_.size()));
}

std::size_t TokenTexts::slot_of(std::string_view text) const {
  const std::size_t mask = slots_.size() - 1;
  const std::size_t hash = std::hash<std::string_view>{}(text);
  std::size_t at = hash & mask;
  while (slots_[at] >= 0 && (*this)[static_cast<std::size_t>(slots_[at])] != text)
    at = (at + 1) & mask;
  return at;
}

void TokenTexts::build_index() {
  slots_.assign(std::bit_ceil(std::max<std::size_t>(2 * size(), 2)), -1);
  for (std::size_t id = 0; id < size(); ++id) {
    Token& slot = slots_[slot_of((*this)[id])];
    if (slot < 0) slot = static_cast<Token>(id);  // else a lower id has this text
  }
}

std::optional<Token> TokenTexts::find(std::string_view text) const {
  if (slots_.empty()) return std::nullopt;
  const Token id = slots_[slot_of(text)];
  return id >= 0 ? std::optional<Token>(id) : std::nullopt;
}

}  // namespace seam
