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
  int ahead = 1;            // decode_chunk asks for cell j + ahead's slices while at cell j
};

// Asks for the K and V slices of `cell` (dot::prefetch_range: into L1).
// `static`: each SIMD unit keeps its own copy (dot.h).
static inline void prefetch_cell(const KvHead& kv, std::uint32_t cell) {
  const std::size_t at = static_cast<std::size_t>(cell) * kv.row_bytes + kv.head_bytes;
  dot::prefetch_range(kv.k + at, kv.slice_bytes);
  dot::prefetch_range(kv.v + at, kv.slice_bytes);
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
  // are the cells the next call reads: their slices are asked for kv.ahead
  // cells before they are needed, as those of this call. Bit for bit what
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
