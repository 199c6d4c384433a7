// A vocabulary's token texts in one buffer, with an index from text to id.
//
// A 128k-token vocabulary as std::strings in a vector, indexed by an
// unordered_map, is ~10 MiB of small allocations; here it is the bytes, one
// end offset per token and a table of ids (~2.5 MiB), built once at load.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "seam/types.h"

namespace seam {

class TokenTexts {
 public:
  void reserve(std::size_t n_tokens, std::size_t n_bytes);
  // Error(BadFormat) past 4 GiB of text in all.
  void push_back(std::string_view text);
  // Indexes every text pushed so far; find() reads the index.
  void build_index();

  std::size_t size() const { return ends_.size(); }
  std::string_view operator[](std::size_t i) const {
    const std::uint32_t begin = i == 0 ? 0 : ends_[i - 1];
    return {bytes_.data() + begin, ends_[i] - begin};
  }
  // The lowest id whose text is `text`.
  std::optional<Token> find(std::string_view text) const;

 private:
  // Where `text` is in slots_, or the empty slot where it would go.
  std::size_t slot_of(std::string_view text) const;

  std::vector<char> bytes_;
  std::vector<std::uint32_t> ends_;  // [n] where each text ends in bytes_
  std::vector<Token> slots_;         // open addressing, a power of two at most half full; -1 empty
};

}  // namespace seam
