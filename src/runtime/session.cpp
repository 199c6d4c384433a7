#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>

#include "runtime/forward.h"
#include "runtime/kv_cache.h"
#include "runtime/kv_shift.h"
#include "runtime/model_impl.h"
#include "runtime/seq_stores.h"
#include "seam/error.h"

namespace seam {

namespace {

KvType kv_type(CacheType t) {
  switch (t) {
    case CacheType::F32:
      return KvType::F32;
    case CacheType::F16:
      return KvType::F16;
    case CacheType::Q8_0:
      return KvType::Q8_0;
  }
  return KvType::F16;
}

class SessionImpl final : public Session {
 public:
  SessionImpl(const Model& model, const SessionConfig& cfg, std::unique_ptr<ComputeBackend> be)
      : owner_(model.weak_from_this().lock()),
        m_(ModelAccess::of(model)),
        cfg_(cfg),
        backend_(std::move(be)),
        stores_(KvCache(cfg.n_ctx, cfg.n_seq_max, kv_widths(m_.spec), kv_type(cfg.cache_type)),
                RecurrentStore(cfg.n_seq_max, recurrent_shape(m_.spec))),
        kv_(stores_.kv()),
        scratch_(m_.spec, cfg.n_batch) {
    // A decoded token's mask lists at most n_ctx cells: with this room taken
    // now, decoding allocates nothing per token.
    for (ForwardScratch::Mask& m : scratch_.masks) {
      m.cells.reserve(cfg.n_ctx);
      m.begin.reserve(cfg.n_batch);
      m.end.reserve(cfg.n_batch);
    }
    cells_.reserve(cfg.n_batch);
  }

  void decode(std::span<const Decode> batch) override {
    check_usable();
    stores_.validate(batch, m_.spec.hp.n_vocab);
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
        kv_.allocate(ub, cells_);
        forward(m_.spec, m_.weights, *backend_, kv_, stores_.rec(), ub, cells_, scratch_,
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
    stores_.clear_seq(seq);
  }

  void copy_seq(std::uint32_t src, std::uint32_t dst) override {
    check_usable();
    check_seq(src);
    check_seq(dst);
    stores_.copy_seq(src, dst);
  }

  std::size_t begin_prompt(std::uint32_t seq, std::span<const Token> tokens) override {
    check_usable();
    check_seq(seq);
    return stores_.begin_prompt(seq, tokens);
  }

  void drop_positions(std::uint32_t seq, std::int32_t p0, std::int32_t p1) override {
    check_usable();
    check_seq(seq);
    if (p0 < 0 || p1 < p0) {
      throw Error(Errc::InvalidArgument, "drop_positions: the range [" + std::to_string(p0) + ", " +
                                             std::to_string(p1) + ") must satisfy 0 <= p0 <= p1");
    }
    if (const std::string why = key_shift_refusal(m_.spec); !why.empty()) {
      throw Error(Errc::Unsupported, "drop_positions: " + why + "; decode the kept tokens again");
    }
    if (!stores_.rec().empty()) {
      throw Error(Errc::Unsupported,
                  "drop_positions: this model has recurrent layers, whose state folds every "
                  "token in order and cannot drop old ones; decode the kept tokens again");
    }
    if (p0 == p1) return;
    const std::uint32_t need = kv_.shift_cells_needed(seq, p0, p1);
    if (need > kv_.free_cells()) {
      throw Error(Errc::ContextFull,
                  "drop_positions: sequence " + std::to_string(seq) + " shares " +
                      std::to_string(need) +
                      " cells with other sequences that must be copied "
                      "but only " +
                      std::to_string(kv_.free_cells()) +
                      " are free; clear the other sequences first or use a larger n_ctx");
    }
    const std::vector<std::uint32_t> moved = kv_.shift_positions(seq, p0, p1);
    shift_keys(m_.spec, m_.weights, *backend_, kv_, moved, p0 - p1);
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

  std::shared_ptr<const Model> owner_;  // keeps m_ alive as long as the session
  const Model::Impl& m_;
  SessionConfig cfg_;
  std::unique_ptr<ComputeBackend> backend_;
  SeqStores stores_;
  KvCache& kv_;  // stores_.kv()
  ForwardScratch scratch_;
  std::vector<float> logits_;         // [n_out][n_vocab] of the last decode
  std::vector<std::int64_t> row_of_;  // batch row -> logits row, or -1
  std::vector<std::uint32_t> cells_;  // [n_batch] KV cells of the chunk being decoded
  bool corrupted_ = false;
};

}  // namespace

void Session::drop_positions(std::uint32_t, std::int32_t, std::int32_t) {
  throw Error(Errc::Unsupported,
              "this session cannot move cached positions; decode the kept tokens again");
}

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
  if (config.cache_type != CacheType::F32 && config.cache_type != CacheType::F16 &&
      config.cache_type != CacheType::Q8_0) {
    throw Error(Errc::InvalidArgument, "unknown KV cache type; use CacheType::F32, F16 or Q8_0");
  }
  if (config.n_ctx > (1u << 24)) {
    throw Error(Errc::InvalidArgument, "n_ctx " + std::to_string(config.n_ctx) + " is too large");
  }
  // A KV cache larger than the machine's memory would only fail later (or
  // swap); refuse it now and say which knob to turn.
  const ModelSpec& spec = ModelAccess::of(model).spec;
  for (const LayerSpec& L : spec.layers) {
    if (config.cache_type == CacheType::Q8_0 && L.kv_width() > 0 && L.head_dim % 32 != 0) {
      throw Error(Errc::InvalidArgument,
                  "a q8_0 KV cache needs a head size that is a multiple of 32, but this model's "
                  "head size is " +
                      std::to_string(L.head_dim) +
                      "; use CacheType::F16 or F32 (the CLI's --cache-type f16)");
    }
  }
  double kv_bytes_per_cell = 0;  // K and V rows of every layer that owns a cache
  for (std::uint32_t w : kv_widths(spec))
    kv_bytes_per_cell += 2.0 * static_cast<double>(kv_row_bytes(kv_type(config.cache_type), w));
  const double kv_bytes = static_cast<double>(config.n_ctx) * kv_bytes_per_cell;
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
