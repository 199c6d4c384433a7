// Decoding one token at a time allocates nothing once the session is warm:
// every buffer of the decode path (mask, cells, attention and matmul scratch,
// RoPE angles) keeps its storage between tokens. Counted by replacing the
// global operator new for this test binary (it forwards to malloc; counting is
// on only inside the measured loop). Not under ASan: its allocator pairs its
// own operator new variants with its free, which the replacement would break.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>

#include "python_tools.h"
#include "test_model.h"

namespace {
std::atomic<bool> g_counting{false};
std::atomic<long> g_allocations{0};

#if !defined(__SANITIZE_ADDRESS__)
void* counted_alloc(std::size_t n, std::size_t align) {
  if (g_counting.load(std::memory_order_relaxed)) g_allocations.fetch_add(1);
  if (n == 0) n = 1;
  void* p = align <= alignof(std::max_align_t)
                ? std::malloc(n)
                : std::aligned_alloc(align, (n + align - 1) / align * align);
  if (!p) throw std::bad_alloc();
  return p;
}
#endif
}  // namespace

#if !defined(__SANITIZE_ADDRESS__)
void* operator new(std::size_t n) { return counted_alloc(n, alignof(std::max_align_t)); }
void* operator new(std::size_t n, std::align_val_t a) {
  return counted_alloc(n, static_cast<std::size_t>(a));
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
#endif

namespace seam {
namespace {

using namespace seam::testing;

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kCounting = false;  // operator new is ASan's, not replaced above
#else
constexpr bool kCounting = true;
#endif

// Prefill 24 tokens, warm up with 8 decodes, then count over 32 more.
long allocations_while_decoding(const Model& m, CacheType type) {
  auto s = m.session({128, 32, 1, type});
  const std::vector<Token> prompt = random_prompt(m.info().n_vocab, 24, 3);
  decode_all(*s, prompt, 0);
  std::int32_t pos = static_cast<std::int32_t>(prompt.size());
  Decode d{prompt.back(), 0, 0, true};
  for (int i = 0; i < 40; ++i) {
    if (i == 8) g_counting = true;
    d.pos = pos++;
    s->decode(std::span<const Decode>(&d, 1));
    d.token = static_cast<Token>((d.token * 7 + 3) % static_cast<Token>(m.info().n_vocab));
  }
  g_counting = false;
  return g_allocations.exchange(0);
}

TEST(DecodeAllocations, NoneOnceWarmF16Cache) {
  if (!kCounting) GTEST_SKIP() << "ASan owns operator new: allocations are not counted";
  EXPECT_EQ(allocations_while_decoding(*stories(), CacheType::F16), 0);
}

TEST(DecodeAllocations, NoneOnceWarmQ8CacheGqaModel) {
  if (!kCounting) GTEST_SKIP() << "ASan owns operator new: allocations are not counted";
  const std::string path = generate_model(
      "kvtype_hd32",
      "--dim 128 --layers 3 --heads 4 --kv-heads 2 --ffn 256 --vocab 300 --dtype F32 "
      "--seed 13");
  EXPECT_EQ(allocations_while_decoding(*load_two_threads(path), CacheType::Q8_0), 0);
}

}  // namespace
}  // namespace seam
