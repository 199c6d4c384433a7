// seam: one binary, one subcommand per apps/seam/cmd_*.cpp.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>

#include "commands.h"
#include "seam/error.h"

int main(int argc, char** argv) {
  CLI::App app{"seam: a local LLM inference runtime"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "seam 0.1.0");
  seam::cli::CommandList commands = seam::cli::register_commands(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    for (auto& [sub, run] : commands) {
      if (sub->parsed()) return run();
    }
  } catch (const seam::Error& e) {
    std::fprintf(stderr, "seam: error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "seam: error: %s\n", e.what());
    return 1;
  }
  return 1;
}
