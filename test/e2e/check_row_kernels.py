#!/usr/bin/env python3
"""Row kernels (a reduction and the pointwise stages over its rows in one kernel: layer norm,
softmax, argmax, an embedding lookup with the first layer norm) on both targets, against
onnxruntime.

The CUDA renderer keeps a row in registers when every stage loops over one inner dim of the same
constant extent, of at most 16 slots per thread (a slot: 4 consecutive elements, loaded and
stored as vectors, when the extent is a multiple of 4; else one element): the cases cover
extents that fill the block, extents with a tail (not a multiple of the block), one row per
block of a few threads, single-element slots, f16 stored results that later stages read back
rounded, and rows too long for registers (the block-strided loops). Each case runs as check_sampling_ops.py runs its own: compiled with
--fallback=error for the CPU (every host variant) and for CUDA (kernels.cu on the CPU emulation
of check_cuda_emulated.py), and on the interpreter. Prints one line per case and
`N passed, M failed, K skipped`.
"""
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import check_sampling_ops  # noqa: E402
from check_sampling_ops import node_model  # noqa: E402


def layer_norm(rows, width, dtype):
    def build(rng):
        x = (rng.standard_normal((rows, width)) * 3 + 1).astype(dtype)
        scale = rng.standard_normal(width).astype(dtype)
        bias = rng.standard_normal(width).astype(dtype)
        model = node_model("LayerNormalization", {"x": x}, ["y"], {"axis": -1, "epsilon": 1e-5},
                           {"scale": scale, "bias": bias})
        return model, {"x": x}
    return build


def softmax(rows, width):
    def build(rng):
        x = (rng.standard_normal((rows, width)) * 4).astype(np.float32)
        return node_model("Softmax", {"x": x}, ["y"], {"axis": -1}), {"x": x}
    return build


def argmax(rows, width):
    def build(rng):
        # Few distinct values: ties, which the lower index wins.
        x = rng.integers(0, 5, (rows, width)).astype(np.float32)
        return node_model("ArgMax", {"x": x}, ["y"], {"axis": 1, "keepdims": 0}), {"x": x}
    return build


def embedding_layer_norm(vocab, positions, width, seq):
    """Token and position embeddings (negative ids wrapped as the exporter writes them), their
    sum and its layer norm: the first kernel of GPT-2-like models."""
    def build(rng):
        ids = rng.integers(-vocab, vocab, (1, seq)).astype(np.int64)
        consts = {
            "wte": (rng.standard_normal((vocab, width)) * 0.5).astype(np.float32),
            "wpe": (rng.standard_normal((positions, width)) * 0.5).astype(np.float32),
            "pos": np.arange(seq, dtype=np.int64)[None],
            "zero": np.array(0, np.int64), "n": np.array(vocab, np.int64),
            "g": rng.standard_normal(width).astype(np.float32),
            "b": rng.standard_normal(width).astype(np.float32)}
        nodes = [helper.make_node("Less", ["ids", "zero"], ["neg"]),
                 helper.make_node("Add", ["ids", "n"], ["wrapped"]),
                 helper.make_node("Where", ["neg", "wrapped", "ids"], ["idx"]),
                 helper.make_node("Gather", ["wte", "idx"], ["te"], axis=0),
                 helper.make_node("Gather", ["wpe", "pos"], ["pe"], axis=0),
                 helper.make_node("Add", ["te", "pe"], ["x"]),
                 helper.make_node("LayerNormalization", ["x", "g", "b"], ["y"], axis=-1)]
        graph = helper.make_graph(
            nodes, "case", [helper.make_tensor_value_info("ids", TensorProto.INT64, [1, seq])],
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, seq, width]),
             helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, seq, width])],
            [numpy_helper.from_array(v, k) for k, v in consts.items()])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
        model.ir_version = 8
        return model, {"ids": ids}
    return build


def cases():
    return {
        "layer_norm_768_f32": layer_norm(6, 768, np.float32),      # 192 threads x 4, no tail
        "layer_norm_200_f16": layer_norm(5, 200, np.float16),      # 64 threads x 4, 14 idle
        "layer_norm_20_f32": layer_norm(3, 20, np.float32),        # one slot, 27 threads idle
        "layer_norm_20000_f32": layer_norm(2, 20000, np.float32),  # 1024 threads x 5 slots of 4
        "layer_norm_250_f16": layer_norm(3, 250, np.float16),      # single elements, a tail
        "layer_norm_20002_f32": layer_norm(2, 20002, np.float32),  # too long: strided loops
        "softmax_1000": softmax(4, 1000),                          # 256 threads x 4, a tail
        "argmax_300": argmax(7, 300),
        "embedding_layer_norm": embedding_layer_norm(97, 40, 96, 24),
    }


if __name__ == "__main__":
    sys.exit(check_sampling_ops.main(cases, __doc__))
