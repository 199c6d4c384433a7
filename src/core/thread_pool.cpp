#include "core/thread_pool.h"

#include <algorithm>
#include <string>
#include <system_error>

#include "core/cpu_cores.h"
#include "seam/error.h"

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

int checked_thread_count(int n_threads, const char* what) {
  if (n_threads < 0 || n_threads > kMaxThreads) {
    throw Error(Errc::InvalidArgument, std::string(what) + " " + std::to_string(n_threads) +
                                           " is out of range: use 1 to " +
                                           std::to_string(kMaxThreads) + ", or 0 for one per core");
  }
  return n_threads;
}

ThreadPool::ThreadPool(int n_threads) : n_threads_(n_threads <= 0 ? default_threads() : n_threads) {
  workers_.reserve(static_cast<std::size_t>(n_threads_ - 1));
  try {
    for (int i = 1; i < n_threads_; ++i) workers_.emplace_back([this] { worker_loop(); });
  } catch (const std::system_error& e) {
    const std::size_t refused = workers_.size() + 2;  // the caller is thread 1
    stop_workers();
    throw Error(Errc::InvalidArgument,
                "the system refused compute thread " + std::to_string(refused) + " of " +
                    std::to_string(n_threads_) + " (" + e.what() + "); use fewer threads");
  }
}

ThreadPool::~ThreadPool() { stop_workers(); }

void ThreadPool::stop_workers() {
  {
    std::lock_guard lock(mu_);
    stop_.store(true);
    job_id_.fetch_add(1);
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

std::size_t ThreadPool::chunk_at(std::size_t begin, std::size_t n, std::size_t grain) const {
  // Guided: each chunk is a share of what is left, in whole grains. The first
  // chunks are long (few claims, long prefetch streams through a weight) and
  // the last ones one grain, so the threads finish within a grain of each
  // other; equal chunks left one thread idle for half a chunk at the end of
  // every op (1B shape decode at 2 threads: ~8% of the time).
  const std::size_t left = n - begin;
  const std::size_t share = left / (2 * static_cast<std::size_t>(n_threads_));
  return std::min(left, std::max<std::size_t>(1, share / grain) * grain);
}

void ThreadPool::run_chunks(std::uint32_t job_id) {
  std::uint64_t cur = claim_.load(std::memory_order_acquire);
  for (;;) {
    if (static_cast<std::uint32_t>(cur >> 32) != job_id) return;
    const auto begin = static_cast<std::size_t>(static_cast<std::uint32_t>(cur));
    const std::size_t n = job_n_.load();
    if (begin >= n) return;
    const std::size_t len = chunk_at(begin, n, grain_.load());
    if (!claim_.compare_exchange_weak(cur, cur + len, std::memory_order_acq_rel,
                                      std::memory_order_acquire)) {
      continue;
    }
    // The job cannot end while this chunk is unfinished, so its fields are stable here.
    try {
      (*job_)(begin, begin + len);
    } catch (...) {
      std::lock_guard lock(error_mu_);
      if (!error_) error_ = std::current_exception();
    }
    if (items_done_.fetch_add(len, std::memory_order_acq_rel) + len == n) {
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
  // The claim word holds an index in 32 bits; no job here comes near that.
  if (n_threads_ == 1 || n <= grain || n >= 0xFFFFFFFFu) {
    fn(0, n);
    return;
  }
  const std::uint32_t id = job_id_.load(std::memory_order_relaxed) + 1;
  // Close the previous job before touching its fields: a worker still in
  // run_chunks for it may hold the exhausted claim word (old id, old n) and
  // read the new item count next; with the old word left in place its CAS
  // would then succeed and run (and count) a chunk of this job. The new id
  // with nothing left makes every such CAS fail. Sequentially consistent with
  // the job_n_ and grain_ stores below, so a worker that reads the new count
  // also sees the closed word.
  claim_.store((static_cast<std::uint64_t>(id) << 32) | 0xFFFFFFFFu);
  job_n_.store(n);
  grain_.store(grain);
  job_ = &fn;
  error_ = nullptr;
  items_done_.store(0, std::memory_order_relaxed);
  claim_.store(static_cast<std::uint64_t>(id) << 32, std::memory_order_release);
  {
    std::lock_guard lock(mu_);
    job_id_.store(id, std::memory_order_release);
  }
  wake_.notify_all();

  run_chunks(id);

  int spins = 0;
  while (items_done_.load(std::memory_order_acquire) != n && spins < kSpinIterations) {
    SEAM_CPU_RELAX();
    ++spins;
  }
  if (items_done_.load(std::memory_order_acquire) != n) {
    std::unique_lock lock(mu_);
    done_.wait(lock, [&] { return items_done_.load(std::memory_order_acquire) == n; });
  }
  if (error_) std::rethrow_exception(error_);
}

}  // namespace seam
