// Replays the chat-template and tool-call fuzz targets (fuzz/*_fuzz.h) on
// their seeds and on deterministic mutations of them, in seconds: only
// seam::Error may come out. The campaign itself is scripts/fuzz_campaign.sh.
#include <gtest/gtest.h>

#include "../../fuzz/mutator.h"
#include "../../fuzz/template_fuzz.h"
#include "../../fuzz/tool_call_fuzz.h"

namespace seam {
namespace {

void one(const std::string& input) {
  try {
    fuzz::template_one_input(reinterpret_cast<const std::uint8_t*>(input.data()), input.size());
  } catch (const Error&) {
  }
}

TEST(TemplateFuzz, SeedsRenderOrRefuseCleanly) {
  const auto seeds = fuzz::template_seeds();
  ASSERT_GE(seeds.size(), 5u);
  for (const std::string& s : seeds) one(s);
  // The built-in templates render the default context.
  for (std::string_view name : builtin_chat_template_names()) {
    const std::string s(*builtin_chat_template(name));
    EXPECT_NO_THROW(
        fuzz::template_one_input(reinterpret_cast<const std::uint8_t*>(s.data()), s.size()))
        << name;
  }
}

TEST(TemplateFuzz, MutationsOnlyEverRefuse) {
  const auto seeds = fuzz::template_seeds();
  fuzz::Mutator m(0x7e3);
  for (int i = 0; i < 3000; ++i) {
    const std::string& s = seeds[static_cast<std::size_t>(i) % seeds.size()];
    const auto b = m.mutate({reinterpret_cast<const std::byte*>(s.data()),
                             reinterpret_cast<const std::byte*>(s.data()) + s.size()});
    one(std::string(reinterpret_cast<const char*>(b.data()), b.size()));
  }
}

TEST(ToolCallFuzz, SeedsAndMutationsAlwaysSerialise) {
  const auto seeds = fuzz::tool_call_seeds();
  fuzz::Mutator m(0x7c1);
  for (int i = 0; i < 20000; ++i) {
    const std::string& s = seeds[static_cast<std::size_t>(i) % seeds.size()];
    const auto b =
        i < static_cast<int>(seeds.size())
            ? std::vector<std::byte>(reinterpret_cast<const std::byte*>(s.data()),
                                     reinterpret_cast<const std::byte*>(s.data()) + s.size())
            : m.mutate({reinterpret_cast<const std::byte*>(s.data()),
                        reinterpret_cast<const std::byte*>(s.data()) + s.size()});
    try {
      fuzz::tool_call_one_input(reinterpret_cast<const std::uint8_t*>(b.data()), b.size());
    } catch (const Error&) {
    }
  }
}

}  // namespace
}  // namespace seam
