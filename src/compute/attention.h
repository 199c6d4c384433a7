// Masked softmax attention in tiles with an online softmax: out = softmax(q K^T
// scale (+ softcap), masked) V per head, without a [tokens x cells] score
// matrix. The scalar reference is ops::attention_head.
//
// Query rows are grouped into tiles whose visible cells are prefixes of one
// shared cell list (the tile's union): a run of causal rows of one sequence.
// Rows that do not fit (another sequence, a sliding window that has moved, a
// different cell order) start a new tile, so any mask is handled exactly. A
// work item is (tile, kv heads, range of segments): the K/V rows of a chunk of
// cells are converted to F32 once (whatever the cache type: F32, F16, Q8_0)
// and used by every query head that reads that kv head (GQA) and every row of
// the tile (one kv head per item); a tile of one row (decode) keeps its kv
// heads in one item, so that the item reads whole cache rows, in place
// (decode_chunk, with query_chunk's arithmetic). The per-chunk steps are per
// CPU level (attention_kernels.h). Each query keeps a running max m, sum l and
// unnormalised output acc: for a chunk of scores s_j,
//   m' = max(m, max s_j), acc = acc e^(m - m') + sum_j e^(s_j - m') v_j,
//   l = l e^(m - m') + sum_j e^(s_j - m'),   out = acc / l at the end.
// A row's cells are cut into segments of kAttnSegment from its first cell;
// each segment starts from a fresh state and the segments' states are folded
// left to right. When there are few items (decode) a tile's segments are
// spread over several threads and folded afterwards.
//
// Batch invariance: a row's output depends only on its own query and cells,
// bit for bit — not on the other rows of the call, the tiling, the thread
// count or which thread ran which segment — so a sequence decodes to the same
// logits alone and in any batch (seam serve's continuous batching).
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
