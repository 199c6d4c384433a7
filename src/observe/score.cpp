#include "observe/score.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

#include "compute/logit_scan.h"

namespace seam::observe {

RowScore score_row(std::span<const float> row, Token target, std::uint32_t k, bool keep_logp) {
  RowScore r;
  const std::size_t n = row.size();
  const auto t = static_cast<std::uint32_t>(target);
  const std::size_t kk = std::min<std::size_t>(k, n);
  std::uint32_t small[logit::kScanMaxTop];
  std::vector<std::uint32_t> large(kk > logit::kScanMaxTop ? kk : 0);
  std::uint32_t* ids = large.empty() ? small : large.data();
  const logit::Scan s = logit::scan_fn()(row.data(), n, t, k, ids);
  const double mx = s.max;
  const double log_z = std::log(s.sum_exp);
  const double tl = row[t];
  const double lp_t = std::isnan(tl) ? -std::numeric_limits<double>::infinity() : tl - mx - log_z;
  r.surprisal_bits = -lp_t / std::numbers::ln2;
  // H = log Z - sum p (l - mx), with Z = sum exp(l - mx).
  r.entropy_bits = (log_z - s.sum_exp_d / s.sum_exp) / std::numbers::ln2;
  r.rank = s.above + 1;
  r.top.reserve(kk);
  for (std::size_t j = 0; j < kk; ++j) {
    const double l = row[ids[j]];
    const double p = std::isnan(l) ? 0.0 : std::exp(l - mx - log_z);
    r.top.emplace_back(static_cast<Token>(ids[j]), p);
  }
  if (keep_logp) {
    r.logp.resize(n);
    for (std::size_t v = 0; v < n; ++v)
      r.logp[v] = std::isnan(row[v]) ? -std::numeric_limits<double>::infinity()
                                     : static_cast<double>(row[v]) - mx - log_z;
  }
  return r;
}

namespace {

// max and log of the sum of exp(l - max), NaN as -inf.
std::pair<double, double> log_norm(std::span<const float> row) {
  float mx = -std::numeric_limits<float>::infinity();
  for (float l : row)
    if (l > mx) mx = l;
  double z = 0;
  for (float l : row)
    if (l > -std::numeric_limits<float>::infinity()) z += std::exp(static_cast<double>(l) - mx);
  return {mx, std::log(z)};
}

}  // namespace

RowCompare compare_rows(std::span<const float> p_row, std::span<const float> q_row) {
  const auto [pm, pz] = log_norm(p_row);
  const auto [qm, qz] = log_norm(q_row);
  double kl = 0, xent = 0;
  for (std::size_t v = 0; v < p_row.size(); ++v) {
    if (!(p_row[v] > -std::numeric_limits<float>::infinity())) continue;  // p = 0
    const double lp = p_row[v] - pm - pz;
    const double lq = q_row[v] > -std::numeric_limits<float>::infinity()
                          ? q_row[v] - qm - qz
                          : -std::numeric_limits<double>::infinity();
    const double p = std::exp(lp);
    kl += p * (lp - lq);
    xent -= p * lq;
  }
  return {std::max(0.0, kl) / std::numbers::ln2, xent / std::numbers::ln2};
}

}  // namespace seam::observe
