// A vector whose new elements are zero without being written, for buffers
// sized once for the worst case (a full batch, a full context) and used far
// less most of the time.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

namespace seam {

// calloc takes a large block's pages fresh from the kernel, already zero and
// not yet resident, so a value-initialised element needs no store: the page
// under it becomes resident only when the engine first writes it. (A
// std::vector<float>(n) writes every zero and makes the whole block resident
// at once: 56 MiB of a 1B model's batch scratch for a one-token decode.)
//
// Only growth from a size the buffer never exceeded yields zeros: resizing
// down and up again keeps the old values. The buffers using it only grow.
template <class T>
struct ZeroedAllocator {
  static_assert(std::is_trivially_default_constructible_v<T> && std::is_trivially_copyable_v<T>,
                "an all-zero byte pattern must be a value-initialised T");
  using value_type = T;

  ZeroedAllocator() = default;
  template <class U>
  ZeroedAllocator(const ZeroedAllocator<U>&) noexcept {}  // NOLINT(google-explicit-constructor)

  T* allocate(std::size_t n) {
    if (void* p = std::calloc(n, sizeof(T))) return static_cast<T*>(p);
    throw std::bad_alloc();
  }
  void deallocate(T* p, std::size_t) noexcept { std::free(p); }

  template <class U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;  // default-, not value-initialised: the bytes are zero
  }
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }

  friend bool operator==(ZeroedAllocator, ZeroedAllocator) noexcept { return true; }
};

template <class T>
using ZeroedVector = std::vector<T, ZeroedAllocator<T>>;

}  // namespace seam
