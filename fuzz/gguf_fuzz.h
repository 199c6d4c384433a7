// GGUF reader fuzzing: the target (parse, then check the reader's invariants
// and that writer -> reader reproduces what was read), seed files made by the
// writer, and a deterministic mutator. Header-only so the libFuzzer binary, the
// standalone driver and the gtest in tests/format share one definition.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "format/gguf.h"
#include "mutator.h"  // same folder: tests include this header by a relative path
#include "seam/error.h"

namespace seam::fuzz {

// Alignments above this are legal, but rewriting such a file would allocate
// the padding; the round-trip check skips them.
inline constexpr std::uint64_t kMaxRoundTripAlignment = 1u << 16;

[[noreturn]] inline void invariant_failed(const char* what) {
  std::fprintf(stderr, "gguf fuzz: invariant violated: %s\n", what);
  std::abort();
}

inline void check(bool ok, const char* what) {
  if (!ok) invariant_failed(what);
}

// Runs one input. Throws only seam::Error (a refused file); aborts when a
// parsed file breaks an invariant.
inline void gguf_one_input(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  const GgufFile g = GgufFile::parse(bytes, "fuzz");

  check(g.version() == 2 || g.version() == 3, "version is 2 or 3");
  check(g.alignment() != 0 && (g.alignment() & (g.alignment() - 1)) == 0, "alignment power of 2");
  check(g.data_offset() % g.alignment() == 0, "data offset aligned");
  for (const auto& [key, value] : g.metadata()) {
    check(g.find(key) == &value, "find() returns the entry");
    // Getters either convert or refuse with seam::Error; they must not crash.
    try {
      (void)g.get_string(key);
    } catch (const Error&) {
    }
    try {
      (void)g.get_int(key);
    } catch (const Error&) {
    }
    try {
      (void)g.get_uint(key);
    } catch (const Error&) {
    }
    try {
      (void)g.get_float(key);
    } catch (const Error&) {
    }
    try {
      (void)g.get_bool(key);
    } catch (const Error&) {
    }
    try {
      (void)g.get_array(key);
    } catch (const Error&) {
    }
  }
  for (const GgufTensor& t : g.tensors()) {
    check(g.find_tensor(t.name) == &t, "find_tensor() returns the tensor");
    check(!t.ne.empty() && t.ne.size() <= 4, "1..4 dims");
    const auto rb = row_bytes(t.type, t.ne[0]);
    check(rb.has_value() && *rb * t.n_rows() == t.nbytes, "nbytes = row_bytes * rows");
    check(t.offset % g.alignment() == 0, "tensor offset aligned");
    check(t.data == bytes.data() + g.data_offset() + t.offset, "data pointer");
    check(g.data_offset() + t.offset + t.nbytes <= size, "data inside the file");
  }

  if (g.alignment() > kMaxRoundTripAlignment) return;
  GgufWriter w;
  for (const auto& [key, value] : g.metadata()) w.set(key, value);
  for (const GgufTensor& t : g.tensors()) {
    w.add_tensor(t.name, t.ne, t.type, {t.data, static_cast<std::size_t>(t.nbytes)});
  }
  const std::vector<std::byte> again = w.to_bytes();
  const GgufFile h = GgufFile::parse(again, "fuzz-rewrite");
  check(h.metadata() == g.metadata(), "metadata survives a rewrite");
  check(h.tensors().size() == g.tensors().size(), "tensor count survives a rewrite");
  for (std::size_t i = 0; i < g.tensors().size(); ++i) {
    const GgufTensor& a = g.tensors()[i];
    const GgufTensor& b = h.tensors()[i];
    check(a.name == b.name && a.ne == b.ne && a.type == b.type && a.nbytes == b.nbytes,
          "tensor info survives a rewrite");
    check(std::memcmp(a.data, b.data, a.nbytes) == 0, "tensor data survives a rewrite");
  }
}

// Deterministic tensor bytes for seeds.
inline std::vector<std::byte> pattern_bytes(std::size_t n, unsigned salt) {
  std::vector<std::byte> out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<std::byte>((i * 131 + salt * 17) & 0xff);
  return out;
}

// Small valid files covering every value type, nested arrays, several tensor
// types and a non-default alignment.
inline std::vector<std::vector<std::byte>> gguf_seeds() {
  std::vector<std::vector<std::byte>> seeds;
  {
    GgufWriter w;
    w.set("general.architecture", GgufValue::str("llama"));
    w.set("seed.u8", GgufValue::u8(200));
    w.set("seed.i8", GgufValue::i8(-100));
    w.set("seed.u16", GgufValue::u16(60000));
    w.set("seed.i16", GgufValue::i16(-30000));
    w.set("seed.u32", GgufValue::u32(4000000000u));
    w.set("seed.i32", GgufValue::i32(-2000000000));
    w.set("seed.u64", GgufValue::u64(1ull << 60));
    w.set("seed.i64", GgufValue::i64(-(1ll << 60)));
    w.set("seed.f32", GgufValue::f32(1.5f));
    w.set("seed.f64", GgufValue::f64(-2.25));
    w.set("seed.bool", GgufValue::boolean(true));
    w.set("seed.strs", GgufValue::strings({"a", "bc", ""}));
    w.set("seed.f32s", GgufValue::f32s({0.5f, -1.0f}));
    w.set("seed.nested",
          GgufValue::array(GgufValueType::ARRAY, {GgufValue::i32s({1, 2}), GgufValue::i32s({})}));
    w.add_tensor("t.f32", {4, 2}, TensorType::F32, pattern_bytes(32, 1));
    w.add_tensor("t.q8", {32}, TensorType::Q8_0, pattern_bytes(34, 2));
    w.add_tensor("t.f16", {16, 2}, TensorType::F16, pattern_bytes(64, 3));
    seeds.push_back(w.to_bytes());
  }
  {
    GgufWriter w;
    w.set("general.alignment", GgufValue::u32(64));
    w.set("general.name", GgufValue::str("aligned"));
    w.add_tensor("k.q4k", {256, 1}, TensorType::Q4_K, pattern_bytes(144, 4));
    w.add_tensor("k.iq2xs", {256}, TensorType::IQ2_XS, pattern_bytes(74, 5));
    w.add_tensor("k.i8", {3, 1, 1, 2}, TensorType::I8, pattern_bytes(6, 6));
    seeds.push_back(w.to_bytes());
  }
  {
    GgufWriter w;  // metadata only, like a vocabulary file
    w.set("tokenizer.ggml.tokens", GgufValue::strings({"<unk>", "<s>", "</s>", "hello"}));
    w.set("tokenizer.ggml.scores", GgufValue::f32s({0.f, 0.f, 0.f, -1.f}));
    w.set("deep",
          GgufValue::array(GgufValueType::ARRAY,
                           {GgufValue::array(GgufValueType::ARRAY, {GgufValue::strings({"x"})})}));
    seeds.push_back(w.to_bytes());
  }
  return seeds;
}

struct FuzzStats {
  std::uint64_t runs = 0, parsed = 0, refused = 0;
};

// Runs `iterations` mutated seeds through the target; only seam::Error is
// caught, so any other exception propagates to the caller.
inline FuzzStats run_gguf_fuzz(std::uint64_t iterations, std::uint64_t seed,
                               const std::vector<std::vector<std::byte>>& extra_seeds = {}) {
  auto seeds = gguf_seeds();
  seeds.insert(seeds.end(), extra_seeds.begin(), extra_seeds.end());
  Mutator m(seed);
  FuzzStats stats;
  for (std::uint64_t i = 0; i < iterations; ++i) {
    const std::vector<std::byte> input = m.mutate(seeds[i % seeds.size()]);
    ++stats.runs;
    try {
      gguf_one_input(reinterpret_cast<const std::uint8_t*>(input.data()), input.size());
      ++stats.parsed;
    } catch (const Error&) {
      ++stats.refused;
    }
  }
  return stats;
}

}  // namespace seam::fuzz
