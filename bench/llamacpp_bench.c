// bench/llamacpp_bench.c: llama.cpp's pp/tg speed on a model its memory cannot
// clear by `llama_memory_seq_rm(mem, -1, -1, -1)`, which the peer's own
// llamacpp-cbench calls between runs: a recurrent or hybrid model (qwen35,
// qwen3next), whose recurrent memory refuses sequence id -1. This one clears
// with `llama_memory_clear` and otherwise keeps llamacpp-cbench's method, so
// bench/compare.sh uses it for those files only and the figures stay
// comparable (llama-bench's method: random tokens, BOS first; pp = one decode
// of the whole prompt; tg = one-token decodes; D random tokens decoded untimed
// first; one untimed warm-up; F16 K/V; a persistent thread pool; no mmap).
//
//   llamacpp_bench MODEL.gguf [--threads N] [--pp P] [--tg N] [--reps R] [--depth D]
//
// Prints one JSON line with the keys compare.sh reads (pp_tps, tg_tps, threads,
// depth). Loads the CPU backend from $LLAMACPP_BINS (compare.sh sets it).
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "llama.h"

static void errors_only(enum ggml_log_level level, const char* text, void* user) {
  (void)user;
  if (level == GGML_LOG_LEVEL_ERROR) fputs(text, stderr);
}

static double seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double mean_of(const double* x, int n) {
  double sum = 0;
  for (int i = 0; i < n; i++) sum += x[i];
  return n > 0 ? sum / n : 0;
}

struct bench {
  struct llama_context* ctx;
  llama_token* tokens;
  int n_batch, n_vocab, depth;
  llama_token bos;
};

static llama_token random_token(const struct bench* b) { return 3 + rand() % (b->n_vocab - 3); }

static int decode(struct bench* b, int n) {
  if (llama_decode(b->ctx, llama_batch_get_one(b->tokens, n)) != 0) {
    fprintf(stderr, "llamacpp_bench: llama_decode failed\n");
    return 0;
  }
  return 1;
}

// Empties the memory (K/V and recurrent state) and decodes the untimed depth.
static int reset_to_depth(struct bench* b) {
  llama_memory_clear(llama_get_memory(b->ctx), true);
  for (int done = 0; done < b->depth; done += b->n_batch) {
    int n = b->depth - done < b->n_batch ? b->depth - done : b->n_batch;
    for (int i = 0; i < n; i++) b->tokens[i] = done + i == 0 ? b->bos : random_token(b);
    if (!decode(b, n)) return 0;
  }
  llama_synchronize(b->ctx);
  return 1;
}

static llama_token first_token(const struct bench* b) {
  return b->depth > 0 ? random_token(b) : b->bos;
}

// Tokens per second of one prompt decode of pp tokens; < 0 on failure.
static double time_prompt(struct bench* b, int pp) {
  if (!reset_to_depth(b)) return -1;
  b->tokens[0] = first_token(b);
  for (int i = 1; i < pp; i++) b->tokens[i] = random_token(b);
  double start = seconds();
  if (!decode(b, pp)) return -1;
  llama_synchronize(b->ctx);
  return pp / (seconds() - start);
}

// Tokens per second of n one-token decodes; < 0 on failure.
static double time_generation(struct bench* b, int n) {
  if (!reset_to_depth(b)) return -1;
  b->tokens[0] = first_token(b);
  double start = seconds();
  for (int i = 0; i < n; i++) {
    if (!decode(b, 1)) return -1;
    llama_synchronize(b->ctx);
    b->tokens[0] = random_token(b);
  }
  return n / (seconds() - start);
}

static int parse_int(const char* flag, const char* value, int min) {
  char* end = NULL;
  long v = strtol(value, &end, 10);
  if (*value == '\0' || *end != '\0' || v < min || v > 1000000) {
    fprintf(stderr, "llamacpp_bench: %s needs an integer >= %d, got '%s'\n", flag, min, value);
    exit(2);
  }
  return (int)v;
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s MODEL.gguf [--threads N] [--pp P] [--tg N] [--reps R] [--depth D]\n",
            argv[0]);
    return 2;
  }
  int threads = 2, pp = 512, tg = 128, reps = 3, depth = 0;
  for (int i = 2; i < argc; i += 2) {
    if (i + 1 >= argc) {
      fprintf(stderr, "llamacpp_bench: %s needs a value\n", argv[i]);
      return 2;
    }
    if (!strcmp(argv[i], "--threads"))
      threads = parse_int(argv[i], argv[i + 1], 1);
    else if (!strcmp(argv[i], "--pp"))
      pp = parse_int(argv[i], argv[i + 1], 0);
    else if (!strcmp(argv[i], "--tg"))
      tg = parse_int(argv[i], argv[i + 1], 0);
    else if (!strcmp(argv[i], "--reps"))
      reps = parse_int(argv[i], argv[i + 1], 1);
    else if (!strcmp(argv[i], "--depth"))
      depth = parse_int(argv[i], argv[i + 1], 0);
    else {
      fprintf(stderr, "llamacpp_bench: unknown option %s\n", argv[i]);
      return 2;
    }
  }
  const char* bins = getenv("LLAMACPP_BINS");
  if (bins == NULL) {
    fprintf(stderr, "llamacpp_bench: set LLAMACPP_BINS to the folder of llama.cpp's libraries\n");
    return 2;
  }
  llama_log_set(errors_only, NULL);
  ggml_backend_load_all_from_path(bins);
  llama_backend_init();

  struct llama_model_params model_params = llama_model_default_params();
  model_params.n_gpu_layers = 0;
  model_params.load_mode = LLAMA_LOAD_MODE_NONE;
  struct llama_model* model = llama_model_load_from_file(argv[1], model_params);
  if (model == NULL) {
    fprintf(stderr, "llamacpp_bench: llama.cpp could not load %s\n", argv[1]);
    return 1;
  }
  const struct llama_vocab* vocab = llama_model_get_vocab(model);

  struct bench b = {0};
  b.n_batch = pp > 0 ? pp : 1;
  b.n_vocab = llama_vocab_n_tokens(vocab);
  b.depth = depth;
  b.bos = llama_vocab_bos(vocab);
  struct llama_context_params context_params = llama_context_default_params();
  context_params.n_ctx = (uint32_t)(depth + (pp > tg ? pp : tg) + 64);
  context_params.n_batch = context_params.n_ubatch = (uint32_t)b.n_batch;
  context_params.n_seq_max = 1;
  context_params.n_threads = context_params.n_threads_batch = threads;
  b.ctx = llama_init_from_model(model, context_params);
  if (b.ctx == NULL) {
    fprintf(stderr, "llamacpp_bench: llama.cpp could not make a context\n");
    return 1;
  }
  // A persistent pool, as llama-bench and llamacpp-cbench attach.
  ggml_backend_reg_t cpu =
      ggml_backend_dev_backend_reg(ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU));
  typedef struct ggml_threadpool* (*pool_new_fn)(struct ggml_threadpool_params*);
  typedef void (*pool_free_fn)(struct ggml_threadpool*);
  pool_new_fn pool_new = (pool_new_fn)ggml_backend_reg_get_proc_address(cpu, "ggml_threadpool_new");
  pool_free_fn pool_free =
      (pool_free_fn)ggml_backend_reg_get_proc_address(cpu, "ggml_threadpool_free");
  struct ggml_threadpool_params pool_params = ggml_threadpool_params_default(threads);
  struct ggml_threadpool* pool = pool_new(&pool_params);
  llama_attach_threadpool(b.ctx, pool, NULL);

  b.tokens = malloc(sizeof(llama_token) * (size_t)b.n_batch);
  double* pp_tps = calloc((size_t)reps, sizeof(double));
  double* tg_tps = calloc((size_t)reps, sizeof(double));
  srand(1234);
  for (int r = -1; r < reps; r++) {  // r = -1: the untimed warm-up
    if (pp > 0) {
      double tps = time_prompt(&b, pp);
      if (tps < 0) return 1;
      if (r >= 0) pp_tps[r] = tps;
    }
    if (tg > 0) {
      double tps = time_generation(&b, r < 0 ? (tg < 8 ? tg : 8) : tg);
      if (tps < 0) return 1;
      if (r >= 0) tg_tps[r] = tps;
    }
  }
  printf(
      "{\"model\": \"%s\", \"threads\": %d, \"pp\": %d, \"pp_tps\": %.2f, \"tg\": %d, "
      "\"tg_tps\": %.2f, \"depth\": %d, \"memory_clear\": true}\n",
      argv[1], threads, pp, mean_of(pp_tps, pp > 0 ? reps : 0), tg,
      mean_of(tg_tps, tg > 0 ? reps : 0), depth);
  free(pp_tps);
  free(tg_tps);
  free(b.tokens);
  llama_free(b.ctx);
  pool_free(pool);
  llama_model_free(model);
  return 0;
}
