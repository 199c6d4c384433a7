#include "chat/render_budget.h"

#include <pthread.h>

#include <algorithm>
#include <string>

#include "seam/error.h"

namespace seam::chat {

namespace {

thread_local RenderBudget* current = nullptr;

// The lowest address of this thread's stack, found once per thread (for the
// main thread glibc reads /proc/self/maps to find it); 0 if it cannot be found.
std::uintptr_t thread_stack_low() {
  thread_local const std::uintptr_t low = [] {
    std::uintptr_t found = 0;
    pthread_attr_t attr;
    if (pthread_getattr_np(pthread_self(), &attr) == 0) {
      void* addr = nullptr;
      std::size_t size = 0;
      if (pthread_attr_getstack(&attr, &addr, &size) == 0)
        found = reinterpret_cast<std::uintptr_t>(addr);
      pthread_attr_destroy(&attr);
    }
    return found;
  }();
  return low;
}

}  // namespace

RenderBudget::RenderBudget() : outer_(current) {
  // The frame address, not a local's: under AddressSanitizer a local may live
  // on a heap-allocated fake stack.
  const auto start = reinterpret_cast<std::uintptr_t>(__builtin_frame_address(0));
  const std::uintptr_t low = thread_stack_low();
  const std::size_t room =
      low != 0 && start > low ? (start - low) / 2 : std::size_t{1} << 20;  // stack unknown
  stack_floor_ = start - std::min(room, kMaxStackBytes);
  current = this;
}

RenderBudget::~RenderBudget() { current = outer_; }

void charge(std::uint64_t steps) {
  if (!current) return;
  current->steps_ += steps;
  if (current->steps_ > kMaxSteps)
    throw Error(Errc::Template, "the template ran for more than " + std::to_string(kMaxSteps) +
                                    " steps (loops, or lists and strings, too large?); stopped");
}

void check_stack() {
  if (current &&
      reinterpret_cast<std::uintptr_t>(__builtin_frame_address(0)) < current->stack_floor_)
    throw Error(
        Errc::Template,
        "the template nests too deeply (recursive macros?); stopped before the stack ran out");
}

void check_size(double bytes) {
  if (bytes > static_cast<double>(kMaxString))
    throw Error(Errc::Template, "the template builds a string of more than " +
                                    std::to_string(kMaxString >> 20) +
                                    " MiB; a chat template never needs that much");
}

}  // namespace seam::chat
