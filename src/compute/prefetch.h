// Software prefetch for the decode kernels, which stream every weight byte
// once per token. Two things keep them from DRAM's bandwidth without it: the
// hardware prefetchers stop at each 4 KiB page, and the out-of-order window of
// a dense 4-bit kernel spans fewer cache lines than DRAM latency times
// bandwidth needs in flight. Asking for the bytes a fixed distance past those
// being read keeps enough misses outstanding. Measured on a 1B-shape model,
// decode tok/s at 1 thread on Sapphire Rapids, without -> with: AVX-512 level
// Q4_0 13.9 -> 16.3, Q4_K_M 8.8 -> 17.2, F16 5.5 -> 6.7, Q8_0 10.1 -> 10.2;
// AVX2 level Q4_0 4.4 -> 12.6, Q8_0 4.7 -> 9.2 (1 to 4 KiB ahead tried, 2 best).
// Rows are streamed in order, so prefetching past a row's end fetches the
// start of the next row the same thread reads.
// (The AVX-512 float kernels do without: see dot_rows_avx512.cpp. So do the
// AVX-512 group kernels of Q4_K, Q5_K, Q6_K, IQ4_XS and Q8_0, whose blocks,
// read front to back, are a stream Zen 4's hardware prefetchers keep up with
// alone: see group_k_avx512.cpp, group32_avx512.cpp.)
//
// `static`: each SIMD unit keeps its own copy, no weak symbol shared with
// baseline code (dot.h).
#pragma once

#include <cstddef>

namespace seam::dot {

// How far ahead each level's kernels ask. The AVX2 units keep the distance
// measured best on Sapphire Rapids (not retuned on Zen 3, their level's
// machine here; at the AVX2 level on Zen 4, 8 KiB cost 1B Q4_K_M 3%). The
// AVX-512 units run on Zen 4, where 8 KiB read faster at 1 thread than 2, 4
// or 16 (decode tok/s, 2 KiB -> 8 KiB, two rounds: 135M Q4_0 351.5 / 345.7 ->
// 389.3 / 383.8, 1B Q4_K_M 40.6 / 40.9 -> 43.6 / 42.4, 1B Q4_0 47.3 / 48.3 ->
// 48.7 / 49.6; docs/performance.md, stop 41).
inline constexpr std::size_t kPrefetchAheadAvx2 = 2048;
inline constexpr std::size_t kPrefetchAheadAvx512 = 8192;

// __builtin_prefetch's locality: into L1 (prefetcht0), or into L2 only
// (prefetcht1) for lines read well after they are asked for, which
// prefetcht0 would hold L1's few miss buffers for.
inline constexpr int kIntoL1 = 3, kIntoL2 = 2;

// Requests the cache lines of [p, p + bytes).
template <int kLocality = kIntoL1>
static inline void prefetch_range(const void* p, std::size_t bytes) {
  const char* q = static_cast<const char*>(p);
  for (std::size_t l = 0; l < bytes; l += 64) __builtin_prefetch(q + l, 0, kLocality);
}

// Requests the cache lines of [p + kAhead, p + kAhead + bytes).
template <std::size_t kAhead>
static inline void prefetch_ahead(const void* p, std::size_t bytes) {
  prefetch_range(static_cast<const char*>(p) + kAhead, bytes);
}

// The float GEMMs' panel packers read 16 rows side by side, 16 or 32 bytes of
// each at a time: a 135M model's rows (1,152 bytes of F16) end before the
// hardware prefetchers have followed them, and the AVX2 packer took ~10% of
// that model's F16 prefill, waiting on DRAM (perf, Zen 4). Four lines ahead
// on each row: ~7% (docs/performance.md, stop 56).
inline constexpr std::size_t kPackAhead = 256;

// Requests, once per cache line, the line kPackAhead bytes past byte `at` of
// each of the n rows.
static inline void prefetch_rows_ahead(const void* const* rows, int n, std::size_t at) {
  if (at % 64 != 0) return;
  for (int r = 0; r < n; ++r)
    __builtin_prefetch(static_cast<const char*>(rows[r]) + at + kPackAhead, 0, kIntoL1);
}

}  // namespace seam::dot
