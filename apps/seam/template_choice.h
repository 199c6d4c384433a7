// Which chat template `seam chat` and `seam serve` render: --template as a
// built-in name or a Jinja file, else the model's own, else chatml (with a
// warning on stderr).
#pragma once

#include <string>
#include <vector>

#include "seam/model.h"

namespace seam::cli {

struct TemplateChoice {
  std::string source;
  std::string name;  // for summaries: "model", a built-in's name, or the file
};

TemplateChoice choose_template(const Model& model, const std::string& arg);

// End-of-turn markers the template writes. When the model's vocabulary has no
// end-of-generation token for one, it can only appear as text: stop on it.
std::vector<std::string> turn_end_stops(const Model& model, const std::string& source);

}  // namespace seam::cli
