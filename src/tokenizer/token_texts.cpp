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

void TokenTexts::build_index() {
  slots_.assign(std::bit_ceil(std::max<std::size_t>(2 * size(), 2)), -1);
  const std::size_t mask = slots_.size() - 1;
  for (std::size_t id = 0; id < size(); ++id) {
    const std::string_view text = (*this)[id];
    std::size_t at = std::hash<std::string_view>{}(text)&mask;
    while (slots_[at] >= 0 && (*this)[static_cast<std::size_t>(slots_[at])] != text)
      at = (at + 1) & mask;
    if (slots_[at] < 0) slots_[at] = static_cast<Token>(id);  // else a lower id has it
  }
}

std::optional<Token> TokenTexts::find(std::string_view text) const {
  if (slots_.empty()) return std::nullopt;
  const std::size_t mask = slots_.size() - 1;
  for (std::size_t at = std::hash<std::string_view>{}(text)&mask; slots_[at] >= 0;
       at = (at + 1) & mask) {
    if ((*this)[static_cast<std::size_t>(slots_[at])] == text) return slots_[at];
  }
  return std::nullopt;
}

}  // namespace seam
