// seam inspect: metadata, tensor table and whether this build can run the file.
#include <cstdio>
#include <memory>
#include <string>

#include "commands.h"
#include "seam/cpu.h"
#include "seam/error.h"
#include "seam/inspect.h"
#include "seam/model.h"

namespace seam::cli {

void add_inspect_command(CLI::App& app, CommandList& list) {
  struct Opts {
    std::string file;
    bool all_tensors = false;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* sub =
      app.add_subcommand("inspect", "Show a model file's metadata, tensors and verdict");
  CLI::Option* file =
      sub->add_option("FILE", o->file, "GGUF model file or Hugging Face model directory");
  // -m as every other subcommand (and llama.cpp's tools) spell the model.
  sub->add_option("-m,--model", o->file, "The same as FILE")->excludes(file);
  sub->add_flag("--tensors", o->all_tensors, "List every tensor (default: the first 20)");
  list.emplace_back(sub, [o] {
    if (o->file.empty())
      throw Error(Errc::InvalidArgument, "name the model file: seam inspect FILE (or -m FILE)");
    const InspectReport r = inspect_file(o->file);
    std::printf("file: %s\ngguf version: %u\n\nmetadata (%zu keys):\n", o->file.c_str(),
                r.gguf_version, r.metadata.size());
    for (const auto& [key, value] : r.metadata)
      std::printf("  %s = %s\n", key.c_str(), value.c_str());
    std::printf("\ntensors: %zu, %llu parameters, %.2f MiB (%s)\n", r.tensors.size(),
                static_cast<unsigned long long>(r.n_params),
                static_cast<double>(r.tensor_bytes) / (1024.0 * 1024.0), r.type_summary.c_str());
    const std::size_t shown =
        o->all_tensors ? r.tensors.size() : std::min<std::size_t>(20, r.tensors.size());
    for (std::size_t i = 0; i < shown; ++i) {
      const auto& t = r.tensors[i];
      std::string shape;
      for (std::size_t d = 0; d < t.shape.size(); ++d)
        shape += (d ? " x " : "") + std::to_string(t.shape[d]);
      std::printf("  %-40s %-6s %-20s %llu bytes\n", t.name.c_str(), t.type.c_str(), shape.c_str(),
                  static_cast<unsigned long long>(t.bytes));
    }
    if (shown < r.tensors.size())
      std::printf("  ... %zu more (--tensors lists all)\n", r.tensors.size() - shown);
    if (!r.layers.empty()) {
      std::printf("\nlayers (%zu groups of identical layers):\n", r.layers.size());
      for (const std::string& line : r.layers) std::printf("  %s\n", line.c_str());
    }
    std::printf("\ncpu kernels: %s (SEAM_CPU=scalar|avx2|avx512 picks a lower level)\n",
                cpu_level());
    if (r.admission.ok) {
      // The header alone says it for every level, whatever this CPU runs.
      std::string levels;
      for (const char* level : {"scalar", "avx2", "avx512"})
        if (Model::batch_invariant(o->file, LoadOptions{}, level))
          levels += std::string(levels.empty() ? "" : ", ") + level;
      std::printf("batch-invariant logits at: %s (seam serve; docs/server.md)\n", levels.c_str());
      std::printf("verdict: this build can run this model\n");
    } else {
      std::printf("verdict: this build cannot run this model: %s\n", r.admission.reason.c_str());
    }

    return 0;
  });
}

}  // namespace seam::cli
