// A "parrot" model for server tests: a real GGUF file (llama architecture,
// F32, one block) whose greedy continuation is a fixed script, so a test can
// make `seam serve` produce an exact answer (a tool call, say) through the
// whole engine. How: each token of the script is its own piece of the
// vocabulary and embeds to its own unit vector; the block's weights are all
// zero, so the residual stream keeps that vector; the output matrix maps the
// unit vector of script token i to script token i + 1, and every other
// token's (a shared vector) to the script's first token. Whatever the prompt,
// greedy decoding therefore writes the script from its start.
import { writeFileSync } from "node:fs";

const T = { U32: 4, I32: 5, F32: 6, BOOL: 7, STR: 8, ARR: 9 };

class Bytes {
  constructor() { this.parts = []; this.size = 0; }
  push(buf) { this.parts.push(buf); this.size += buf.length; }
  u32(v) { const b = Buffer.alloc(4); b.writeUInt32LE(v); this.push(b); }
  i32(v) { const b = Buffer.alloc(4); b.writeInt32LE(v); this.push(b); }
  u64(v) { const b = Buffer.alloc(8); b.writeBigUInt64LE(BigInt(v)); this.push(b); }
  f32(v) { const b = Buffer.alloc(4); b.writeFloatLE(v); this.push(b); }
  str(s) { const b = Buffer.from(s, "utf8"); this.u64(b.length); this.push(b); }
  pad(align) { const n = (align - (this.size % align)) % align; if (n) this.push(Buffer.alloc(n)); }
  buffer() { return Buffer.concat(this.parts); }
}

// script: the answer's pieces in order, each distinct (SentencePiece style:
// "\u2581" stands for a space). The last one should end the turn.
export function writeParrotModel(path, script) {
  if (new Set(script).size !== script.length) throw new Error("script pieces must be distinct");
  const dim = 32;  // > script length: one unit vector per script token, plus the shared one
  if (script.length >= dim) throw new Error("script too long for the model width");
  const tokens = ["<unk>", "<s>", "</s>"], types = [2, 3, 3];
  for (let b = 0; b < 256; b++) {
    tokens.push("<0x" + b.toString(16).toUpperCase().padStart(2, "0") + ">");
    types.push(6);
  }
  for (const s of ["<|im_start|>", "<|im_end|>", "<|endoftext|>"]) {
    if (!script.includes(s)) { tokens.push(s); types.push(3); }
  }
  tokens.push("\u2581"); types.push(1);
  const first = tokens.length;
  for (const s of script) {
    tokens.push(s);
    types.push(s.startsWith("<|") ? 3 : 1);
  }
  const vocab = tokens.length;
  const scores = tokens.map((_, i) => -i);

  // token_embd: numpy shape (vocab, dim), row-major; output the same.
  const embd = new Float32Array(vocab * dim), out = new Float32Array(vocab * dim);
  for (let t = 0; t < vocab; t++) {
    const i = t - first;
    embd[t * dim + (i >= 0 && i < script.length ? i : dim - 1)] = 1;
  }
  for (let i = 0; i + 1 < script.length; i++) out[(first + i + 1) * dim + i] = 1;
  out[first * dim + dim - 1] = 1;
  const zeros = (n) => new Float32Array(n), ones = (n) => new Float32Array(n).fill(1);
  const tensors = [
    ["token_embd.weight", [dim, vocab], embd],
    ["blk.0.attn_norm.weight", [dim], ones(dim)],
    ["blk.0.attn_q.weight", [dim, dim], zeros(dim * dim)],
    ["blk.0.attn_k.weight", [dim, dim], zeros(dim * dim)],
    ["blk.0.attn_v.weight", [dim, dim], zeros(dim * dim)],
    ["blk.0.attn_output.weight", [dim, dim], zeros(dim * dim)],
    ["blk.0.ffn_norm.weight", [dim], ones(dim)],
    ["blk.0.ffn_gate.weight", [dim, dim], zeros(dim * dim)],
    ["blk.0.ffn_up.weight", [dim, dim], zeros(dim * dim)],
    ["blk.0.ffn_down.weight", [dim, dim], zeros(dim * dim)],
    ["output_norm.weight", [dim], ones(dim)],
    ["output.weight", [dim, vocab], out],
  ];

  const kv = [
    ["general.architecture", T.STR, "llama"],
    ["general.name", T.STR, "parrot"],
    ["llama.vocab_size", T.U32, vocab],
    ["llama.context_length", T.U32, 4096],
    ["llama.embedding_length", T.U32, dim],
    ["llama.block_count", T.U32, 1],
    ["llama.feed_forward_length", T.U32, dim],
    ["llama.attention.head_count", T.U32, 2],
    ["llama.attention.head_count_kv", T.U32, 2],
    ["llama.rope.freq_base", T.F32, 10000],
    ["llama.attention.layer_norm_rms_epsilon", T.F32, 1e-5],
    ["llama.rope.dimension_count", T.U32, dim / 2],
    ["general.file_type", T.U32, 0],
    ["tokenizer.ggml.model", T.STR, "llama"],
    ["tokenizer.ggml.tokens", T.ARR, [T.STR, tokens]],
    ["tokenizer.ggml.scores", T.ARR, [T.F32, scores]],
    ["tokenizer.ggml.token_type", T.ARR, [T.I32, types]],
    ["tokenizer.ggml.bos_token_id", T.U32, 1],
    ["tokenizer.ggml.eos_token_id", T.U32, 2],
    ["tokenizer.ggml.unknown_token_id", T.U32, 0],
    ["tokenizer.ggml.add_bos_token", T.BOOL, true],
  ];
  const b = new Bytes();
  b.push(Buffer.from("GGUF"));
  b.u32(3);
  b.u64(tensors.length);
  b.u64(kv.length);
  const value = (type, v) => {
    if (type === T.U32) b.u32(v);
    else if (type === T.I32) b.i32(v);
    else if (type === T.F32) b.f32(v);
    else if (type === T.BOOL) b.push(Buffer.from([v ? 1 : 0]));
    else if (type === T.STR) b.str(v);
  };
  for (const [key, type, v] of kv) {
    b.str(key);
    b.u32(type);
    if (type === T.ARR) {
      b.u32(v[0]);
      b.u64(v[1].length);
      for (const e of v[1]) value(v[0], e);
    } else {
      value(type, v);
    }
  }
  let offset = 0;
  for (const [name, ne, data] of tensors) {
    b.str(name);
    b.u32(ne.length);
    for (const n of ne) b.u64(n);
    b.u32(0);  // F32
    b.u64(offset);
    offset += Math.ceil(data.byteLength / 32) * 32;
  }
  b.pad(32);
  for (const [, , data] of tensors) {
    b.push(Buffer.from(data.buffer, data.byteOffset, data.byteLength));
    b.pad(32);
  }
  writeFileSync(path, b.buffer());
  return path;
}
