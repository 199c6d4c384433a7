// seam quantize: rewrite a model with quantized weights, then compare the
// perplexity of the input and the output on a text.
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>

#include "commands.h"
#include "generate_options.h"
#include "seam/error.h"
#include "seam/model.h"
#include "seam/perplexity.h"
#include "seam/quantize.h"

namespace seam::cli {

namespace {

// Public domain (King James Version, Ecclesiastes 1:2-11). It is KJV like the
// default model's training text, so for that model it measures fit more than
// generalisation; it still shows what quantization costs.
constexpr const char* kEvalText =
    "Vanity of vanities, saith the Preacher, vanity of vanities; all is vanity. "
    "What profit hath a man of all his labour which he taketh under the sun? "
    "One generation passeth away, and another generation cometh: but the earth abideth for "
    "ever. The sun also ariseth, and the sun goeth down, and hasteth to his place where he "
    "arose. The wind goeth toward the south, and turneth about unto the north; it whirleth "
    "about continually, and the wind returneth again according to his circuits. All the rivers "
    "run into the sea; yet the sea is not full; unto the place from whence the rivers come, "
    "thither they return again. All things are full of labour; man cannot utter it: the eye "
    "is not satisfied with seeing, nor the ear filled with hearing. The thing that hath been, "
    "it is that which shall be; and that which is done is that which shall be done: and there "
    "is no new thing under the sun. Is there any thing whereof it may be said, See, this is "
    "new? it hath been already of old time, which was before us. There is no remembrance of "
    "former things; neither shall there be any remembrance of things that are to come with "
    "those that shall come after.\n";

// The type the user asked for, in seam's terms: llama.cpp's file-type names of
// mixes (Q4_K_M, ...) become --mix; plain type names go to quantize_model, which
// names the types it knows when it refuses one.
void resolve_type(std::string& type, std::string& mix) {
  std::string u;
  for (char c : type) u += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  for (const char* m : {"Q2_K", "Q3_K_S", "Q3_K_M", "Q3_K_L", "Q4_K_S", "Q4_K_M", "Q5_K_S",
                        "Q5_K_M", "IQ4_NL", "IQ4_XS"}) {
    if (u == m) {
      mix = u;
      return;
    }
  }
  if (u == "Q6_K_M" || u == "Q8_0_M") u = u.substr(0, u.size() - 2);  // no mix: the plain type
  type = u;
}

}  // namespace

void add_quantize_command(CLI::App& app, CommandList& list) {
  struct Opts {
    std::string in, out, type, positional_type, mix, eval_text;
    bool no_eval = false;
    int threads = 0;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* sub = app.add_subcommand("quantize", "Write a copy of a model with quantized weights");
  sub->add_option("IN", o->in, "GGUF file or Hugging Face model directory")->required();
  sub->add_option("OUT", o->out, "GGUF file to write")->required();
  sub->add_option("TYPE", o->positional_type,
                  "The weight type, as --type (llama-quantize's positional form)");
  sub->add_option("--type", o->type,
                  "Weight type: Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K, F16, BF16 or F32, "
                  "or one of llama.cpp's mixes Q5_K_M, Q5_K_S, Q4_K_M, Q4_K_S, Q3_K_L, Q3_K_M, "
                  "Q3_K_S, Q2_K, IQ4_NL, IQ4_XS");
  sub->add_option("--mix", o->mix,
                  "q5_k_m, q5_k_s, q4_k_m, q4_k_s, q3_k_l, q3_k_m, q3_k_s, q2_k, iq4_nl or iq4_xs: "
                  "llama.cpp's mixes (= --type Q5_K_M, ...)");
  sub->add_option("--eval-text", o->eval_text,
                  "Text file for the perplexity check (default: a built-in KJV passage)");
  sub->add_flag("--no-eval", o->no_eval, "Skip the perplexity check");
  add_threads_option(sub, o->threads);
  list.emplace_back(sub, [o] {
    namespace fs = std::filesystem;
    if (!o->type.empty() && !o->positional_type.empty() && o->type != o->positional_type)
      throw Error(Errc::InvalidArgument, "two types given: '" + o->positional_type +
                                             "' and --type " + o->type + "; give one");
    std::string type = o->type.empty() ? o->positional_type : o->type;
    std::string mix = o->mix;
    if (type.empty() && mix.empty())
      throw Error(Errc::InvalidArgument,
                  "give the weight type: --type Q8_0 (or Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, "
                  "Q6_K, F16, BF16, F32, Q5_K_M, Q5_K_S, Q4_K_M, Q4_K_S, Q3_K_L, Q3_K_M, Q3_K_S, "
                  "Q2_K, IQ4_NL, IQ4_XS)");
    if (!type.empty()) resolve_type(type, mix);
    // Everything that can be checked is checked before minutes of quantizing.
    std::error_code ec;
    if (fs::is_directory(o->out, ec))
      throw Error(Errc::InvalidArgument, "OUT '" + o->out +
                                             "' is a directory; give a file name, e.g. " +
                                             (fs::path(o->out) / "model.gguf").string());
    const fs::path parent = fs::path(o->out).parent_path();
    if (!parent.empty() && !fs::is_directory(parent, ec))
      throw Error(Errc::Io, "cannot write '" + o->out + "': the folder " + parent.string() +
                                " does not exist");
    std::string text = kEvalText;
    if (!o->eval_text.empty()) {
      std::ifstream in(o->eval_text, std::ios::binary);
      if (!in) throw Error(Errc::Io, "cannot read the --eval-text file " + o->eval_text);
      text.assign(std::istreambuf_iterator<char>(in), {});
      if (text.find_first_not_of(" \t\r\n") == std::string::npos)
        throw Error(Errc::InvalidArgument,
                    "the --eval-text file " + o->eval_text +
                        " is empty; give a text to measure perplexity on, or --no-eval");
    }
    QuantizeOptions qo;
    qo.type = type.empty() ? "Q8_0" : type;  // ignored under a mix
    qo.mix = mix;
    qo.n_threads = resolve_threads(o->threads);
    // Written beside OUT and moved into place only when the whole job succeeds.
    const std::string partial = o->out + ".seam-partial";
    struct Cleanup {
      const std::string& path;
      bool keep = false;
      ~Cleanup() {
        std::error_code e;
        if (!keep) fs::remove(path, e);
      }
    } cleanup{partial};
    const auto t0 = std::chrono::steady_clock::now();
    auto seconds = [&t0] {
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    };
    if (isatty(STDERR_FILENO)) {
      qo.on_tensor = [&seconds](std::size_t done, std::size_t total) {
        const double eta =
            seconds() / static_cast<double>(done) * static_cast<double>(total - done);
        std::fprintf(stderr, "\r\033[Kseam: quantize: tensor %zu/%zu, ETA %.0f s", done, total,
                     eta);
        std::fflush(stderr);
      };
    }
    const QuantizeReport r = quantize_model(o->in, partial, qo);
    if (isatty(STDERR_FILENO)) std::fputs("\r\033[K", stderr);
    for (const QuantizedTensor& t : r.tensors) {
      if (!t.note.empty()) std::fprintf(stderr, "%s: %s\n", t.name.c_str(), t.note.c_str());
    }
    std::fprintf(stderr,
                 "quantized %s: %zu tensors, %.2f MiB -> %.2f MiB (file type %u) in %.1f s\n",
                 o->in.c_str(), r.tensors.size(), static_cast<double>(r.bytes_in) / 1048576.0,
                 static_cast<double>(r.bytes_out) / 1048576.0, r.file_type, seconds());
    LoadOptions lo;
    lo.n_threads = qo.n_threads;
    // The output must load (and, unless --no-eval, run) before it is OUT.
    if (o->no_eval) {
      Model::load(partial, lo);
    } else {
      for (const std::string* path : {static_cast<const std::string*>(&o->in), &partial}) {
        const std::string& shown = path == &partial ? o->out : *path;
        try {
          auto model = Model::load(*path, lo);
          const PerplexityResult p = perplexity(*model, text);
          std::fprintf(stderr, "perplexity of %s: %.4f (nll/token %.6f, %zu tokens scored)\n",
                       shown.c_str(), p.ppl, p.nll_per_token, p.n_scored);
        } catch (const Error& e) {
          // The input may be a model seam can convert but not run; the output must run.
          if (path == &partial)
            throw Error(e.code(), "the quantized model does not run, so nothing was written: " +
                                      std::string(e.what()));
          std::fprintf(stderr, "perplexity of %s: not measured: %s\n", shown.c_str(), e.what());
        }
      }
    }
    fs::rename(partial, o->out, ec);
    if (ec) throw Error(Errc::Io, "cannot write '" + o->out + "': " + ec.message());
    cleanup.keep = true;
    std::fprintf(stderr, "wrote %s\n", o->out.c_str());
    return 0;
  });
}

}  // namespace seam::cli
