// Constructors of the tokenizer families; from_gguf picks one by tokenizer.ggml.model.
#pragma once

#include <memory>

#include "tokenizer/tokenizer.h"

namespace seam {

std::unique_ptr<Tokenizer> make_spm_tokenizer(Vocab v, const GgufFile& file);
std::unique_ptr<Tokenizer> make_bpe_tokenizer(Vocab v, const GgufFile& file);
std::unique_ptr<Tokenizer> make_wpm_tokenizer(Vocab v, const GgufFile& file);

}  // namespace seam
