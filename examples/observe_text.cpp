// Observe a text through a model: the most surprising tokens, the triggers
// and what the model said about them.
//
// The text is fed in small pieces, as a stream would arrive; the Observer
// holds back the tokens that could still change, so the result is the same
// as for the whole text at once.
//
//   observe_text MODEL.gguf [TEXT]
#include <algorithm>
#include <cstdio>
#include <exception>
#include <string>
#include <variant>
#include <vector>

#include "seam/error.h"
#include "seam/model.h"
#include "seam/observe.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s MODEL.gguf [TEXT]\n", argv[0]);
    return 2;
  }
  const std::string text =
      argc > 2 ? argv[2]
               : "Once upon a time, there was a little girl named Lily. She loved to play in the "
                 "park with her dog. One day the dog found a quantum spreadsheet of purple "
                 "theorems under a tree. Lily laughed and they went home.";
  try {
    auto model = seam::Model::load(argv[1]);
    seam::ObserveOptions opts;
    opts.warmup = 8;  // a short text: allow triggers early
    opts.cooldown = 16;
    opts.z = 2.0;
    opts.interject_tokens = 16;
    seam::Observer obs(model, opts);

    std::vector<seam::TokenEvent> tokens;
    auto drain = [&] {
      for (seam::ObserveEvent& e : obs.take_events()) {
        if (auto* t = std::get_if<seam::TokenEvent>(&e)) {
          tokens.push_back(std::move(*t));
        } else if (auto* tr = std::get_if<seam::TriggerEvent>(&e)) {
          std::printf("trigger at token %llu (z %.2f): \"%s\"\n",
                      static_cast<unsigned long long>(tr->i), tr->z, tokens[tr->i].piece.c_str());
        } else if (auto* ij = std::get_if<seam::InterjectionEvent>(&e)) {
          std::printf("  the model says: %s%s\n", ij->text.c_str(),
                      ij->duplicate ? " (duplicate)" : "");
        } else if (auto* s = std::get_if<seam::SummaryEvent>(&e)) {
          std::printf("%llu tokens, mean surprisal %.3f bits, perplexity %.3f, %.3f bits/byte\n",
                      static_cast<unsigned long long>(s->tokens), s->mean_surprisal_bits,
                      s->perplexity, s->bits_per_byte);
        }
      }
    };
    for (std::size_t p = 0; p < text.size(); p += 7) {  // 7-byte pieces, as a stream
      obs.feed(std::string_view(text).substr(p, 7));
      drain();
    }
    obs.finish();
    drain();

    std::sort(tokens.begin(), tokens.end(),
              [](const auto& a, const auto& b) { return a.surprisal_bits > b.surprisal_bits; });
    std::printf("most surprising:\n");
    for (std::size_t k = 0; k < 5 && k < tokens.size(); ++k) {
      const seam::TokenEvent& t = tokens[k];
      std::printf("  %-12s %6.2f bits, rank %u, the model expected \"%s\" (p %.2f)\n",
                  ("\"" + t.piece + "\"").c_str(), t.surprisal_bits, t.rank,
                  t.top.empty() ? "" : t.top[0].piece.c_str(), t.top.empty() ? 0.0 : t.top[0].p);
    }
  } catch (const seam::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
