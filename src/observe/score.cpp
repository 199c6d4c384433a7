#include "observe/score.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

namespace seam::observe {

RowScore score_row(std::span<const float> row, Token target, std::uint32_t k, bool keep_logp) {
  RowScore r;
  const std::size_t n = row.size();
  const auto t = static_cast<std::size_t>(target);
  float mx = -std::numeric_limits<float>::infinity();
  for (float l : row)
    if (l > mx) mx = l;  // NaN compares false: skipped
  // H = log Z - sum p (l - mx) with Z = sum exp(l - mx): one pass for both sums.
  double z = 0, pl = 0;
  for (float l : row) {
    if (!(l > -std::numeric_limits<float>::infinity())) continue;  // -inf or NaN: p = 0
    const double d = static_cast<double>(l) - mx;
    const double e = std::exp(d);
    z += e;
    pl += e * d;
  }
  const double log_z = std::log(z);
  const double tl = row[t];
  const double lp_t = std::isnan(tl) ? -std::numeric_limits<double>::infinity() : tl - mx - log_z;
  r.surprisal_bits = -lp_t / std::numbers::ln2;
  r.entropy_bits = (log_z - pl / z) / std::numbers::ln2;
  std::uint32_t above = 0;
  const float tf = row[t];
  for (std::size_t v = 0; v < n; ++v) {
    const float l = row[v];
    if (l > tf || (l == tf && v < t) || (std::isnan(tf) && !std::isnan(l) && v < t)) ++above;
  }
  r.rank = above + 1;
  if (k > 0) {
    // A min-heap of the best k (worst at the front): better = higher logit, then lower id.
    const auto better = [&](std::size_t a, std::size_t b) {
      const float la = std::isnan(row[a]) ? -std::numeric_limits<float>::infinity() : row[a];
      const float lb = std::isnan(row[b]) ? -std::numeric_limits<float>::infinity() : row[b];
      return la > lb || (la == lb && a < b);
    };
    std::vector<std::size_t> heap;
    heap.reserve(k + 1);
    for (std::size_t v = 0; v < n; ++v) {
      if (heap.size() < k) {
        heap.push_back(v);
        std::push_heap(heap.begin(), heap.end(), better);
      } else if (better(v, heap.front())) {
        std::pop_heap(heap.begin(), heap.end(), better);
        heap.back() = v;
        std::push_heap(heap.begin(), heap.end(), better);
      }
    }
    std::sort(heap.begin(), heap.end(), better);
    for (std::size_t v : heap) {
      const double l = row[v];
      const double p = std::isnan(l) ? 0.0 : std::exp(l - mx - log_z);
      r.top.emplace_back(static_cast<Token>(v), p);
    }
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
