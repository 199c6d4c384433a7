#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <unordered_map>

#include "runtime/forward.h"
#include "runtime/kv_cache.h"
#include "runtime/model_impl.h"
#include "seam/error.h"

namespace seam {

namespace {

class SessionImpl final : public Session {
 public:
  SessionImpl(const Model& model, const SessionConfig& cfg, std::unique_ptr<ComputeBackend> be)
      : m_(ModelAccess::of(model)),
        cfg_(cfg),
        backend_(std::move(be)),
        kv_(cfg.n_ctx, cfg.n_seq_max, kv_widths(m_.spec),
            cfg.cache_type == CacheType::F32 ? KvType::F32 : KvType::F16),
        scratch_(m_.spec, cfg.n_batch) {}

  void decode(std::span<const Decode> batch) override {
    check_usable();
    validate(batch);
    const std::size_t n_vocab = m_.spec.hp.n_vocab;
    row_of_.assign(batch.size(), -1);
    std::size_t n_out = 0;
    for (std::size_t i = 0; i < batch.size(); ++i) {
      if (batch[i].logits) row_of_[i] = static_cast<std::int64_t>(n_out++);
    }
    if (logits_.size() < n_out * n_vocab) logits_.resize(n_out * n_vocab);
    std::size_t out_row = 0;
    for (std::size_t begin = 0; begin < batch.size(); begin += cfg_.n_batch) {
      const auto ub =
          batch.subspan(begin, std::min<std::size_t>(cfg_.n_batch, batch.size() - begin));
      try {
        const std::vector<std::uint32_t> cells = kv_.allocate(ub);
        forward(m_.spec, m_.weights, *backend_, kv_, ub, cells, scratch_,
                logits_.data() + out_row * n_vocab);
      } catch (const std::exception& e) {
        corrupted_ = true;
        row_of_.clear();
        throw Error(Errc::BackendFailure, std::string("forward pass failed: ") + e.what() +
                                              "; the session is corrupted and must be recreated");
      }
      for (const Decode& d : ub) out_row += d.logits ? 1 : 0;
    }
  }

  std::span<const float> logits(std::size_t ith) const override {
    check_usable();
    if (ith >= row_of_.size() || row_of_[ith] < 0) {
      throw Error(Errc::InvalidArgument,
                  "no logits for batch row " + std::to_string(ith) +
                      ": set Decode::logits on the rows you need in the last decode call");
    }
    const std::size_t n_vocab = m_.spec.hp.n_vocab;
    return {logits_.data() + static_cast<std::size_t>(row_of_[ith]) * n_vocab, n_vocab};
  }

  void clear_seq(std::uint32_t seq) override {
    check_usable();
    check_seq(seq);
    kv_.clear_seq(seq);
  }

  void copy_seq(std::uint32_t src, std::uint32_t dst) override {
    check_usable();
    check_seq(src);
    check_seq(dst);
    kv_.copy_seq(src, dst);
  }

  std::size_t begin_prompt(std::uint32_t seq, std::span<const Token> tokens) override {
    check_usable();
    check_seq(seq);
    std::size_t n = 0;
    for (const auto& [pos, cell] : kv_.seq_cells(seq)) {
      if (n >= tokens.size() || pos != static_cast<std::int32_t>(n) ||
          kv_.cell_token(cell) != tokens[n]) {
        break;
      }
      ++n;
    }
    // The last prompt token is always decoded again: its logits are not cached.
    if (n == tokens.size()) n = tokens.empty() ? 0 : tokens.size() - 1;
    kv_.truncate_seq(seq, static_cast<std::int32_t>(n));
    return n;
  }

  std::uint32_t n_ctx() const override { return kv_.n_cells(); }
  std::uint32_t n_seq_max() const override { return kv_.n_seq_max(); }
  std::uint32_t free_cells() const override { return kv_.free_cells(); }
  std::uint32_t seq_length(std::uint32_t seq) const override {
    check_seq(seq);
    return kv_.seq_length(seq);
  }
  std::int32_t seq_next_pos(std::uint32_t seq) const override {
    check_seq(seq);
    return kv_.seq_next_pos(seq);
  }
  bool corrupted() const override { return corrupted_; }

 private:
  void check_usable() const {
    if (corrupted_) {
      throw Error(Errc::SessionCorrupted,
                  "this session was corrupted by a failed forward pass; create a new session");
    }
  }

  void check_seq(std::uint32_t seq) const {
    if (seq >= kv_.n_seq_max()) {
      throw Error(Errc::InvalidArgument, "sequence id " + std::to_string(seq) +
                                             " is out of range: this session has n_seq_max = " +
                                             std::to_string(kv_.n_seq_max()));
    }
  }

  // Every check happens before anything changes, so a rejected batch leaves
  // the session exactly as it was.
  void validate(std::span<const Decode> batch) const {
    if (batch.empty()) throw Error(Errc::InvalidArgument, "decode called with an empty batch");
    std::unordered_map<std::uint32_t, std::int32_t> last_pos;
    for (std::size_t i = 0; i < batch.size(); ++i) {
      const Decode& d = batch[i];
      const std::string where = "batch row " + std::to_string(i) + ": ";
      if (d.token < 0 || static_cast<std::uint32_t>(d.token) >= m_.spec.hp.n_vocab) {
        throw Error(Errc::InvalidArgument, where + "token id " + std::to_string(d.token) +
                                               " is outside the vocabulary [0, " +
                                               std::to_string(m_.spec.hp.n_vocab) + ")");
      }
      if (d.seq >= kv_.n_seq_max()) {
        throw Error(Errc::InvalidArgument, where + "sequence id " + std::to_string(d.seq) +
                                               " is out of range: this session has n_seq_max = " +
                                               std::to_string(kv_.n_seq_max()));
      }
      if (d.pos < 0) {
        throw Error(Errc::InvalidArgument, where + "negative position " + std::to_string(d.pos));
      }
      auto [it, first] = last_pos.try_emplace(d.seq, kv_.seq_next_pos(d.seq) - 1);
      if (d.pos <= it->second) {
        throw Error(Errc::InvalidArgument,
                    where + "position " + std::to_string(d.pos) + " of sequence " +
                        std::to_string(d.seq) + " does not follow position " +
                        std::to_string(it->second) +
                        "; positions must increase (use clear_seq or begin_prompt to rewind)");
      }
      it->second = d.pos;
    }
    if (batch.size() > kv_.free_cells()) {
      throw Error(Errc::ContextFull,
                  "context full: the batch needs " + std::to_string(batch.size()) +
                      " KV cells but only " + std::to_string(kv_.free_cells()) + " of " +
                      std::to_string(kv_.n_cells()) +
                      " are free; clear finished sequences or use a larger n_ctx");
    }
  }

  const Model::Impl& m_;
  SessionConfig cfg_;
  std::unique_ptr<ComputeBackend> backend_;
  KvCache kv_;
  ForwardScratch scratch_;
  std::vector<float> logits_;         // [n_out][n_vocab] of the last decode
  std::vector<std::int64_t> row_of_;  // batch row -> logits row, or -1
  bool corrupted_ = false;
};

}  // namespace

std::unique_ptr<Session> make_session(const Model& model, const SessionConfig& config,
                                      std::unique_ptr<ComputeBackend> backend) {
  if (config.n_ctx == 0 || config.n_batch == 0 || config.n_seq_max == 0) {
    throw Error(Errc::InvalidArgument, "n_ctx, n_batch and n_seq_max must all be at least 1");
  }
  if (config.n_seq_max > kMaxSequences) {
    throw Error(Errc::InvalidArgument, "n_seq_max " + std::to_string(config.n_seq_max) +
                                           " exceeds the maximum of " +
                                           std::to_string(kMaxSequences));
  }
  if (config.cache_type != CacheType::F32 && config.cache_type != CacheType::F16) {
    throw Error(Errc::InvalidArgument, "unknown KV cache type; use CacheType::F32 or F16");
  }
  if (config.n_ctx > (1u << 24)) {
    throw Error(Errc::InvalidArgument, "n_ctx " + std::to_string(config.n_ctx) + " is too large");
  }
  // A KV cache larger than the machine's memory would only fail later (or
  // swap); refuse it now and say which knob to turn.
  double kv_floats_per_cell = 0;
  for (std::uint32_t w : kv_widths(ModelAccess::of(model).spec)) kv_floats_per_cell += 2.0 * w;
  const double elem_bytes = config.cache_type == CacheType::F16 ? 2.0 : 4.0;
  const double kv_bytes = static_cast<double>(config.n_ctx) * kv_floats_per_cell * elem_bytes;
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  if (pages > 0 && page > 0 && kv_bytes > static_cast<double>(pages) * static_cast<double>(page)) {
    char msg[256];
    std::snprintf(msg, sizeof msg,
                  "a KV cache of %u tokens needs %.1f GiB, more than this machine's %.1f GiB of "
                  "memory; use a smaller context (n_ctx; the CLI's -c)",
                  config.n_ctx, kv_bytes / 1073741824.0,
                  static_cast<double>(pages) * static_cast<double>(page) / 1073741824.0);
    throw Error(Errc::InvalidArgument, msg);
  }
  return std::make_unique<SessionImpl>(model, config, std::move(backend));
}

}  // namespace seam
