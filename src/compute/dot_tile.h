// The loop every level's dot kernels share (dot.h DotFn): n_act activation
// rows in tiles of at most kRegTile (as many as the level's registers hold
// accumulators for), each tile to the kernel unrolled for its size. Included by
// the SIMD units; internal linkage keeps each unit's copy its own (dot.h).
#pragma once

#include <cstddef>
#include <utility>

namespace seam::dot {
namespace {

// run(std::integral_constant<int, nt>, act, out) for each tile of nt rows.
template <int kRegTile, class Run>
inline void for_each_tile(const void* act, std::size_t as, int n_act, float* out, std::size_t os,
                          Run run) {
  while (n_act > 0) {
    const int nt = n_act > kRegTile ? kRegTile : n_act;
    [&]<int... I>(std::integer_sequence<int, I...>) {
      ((nt == I + 1 ? run(std::integral_constant<int, I + 1>{}, act, out) : void()), ...);
    }
    (std::make_integer_sequence<int, kRegTile>{});
    act = static_cast<const std::byte*>(act) + nt * as;
    out += nt * os;
    n_act -= nt;
  }
}

}  // namespace
}  // namespace seam::dot
