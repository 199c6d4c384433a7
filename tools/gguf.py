#!/usr/bin/env python3
"""gguf.py - a small, self-contained GGUF v3 reader and writer (stdlib + numpy).

Written from the GGUF file-format description and the ggml block layouts; it is
the Python side of seam's test tooling (tools/reference.py builds on it).

File layout (all little endian):
    "GGUF" u32 version(3) u64 n_tensors u64 n_kv
    n_kv x      { str key, u32 value_type, value }
    n_tensors x { str name, u32 n_dims, u64 ne[n_dims] (ne[0] fastest),
                  u32 ggml_type, u64 offset (from data start, aligned) }
    zero padding to `general.alignment` (u32, default 32), then the tensor data.
    str = u64 byte length + UTF-8 bytes; array = u32 elem_type, u64 n, elements
    (an element of a nested array is itself u32 elem_type, u64 n, elements).

Writer
------
    from gguf import GGUFWriter
    w = GGUFWriter("model.gguf")                 # alignment=32 by default
    w.add("general.architecture", "llama")       # str     -> STRING
    w.add("llama.block_count", 4)                # int     -> UINT32 (INT32 if < 0,
                                                 #            64-bit if it does not fit)
    w.add("llama.rope.freq_base", 10000.0)       # float   -> FLOAT32
    w.add("tokenizer.ggml.add_bos_token", True)  # bool    -> BOOL
    w.add("tokenizer.ggml.tokens", ["<unk>", "<s>"])        # list of str -> array<string>
    w.add("tokenizer.ggml.scores", [0.0, -1.0])             # list of float -> array<float32>
    w.add("tokenizer.ggml.token_type", [2, 3])              # list of int -> array<int32>
    w.add("some.key", 7, type="uint64")          # explicit type (see VALUE_TYPES)
    w.add("nested", [[1, 2], [3]], type="array<array<int16>>")
    w.add_tensor("token_embd.weight", emb)        # numpy array, shape (n_vocab, n_embd)
    w.add_tensor("blk.0.attn_q.weight", wq, dtype="Q8_0")   # F32 | F16 | BF16 | Q8_0 | Q4_0
    w.add_tensor_raw(name, ne, "Q4_K", block_bytes)         # already-encoded data
    w.write()
  numpy shape (rows, cols) is stored as ne = [cols, rows]: the last numpy axis is
  ne[0].  A weight used as y = W @ x therefore has numpy shape (out, in).
  Keys keep insertion order; adding a key twice replaces its value.
  numpy arrays given to add() keep their dtype as the element type.

Reader
------
    from gguf import GGUFReader
    r = GGUFReader("model.gguf")
    r.metadata["llama.block_count"]   # python value (numeric arrays -> numpy arrays,
                                      # string arrays / nested arrays -> lists)
    r.types["llama.block_count"]      # "uint32", "array<string>", ...
    r.tensors["output.weight"]        # TensorInfo(name, ne, type, offset, nbytes)
    r.tensor("output.weight")         # float32 numpy array, shape reversed(ne), decoded
    r.raw("output.weight")            # the stored bytes
  Decodes F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K,
  Q6_K bit-exactly as ggml's to_float does (every product in these formats is
  exact in float32, so only the final +/- min rounds; we round it the same way).

Quantizers (quantize_q8_0 / quantize_q4_0) reproduce ggml's reference
quantize_row_q8_0_ref / quantize_row_q4_0_ref bit for bit:
  Q8_0: 34-byte blocks of 32: fp16 d, int8 q[32]; d = amax/127, id = 1/d (0 if d = 0),
        q = roundf(x*id) (half away from zero), all in float32.
  Q4_0: 18-byte blocks of 32: fp16 d, u8 qs[16]; max = the signed value with the
        largest |x| (first on ties), d = max/-8, id = 1/d, q = min(15, trunc(x*id + 8.5f)),
        qs[j] = q[j] | q[j+16] << 4.

usage: gguf.py FILE.gguf   prints the metadata and tensor table.
"""

import struct
import sys

import numpy as np

GGUF_MAGIC = b"GGUF"
GGUF_VERSION = 3
DEFAULT_ALIGNMENT = 32

# GGUF metadata value types.
VALUE_TYPES = {
    "uint8": 0, "int8": 1, "uint16": 2, "int16": 3, "uint32": 4, "int32": 5,
    "float32": 6, "bool": 7, "string": 8, "array": 9, "uint64": 10, "int64": 11,
    "float64": 12,
}
VALUE_TYPE_NAMES = {v: k for k, v in VALUE_TYPES.items()}
_SCALAR_NP = {
    0: np.dtype("<u1"), 1: np.dtype("<i1"), 2: np.dtype("<u2"), 3: np.dtype("<i2"),
    4: np.dtype("<u4"), 5: np.dtype("<i4"), 6: np.dtype("<f4"), 7: np.dtype("u1"),
    10: np.dtype("<u8"), 11: np.dtype("<i8"), 12: np.dtype("<f8"),
}
_NP_TO_VALUE = {
    np.dtype("uint8"): 0, np.dtype("int8"): 1, np.dtype("uint16"): 2, np.dtype("int16"): 3,
    np.dtype("uint32"): 4, np.dtype("int32"): 5, np.dtype("float32"): 6, np.dtype("bool"): 7,
    np.dtype("uint64"): 10, np.dtype("int64"): 11, np.dtype("float64"): 12,
}

# ggml tensor types: name -> (id, elements per block, bytes per block).
GGML_TYPES = {
    "F32": (0, 1, 4), "F16": (1, 1, 2), "Q4_0": (2, 32, 18), "Q4_1": (3, 32, 20),
    "Q5_0": (6, 32, 22), "Q5_1": (7, 32, 24), "Q8_0": (8, 32, 34), "Q8_1": (9, 32, 36),
    "Q2_K": (10, 256, 84), "Q3_K": (11, 256, 110), "Q4_K": (12, 256, 144),
    "Q5_K": (13, 256, 176), "Q6_K": (14, 256, 210), "Q8_K": (15, 256, 292),
    "I8": (24, 1, 1), "I16": (25, 1, 2), "I32": (26, 1, 4), "I64": (27, 1, 8),
    "F64": (28, 1, 8), "BF16": (30, 1, 2), "MXFP4": (39, 32, 17),
}
GGML_TYPE_NAMES = {v[0]: k for k, v in GGML_TYPES.items()}


class GGUFError(Exception):
    pass


# ----------------------------------------------------------------------------
# value types


def _parse_type(t):
    """'array<array<int32>>' -> [9, 9, 5]; an int id -> [id]."""
    if isinstance(t, int):
        return [t]
    t = t.strip().lower()
    if t.startswith("array<") and t.endswith(">"):
        return [9] + _parse_type(t[6:-1])
    if t not in VALUE_TYPES or t == "array":
        raise GGUFError(f"unknown GGUF value type {t!r}; use one of {sorted(VALUE_TYPES)}"
                        " or array<T>")
    return [VALUE_TYPES[t]]


def _type_name(chain):
    name = VALUE_TYPE_NAMES[chain[-1]]
    for _ in chain[:-1]:
        name = f"array<{name}>"
    return name


def _infer(v):
    """Type chain for a python/numpy value (see module doc for the rules)."""
    if isinstance(v, (bool, np.bool_)):
        return [7]
    if isinstance(v, np.generic):
        return [_NP_TO_VALUE[v.dtype]]
    if isinstance(v, int):
        if 0 <= v < 2**32:
            return [4]
        if -2**31 <= v < 0:
            return [5]
        return [10] if v >= 0 else [11]
    if isinstance(v, float):
        return [6]
    if isinstance(v, str):
        return [8]
    if isinstance(v, np.ndarray):
        if v.ndim != 1:
            raise GGUFError("metadata arrays must be 1-D (use nested lists for nesting)")
        if v.dtype not in _NP_TO_VALUE:
            raise GGUFError(f"numpy dtype {v.dtype} has no GGUF value type")
        return [9, _NP_TO_VALUE[v.dtype]]
    if isinstance(v, (bytes, bytearray)):
        return [9, 0]
    if isinstance(v, (list, tuple)):
        if len(v) == 0:
            return [9, 5]
        if all(isinstance(e, (bool, np.bool_)) for e in v):
            return [9, 7]
        if all(isinstance(e, (int, np.integer)) and not isinstance(e, bool) for e in v):
            return [9, 5] if all(-2**31 <= int(e) < 2**31 for e in v) else [9, 11]
        if all(isinstance(e, (int, float, np.integer, np.floating)) for e in v):
            return [9, 6]
        if all(isinstance(e, str) for e in v):
            return [9, 8]
        if all(isinstance(e, (list, tuple, np.ndarray, bytes)) for e in v):
            return [9] + _infer(v[0])
        raise GGUFError("cannot infer a GGUF type for a mixed list; pass type=")
    raise GGUFError(f"cannot store a {type(v).__name__} as GGUF metadata")


def _pack_str(s):
    b = s.encode("utf-8", "surrogateescape") if isinstance(s, str) else bytes(s)
    return struct.pack("<Q", len(b)) + b


def _pack_value(chain, v):
    t = chain[0]
    if t == 8:
        return _pack_str(v)
    if t == 9:
        et = chain[1]
        out = [struct.pack("<IQ", et, len(v))]
        if et in _SCALAR_NP:
            dt = _SCALAR_NP[et]
            a = np.asarray(v)
            if et != 7 and dt.kind in "iu" and a.size and (
                    a.min() < np.iinfo(dt).min or a.max() > np.iinfo(dt).max):
                raise GGUFError(f"array value out of range for {VALUE_TYPE_NAMES[et]}")
            out.append(a.astype(dt).tobytes())
        else:
            out.extend(_pack_value(chain[1:], e) for e in v)
        return b"".join(out)
    dt = _SCALAR_NP[t]
    if dt.kind in "iu" and t != 7:
        iv = int(v)
        if not (np.iinfo(dt).min <= iv <= np.iinfo(dt).max):
            raise GGUFError(f"value {iv} out of range for {VALUE_TYPE_NAMES[t]}")
        return np.array(iv, dtype=dt).tobytes()
    if t == 7:
        return bytes([1 if v else 0])
    return np.array(v, dtype=dt).tobytes()


# ----------------------------------------------------------------------------
# fp16 / bf16 / quantizers


def to_f16_bytes(x):
    """IEEE half, round to nearest even (numpy's conversion, as F16C does)."""
    return np.asarray(x, dtype=np.float32).astype("<f2").tobytes()


def to_bf16_bytes(x):
    """bfloat16, round to nearest even; NaN stays a quiet NaN (ggml's rule)."""
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    nan = (u & 0x7FFFFFFF) > 0x7F800000
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) & 0xFFFF
    r = np.where(nan, (u >> 16) | 64, r)
    return r.astype("<u2").tobytes()


def _roundf(x32):
    """C roundf (half away from zero) of float32 values, exactly: x + 0.5 is exact in f64."""
    x = x32.astype(np.float64)
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


def quantize_q8_0(x):
    """float32 values (length multiple of 32) -> Q8_0 bytes (ggml reference rules)."""
    x = np.ascontiguousarray(x, dtype=np.float32).reshape(-1, 32)
    amax = np.max(np.abs(x), axis=1)
    d = amax / np.float32(127)
    with np.errstate(divide="ignore"):
        idv = np.where(d != 0, np.float32(1) / d, np.float32(0)).astype(np.float32)
    q = _roundf(x * idv[:, None]).astype(np.int8)
    blocks = np.empty((x.shape[0], 34), dtype=np.uint8)
    blocks[:, 0:2] = d.astype("<f2").view(np.uint8).reshape(-1, 2)
    blocks[:, 2:] = q.view(np.uint8)
    return blocks.tobytes()


def quantize_q4_0(x):
    """float32 values (length multiple of 32) -> Q4_0 bytes (ggml reference rules)."""
    x = np.ascontiguousarray(x, dtype=np.float32).reshape(-1, 32)
    idx = np.argmax(np.abs(x), axis=1)  # first index on ties, like the strict '<' scan
    mx = x[np.arange(x.shape[0]), idx]
    mx = np.where(np.abs(mx) > 0, mx, np.float32(0))  # an all-zero block keeps max = +0.0
    d = mx / np.float32(-8)
    with np.errstate(divide="ignore"):
        idv = np.where(d != 0, np.float32(1) / d, np.float32(0)).astype(np.float32)
    v = (x * idv[:, None]) + np.float32(8.5)  # float32 add, then C truncation
    q = np.minimum(15, np.trunc(v.astype(np.float64)).astype(np.int64)).astype(np.uint8)
    blocks = np.empty((x.shape[0], 18), dtype=np.uint8)
    blocks[:, 0:2] = d.astype("<f2").view(np.uint8).reshape(-1, 2)
    blocks[:, 2:] = q[:, :16] | (q[:, 16:] << 4)
    return blocks.tobytes()


# ----------------------------------------------------------------------------
# dequantizers: uint8 blocks (n_blocks, block_bytes) -> float32 (n_blocks, block_elems)


def _f16(b):
    return np.ascontiguousarray(b).view("<f2").astype(np.float32)


def _f32(a):
    return a.astype(np.float32)


def _dq_q8_0(b):
    d = _f16(b[:, 0:2])
    return d * _f32(b[:, 2:34].view(np.int8))


def _dq_q4_0(b):
    d = _f16(b[:, 0:2])
    qs = b[:, 2:18]
    q = np.concatenate([qs & 0xF, qs >> 4], axis=1).astype(np.int32) - 8
    return _f32(q) * d


def _dq_q4_1(b):
    d, m = _f16(b[:, 0:2]), _f16(b[:, 2:4])
    qs = b[:, 4:20]
    q = np.concatenate([qs & 0xF, qs >> 4], axis=1)
    return _f32(q) * d + m


def _q5_values(qh_bytes, qs):
    qh = np.ascontiguousarray(qh_bytes).view("<u4").astype(np.uint32)  # (nb, 1)
    bits = (qh >> np.arange(32, dtype=np.uint32)) & 1                   # bit j -> element j
    low = np.concatenate([qs & 0xF, qs >> 4], axis=1).astype(np.uint32)
    return low | (bits << 4)


def _dq_q5_0(b):
    d = _f16(b[:, 0:2])
    q = _q5_values(b[:, 2:6], b[:, 6:22]).astype(np.int32) - 16
    return _f32(q) * d


def _dq_q5_1(b):
    d, m = _f16(b[:, 0:2]), _f16(b[:, 2:4])
    q = _q5_values(b[:, 4:8], b[:, 8:24])
    return _f32(q) * d + m


def _dq_q2_k(b):
    nb = b.shape[0]
    sc = b[:, 0:16]
    qs = b[:, 16:80].reshape(nb, 2, 1, 32)
    d, dmin = _f16(b[:, 80:82]), _f16(b[:, 82:84])
    shifts = (2 * np.arange(4, dtype=np.uint8)).reshape(1, 1, 4, 1)
    q = ((qs >> shifts) & 3).reshape(nb, 256)   # element 128n + 32j + l
    dl = d * _f32(sc & 0xF)                     # per 16 elements
    ml = dmin * _f32(sc >> 4)
    g = np.arange(256) // 16
    return dl[:, g] * _f32(q) - ml[:, g]


def _q3_k_scales(s):
    i = np.arange(16)
    low = np.where(i < 8, s[:, i % 8] & 0xF, s[:, i % 8] >> 4)
    high = (s[:, 8 + i % 4] >> (2 * (i // 4)).astype(np.uint8)) & 3
    return (low | (high << 4)).astype(np.int32) - 32


def _dq_q3_k(b):
    nb = b.shape[0]
    hm = b[:, 0:32]
    qs = b[:, 32:96].reshape(nb, 2, 1, 32)
    sc = _q3_k_scales(b[:, 96:108])
    d = _f16(b[:, 108:110])
    shifts = (2 * np.arange(4, dtype=np.uint8)).reshape(1, 1, 4, 1)
    q = ((qs >> shifts) & 3).astype(np.int32)                      # (nb, 2, 4, 32)
    hbit = np.arange(8, dtype=np.uint8).reshape(1, 2, 4, 1)        # bit 4n + j
    h = (hm.reshape(nb, 1, 1, 32) >> hbit) & 1
    q = (q - np.where(h == 1, 0, 4)).reshape(nb, 256)
    dl = d * _f32(sc)
    return dl[:, np.arange(256) // 16] * _f32(q)


def _k4_scales(s):
    """The 8 (scale, min) pairs of Q4_K/Q5_K, 6 bits each, packed into 12 bytes."""
    s = s.astype(np.int32)
    sc = np.empty((s.shape[0], 8), np.int32)
    mn = np.empty((s.shape[0], 8), np.int32)
    sc[:, 0:4] = s[:, 0:4] & 63
    mn[:, 0:4] = s[:, 4:8] & 63
    sc[:, 4:8] = (s[:, 8:12] & 0xF) | ((s[:, 0:4] >> 6) << 4)
    mn[:, 4:8] = (s[:, 8:12] >> 4) | ((s[:, 4:8] >> 6) << 4)
    return sc, mn


def _dq_q4_k(b):
    nb = b.shape[0]
    d, dmin = _f16(b[:, 0:2]), _f16(b[:, 2:4])
    sc, mn = _k4_scales(b[:, 4:16])
    qs = b[:, 16:144].reshape(nb, 4, 1, 32)
    q = np.concatenate([qs & 0xF, qs >> 4], axis=2).reshape(nb, 256)  # 64j + 32h + l
    g = np.arange(256) // 32
    d1 = d * _f32(sc)
    m1 = dmin * _f32(mn)
    return d1[:, g] * _f32(q) - m1[:, g]


def _dq_q5_k(b):
    nb = b.shape[0]
    d, dmin = _f16(b[:, 0:2]), _f16(b[:, 2:4])
    sc, mn = _k4_scales(b[:, 4:16])
    qh = b[:, 16:48].reshape(nb, 1, 1, 32)
    qs = b[:, 48:176].reshape(nb, 4, 1, 32)
    low = np.concatenate([qs & 0xF, qs >> 4], axis=2)                  # (nb, 4, 2, 32)
    bit = np.arange(8, dtype=np.uint8).reshape(1, 4, 2, 1)             # bit 2j + h
    q = (low | (((qh >> bit) & 1) << 4)).reshape(nb, 256)
    g = np.arange(256) // 32
    d1 = d * _f32(sc)
    m1 = dmin * _f32(mn)
    return d1[:, g] * _f32(q) - m1[:, g]


def _dq_q6_k(b):
    nb = b.shape[0]
    ql = b[:, 0:128].reshape(nb, 2, 2, 32)    # half n, column c (0: l, 1: l+32)
    qh = b[:, 128:192].reshape(nb, 2, 1, 32)
    sc = _f32(b[:, 192:208].view(np.int8))
    d = _f16(b[:, 208:210])
    # element 128n + 32k + l, k = 0..3: nibble (k // 2) of ql[n][k % 2][l], high bits 2k
    nib = np.stack([ql[:, :, 0] & 0xF, ql[:, :, 1] & 0xF, ql[:, :, 0] >> 4, ql[:, :, 1] >> 4],
                   axis=2)                                          # (nb, 2, 4, 32)
    hb = (qh >> (2 * np.arange(4, dtype=np.uint8)).reshape(1, 1, 4, 1)) & 3
    q = (nib | (hb << 4)).astype(np.int32).reshape(nb, 256) - 32
    return (d * sc)[:, np.arange(256) // 16] * _f32(q)


def _dq_f16(b):
    return b.view("<f2").astype(np.float32)


def _dq_bf16(b):
    return (b.view("<u2").astype(np.uint32) << 16).view(np.float32)


# MXFP4 (OCP microscaling): per 32 values one E8M0 exponent byte e and 16 bytes of E2M1
# nibbles (value j in the low nibble of byte j, value j + 16 in the high one). ggml keeps
# the E2M1 values doubled (integers) and halves the scale: x = KV[nibble] * 2^(e - 128).
_MXFP4_KV = np.array([0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12], np.float64)


def _e8m0_half(e):
    return np.ldexp(1.0, e.astype(np.int64) - 128)


def _dq_mxfp4(b):
    d = _e8m0_half(b[:, 0])[:, None]
    qs = b[:, 1:]
    return np.concatenate([_MXFP4_KV[qs & 0x0F], _MXFP4_KV[qs >> 4]], axis=1) * d


def quantize_mxfp4(x):
    """Nearest MXFP4 encoding (ties to the lower magnitude): e chosen so the block's
    largest |x| fits under 12 * 2^(e - 128). Exact for values already on the grid.
    Not checked against ggml's quantizer (the reference only needs exact decoding)."""
    x = np.asarray(x, np.float64).reshape(-1, 32)
    amax = np.abs(x).max(axis=1)
    e = np.where(amax > 0, np.ceil(np.log2(np.maximum(amax, 1e-38) / 12.0)) + 128, 0)
    e = np.clip(e, 0, 254).astype(np.uint8)
    y = x / _e8m0_half(e)[:, None]
    cand = _MXFP4_KV[None, None, :8]
    mag = np.argmin(np.abs(np.abs(y)[..., None] - cand), axis=-1)
    q = (mag | np.where((y < 0) & (mag > 0), 8, 0)).astype(np.uint8)
    out = np.empty((x.shape[0], 17), np.uint8)
    out[:, 0] = e
    out[:, 1:] = q[:, :16] | (q[:, 16:] << 4)
    return out.tobytes()


_DEQUANT = {
    "MXFP4": _dq_mxfp4,
    "Q8_0": _dq_q8_0, "Q4_0": _dq_q4_0, "Q4_1": _dq_q4_1, "Q5_0": _dq_q5_0, "Q5_1": _dq_q5_1,
    "Q2_K": _dq_q2_k, "Q3_K": _dq_q3_k, "Q4_K": _dq_q4_k, "Q5_K": _dq_q5_k, "Q6_K": _dq_q6_k,
}


def tensor_nbytes(ggml_type, n_elements):
    if ggml_type not in GGML_TYPES:
        raise GGUFError(f"unknown ggml type {ggml_type}")
    _, blk, bsz = GGML_TYPES[ggml_type]
    if n_elements % blk:
        raise GGUFError(f"{ggml_type} needs a multiple of {blk} elements, got {n_elements}")
    return n_elements // blk * bsz


def dequantize(data, ggml_type, n_elements=None):
    """Bytes (or uint8 array) of a tensor in ggml_type -> flat float32 array."""
    b = np.frombuffer(data, dtype=np.uint8) if not isinstance(data, np.ndarray) else data
    b = b.reshape(-1)
    if n_elements is None:
        _, blk, bsz = GGML_TYPES[ggml_type]
        n_elements = b.size // bsz * blk
    nbytes = tensor_nbytes(ggml_type, n_elements)
    if b.size < nbytes:
        raise GGUFError(f"{ggml_type} tensor of {n_elements} values needs {nbytes} bytes,"
                        f" got {b.size}")
    b = b[:nbytes]
    if ggml_type == "F32":
        return b.view("<f4").astype(np.float32)
    if ggml_type == "F16":
        return _dq_f16(b)
    if ggml_type == "BF16":
        return _dq_bf16(b)
    if ggml_type in ("F64", "I8", "I16", "I32", "I64"):
        dt = {"F64": "<f8", "I8": "i1", "I16": "<i2", "I32": "<i4", "I64": "<i8"}[ggml_type]
        return b.view(dt).astype(np.float32)
    if ggml_type not in _DEQUANT:
        raise GGUFError(f"decoding {ggml_type} is not supported by gguf.py")
    _, blk, bsz = GGML_TYPES[ggml_type]
    return _DEQUANT[ggml_type](b.reshape(-1, bsz)).reshape(-1).astype(np.float32)


def encode_tensor(array, dtype):
    """numpy array -> (ne list, bytes) in dtype F32 | F16 | BF16 | Q8_0 | Q4_0 | MXFP4."""
    a = np.asarray(array)
    if a.ndim == 0:
        raise GGUFError("tensors need at least one dimension")
    ne = [int(n) for n in reversed(a.shape)]
    x = np.ascontiguousarray(a, dtype=np.float32).reshape(-1)
    dtype = dtype.upper()
    if dtype == "F32":
        return ne, x.astype("<f4").tobytes()
    if dtype == "F16":
        return ne, to_f16_bytes(x)
    if dtype == "BF16":
        return ne, to_bf16_bytes(x)
    if dtype in ("Q8_0", "Q4_0"):
        if ne[0] % 32:
            raise GGUFError(f"{dtype} needs rows (ne[0]) that are a multiple of 32,"
                            f" got {ne[0]}")
        return ne, quantize_q8_0(x) if dtype == "Q8_0" else quantize_q4_0(x)
    if dtype == "MXFP4":
        if ne[0] % 32:
            raise GGUFError(f"MXFP4 needs rows (ne[0]) that are a multiple of 32, got {ne[0]}")
        return ne, quantize_mxfp4(x)
    raise GGUFError(f"cannot encode tensors as {dtype}; use F32, F16, BF16, Q8_0, Q4_0 or MXFP4")


# ----------------------------------------------------------------------------
# writer


class GGUFWriter:
    def __init__(self, path, alignment=DEFAULT_ALIGNMENT):
        self.path = path
        self.alignment = alignment
        self._kv = {}       # key -> (type chain, value)
        self._tensors = []  # (name, ne, type name, bytes)

    def add(self, key, value, type=None):
        """Add (or replace) a metadata key. type: None (inferred), a value type name
        such as "uint32"/"float32"/"string", or "array<T>" (nestable)."""
        if not isinstance(key, str) or not key:
            raise GGUFError("metadata keys must be non-empty strings")
        chain = _parse_type(type) if type is not None else _infer(value)
        if chain[0] == 9 and len(chain) == 1:
            chain = _infer(value)
        _pack_value(chain, value)  # validate now, so errors point at the add() call
        self._kv[key] = (chain, value)
        if key == "general.alignment":
            if chain != [4] or int(value) <= 0 or int(value) % 8:
                raise GGUFError("general.alignment must be a uint32 multiple of 8")
            self.alignment = int(value)

    def add_tensor(self, name, array, dtype="F32"):
        """Add a tensor from a numpy array (shape (rows, cols) -> ne [cols, rows])."""
        ne, data = encode_tensor(array, dtype)
        self.add_tensor_raw(name, ne, dtype.upper(), data)

    def add_tensor_raw(self, name, ne, ggml_type, data):
        """Add already-encoded tensor data: ne[0] fastest, ggml_type e.g. "Q4_K"."""
        if any(t[0] == name for t in self._tensors):
            raise GGUFError(f"duplicate tensor name {name}")
        n = int(np.prod(ne))
        if len(data) != tensor_nbytes(ggml_type, n):
            raise GGUFError(f"tensor {name}: {len(data)} bytes, {ggml_type} {list(ne)} needs"
                            f" {tensor_nbytes(ggml_type, n)}")
        self._tensors.append((name, [int(v) for v in ne], ggml_type, bytes(data)))

    def to_bytes(self):
        al = self.alignment
        if "general.alignment" not in self._kv and al != DEFAULT_ALIGNMENT:
            self._kv["general.alignment"] = ([4], al)
        out = [GGUF_MAGIC, struct.pack("<IQQ", GGUF_VERSION, len(self._tensors), len(self._kv))]
        for k, (chain, v) in self._kv.items():
            out.append(_pack_str(k) + struct.pack("<I", chain[0]) + _pack_value(chain, v))
        off = 0
        offsets = []
        for name, ne, t, data in self._tensors:
            offsets.append(off)
            out.append(_pack_str(name) + struct.pack("<I", len(ne)))
            out.append(struct.pack(f"<{len(ne)}Q", *ne))
            out.append(struct.pack("<IQ", GGML_TYPES[t][0], off))
            off += (len(data) + al - 1) // al * al
        head = b"".join(out)
        pad = (-len(head)) % al
        body = [head, b"\0" * pad]
        for (_, _, _, data), o in zip(self._tensors, offsets):
            body.append(data)
            body.append(b"\0" * ((-len(data)) % al))
        return b"".join(body)

    def write(self, path=None):
        with open(path or self.path, "wb") as f:
            f.write(self.to_bytes())


# ----------------------------------------------------------------------------
# reader


class TensorInfo:
    __slots__ = ("name", "ne", "type", "offset", "nbytes")

    def __init__(self, name, ne, type, offset, nbytes):
        self.name, self.ne, self.type, self.offset, self.nbytes = name, ne, type, offset, nbytes

    @property
    def shape(self):
        """numpy shape (reversed ne)."""
        return tuple(reversed(self.ne))

    def __repr__(self):
        return f"TensorInfo({self.name!r}, ne={self.ne}, {self.type}, off={self.offset})"


class GGUFReader:
    def __init__(self, path):
        self.path = path
        self._buf = np.memmap(path, dtype=np.uint8, mode="r")
        self._o = 0
        self.metadata = {}
        self.types = {}
        self.tensors = {}
        self._parse()

    # --- low-level cursor
    def _take(self, n):
        if n < 0 or self._o + n > self._buf.size:
            raise GGUFError(f"{self.path}: truncated GGUF (need {n} bytes at {self._o})")
        b = self._buf[self._o:self._o + n]
        self._o += n
        return b

    def _u(self, fmt):
        size = struct.calcsize(fmt)
        return struct.unpack(fmt, self._take(size).tobytes())[0]

    def _str(self):
        n = self._u("<Q")
        return self._take(n).tobytes().decode("utf-8", "surrogateescape")

    def _value(self, t, chain):
        chain.append(t)
        if t == 8:
            return self._str()
        if t == 9:
            et = self._u("<I")
            n = self._u("<Q")
            if et in _SCALAR_NP:
                chain.append(et)
                dt = _SCALAR_NP[et]
                a = np.array(self._take(n * dt.itemsize).view(dt))
                return a.astype(bool) if et == 7 else a
            if et == 8:
                chain.append(8)
                return [self._str() for _ in range(n)]
            if et != 9:
                raise GGUFError(f"{self.path}: unknown array element type {et}")
            vals = []
            sub = [9]
            for i in range(n):
                c = []
                vals.append(self._value(9, c))
                if i == 0:
                    sub = c
            if n == 0:
                sub = [9, 5]
            chain.extend(sub)
            return vals
        if t not in _SCALAR_NP:
            raise GGUFError(f"{self.path}: unknown metadata value type {t}")
        v = self._take(_SCALAR_NP[t].itemsize).view(_SCALAR_NP[t])[0]
        if t == 7:
            return bool(v)
        return float(v) if t in (6, 12) else int(v)

    def _parse(self):
        if self._take(4).tobytes() != GGUF_MAGIC:
            raise GGUFError(f"{self.path}: not a GGUF file (bad magic)")
        self.version = self._u("<I")
        if self.version not in (2, 3):
            raise GGUFError(f"{self.path}: unsupported GGUF version {self.version}")
        n_t, n_kv = self._u("<Q"), self._u("<Q")
        for _ in range(n_kv):
            k = self._str()
            t = self._u("<I")
            chain = []
            self.metadata[k] = self._value(t, chain)
            self.types[k] = _type_name(chain)
        self.alignment = int(self.metadata.get("general.alignment", DEFAULT_ALIGNMENT))
        infos = []
        for _ in range(n_t):
            name = self._str()
            nd = self._u("<I")
            if nd > 8:
                raise GGUFError(f"{self.path}: tensor {name} has {nd} dimensions")
            ne = [self._u("<Q") for _ in range(nd)]
            tid = self._u("<I")
            off = self._u("<Q")
            if tid not in GGML_TYPE_NAMES:
                raise GGUFError(f"{self.path}: tensor {name} has unknown ggml type {tid}")
            tname = GGML_TYPE_NAMES[tid]
            infos.append((name, ne, tname, off))
        self.data_offset = (self._o + self.alignment - 1) // self.alignment * self.alignment
        for name, ne, tname, off in infos:
            nbytes = tensor_nbytes(tname, int(np.prod(ne, dtype=np.int64)))
            start = self.data_offset + off
            if start + nbytes > self._buf.size:
                raise GGUFError(f"{self.path}: tensor {name} data runs past the end of file")
            self.tensors[name] = TensorInfo(name, ne, tname, start, nbytes)

    def raw(self, name):
        ti = self._info(name)
        return self._buf[ti.offset:ti.offset + ti.nbytes].tobytes()

    def _info(self, name):
        if name not in self.tensors:
            raise GGUFError(f"{self.path}: no tensor named {name}")
        return self.tensors[name]

    def tensor(self, name):
        """Decoded float32 array with numpy shape reversed(ne)."""
        ti = self._info(name)
        b = self._buf[ti.offset:ti.offset + ti.nbytes]
        n = int(np.prod(ti.ne, dtype=np.int64))
        return dequantize(np.array(b), ti.type, n).reshape(ti.shape)

    def get(self, key, default=None):
        return self.metadata.get(key, default)


def _summary(v):
    if isinstance(v, np.ndarray) or isinstance(v, list):
        head = list(v[:6])
        return f"[{len(v)}] {head}{' ...' if len(v) > 6 else ''}"
    return repr(v)


def main(argv):
    if len(argv) != 2 or argv[1] in ("-h", "--help"):
        print(__doc__)
        return 0 if len(argv) == 2 else 2
    r = GGUFReader(argv[1])
    print(f"GGUF v{r.version}, {len(r.metadata)} keys, {len(r.tensors)} tensors,"
          f" alignment {r.alignment}")
    for k, v in r.metadata.items():
        print(f"  {k} ({r.types[k]}) = {_summary(v)}")
    for ti in r.tensors.values():
        print(f"  {ti.name:32s} {ti.type:5s} ne={ti.ne}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
