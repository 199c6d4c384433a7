// The standalone drivers' byte mutator, shared by every target (fuzz/driver.cpp)
// and by the replay tests: deterministic for a seed, so a failure found by a
// test or by `<target>_fuzz --seed S` reproduces.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <random>
#include <string>
#include <vector>

namespace seam::fuzz {

// Deterministic structure-aware-ish mutator: bit flips, byte sets,
// truncation, insertion, deletion, and overwriting a 4- or 8-byte field with
// a boundary value (the counts, lengths, dims and offsets of GGUF are all
// u32/u64).
class Mutator {
 public:
  explicit Mutator(std::uint64_t seed) : rng_(seed) {}

  std::vector<std::byte> mutate(std::vector<std::byte> b) {
    const int n = 1 + static_cast<int>(below(4));
    for (int i = 0; i < n; ++i) mutate_once(b);
    return b;
  }

 private:
  std::uint64_t below(std::uint64_t n) { return n == 0 ? 0 : rng_() % n; }

  std::uint64_t interesting(std::size_t size) {
    static constexpr std::uint64_t kValues[] = {0,
                                                1,
                                                2,
                                                3,
                                                4,
                                                5,
                                                7,
                                                8,
                                                12,
                                                13,
                                                16,
                                                31,
                                                32,
                                                33,
                                                63,
                                                64,
                                                255,
                                                256,
                                                4096,
                                                0x7fff,
                                                0x8000,
                                                0xffff,
                                                0x10000,
                                                0x7fffffff,
                                                0x80000000u,
                                                0xffffffffu,
                                                0x100000000ull,
                                                0x7fffffffffffffffull,
                                                0x8000000000000000ull,
                                                0xffffffffffffffffull};
    const std::uint64_t k = below(std::size(kValues) + 3);
    if (k < std::size(kValues)) return kValues[k];
    if (k == std::size(kValues)) return size;  // near the file size
    if (k == std::size(kValues) + 1) return size + below(64) - 32;
    return rng_();
  }

  void mutate_once(std::vector<std::byte>& b) {
    switch (below(7)) {
      case 0:  // bit flip
        if (!b.empty()) b[below(b.size())] ^= static_cast<std::byte>(1u << below(8));
        break;
      case 1:  // byte set
        if (!b.empty()) b[below(b.size())] = static_cast<std::byte>(interesting(b.size()) & 0xff);
        break;
      case 2:  // truncate
        b.resize(below(b.size() + 1));
        break;
      case 3: {  // insert random bytes
        const std::size_t at = below(b.size() + 1);
        std::vector<std::byte> ins(1 + below(16));
        for (auto& x : ins) x = static_cast<std::byte>(rng_() & 0xff);
        b.insert(b.begin() + static_cast<std::ptrdiff_t>(at), ins.begin(), ins.end());
        break;
      }
      case 4: {  // delete a range
        if (b.empty()) break;
        const std::size_t at = below(b.size());
        const std::size_t len = 1 + below(std::min<std::size_t>(16, b.size() - at));
        b.erase(b.begin() + static_cast<std::ptrdiff_t>(at),
                b.begin() + static_cast<std::ptrdiff_t>(at + len));
        break;
      }
      default: {  // overwrite a u32/u64 field with a boundary value
        const std::size_t width = below(2) ? 8 : 4;
        if (b.size() < width) break;
        const std::size_t at = below(b.size() - width + 1);
        const std::uint64_t v = interesting(b.size());
        std::memcpy(b.data() + at, &v, width);  // little endian: low bytes first
        break;
      }
    }
  }

  std::mt19937_64 rng_;
};

// A string's bytes mutated (targets whose seeds are text).
inline std::string mutate_string(Mutator& m, const std::string& s) {
  const auto b = m.mutate({reinterpret_cast<const std::byte*>(s.data()),
                           reinterpret_cast<const std::byte*>(s.data()) + s.size()});
  return std::string(reinterpret_cast<const char*>(b.data()), b.size());
}

}  // namespace seam::fuzz
