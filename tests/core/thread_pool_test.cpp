#include "core/thread_pool.h"

#include <gtest/gtest.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/cpu_cores.h"

namespace seam {
namespace {

TEST(ThreadPool, DefaultIsOneThreadPerPhysicalCoreWeMayUse) {
  // A core holds at most a few hardware threads, and the affinity mask only
  // narrows the machine: between logical / 4 (SMT-4) and the logical count.
  cpu_set_t mask;
  CPU_ZERO(&mask);
  ASSERT_EQ(sched_getaffinity(0, sizeof mask, &mask), 0);
  const int allowed = CPU_COUNT(&mask);
  const int cores = core_count();
  EXPECT_GE(cores, 1);
  EXPECT_LE(cores, allowed);
  EXPECT_GE(cores * 4, allowed);
  EXPECT_EQ(ThreadPool(0).size(), cores);
  std::printf("[ cores ] %d physical cores among %d allowed CPUs\n", cores, allowed);
}

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

// Jobs of alternating chunk counts back to back, on more threads than cores:
// a worker still inside the previous job must never claim a chunk of the next
// one (it once could, between the caller publishing the new chunk count and
// the new job id, and then counted a chunk twice and hung the caller).
TEST(ThreadPool, BackToBackJobsOfChangingSizeNeitherHangNorRepeat) {
  auto run = [] {
    ThreadPool pool(3);
    std::vector<std::atomic<int>> hits(48);
    for (int iter = 0; iter < 100000; ++iter) {
      const std::size_t n = iter % 2 ? 3 : 48;
      for (std::size_t i = 0; i < n; ++i) hits[i].store(0, std::memory_order_relaxed);
      pool.parallel_for(n, 1, [&](std::size_t b, std::size_t e) {
        for (std::size_t i = b; i < e; ++i) hits[i].fetch_add(1, std::memory_order_relaxed);
      });
      for (std::size_t i = 0; i < n; ++i) {
        if (hits[i].load() != 1)
          return "index " + std::to_string(i) + " ran " + std::to_string(hits[i].load()) +
                 " times at iteration " + std::to_string(iter);
      }
    }
    return std::string();
  };
  auto result = std::async(std::launch::async, run);
  if (result.wait_for(std::chrono::seconds(120)) != std::future_status::ready) {
    // A deadlocked pool cannot be joined: end the process so the failure is
    // reported now instead of as a ctest timeout.
    std::fprintf(stderr, "ThreadPool deadlocked: parallel_for never returned\n");
    std::_Exit(1);
  }
  EXPECT_EQ(result.get(), "");
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
