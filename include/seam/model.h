// seam::Model — a loaded checkpoint: weights (memory-mapped, in their file
// format), hyperparameters, tokenizer and chat template. Immutable after load
// and safe to share across threads; every Session holds a reference to it (a session
// may outlive the caller's pointer to its model).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "seam/session.h"
#include "seam/types.h"

namespace seam {

// What this loaded checkpoint can actually do.
struct Capabilities {
  bool text_generation = false;  // has weights and an LM head
  bool chat_template = false;    // carries a chat template
  bool tool_use = false;         // its chat template renders `tools`
  bool embeddings = false;       // can return hidden states (not yet offered)
};

struct ModelInfo {
  std::string path{};
  std::string name{};          // general.name, or the file name
  std::string architecture{};  // general.architecture, e.g. "llama"
  std::uint32_t n_vocab = 0;
  std::uint32_t n_ctx_train = 0;
  std::string rope_scaling = "none";  // e.g. "linear x4", "YaRN x4 from 32768", "LongRoPE"
  std::uint32_t n_embd = 0;
  std::uint32_t n_layer = 0;
  std::uint32_t n_head = 0;
  std::uint32_t n_head_kv = 0;
  std::uint64_t n_params = 0;      // elements of all weights
  std::uint64_t weight_bytes = 0;  // bytes of all weights as stored
  // Bytes of weights one decoded token reads: all of them but the experts a
  // router did not choose and the other rows of an input embedding that is not
  // also the output matrix. Decode speed is bounded by DRAM bandwidth / this.
  std::uint64_t decode_bytes = 0;
  std::string quantization{};  // tensors per type, most bytes first: "Q4_K x25, Q6_K x5, F32 x9"
  std::string file_type{};  // general.file_type as llama.cpp names it ("Q4_K_M"); empty if unsaid
  Capabilities capabilities{};
  std::optional<std::string> chat_template{};
};

// The verdict of the admission check, made from the file header alone before
// any weight is touched.
struct Admission {
  bool ok = false;
  std::string reason{};  // why not, e.g. "tensor blk.3.ffn_up.weight has type IQ2_XS, which
                         // this build cannot decode"; empty when ok
};

struct LoadOptions {
  int n_threads = 0;        // compute threads for sessions: 0 = one per core, at most 512
  bool vocab_only = false;  // load only the tokenizer (tensors may be absent)
  // Weights are read into memory, where decode runs fastest (docs/library.md);
  // true serves them from a memory map of the file instead (opens at once,
  // shares the page cache with other processes). A model larger than the
  // memory available is mapped either way.
  bool mmap = false;
};

class Model : public std::enable_shared_from_this<Model> {
 public:
  // Loads a GGUF file. Runs admission first and throws Error(Unsupported or
  // BadFormat) with its reason; Error(Io) when the file cannot be read.
  static std::shared_ptr<const Model> load(const std::string& path, const LoadOptions& opts = {});
  // Reads only the header of `path` and says whether this build can run it.
  // Throws only for unreadable or corrupt files.
  static Admission admit(const std::string& path);
  // Whether the model at `path`, loaded with `opts` at the CPU kernel level
  // named `level` (seam/cpu.h: "scalar", "avx2", "avx512", "amx"), gives a
  // sequence the same logits, bit for bit, whatever else shares its decode
  // calls: every matrix product's kernels at that level add a token's row in
  // one order for the weights' types and layout (attention always does;
  // docs/server.md, "Batch invariance"). seam serve picks its level by it.
  // Reads the header only. Throws Error(InvalidArgument) for an unknown level
  // and what admit() would report for a file this build cannot run.
  static bool batch_invariant(const std::string& path, const LoadOptions& opts, const char* level);

  virtual ~Model();
  const ModelInfo& info() const;

  // Text -> tokens. `add_bos` adds BOS/EOS as the model's metadata says;
  // `parse_special` recognises special-token text such as "<|im_end|>".
  std::vector<Token> tokenize(std::string_view text, bool add_bos, bool parse_special) const;
  // The bytes one token contributes to the text (may be part of a UTF-8 character).
  std::string detok(Token token, Detok mode) const;
  // The text of a token sequence.
  std::string detok(std::span<const Token> tokens, Detok mode) const;
  bool is_eog(Token token) const;  // every end-of-generation id, not only EOS
  std::optional<Token> bos() const;
  std::optional<Token> eos() const;
  std::optional<Token> special_token(std::string_view text) const;  // exact vocab lookup

  // A new session with its own KV cache. Throws Error(InvalidArgument) for a
  // config out of range, Error(Unsupported) for a vocab-only model.
  std::unique_ptr<Session> session(const SessionConfig& config) const;

  struct Impl;  // defined in the runtime, opaque to callers

 private:
  friend struct ModelAccess;  // the runtime's way in (src/runtime/model_impl.h)
  explicit Model(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace seam
