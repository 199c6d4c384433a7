// seam bench: prefill and decode speed, measured the way llama-bench does it
// so the figures line up with llama.cpp's (bench/compare.sh runs both).
//
// pp P: one decode of P random tokens, logits for the last row only.
// tg N: N one-token decodes, each asking for logits.
// depth D: D random tokens are in the cache before each test (filled once per
// session, untimed; each test first rewinds the sequence to those D tokens).
// Every test runs once untimed (warm-up), then `reps` timed times: tok/s mean ± sd.
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "commands.h"
#include "generate_options.h"
#include "seam/cpu.h"
#include "seam/error.h"
#include "seam/model.h"

namespace seam::cli {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Read bandwidth of DRAM in GB/s (1e9 bytes) with `threads` threads: the best
// of a few passes over a buffer far larger than any cache. Decode streams every
// weight once per token, so GB/s / GB per token bounds tok/s. The buffer is
// read the way the decode kernels read weights (huge pages, as Model::load
// gives them; software prefetch 2 KiB ahead): a plain loop over 4 KiB pages
// measured 25 GB/s on a machine where decode itself moved 33.
double measure_bandwidth(int threads) {
  constexpr std::size_t kBytes = std::size_t{512} << 20, kHugePage = std::size_t{2} << 20;
  constexpr std::size_t kAhead = 2048 / sizeof(float);  // the decode kernels' 2 KiB
  const std::size_t n = kBytes / sizeof(float);
  std::unique_ptr<float, decltype(&std::free)> owner(
      static_cast<float*>(std::aligned_alloc(kHugePage, kBytes)), &std::free);
  if (!owner)
    throw Error(Errc::Io, "cannot allocate 512 MiB for the bandwidth probe; give --membw GBPS");
  float* buf = owner.get();
  ::madvise(buf, kBytes, MADV_HUGEPAGE);  // advice only
  std::fill(buf, buf + n, 1.0f);          // written once: the pages are really there
  std::atomic<int> sink{0};
  double best = 0;
  for (int pass = 0; pass < 4; ++pass) {
    const auto t0 = Clock::now();
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] {
        const std::size_t b = n * t / threads, e = n * (t + 1) / threads;
        float acc[16] = {};
        for (std::size_t i = b; i + 16 <= e; i += 16) {
          __builtin_prefetch(buf + i + kAhead);
          for (int j = 0; j < 16; ++j) acc[j] += buf[i + j];
        }
        float s = 0;
        for (float a : acc) s += a;
        sink += s > 0 ? 1 : 0;  // keeps the loop from being optimised away
      });
    }
    for (auto& th : pool) th.join();
    const double dt = seconds_since(t0);
    if (pass > 0) best = std::max(best, static_cast<double>(kBytes) / dt / 1e9);
  }
  return best;
}

std::vector<int> parse_list(const std::string& text, const char* what, int lo, int hi) {
  std::vector<int> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    std::size_t used = 0;
    int v = 0;
    try {
      v = std::stoi(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (item.empty() || used != item.size() || v < lo || v > hi) {
      throw Error(Errc::InvalidArgument,
                  std::string(what) + " wants comma-separated integers in [" + std::to_string(lo) +
                      ", " + std::to_string(hi) + "], got '" + text + "'");
    }
    out.push_back(v);
  }
  if (out.empty()) throw Error(Errc::InvalidArgument, std::string(what) + " is empty");
  return out;
}

struct Stats {
  double mean = 0, sd = 0;
};

Stats stats(const std::vector<double>& x) {
  Stats s;
  for (double v : x) s.mean += v;
  s.mean /= static_cast<double>(x.size());
  double q = 0;
  for (double v : x) q += (v - s.mean) * (v - s.mean);
  s.sd = x.size() > 1 ? std::sqrt(q / static_cast<double>(x.size() - 1)) : 0;
  return s;
}

struct Result {
  int threads = 0;
  int depth = 0;
  std::string test;  // "pp512", "tg128"
  int n_tokens = 0;
  Stats tps;
  double bw_pct = -1;  // tg only: % of the bandwidth bound
};

class Bench {
 public:
  Bench(const Model& model, std::uint32_t seed) : model_(model), rng_(seed) {}

  Token random_token() {
    std::uniform_int_distribution<Token> pick(3, static_cast<Token>(model_.info().n_vocab) - 1);
    return pick(rng_);
  }

  // Fills sequence 0 with `depth` random tokens (BOS first), untimed.
  void fill(Session& s, int depth, std::uint32_t n_batch) {
    s.clear_seq(0);
    context_.clear();
    for (int i = 0; i < depth; ++i) context_.push_back(i == 0 ? bos() : random_token());
    std::vector<Decode> batch;
    for (int b = 0; b < depth; b += static_cast<int>(n_batch)) {
      batch.clear();
      for (int i = b; i < std::min(depth, b + static_cast<int>(n_batch)); ++i)
        batch.push_back({context_[i], i, 0, i == depth - 1});
      s.decode(batch);
    }
  }

  // Back to the `depth` tokens of fill(), dropping what the last test added.
  void rewind(Session& s) {
    if (context_.empty()) {
      s.clear_seq(0);
      return;
    }
    std::vector<Token> probe = context_;
    probe.push_back(0);  // begin_prompt keeps at most size - 1 tokens: exactly the context
    s.begin_prompt(0, probe);
  }

  double run_pp(Session& s, int n) {
    rewind(s);
    const int start = static_cast<int>(context_.size());
    std::vector<Decode> batch;
    for (int i = 0; i < n; ++i)
      batch.push_back({i == 0 && start == 0 ? bos() : random_token(), start + i, 0, i == n - 1});
    const auto t0 = Clock::now();
    s.decode(batch);
    return n / seconds_since(t0);
  }

  double run_tg(Session& s, int n) {
    rewind(s);
    const int start = static_cast<int>(context_.size());
    Token t = start == 0 ? bos() : random_token();
    const auto t0 = Clock::now();
    for (int i = 0; i < n; ++i) {
      const Decode d{t, start + i, 0, true};
      s.decode(std::span(&d, 1));
      t = random_token();
    }
    return n / seconds_since(t0);
  }

 private:
  Token bos() const { return model_.bos().value_or(1); }

  const Model& model_;
  std::mt19937 rng_;
  std::vector<Token> context_;
};

std::string human_size(std::uint64_t bytes) {
  char buf[32];
  if (bytes >= (std::uint64_t{1} << 30))
    std::snprintf(buf, sizeof buf, "%.2f GiB", bytes / 1073741824.0);
  else
    std::snprintf(buf, sizeof buf, "%.1f MiB", bytes / 1048576.0);
  return buf;
}

// The file's own type ("Q4_K_M"), else the type that holds most of its
// bytes (the first entry of ModelInfo::quantization).
std::string main_type(const ModelInfo& info) {
  if (!info.file_type.empty()) return info.file_type;
  return info.quantization.substr(0, info.quantization.find(' '));
}

// Peak resident set since the last forget_peak_rss(), in MiB: VmHWM from
// /proc/self/status (ru_maxrss, which cannot be reset, where that is missing).
double peak_rss_mib() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;  // in kB
  }
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_maxrss) / 1024.0;  // KiB on Linux
}

// Resets the peak to the current resident set (Linux: "5" to clear_refs), so
// the bandwidth probe's buffer does not count as the model's memory.
void forget_peak_rss() { std::ofstream("/proc/self/clear_refs") << "5"; }

}  // namespace

void add_bench_command(CLI::App& app, CommandList& list) {
  struct Opts {
    std::string model;
    int n_prompt = 512;
    int n_gen = 128;
    std::string depths = "0";
    std::string threads;
    int reps = 3;
    double membw = 0;
    bool json = false;
    std::string cache_type = "f16";
    bool mmap = false;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* sub = app.add_subcommand(
      "bench", "Measure prefill (pp) and decode (tg) speed the way llama-bench does");
  sub->add_option("-m,--model", o->model, "GGUF file or Hugging Face model directory")->required();
  add_mmap_flag(sub, o->mmap);
  sub->add_option("-p,--n-prompt", o->n_prompt,
                  "Prefill test: one decode of P random tokens (0 = skip)")
      ->capture_default_str();
  sub->add_option("-n,--n-gen", o->n_gen, "Decode test: N one-token decodes (0 = skip)")
      ->capture_default_str();
  sub->add_option("-d,--depth", o->depths,
                  "Tokens already in the cache before each test, comma-separated (e.g. 0,4096)")
      ->capture_default_str();
  sub->add_option("-t,--threads", o->threads,
                  "Thread counts to measure, comma-separated (default: one per core)");
  sub->add_option("-r,--repetitions", o->reps, "Timed runs of each test, after one warm-up")
      ->capture_default_str();
  CLI::Option* membw_opt =
      sub->add_option("--membw", o->membw,
                      "DRAM read bandwidth in GB/s for the tg bound (default: measured once per "
                      "thread count with a short read test)");
  add_cache_type_option(sub, o->cache_type);
  sub->add_flag("--json", o->json, "Print the results as one JSON object instead of a table");
  list.emplace_back(sub, [o, membw_opt] {
    const std::vector<int> depths = parse_list(o->depths, "--depth", 0, 1 << 22);
    const int n_cores = physical_cores();
    const std::vector<int> threads = o->threads.empty()
                                         ? std::vector<int>{n_cores}
                                         : parse_list(o->threads, "--threads", 1, 1024);
    const auto bad = [](const std::string& what) { throw Error(Errc::InvalidArgument, what); };
    if (o->n_prompt < 0 || o->n_prompt > 65536)
      bad("-p must be in [0, 65536], got " + std::to_string(o->n_prompt));
    if (o->n_gen < 0 || o->n_gen > 65536)
      bad("-n must be in [0, 65536], got " + std::to_string(o->n_gen));
    if (o->reps < 1 || o->reps > 1000)
      bad("-r must be in [1, 1000], got " + std::to_string(o->reps));
    if (membw_opt->count() > 0 && !(o->membw > 0))
      bad("--membw must be a positive bandwidth in GB/s");
    const CacheType cache_type = parse_cache_type(o->cache_type);
    if (o->n_prompt == 0 && o->n_gen == 0)
      throw Error(Errc::InvalidArgument, "nothing to measure: -p and -n are both 0");
    const bool tty = ::isatty(2);

    std::vector<Result> results;
    ModelInfo info;
    std::vector<std::pair<int, double>> bandwidth;  // threads -> GB/s
    for (const int t : threads) {
      LoadOptions lo;
      lo.n_threads = t;
      lo.mmap = o->mmap;
      auto model = Model::load(o->model, lo);
      info = model->info();
      const double bw = o->membw > 0 ? o->membw : measure_bandwidth(t);
      forget_peak_rss();
      bandwidth.emplace_back(t, bw);
      Bench bench(*model, 1234);
      for (const int d : depths) {
        SessionConfig sc;
        sc.cache_type = cache_type;
        sc.n_batch = static_cast<std::uint32_t>(std::max(o->n_prompt, 512));
        sc.n_ctx = static_cast<std::uint32_t>(d + std::max(o->n_prompt, o->n_gen) + 1);
        auto session = model->session(sc);
        if (tty)
          std::fprintf(stderr, "seam bench: threads %d, depth %d: filling the cache\r", t, d);
        bench.fill(*session, d, sc.n_batch);
        const auto measure = [&](const std::string& name, int n, bool tg) {
          if (n == 0) return;
          if (tty)
            std::fprintf(stderr, "\33[2Kseam bench: threads %d, depth %d: %s\r", t, d,
                         name.c_str());
          // Warm-up (a short one for tg, as llama-bench does), then the timed runs.
          if (tg)
            bench.run_tg(*session, std::min(n, 8));
          else
            bench.run_pp(*session, n);
          std::vector<double> tps;
          for (int r = 0; r < o->reps; ++r)
            tps.push_back(tg ? bench.run_tg(*session, n) : bench.run_pp(*session, n));
          Result res{t, d, name, n, stats(tps)};
          // Each decoded token streams the weights it reads once (ModelInfo::decode_bytes).
          if (tg) res.bw_pct = 100.0 * res.tps.mean * info.decode_bytes / (bw * 1e9);
          results.push_back(res);
        };
        measure("pp" + std::to_string(o->n_prompt), o->n_prompt, false);
        measure("tg" + std::to_string(o->n_gen), o->n_gen, true);
      }
    }
    if (tty) std::fprintf(stderr, "\33[2K");

    const double rss = peak_rss_mib();
    const char* cache_name = cache_type == CacheType::F32   ? "f32"
                             : cache_type == CacheType::F16 ? "f16"
                                                            : "q8_0";
    if (o->json) {
      nlohmann::ordered_json j;
      j["model"] = info.path;
      j["name"] = info.name;
      j["architecture"] = info.architecture;
      j["size_bytes"] = info.weight_bytes;
      j["decode_bytes"] = info.decode_bytes;
      j["n_params"] = info.n_params;
      j["type"] = main_type(info);
      j["quantization"] = info.quantization;
      j["cpu_level"] = seam::cpu_level();
      j["mmap"] = o->mmap;
      j["cache_type"] = cache_name;
      j["membw_gbps"] = nlohmann::ordered_json::object();
      for (const auto& [t, bw] : bandwidth) j["membw_gbps"][std::to_string(t)] = bw;
      j["results"] = nlohmann::ordered_json::array();
      for (const Result& r : results) {
        nlohmann::ordered_json e = {{"threads", r.threads}, {"depth", r.depth},
                                    {"test", r.test},       {"n_tokens", r.n_tokens},
                                    {"tps", r.tps.mean},    {"tps_sd", r.tps.sd}};
        if (r.bw_pct >= 0) e["bw_pct"] = r.bw_pct;
        j["results"].push_back(std::move(e));
      }
      j["peak_rss_mib"] = rss;
      std::printf("%s\n", j.dump(2).c_str());
      return 0;
    }
    std::printf("| %-24s | %10s | %6s | %6s | %7s | %4s | %-13s | %16s | %8s |\n", "model", "size",
                "type", "cpu", "threads", "kv", "test", "t/s", "% bw");
    std::printf("| %.24s | %.10s | %.6s | %.6s | %.7s | %.4s | %.13s | %.16s | %.8s |\n",
                "------------------------", "----------", "------", "------", "-------", "----",
                "-------------", "----------------", "--------");
    for (const Result& r : results) {
      const std::string test = r.depth ? r.test + " @ d" + std::to_string(r.depth) : r.test;
      char tps[32], bw[16] = "";
      std::snprintf(tps, sizeof tps, "%.2f ± %.2f", r.tps.mean, r.tps.sd);
      if (r.bw_pct >= 0) std::snprintf(bw, sizeof bw, "%.0f%%", r.bw_pct);
      std::printf("| %-24.24s | %10s | %6s | %6s | %7d | %4s | %-13s | %16s | %8s |\n",
                  info.name.c_str(), human_size(info.weight_bytes).c_str(), main_type(info).c_str(),
                  seam::cpu_level(), r.threads, cache_name, test.c_str(), tps, bw);
    }
    std::printf("\n");
    for (const auto& [t, bw] : bandwidth)
      std::printf("bandwidth bound: %.1f GB/s with %d thread%s%s\n", bw, t, t == 1 ? "" : "s",
                  o->membw > 0 ? " (--membw)" : " (measured)");
    std::printf("peak RSS: %.1f MiB\n", rss);
    return 0;
  });
}

}  // namespace seam::cli
