// The inner steps of attention_tiled (attention.h) per CPU level, like the dot
// kernels (dot.h): a scalar reference here, the SIMD bodies in
// attention_avx2.cpp and attention_avx512.cpp, compiled with that level's flags and reached only
// through attn_fns() once cpu_level.h has said the CPU runs them; the AVX-512
// level (attention_avx512.cpp) has its own query_chunk and AVX2's load_chunk.
//
// One step works on a chunk of at most kAttnChunk cells of one kv head:
// load_chunk turns the chunk's K and V rows, whatever the cache type, into
// F32 (K transposed, so the scores of one query are hd broadcast-FMAs over the
// chunk's lanes); query_chunk folds the chunk into queries' online-softmax
// states (m, l, acc). A tile of one row (decode) has too few queries to pay for
// that copy: decode_chunk reads each cached K and V row where it lies, once for
// all the query heads that share the kv head.
#pragma once

#include <cstddef>
#include <cstdint>

#include "compute/attention_scratch.h"
#include "compute/backend.h"
#include "compute/cpu_level.h"
#include "compute/prefetch.h"

namespace seam::attn {

// Where one kv head's rows are in a K or V cache of `type`: cell c's part
// starts at base + c * row_bytes + head_bytes and is slice_bytes long.
struct KvHead {
  const std::byte* k;
  const std::byte* v;
  KvType type;
  std::size_t row_bytes;    // bytes per cell (all kv heads)
  std::size_t head_bytes;   // offset of this kv head within a cell's row
  std::size_t slice_bytes;  // bytes of this kv head's part of a row
};

// Where cell `cell`'s slice starts in the K (and the V) cache, from its base.
// `static`, as the look-ahead below: each SIMD unit keeps its own copy (dot.h).
static inline std::size_t slice_offset(const KvHead& kv, std::uint32_t cell) {
  return static_cast<std::size_t>(cell) * kv.row_bytes + kv.head_bytes;
}

// How many cells ahead of the one it reads decode_chunk asks for K and V
// slices: 32 KiB of them, at most a chunk. The hardware prefetchers alone
// leave the kernel waiting on DRAM (a head's slices are short runs at the
// row's stride, and the prefetchers stop at each 4 KiB page); asking for the
// next chunk's rows all at once before a chunk, as before, stalled the core on
// its miss buffers instead. Spread over the cells, F16 attention over a cache
// read from DRAM (bench_kernels AttentionTiled, two runs each, Zen 5, 1
// thread) went at a 1B shape (head size 64, 8 kv heads, 32,768 cells) from
// 9.0 / 9.8 to 5.1 / 5.8 ms, at Gemma 2's (256, 4) from 12.9 / 12.2 to 8.8 /
// 9.5, at Gemma 3's (256, 1; 131,072 cells) from 13.9 / 14.7 to 8.2 / 8.1;
// about the same at 2 threads and at the AVX2 level. 8 and 32 KiB were no
// better over 1 and 2 threads then; since the slices go to L2
// (prefetch_cell), 32 KiB beat 16 at Gemma 2's shape on Zen 4 (1 thread, three
// runs: 14.8 / 15.0 / 15.1 -> 11.4 / 13.5 / 13.2 ms; Gemma 3's no different;
// the head size 64 shapes ask a chunk ahead either way). `static` here and
// below: each SIMD unit keeps its own copy (dot.h).
static inline int prefetch_distance(const KvHead& kv) {
  constexpr std::size_t kAheadBytes = 32768;
  const std::size_t cells = kAheadBytes / (2 * kv.slice_bytes);
  constexpr std::size_t kMost = kAttnChunk;
  return static_cast<int>(cells < 1 ? 1 : cells > kMost ? kMost : cells);
}

// Asks for the K and V slices of `cell`, into L2: a chunk's worth ahead, they
// are read thousands of cycles later, and prefetcht0 held L1's miss buffers
// for them meanwhile. On Zen 4, 1 thread, bench_kernels AttentionTiledF16
// from DRAM: 1B shape 16.5 / 16.8 -> 11.4 / 11.0 ms, Gemma 2's 23.0 / 24.2 ->
// 15.2 / 14.4; decode at depth 4096, 1B Q4_K_M 17.5 / 18.2 -> 22.4 / 22.6
// tok/s, 135M 55.9 / 51.3 -> 80.4 / 75.3 (docs/performance.md, stop 52).
static inline void prefetch_cell(const KvHead& kv, std::uint32_t cell) {
  const std::size_t at = slice_offset(kv, cell);
  dot::prefetch_range<dot::kIntoL2>(kv.k + at, kv.slice_bytes);
  dot::prefetch_range<dot::kIntoL2>(kv.v + at, kv.slice_bytes);
}

struct AttnFns {
  // kt[d * kAttnChunk + j] = K[cells[j]][d], v[j * hd + d] = V[cells[j]][d] for
  // j < nc, d < hd; kt's columns j >= nc are zero (v's rows there are not set).
  void (*load_chunk)(const KvHead& kv, const std::uint32_t* cells, int nc, int hd, float* kt,
                     float* v);
  // For each of nq queries (q, acc [nq][hd]; m, l [nq]) and s_j = scale q.kt[:, j]
  // (softcap: softcap tanh(s_j / softcap)), j in [jlo, jhi) (jlo < jhi):
  // m' = max(m, max s_j), l = l e^(m - m') + sum e^(s_j - m'),
  // acc[0, hd) = acc e^(m - m') + sum_j e^(s_j - m') v[j], m = m'. A query's
  // result does not depend on the others beside it.
  void (*query_chunk)(const float* q, const float* kt, const float* v, int jlo, int jhi, int hd,
                      int nq, float scale, float softcap, float* m, float* l, float* acc);
  // query_chunk's fold for nq query heads of one row that read this kv head
  // (q, acc [nq][hd]; m, l [nq]), over cells[0, nc), 0 < nc <= kAttnChunk,
  // with K and V read straight from the cache rows. cells[nc, nc + n_next)
  // are the cells the next call reads: their slices are asked for
  // prefetch_distance(kv) cells before they are needed, as those of this call. Bit for bit what
  // query_chunk gives with jlo = 0, jhi = nc: the same additions in the same
  // order (scores summed by lanes of the vector width, then across them in one
  // fixed tree), so a row's result does not depend on which of the two ran.
  void (*decode_chunk)(const KvHead& kv, const std::uint32_t* cells, int nc, int n_next, int hd,
                       int nq, const float* q, float scale, float softcap, float* m, float* l,
                       float* acc);
};

// The functions of `level` (the highest present at or below it).
const AttnFns& attn_fns(CpuLevel level);

// e^x for x <= 0 to within a few ulp (0 below -87): the exp every level uses.
float exp_nonpositive(float x);

namespace avx2 {
void load_chunk(const KvHead& kv, const std::uint32_t* cells, int nc, int hd, float* kt, float* v);
void query_chunk(const float* q, const float* kt, const float* v, int jlo, int jhi, int hd, int nq,
                 float scale, float softcap, float* m, float* l, float* acc);
void decode_chunk(const KvHead& kv, const std::uint32_t* cells, int nc, int n_next, int hd, int nq,
                  const float* q, float scale, float softcap, float* m, float* l, float* acc);
}  // namespace avx2

namespace avx512 {
void query_chunk(const float* q, const float* kt, const float* v, int jlo, int jhi, int hd, int nq,
                 float scale, float softcap, float* m, float* l, float* acc);
void decode_chunk(const KvHead& kv, const std::uint32_t* cells, int nc, int n_next, int hd, int nq,
                  const float* q, float scale, float softcap, float* m, float* l, float* acc);
}  // namespace avx512

}  // namespace seam::attn
