// The standalone driver of every fuzz target, for builds without libFuzzer
// (g++): mutates the target's seeds (plus any files named on the command line)
// and feeds each mutation to LLVMFuzzerTestOneInput. Each target's .cpp
// defines the entry point and seam_fuzz_seeds(); a seed is a byte string
// whatever the target parses (a GGUF file, a template, a JSON body).
//
//   <target>_fuzz [--iterations N] [--seed S] [input ...]
//   <target>_fuzz --dump-seeds DIR   (writes the seeds, e.g. as a libFuzzer corpus)
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "fuzz/mutator.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);
std::vector<std::string> seam_fuzz_seeds();

namespace {

int dump_seeds(const std::vector<std::string>& seeds, const std::string& dir) {
  for (std::size_t k = 0; k < seeds.size(); ++k) {
    const std::string path = dir + "/seed" + std::to_string(k);
    std::ofstream out(path, std::ios::binary);
    out << seeds[k];
    if (!out) {
      std::fprintf(stderr, "cannot write '%s'\n", path.c_str());
      return 1;
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::uint64_t iterations = 100000, seed = 1;
  std::vector<std::string> seeds = seam_fuzz_seeds();
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if ((a == "--iterations" || a == "--seed") && i + 1 < argc) {
      (a == "--seed" ? seed : iterations) = std::strtoull(argv[++i], nullptr, 10);
    } else if (a == "--dump-seeds" && i + 1 < argc) {
      return dump_seeds(seeds, argv[++i]);
    } else if (a == "--help" || a == "-h") {
      std::printf("usage: %s [--iterations N] [--seed S] [input ...] | --dump-seeds DIR\n",
                  argv[0]);
      return 0;
    } else {
      std::ifstream f(a, std::ios::binary);
      if (!f) {
        std::fprintf(stderr, "cannot read input file '%s'\n", a.c_str());
        return 1;
      }
      seeds.emplace_back(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
    }
  }
  if (seeds.empty()) {
    std::fprintf(stderr, "%s: no seeds (name input files)\n", argv[0]);
    return 1;
  }
  // Every seed once as it is, then mutations.
  for (const std::string& s : seeds)
    LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(s.data()), s.size());
  seam::fuzz::Mutator m(seed);
  for (std::uint64_t i = 0; i < iterations; ++i) {
    const std::string input = seam::fuzz::mutate_string(m, seeds[i % seeds.size()]);
    LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(input.data()), input.size());
  }
  std::fprintf(stderr, "%s: %llu inputs, no crash\n", argv[0],
               static_cast<unsigned long long>(iterations));
  return 0;
}
