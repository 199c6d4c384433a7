// The scheduler's order of prompt chunks (server/engine.h goes_first): the
// shortest prompt first, except that one kept waiting kStarvedS goes ahead.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "server/engine.h"

namespace seam::server {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

std::vector<std::size_t> order(std::vector<PromptTurn> turns, Clock::time_point now) {
  std::sort(turns.begin(), turns.end(),
            [&](const PromptTurn& a, const PromptTurn& b) { return goes_first(a, b, now); });
  std::vector<std::size_t> lefts;
  for (const PromptTurn& t : turns) lefts.push_back(t.left);
  return lefts;
}

TEST(Schedule, ShortestPromptFirstThenOldest) {
  const Clock::time_point now = Clock::now();
  const auto t = [&](int ms_ago) { return now - milliseconds(ms_ago); };
  // Nobody starved: by tokens left, a tie by submission.
  EXPECT_EQ(order({{4000, t(10), t(300)}, {12, t(5), t(5)}, {300, t(0), t(200)}}, now),
            (std::vector<std::size_t>{12, 300, 4000}));
  std::vector<PromptTurn> tie = {{50, t(1), t(2)}, {50, t(1), t(9)}};
  std::sort(tie.begin(), tie.end(),
            [&](const PromptTurn& a, const PromptTurn& b) { return goes_first(a, b, now); });
  EXPECT_EQ(tie[0].submitted, t(9));
}

TEST(Schedule, AStarvedPromptGoesAheadOfShortOnes) {
  const Clock::time_point now = Clock::now();
  const auto t = [&](int ms_ago) { return now - milliseconds(ms_ago); };
  const int starved = static_cast<int>(kStarvedS * 1000) + 100;
  // The long prompt has had no chunk for longer than kStarvedS: first.
  EXPECT_EQ(order({{12, t(0), t(0)}, {4000, t(starved), t(5000)}, {40, t(20), t(20)}}, now),
            (std::vector<std::size_t>{4000, 12, 40}));
  // Two starved: the one waiting longest first, whatever its length.
  EXPECT_EQ(
      order({{100, t(starved), t(starved)}, {9000, t(2 * starved), t(9000)}, {5, t(0), t(0)}}, now),
      (std::vector<std::size_t>{9000, 100, 5}));
  // Just under the limit it is not starved yet.
  const int fresh = static_cast<int>(kStarvedS * 1000) - 100;
  EXPECT_EQ(order({{4000, t(fresh), t(9000)}, {12, t(0), t(0)}}, now),
            (std::vector<std::size_t>{12, 4000}));
}

}  // namespace
}  // namespace seam::server
