// Running statistics of surprisal and the trigger gate (docs/observe.md).
#pragma once

#include <cstdint>
#include <deque>
#include <string>

namespace seam::observe {

// Welford's online mean and variance: numerically stable in one pass.
class Welford {
 public:
  void add(double x) {
    ++n_;
    const double d = x - mean_;
    mean_ += d / static_cast<double>(n_);
    m2_ += d * (x - mean_);
  }
  std::uint64_t count() const { return n_; }
  double mean() const { return mean_; }
  // Sample variance (n - 1 in the denominator); 0 below two values.
  double variance() const { return n_ > 1 ? m2_ / static_cast<double>(n_ - 1) : 0.0; }

 private:
  std::uint64_t n_ = 0;
  double mean_ = 0, m2_ = 0;
};

// Exponentially weighted mean and variance, alpha = 2 / (span + 1). The first
// value starts the mean; value k (1-based) of n then carries weight
// alpha (1 - alpha)^(n - k), the first (1 - alpha)^(n - 1): the weights sum
// to 1 and variance() is exactly the weighted variance about mean() (Finch,
// "Incremental calculation of weighted mean and variance", 2009).
class Ewma {
 public:
  explicit Ewma(std::uint32_t span) : alpha_(2.0 / (static_cast<double>(span) + 1.0)) {}
  void add(double x) {
    if (n_++ == 0) {
      mean_ = x;
      var_ = 0;
      return;
    }
    const double d = x - mean_;
    const double incr = alpha_ * d;
    mean_ += incr;
    var_ = (1.0 - alpha_) * (var_ + d * incr);
  }
  std::uint64_t count() const { return n_; }
  double alpha() const { return alpha_; }
  double mean() const { return mean_; }
  double variance() const { return var_; }

 private:
  double alpha_;
  std::uint64_t n_ = 0;
  double mean_ = 0, var_ = 0;
};

struct GateConfig {
  double z = 3.0;
  double z_rearm = 1.0;
  std::uint64_t warmup = 64;
  std::uint64_t cooldown = 128;
};

// Turns a z-score per token into triggers: one surprising passage, one trigger.
// A token may fire when (1) at least `warmup` scored tokens came before it,
// (2) at least `cooldown` tokens passed since the last trigger, (3) the gate is
// armed — it disarms when it fires and re-arms at the first token whose z falls
// below z_rearm — and (4) its z exceeds `z`.
class TriggerGate {
 public:
  explicit TriggerGate(GateConfig c) : c_(c) {}

  // Token `i` (stream index), the number of scored tokens before it, its z.
  // Returns whether it fires; `why` (if given) gets the decision's reason.
  bool decide(std::uint64_t i, std::uint64_t scored_before, double z, std::string* why = nullptr);
  bool armed() const { return armed_; }

 private:
  GateConfig c_;
  bool armed_ = true;
  bool fired_ = false;
  std::uint64_t last_ = 0;
};

// The mean of the last n values.
class SpanMean {
 public:
  explicit SpanMean(std::uint32_t n) : n_(n) {}
  void add(double x) {
    win_.push_back(x);
    sum_ += x;
    if (win_.size() > n_) {
      sum_ -= win_.front();
      win_.pop_front();
    }
  }
  bool full() const { return win_.size() == n_; }
  double mean() const { return win_.empty() ? 0.0 : sum_ / static_cast<double>(win_.size()); }
  void reset() {
    win_.clear();
    sum_ = 0;
  }

 private:
  std::uint32_t n_;
  std::deque<double> win_;
  double sum_ = 0;
};

}  // namespace seam::observe
