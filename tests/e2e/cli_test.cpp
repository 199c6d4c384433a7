// End-to-end tests of `seam run` and `seam chat`: the built binary on the
// real stories260K checkpoint, stdout and stderr captured separately.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "seam_binary.h"

namespace {

using namespace seam::e2e;

namespace fs = std::filesystem;

const std::string kModel = std::string(SEAM_SHARED_DIR) + "/models/stories260K.gguf";

nlohmann::json run_json(std::vector<std::string> extra) {
  std::vector<std::string> args = {"run", "-m", kModel, "-p", "Once upon a time", "--json"};
  args.insert(args.end(), extra.begin(), extra.end());
  const Output o = run_seam(args);
  EXPECT_EQ(o.rc, 0) << o.err;
  return nlohmann::json::parse(o.out);
}

TEST(RunCli, JsonCarriesTheWholeResult) {
  const nlohmann::json j = run_json({"--temp", "0", "-n", "20", "--ignore-eos"});
  EXPECT_EQ(j["finish_reason"], "length");
  EXPECT_EQ(j["tokens"].size(), 20u);
  EXPECT_EQ(j["usage"]["completion_tokens"], 20);
  EXPECT_EQ(j["usage"]["prompt_tokens"], 5);  // BOS + "Once upon a time"
  EXPECT_EQ(j["usage"]["cached_prompt_tokens"], 0);
  EXPECT_EQ(j["usage"]["total_tokens"], 25);
  EXPECT_EQ(j["usage"]["prompt_tokens_details"]["cached_tokens"], 0);
  EXPECT_GT(j["ttft_ms"].get<double>(), 0);
  EXPECT_GT(j["decode_tokens_per_s"].get<double>(), 0);
  EXPECT_FALSE(j.contains("logprobs"));
  // The streamed text of the same run is the JSON's text.
  const Output plain = run_seam(
      {"run", "-m", kModel, "-p", "Once upon a time", "--temp", "0", "-n", "20", "--ignore-eos"});
  EXPECT_EQ(plain.rc, 0);
  EXPECT_EQ(plain.out, j["text"].get<std::string>() + "\n");
  EXPECT_NE(plain.err.find("20 generated (length)"), std::string::npos) << plain.err;
}

// --mmap serves the weights from the file's map instead of a copy in memory:
// the same bytes, so the same tokens and log-probabilities.
TEST(RunCli, MmapGivesTheSameResult) {
  const std::vector<std::string> args = {"--temp",       "0",          "-n", "16",
                                         "--ignore-eos", "--logprobs", "2"};
  std::vector<std::string> mapped = args;
  mapped.push_back("--mmap");
  const nlohmann::json a = run_json(args), b = run_json(mapped);
  EXPECT_EQ(a["tokens"], b["tokens"]);
  EXPECT_EQ(a["logprobs"], b["logprobs"]);
}

TEST(RunCli, LogprobsWithAlternatives) {
  const nlohmann::json j = run_json({"--temp", "0", "-n", "8", "--logprobs", "3"});
  ASSERT_EQ(j["logprobs"].size(), j["tokens"].size());
  for (std::size_t i = 0; i < j["tokens"].size(); ++i) {
    const auto& e = j["logprobs"][i];
    EXPECT_EQ(e["token"], j["tokens"][i]);
    ASSERT_EQ(e["top_logprobs"].size(), 3u);
    EXPECT_LE(e["logprob"].get<double>(), 0.0);
    // Greedy picks the model's most likely token.
    EXPECT_EQ(e["top_logprobs"][0]["token"], e["token"]);
    EXPECT_GE(e["top_logprobs"][0]["logprob"].get<double>(),
              e["top_logprobs"][1]["logprob"].get<double>());
  }
}

TEST(RunCli, StopStringAndSeeds) {
  const nlohmann::json full = run_json({"--temp", "0", "-n", "30"});
  const std::string text = full["text"];
  ASSERT_GT(text.size(), 12u);
  const std::string stop = text.substr(6, 5);
  const nlohmann::json j = run_json({"--temp", "0", "-n", "30", "--stop", stop, "--stop", "zzzz"});
  EXPECT_EQ(j["finish_reason"], "stop");
  EXPECT_EQ(j["stop"], stop);
  EXPECT_EQ(j["text"], text.substr(0, text.find(stop)));

  const std::vector<std::string> sampled = {"--temp",  "1", "--seed",  "11", "-n",      "30",
                                            "--top-k", "0", "--min-p", "0",  "--top-p", "1"};
  const nlohmann::json a = run_json(sampled), b = run_json(sampled);
  EXPECT_EQ(a["tokens"], b["tokens"]);
  // A banned token never comes out.
  const nlohmann::json g = run_json({"--temp", "0", "-n", "10"});
  const int first = g["tokens"][0];
  const nlohmann::json banned =
      run_json({"--temp", "0", "-n", "10", "--logit-bias", std::to_string(first) + "=-inf"});
  for (const auto& t : banned["tokens"]) EXPECT_NE(t.get<int>(), first);
}

TEST(RunCli, RejectsNonsenseWithOneLine) {
  const std::vector<std::vector<std::string>> bad = {
      {"--temp", "-1"},          {"--top-p", "0"},        {"--top-p", "1.5"},
      {"--min-p", "2"},          {"--typical", "0"},      {"--repeat-penalty", "0"},
      {"--repeat-last-n", "-5"}, {"--logit-bias", "abc"}, {"--logit-bias", "99999=1"},
      {"--samplers", "nope"},    {"--timeout", "-1"},     {"-n", "-7"},
      {"--logprobs", "2"},       {"--cache-type", "q2"},
  };
  for (const auto& extra : bad) {
    std::vector<std::string> args = {"run", "-m", kModel, "-p", "Hi"};
    args.insert(args.end(), extra.begin(), extra.end());
    const Output o = run_seam(args);
    SCOPED_TRACE(extra[0] + " " + extra[1]);
    EXPECT_NE(o.rc, 0);
    EXPECT_TRUE(o.out.empty()) << o.out;
    ASSERT_FALSE(o.err.empty());
    EXPECT_EQ(o.err.find('\n'), o.err.size() - 1) << o.err;  // one line
  }
}

// The per-turn summaries on stderr: prompt tokens and cached tokens.
std::vector<std::pair<int, int>> summaries(const std::string& err) {
  std::vector<std::pair<int, int>> out;
  const std::regex re(R"(\[(\d+) prompt tokens, (\d+) cached)");
  for (std::sregex_iterator it(err.begin(), err.end(), re), end; it != end; ++it)
    out.emplace_back(std::stoi((*it)[1]), std::stoi((*it)[2]));
  return out;
}

TEST(ChatCli, PipedConversationReusesThePrefix) {
  const fs::path save1 = scratch("chat1.json"), save2 = scratch("chat2.json");
  fs::remove(save1);
  fs::remove(save2);
  const std::string input = "Tell me a story.\nWhat happened next?\n/save " + save1.string() +
                            "\n/reset\n/system Be kind.\nHello\n/save " + save2.string() + "\n";
  const Output o =
      run_seam({"chat", "-m", kModel, "--template", "chatml", "-n", "12", "--temp", "0"}, input);
  ASSERT_EQ(o.rc, 0) << o.err;
  const auto s = summaries(o.err);
  ASSERT_EQ(s.size(), 3u) << o.err;
  EXPECT_EQ(s[0].second, 0);
  EXPECT_GT(s[1].second, s[0].first / 2) << "the second turn should reuse the first";
  EXPECT_LT(s[1].second, s[1].first);
  EXPECT_EQ(s[2].second, 0) << "/reset clears the cache";

  const nlohmann::json m1 = nlohmann::json::parse(slurp(save1))["messages"];
  ASSERT_EQ(m1.size(), 4u);
  EXPECT_EQ(m1[0]["role"], "user");
  EXPECT_EQ(m1[0]["content"], "Tell me a story.");
  EXPECT_EQ(m1[1]["role"], "assistant");
  EXPECT_EQ(m1[2]["content"], "What happened next?");
  EXPECT_EQ(m1[3]["role"], "assistant");
  // The answers on stdout are the saved assistant messages.
  const std::string a1 = m1[1]["content"], a2 = m1[3]["content"];
  EXPECT_EQ(o.out.rfind(a1 + "\n" + a2 + "\n", 0), 0u) << o.out;

  const nlohmann::json m2 = nlohmann::json::parse(slurp(save2))["messages"];
  ASSERT_EQ(m2.size(), 3u);
  EXPECT_EQ(m2[0]["role"], "system");
  EXPECT_EQ(m2[0]["content"], "Be kind.");
  EXPECT_EQ(m2[1]["content"], "Hello");
}

TEST(ChatCli, FallsBackToABuiltInTemplate) {
  const Output o =
      run_seam({"chat", "-m", kModel, "-n", "4", "--system", "You tell stories."}, "Hi\n");
  ASSERT_EQ(o.rc, 0) << o.err;
  EXPECT_NE(o.err.find("chatml"), std::string::npos) << o.err;
  EXPECT_EQ(summaries(o.err).size(), 1u);
  const Output bad = run_seam({"chat", "-m", kModel, "--template", "/nonexistent/t.jinja"}, "Hi\n");
  EXPECT_NE(bad.rc, 0);
  EXPECT_TRUE(bad.out.empty());
}

}  // namespace

namespace {

// Every `$ ...` example in docs/cli.md's run and chat sections runs from the
// source tree; when the doc shows the first line of stdout (one without
// "..."), stdout starts with it.
TEST(CliDocs, RunAndChatExamplesWork) {
  std::ifstream f(std::string(SEAM_SOURCE_DIR) + "/docs/cli.md");
  ASSERT_TRUE(f) << "docs/cli.md is missing";
  std::vector<std::string> lines;
  for (std::string l; std::getline(f, l);) lines.push_back(l);
  bool in_section = false;
  int ran = 0;
  const std::string bin_dir = fs::path(SEAM_BINARY).parent_path().string();
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].rfind("## ", 0) == 0)
      in_section = lines[i] == "## seam run" || lines[i] == "## seam chat";
    if (!in_section || lines[i].rfind("$ ", 0) != 0) continue;
    const std::string cmd = lines[i].substr(2);
    const fs::path out = scratch("doc_stdout.txt"), err = scratch("doc_stderr.txt");
    const std::string shell = "cd " + quote(SEAM_SOURCE_DIR) + " && PATH=" + quote(bin_dir) +
                              ":\"$PATH\" bash -c " + quote(cmd) + " > " + quote(out.string()) +
                              " 2> " + quote(err.string()) + " < /dev/null";
    const int status = std::system(shell.c_str());
    SCOPED_TRACE(cmd);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << slurp(err);
    const std::string shown = i + 1 < lines.size() ? lines[i + 1] : "";
    if (shown.find("...") == std::string::npos && shown.rfind("```", 0) != 0) {
      EXPECT_EQ(slurp(out).rfind(shown, 0), 0u) << "stdout:\n" << slurp(out);
    }
    ++ran;
  }
  EXPECT_GE(ran, 3);
}

}  // namespace

namespace {

// `seam chat` as a child with a stdin pipe we keep open and a stdout pipe we
// read as the answer streams; stderr goes to a file.
struct Child {
  pid_t pid = -1;
  int in = -1, out = -1;
  fs::path err;
};

// Fills a pipe (shrunk to one page) with filler bytes: the child's first write
// to it then blocks until the test reads. Returns how many bytes it holds.
std::size_t fill_pipe(int fds[2]) {
  fcntl(fds[1], F_SETPIPE_SZ, 4096);
  // Non-blocking only while filling: the flag belongs to the open file, which the child shares.
  const int flags = fcntl(fds[1], F_GETFL);
  fcntl(fds[1], F_SETFL, flags | O_NONBLOCK);
  const std::string page(4096, 'x');
  std::size_t n = 0;
  for (ssize_t w; (w = write(fds[1], page.data(), page.size())) > 0;)
    n += static_cast<std::size_t>(w);
  for (ssize_t w; (w = write(fds[1], page.data(), 1)) > 0;) n += static_cast<std::size_t>(w);
  fcntl(fds[1], F_SETFL, flags);
  return n;
}

Child spawn_chat(const std::string& name, const std::vector<std::string>& extra,
                 std::size_t* prefilled = nullptr) {
  int in_pipe[2], out_pipe[2];
  EXPECT_EQ(pipe(in_pipe), 0);
  EXPECT_EQ(pipe(out_pipe), 0);
  if (prefilled) *prefilled = fill_pipe(out_pipe);
  Child c;
  c.err = scratch(name + "_stderr.txt");
  fs::remove(c.err);  // a stale file would fake the summaries
  std::vector<std::string> args = {SEAM_BINARY, "chat", "-m", kModel, "--template", "chatml"};
  args.insert(args.end(), extra.begin(), extra.end());
  c.pid = fork();
  if (c.pid == 0) {
    dup2(in_pipe[0], 0);
    dup2(out_pipe[1], 1);
    const int fd = open(c.err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 2);
    close(in_pipe[1]);
    close(out_pipe[0]);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(in_pipe[0]);
  close(out_pipe[1]);
  c.in = in_pipe[1];
  c.out = out_pipe[0];
  return c;
}

void say(const Child& c, const std::string& s) {
  ASSERT_EQ(write(c.in, s.data(), s.size()), static_cast<ssize_t>(s.size()));
}

int wait_exit(const Child& c) {
  int status = 0;
  waitpid(c.pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1000 + WTERMSIG(status);
}

// Whether a thread of `pid` is inside write(2) on its stdout (fd 1), as
// /proc/PID/task/TID/syscall shows: "1 0x1 ..." on x86-64.
bool blocked_writing_stdout(pid_t pid) {
  std::error_code ec;
  for (const auto& t : fs::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec)) {
    std::ifstream f(t.path() / "syscall");
    std::string nr, fd;
    if (f >> nr >> fd && nr == "1" && fd == "0x1") return true;
  }
  return false;
}

TEST(ChatCli, CtrlCStopsTheAnswerNotTheProgram) {
  if (!std::ifstream("/proc/self/syscall")) GTEST_SKIP() << "/proc/PID/syscall is not readable";
  // A long answer (until the context is full), into a stdout pipe that the
  // test filled: the answer's first write blocks, and the test sends Ctrl-C
  // while it does. The signal lands inside the answer on any machine, at any
  // speed: no race with how fast the answer would otherwise finish.
  std::size_t filler = 0;
  Child c =
      spawn_chat("ctrl_c_answer", {"-n", "-1", "--ignore-eos", "-c", "512", "-t", "1"}, &filler);
  ASSERT_GT(filler, 0u);
  say(c, "Tell me a long story.\n");
  bool blocked = false;
  for (int i = 0; i < 6000 && !blocked; ++i) {  // at most 60 s (ASan, a loaded machine)
    blocked = blocked_writing_stdout(c.pid);
    if (!blocked) usleep(10000);
  }
  ASSERT_TRUE(blocked) << "the answer never reached its first write";
  kill(c.pid, SIGINT);
  say(c, "And then?\n/quit\n");
  close(c.in);
  std::string all;
  char buf[4096];
  for (ssize_t n; (n = read(c.out, buf, sizeof buf)) > 0;) all.append(buf, n);
  close(c.out);
  EXPECT_EQ(wait_exit(c), 0);
  ASSERT_GT(all.size(), filler) << "no answer after the filler";
  EXPECT_EQ(all.substr(0, filler), std::string(filler, 'x'));
  const std::string err = slurp(c.err);
  const auto s = summaries(err);
  ASSERT_EQ(s.size(), 2u) << err;
  // The first turn was cancelled; the second ran to the full context.
  const std::size_t second = err.find("prompt tokens", err.find("prompt tokens") + 1);
  EXPECT_LT(err.find("generated, cancelled"), second) << err;
}

TEST(ChatCli, CtrlCAtThePromptLeaves) {
  Child c = spawn_chat("ctrl_c_prompt", {"-n", "2"});
  say(c, "Hi\n");
  // Wait for the turn's summary: the program is back at the prompt.
  for (int i = 0; i < 600 && summaries(slurp(c.err)).empty(); ++i) usleep(50000);
  ASSERT_EQ(summaries(slurp(c.err)).size(), 1u);
  kill(c.pid, SIGINT);
  EXPECT_EQ(wait_exit(c), 130);
  close(c.in);
  close(c.out);
}

}  // namespace
