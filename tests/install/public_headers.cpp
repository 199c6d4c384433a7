// Every public header in one user's translation unit, compiled with warnings as
// errors: the option structs take C++20 designated initializers naming only the
// fields a program sets (each field has a default, so -Wextra's
// missing-field-initializers stays quiet), and nothing else in the headers warns.
#include <seam/chat.h>
#include <seam/cpu.h>
#include <seam/error.h>
#include <seam/generate.h>
#include <seam/inspect.h>
#include <seam/model.h>
#include <seam/observe.h>
#include <seam/perplexity.h>
#include <seam/quantize.h>
#include <seam/server.h>
#include <seam/session.h>
#include <seam/types.h>

namespace {

[[maybe_unused]] void designated_initializers() {
  [[maybe_unused]] const seam::LoadOptions load{.n_threads = 1};
  [[maybe_unused]] const seam::SessionConfig session{.n_ctx = 256};
  [[maybe_unused]] const seam::SamplerConfig sampler{.temperature = 0.5f};
  [[maybe_unused]] const seam::GenerateConfig generate{.max_tokens = 16};
  [[maybe_unused]] const seam::ObserveOptions observe{.n_ctx = 512};
  [[maybe_unused]] const seam::PerplexityOptions perplexity{.n_ctx = 128};
  [[maybe_unused]] const seam::QuantizeOptions quantize{.type = "Q4_0"};
  [[maybe_unused]] const seam::ServerConfig server{.port = 0};
}

}  // namespace
