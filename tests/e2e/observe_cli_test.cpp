// End-to-end tests of `seam observe`: the JSONL schema, plain text when
// stdout is not a terminal, input read as it arrives, the HTML report (in
// headless Chromium when installed) and the terminal view (under tmux when
// installed).
#include <fcntl.h>
#include <gtest/gtest.h>

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <algorithm>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "seam_binary.h"

namespace {

using namespace seam::e2e;

namespace fs = std::filesystem;
using nlohmann::json;

const std::string kStories = std::string(SEAM_SHARED_DIR) + "/models/stories260K.gguf";

const char* kText =
    "Once upon a time, there was a little girl named Lily. She loved to play outside.\n"
    "One day, she saw a big red ball. The quantum ledger of Byzantine purple theorems exploded.\n"
    "Lily ran to the ball and kicked it. The dog came and they played all day. The end.\n";

std::vector<json> lines(const std::string& s) {
  std::vector<json> out;
  std::istringstream in(s);
  std::string line;
  while (std::getline(in, line)) out.push_back(json::parse(line));
  return out;
}

bool have(const std::string& tool) {
  return std::system(("command -v " + tool + " > /dev/null 2>&1").c_str()) == 0;
}

std::vector<std::string> chatty() {
  return {"--z",        "1.0", "--z-rearm",          "0", "--warmup", "8",
          "--cooldown", "10",  "--interject-tokens", "8", "--seed",   "3"};
}

TEST(ObserveCli, JsonlFollowsSchemaV1) {
  const fs::path text = scratch("text.txt");
  std::ofstream(text, std::ios::binary) << kText;
  std::vector<std::string> args = {"observe", "-m", kStories,  "-f", text.string(),
                                   "--jsonl", "-",  "--top-k", "3"};
  for (const auto& a : chatty()) args.push_back(a);
  const Output o = run_seam(args);
  ASSERT_EQ(o.rc, 0) << o.err;
  const std::vector<json> ev = lines(o.out);
  ASSERT_FALSE(ev.empty());
  std::set<std::string> types;
  std::uint64_t next_i = 0, tokens = 0, triggers = 0, interjections = 0;
  std::string spelled;
  for (std::size_t k = 0; k < ev.size(); ++k) {
    const json& e = ev[k];
    ASSERT_EQ(e.at("v"), 1);
    const std::string type = e.at("type");
    types.insert(type);
    if (type == "token") {
      EXPECT_EQ(e.at("i").get<std::uint64_t>(), next_i++);
      EXPECT_TRUE(e.at("id").is_number_integer());
      EXPECT_TRUE(e.at("piece").is_string());
      EXPECT_EQ(e.at("offset").get<std::size_t>(), spelled.size());
      spelled += e.at("piece").get<std::string>();
      // stories260K adds BOS, so every token is predicted.
      EXPECT_GE(e.at("surprisal_bits").get<double>(), 0.0);
      EXPECT_GE(e.at("entropy_bits").get<double>(), 0.0);
      EXPECT_GE(e.at("rank").get<int>(), 1);
      ASSERT_EQ(e.at("top").size(), 3u);
      for (const json& a : e.at("top")) {
        EXPECT_TRUE(a.at("id").is_number_integer());
        EXPECT_TRUE(a.at("piece").is_string());
        EXPECT_GT(a.at("p").get<double>(), 0.0);
      }
      for (const char* f : {"mean", "std", "z"}) EXPECT_TRUE(e.at(f).is_number()) << f;
      ++tokens;
    } else if (type == "trigger") {
      EXPECT_LT(e.at("i").get<std::uint64_t>(), next_i);
      EXPECT_GT(e.at("z").get<double>(), 1.0);
      EXPECT_EQ(e.at("span"), 1);
      ++triggers;
    } else if (type == "interjection") {
      EXPECT_TRUE(e.at("text").is_string());
      EXPECT_LE(e.at("tokens").get<int>(), 8);
      EXPECT_TRUE(e.at("duplicate").is_boolean());
      interjections += !e.at("duplicate").get<bool>();
    } else if (type == "roll") {
      EXPECT_TRUE(e.at("dropped").is_number_integer());
      EXPECT_TRUE(e.at("kept").is_number_integer());
    } else {
      ASSERT_EQ(type, "summary");
      ASSERT_EQ(k + 1, ev.size()) << "the summary comes last";
      EXPECT_EQ(e.at("tokens"), tokens);
      EXPECT_EQ(e.at("triggers"), triggers);
      EXPECT_EQ(e.at("interjections"), interjections);
      for (const char* f : {"mean_surprisal_bits", "perplexity", "bits_per_byte", "tokens_per_s"})
        EXPECT_GT(e.at(f).get<double>(), 0.0) << f;
    }
  }
  EXPECT_EQ(spelled, kText);
  EXPECT_TRUE(types.count("trigger") && types.count("interjection")) << o.out.substr(0, 300);
}

TEST(ObserveCli, RollEventsWhenTheContextFills) {
  const fs::path text = scratch("long.txt");
  std::string t;
  for (int i = 0; i < 4; ++i) t += kText;
  std::ofstream(text, std::ios::binary) << t;
  const Output o = run_seam({"observe", "-m", kStories, "-f", text.string(), "--jsonl", "-",
                             "--no-interject", "-c", "64", "--window", "20"});
  ASSERT_EQ(o.rc, 0) << o.err;
  std::size_t rolls = 0;
  for (const json& e : lines(o.out)) {
    if (e["type"] == "roll") {
      ++rolls;
      EXPECT_EQ(e["kept"], 20);
    }
    if (e["type"] == "summary") {
      EXPECT_EQ(e["rolls"], rolls);
    }
  }
  EXPECT_GE(rolls, 3u);
}

TEST(ObserveCli, CompareAddsKlAndBinoculars) {
  const Output o = run_seam(
      {"observe", "-m", kStories, "--compare", kStories, "--no-interject", "--jsonl", "-"}, kText);
  ASSERT_EQ(o.rc, 0) << o.err;
  std::size_t n = 0;
  for (const json& e : lines(o.out)) {
    if (e["type"] == "token") {
      EXPECT_EQ(e.at("kl_bits").get<double>(), 0.0);
      // H(P, P) = H(P); the entropy comes from the float-exp scan, within 1e-5
      // bits on these rows (the bound is derived in tests/observe/observer_test.cpp).
      EXPECT_NEAR(e.at("xent_bits").get<double>(), e.at("entropy_bits").get<double>(), 1e-5);
      EXPECT_TRUE(e.at("binoculars").is_number());
      ++n;
    } else if (e["type"] == "summary") {
      EXPECT_EQ(e.at("mean_kl_bits").get<double>(), 0.0);
      EXPECT_GT(e.at("binoculars").get<double>(), 0.0);
    }
  }
  EXPECT_GT(n, 50u);
  EXPECT_NE(o.err.find("compare: mean KL 0.000000"), std::string::npos) << o.err;
  // Without --compare the fields are absent.
  const Output p = run_seam({"observe", "-m", kStories, "--no-interject", "--jsonl", "-"}, kText);
  EXPECT_EQ(p.out.find("kl_bits"), std::string::npos);
}

TEST(PerplexityCli, JsonWithStandardErrorAndKl) {
  const fs::path text = scratch("ppl.txt");
  std::ofstream(text, std::ios::binary) << kText;
  const Output o = run_seam({"perplexity", "-m", kStories, "-f", text.string(), "--json",
                             "--compare", kStories, "-c", "32"});
  ASSERT_EQ(o.rc, 0) << o.err;
  const json j = json::parse(o.out);
  EXPECT_GT(j.at("perplexity").get<double>(), 1.0);
  EXPECT_GT(j.at("perplexity_stderr").get<double>(), 0.0);
  EXPECT_NEAR(j.at("perplexity_stderr").get<double>(),
              j.at("perplexity").get<double>() * j.at("nll_stderr").get<double>(), 1e-9);
  EXPECT_EQ(j.at("kl_mean").get<double>(), 0.0);
  EXPECT_GE(j.at("windows").get<int>(), 2);
  // Not a terminal: no progress lines, only the one closing line (docs/cli.md).
  EXPECT_EQ(o.err.find('\r'), std::string::npos) << o.err;
  EXPECT_EQ(o.err.rfind("seam: scored ", 0), 0u) << o.err;
  EXPECT_EQ(std::count(o.err.begin(), o.err.end(), '\n'), 1) << o.err;
  const Output plain = run_seam({"perplexity", "-m", kStories, "-f", text.string()});
  EXPECT_NE(plain.out.find(" +/- "), std::string::npos) << plain.out;
}

TEST(ObserveCli, PlainTextWhenStdoutIsNotATerminal) {
  const Output o = run_seam({"observe", "-m", kStories, "--no-interject"}, kText);
  ASSERT_EQ(o.rc, 0) << o.err;
  EXPECT_EQ(o.out, kText);  // the text itself, no escape codes
  EXPECT_NE(o.err.find("observe: "), std::string::npos) << o.err;
  EXPECT_NE(o.err.find(" tokens, mean surprisal "), std::string::npos) << o.err;
  std::vector<std::string> args = {"observe", "-m", kStories, "-"};
  for (const auto& a : chatty()) args.push_back(a);
  const Output c = run_seam(args, kText);
  ASSERT_EQ(c.rc, 0) << c.err;
  EXPECT_NE(c.out.find("\n  >> "), std::string::npos) << c.out;  // interjections set apart
  EXPECT_EQ(c.out.find('\033'), std::string::npos);
}

TEST(ObserveCli, RefusesBadArgumentsWithOneLine) {
  const std::vector<std::vector<std::string>> bad = {
      {"--baseline", "median"},
      {"--z", "1", "--z-rearm", "2"},
      {"-f", "/nonexistent/file.txt"},
      {"--span", "0"},
      {"--dedup", "2"},
      {"-c", "4"},
  };
  for (const auto& extra : bad) {
    std::vector<std::string> args = {"observe", "-m", kStories};
    args.insert(args.end(), extra.begin(), extra.end());
    const Output o = run_seam(args, "x");
    EXPECT_NE(o.rc, 0) << extra[0];
    // The first line says what is wrong and names the option (CLI11 adds a
    // second line pointing at --help for range errors it catches itself).
    const std::string first = o.err.substr(0, o.err.find('\n'));
    EXPECT_FALSE(first.empty()) << extra[0];
    const std::string name = extra[0] == "-f"    ? "/nonexistent/file.txt"
                             : extra[0] == "-c"  ? "context"
                             : extra[0] == "--z" ? "--z-rearm"
                                                 : extra[0];
    EXPECT_NE(first.find(name), std::string::npos) << first;
  }
}

// Spawns seam with a pipe on stdin and one on stdout.
struct Child {
  pid_t pid = -1;
  int in = -1, out = -1;
};

Child spawn(const std::vector<std::string>& args) {
  int to[2], from[2];
  EXPECT_EQ(pipe(to), 0);
  EXPECT_EQ(pipe(from), 0);
  Child c;
  c.pid = fork();
  if (c.pid == 0) {
    dup2(to[0], 0);
    dup2(from[1], 1);
    const int devnull = open("/dev/null", O_WRONLY);
    dup2(devnull, 2);
    close(to[1]);
    close(from[0]);
    std::vector<char*> argv;
    std::string bin = SEAM_BINARY;
    argv.push_back(bin.data());
    std::vector<std::string> copy = args;
    for (auto& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(bin.c_str(), argv.data());
    _exit(127);
  }
  close(to[0]);
  close(from[1]);
  c.in = to[1];
  c.out = from[0];
  return c;
}

TEST(ObserveCli, ReadsStdinAsItArrives) {
  // Like `tail -f LOG | seam observe`: events for the first lines come out
  // while the input is still open.
  Child c = spawn({"observe", "-m", kStories, "--jsonl", "-", "--no-interject"});
  const std::string first = "The little dog ran to the park and played with a red ball.\nThen ";
  ASSERT_EQ(write(c.in, first.data(), first.size()), static_cast<ssize_t>(first.size()));
  std::string got;
  bool seen = false;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!seen && std::chrono::steady_clock::now() < give_up) {
    pollfd p{c.out, POLLIN, 0};
    if (poll(&p, 1, 200) > 0) {
      char buf[4096];
      const ssize_t n = read(c.out, buf, sizeof buf);
      if (n <= 0) break;
      got.append(buf, static_cast<std::size_t>(n));
      // The line's final "." comes before a word boundary: it is committed
      // without waiting for more text.
      seen = got.find("\"piece\":\".\"") != std::string::npos;
    }
  }
  EXPECT_TRUE(seen) << "no event for a line written 60 s ago while stdin stays open: " << got;
  close(c.in);  // EOF: the held-back tail and the summary follow
  char buf[4096];
  ssize_t n;
  while ((n = read(c.out, buf, sizeof buf)) > 0) got.append(buf, static_cast<std::size_t>(n));
  close(c.out);
  int status = 0;
  waitpid(c.pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_NE(got.find("\"type\":\"summary\""), std::string::npos);
  std::string spelled;
  for (const json& e : lines(got))
    if (e["type"] == "token") spelled += e["piece"].get<std::string>();
  EXPECT_EQ(spelled, first) << "finish() commits the held-back tail";
}

// `s` without every span from `open` to the next `close` (inclusive). A loop,
// not std::regex: libstdc++'s regex recurses per character and overflows the
// stack on a page of this size under AddressSanitizer.
std::string without_elements(const std::string& s, const std::string& open,
                             const std::string& close) {
  std::string out;
  std::size_t at = 0;
  for (std::size_t b; (b = s.find(open, at)) != std::string::npos;) {
    out.append(s, at, b - at);
    const std::size_t e = s.find(close, b + open.size());
    if (e == std::string::npos) return out;
    at = e + close.size();
  }
  return out.append(s, at);
}

TEST(ObserveCli, HtmlReportIsSelfContained) {
  const fs::path text = scratch("text.txt"), html = scratch("report.html");
  std::ofstream(text, std::ios::binary) << kText << "A </script><b>tag</b> & \"quotes\".\n";
  std::vector<std::string> args = {"observe",     "-m",          kStories,
                                   "-f",          text.string(), "--html",
                                   html.string(), "--jsonl",     scratch("ev.jsonl").string()};
  for (const auto& a : chatty()) args.push_back(a);
  const Output o = run_seam(args);
  ASSERT_EQ(o.rc, 0) << o.err;
  const std::string page = slurp(html);
  ASSERT_FALSE(page.empty());
  // Offline: nothing is fetched.
  EXPECT_EQ(page.find("src=\"http"), std::string::npos);
  EXPECT_EQ(page.find("href=\"http"), std::string::npos);
  EXPECT_EQ(page.find("@import"), std::string::npos);
  // The observed text cannot close the data script early.
  EXPECT_EQ(page.find("</script><b>"), std::string::npos);
  std::size_t tokens = 0, triggers = 0, interjections = 0;
  for (const json& e : lines(slurp(scratch("ev.jsonl")))) {
    tokens += e["type"] == "token";
    triggers += e["type"] == "trigger";
    interjections += e["type"] == "interjection";
  }
  ASSERT_GT(triggers, 0u);
  std::string browser;
  for (const char* b : {"chromium", "chromium-browser", "google-chrome"})
    if (browser.empty() && have(b)) browser = b;
  if (browser.empty()) {
    GTEST_SKIP() << "no headless browser: install Debian's `chromium` to check the page's DOM";
  }
  const fs::path dom = scratch("dom.html"), log = scratch("chromium.log");
  const std::string cmd = "timeout 120 " + browser +
                          " --headless --no-sandbox --disable-gpu --enable-logging=stderr --v=0 "
                          "--user-data-dir=" +
                          quote(scratch("chromium-profile").string()) + " --dump-dom file://" +
                          quote(html.string()) + " > " + quote(dom.string()) + " 2> " +
                          quote(log.string());
  ASSERT_EQ(std::system(cmd.c_str()), 0) << slurp(log);
  // The scripts' own source mentions the markup they create: count in the DOM without them.
  const std::string d = without_elements(slurp(dom), "<script", "</script>");
  const std::string l = slurp(log);
  // The page writes nothing to the console: any console line (Chromium logs
  // them as ":CONSOLE", an exception as "Uncaught ...") is an error. The spans
  // counted below are made by the page's script, so they prove it ran.
  EXPECT_EQ(l.find(":CONSOLE"), std::string::npos) << l;
  EXPECT_EQ(l.find("Uncaught"), std::string::npos) << l;
  auto count = [&](const std::string& needle) {
    std::size_t n = 0;
    for (std::size_t p = d.find(needle); p != std::string::npos; p = d.find(needle, p + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count("<span class=\"t"), tokens) << "one span per token";
  EXPECT_EQ(count("<span class=\"t trig\""), triggers);
  EXPECT_EQ(count("<line class=\"trigger\""), triggers);
  EXPECT_EQ(count("<li data-trigger="), triggers);
  EXPECT_EQ(count("data-ij=\""), interjections);
  EXPECT_NE(d.find("Lily"), std::string::npos);
  const std::string shown = without_elements(d, "<", ">");
  EXPECT_NE(shown.find("&lt;/script&gt;&lt;b&gt;tag&lt;/b&gt; &amp; \"quotes\"."),
            std::string::npos)
      << "the text is shown, not parsed: " << shown;
}

TEST(ObserveCli, TerminalViewUnderTmux) {
  if (!have("tmux")) GTEST_SKIP() << "tmux is not installed: install Debian's `tmux`";
  const std::string sock = "seam-observe-" + std::to_string(::getpid());
  const std::string tmux = "tmux -L " + sock + " ";
  const std::string cmd =
      quote(SEAM_BINARY) + " observe -m " + quote(kStories) + " --no-interject; sleep 30";
  ASSERT_EQ(std::system((tmux + "new-session -d -x 100 -y 20 -s v " +
                         quote("env TERM=xterm-256color " + cmd))
                            .c_str()),
            0);
  auto capture = [&] {
    const fs::path p = scratch("pane.txt");
    std::system((tmux + "capture-pane -p -e -t v > " + quote(p.string())).c_str());
    return slurp(p);
  };
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  std::system((tmux + "send-keys -t v -l " + quote("Once upon a time there was a girl named Lily"))
                  .c_str());
  std::system((tmux + "send-keys -t v Enter").c_str());
  std::string pane;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < give_up) {
    pane = capture();
    if (pane.find("tokens |") != std::string::npos && pane.find("\033[38;5;") != std::string::npos)
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  std::system((tmux + "send-keys -t v C-d").c_str());
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const std::string after = capture();
  std::system((tmux + "kill-server").c_str());
  EXPECT_NE(pane.find("tokens |"), std::string::npos) << "status line: " << pane;
  EXPECT_NE(pane.find("tok/s"), std::string::npos) << pane;
  EXPECT_NE(pane.find("\033[38;5;"), std::string::npos) << "256-colour heat map: " << pane;
  EXPECT_NE(after.find("observe: "), std::string::npos) << "summary after EOF: " << after;
}

}  // namespace
