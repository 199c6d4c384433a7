#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "compute/cpu_level.h"
#include "core/mapped_file.h"
#include "core/thread_pool.h"
#include "format/hf_model.h"
#include "runtime/forward.h"
#include "runtime/model_impl.h"
#include "seam/error.h"

namespace seam {

namespace {

std::string quant_summary(const GgufFile& file) {
  struct Share {
    std::string name;
    int tensors = 0;
    std::uint64_t bytes = 0;
  };
  std::vector<Share> shares;
  for (const GgufTensor& t : file.tensors()) {
    auto info = tensor_type_info(static_cast<std::uint32_t>(t.type));
    const std::string name = info ? std::string(info->name) : "?";
    auto it =
        std::find_if(shares.begin(), shares.end(), [&](const Share& x) { return x.name == name; });
    if (it == shares.end()) it = shares.insert(shares.end(), Share{name});
    ++it->tensors;
    it->bytes += t.nbytes;
  }
  // Most bytes first: a mix's many small F32 norms do not name the file.
  std::stable_sort(shares.begin(), shares.end(),
                   [](const Share& a, const Share& b) { return a.bytes > b.bytes; });
  std::string s;
  for (const Share& x : shares)
    s += (s.empty() ? "" : ", ") + x.name + " x" + std::to_string(x.tensors);
  return s;
}

// How the model stretches RoPE past its original context, for warnings.
std::string rope_scaling_name(const Hparams& hp) {
  char factor[32];
  std::snprintf(factor, sizeof factor, "%g", hp.rope_scale != 0.0f ? 1.0 / hp.rope_scale : 0.0);
  const std::string orig = std::to_string(hp.n_ctx_orig ? hp.n_ctx_orig : hp.n_ctx_train);
  if (hp.longrope) return "LongRoPE from " + orig;
  if (hp.yarn_ext_factor > 0.0f) return std::string("YaRN x") + factor + " from " + orig;
  if (hp.rope_scale != 1.0f) return std::string("linear x") + factor;
  return "none";
}

ModelInfo describe(const GgufFile& file, const std::string& path, const ModelSpec* spec,
                   const Tokenizer& tok) {
  ModelInfo info;
  info.path = path;
  info.name = file.get_string("general.name").value_or(std::filesystem::path(path).filename());
  info.architecture = file.get_string("general.architecture").value_or("");
  info.n_vocab = static_cast<std::uint32_t>(tok.n_vocab());
  if (spec) {
    info.n_vocab = spec->hp.n_vocab;
    info.n_ctx_train = spec->hp.n_ctx_train;
    info.rope_scaling = rope_scaling_name(spec->hp);
    info.n_embd = spec->hp.n_embd;
    info.n_layer = spec->hp.n_layer;
    info.n_head = spec->hp.n_head;
    info.n_head_kv = spec->hp.n_head_kv;
    info.capabilities.text_generation = true;
  }
  for (const GgufTensor& t : file.tensors()) {
    info.n_params += t.n_elements();
    info.weight_bytes += t.nbytes;
  }
  info.decode_bytes = spec ? decode_bytes(file, *spec) : info.weight_bytes;
  info.quantization = quant_summary(file);
  if (const auto id = file.get_uint("general.file_type")) {
    if (const auto name = file_type_name(static_cast<std::uint32_t>(*id))) info.file_type = *name;
  }
  info.chat_template = file.get_string("tokenizer.chat_template");
  info.capabilities.chat_template = info.chat_template.has_value();
  info.capabilities.tool_use =
      info.chat_template && info.chat_template->find("tools") != std::string::npos;
  return info;
}

}  // namespace

Model::Model(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Model::~Model() = default;

std::shared_ptr<const Model> Model::load(const std::string& path, const LoadOptions& opts) {
  checked_thread_count(opts.n_threads, "LoadOptions::n_threads");
  auto impl = std::make_unique<Impl>();
  // A GGUF file or a Hugging Face directory.
  const bool in_memory = !opts.vocab_only && !opts.mmap;
  impl->file = open_model_file(path, in_memory ? Residency::kInMemory : Residency::kMapped);
  impl->options = opts;
  impl->vocab_only = opts.vocab_only;
  if (!opts.vocab_only) {
    impl->spec = admit_model(impl->file);
  }
  impl->tokenizer = Tokenizer::from_gguf(impl->file);
  if (!opts.vocab_only) {
    if (impl->tokenizer->n_vocab() > impl->spec.hp.n_vocab) {
      throw Error(Errc::BadFormat, "the tokenizer has more tokens than the model's embedding rows");
    }
    impl->weights = bind_weights(impl->file, impl->spec);
  }
  impl->info =
      describe(impl->file, path, opts.vocab_only ? nullptr : &impl->spec, *impl->tokenizer);
  // Everything read from the metadata is copied out by now; the model keeps
  // the file for its tensors alone.
  impl->file.release_metadata();
  return std::shared_ptr<const Model>(new Model(std::move(impl)));
}

Admission admission_verdict(const GgufFile& file) {
  Admission a;
  try {
    admit_model(file);
    Tokenizer::from_gguf(file);
    a.ok = true;
  } catch (const Error& e) {
    if (e.code() != Errc::Unsupported && e.code() != Errc::BadFormat) throw;
    a.reason = e.what();
  }
  return a;
}

Admission Model::admit(const std::string& path) { return admission_verdict(open_model_file(path)); }

bool Model::batch_invariant(const std::string& path, const LoadOptions& opts, const char* level) {
  const std::optional<CpuLevel> at = parse_cpu_level(level ? level : "");
  if (!at) {
    throw Error(Errc::InvalidArgument, std::string("'") + (level ? level : "") +
                                           "' is not a CPU level; use scalar, avx2, avx512 or amx");
  }
  const GgufFile file = open_model_file(path);
  const ModelSpec spec = admit_model(file);
  // Model::load reads the file into memory (and so may interleave it) unless
  // mapping was asked for or the file does not fit (MappedFile's test; a
  // Hugging Face directory by its tensors' bytes).
  std::error_code ec;
  std::uintmax_t bytes = std::filesystem::file_size(path, ec);
  if (ec) {
    bytes = 0;
    for (const GgufTensor& t : file.tensors()) bytes += t.nbytes;
  }
  return seam::batch_invariant(file, spec, *at,
                               !opts.mmap && fits_in_memory(static_cast<std::size_t>(bytes)));
}

const ModelInfo& Model::info() const { return impl_->info; }

std::vector<Token> Model::tokenize(std::string_view text, bool add_bos, bool parse_special) const {
  return impl_->tokenizer->encode(text, add_bos, parse_special);
}

std::string Model::detok(Token token, Detok mode) const {
  return impl_->tokenizer->piece(token, mode);
}

std::string Model::detok(std::span<const Token> tokens, Detok mode) const {
  return impl_->tokenizer->decode(tokens, mode);
}

bool Model::is_eog(Token token) const { return impl_->tokenizer->is_eog(token); }
std::optional<Token> Model::bos() const { return impl_->tokenizer->bos(); }
std::optional<Token> Model::eos() const { return impl_->tokenizer->eos(); }
std::optional<Token> Model::special_token(std::string_view text) const {
  return impl_->tokenizer->find(text);
}

std::unique_ptr<Session> Model::session(const SessionConfig& config) const {
  if (impl_->vocab_only) {
    throw Error(Errc::Unsupported, "this model was loaded vocab-only; load it fully to decode");
  }
  return make_session(*this, config, std::make_unique<CpuBackend>(impl_->options.n_threads));
}

}  // namespace seam
