"""Minimal safetensors reader/writer for numpy arrays (used by the model scripts and tests)."""
import json
import struct

import numpy as np

_DTYPES = {
    "F64": np.float64, "F32": np.float32, "F16": np.float16, "I64": np.int64, "I32": np.int32,
    "I16": np.int16, "I8": np.int8, "U8": np.uint8, "BOOL": np.bool_, "U16": np.uint16,
    "U32": np.uint32, "U64": np.uint64,
}
_NAMES = {np.dtype(v): k for k, v in _DTYPES.items()}
# numpy has no bfloat16: such tensors are read as their uint16 bit patterns (see bf16_to_f32).
_DTYPES["BF16"] = np.uint16


def bf16_to_f32(bits):
    """The float32 values of bfloat16 bit patterns (as load() returns them)."""
    return (bits.astype(np.uint32) << 16).view(np.float32)


def save(path, tensors, bf16=()):
    """Writes a dict name -> numpy array (C order), data section aligned to 64 bytes. Tensors
    named in `bf16` are uint16 arrays of bfloat16 bit patterns, stored as BF16."""
    header, offset, blobs = {}, 0, []
    for name, array in tensors.items():
        array = np.ascontiguousarray(array)
        data = array.tobytes()
        dtype = "BF16" if name in bf16 else _NAMES[array.dtype]
        header[name] = {"dtype": dtype, "shape": list(array.shape),
                        "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
        blobs.append(data)
    text = json.dumps(header, separators=(",", ":"))
    text += " " * ((-(8 + len(text))) % 64)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text.encode())
        for blob in blobs:
            f.write(blob)


def load(path):
    """Reads a safetensors file into a dict name -> numpy array."""
    with open(path, "rb") as f:
        raw = f.read()
    (length,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + length])
    base = 8 + length
    result = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        begin, end = entry["data_offsets"]
        array = np.frombuffer(raw[base + begin:base + end], dtype=_DTYPES[entry["dtype"]])
        result[name] = array.reshape(entry["shape"]).copy()
    return result


def dtypes(path):
    """The safetensors dtype name ("F32", "BF16", ...) of each tensor in the file."""
    with open(path, "rb") as f:
        (length,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(length))
    return {name: entry["dtype"] for name, entry in header.items() if name != "__metadata__"}
