// Hugging Face import fuzzing, two targets over a fixture root made by
// fuzz/make_hf_fixtures.sh (tools/hf.py directories, one per architecture).
// `hf_config`: one input is a config.json, read with the weights and
// tokenizer of the fixture of the same class ("architectures"[0]; llama/'s for
// any other), so each family's tensor rules meet hostile configs; an import
// that succeeds is loaded as a Model too (admission and weight binding read
// what the config declared). `hf_tokenizer`: one input is
// a tokenizer.json, a NUL byte and a tokenizer_config.json (no NUL: none); an
// import that succeeds must give a tokenizer that encodes and decodes. Only
// seam::Error may come out. Header-only so the libFuzzer binaries, the
// standalone driver and the gtest in tests/runtime share one definition.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "fixtures.h"
#include "format/gguf.h"
#include "format/hf_json.h"
#include "format/hf_model.h"
#include "seam/error.h"
#include "seam/model.h"
#include "tokenizer/tokenizer.h"

namespace seam::fuzz {

// $SEAM_FUZZ_HF_DIR: the fixture root (fuzz/make_hf_fixtures.sh OUT).
inline std::string hf_fixture_root_from_env() {
  const char* e = std::getenv("SEAM_FUZZ_HF_DIR");
  if (!e || !*e) {
    std::fprintf(stderr,
                 "set SEAM_FUZZ_HF_DIR to a folder made by fuzz/make_hf_fixtures.sh "
                 "(scripts/fuzz_campaign.sh does)\n");
    std::exit(2);
  }
  return e;
}

// The fixture directories under `root`, in name order.
inline std::vector<std::filesystem::path> hf_fixture_dirs(const std::string& root) {
  std::vector<std::filesystem::path> dirs;
  for (const auto& e : std::filesystem::directory_iterator(root))
    if (std::filesystem::exists(e.path() / "config.json")) dirs.push_back(e.path());
  std::sort(dirs.begin(), dirs.end());
  return dirs;
}

// A scratch folder holding links to every file of `donor` except `skip`.
inline void link_all_but(const std::filesystem::path& donor, const std::filesystem::path& to,
                         const std::vector<std::string>& skip) {
  for (const auto& e : std::filesystem::directory_iterator(donor)) {
    const std::string name = e.path().filename().string();
    if (std::find(skip.begin(), skip.end(), name) == skip.end())
      std::filesystem::create_symlink(std::filesystem::absolute(e.path()), to / name);
  }
}

class HfConfigTarget {
 public:
  explicit HfConfigTarget(const std::string& root) {
    for (const auto& d : hf_fixture_dirs(root)) {
      auto dir = std::make_unique<ScratchDir>("hf-config");
      link_all_but(d, dir->path(), {"config.json"});
      if (d.filename() == "llama") fallback_ = dir.get();
      donors_.emplace(class_of(read_file((d / "config.json").string())), dir.get());
      dirs_.push_back(std::move(dir));
    }
    if (!fallback_) throw Error(Errc::Io, "fuzz: the fixture root has no llama/ directory");
  }

  void run(const std::uint8_t* data, std::size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    const auto donor = donors_.find(class_of(text));
    const ScratchDir& dir = donor != donors_.end() ? *donor->second : *fallback_;
    write_file(dir.path() / "config.json", text);
    const GgufFile g = open_hf_model(dir.path().string());
    for (const GgufTensor& t : g.tensors()) {
      const auto rb = row_bytes(t.type, t.ne[0]);
      if (!rb || *rb * t.n_rows() != t.nbytes || g.find_tensor(t.name) != &t) {
        std::fprintf(stderr, "hf_config fuzz: tensor '%s' is inconsistent\n", t.name.c_str());
        std::abort();
      }
    }
    LoadOptions lo;
    lo.n_threads = 1;
    (void)Model::load(dir.path().string(), lo);
  }

 private:
  // "architectures"[0] of a config, or "" (also for JSON too deep to parse
  // safely: the import refuses that itself).
  static std::string class_of(const std::string& config) {
    if (hf::json_nesting_depth(config) > 64) return "";
    const hf::json j = hf::json::parse(config, nullptr, false);
    if (!j.is_object()) return "";
    const auto a = j.find("architectures");
    if (a == j.end() || !a->is_array() || a->empty() || !(*a)[0].is_string()) return "";
    return (*a)[0].get<std::string>();
  }

  std::vector<std::unique_ptr<ScratchDir>> dirs_;
  std::map<std::string, const ScratchDir*> donors_;  // the first fixture of each class
  const ScratchDir* fallback_ = nullptr;
};

// Every fixture's config.json.
inline std::vector<std::string> hf_config_seeds(const std::string& root) {
  std::vector<std::string> seeds;
  for (const auto& d : hf_fixture_dirs(root))
    seeds.push_back(read_file((d / "config.json").string()));
  return seeds;
}

class HfTokenizerTarget {
 public:
  explicit HfTokenizerTarget(const std::string& root) : dir_("hf-tokenizer") {
    link_all_but(std::filesystem::path(root) / "llama", dir_.path(),
                 {"tokenizer.json", "tokenizer_config.json"});
  }

  void run(const std::uint8_t* data, std::size_t size) {
    const auto [tok, cfg] = split_at_nul({reinterpret_cast<const char*>(data), size});
    write_file(dir_.path() / "tokenizer.json", tok);
    std::error_code ec;
    std::filesystem::remove(dir_.path() / "tokenizer_config.json", ec);
    if (cfg) write_file(dir_.path() / "tokenizer_config.json", *cfg);
    GgufWriter w;
    for (auto& [key, value] : hf_tokenizer_metadata(dir_.path().string()))
      w.set(key, std::move(value));
    const std::vector<std::byte> bytes = w.to_bytes();
    const auto t = Tokenizer::from_gguf(GgufFile::parse(bytes, "hf-tokenizer"));
    const std::vector<Token> ids = t->encode("Hello wörld 123 <s>\n\t", true, true);
    (void)t->decode(ids, Detok::Text);
  }

 private:
  ScratchDir dir_;
};

// A byte-level BPE tokenizer.json small enough to mutate (tools/hf.py writes
// the SentencePiece-style ones), with a Digits step before ByteLevel.
inline std::string tiny_byte_level_tokenizer_json() {
  return R"({"version":"1.0","added_tokens":[{"id":5,"content":"<|endoftext|>","special":true}],)"
         R"("normalizer":null,"pre_tokenizer":{"type":"Sequence","pretokenizers":[)"
         R"({"type":"Digits","individual_digits":true},)"
         R"({"type":"ByteLevel","add_prefix_space":false,"trim_offsets":true,"use_regex":true}]},)"
         R"("decoder":{"type":"ByteLevel"},"model":{"type":"BPE","dropout":null,"unk_token":null,)"
         R"("byte_fallback":false,"ignore_merges":false,"vocab":{"h":0,"e":1,"he":2,"Ġ":3,"Ġhe":4},)"
         R"("merges":["h e","Ġ he"]}})";
}

// Every fixture's tokenizer.json + NUL + tokenizer_config.json, and the byte-level one.
inline std::vector<std::string> hf_tokenizer_seeds(const std::string& root) {
  std::vector<std::string> seeds;
  for (const auto& d : hf_fixture_dirs(root)) {
    seeds.push_back(read_file((d / "tokenizer.json").string()) + std::string(1, '\0') +
                    read_file((d / "tokenizer_config.json").string()));
  }
  seeds.push_back(tiny_byte_level_tokenizer_json() + std::string(1, '\0') +
                  R"({"eos_token":"<|endoftext|>","add_bos_token":false})");
  seeds.push_back(tiny_byte_level_tokenizer_json());
  return seeds;
}

}  // namespace seam::fuzz
