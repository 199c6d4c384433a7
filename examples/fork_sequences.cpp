// Fork a sequence and continue both branches in shared decode calls.
//
// A prompt is decoded once on sequence 0; copy_seq(0, 1) makes sequence 1
// share its KV cells (nothing is copied). Each branch then continues with a
// different first word, and both advance together, one batch per step.
//
//   fork_sequences MODEL.gguf
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "seam/error.h"
#include "seam/model.h"

namespace {

seam::Token argmax(std::span<const float> logits) {
  seam::Token best = 0;
  for (std::size_t i = 1; i < logits.size(); ++i)
    if (logits[i] > logits[static_cast<std::size_t>(best)]) best = static_cast<seam::Token>(i);
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s MODEL.gguf\n", argv[0]);
    return 2;
  }
  try {
    auto model = seam::Model::load(argv[1]);
    auto session = model->session({.n_ctx = 512, .n_batch = 64, .n_seq_max = 2});

    // 1. The shared prefix, on sequence 0. Only the last row needs logits.
    const std::vector<seam::Token> prefix =
        model->tokenize("Once upon a time, there was a", true, false);
    std::vector<seam::Decode> batch;
    for (std::size_t i = 0; i < prefix.size(); ++i) {
      batch.push_back({prefix[i], static_cast<std::int32_t>(i), 0, i + 1 == prefix.size()});
    }
    session->decode(batch);

    // 2. Fork: sequence 1 shares every cell of sequence 0.
    session->copy_seq(0, 1);
    std::printf("after the fork %zu cells are in use (shared, not copied)\n",
                static_cast<std::size_t>(session->n_ctx() - session->free_cells()));

    // 3. Each branch starts with its own word, then both decode greedily in one batch per step.
    const char* first_words[2] = {" little", " big"};
    std::string text[2];
    std::vector<seam::Token> next(2);
    for (std::uint32_t s = 0; s < 2; ++s) {
      next[s] = model->tokenize(first_words[s], false, false).back();
      text[s] = first_words[s];
    }
    std::int32_t pos = static_cast<std::int32_t>(prefix.size());
    for (int step = 0; step < 24; ++step, ++pos) {
      std::vector<seam::Decode> both = {{next[0], pos, 0, true}, {next[1], pos, 1, true}};
      session->decode(both);
      for (std::uint32_t s = 0; s < 2; ++s) {
        next[s] = argmax(session->logits(s));
        text[s] += model->detok(next[s], seam::Detok::Plain);
      }
    }
    for (int s = 0; s < 2; ++s)
      std::printf("branch %d: Once upon a time, there was a%s\n", s, text[s].c_str());
  } catch (const seam::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
