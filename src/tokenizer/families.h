// Constructors of the tokenizer families; from_gguf picks one by tokenizer.ggml.model.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace seam {

std::unique_ptr<Tokenizer> make_spm_tokenizer(Vocab v, const GgufFile& file);
std::unique_ptr<Tokenizer> make_bpe_tokenizer(Vocab v, const GgufFile& file);
std::unique_ptr<Tokenizer> make_wpm_tokenizer(Vocab v, const GgufFile& file);
std::unique_ptr<Tokenizer> make_ugm_tokenizer(Vocab v, const GgufFile& file);

// Every tokenizer.ggml.pre name the BPE family accepts.
std::vector<std::string_view> bpe_pre_names();
// The pre-tokens BPE cuts `text` into under pre-tokenizer `pre`, after the
// family's normalization (NFC, U+2581 for spaces) and before any merge.
// Error(Unsupported) for a name bpe_pre_names() lacks.
std::vector<std::string> pre_tokenize(std::string_view pre, std::string_view text);

}  // namespace seam
