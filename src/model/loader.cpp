#include "model/loader.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "compute/interleave.h"
#include "model/arch.h"
#include "model/layers.h"
#include "model/tensor_table.h"
#include "seam/error.h"

namespace seam {

namespace {

std::string shape_str(const std::vector<std::uint64_t>& ne) {
  std::string s = "[";
  for (std::size_t i = 0; i < ne.size(); ++i) s += (i ? ", " : "") + std::to_string(ne[i]);
  return s + "]";
}

// The model's one tensor table, destinations in `w`.
TensorTable model_table(const ModelSpec& s, ModelWeights& w) {
  w.layers.assign(s.hp.n_layer, LayerWeights{});
  TensorTable table;
  standard_rows(s, w, table);
  const ArchSpec* arch = find_arch(s.arch);
  if (arch && arch->tensors) arch->tensors(s, w, table);
  return table;
}

// Binds every tensor into `w` in the file's layout (a tied output is the
// embedding) and returns the table, whose destinations point into `w`.
TensorTable bind_views(const GgufFile& file, const ModelSpec& s, ModelWeights& w) {
  TensorTable table = model_table(s, w);
  apply_table(file, table, w, true);
  if (s.tied_output) w.output = w.token_embd;
  return table;
}

}  // namespace

ModelSpec admit_model(const GgufFile& file) {
  ModelSpec s;
  auto arch = file.get_string("general.architecture");
  if (!arch) throw Error(Errc::BadFormat, "model metadata lacks 'general.architecture'");
  const ArchSpec* spec = find_arch(*arch);
  if (!spec) throw Error(Errc::Unsupported, "unsupported architecture '" + *arch + "'");
  s.arch = *arch;
  spec->configure(file, s.hp, s.recipe);
  s.recipe.fused_gate_up_exps =
      std::any_of(file.tensors().begin(), file.tensors().end(),
                  [](const GgufTensor& t) { return t.name.ends_with(".ffn_gate_up_exps.weight"); });

  const GgufTensor* embd = file.find_tensor("token_embd.weight");
  if (!embd) throw Error(Errc::BadFormat, "required tensor token_embd.weight is missing");
  if (embd->ne.size() != 2) {
    throw Error(Errc::BadFormat, "tensor token_embd.weight has shape " + shape_str(embd->ne) +
                                     ", expected 2 dimensions");
  }
  s.hp.n_vocab = static_cast<std::uint32_t>(embd->ne[1]);
  if (const GgufArray* tokens = file.get_array("tokenizer.ggml.tokens")) {
    if (tokens->items.size() > s.hp.n_vocab) {
      throw Error(Errc::BadFormat, "the vocabulary has " + std::to_string(tokens->items.size()) +
                                       " tokens but token_embd.weight only " +
                                       std::to_string(s.hp.n_vocab) + " rows");
    }
  }
  s.tied_output = file.find_tensor("output.weight") == nullptr;
  // Every layer has several tensors: a count the tensor table cannot hold is
  // refused before anything is sized by it (a hostile header could otherwise
  // make the admission check build millions of expected-tensor entries).
  if (s.hp.n_layer > file.tensors().size()) {
    throw Error(Errc::BadFormat, "'" + *arch + ".block_count' = " + std::to_string(s.hp.n_layer) +
                                     " layers, but the file has only " +
                                     std::to_string(file.tensors().size()) +
                                     " tensors; the header is corrupt");
  }
  s.layers = default_layers(s.hp, s.recipe);
  if (spec->layers) spec->layers(file, s);
  check_layers(s);

  ModelWeights unbound;
  apply_table(file, model_table(s, unbound), unbound, false);
  return s;
}

namespace {

// The embedding tables: the forward pass looks rows up in them (and, with a
// tied output, multiplies by the input one under the name output).
bool embedding(const TensorRow& row, const ModelWeights& w) {
  return row.matrix == &w.token_embd || row.matrix == &w.ple_token_embd;
}

// The matrices the forward pass multiplies by, from the tensor table (fused
// tensors' parts and experts' included), so none is left out.
struct Products {
  std::vector<WeightView*> views;
  std::vector<ExpertsView*> experts;
};

Products products(const TensorTable& table, ModelWeights& w, bool tied_output) {
  Products p;
  for (const TensorRow& row : table.rows()) {
    if (row.matrix && !embedding(row, w)) p.views.push_back(row.matrix);
    for (const auto& [v, rows] : row.parts) p.views.push_back(v);
    for (const auto& [e, rows] : row.expert_parts) p.experts.push_back(e);
  }
  if (tied_output) p.views.push_back(&w.output);
  return p;
}

// Of those, the ones of interleave.h's types that the CPU level's kernels read
// interleaved (compute/interleave.h). A tied output is interleaved too: decode
// reads it through the same tiles (its file layout took 34% of 135M Q8_0
// decode at AVX2 for a fifth of the bytes), and an embedding lookup unpacks
// its one row (get_row).
Products interleave_plan(const TensorTable& table, ModelWeights& w, bool tied_output,
                         CpuLevel level) {
  Products plan = products(table, w, tied_output);
  std::erase_if(plan.views,
                [&](const WeightView* v) { return !v->data || !interleave_pays(*v, level); });
  std::erase_if(plan.experts, [&](const ExpertsView* e) {
    return !e->w.data || e->n_expert <= 0 || !interleave_pays(e->w, level);
  });
  return plan;
}

// Interleaves interleave_plan's matrices in place. Only a copy in memory is
// rewritten: a mapped file's pages stay the file's.
void interleave_matrices(const GgufFile& file, const TensorTable& table, ModelWeights& w,
                         bool tied_output) {
  const Products plan = interleave_plan(table, w, tied_output, active_cpu_level());
  if ((plan.views.empty() && plan.experts.empty()) || !file.set_tensors_writable(true)) return;
  std::set<const std::byte*> done;  // a tensor bound to two views is rewritten once
  // The file's own anonymous copy, writable until the end of this function.
  auto pack = [&](const WeightView& v) {
    if (done.insert(v.data).second)
      interleave::pack_in_place(v.type, v.n_in, v.n_out, const_cast<std::byte*>(v.data));
  };
  for (WeightView* v : plan.views) {
    pack(*v);
    v->interleaved16 = true;
  }
  // Each expert's rows (a fused gate/up tensor's two views: each its half).
  for (ExpertsView* e : plan.experts) {
    for (std::int32_t i = 0; i < e->n_expert; ++i) pack(e->expert(i));
    e->w.interleaved16 = true;
  }
  if (tied_output && w.output.interleaved16) w.token_embd.interleaved16 = true;
  file.set_tensors_writable(false);
}

}  // namespace

ModelWeights bind_weights(const GgufFile& file, const ModelSpec& s) {
  ModelWeights w;
  const TensorTable table = bind_views(file, s, w);
  interleave_matrices(file, table, w, s.tied_output);
  return w;
}

bool batch_invariant(const GgufFile& file, const ModelSpec& s, CpuLevel level, bool in_memory) {
  ModelWeights w;
  const TensorTable table = bind_views(file, s, w);
  if (in_memory) {
    const Products plan = interleave_plan(table, w, s.tied_output, level);
    for (WeightView* v : plan.views) v->interleaved16 = true;
    for (ExpertsView* e : plan.experts) e->w.interleaved16 = true;
  }
  const Products all = products(table, w, s.tied_output);
  std::vector<const WeightView*> matrices(all.views.begin(), all.views.end());
  for (const ExpertsView* e : all.experts) matrices.push_back(&e->w);
  return std::ranges::all_of(matrices, [&](const WeightView* v) {
    return v->data == nullptr || batch_invariant(*v, level);
  });
}

std::uint64_t decode_bytes(const GgufFile& file, const ModelSpec& s) {
  ModelWeights w;  // the table's destinations; nothing is bound
  const TensorTable table = model_table(s, w);
  std::uint64_t bytes = 0;
  for (const TensorRow& row : table.rows()) {
    const GgufTensor* t = file.find_tensor(row.name);
    if (!t) continue;  // an optional tensor the file does not have
    const bool read_whole = s.tied_output && row.matrix == &w.token_embd;  // the output
    if (embedding(row, w) && !read_whole && t->n_rows() > 0) {
      bytes += t->nbytes / t->n_rows();
    } else if (!row.expert_parts.empty() && row.ne[2] > 0) {
      bytes += t->nbytes / row.ne[2] * std::min<std::uint64_t>(s.hp.n_expert_used, row.ne[2]);
    } else {
      bytes += t->nbytes;
    }
  }
  return bytes;
}

}  // namespace seam
