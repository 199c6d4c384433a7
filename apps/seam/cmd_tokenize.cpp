// seam tokenize: text -> token ids and pieces.
#include <cstdio>
#include <iostream>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "commands.h"
#include "seam/model.h"

namespace seam::cli {

void add_tokenize_command(CLI::App& app, CommandList& list) {
  struct Opts {
    std::string model;
    std::string text;
    bool json = false;
    bool no_bos = false;
    bool parse_special = false;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* sub = app.add_subcommand("tokenize", "Show how a model's tokenizer splits a text");
  sub->add_option("-m,--model", o->model,
                  "GGUF file (a vocab-only file is enough) or Hugging Face model directory")
      ->required();
  sub->add_option("TEXT", o->text, "Text to tokenize; - reads it from stdin")->required();
  sub->add_flag("--json", o->json, "Print {\"ids\":[...],\"pieces\":[...]}");
  sub->add_flag("--no-bos", o->no_bos,
                "Do not add BOS/EOS even if the model's metadata asks for them");
  sub->add_flag("--parse-special", o->parse_special,
                "Recognise special-token text such as <s> or <|im_end|> as single tokens");
  list.emplace_back(sub, [o] {
    std::string text = o->text;
    if (text == "-") text.assign(std::istreambuf_iterator<char>(std::cin), {});
    LoadOptions lo;
    lo.vocab_only = true;
    auto model = Model::load(o->model, lo);
    const std::vector<Token> ids = model->tokenize(text, !o->no_bos, o->parse_special);
    if (o->json) {
      nlohmann::json j;
      j["ids"] = ids;
      j["pieces"] = nlohmann::json::array();
      for (Token t : ids) j["pieces"].push_back(model->detok(t, Detok::Text));
      // Byte tokens may be half a UTF-8 character: show those bytes as U+FFFD.
      std::puts(j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    } else {
      for (Token t : ids) {
        const std::string piece = model->detok(t, Detok::Text);
        std::printf("%6d '%s'\n", t, piece.c_str());
      }
    }
    return 0;
  });
}

}  // namespace seam::cli
