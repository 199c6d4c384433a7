// WordPiece (tokenizer.ggml.model = "bert").
#include "format/gguf.h"
#include "seam/error.h"
#include "tokenizer/families.h"

namespace seam {

std::unique_ptr<Tokenizer> make_wpm_tokenizer(Vocab v, const GgufFile& file) {
  throw Error(Errc::Unsupported, "[tokenizer] " + file.source() +
                                     ": WordPiece ('bert') vocabularies are not supported yet (" +
                                     std::to_string(v.text.size()) + " tokens)");
}

}  // namespace seam
