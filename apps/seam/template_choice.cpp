#include "template_choice.h"

#include <cstdio>
#include <fstream>
#include <iterator>

#include "seam/chat.h"
#include "seam/error.h"

namespace seam::cli {

TemplateChoice choose_template(const Model& model, const std::string& arg) {
  if (!arg.empty()) {
    if (auto b = builtin_chat_template(arg)) return {std::string(*b), arg};
    std::ifstream f(arg, std::ios::binary);
    if (!f) {
      std::string names;
      for (auto n : builtin_chat_template_names())
        names += (names.empty() ? "" : ", ") + std::string(n);
      throw Error(Errc::Io, "--template '" + arg + "' is neither a built-in (" + names +
                                ") nor a readable file");
    }
    return {std::string(std::istreambuf_iterator<char>(f), {}), arg};
  }
  if (model.info().chat_template) return {*model.info().chat_template, "model"};
  std::fprintf(stderr,
               "seam: the model has no chat template; using the built-in 'chatml' (pick another "
               "with --template)\n");
  return {std::string(*builtin_chat_template("chatml")), "chatml"};
}

std::vector<std::string> turn_end_stops(const Model& model, const std::string& source) {
  std::vector<std::string> out;
  for (const char* marker : {"<|im_end|>", "<|eot_id|>", "<end_of_turn>", "<|end|>"}) {
    if (source.find(marker) == std::string::npos) continue;
    auto id = model.special_token(marker);
    if (!id || !model.is_eog(*id)) out.emplace_back(marker);
  }
  return out;
}

}  // namespace seam::cli
