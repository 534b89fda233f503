#!/usr/bin/env python3
"""Writes real-architecture ONNX models with random weights (fixed seeds), built with onnx.helper
only (no torch needed): ResNet-50 (224 x 224, batch symbolic) and BERT-base (12 layers, hidden
768, 12 heads, sequence 128, batch symbolic; the encoder on embeddings: input_ids and the
embedding lookup are left out so every input is f32).

The files are ~100 MB and ~340 MB, so they go to a cache directory, not the repository:
    make_zoo.py [--out DIR] [--models resnet50,bert]
DIR defaults to $TENSORC_CACHE/models or ~/.cache/tensorc/models. Opset 17.
"""
import argparse
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_onnx_models import BATCH, OPSET, default_out_dir  # noqa: E402


class Builder:
    """Nodes and initializers; every helper returns its output's name."""

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.nodes, self.initializers, self.count = [], [], 0

    def name(self, hint):
        self.count += 1
        return f"{hint}_{self.count}"

    def tensor(self, hint, array):
        name = self.name(hint)
        self.initializers.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def random(self, hint, shape, scale):
        return self.tensor(hint, (self.rng.standard_normal(shape) * scale).astype(np.float32))

    def node(self, op, inputs, hint, **attrs):
        out = self.name(hint)
        self.nodes.append(helper.make_node(op, inputs, [out], name=out, **attrs))
        return out

    def model(self, name, inputs, outputs, doc):
        graph = helper.make_graph(self.nodes, name, inputs, outputs, self.initializers,
                                  doc_string=doc)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                                  producer_name="tensorc models/make_zoo.py")
        model.ir_version = 8
        return model


# ---- ResNet-50 ----------------------------------------------------------------------------------

def resnet50():
    b = Builder(50)

    def conv_bn(x, cin, cout, k, stride, relu):
        w = b.random("w", (cout, cin, k, k), np.sqrt(2.0 / (cin * k * k)))
        y = b.node("Conv", [x, w], "conv", kernel_shape=[k, k], strides=[stride, stride],
                   pads=[k // 2] * 4)
        gamma = b.tensor("gamma", (1 + 0.1 * b.rng.standard_normal(cout)).astype(np.float32))
        beta = b.tensor("beta", (0.1 * b.rng.standard_normal(cout)).astype(np.float32))
        mean = b.tensor("mean", (0.1 * b.rng.standard_normal(cout)).astype(np.float32))
        var = b.tensor("var", (1 + 0.1 * b.rng.random(cout)).astype(np.float32))
        y = b.node("BatchNormalization", [y, gamma, beta, mean, var], "bn", epsilon=1e-5)
        return b.node("Relu", [y], "relu") if relu else y

    x = conv_bn("x", 3, 64, 7, 2, True)
    x = b.node("MaxPool", [x], "maxpool", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    cin = 64
    for stage, (width, blocks) in enumerate([(64, 3), (128, 4), (256, 6), (512, 3)]):
        for block in range(blocks):
            stride = 2 if block == 0 and stage > 0 else 1
            y = conv_bn(x, cin, width, 1, 1, True)
            y = conv_bn(y, width, width, 3, stride, True)
            y = conv_bn(y, width, width * 4, 1, 1, False)
            shortcut = x if block > 0 else conv_bn(x, cin, width * 4, 1, stride, False)
            x = b.node("Relu", [b.node("Add", [y, shortcut], "add")], "relu")
            cin = width * 4
    x = b.node("GlobalAveragePool", [x], "gap")
    x = b.node("Flatten", [x], "flatten", axis=1)
    w = b.random("fc_w", (1000, 2048), np.sqrt(1.0 / 2048))
    bias = b.tensor("fc_b", np.zeros(1000, np.float32))
    x = b.node("Gemm", [x, w, bias], "fc", transB=1)
    return b.model("resnet50",
                   [helper.make_tensor_value_info("x", TensorProto.FLOAT, [BATCH, 3, 224, 224])],
                   [helper.make_tensor_value_info(x, TensorProto.FLOAT, [BATCH, 1000])],
                   "ResNet-50 v1.5 (stride on the 3x3 conv), random weights, batch norms kept.")


# ---- BERT-base encoder --------------------------------------------------------------------------

SEQ, HIDDEN, HEADS, LAYERS, FFN = 128, 768, 12, 12, 3072


def bert():
    b = Builder(110)
    half = b.tensor("half", np.array(0.5, np.float32))
    one = b.tensor("one", np.array(1.0, np.float32))
    sqrt2 = b.tensor("sqrt2", np.array(np.sqrt(2.0), np.float32))
    scale = b.tensor("scale", np.array(np.sqrt(HIDDEN // HEADS), np.float32))
    heads_shape = b.tensor("heads_shape", np.array([0, SEQ, HEADS, HIDDEN // HEADS], np.int64))
    merged_shape = b.tensor("merged_shape", np.array([0, SEQ, HIDDEN], np.int64))

    def linear(x, n_in, n_out):
        w = b.random("w", (n_in, n_out), 0.02)
        y = b.node("MatMul", [x, w], "matmul")
        return b.node("Add", [y, b.tensor("b", np.zeros(n_out, np.float32))], "bias")

    def layer_norm(x):
        g = b.tensor("ln_g", np.ones(HIDDEN, np.float32))
        beta = b.tensor("ln_b", np.zeros(HIDDEN, np.float32))
        return b.node("LayerNormalization", [x, g, beta], "ln", axis=-1, epsilon=1e-12)

    def heads(x):  # [B, S, H] -> [B, heads, S, d]
        return b.node("Transpose", [b.node("Reshape", [x, heads_shape], "split")], "heads",
                      perm=[0, 2, 1, 3])

    x = layer_norm("x")
    for _ in range(LAYERS):
        q, k, v = (heads(linear(x, HIDDEN, HIDDEN)) for _ in range(3))
        kt = b.node("Transpose", [k], "kt", perm=[0, 1, 3, 2])
        scores = b.node("Div", [b.node("MatMul", [q, kt], "qk"), scale], "scaled")
        scores = b.node("Add", [scores, "mask"], "masked")
        probs = b.node("Softmax", [scores], "softmax", axis=-1)
        ctx = b.node("Transpose", [b.node("MatMul", [probs, v], "ctx")], "merge", perm=[0, 2, 1, 3])
        ctx = b.node("Reshape", [ctx, merged_shape], "merged")
        x = layer_norm(b.node("Add", [x, linear(ctx, HIDDEN, HIDDEN)], "res1"))
        h = linear(x, HIDDEN, FFN)
        erf = b.node("Erf", [b.node("Div", [h, sqrt2], "gelu_div")], "gelu_erf")
        h = b.node("Mul", [b.node("Mul", [h, b.node("Add", [erf, one], "gelu_add")], "gelu_mul"),
                           half], "gelu")
        x = layer_norm(b.node("Add", [x, linear(h, FFN, HIDDEN)], "res2"))
    return b.model("bert_base",
                   [helper.make_tensor_value_info("x", TensorProto.FLOAT, [BATCH, SEQ, HIDDEN]),
                    helper.make_tensor_value_info("mask", TensorProto.FLOAT, [BATCH, 1, 1, SEQ])],
                   [helper.make_tensor_value_info(x, TensorProto.FLOAT, [BATCH, SEQ, HIDDEN])],
                   "BERT-base encoder (12 x [self-attention, GELU FFN], post-LN) on embeddings; "
                   "mask is additive (0 or -10000).")


MODELS = {"resnet50": resnet50, "bert": bert}


def build(names, out_dir, force=False):
    """Writes <out_dir>/<name>.onnx for each name (unless present); returns the paths."""
    os.makedirs(out_dir, exist_ok=True)
    paths = {}
    for name in names:
        path = os.path.join(out_dir, f"{name}.onnx")
        if force or not os.path.exists(path) or os.path.getmtime(path) < os.path.getmtime(__file__):
            model = MODELS[name]()
            onnx.checker.check_model(model)
            onnx.save(model, path)
            print(f"make_zoo: wrote {path}", file=sys.stderr)
        paths[name] = path
    return paths


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=default_out_dir())
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--force", action="store_true")
    args = parser.parse_args()
    build([m for m in args.models.split(",") if m], args.out, args.force)
    return 0


if __name__ == "__main__":
    sys.exit(main())
