#include "core/thread_pool.h"

#include <algorithm>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define SEAM_CPU_RELAX() _mm_pause()
#else
#define SEAM_CPU_RELAX() ((void)0)
#endif

namespace seam {

namespace {
// About 20-50 µs of spinning: long enough to catch the next op of a forward
// pass without a futex round trip, short enough not to burn a core when idle.
constexpr int kSpinIterations = 20000;
}  // namespace

int ThreadPool::default_threads() {
  unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

ThreadPool::ThreadPool(int n_threads) : n_threads_(n_threads <= 0 ? default_threads() : n_threads) {
  workers_.reserve(static_cast<std::size_t>(n_threads_ - 1));
  for (int i = 1; i < n_threads_; ++i) workers_.emplace_back([this] { worker_loop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mu_);
    stop_.store(true);
    generation_.fetch_add(1);
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::run_chunks() {
  for (;;) {
    std::size_t begin = next_.fetch_add(chunk_, std::memory_order_relaxed);
    if (begin >= job_n_) break;
    std::size_t end = std::min(job_n_, begin + chunk_);
    try {
      (*job_)(begin, end);
    } catch (...) {
      std::lock_guard lock(error_mu_);
      if (!error_) error_ = std::current_exception();
      next_.store(job_n_);  // abandon the remaining chunks
    }
  }
}

void ThreadPool::worker_loop() {
  std::uint64_t seen = 0;
  for (;;) {
    int spins = 0;
    while (generation_.load(std::memory_order_acquire) == seen && spins < kSpinIterations) {
      SEAM_CPU_RELAX();
      ++spins;
    }
    if (generation_.load(std::memory_order_acquire) == seen) {
      std::unique_lock lock(mu_);
      wake_.wait(lock, [&] { return generation_.load() != seen; });
    }
    seen = generation_.load(std::memory_order_acquire);
    if (stop_.load()) return;
    run_chunks();
    if (active_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      std::lock_guard lock(mu_);
      done_.notify_one();
    }
  }
}

void ThreadPool::parallel_for(std::size_t n, std::size_t grain,
                              FunctionRef<void(std::size_t, std::size_t)> fn) {
  if (n == 0) return;
  grain = std::max<std::size_t>(grain, 1);
  if (n_threads_ == 1 || n <= grain) {
    fn(0, n);
    return;
  }
  // A few chunks per thread balances uneven cores without much contention.
  const std::size_t target_chunks = static_cast<std::size_t>(n_threads_) * 4;
  chunk_ = std::max(grain, (n + target_chunks - 1) / target_chunks);
  job_ = &fn;
  job_n_ = n;
  error_ = nullptr;
  next_.store(0, std::memory_order_relaxed);
  active_.store(n_threads_ - 1, std::memory_order_relaxed);
  {
    std::lock_guard lock(mu_);
    generation_.fetch_add(1, std::memory_order_release);
  }
  wake_.notify_all();

  run_chunks();

  int spins = 0;
  while (active_.load(std::memory_order_acquire) != 0 && spins < kSpinIterations) {
    SEAM_CPU_RELAX();
    ++spins;
  }
  if (active_.load(std::memory_order_acquire) != 0) {
    std::unique_lock lock(mu_);
    done_.wait(lock, [&] { return active_.load(std::memory_order_acquire) == 0; });
  }
  job_ = nullptr;
  if (error_) std::rethrow_exception(error_);
}

}  // namespace seam
