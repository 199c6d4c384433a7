#include "commands.h"

namespace seam::cli {

// One line per subcommand; each add_* is defined in its cmd_*.cpp.
CommandList register_commands(CLI::App& app) {
  CommandList list;
  (void)app;
  return list;
}

}  // namespace seam::cli
