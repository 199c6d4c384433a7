// Generate a continuation with the library's generation loop.
//
//   simple_generate MODEL.gguf [PROMPT]
#include <cstdio>
#include <exception>
#include <string>

#include "seam/error.h"
#include "seam/generate.h"
#include "seam/model.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s MODEL.gguf [PROMPT]\n", argv[0]);
    return 2;
  }
  const std::string prompt_text = argc > 2 ? argv[2] : "Once upon a time";
  try {
    auto model = seam::Model::load(argv[1]);
    std::vector<seam::Token> prompt = model->tokenize(prompt_text, /*add_bos=*/true,
                                                      /*parse_special=*/false);
    auto session = model->session({.n_ctx = 512, .n_batch = 64, .n_seq_max = 1});

    seam::GenerateConfig config;
    config.max_tokens = 40;
    config.sampler.temperature = 0.0f;  // greedy: the same text every run
    std::fputs(prompt_text.c_str(), stdout);
    seam::GenerateResult result =
        seam::generate(*model, *session, prompt, config, [](std::string_view piece) {
          std::fwrite(piece.data(), 1, piece.size(), stdout);
          std::fflush(stdout);
        });
    std::printf("\n");
    std::fprintf(stderr, "%zu prompt tokens, %zu generated, finish: %s\n", result.prompt_tokens,
                 result.completion_tokens,
                 std::string(seam::finish_reason_name(result.finish)).c_str());
  } catch (const seam::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
