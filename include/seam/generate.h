// The generation loop (DESIGN.md §4): sampling, stops and figures for one
// sequence of a Session. The CLI, the server and the observer all drive it.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "seam/model.h"
#include "seam/session.h"
#include "seam/types.h"

namespace seam {

struct SamplerConfig {
  float temperature = 0.8f;  // 0 = greedy (argmax, lowest id on ties)
  std::int32_t top_k = 40;   // 0 = off
  float top_p = 0.95f;       // 1 = off
  std::uint64_t seed = 0;
};

enum class FinishReason { Stop, Length, Timeout, Cancelled };
std::string_view finish_reason_name(FinishReason r);

struct GenerateConfig {
  std::int32_t max_tokens = 256;  // < 0: until end of generation or context full
  SamplerConfig sampler;
  std::uint32_t seq = 0;  // the session sequence to generate on
};

struct GenerateResult {
  std::string text;
  std::vector<Token> tokens;  // generated ids
  FinishReason finish = FinishReason::Stop;
  std::size_t prompt_tokens = 0;
  std::size_t cached_prompt_tokens = 0;  // reused from the KV cache
  std::size_t completion_tokens = 0;
  double ttft_ms = 0;  // prompt in -> first token out
  double prefill_tokens_per_s = 0;
  double decode_tokens_per_s = 0;
};

// Streams text as it becomes complete UTF-8.
using TextSink = std::function<void(std::string_view)>;

// Feeds `prompt` (reusing its cached prefix in the session) and generates.
GenerateResult generate(const Model& model, Session& session, std::span<const Token> prompt,
                        const GenerateConfig& config, const TextSink& on_text = {});

}  // namespace seam
