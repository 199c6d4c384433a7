#include "chat/render_budget.h"

#include <pthread.h>

#include <algorithm>
#include <string>

#include "seam/error.h"

namespace seam::chat {

namespace {
thread_local RenderBudget* current = nullptr;
}

RenderBudget::RenderBudget() : outer_(current) {
  // The frame address, not a local's: under AddressSanitizer a local may live
  // on a heap-allocated fake stack.
  const auto start = reinterpret_cast<std::uintptr_t>(__builtin_frame_address(0));
  std::size_t room = std::size_t{1} << 20;  // if the thread's stack cannot be found
  pthread_attr_t attr;
  if (pthread_getattr_np(pthread_self(), &attr) == 0) {
    void* low = nullptr;
    std::size_t size = 0;
    if (pthread_attr_getstack(&attr, &low, &size) == 0 &&
        start > reinterpret_cast<std::uintptr_t>(low))
      room = (start - reinterpret_cast<std::uintptr_t>(low)) / 2;
    pthread_attr_destroy(&attr);
  }
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
