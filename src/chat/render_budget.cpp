#include "chat/render_budget.h"

#include <string>

#include "seam/error.h"

namespace seam::chat {

namespace {
thread_local RenderBudget* current = nullptr;
}

RenderBudget::RenderBudget() : outer_(current) { current = this; }
RenderBudget::~RenderBudget() { current = outer_; }

void charge(std::uint64_t steps) {
  if (!current) return;
  current->steps_ += steps;
  if (current->steps_ > kMaxSteps)
    throw Error(Errc::Template, "the template ran for more than " + std::to_string(kMaxSteps) +
                                    " steps (loops, or lists and strings, too large?); stopped");
}

void check_size(double bytes) {
  if (bytes > static_cast<double>(kMaxString))
    throw Error(Errc::Template, "the template builds a string of more than " +
                                    std::to_string(kMaxString >> 20) +
                                    " MiB; a chat template never needs that much");
}

}  // namespace seam::chat
