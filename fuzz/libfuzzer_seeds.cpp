// Linked into every <target>_libfuzzer binary: with $SEAM_FUZZ_DUMP_SEEDS set
// to a folder, the binary writes its target's seeds there and exits, so a
// campaign seeds its corpus from the binary it runs (scripts/fuzz_campaign.sh).
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

std::vector<std::string> seam_fuzz_seeds();

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const char* dir = std::getenv("SEAM_FUZZ_DUMP_SEEDS");
  if (!dir || !*dir) return 0;
  const std::vector<std::string> seeds = seam_fuzz_seeds();
  for (std::size_t k = 0; k < seeds.size(); ++k) {
    const std::string path = std::string(dir) + "/seed" + std::to_string(k);
    std::ofstream out(path, std::ios::binary);
    out << seeds[k];
    if (!out) {
      std::fprintf(stderr, "cannot write '%s'\n", path.c_str());
      std::exit(1);
    }
  }
  std::fprintf(stderr, "%zu seeds written to %s\n", seeds.size(), dir);
  std::exit(0);
}
