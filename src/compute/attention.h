// Masked softmax attention in tiles with an online softmax: out = softmax(q K^T
// scale (+ softcap), masked) V per head, without a [tokens x cells] score
// matrix. The scalar reference is ops::attention_head.
//
// Query rows are grouped into tiles whose visible cells are contiguous ranges
// of one shared cell list (the tile's union): a run of rows of one sequence at
// increasing positions (causal: each row's cells extend the previous row's;
// sliding window: they shift). Rows that do not fit (another sequence, a
// different cell order) start a new tile, so any mask is handled exactly. A
// work item is (tile, kv head, range of the union): the K/V rows of a chunk of
// cells are converted to F32 once (whatever the cache type: F32, F16, Q8_0)
// and used by every query head that reads that kv head (GQA) and every row of
// the tile; a tile of one row (decode) reads the cache rows in place instead
// (decode_chunk). The per-chunk steps are per CPU level (attention_kernels.h).
// Each query keeps a running max m, sum l and unnormalised output acc: for a
// chunk of scores s_j,
//   m' = max(m, max s_j), acc = acc e^(m - m') + sum_j e^(s_j - m') v_j,
//   l = l e^(m - m') + sum_j e^(s_j - m'),   out = acc / l at the end.
// When there are few items (decode), the union is split in ranges whose
// (m, l, acc) are merged the same way afterwards, so every thread has work.
#pragma once

#include "compute/attention_scratch.h"
#include "compute/backend.h"
#include "compute/cpu_level.h"
#include "core/thread_pool.h"

namespace seam {

// `level` picks the kernels of attention_kernels.h (tests run every level the
// CPU supports). Throws Error(InvalidArgument) for a Q8_0 cache whose head size
// is not a multiple of 32.
void attention_tiled(const AttentionArgs& a, ThreadPool& pool, AttentionScratch& scratch,
                     CpuLevel level = active_cpu_level());

}  // namespace seam
