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
// One scan of the row at the active CPU level (compute/logit_scan.h: the max,
// then exp, its sums, the rank and the top `k` in one pass; exp in float with
// double sums above the scalar level), finished in double.
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
