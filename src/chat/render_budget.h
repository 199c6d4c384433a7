// A render's limits on work and size. Real chat templates take thousands of
// steps over a long conversation and produce kilobytes; a hostile or broken
// one can ask for hours or terabytes in a few lines: nested loops, an 8 MiB
// string copied in a loop, a long list sorted a thousand times, a list nested
// in itself forty times and printed. So every evaluation, every loop
// iteration (four), every element a builtin walks and every 256 bytes of
// string an evaluation yields or a serialisation writes costs steps, and past
// the budget, or past the size limit of one string, the render fails with a
// template error.
#pragma once

#include <cstddef>
#include <cstdint>

namespace seam::chat {

constexpr std::uint64_t kMaxSteps = 1'000'000;
constexpr std::size_t kBytesPerStep = 256;
// A render's limit on any string it builds, and on its output (bytes).
constexpr std::size_t kMaxString = std::size_t{16} << 20;

// The most stack one render may use. A render recurses through the evaluator
// (macros calling macros, nested expressions); the macro depth limit alone does
// not bound the bytes, which depend on the build (an ASan build's frames are
// several times larger) and the thread's stack is the caller's.
constexpr std::size_t kMaxStackBytes = std::size_t{4} << 20;

// The budget of the render running on this thread: made when a render starts,
// it is the one charge() and check_stack() count against until it ends.
class RenderBudget {
 public:
  RenderBudget();
  ~RenderBudget();
  RenderBudget(const RenderBudget&) = delete;
  RenderBudget& operator=(const RenderBudget&) = delete;

 private:
  friend void charge(std::uint64_t steps);
  friend void check_stack();
  std::uint64_t steps_ = 0;
  // Evaluation may go down to this address: half the thread's stack left below
  // the render's start, at most kMaxStackBytes.
  std::uintptr_t stack_floor_ = 0;
  RenderBudget* outer_;
};

// Counts `steps` against the running render's budget and fails the render
// past it; outside a render it counts nothing.
void charge(std::uint64_t steps);
inline void charge_bytes(std::size_t bytes) { charge(bytes / kBytesPerStep); }

// Fails the render, with a template error instead of a stack overflow, once
// evaluation has gone below the render's stack floor.
void check_stack();

// Fails the render when a string it is about to build exceeds kMaxString.
void check_size(double bytes);

}  // namespace seam::chat
