// GgufFile::assemble: a GgufFile over tensors that live in other memory.
#include "format/gguf.h"
#include "seam/error.h"

namespace seam {

GgufFile GgufFile::assemble(std::string source_name,
                            std::vector<std::pair<std::string, GgufValue>> metadata,
                            std::vector<GgufTensor> tensors,
                            std::vector<std::shared_ptr<const void>> keepalive,
                            std::vector<std::shared_ptr<const MappedFile>> mappings) {
  GgufFile g;
  g.source_ = std::move(source_name);
  g.version_ = 3;
  const auto fail = [&](const std::string& what) {
    throw Error(Errc::BadFormat, g.source_ + ": " + what);
  };
  g.kv_ = std::move(metadata);
  for (std::size_t i = 0; i < g.kv_.size(); ++i) {
    if (!g.kv_index_.emplace(g.kv_[i].first, i).second) {
      fail("metadata key '" + g.kv_[i].first + "' appears twice");
    }
  }
  g.tensors_ = std::move(tensors);
  for (std::size_t i = 0; i < g.tensors_.size(); ++i) {
    GgufTensor& t = g.tensors_[i];
    if (!g.tensor_index_.emplace(t.name, i).second) fail("tensor '" + t.name + "' appears twice");
    if (t.ne.empty()) fail("tensor '" + t.name + "' has no dimensions");
    const auto rb = row_bytes(t.type, t.ne[0]);
    if (!rb || *rb * t.n_rows() != t.nbytes) {
      fail("tensor '" + t.name + "' holds " + std::to_string(t.nbytes) +
           " bytes, which does not match its type and shape");
    }
    if (t.nbytes > 0 && t.data == nullptr) fail("tensor '" + t.name + "' has no data");
    t.offset = 0;
  }
  g.keepalive_ = std::move(keepalive);
  g.mappings_ = std::move(mappings);
  return g;
}

}  // namespace seam
