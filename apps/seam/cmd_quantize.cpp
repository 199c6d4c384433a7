// seam quantize: rewrite a model with quantized weights, then compare the
// perplexity of the input and the output on a text.
#include <cstdio>
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

}  // namespace

void add_quantize_command(CLI::App& app, CommandList& list) {
  struct Opts {
    std::string in, out, type = "Q8_0", mix, eval_text;
    bool no_eval = false;
    int threads = 0;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* sub = app.add_subcommand("quantize", "Write a copy of a model with quantized weights");
  sub->add_option("IN", o->in, "GGUF file or Hugging Face model directory")->required();
  sub->add_option("OUT", o->out, "GGUF file to write")->required();
  sub->add_option("--type", o->type,
                  "Weight type: Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K, F16 or F32");
  sub->add_option("--mix", o->mix,
                  "q4_k_m: llama.cpp's Q4_K_M mix of Q4_K and Q6_K (overrides --type)");
  sub->add_option("--eval-text", o->eval_text,
                  "Text file for the perplexity check (default: a built-in KJV passage)");
  sub->add_flag("--no-eval", o->no_eval, "Skip the perplexity check");
  add_threads_option(sub, o->threads);
  list.emplace_back(sub, [o] {
    // Read the text first: a bad path should fail before minutes of quantizing.
    std::string text = kEvalText;
    if (!o->eval_text.empty()) {
      std::ifstream in(o->eval_text, std::ios::binary);
      if (!in) throw Error(Errc::Io, "cannot read the --eval-text file " + o->eval_text);
      text.assign(std::istreambuf_iterator<char>(in), {});
    }
    QuantizeOptions qo;
    qo.type = o->type;
    qo.mix = o->mix;
    qo.n_threads = resolve_threads(o->threads);
    const QuantizeReport r = quantize_model(o->in, o->out, qo);
    for (const QuantizedTensor& t : r.tensors) {
      if (!t.note.empty()) std::fprintf(stderr, "%s: %s\n", t.name.c_str(), t.note.c_str());
    }
    std::fprintf(stderr, "wrote %s: %zu tensors, %.2f MiB -> %.2f MiB (file type %u)\n",
                 o->out.c_str(), r.tensors.size(), static_cast<double>(r.bytes_in) / 1048576.0,
                 static_cast<double>(r.bytes_out) / 1048576.0, r.file_type);
    if (o->no_eval) return 0;
    LoadOptions lo;
    lo.n_threads = qo.n_threads;
    for (const std::string* path : {&o->in, &o->out}) {
      try {
        auto model = Model::load(*path, lo);
        const PerplexityResult p = perplexity(*model, text);
        std::fprintf(stderr, "perplexity of %s: %.4f (nll/token %.6f, %zu tokens scored)\n",
                     path->c_str(), p.ppl, p.nll_per_token, p.n_scored);
      } catch (const Error& e) {
        // The input may be a model seam can convert but not run; the output must run.
        if (path == &o->out) throw;
        std::fprintf(stderr, "perplexity of %s: not measured: %s\n", path->c_str(), e.what());
      }
    }
    return 0;
  });
}

}  // namespace seam::cli
