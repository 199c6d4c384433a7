// A persistent pool of worker threads for data-parallel loops over row ranges.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "core/function_ref.h"

namespace seam {

// The most threads a pool takes (llama.cpp's limit too): far past any core
// count this engine meets, short of what exhausts a process's threads.
inline constexpr int kMaxThreads = 512;

// n_threads as an API option (`what` names it): 0 (one per core) to
// kMaxThreads, else Error(InvalidArgument).
int checked_thread_count(int n_threads, const char* what);

class ThreadPool {
 public:
  // `n_threads` counts the calling thread: a pool of 1 runs everything inline.
  // 0 means default_threads(): one per physical core this process may use.
  // Throws Error(InvalidArgument) when the system refuses a thread.
  explicit ThreadPool(int n_threads = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return n_threads_; }

  // Runs fn(begin, end) over disjoint ranges covering [0, n), each a whole
  // number of `grain`s long (except the last), on all threads; returns when
  // every range is done. The first exception thrown by fn is rethrown here. Not reentrant:
  // one parallel_for at a time per pool.
  //
  // The caller works too and may take every chunk itself: a worker that is
  // slow to wake (an oversubscribed machine) delays nobody, since completion is
  // counted in chunks, not in workers checking in.
  void parallel_for(std::size_t n, std::size_t grain,
                    FunctionRef<void(std::size_t, std::size_t)> fn);

  static int default_threads();

 private:
  void worker_loop();
  void stop_workers();
  // Claims and runs chunks of job `job_id` until none are left.
  void run_chunks(std::uint32_t job_id);
  // Length of the chunk that starts at `begin` when the job has `n` items.
  std::size_t chunk_at(std::size_t begin, std::size_t n, std::size_t grain) const;

  int n_threads_;
  std::vector<std::thread> workers_;

  // The current job; written by the caller before it publishes `claim_`.
  const FunctionRef<void(std::size_t, std::size_t)>* job_ = nullptr;
  // Read by stale workers before their CAS fails; see parallel_for for why
  // they and the claim word are stored sequentially consistent.
  std::atomic<std::size_t> job_n_{0};
  std::atomic<std::size_t> grain_{1};
  // (job id << 32) | first unclaimed index. A worker claims a chunk with a CAS
  // that also checks the job id, so it can never run a chunk of a job that ended.
  std::atomic<std::uint64_t> claim_{0};
  std::atomic<std::size_t> items_done_{0};
  std::exception_ptr error_;
  std::mutex error_mu_;

  // Wake-up protocol: workers spin briefly on `job_id_`, then block on `wake_`.
  std::atomic<std::uint32_t> job_id_{0};
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::condition_variable wake_;
  std::condition_variable done_;
};

}  // namespace seam
