#include "default_model.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <vector>

#include "seam/error.h"

namespace seam::cli {

std::string default_model_path() {
  namespace fs = std::filesystem;
  std::error_code ec;
  // A SEAM_MODEL that names nothing is a mistake to report, not a cue to run
  // some other model.
  if (const char* env = std::getenv("SEAM_MODEL"); env && *env) {
    if (fs::exists(env, ec)) return env;
    throw Error(Errc::Io, std::string("SEAM_MODEL is set to '") + env +
                              "', which does not exist; point it at a model file or directory, "
                              "unset it, or pass -m");
  }
  std::vector<fs::path> candidates;
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
