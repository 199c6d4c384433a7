"""safetensors_io.py - safetensors files as tools/hf.py and tools/hf_families.py write and read
them (numpy only): float tensors encoded as F32/F16/BF16, raw U8 bytes, sharded checkpoints
through model.safetensors.index.json."""

import json
import os
import struct

import numpy as np

import gguf

ST_DTYPES = {"F32": 4, "F16": 2, "BF16": 2}


def encode(array, dtype):
    a = np.ascontiguousarray(array, dtype=np.float32)
    if dtype == "F32":
        return a.astype("<f4").tobytes()
    if dtype == "F16":
        return gguf.to_f16_bytes(a)
    if dtype == "BF16":
        return gguf.to_bf16_bytes(a)
    raise ValueError(f"unknown dtype {dtype}")


def write_safetensors(path, tensors, metadata=None):
    """tensors: list of (name, shape, dtype, raw bytes). Header padded to 8 bytes."""
    header = {}
    if metadata is not None:
        header["__metadata__"] = metadata
    off = 0
    for name, shape, dtype, data in tensors:
        n = int(np.prod(shape)) if shape else 1
        assert len(data) == n * {**ST_DTYPES, "U8": 1}[dtype], name
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [off, off + len(data)]}
        off += len(data)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for _, _, _, data in tensors:
            f.write(data)


def read_safetensors(path):
    """-> {name: (dtype, shape, raw bytes)}"""
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack_from("<Q", blob, 0)
    header = json.loads(blob[8:8 + n])
    base = 8 + n
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        b, t = e["data_offsets"]
        out[name] = (e["dtype"], tuple(e["shape"]), blob[base + b:base + t])
    return out


def read_checkpoint(d):
    index = os.path.join(d, "model.safetensors.index.json")
    if os.path.exists(index):
        with open(index) as f:
            wm = json.load(f)["weight_map"]
        shards = {fn: read_safetensors(os.path.join(d, fn)) for fn in sorted(set(wm.values()))}
        return {name: shards[fn][name] for name, fn in wm.items()}
    return read_safetensors(os.path.join(d, "model.safetensors"))


def to_f32(dtype, shape, data):
    if dtype == "F32":
        a = np.frombuffer(data, dtype="<f4")
    elif dtype == "F16":
        a = np.frombuffer(data, dtype="<f2").astype(np.float32)
    else:
        a = (np.frombuffer(data, dtype="<u2").astype(np.uint32) << 16).view(np.float32)
    return a.reshape(shape)
