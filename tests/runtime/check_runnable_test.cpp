// Admission refuses layer kinds forward() cannot run yet, naming the layers.
#include <gtest/gtest.h>

#include <string>

#include "model/layers.h"
#include "runtime/forward.h"
#include "seam/error.h"

namespace seam {
namespace {

TEST(CheckRunnable, NamesTheLayersForwardCannotRun) {
  ModelSpec s;
  s.hp.n_layer = 12;
  s.hp.n_head = 4;
  s.hp.n_head_kv = 2;
  s.hp.head_dim = 16;
  s.hp.n_rot = 16;
  s.hp.n_ff = 32;
  s.layers = default_layers(s.hp, s.recipe);
  EXPECT_NO_THROW(check_runnable(s));
  for (std::uint32_t l = 0; l < 12; ++l) {
    if (l % 4 != 3) s.layers[l].kind = LayerKind::GatedDeltaNet;
  }
  try {
    check_runnable(s);
    FAIL() << "expected a refusal";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::Unsupported);
    EXPECT_NE(std::string(e.what()).find("9 of 12 layers (0, 1, 2, 4, 5, 6, 8, 9, ...) are "
                                         "gated delta net layers"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace seam
