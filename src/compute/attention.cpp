#include "compute/attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "compute/attention_kernels.h"
#include "seam/error.h"

namespace seam {

namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// Groups rows into tiles. A row joins the current tile only when its cell
// list and the tile's union agree from their first cell on (one is a prefix of
// the other: causal rows of one sequence), so row r sees union_cells[union_begin
// [tile] .. + row_hi[r]) and its chunks and segments start where the union's
// do: the row's arithmetic is then the same in any tile, alone or not.
// Returns the cells the rows see, summed over the rows.
std::size_t plan_tiles(const AttentionArgs& a, AttentionScratch& s) {
  const std::uint32_t* cells = a.mask.cells.data();
  const std::size_t T = static_cast<std::size_t>(a.n_tokens);
  s.tile_begin.clear();
  s.union_begin.clear();
  s.union_cells.clear();
  s.row_hi.resize(T);
  std::size_t seen = 0;  // the rows' cells, counted once per row that sees them
  for (std::size_t r = 0; r < T; ++r) seen += a.mask.end[r] - a.mask.begin[r];
  // The unions hold at most that many; growing by doubling keeps a decode
  // that adds one cell per token from reallocating every token.
  if (s.union_cells.capacity() < seen) s.union_cells.reserve(2 * seen);
  std::size_t r = 0;
  while (r < T) {
    const std::size_t r0 = r, ub = s.union_cells.size();
    s.tile_begin.push_back(static_cast<std::uint32_t>(r0));
    s.union_begin.push_back(static_cast<std::uint32_t>(ub));
    for (; r < T && r - r0 < static_cast<std::size_t>(kAttnTileRows); ++r) {
      const std::uint32_t* L = cells + a.mask.begin[r];
      const std::size_t n = a.mask.end[r] - a.mask.begin[r];
      const std::size_t nu = s.union_cells.size() - ub;
      const std::uint32_t* U = s.union_cells.data() + ub;
      std::size_t k = 0;
      while (k < n && k < nu && U[k] == L[k]) ++k;
      if (k < n && k < nu) break;  // the lists part ways: new tile
      s.union_cells.insert(s.union_cells.end(), L + k, L + n);
      s.row_hi[r] = static_cast<std::uint32_t>(n);
    }
  }
  s.tile_begin.push_back(static_cast<std::uint32_t>(T));
  s.union_begin.push_back(static_cast<std::uint32_t>(s.union_cells.size()));
  return seen;
}

// Segments of kAttnSegment cells a row of n cells is split into.
std::size_t segments(std::size_t n) { return (n + kAttnSegment - 1) / kAttnSegment; }

// Folds a segment's finished state (ms, ls, accs) into a row's running state,
// segments left to right. Every path goes through this one function, so a
// row's result does not depend on which thread or item made its segments.
[[gnu::noinline]] void fold_segment(float& m, float& l, float* acc, float ms, float ls,
                                    const float* accs, std::int32_t hd) {
  if (ms == kNegInf) return;  // the segment saw no cell
  if (m == kNegInf) {
    m = ms;
    l = ls;
    std::memcpy(acc, accs, static_cast<std::size_t>(hd) * sizeof(float));
    return;
  }
  const float mm = std::max(m, ms);
  const float w = attn::exp_nonpositive(m - mm), ws = attn::exp_nonpositive(ms - mm);
  l = l * w + ls * ws;
  for (std::int32_t d = 0; d < hd; ++d) acc[d] = acc[d] * w + accs[d] * ws;
  m = mm;
}

// Folds head h's sink (a.sinks, gpt-oss) into a finished (m, l) state: the
// sink is one more score whose value is zero, so l gains e^(sink - m') and acc
// is rescaled by e^(m - m'). Returns the factor acc is multiplied by before
// dividing by the new l; a row that saw no cell keeps l = 0 (zeros out).
float fold_sink(const AttentionArgs& a, std::int32_t h, float m, float& l) {
  if (!a.sinks || m == kNegInf) return 1.0f;
  const float mm = std::max(m, a.sinks[h]);
  const float w = attn::exp_nonpositive(m - mm);
  l = l * w + attn::exp_nonpositive(a.sinks[h] - mm);
  return w;
}

// out[0, hd) of head h from its final running state.
void finish(const AttentionArgs& a, std::int32_t h, float m, float l, const float* acc,
            float* out) {
  const float w = fold_sink(a, h, m, l);
  const float inv = l > 0.0f ? w / l : 0.0f;  // no cells: zeros
  for (std::int32_t d = 0; d < a.head_dim; ++d) out[d] = acc[d] * inv;
}

// Per-thread buffers of one work item: a segment's state and, when the item
// owns all of a tile's segments, the rows' running states.
struct ItemBuffers {
  std::vector<float> q;     // [n_query][head_dim] a tile's queries, as query_index orders them
  std::vector<float> kt;    // [head_dim][kAttnChunk] K of the chunk, transposed
  std::vector<float> v;     // [kAttnChunk][head_dim] V of the chunk
  std::vector<float> acc;   // [n_query][head_dim]
  std::vector<float> m, l;  // [n_query]
  std::vector<float> run_acc, run_m, run_l;
};

// The queries of an item: per kv head g_lo.., the rows r0 .. r0 + rows of
// its tile, each with the n_rep query heads of that kv head. A kv head's
// rows are side by side, for run_segment's runs of rows; for a one-row tile
// this is the order of those heads in q.
std::size_t query_index(std::size_t r, std::int32_t g, std::int32_t hr, const AttentionItem& it,
                        std::size_t r0, std::size_t rows, std::int32_t n_rep) {
  return ((static_cast<std::size_t>(g) - it.g_lo) * rows + (r - r0)) * n_rep + hr;
}

// Segment `seg` (cells [seg S, seg S + S) of the union) for the query heads of
// the item's kv heads and every row of its tile that reaches it, from a fresh
// state. Chunk by chunk, every kv head of the item in turn, so that an item
// holding all of them reads each chunk's cache rows whole.
void run_segment(const AttentionArgs& a, const AttentionScratch& s, const attn::AttnFns& fns,
                 const AttentionItem& it, std::size_t seg, ItemBuffers& b) {
  constexpr int C = kAttnChunk;
  const std::int32_t hd = a.head_dim;
  const std::int32_t n_rep = a.n_head / a.n_head_kv;
  const std::size_t r0 = s.tile_begin[it.tile], r1 = s.tile_begin[it.tile + 1];
  const std::uint32_t* U = s.union_cells.data() + s.union_begin[it.tile];
  const std::size_t nu = s.union_begin[it.tile + 1] - s.union_begin[it.tile];
  const std::size_t c0 = seg * kAttnSegment, c1 = std::min(c0 + kAttnSegment, nu);
  const std::size_t n_query = (r1 - r0) * (it.g_hi - it.g_lo) * static_cast<std::size_t>(n_rep);
  const std::size_t row_bytes = kv_row_bytes(a.kv_type, std::int64_t{a.n_head_kv} * hd);
  const std::size_t slice_bytes = kv_row_bytes(a.kv_type, hd);
  const auto head = [&](std::int32_t g) {
    return attn::KvHead{static_cast<const std::byte*>(a.k),
                        static_cast<const std::byte*>(a.v),
                        a.kv_type,
                        row_bytes,
                        kv_row_bytes(a.kv_type, std::int64_t{g} * hd),
                        slice_bytes};
  };

  b.acc.assign(n_query * hd, 0.0f);
  b.m.assign(n_query, kNegInf);
  b.l.assign(n_query, 0.0f);

  if (r1 - r0 == 1) {
    // One row (decode): the heads of each kv head are contiguous in q and read
    // the cache rows directly; decode_chunk's arithmetic is query_chunk's.
    // The cells the next call for the same head reads are asked for too
    // (past the segment's end: the next segment, read by this thread or another).
    const float* q = a.q + static_cast<std::int64_t>(r0) * a.n_head * hd;
    for (std::size_t cb = c0; cb < c1; cb += C) {
      const int nc = static_cast<int>(std::min(cb + C, c1) - cb);
      const int n_next = static_cast<int>(std::min(cb + nc + C, nu) - (cb + nc));
      for (std::int32_t g = static_cast<std::int32_t>(it.g_lo);
           g < static_cast<std::int32_t>(it.g_hi); ++g) {
        const std::size_t qi = query_index(r0, g, 0, it, r0, 1, n_rep);
        fns.decode_chunk(head(g), U + cb, nc, n_next, hd, n_rep, q + std::int64_t{g} * n_rep * hd,
                         a.scale, a.softcap, &b.m[qi], &b.l[qi], b.acc.data() + qi * hd);
      }
    }
    return;
  }
  // A kv head's rows have their states side by side (query_index), and their
  // queries too (b.q, gathered by run_item): rows that see the whole chunk go
  // to query_chunk together, and the kernel groups their query heads across
  // rows, so that a model with one or three query heads per kv head still
  // fills its groups of four (135M shape, pp512 after 4,096 cells: +20%).
  const auto fold_rows = [&](std::int32_t g, std::size_t ra, std::size_t rb, std::size_t hi,
                             std::size_t cb) {
    const std::size_t qi = query_index(ra, g, 0, it, r0, r1 - r0, n_rep);
    fns.query_chunk(b.q.data() + qi * hd, b.kt.data(), b.v.data(), 0, static_cast<int>(hi - cb), hd,
                    static_cast<int>((rb - ra) * n_rep), a.scale, a.softcap, &b.m[qi], &b.l[qi],
                    b.acc.data() + qi * hd);
  };
  b.kt.resize(static_cast<std::size_t>(hd) * C);
  b.v.resize(static_cast<std::size_t>(hd) * C);
  for (std::size_t cb = c0; cb < c1; cb += C) {
    const std::size_t ce = std::min(cb + C, c1);
    for (std::int32_t g = static_cast<std::int32_t>(it.g_lo);
         g < static_cast<std::int32_t>(it.g_hi); ++g) {
      fns.load_chunk(head(g), U + cb, static_cast<int>(ce - cb), hd, b.kt.data(), b.v.data());
      std::size_t run = r0;  // first row of the current run seeing the whole chunk
      for (std::size_t r = r0; r < r1; ++r) {
        if (s.row_hi[r] >= ce) continue;
        if (run < r) fold_rows(g, run, r, ce, cb);
        run = r + 1;
        if (s.row_hi[r] > cb) fold_rows(g, r, r + 1, s.row_hi[r], cb);
      }
      if (run < r1) fold_rows(g, run, r1, ce, cb);
    }
  }
}

// An item's segments. One that owns all of its tile's segments folds them
// into the rows' running states and writes out; otherwise each segment's
// state goes to `partial` for attention_tiled's fold.
void run_item(const AttentionArgs& a, const AttentionScratch& s, const attn::AttnFns& fns,
              const AttentionItem& it, bool owns_tile, std::size_t seg_stride, float* partial,
              ItemBuffers& b) {
  const std::int32_t hd = a.head_dim;
  const std::int32_t n_rep = a.n_head / a.n_head_kv;
  const std::size_t r0 = s.tile_begin[it.tile], r1 = s.tile_begin[it.tile + 1];
  const std::size_t n_query = (r1 - r0) * (it.g_hi - it.g_lo) * static_cast<std::size_t>(n_rep);
  if (owns_tile) {
    b.run_acc.assign(n_query * hd, 0.0f);
    b.run_m.assign(n_query, kNegInf);
    b.run_l.assign(n_query, 0.0f);
  }
  const auto each_query = [&](auto&& f) {
    for (std::size_t r = r0; r < r1; ++r)
      for (std::int32_t g = static_cast<std::int32_t>(it.g_lo);
           g < static_cast<std::int32_t>(it.g_hi); ++g)
        for (std::int32_t hr = 0; hr < n_rep; ++hr)
          f(r, g * n_rep + hr, query_index(r, g, hr, it, r0, r1 - r0, n_rep));
  };
  if (r1 - r0 > 1) {  // the tile path's queries, in the order of their states
    b.q.resize(n_query * hd);
    each_query([&](std::size_t r, std::int32_t h, std::size_t qi) {
      std::memcpy(b.q.data() + qi * hd, a.q + (static_cast<std::int64_t>(r) * a.n_head + h) * hd,
                  static_cast<std::size_t>(hd) * sizeof(float));
    });
  }
  for (std::size_t seg = it.seg_lo; seg < it.seg_hi; ++seg) {
    run_segment(a, s, fns, it, seg, b);
    each_query([&](std::size_t r, std::int32_t h, std::size_t qi) {
      if (s.row_hi[r] <= seg * kAttnSegment) return;  // the row ends before this segment
      if (owns_tile) {
        fold_segment(b.run_m[qi], b.run_l[qi], b.run_acc.data() + qi * hd, b.m[qi], b.l[qi],
                     b.acc.data() + qi * hd, hd);
      } else {
        float* part = partial + ((r * a.n_head + h) * seg_stride + seg) * (hd + 2);
        part[0] = b.m[qi];
        part[1] = b.l[qi];
        std::memcpy(part + 2, b.acc.data() + qi * hd, static_cast<std::size_t>(hd) * sizeof(float));
      }
    });
  }
  if (!owns_tile) return;
  each_query([&](std::size_t r, std::int32_t h, std::size_t qi) {
    finish(a, h, b.run_m[qi], b.run_l[qi], b.run_acc.data() + qi * hd,
           a.out + (static_cast<std::int64_t>(r) * a.n_head + h) * hd);
  });
}

}  // namespace

void attention_tiled(const AttentionArgs& a, ThreadPool& pool, AttentionScratch& s,
                     CpuLevel level) {
  if (a.n_tokens == 0) return;
  if (a.kv_type == KvType::Q8_0 && a.head_dim % 32 != 0)
    throw Error(Errc::InvalidArgument,
                "a Q8_0 KV cache needs a head size that is a multiple of 32; use f16 or f32");
  const std::size_t seen = plan_tiles(a, s);
  const std::size_t n_tiles = s.tile_begin.size() - 1;
  const std::uint32_t n_kv = static_cast<std::uint32_t>(a.n_head_kv);
  const std::int32_t hd = a.head_dim;
  // A tile of several rows is split by kv head: a chunk's converted K and V
  // serve all its rows. A one-row tile (decode) keeps its kv heads in one
  // item, which then reads each chunk's cache rows whole: split by head, an
  // item would read a head's slice of every row (128 of 1,024 bytes at a 1B
  // model's shape), and the hardware prefetchers would pull the rest of
  // those rows from DRAM for nothing (3-4x slower at 4,096 cached cells).
  const auto one_row = [&](std::size_t t) { return s.tile_begin[t + 1] - s.tile_begin[t] == 1; };
  std::size_t units = 0, max_segments = 0;
  for (std::size_t t = 0; t < n_tiles; ++t) {
    units += one_row(t) ? 1 : n_kv;
    max_segments = std::max(max_segments, segments(s.union_begin[t + 1] - s.union_begin[t]));
  }
  // Enough items for every thread (4 per thread evens out the tail): when the
  // units are few (decode), a tile's segments are spread over several items
  // and their states folded afterwards, if that buffer stays small. Either way
  // every row folds the same segment states in the same order. A one-row tile
  // with fewer segments than that (a short context) is split by kv heads too.
  const std::size_t want = 4 * static_cast<std::size_t>(pool.size());
  const std::size_t parts = units >= want ? 1 : (want + units - 1) / units;
  std::size_t n_split = std::clamp<std::size_t>(parts, 1, std::max<std::size_t>(1, max_segments));
  const std::size_t partial_floats =
      static_cast<std::size_t>(a.n_tokens) * a.n_head * max_segments * (hd + 2);
  constexpr std::size_t kMaxPartialFloats = std::size_t{4} << 20;  // 16 MiB
  if (partial_floats > kMaxPartialFloats) n_split = 1;
  if (n_split > 1 && s.partial.size() < partial_floats) s.partial.resize(partial_floats);
  const std::uint32_t head_parts =
      static_cast<std::uint32_t>(std::min<std::size_t>(n_kv, (parts + n_split - 1) / n_split));
  s.items.clear();
  for (std::uint32_t t = 0; t < n_tiles; ++t) {
    const std::uint32_t n_groups = one_row(t) ? head_parts : n_kv;
    const std::uint32_t n_seg =
        static_cast<std::uint32_t>(segments(s.union_begin[t + 1] - s.union_begin[t]));
    for (std::uint32_t i = 0; i < n_groups; ++i)
      for (std::size_t k = 0; k < n_split; ++k)
        s.items.push_back({t, n_kv * i / n_groups, n_kv * (i + 1) / n_groups,
                           static_cast<std::uint32_t>(n_seg * k / n_split),
                           static_cast<std::uint32_t>(n_seg * (k + 1) / n_split)});
  }
  // A call with little work (a tiny model, a short context) runs on the
  // calling thread alone: waking a worker costs more than it would save, and
  // 2 threads must never be slower than 1.
  constexpr std::size_t kInlineMacs = std::size_t{1} << 16;
  const std::size_t macs = seen * static_cast<std::size_t>(a.n_head) * hd;
  const std::size_t grain = macs < kInlineMacs ? s.items.size() : 1;
  const attn::AttnFns& fns = attn::attn_fns(level);
  pool.parallel_for(s.items.size(), grain, [&](std::size_t begin, std::size_t end) {
    thread_local ItemBuffers b;
    for (std::size_t i = begin; i < end; ++i)
      run_item(a, s, fns, s.items[i], n_split == 1, max_segments, s.partial.data(), b);
  });
  if (n_split == 1) return;
  // Each row folds its segments' states in order, as run_item does.
  std::vector<float>& acc = s.fold_acc;
  acc.resize(static_cast<std::size_t>(hd));
  for (std::int64_t r = 0; r < a.n_tokens; ++r) {
    const std::size_t n_seg = segments(s.row_hi[static_cast<std::size_t>(r)]);
    for (std::int32_t h = 0; h < a.n_head; ++h) {
      const float* parts = s.partial.data() + (r * a.n_head + h) * max_segments * (hd + 2);
      float m = kNegInf, l = 0.0f;
      std::fill(acc.begin(), acc.end(), 0.0f);
      for (std::size_t seg = 0; seg < n_seg; ++seg) {
        const float* p = parts + seg * (hd + 2);
        fold_segment(m, l, acc.data(), p[0], p[1], p + 2, hd);
      }
      finish(a, h, m, l, acc.data(), a.out + (r * a.n_head + h) * hd);
    }
  }
}

}  // namespace seam
