// Replays the server request fuzz target (fuzz/server_request_fuzz.h) on its
// seeds and on deterministic mutations of them: only ApiError or seam::Error
// may come out of the body parsers. Also the /tokenize and /detokenize body
// rules, which live in api.cpp so the target reaches them without HTTP.
#include <gtest/gtest.h>

#include <filesystem>

#include "../../fuzz/mutator.h"
#include "../../fuzz/server_request_fuzz.h"

namespace seam {
namespace {

using server::ApiError;
using server::Json;

TEST(ServerRequestFuzz, SeedsAndMutationsOnlyEverRefuse) {
  if (!std::filesystem::exists(fuzz::shared_dir() + "/models/stories260K.gguf"))
    GTEST_SKIP() << "../shared/models is absent";
  fuzz::ServerRequestTarget target;
  const auto seeds = fuzz::server_request_seeds();
  fuzz::Mutator m(0x5e7);
  int parsed = 0;
  for (int i = 0; i < 6000; ++i) {
    const std::string& s = seeds[static_cast<std::size_t>(i) % seeds.size()];
    const std::string in = i < static_cast<int>(seeds.size()) ? s : fuzz::mutate_string(m, s);
    try {
      target.run(reinterpret_cast<const std::uint8_t*>(in.data()), in.size());
      ++parsed;
    } catch (const ApiError&) {
    } catch (const Error&) {
    }
  }
  // Bodies that are JSON objects reach the route parsers; the rest are 400s.
  EXPECT_GT(parsed, 100);
  EXPECT_LT(parsed, 6000);
}

TEST(ServerRequestFuzz, TokenizeAndDetokenizeBodies) {
  const auto r = server::parse_tokenize_request(
      Json::parse(R"({"content":"hi","add_special":false,"with_pieces":true})"));
  EXPECT_EQ(r.content, "hi");
  EXPECT_FALSE(r.add_special);
  EXPECT_TRUE(r.parse_special);
  EXPECT_TRUE(r.with_pieces);
  const auto refused = [](auto&& f, const std::string& param) {
    try {
      f();
      ADD_FAILURE() << "accepted; expected a 400 naming " << param;
    } catch (const ApiError& e) {
      EXPECT_EQ(e.status, 400);
      EXPECT_EQ(e.param, param) << e.message;
    }
  };
  refused([] { server::parse_tokenize_request(Json::parse(R"({"content":3})")); }, "content");
  refused([] { server::parse_tokenize_request(Json::parse(R"({"content":"a","add_special":1})")); },
          "add_special");
  EXPECT_EQ(server::parse_detokenize_request(Json::parse(R"({"tokens":[0,5,9]})"), 10),
            (std::vector<Token>{0, 5, 9}));
  refused([] { server::parse_detokenize_request(Json::parse(R"({"tokens":[10]})"), 10); },
          "tokens");
  refused([] { server::parse_detokenize_request(Json::parse(R"({"tokens":[-1]})"), 10); },
          "tokens");
  refused([] { server::parse_detokenize_request(Json::parse(R"({"tokens":"1"})"), 10); }, "tokens");
  refused(
      [] {
        server::parse_detokenize_request(Json::parse(R"({"tokens":[18446744073709551615]})"), 10);
      },
      "tokens");
}

}  // namespace
}  // namespace seam
