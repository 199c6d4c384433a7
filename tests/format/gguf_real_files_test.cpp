// Reading real GGUF files from ../shared: a llama2.c conversion, a vocabulary
// file without tensors and a llama.cpp-quantized model. The writer must
// reproduce each of them byte for byte.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "format/gguf.h"
#include "seam/error.h"

namespace seam {
namespace {

const std::string kShared = SEAM_SHARED_DIR;

std::vector<std::byte> read_all(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot read " + path);
  std::vector<char> raw((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::vector<std::byte> out(raw.size());
  std::memcpy(out.data(), raw.data(), raw.size());
  return out;
}

// Rebuilds a file from what the reader saw; equal bytes prove both the reader
// (nothing lost) and the writer's layout (ecosystem-compatible).
std::vector<std::byte> rewrite(const GgufFile& g) {
  GgufWriter w;
  for (const auto& [k, v] : g.metadata()) w.set(k, v);
  for (const auto& t : g.tensors()) {
    w.add_tensor(t.name, t.ne, t.type, {t.data, static_cast<std::size_t>(t.nbytes)});
  }
  return w.to_bytes();
}

TEST(GgufRealFiles, Stories260K) {
  const std::string path = kShared + "/models/stories260K.gguf";
  const GgufFile g = GgufFile::open(path);
  EXPECT_EQ(g.version(), 3u);
  EXPECT_EQ(g.alignment(), 32u);
  EXPECT_EQ(g.metadata().size(), 18u);
  EXPECT_EQ(g.tensors().size(), 48u);
  EXPECT_EQ(g.data_offset(), 14112u);

  EXPECT_EQ(g.get_string("general.architecture"), "llama");
  EXPECT_EQ(g.get_string("general.name"), "stories260K");
  EXPECT_EQ(g.get_uint("llama.block_count"), 5u);
  EXPECT_EQ(g.get_uint("llama.context_length"), 512u);
  EXPECT_EQ(g.get_uint("llama.embedding_length"), 64u);
  EXPECT_EQ(g.get_uint("llama.feed_forward_length"), 172u);
  EXPECT_EQ(g.get_uint("llama.attention.head_count"), 8u);
  EXPECT_EQ(g.get_uint("llama.attention.head_count_kv"), 4u);
  EXPECT_EQ(g.get_uint("llama.rope.dimension_count"), 8u);
  EXPECT_EQ(g.get_float("llama.attention.layer_norm_rms_epsilon"), static_cast<double>(1e-5f));
  EXPECT_EQ(g.find("llama.attention.layer_norm_rms_epsilon")->type, GgufValueType::FLOAT32);
  EXPECT_EQ(g.get_string("tokenizer.ggml.model"), "llama");
  EXPECT_EQ(g.get_int("tokenizer.ggml.bos_token_id"), 1);
  EXPECT_EQ(g.get_int("tokenizer.ggml.eos_token_id"), 2);
  EXPECT_EQ(g.get_int("tokenizer.ggml.unknown_token_id"), 0);
  EXPECT_EQ(g.get_bool("tokenizer.ggml.add_bos_token"), true);

  const GgufArray* tokens = g.get_array("tokenizer.ggml.tokens");
  ASSERT_NE(tokens, nullptr);
  EXPECT_EQ(tokens->elem_type, GgufValueType::STRING);
  ASSERT_EQ(tokens->items.size(), 512u);
  EXPECT_EQ(std::get<std::string>(tokens->items[0].v), "<unk>");
  EXPECT_EQ(std::get<std::string>(tokens->items[1].v), "<s>");
  EXPECT_EQ(std::get<std::string>(tokens->items[3].v), "<0x00>");
  EXPECT_EQ(std::get<std::string>(tokens->items[258].v), "<0xFF>");
  const GgufArray* scores = g.get_array("tokenizer.ggml.scores");
  ASSERT_NE(scores, nullptr);
  EXPECT_EQ(scores->elem_type, GgufValueType::FLOAT32);
  EXPECT_EQ(scores->items.size(), 512u);
  const GgufArray* types = g.get_array("tokenizer.ggml.token_type");
  ASSERT_NE(types, nullptr);
  EXPECT_EQ(types->items.size(), 512u);
  EXPECT_EQ(std::get<std::int64_t>(types->items[0].v), 2);  // unknown
  EXPECT_EQ(std::get<std::int64_t>(types->items[3].v), 6);  // byte

  const GgufTensor* emb = g.find_tensor("token_embd.weight");
  ASSERT_NE(emb, nullptr);
  EXPECT_EQ(emb->type, TensorType::F32);
  EXPECT_EQ(emb->ne, (std::vector<std::uint64_t>{64, 512}));
  EXPECT_EQ(emb->offset, 0u);
  EXPECT_EQ(emb->nbytes, 64u * 512 * 4);
  EXPECT_EQ(emb->n_rows(), 512u);
  const GgufTensor* down = g.find_tensor("blk.0.ffn_down.weight");
  ASSERT_NE(down, nullptr);
  EXPECT_EQ(down->ne, (std::vector<std::uint64_t>{172, 64}));
  EXPECT_EQ(down->offset, 355840u);
  EXPECT_EQ(g.find_tensor("output.weight")->offset, 131328u);
  for (int l = 0; l < 5; ++l) {
    EXPECT_NE(g.find_tensor("blk." + std::to_string(l) + ".attn_q.weight"), nullptr) << l;
  }
  EXPECT_EQ(g.find_tensor("blk.5.attn_q.weight"), nullptr);

  // Data pointers land where the file says: compare against an independent read.
  const auto bytes = read_all(path);
  for (const auto& t : g.tensors()) {
    ASSERT_LE(g.data_offset() + t.offset + t.nbytes, bytes.size());
    EXPECT_EQ(std::memcmp(t.data, bytes.data() + g.data_offset() + t.offset, t.nbytes), 0)
        << t.name;
  }
  const GgufFile p = GgufFile::parse(bytes, path);
  EXPECT_EQ(p.find_tensor("output_norm.weight")->data,
            bytes.data() + 14112 + p.find_tensor("output_norm.weight")->offset);
  EXPECT_TRUE(rewrite(g) == bytes) << "writer does not reproduce stories260K.gguf";
}

TEST(GgufRealFiles, Llama2VocabWithoutTensors) {
  const std::string path = kShared + "/tokenizers/llama2-vocab.gguf";
  const GgufFile g = GgufFile::open(path);
  EXPECT_EQ(g.version(), 3u);
  EXPECT_EQ(g.metadata().size(), 22u);
  EXPECT_TRUE(g.tensors().empty());
  EXPECT_EQ(g.data_offset(), 723872u);
  EXPECT_EQ(g.get_uint("llama.block_count"), 32u);
  EXPECT_EQ(g.get_uint("llama.vocab_size"), 32000u);
  EXPECT_EQ(g.get_uint("general.file_type"), 1u);
  EXPECT_EQ(g.get_string("tokenizer.ggml.pre"), "default");
  EXPECT_EQ(g.get_bool("tokenizer.ggml.add_eos_token"), false);
  const GgufArray* tokens = g.get_array("tokenizer.ggml.tokens");
  ASSERT_NE(tokens, nullptr);
  ASSERT_EQ(tokens->items.size(), 32000u);
  EXPECT_EQ(std::get<std::string>(tokens->items[2].v), "</s>");
  EXPECT_EQ(g.get_array("tokenizer.ggml.scores")->items.size(), 32000u);
  EXPECT_TRUE(rewrite(g) == read_all(path)) << "writer does not reproduce llama2-vocab.gguf";
}

TEST(GgufRealFiles, QuantizedModelOffsetsMatchLlamaCpp) {
  std::ifstream ef(kShared + "/models/quant/expected.json");
  ASSERT_TRUE(ef.good());
  const auto expected = nlohmann::json::parse(ef);
  int checked = 0;
  for (const std::string key : {"q4_k_m", "q4_0", "q2_k-pure"}) {
    SCOPED_TRACE(key);
    const auto& entry = expected["files"][key];
    const std::string path = kShared + "/models/quant/" + entry["file"].get<std::string>();
    const GgufFile g = GgufFile::open(path);
    EXPECT_EQ(g.version(), 3u);
    EXPECT_EQ(g.get_uint("general.file_type"), entry["general_file_type"].get<std::uint64_t>());
    EXPECT_EQ(g.get_uint("llama.block_count"), 4u);
    EXPECT_EQ(g.get_uint("llama.embedding_length"), 512u);
    EXPECT_EQ(g.get_float("llama.rope.freq_base"), 10000.0);

    // Every tensor's type as llama.cpp recorded it.
    const auto& types = entry["tensor_types"];
    EXPECT_EQ(g.tensors().size(), types.size());
    for (const auto& t : g.tensors()) {
      EXPECT_EQ(type_info(t.type).name, types[t.name].get<std::string>()) << t.name;
    }

    const auto bytes = read_all(path);
    ASSERT_EQ(bytes.size(), entry["size"].get<std::size_t>());
    const GgufFile p = GgufFile::parse(bytes, path);
    for (const auto& [tname, d] : entry["dequant"].items()) {
      const GgufTensor* t = p.find_tensor(tname);
      ASSERT_NE(t, nullptr) << tname;
      EXPECT_EQ(type_info(t->type).name, d["ggml_type"].get<std::string>());
      EXPECT_EQ(t->ne, d["ne"].get<std::vector<std::uint64_t>>());
      EXPECT_EQ(t->nbytes, d["nbytes"].get<std::uint64_t>());
      // file_offset is the absolute offset of the tensor's data in this file.
      EXPECT_EQ(t->data, bytes.data() + d["file_offset"].get<std::uint64_t>()) << tname;
      ++checked;
      // The mapped reader sees the same block bytes llama.cpp dumped.
      const std::string raw_path = kShared + "/models/quant/" + d["raw"].get<std::string>();
      std::ifstream raw_probe(raw_path);
      if (!raw_probe.good()) continue;  // blk.3 dumps are recorded but not shipped
      const auto raw = read_all(raw_path);
      const GgufTensor* mt = g.find_tensor(tname);
      ASSERT_EQ(raw.size(), mt->nbytes);
      EXPECT_EQ(std::memcmp(mt->data, raw.data(), raw.size()), 0) << tname;
    }
    if (key == "q4_k_m") {
      EXPECT_TRUE(rewrite(g) == bytes) << "writer does not reproduce " << path;
    }
  }
  EXPECT_EQ(checked, 6);
}

}  // namespace
}  // namespace seam
