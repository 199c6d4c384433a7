// End-to-end regression tests of what a new user hit (issue 14, section 2):
// the built binary, its stdout, stderr and exit status, through a shell so
// that /dev/full, a closed pipe and environment variables are the real ones.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "seam_binary.h"

namespace {

using namespace seam::e2e;

namespace fs = std::filesystem;

bool contains(const std::string& s, const std::string& what) {
  return s.find(what) != std::string::npos;
}

int count_lines(const std::string& s) {
  return static_cast<int>(std::count(s.begin(), s.end(), '\n'));
}

const std::string kModel = std::string(SEAM_SHARED_DIR) + "/models/stories260K.gguf";
const std::string kGemma = std::string(SEAM_SHARED_DIR) + "/templates/google-gemma-2-2b-it.jinja";

std::vector<std::pair<int, int>> summaries(const std::string& err) {
  std::vector<std::pair<int, int>> out;
  const std::regex re(R"(\[(\d+) prompt tokens, (\d+) cached)");
  for (std::sregex_iterator it(err.begin(), err.end(), re), end; it != end; ++it)
    out.emplace_back(std::stoi((*it)[1]), std::stoi((*it)[2]));
  return out;
}

// --- 2.1: a template error rejects one action and keeps the session -----------

TEST(Hardening, ChatSystemOnATemplateWithoutSystemRoleKeepsTheSession) {
  if (!fs::exists(kGemma)) GTEST_SKIP() << kGemma << " is absent";
  const fs::path save = scratch("gemma_chat.json");
  fs::remove(save);
  const Output o = run_seam({"chat", "-m", kModel, "--template", kGemma, "-n", "4", "--temp", "0"},
                            "hello\n/system be nice\nagain\n/save " + save.string() + "\n");
  ASSERT_EQ(o.rc, 0) << o.err;
  EXPECT_TRUE(contains(o.err, "System role not supported")) << o.err;
  EXPECT_TRUE(contains(o.err, "system message is unchanged")) << o.err;
  EXPECT_EQ(summaries(o.err).size(), 2u) << o.err;  // both turns answered
  const nlohmann::json m = nlohmann::json::parse(slurp(save))["messages"];
  ASSERT_EQ(m.size(), 4u);
  EXPECT_EQ(m[0]["role"], "user");  // no system message slipped in
  EXPECT_EQ(m[2]["content"], "again");
  // --system on such a template is refused up front, naming the flag.
  const Output s = run_seam({"chat", "-m", kModel, "--template", kGemma, "--system", "x"}, "hi\n");
  EXPECT_EQ(s.rc, 1);
  EXPECT_TRUE(contains(s.err, "--system: System role not supported")) << s.err;
}

TEST(Hardening, ChatTurnThatRaisesIsDroppedAndTheConversationGoesOn) {
  const fs::path tmpl = scratch("raising.jinja"), save = scratch("raising.json");
  fs::remove(save);
  std::ofstream(tmpl) << "{% for m in messages %}{% if m.content == 'boom' %}"
                         "{{ raise_exception('boom is not allowed') }}{% endif %}"
                         "<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
                         "<|im_start|>assistant\n";
  const Output o =
      run_seam({"chat", "-m", kModel, "--template", tmpl.string(), "-n", "3", "--temp", "0"},
               "hi\nboom\nagain\n/save " + save.string() + "\n");
  ASSERT_EQ(o.rc, 0) << o.err;
  EXPECT_TRUE(contains(o.err, "seam: error: boom is not allowed; the turn was dropped")) << o.err;
  const auto s = summaries(o.err);
  ASSERT_EQ(s.size(), 2u) << o.err;
  EXPECT_GT(s[1].second, 0) << "the KV cache of the first turn is still used";
  const nlohmann::json m = nlohmann::json::parse(slurp(save))["messages"];
  ASSERT_EQ(m.size(), 4u);
  EXPECT_EQ(m[0]["content"], "hi");
  EXPECT_EQ(m[2]["content"], "again");
}

// --- 2.2: write errors ------------------------------------------------------

TEST(Hardening, AFullDiskIsAnErrorForEveryCommand) {
  const fs::path ctx = scratch("ctx.json"), text = scratch("story.txt");
  std::ofstream(ctx) << R"({"messages": [{"role": "user", "content": "hi"}]})";
  std::ofstream(text) << std::string(40, 'x') << " Once upon a time there was a cat. The cat sat.";
  const std::vector<std::vector<std::string>> cmds = {
      {"run", "-m", kModel, "-p", "hi", "-n", "16"},
      {"run", "-m", kModel, "-p", "hi", "-n", "-1", "--ignore-eos", "-c", "4096"},
      {"run", "-m", kModel, "-p", "hi", "-n", "4", "--json"},
      {"tokenize", "-m", kModel, "Once upon a time"},
      {"template", "--builtin", "chatml", "--context", ctx.string()},
      {"perplexity", "-m", kModel, "-f", text.string(), "-c", "16"},
      {"inspect", kModel},
      {"chat", "-m", kModel, "-n", "4"},
  };
  for (const auto& args : cmds) {
    SCOPED_TRACE(args[0]);
    const Output o = run_seam(args, "hi\n", "/dev/full");
    EXPECT_EQ(o.rc, 1) << o.err;
    EXPECT_TRUE(contains(o.err, "seam: error: cannot write to standard output")) << o.err;
    EXPECT_EQ(count_lines(o.err.substr(o.err.find("seam: error:"))), 1) << o.err;
  }
}

TEST(Hardening, AClosedPipeEndsQuietly) {
  const fs::path err = scratch("pipe_err.txt");
  // The reader leaves after one byte; seam is still writing 400 tokens.
  const std::string cmd =
      command_line({"run", "-m", kModel, "-p", "Once", "-n", "400", "--ignore-eos", "-c", "512"}) +
      " 2> " + quote(err.string()) + " | head -c 1 > /dev/null; exit ${PIPESTATUS[0]}";
  const int rc = shell(cmd);
  EXPECT_EQ(rc, 141);  // 128 + SIGPIPE: ended by the closed pipe, not by an error
  EXPECT_FALSE(contains(slurp(err), "error")) << slurp(err);
}

// --- 2.3: one thread rule ------------------------------------------------------

TEST(Hardening, ThreadCountsAreCheckedEverywhere) {
  const fs::path text = scratch("story_t.txt");
  std::ofstream(text) << "Once upon a time there was a cat. The cat sat on the mat.";
  for (const std::string t : {"0", "-5", "abc"}) {
    for (const std::string cmd : {"run", "perplexity", "chat", "quantize"}) {
      std::vector<std::string> args = {cmd, "-t", t};
      if (cmd == "run") args.insert(args.end(), {"-m", kModel, "-p", "hi"});
      if (cmd == "perplexity") args.insert(args.end(), {"-m", kModel, "-f", text.string()});
      if (cmd == "chat") args.insert(args.end(), {"-m", kModel});
      if (cmd == "quantize") args.insert(args.end(), {kModel, scratch("q.gguf").string()});
      SCOPED_TRACE(cmd + " -t " + t);
      const Output o = run_seam(args, "hi\n");
      EXPECT_EQ(o.rc, 2);
      EXPECT_EQ(o.err.rfind("seam: error: ", 0), 0u) << o.err;
      EXPECT_TRUE(contains(o.err, "--threads")) << o.err;
    }
  }
  // Far more than the cores: a warning and a cap, and the job finishes.
  const Output p =
      run_seam({"perplexity", "-m", kModel, "-f", text.string(), "-c", "8", "-t", "100000"});
  EXPECT_EQ(p.rc, 0) << p.err;
  EXPECT_TRUE(contains(p.err, "warning: --threads 100000")) << p.err;
  EXPECT_TRUE(contains(p.out, "perplexity:")) << p.out;
  // 2.9: not a terminal: no progress line, one final line.
  EXPECT_TRUE(std::regex_search(p.err, std::regex(R"(seam: scored \d+ windows of 8 tokens in)")))
      << p.err;
  EXPECT_FALSE(contains(p.err, "\r")) << p.err;
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  const Output r =
      run_seam({"run", "-m", kModel, "-p", "hi", "-n", "2", "-t", std::to_string(cores + 1)});
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(contains(r.err, "is more than this machine's")) << r.err;
}

// --- 2.4: context overflow in the user's terms ------------------------------------

TEST(Hardening, APromptLongerThanTheContextNamesTheFlag) {
  std::string prompt;
  for (int i = 0; i < 40; ++i) prompt += "Once upon a time there was a cat. ";
  const Output o = run_seam({"run", "-m", kModel, "-p", prompt, "-c", "64"});
  EXPECT_EQ(o.rc, 1);
  EXPECT_TRUE(std::regex_search(o.err, std::regex(R"(the prompt is \d+ tokens but the context )"
                                                  R"(holds 64; raise it with -c)")))
      << o.err;
  EXPECT_FALSE(contains(o.err, "KV cells")) << o.err;
}

TEST(Hardening, AFullChatDropsTheOldestTurnsAndKeepsTheSystemPrompt) {
  const fs::path save = scratch("full_chat.json");
  fs::remove(save);
  std::string input;
  for (int i = 0; i < 8; ++i) input += "Tell me about the cat number " + std::to_string(i) + ".\n";
  input += "/save " + save.string() + "\n";
  const Output o = run_seam({"chat", "-m", kModel, "--template", "chatml", "-c", "160", "-n", "20",
                             "--ignore-eos", "--temp", "0", "--system", "Be brief."},
                            input);
  ASSERT_EQ(o.rc, 0) << o.err;
  EXPECT_EQ(summaries(o.err).size(), 8u) << o.err;  // every turn answered
  EXPECT_TRUE(contains(o.err, "is full: dropped the")) << o.err;
  EXPECT_TRUE(contains(o.err, "(the system message is kept)")) << o.err;
  const nlohmann::json m = nlohmann::json::parse(slurp(save))["messages"];
  EXPECT_EQ(m[0]["role"], "system");
  EXPECT_EQ(m[1]["role"], "user");
  EXPECT_LT(m.size(), 17u);  // system + 8 turns, less what was dropped
  EXPECT_EQ(m[m.size() - 2]["content"], "Tell me about the cat number 7.");
}

// --- 2.5: llama.cpp habits ---------------------------------------------------------

TEST(Hardening, LlamaCppSpellingsWork) {
  const Output ngl = run_seam({"run", "-m", kModel, "-p", "hi", "-n", "2", "-ngl", "99"});
  EXPECT_EQ(ngl.rc, 0) << ngl.err;
  EXPECT_TRUE(contains(ngl.err, "--n-gpu-layers has no effect")) << ngl.err;
  // -fa and --mlock are accepted and said to do nothing; --no-mmap is the default
  // spelled out; -ctk / -ctv set the one cache type and may not differ.
  const Output fa = run_seam({"run", "-m", kModel, "-p", "hi", "-n", "2", "-fa", "--mlock",
                              "--no-mmap", "-ctk", "f32", "-ctv", "f32"});
  EXPECT_EQ(fa.rc, 0) << fa.err;
  EXPECT_TRUE(contains(fa.err, "--flash-attn has no effect")) << fa.err;
  EXPECT_TRUE(contains(fa.err, "--mlock has no effect")) << fa.err;
  const Output kv =
      run_seam({"run", "-m", kModel, "-p", "hi", "-n", "2", "-ctk", "q8_0", "-ctv", "f16"});
  EXPECT_NE(kv.rc, 0);
  EXPECT_TRUE(contains(kv.err, "seam keeps keys and values in one type")) << kv.err;
  const Output sys = run_seam({"chat", "-m", kModel, "-sys", "You are kind.", "-n", "2", "-cnv",
                               "--temperature", "0", "--ctx-size", "256"},
                              "hi\n");
  EXPECT_EQ(sys.rc, 0) << sys.err;
  EXPECT_EQ(summaries(sys.err).size(), 1u) << sys.err;
  // -r is a stop string: the text stops before it.
  const Output full = run_seam(
      {"run", "-m", kModel, "-p", "Once upon a time", "-n", "30", "--temp", "0", "--json"});
  ASSERT_EQ(full.rc, 0) << full.err;
  const std::string text = nlohmann::json::parse(full.out)["text"];
  ASSERT_GT(text.size(), 12u);
  const Output r = run_seam({"run", "-m", kModel, "-p", "Once upon a time", "-n", "30", "--temp",
                             "0", "--json", "-r", text.substr(6, 5)});
  EXPECT_EQ(nlohmann::json::parse(r.out)["finish_reason"], "stop");
  // The last of a repeated flag wins.
  const Output rep =
      run_seam({"run", "-m", kModel, "-p", "hi", "-n", "3", "-n", "5", "--ignore-eos", "--json"});
  ASSERT_EQ(rep.rc, 0) << rep.err;
  EXPECT_EQ(nlohmann::json::parse(rep.out)["tokens"].size(), 5u);
}

TEST(Hardening, ParseErrorsAreOneSeamLineWithAHint) {
  const Output typo = run_seam({"runn", "-p", "hi"});
  EXPECT_EQ(typo.rc, 2);
  EXPECT_TRUE(contains(typo.err, "seam: error: unknown command 'runn'; did you mean 'run'?"))
      << typo.err;
  const Output flag = run_seam({"run", "-m", kModel, "-p", "hi", "--n-predictt", "3"});
  EXPECT_EQ(flag.rc, 2);
  EXPECT_EQ(flag.err.rfind("seam: error: ", 0), 0u) << flag.err;
  EXPECT_TRUE(contains(flag.err, "did you mean --n-predict?")) << flag.err;
  EXPECT_TRUE(contains(flag.err, "seam run --help")) << flag.err;
  for (const Output& o : {typo, flag, run_seam({"run", "-m", kModel, "-n", "x", "-p", "hi"})}) {
    EXPECT_EQ(o.err.rfind("seam: error: ", 0), 0u) << o.err;
    EXPECT_EQ(count_lines(o.err), 1) << o.err;
    EXPECT_TRUE(o.out.empty());
  }
}

// --- 2.6: seeds -----------------------------------------------------------------

TEST(Hardening, SeedsAreRandomByDefaultAndPrinted) {
  const std::vector<std::string> base = {
      "run", "-m",      kModel, "-p",     "Once",    "-n", "12",      "--temp",
      "1",   "--top-k", "0",    "--json", "--min-p", "0",  "--top-p", "1"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = base;
    a.insert(a.end(), extra.begin(), extra.end());
    const Output o = run_seam(a);
    EXPECT_EQ(o.rc, 0) << o.err;
    EXPECT_TRUE(std::regex_search(o.err, std::regex("seed \\d+"))) << o.err;
    return nlohmann::json::parse(o.out);
  };
  const nlohmann::json a = with({}), b = with({"-s", "-1"});
  EXPECT_NE(a["seed"], b["seed"]);  // two draws of 53 random bits
  // Repeating a run's printed seed repeats the run.
  const nlohmann::json again = with({"--seed", std::to_string(a["seed"].get<std::uint64_t>())});
  EXPECT_EQ(again["tokens"], a["tokens"]);
  EXPECT_EQ(with({"-s", "11"})["seed"], 11);
  const Output bad = run_seam({"run", "-m", kModel, "-p", "hi", "-s", "-2"});
  EXPECT_EQ(bad.rc, 1);
  EXPECT_TRUE(contains(bad.err, "-1 for a random seed")) << bad.err;
}

// --- 2.7: seam quantize ------------------------------------------------------------

TEST(Hardening, QuantizeTakesLlamaCppTypesAndWritesNothingOnFailure) {
  const fs::path out = scratch("q.gguf");
  fs::remove(out);
  const Output none = run_seam({"quantize", kModel, out.string()});
  EXPECT_EQ(none.rc, 1);
  EXPECT_TRUE(contains(none.err, "give the weight type: --type Q8_0")) << none.err;
  // llama-quantize's positional form, and its file-type names.
  const Output pos = run_seam({"quantize", kModel, out.string(), "Q4_0", "--no-eval"});
  EXPECT_EQ(pos.rc, 0) << pos.err;
  EXPECT_TRUE(fs::exists(out));
  fs::remove(out);
  const Output km = run_seam({"quantize", kModel, out.string(), "--type", "Q4_K_M", "--no-eval"});
  EXPECT_EQ(km.rc, 0) << km.err;
  EXPECT_TRUE(contains(km.err, "file type 15")) << km.err;  // llama.cpp's MOSTLY_Q4_K_M
  fs::remove(out);
  const Output k5 = run_seam({"quantize", kModel, out.string(), "Q5_K_M", "--no-eval"});
  EXPECT_EQ(k5.rc, 0) << k5.err;
  EXPECT_TRUE(contains(k5.err, "file type 17")) << k5.err;  // llama.cpp's MOSTLY_Q5_K_M
  fs::remove(out);
  const Output s = run_seam({"quantize", kModel, out.string(), "--type", "IQ2_XS"});
  EXPECT_EQ(s.rc, 1);
  // A llama.cpp type seam cannot write is named as such, with the nearest ones it can.
  EXPECT_TRUE(contains(s.err, "IQ2_XS is one of llama.cpp's importance-matrix types")) << s.err;
  EXPECT_TRUE(contains(s.err, "IQ4_XS, Q3_K_M and Q2_K")) << s.err;
  EXPECT_FALSE(fs::exists(out));
  // OUT a directory: said so, before any work.
  const Output dir = run_seam({"quantize", kModel, scratch("").string(), "--type", "Q4_0"});
  EXPECT_EQ(dir.rc, 1);
  EXPECT_TRUE(contains(dir.err, "is a directory; give a file name")) << dir.err;
  // An empty --eval-text, and a vocab-only input whose output cannot run: nothing written.
  const fs::path empty = scratch("empty.txt");
  std::ofstream(empty) << "\n";
  const Output e =
      run_seam({"quantize", kModel, out.string(), "--type", "Q4_0", "--eval-text", empty.string()});
  EXPECT_EQ(e.rc, 1);
  EXPECT_TRUE(contains(e.err, "is empty")) << e.err;
  EXPECT_FALSE(fs::exists(out));
  const std::string vocab = std::string(SEAM_SHARED_DIR) + "/tokenizers/llama2-vocab.gguf";
  if (fs::exists(vocab)) {
    const Output v = run_seam({"quantize", vocab, out.string(), "--type", "Q8_0"});
    EXPECT_EQ(v.rc, 1) << v.err;
    EXPECT_FALSE(fs::exists(out)) << v.err;
    EXPECT_FALSE(fs::exists(out.string() + ".seam-partial"));
  }
}

// --- 2.8 and 3.6: the context and the training length ------------------------------

// stories260K with the u32 value of metadata key `key` replaced.
std::string patched_model(const std::string& key, std::uint32_t value) {
  std::ifstream in(kModel, std::ios::binary);
  std::string bytes(std::istreambuf_iterator<char>(in), {});
  const auto at = bytes.find(key);
  EXPECT_NE(at, std::string::npos) << key;
  std::memcpy(bytes.data() + at + key.size() + 4, &value, 4);  // after the u32 type tag
  const fs::path p = scratch(key + ".gguf");
  std::ofstream(p, std::ios::binary) << bytes;
  return p.string();
}

TEST(Hardening, ContextBeyondTrainingWarnsAndTheDefaultIsCapped) {
  const Output o = run_seam({"run", "-m", kModel, "-p", "hi", "-n", "2", "-c", "4096"});
  EXPECT_EQ(o.rc, 0) << o.err;
  EXPECT_TRUE(contains(o.err,
                       "warning: the context (4096 tokens) is longer than the 512 the "
                       "model was trained on (RoPE scaling: none)"))
      << o.err;
  const fs::path text = scratch("ppl.txt");
  std::ofstream(text) << "Once upon a time there was a cat. The cat sat on the mat.";
  const Output p = run_seam({"perplexity", "-m", kModel, "-f", text.string(), "-c", "100000"});
  EXPECT_TRUE(contains(p.err, "warning: the context (100000 tokens)")) << p.err;
  // A file that claims 8 M tokens of training context: the default session is 4096 cells.
  const std::string huge = patched_model("llama.context_length", 8'323'584);
  const Output h = run_seam({"run", "-m", huge, "-p", "hi", "-n", "2", "--json"});
  EXPECT_EQ(h.rc, 0) << h.err;
  EXPECT_FALSE(contains(h.err, "warning")) << h.err;
  // A layer count the tensor table cannot hold: inspect reports it at once.
  const std::string layers = patched_model("llama.block_count", 8'323'077);
  const Output i = run_seam({"inspect", layers});
  EXPECT_EQ(i.rc, 0) << i.err;
  EXPECT_TRUE(contains(i.out, "cannot run this model: 'llama.block_count' = 8323077 layers"))
      << i.out;
}

// --- 2.10: prompts from files and stdin, SEAM_MODEL, the TTY chat --------------------

TEST(Hardening, RunReadsThePromptFromAFileOrStdin) {
  const fs::path prompt = scratch("prompt.txt");
  std::ofstream(prompt) << "Once upon a time";
  const std::vector<std::string> common = {"-n", "8", "--temp", "0", "--json", "-m", kModel};
  auto run = [&](std::vector<std::string> extra, const std::string& input) {
    std::vector<std::string> a = {"run"};
    a.insert(a.end(), common.begin(), common.end());
    a.insert(a.end(), extra.begin(), extra.end());
    const Output o = run_seam(a, input);
    EXPECT_EQ(o.rc, 0) << o.err;
    return nlohmann::json::parse(o.out.empty() ? "{}" : o.out);
  };
  const nlohmann::json direct = run({"-p", "Once upon a time"}, "");
  EXPECT_EQ(run({"-f", prompt.string()}, "")["tokens"], direct["tokens"]);
  EXPECT_EQ(run({"-p", "-"}, "Once upon a time")["tokens"], direct["tokens"]);
  EXPECT_EQ(direct["model"], "stories260K");
  const Output none = run_seam({"run", "-m", kModel});
  EXPECT_EQ(none.rc, 1);
  EXPECT_TRUE(contains(none.err, "-p TEXT, -p - (stdin) or -f FILE")) << none.err;
}

TEST(Hardening, ABadSeamModelIsAnError) {
  const Output o =
      run_seam({"run", "-p", "hi", "-n", "2"}, "", "", "SEAM_MODEL=/nonexistent/m.gguf");
  EXPECT_EQ(o.rc, 1);
  EXPECT_TRUE(contains(o.err, "SEAM_MODEL is set to '/nonexistent/m.gguf'")) << o.err;
  const Output good =
      run_seam({"run", "-p", "hi", "-n", "2"}, "", "", "SEAM_MODEL=" + quote(kModel));
  EXPECT_EQ(good.rc, 0) << good.err;
  EXPECT_TRUE(contains(good.err, "seam: stories260K:")) << good.err;  // the summary names it
}

// The chat on a real terminal (tmux): the Up arrow recalls the last line
// instead of sending escape codes, `\` continues a line, /help lists commands.
class TmuxChat : public ::testing::Test {
 protected:
  void SetUp() override {
    if (shell("command -v tmux > /dev/null") != 0)
      GTEST_SKIP() << "tmux is not installed (Debian package tmux); the TTY test is skipped";
    session_ = "seam_e2e_" + std::to_string(::getpid());
    socket_ = scratch("tmux.sock").string();
  }
  void TearDown() override {
    if (!session_.empty()) shell(tmux("kill-server") + " 2> /dev/null");
  }
  std::string tmux(const std::string& rest) const {
    return "tmux -S " + quote(socket_) + " " + rest;
  }
  void keys(const std::string& k) {
    ASSERT_EQ(shell(tmux("send-keys -t " + session_ + " " + k)), 0);
  }
  std::string screen() {
    const fs::path out = scratch("pane.txt");
    shell(tmux("capture-pane -p -S -200 -t " + session_) + " > " + quote(out.string()));
    return slurp(out);
  }
  // Waits (at most 60 s) until the screen shows `n` answer summaries.
  bool wait_summaries(std::size_t n) {
    for (int i = 0; i < 600; ++i) {
      if (summaries(screen()).size() >= n) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  }
  std::string session_, socket_;
};

TEST_F(TmuxChat, LineEditingHistoryAndMultiLineInput) {
  const fs::path save = scratch("tty_chat.json");
  fs::remove(save);
  const std::string cmd = command_line(
      {"chat", "-m", kModel, "--template", "chatml", "-n", "3", "--temp", "0", "-c", "512"});
  ASSERT_EQ(shell(tmux("new-session -d -x 160 -y 50 -s " + session_ + " " + quote(cmd))), 0);
  keys("'Hello there' Enter");
  ASSERT_TRUE(wait_summaries(1)) << screen();
  keys("Up Enter");  // the same line again, from the history
  ASSERT_TRUE(wait_summaries(2)) << screen();
  keys("'line one\\' Enter 'line two' Enter");
  ASSERT_TRUE(wait_summaries(3)) << screen();
  keys("/help Enter");
  keys("'/save " + save.string() + "' Enter");
  for (int i = 0; i < 100 && !fs::exists(save); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const std::string shown = screen();
  EXPECT_FALSE(contains(shown, "^[[A")) << shown;
  EXPECT_TRUE(contains(shown, "/bye")) << shown;  // /help's list
  EXPECT_TRUE(contains(shown, "seam chat: stories260K")) << shown;
  keys("/bye Enter");
  ASSERT_TRUE(fs::exists(save)) << shown;
  const nlohmann::json m = nlohmann::json::parse(slurp(save))["messages"];
  ASSERT_EQ(m.size(), 6u) << m.dump();
  EXPECT_EQ(m[0]["content"], "Hello there");
  EXPECT_EQ(m[2]["content"], "Hello there");
  EXPECT_EQ(m[4]["content"], "line one\nline two");
}

}  // namespace
