// Standalone driver for builds without libFuzzer (g++): mutates the writer's
// seed files (plus any files named on the command line) and feeds each
// mutation to LLVMFuzzerTestOneInput.
//
//   gguf_fuzz [--iterations N] [--seed S] [seed.gguf ...]
//   gguf_fuzz --dump-seeds DIR   (writes the seed files, e.g. as a libFuzzer corpus)
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>

#include "fuzz/gguf_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

int main(int argc, char** argv) {
  std::uint64_t iterations = 100000, seed = 1;
  std::vector<std::vector<std::byte>> extra;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if ((a == "--iterations" || a == "--seed") && i + 1 < argc) {
      (a == "--seed" ? seed : iterations) = std::strtoull(argv[++i], nullptr, 10);
    } else if (a == "--dump-seeds" && i + 1 < argc) {
      const std::string dir = argv[++i];
      const auto seeds = seam::fuzz::gguf_seeds();
      for (std::size_t k = 0; k < seeds.size(); ++k) {
        const std::string path = dir + "/seed" + std::to_string(k) + ".gguf";
        std::ofstream out(path, std::ios::binary);
        out.write(reinterpret_cast<const char*>(seeds[k].data()),
                  static_cast<std::streamsize>(seeds[k].size()));
        if (!out) {
          std::fprintf(stderr, "cannot write '%s'\n", path.c_str());
          return 1;
        }
      }
      return 0;
    } else if (a == "--help" || a == "-h") {
      std::printf("usage: %s [--iterations N] [--seed S] [seed.gguf ...] | --dump-seeds DIR\n",
                  argv[0]);
      return 0;
    } else {
      std::ifstream f(a, std::ios::binary);
      if (!f) {
        std::fprintf(stderr, "cannot read seed file '%s'\n", a.c_str());
        return 1;
      }
      std::vector<char> raw((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
      extra.emplace_back(reinterpret_cast<const std::byte*>(raw.data()),
                         reinterpret_cast<const std::byte*>(raw.data()) + raw.size());
    }
  }
  auto seeds = seam::fuzz::gguf_seeds();
  seeds.insert(seeds.end(), extra.begin(), extra.end());
  seam::fuzz::Mutator m(seed);
  for (std::uint64_t i = 0; i < iterations; ++i) {
    const auto input = m.mutate(seeds[i % seeds.size()]);
    LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(input.data()), input.size());
  }
  std::fprintf(stderr, "gguf_fuzz: %llu inputs, no crash\n",
               static_cast<unsigned long long>(iterations));
  return 0;
}
