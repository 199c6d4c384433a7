#include "commands.h"

namespace seam::cli {

void add_run_command(CLI::App& app, CommandList& list);
void add_inspect_command(CLI::App& app, CommandList& list);
void add_tokenize_command(CLI::App& app, CommandList& list);
void add_template_command(CLI::App& app, CommandList& list);
void add_chat_command(CLI::App& app, CommandList& list);
void add_quantize_command(CLI::App& app, CommandList& list);
void add_perplexity_command(CLI::App& app, CommandList& list);
void add_bench_command(CLI::App& app, CommandList& list);
void add_serve_command(CLI::App& app, CommandList& list);
void add_observe_command(CLI::App& app, CommandList& list);

// One line per subcommand; each add_* is defined in its cmd_*.cpp.
CommandList register_commands(CLI::App& app) {
  CommandList list;
  add_run_command(app, list);
  add_inspect_command(app, list);
  add_tokenize_command(app, list);
  add_template_command(app, list);
  add_chat_command(app, list);
  add_quantize_command(app, list);
  add_perplexity_command(app, list);
  add_bench_command(app, list);
  add_serve_command(app, list);
  add_observe_command(app, list);
  return list;
}

}  // namespace seam::cli
