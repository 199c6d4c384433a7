#include "core/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <numeric>
#include <stdexcept>
#include <vector>

namespace seam {
namespace {

TEST(ThreadPool, CoversEveryIndexExactlyOnce) {
  for (int threads : {1, 2, 3, 8}) {
    ThreadPool pool(threads);
    for (std::size_t n : {1u, 2u, 7u, 64u, 1001u}) {
      for (std::size_t grain : {1u, 3u, 100u}) {
        std::vector<std::atomic<int>> hits(n);
        pool.parallel_for(n, grain, [&](std::size_t b, std::size_t e) {
          ASSERT_LT(b, e);
          for (std::size_t i = b; i < e; ++i) hits[i].fetch_add(1);
        });
        for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << threads << " " << n;
      }
    }
  }
}

TEST(ThreadPool, ReusedManyTimesWithoutLosingWork) {
  ThreadPool pool(4);
  std::atomic<long> sum{0};
  for (int iter = 0; iter < 2000; ++iter) {
    pool.parallel_for(37, 1, [&](std::size_t b, std::size_t e) {
      long s = 0;
      for (std::size_t i = b; i < e; ++i) s += static_cast<long>(i);
      sum.fetch_add(s);
    });
  }
  EXPECT_EQ(sum.load(), 2000L * (36 * 37 / 2));
}

TEST(ThreadPool, RethrowsTheWorkersException) {
  ThreadPool pool(3);
  EXPECT_THROW(pool.parallel_for(100, 1,
                                 [&](std::size_t b, std::size_t) {
                                   if (b >= 50) throw std::runtime_error("boom");
                                 }),
               std::runtime_error);
  // The pool is still usable afterwards.
  std::atomic<int> count{0};
  pool.parallel_for(10, 1, [&](std::size_t b, std::size_t e) { count += static_cast<int>(e - b); });
  EXPECT_EQ(count.load(), 10);
}

}  // namespace
}  // namespace seam
