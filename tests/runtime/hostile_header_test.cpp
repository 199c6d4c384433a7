// Header counts that drive allocation (issue 14, 3.5 and 3.6): a layer count
// the tensor table cannot hold is refused before anything is sized by it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "runtime/test_model.h"
#include "seam/error.h"
#include "seam/inspect.h"
#include "seam/model.h"

namespace seam {
namespace {

// stories260K with the u32 value of metadata key `key` replaced.
std::string patched_stories(const std::string& key, std::uint32_t value) {
  std::ifstream in(testing::stories_path(), std::ios::binary);
  std::string bytes(std::istreambuf_iterator<char>(in), {});
  // Key: u64 length, the name; then the u32 value type (4) and the value.
  const auto at = bytes.find(key);
  EXPECT_NE(at, std::string::npos) << key;
  std::uint32_t type = 0;
  std::memcpy(&type, bytes.data() + at + key.size(), 4);
  EXPECT_EQ(type, 4u) << key << " is not a u32";
  std::memcpy(bytes.data() + at + key.size() + 4, &value, 4);
  const std::string path = std::string(SEAM_SCRATCH_DIR) + "/hostile_" + key + "_" +
                           std::to_string(value) + "_" + std::to_string(::getpid()) + ".gguf";
  std::filesystem::create_directories(SEAM_SCRATCH_DIR);
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

TEST(HostileHeader, LayerCountBeyondTheTensorTableIsRefusedUpFront) {
  const std::string path = patched_stories("llama.block_count", 8'323'077);
  const Admission a = Model::admit(path);
  EXPECT_FALSE(a.ok);
  EXPECT_NE(a.reason.find("'llama.block_count' = 8323077 layers, but the file has only"),
            std::string::npos)
      << a.reason;
  EXPECT_THROW(Model::load(path), Error);
  // `seam inspect`'s report shows the metadata and the refusal.
  const InspectReport r = inspect_file(path);
  EXPECT_FALSE(r.admission.ok);
  std::filesystem::remove(path);
}

TEST(HostileHeader, AHugeTrainingContextStillLoads) {
  // The file claims 8 M tokens of context: loading sizes nothing by it (the
  // CLI's default context is capped separately; see docs/cli.md).
  const std::string path = patched_stories("llama.context_length", 8'323'584);
  const auto m = Model::load(path);
  EXPECT_EQ(m->info().n_ctx_train, 8'323'584u);
  SessionConfig sc;
  sc.n_ctx = 256;
  auto s = m->session(sc);
  EXPECT_EQ(s->n_ctx(), 256u);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace seam
