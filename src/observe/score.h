// What one logits row says about the token that actually came next.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "seam/types.h"

namespace seam::observe {

struct RowScore {
  double surprisal_bits = 0;  // -log2 softmax(row)[target]
  double entropy_bits = 0;    // -sum p log2 p
  std::uint32_t rank = 0;     // 1 + #{v : row[v] > row[target] or (== and v < target)}
  std::vector<std::pair<Token, double>> top;  // (id, p), most likely first, lower id on ties
  std::vector<double> logp;                   // natural log-probabilities, when asked for
};

// Scores `row` (n_vocab logits, NaN entries count as -inf) for `target`.
// Double precision throughout: two passes over the row (max, then the sum of
// exp and of p * logit) plus a bounded heap for the top `k`.
RowScore score_row(std::span<const float> row, Token target, std::uint32_t k,
                   bool keep_logp = false);

// KL(P || Q) and the cross-entropy -sum P log Q, in bits, of two logits rows
// over the same vocabulary (P from `p_row`, Q from `q_row`).
struct RowCompare {
  double kl_bits = 0;
  double xent_bits = 0;
};
RowCompare compare_rows(std::span<const float> p_row, std::span<const float> q_row);

}  // namespace seam::observe
