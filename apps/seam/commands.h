// The subcommands of the seam binary; each lives in its own cmd_*.cpp.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <utility>
#include <vector>

namespace seam::cli {

// A registered subcommand and the action that runs it after parsing; the
// action returns the process exit code.
using CommandList = std::vector<std::pair<CLI::App*, std::function<int()>>>;

CommandList register_commands(CLI::App& app);

}  // namespace seam::cli
