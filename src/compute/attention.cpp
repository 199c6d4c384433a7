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

// Groups rows into tiles; row r sees union_cells[union_begin[tile] + row_lo[r] ..
// + row_hi[r]), which the checks below make equal to its own mask list.
void plan_tiles(const AttentionArgs& a, AttentionScratch& s) {
  const auto& off = a.mask.offsets;
  const std::uint32_t* cells = a.mask.cells.data();
  const std::size_t T = static_cast<std::size_t>(a.n_tokens);
  s.tile_begin.clear();
  s.union_begin.clear();
  s.union_cells.clear();
  s.row_lo.resize(T);
  s.row_hi.resize(T);
  // The unions hold at most the mask's cells; growing by doubling keeps a
  // decode that adds one cell per token from reallocating every token.
  if (s.union_cells.capacity() < a.mask.cells.size())
    s.union_cells.reserve(2 * a.mask.cells.size());
  std::size_t r = 0;
  while (r < T) {
    const std::size_t r0 = r, ub = s.union_cells.size();
    s.tile_begin.push_back(static_cast<std::uint32_t>(r0));
    s.union_begin.push_back(static_cast<std::uint32_t>(ub));
    for (; r < T && r - r0 < static_cast<std::size_t>(kAttnTileRows); ++r) {
      const std::uint32_t* L = cells + off[r];
      const std::size_t n = off[r + 1] - off[r];
      const std::size_t nu = s.union_cells.size() - ub;
      const std::uint32_t* U = s.union_cells.data() + ub;
      // Where the row's first cell sits in the union (the end if absent: then
      // the whole list is appended and the row sees exactly that new part).
      std::size_t p = 0;
      if (n > 0)
        while (p < nu && U[p] != L[0]) ++p;
      std::size_t k = 0;
      while (k < n && p + k < nu && U[p + k] == L[k]) ++k;
      if (k < n && p + k < nu) break;  // overlaps the union in another order: new tile
      s.union_cells.insert(s.union_cells.end(), L + k, L + n);
      s.row_lo[r] = static_cast<std::uint32_t>(p);
      s.row_hi[r] = static_cast<std::uint32_t>(p + n);
    }
  }
  s.tile_begin.push_back(static_cast<std::uint32_t>(T));
  s.union_begin.push_back(static_cast<std::uint32_t>(s.union_cells.size()));
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

// Per-thread buffers of one work item.
struct ItemBuffers {
  std::vector<float> kt;    // [head_dim][kAttnChunk] K of the chunk, transposed
  std::vector<float> v;     // [kAttnChunk][head_dim] V of the chunk
  std::vector<float> acc;   // [n_query][head_dim]
  std::vector<float> m, l;  // [n_query]
};

// Rows [r0, r1) of one tile, the query heads of kv head g, cells [c0, c1) of
// the tile's union U. Writes out (n_split == 1) or this split's partial state.
void run_item(const AttentionArgs& a, const AttentionScratch& s, const attn::AttnFns& fns,
              std::size_t tile, std::int32_t g, std::size_t split, std::size_t n_split,
              float* partial, ItemBuffers& b) {
  constexpr int C = kAttnChunk;
  const std::int32_t hd = a.head_dim;
  const std::int32_t n_rep = a.n_head / a.n_head_kv;
  const std::size_t r0 = s.tile_begin[tile], r1 = s.tile_begin[tile + 1];
  const std::uint32_t* U = s.union_cells.data() + s.union_begin[tile];
  const std::size_t nu = s.union_begin[tile + 1] - s.union_begin[tile];
  const std::size_t c0 = nu * split / n_split, c1 = nu * (split + 1) / n_split;
  const std::size_t n_query = (r1 - r0) * static_cast<std::size_t>(n_rep);
  const std::size_t row_bytes = kv_row_bytes(a.kv_type, std::int64_t{a.n_head_kv} * hd);
  const attn::KvHead kv{static_cast<const std::byte*>(a.k), static_cast<const std::byte*>(a.v),
                        a.kv_type, row_bytes, kv_row_bytes(a.kv_type, std::int64_t{g} * hd)};

  b.acc.assign(n_query * hd, 0.0f);
  b.m.assign(n_query, kNegInf);
  b.l.assign(n_query, 0.0f);

  if (r1 - r0 == 1) {
    // One row (decode): its heads of kv head g are contiguous in q and read the
    // cache rows directly; the row sees the whole union.
    const float* q = a.q + (static_cast<std::int64_t>(r0) * a.n_head + g * n_rep) * hd;
    for (std::size_t cb = c0; cb < c1; cb += C)
      fns.decode_chunk(kv, U + cb, static_cast<int>(std::min(cb + C, c1) - cb), hd, n_rep, q,
                       a.scale, a.softcap, b.m.data(), b.l.data(), b.acc.data());
  } else {
    b.kt.resize(static_cast<std::size_t>(hd) * C);
    b.v.resize(static_cast<std::size_t>(hd) * C);
    for (std::size_t cb = c0; cb < c1; cb += C) {
      const std::size_t ce = std::min(cb + C, c1);
      bool any = false;
      for (std::size_t r = r0; r < r1 && !any; ++r) any = s.row_lo[r] < ce && s.row_hi[r] > cb;
      if (!any) continue;
      fns.load_chunk(kv, U + cb, static_cast<int>(ce - cb), hd, b.kt.data(), b.v.data());
      for (std::size_t r = r0; r < r1; ++r) {
        const std::size_t lo = std::max<std::size_t>(s.row_lo[r], cb);
        const std::size_t hi = std::min<std::size_t>(s.row_hi[r], ce);
        if (lo >= hi) continue;
        for (std::int32_t hr = 0; hr < n_rep; ++hr) {
          const std::int32_t h = g * n_rep + hr;
          const std::size_t qi = (r - r0) * n_rep + hr;
          fns.query_chunk(a.q + (static_cast<std::int64_t>(r) * a.n_head + h) * hd, b.kt.data(),
                          b.v.data(), static_cast<int>(lo - cb), static_cast<int>(hi - cb), hd,
                          a.scale, a.softcap, &b.m[qi], &b.l[qi], b.acc.data() + qi * hd);
        }
      }
    }
  }

  for (std::size_t r = r0; r < r1; ++r) {
    for (std::int32_t hr = 0; hr < n_rep; ++hr) {
      const std::int32_t h = g * n_rep + hr;
      const std::size_t qi = (r - r0) * n_rep + hr;
      const float* acc = b.acc.data() + qi * hd;
      if (n_split == 1) {
        float* out = a.out + (static_cast<std::int64_t>(r) * a.n_head + h) * hd;
        float l = b.l[qi];
        const float w = fold_sink(a, h, b.m[qi], l);
        const float inv = l > 0.0f ? w / l : 0.0f;  // no cells: zeros
        for (std::int32_t d = 0; d < hd; ++d) out[d] = acc[d] * inv;
      } else {
        float* part = partial + ((r * a.n_head + h) * n_split + split) * (hd + 2);
        part[0] = b.m[qi];
        part[1] = b.l[qi];
        std::memcpy(part + 2, acc, static_cast<std::size_t>(hd) * sizeof(float));
      }
    }
  }
}

}  // namespace

void attention_tiled(const AttentionArgs& a, ThreadPool& pool, AttentionScratch& s,
                     CpuLevel level) {
  if (a.n_tokens == 0) return;
  if (a.kv_type == KvType::Q8_0 && a.head_dim % 32 != 0)
    throw Error(Errc::InvalidArgument,
                "a Q8_0 KV cache needs a head size that is a multiple of 32; use f16 or f32");
  plan_tiles(a, s);
  const std::size_t n_tiles = s.tile_begin.size() - 1;
  const std::size_t n_kv = static_cast<std::size_t>(a.n_head_kv);
  const std::size_t base = n_tiles * n_kv;
  // Enough items for every thread (4 per thread evens out the tail), but no
  // split shorter than a few chunks.
  std::size_t max_union = 0;
  for (std::size_t t = 0; t < n_tiles; ++t)
    max_union = std::max<std::size_t>(max_union, s.union_begin[t + 1] - s.union_begin[t]);
  const std::size_t want = 4 * static_cast<std::size_t>(pool.size());
  std::size_t n_split = base >= want ? 1 : (want + base - 1) / base;
  n_split =
      std::clamp<std::size_t>(n_split, 1, std::max<std::size_t>(1, max_union / (4 * kAttnChunk)));
  const std::int32_t hd = a.head_dim;
  if (n_split > 1) {
    s.partial.resize(static_cast<std::size_t>(a.n_tokens) * a.n_head * n_split * (hd + 2));
  }
  // A call with little work (a tiny model, a short context) runs on the
  // calling thread alone: waking a worker costs more than it would save, and
  // 2 threads must never be slower than 1.
  constexpr std::size_t kInlineMacs = std::size_t{1} << 16;
  const std::size_t macs = a.mask.cells.size() * static_cast<std::size_t>(a.n_head) * hd;
  const std::size_t n_items = base * n_split;
  const std::size_t grain = macs < kInlineMacs ? n_items : 1;
  const attn::AttnFns& fns = attn::attn_fns(level);
  pool.parallel_for(n_items, grain, [&](std::size_t begin, std::size_t end) {
    thread_local ItemBuffers b;
    for (std::size_t item = begin; item < end; ++item) {
      const std::size_t split = item % n_split;
      const std::size_t tg = item / n_split;
      run_item(a, s, fns, tg / n_kv, static_cast<std::int32_t>(tg % n_kv), split, n_split,
               s.partial.data(), b);
    }
  });
  if (n_split == 1) return;
  // Merge the splits: m = max m_s, out = sum_s acc_s e^(m_s - m) / sum_s l_s e^(m_s - m).
  for (std::int64_t r = 0; r < a.n_tokens; ++r) {
    for (std::int32_t h = 0; h < a.n_head; ++h) {
      const float* parts = s.partial.data() + (r * a.n_head + h) * n_split * (hd + 2);
      float m = kNegInf;
      for (std::size_t sp = 0; sp < n_split; ++sp) m = std::max(m, parts[sp * (hd + 2)]);
      float* out = a.out + (r * a.n_head + h) * hd;
      std::fill(out, out + hd, 0.0f);
      if (m == kNegInf) continue;  // the row sees no cell
      float l = 0.0f;
      for (std::size_t sp = 0; sp < n_split; ++sp) {
        const float* p = parts + sp * (hd + 2);
        if (p[0] == kNegInf) continue;
        const float w = attn::exp_nonpositive(p[0] - m);
        l += p[1] * w;
        for (std::int32_t d = 0; d < hd; ++d) out[d] += p[2 + d] * w;
      }
      const float inv = fold_sink(a, h, m, l) / l;
      for (std::int32_t d = 0; d < hd; ++d) out[d] *= inv;
    }
  }
}

}  // namespace seam
