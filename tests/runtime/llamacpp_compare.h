// Greedy decoding of one file by seam and by llama.cpp (tests/peer.h), step by
// step: the logits row that chose each token, and the ids chosen.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "peer.h"
#include "python_tools.h"
#include "test_model.h"

namespace seam::testing {

struct PeerComparison {
  std::vector<Token> seam_ids, peer_ids;
  double worst_rel = 0;           // max over steps of rel_diff(seam row, llama.cpp row)
  double min_peer_margin = 1e30;  // smallest top-1 minus top-2 logit over llama.cpp's steps
};

// Decodes `prompt` then `steps` greedy tokens with both engines on `model_path`
// (seam loads `seam_path` when given: a Hugging Face directory of the same
// model). Seam follows its own greedy picks, llama.cpp its own: the ids are
// compared by the caller, the rows while the two agree.
inline PeerComparison compare_with_llamacpp(const std::string& model_path,
                                            const std::vector<Token>& prompt, int steps,
                                            const std::string& seam_path = {}) {
  PeerComparison r;
  const std::string out = scratch_dir() + "/llamacpp_" +
                          std::filesystem::path(model_path).stem().string() + "." +
                          std::to_string(::getpid()) + ".steps.f32";
  const nlohmann::json peer = nlohmann::json::parse(run_command(
      peer_logits_tool() + " " + model_path + " '[" + join_ids(prompt) + "]' --n " +
      std::to_string(steps) + " --threads 2 --step-logits-out " + out + " 2>/dev/null"));
  r.peer_ids = peer["greedy_ids"].get<std::vector<Token>>();
  EXPECT_EQ(r.peer_ids.size(), static_cast<std::size_t>(steps));
  r.peer_ids.resize(static_cast<std::size_t>(steps), -1);  // -1: no id, never equal to ours
  const std::vector<float> peer_steps = read_f32_file(out);
  std::filesystem::remove(out);

  auto model = load_two_threads(seam_path.empty() ? model_path : seam_path);
  const std::size_t nv = model->info().n_vocab;
  EXPECT_EQ(peer_steps.size(), steps * nv);
  if (peer_steps.size() != steps * nv) return r;
  // At least 64 cells: above the original context of every RoPE-scaling case,
  // as llama.cpp's own context is (LongRoPE picks its factors by it).
  const auto n_ctx = static_cast<std::uint32_t>(std::max<std::size_t>(64, prompt.size() + steps));
  auto s = model->session(exact_config(n_ctx, static_cast<std::uint32_t>(prompt.size())));
  std::vector<float> row = decode_all(*s, prompt, 0).back();
  for (int step = 0; step < steps; ++step) {
    const std::span<const float> theirs = std::span(peer_steps).subspan(step * nv, nv);
    std::vector<float> sorted(theirs.begin(), theirs.end());
    std::partial_sort(sorted.begin(), sorted.begin() + 2, sorted.end(), std::greater<float>());
    r.min_peer_margin = std::min<double>(r.min_peer_margin, sorted[0] - sorted[1]);
    // Once the picks differ the two continue different texts: rows no longer compare.
    if (r.seam_ids == std::vector<Token>(r.peer_ids.begin(), r.peer_ids.begin() + step))
      r.worst_rel = std::max(r.worst_rel, rel_diff(row, theirs));
    const Token best = static_cast<Token>(std::max_element(row.begin(), row.end()) - row.begin());
    r.seam_ids.push_back(best);
    row = decode_all(*s, std::span(&best, 1), 0,
                     static_cast<std::int32_t>(prompt.size() + r.seam_ids.size() - 1))[0];
  }
  return r;
}

}  // namespace seam::testing
