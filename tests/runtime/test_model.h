// Shared fixtures for runtime tests: the real stories260K checkpoint.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "seam/model.h"
#include "seam/session.h"

namespace seam::testing {

inline std::string stories_path() {
  return std::string(SEAM_SHARED_DIR) + "/models/stories260K.gguf";
}

inline std::shared_ptr<const Model> stories() {
  static std::shared_ptr<const Model> model = [] {
    LoadOptions lo;
    lo.n_threads = 2;
    return Model::load(stories_path(), lo);
  }();
  return model;
}

// Decodes `tokens` of `seq` from position `start` and returns the logits of every row.
inline std::vector<std::vector<float>> decode_all(Session& s, std::span<const Token> tokens,
                                                  std::uint32_t seq, std::int32_t start = 0) {
  std::vector<Decode> batch;
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    batch.push_back({tokens[i], start + static_cast<std::int32_t>(i), seq, true});
  }
  s.decode(batch);
  std::vector<std::vector<float>> out;
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    auto l = s.logits(i);
    out.emplace_back(l.begin(), l.end());
  }
  return out;
}

// max |a - b| / max |b|
inline double rel_diff(std::span<const float> a, std::span<const float> b) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    num = std::max(num, std::abs(static_cast<double>(a[i]) - b[i]));
    den = std::max(den, std::abs(static_cast<double>(b[i])));
  }
  return den > 0 ? num / den : num;
}

}  // namespace seam::testing
