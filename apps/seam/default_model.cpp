#include "default_model.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <vector>

#include "seam/error.h"

namespace seam::cli {

std::string default_model_path() {
  namespace fs = std::filesystem;
  std::vector<fs::path> candidates;
  if (const char* env = std::getenv("SEAM_MODEL"); env && *env) candidates.emplace_back(env);
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    candidates.push_back(exe.parent_path() / kDefaultModelName);
    candidates.push_back(exe.parent_path().parent_path() / "share" / "seam" / kDefaultModelName);
  }
  candidates.push_back(fs::path(SEAM_SOURCE_DIR) / "models" / kDefaultModelName);
  std::string looked;
  for (const fs::path& p : candidates) {
    if (fs::is_regular_file(p, ec)) return p.string();
    looked += (looked.empty() ? "" : ", ") + p.string();
  }
  throw Error(Errc::Io, "no model given and the bundled model was not found (looked in " + looked +
                            "); pass one with -m FILE.gguf");
}

}  // namespace seam::cli
