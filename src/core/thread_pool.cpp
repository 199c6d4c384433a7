#include "core/thread_pool.h"

#include <algorithm>

#include "core/cpu_cores.h"

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

int ThreadPool::default_threads() { return core_count(); }

ThreadPool::ThreadPool(int n_threads) : n_threads_(n_threads <= 0 ? default_threads() : n_threads) {
  workers_.reserve(static_cast<std::size_t>(n_threads_ - 1));
  for (int i = 1; i < n_threads_; ++i) workers_.emplace_back([this] { worker_loop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mu_);
    stop_.store(true);
    job_id_.fetch_add(1);
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::run_chunks(std::uint32_t job_id) {
  std::uint64_t cur = claim_.load(std::memory_order_acquire);
  for (;;) {
    if (static_cast<std::uint32_t>(cur >> 32) != job_id) return;
    const auto idx = static_cast<std::uint32_t>(cur);
    if (idx >= n_chunks_) return;
    if (!claim_.compare_exchange_weak(cur, cur + 1, std::memory_order_acq_rel,
                                      std::memory_order_acquire)) {
      continue;
    }
    // The job cannot end while this chunk is unfinished, so its fields are stable here.
    const std::size_t begin = static_cast<std::size_t>(idx) * chunk_;
    const std::size_t end = std::min(job_n_, begin + chunk_);
    try {
      (*job_)(begin, end);
    } catch (...) {
      std::lock_guard lock(error_mu_);
      if (!error_) error_ = std::current_exception();
    }
    if (chunks_done_.fetch_add(1, std::memory_order_acq_rel) + 1 == n_chunks_) {
      std::lock_guard lock(mu_);
      done_.notify_one();
    }
    cur = claim_.load(std::memory_order_acquire);
  }
}

void ThreadPool::worker_loop() {
  std::uint32_t seen = 0;
  for (;;) {
    int spins = 0;
    while (job_id_.load(std::memory_order_acquire) == seen && spins < kSpinIterations) {
      SEAM_CPU_RELAX();
      ++spins;
    }
    if (job_id_.load(std::memory_order_acquire) == seen) {
      std::unique_lock lock(mu_);
      wake_.wait(lock, [&] { return job_id_.load() != seen; });
    }
    seen = job_id_.load(std::memory_order_acquire);
    if (stop_.load()) return;
    run_chunks(seen);
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
  const std::uint32_t id = job_id_.load(std::memory_order_relaxed) + 1;
  // Close the previous job before touching its fields: a worker still in
  // run_chunks for it may hold the exhausted claim word (old id, n_chunks) and
  // read the new chunk count next; with the old word left in place its CAS
  // would then succeed and run (and count) a chunk of this job. The new id
  // with no chunks left makes every such CAS fail. Sequentially consistent
  // with the n_chunks_ store below, so a worker that reads the new count also
  // sees the closed word.
  claim_.store((static_cast<std::uint64_t>(id) << 32) | 0xFFFFFFFFu);
  // A few chunks per thread balances uneven cores without much contention.
  const std::size_t target_chunks = static_cast<std::size_t>(n_threads_) * 4;
  chunk_ = std::max(grain, (n + target_chunks - 1) / target_chunks);
  n_chunks_.store(static_cast<std::uint32_t>((n + chunk_ - 1) / chunk_));
  job_ = &fn;
  job_n_ = n;
  error_ = nullptr;
  chunks_done_.store(0, std::memory_order_relaxed);
  claim_.store(static_cast<std::uint64_t>(id) << 32, std::memory_order_release);
  {
    std::lock_guard lock(mu_);
    job_id_.store(id, std::memory_order_release);
  }
  wake_.notify_all();

  run_chunks(id);

  int spins = 0;
  while (chunks_done_.load(std::memory_order_acquire) != n_chunks_ && spins < kSpinIterations) {
    SEAM_CPU_RELAX();
    ++spins;
  }
  if (chunks_done_.load(std::memory_order_acquire) != n_chunks_) {
    std::unique_lock lock(mu_);
    done_.wait(lock, [&] { return chunks_done_.load(std::memory_order_acquire) == n_chunks_; });
  }
  if (error_) std::rethrow_exception(error_);
}

}  // namespace seam
