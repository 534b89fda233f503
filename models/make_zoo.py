#!/usr/bin/env python3
"""Writes real-architecture ONNX models with random weights (fixed seeds), built with onnx.helper
only (no torch needed), batch symbolic ("s0") in every one:

- resnet50: ResNet-50 v1.5 (stride on the 3x3 conv), 224 x 224, batch norms kept.
- mobilenetv2: torchvision's MobileNetV2 (width 1.0): inverted residual blocks, ReLU6 as
  Clip(0, 6), depthwise 3x3 convs (group = channels), 224 x 224.
- efficientnet_b0: torchvision's EfficientNet-B0: MBConv blocks with 3x3 and 5x5 depthwise convs,
  squeeze-and-excitation and SiLU (x * sigmoid(x)), 224 x 224.
- bert: BERT-base encoder (12 post-LN layers, hidden 768, 12 heads, sequence 128, exact GELU) on
  embeddings: input_ids and the embedding lookup are left out, so every input is f32 (x and an
  additive mask).
- gpt2: GPT-2 small (12 pre-LN layers, hidden 768, 12 heads, sequence 128, vocabulary 50257):
  token and learned position embeddings, fused QKV projection split three ways, causal mask,
  GELU with the tanh approximation, final LayerNorm and an LM head tied to the token embedding
  (one initializer, `wte.weight`, read by the Gather and, transposed, by the last MatMul).
  Input `input_ids` i64[s0, 128]; output logits f32[s0, 128, 50257].

Initializers are named like the state dicts of the PyTorch modules they mirror (torchvision
for the convnets, Hugging Face for GPT-2 and, in spirit, BERT), so bench/gpu.py's torch twins
load them with load_state_dict. Linear weights read by MatMul are stored [in, out] (GPT-2's
Conv1D layout); those read by Gemm(transB=1) [out, in] (torch.nn.Linear's).

Variants, for the GPU benchmark kit (bench/gpu.py): `fold_bn` folds each batch norm into the
convolution before it at generation time (numpy, float32; the same random draws), and
`dtype="f16"` casts every float initializer, input and output to float16. Same seed and options
give the same bytes on any machine with the same numpy (bench/gpu.py checks that with sha256).

The f32 files are ~100 MB (resnet50), ~14 MB (mobilenetv2), ~21 MB (efficientnet_b0), ~340 MB
(bert) and ~500 MB (gpt2), so they go to a cache directory, not the repository:
    make_zoo.py [--out DIR] [--models resnet50,mobilenetv2,bert,gpt2] [--dtype f16] [--fold-bn]
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
    """Nodes and named float32 arrays (initializers); every helper returns its output's name."""

    def __init__(self, seed, fold_bn=False):
        self.rng = np.random.default_rng(seed)
        self.fold_bn = fold_bn
        self.nodes, self.arrays, self.count = [], {}, 0

    def name(self, hint):
        self.count += 1
        return f"{hint}_{self.count}"

    def param(self, name, array):
        """An initializer under exactly `name` (a state-dict key)."""
        if name in self.arrays:
            raise ValueError(f"initializer '{name}' defined twice")
        self.arrays[name] = np.ascontiguousarray(array)
        return name

    def const(self, hint, array):
        """A constant under a fresh name."""
        return self.param(self.name(hint), array)

    def random(self, name, shape, scale):
        return self.param(name, (self.rng.standard_normal(shape) * scale).astype(np.float32))

    def node(self, op, inputs, hint, **attrs):
        out = self.name(hint)
        self.nodes.append(helper.make_node(op, inputs, [out], name=out, **attrs))
        return out

    def conv_bn(self, prefix, x, cin, cout, k, stride, bn, groups=1):
        """Conv (no bias, He-normal weights) then an inference batch norm with random statistics,
        or, with fold_bn, one Conv with the batch norm folded into its weights and bias. `prefix`
        and `bn` are the state-dict prefixes of the conv and of its batch norm."""
        fan_in = cin // groups * k * k
        w = (self.rng.standard_normal((cout, cin // groups, k, k)) *
             np.sqrt(2.0 / fan_in)).astype(np.float32)
        gamma = (1 + 0.1 * self.rng.standard_normal(cout)).astype(np.float32)
        beta = (0.1 * self.rng.standard_normal(cout)).astype(np.float32)
        mean = (0.1 * self.rng.standard_normal(cout)).astype(np.float32)
        var = (1 + 0.1 * self.rng.random(cout)).astype(np.float32)
        attrs = dict(kernel_shape=[k, k], strides=[stride, stride], pads=[k // 2] * 4)
        if groups != 1:
            attrs["group"] = groups
        if self.fold_bn:
            scale = (gamma / np.sqrt(var + np.float32(1e-5))).astype(np.float32)
            inputs = [x, self.param(f"{prefix}.weight", w * scale[:, None, None, None]),
                      self.param(f"{prefix}.bias", beta - mean * scale)]
            return self.node("Conv", inputs, "conv", **attrs)
        y = self.node("Conv", [x, self.param(f"{prefix}.weight", w)], "conv", **attrs)
        stats = [self.param(f"{bn}.{key}", value) for key, value in
                 (("weight", gamma), ("bias", beta), ("running_mean", mean), ("running_var", var))]
        return self.node("BatchNormalization", [y] + stats, "bn", epsilon=1e-5)

    def model(self, name, inputs, outputs, doc, dtype="f32"):
        """The ModelProto and its initializers as numpy arrays (float ones cast to `dtype`).
        inputs/outputs: (name, TensorProto elem type, shape)."""
        if dtype not in ("f32", "f16"):
            raise ValueError(f"dtype {dtype}: f32 or f16")
        float_type = TensorProto.FLOAT16 if dtype == "f16" else TensorProto.FLOAT
        arrays = {k: v.astype(np.float16) if dtype == "f16" and v.dtype == np.float32 else v
                  for k, v in self.arrays.items()}

        def info(name, elem, shape):
            return helper.make_tensor_value_info(
                name, float_type if elem == TensorProto.FLOAT else elem, shape)

        graph = helper.make_graph(self.nodes, name, [info(*i) for i in inputs],
                                  [info(*o) for o in outputs],
                                  [numpy_helper.from_array(v, k) for k, v in arrays.items()],
                                  doc_string=doc)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                                  producer_name="tensorc models/make_zoo.py")
        model.ir_version = 8
        return model, arrays


def relu6(b, x):
    return b.node("Clip", [x, "relu6_min", "relu6_max"], "relu6")


def classifier(b, x, prefix, n_in, n_out):
    """GlobalAveragePool, Flatten, Linear (Gemm transB=1, [out, in] weights)."""
    x = b.node("Flatten", [b.node("GlobalAveragePool", [x], "gap")], "flatten", axis=1)
    w = b.random(f"{prefix}.weight", (n_out, n_in), np.sqrt(1.0 / n_in))
    bias = b.param(f"{prefix}.bias", np.zeros(n_out, np.float32))
    return b.node("Gemm", [x, w, bias], "fc", transB=1)


IMAGE = [BATCH, 3, 224, 224]


# ---- ResNet-50 ----------------------------------------------------------------------------------

RESNET50_STAGES = [(64, 3), (128, 4), (256, 6), (512, 3)]  # (width, blocks); expansion 4


def resnet50(dtype="f32", fold_bn=False):
    b = Builder(50, fold_bn)
    relu = lambda y: b.node("Relu", [y], "relu")  # noqa: E731
    x = relu(b.conv_bn("conv1", "x", 3, 64, 7, 2, "bn1"))
    x = b.node("MaxPool", [x], "maxpool", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    cin = 64
    for stage, (width, blocks) in enumerate(RESNET50_STAGES):
        for block in range(blocks):
            p = f"layer{stage + 1}.{block}"
            stride = 2 if block == 0 and stage > 0 else 1
            y = relu(b.conv_bn(f"{p}.conv1", x, cin, width, 1, 1, f"{p}.bn1"))
            y = relu(b.conv_bn(f"{p}.conv2", y, width, width, 3, stride, f"{p}.bn2"))
            y = b.conv_bn(f"{p}.conv3", y, width, width * 4, 1, 1, f"{p}.bn3")
            shortcut = x if block > 0 else b.conv_bn(f"{p}.downsample.0", x, cin, width * 4, 1,
                                                     stride, f"{p}.downsample.1")
            x = relu(b.node("Add", [y, shortcut], "add"))
            cin = width * 4
    x = classifier(b, x, "fc", 2048, 1000)
    return b.model("resnet50", [("x", TensorProto.FLOAT, IMAGE)],
                   [(x, TensorProto.FLOAT, [BATCH, 1000])],
                   "ResNet-50 v1.5 (stride on the 3x3 conv), random weights, batch norms "
                   + ("folded into the convs." if fold_bn else "kept."), dtype)


# ---- MobileNetV2 --------------------------------------------------------------------------------

# torchvision's inverted residual settings: (expansion t, output channels c, repeats n, stride s).
MOBILENETV2_SETTINGS = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2),
                        (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)]
MOBILENETV2_STEM, MOBILENETV2_LAST = 32, 1280


def mobilenetv2(dtype="f32", fold_bn=False):
    b = Builder(2, fold_bn)
    b.param("relu6_min", np.array(0.0, np.float32))
    b.param("relu6_max", np.array(6.0, np.float32))
    x = relu6(b, b.conv_bn("features.0.0", "x", 3, MOBILENETV2_STEM, 3, 2, "features.0.1"))
    cin, index = MOBILENETV2_STEM, 1
    for t, c, n, s in MOBILENETV2_SETTINGS:
        for i in range(n):
            p, stride, hidden = f"features.{index}.conv", s if i == 0 else 1, cin * t
            y, layer = x, 0
            if t != 1:  # 1x1 expansion
                y = relu6(b, b.conv_bn(f"{p}.0.0", y, cin, hidden, 1, 1, f"{p}.0.1"))
                layer = 1
            y = relu6(b, b.conv_bn(f"{p}.{layer}.0", y, hidden, hidden, 3, stride,
                                   f"{p}.{layer}.1", groups=hidden))  # depthwise
            y = b.conv_bn(f"{p}.{layer + 1}", y, hidden, c, 1, 1, f"{p}.{layer + 2}")  # linear
            x = b.node("Add", [x, y], "residual") if stride == 1 and cin == c else y
            cin, index = c, index + 1
    x = relu6(b, b.conv_bn(f"features.{index}.0", x, cin, MOBILENETV2_LAST, 1, 1,
                           f"features.{index}.1"))
    x = classifier(b, x, "classifier.1", MOBILENETV2_LAST, 1000)  # dropout: identity at inference
    return b.model("mobilenetv2", [("x", TensorProto.FLOAT, IMAGE)],
                   [(x, TensorProto.FLOAT, [BATCH, 1000])],
                   "MobileNetV2 (torchvision layout, width 1.0), random weights, batch norms "
                   + ("folded into the convs." if fold_bn else "kept."), dtype)


# ---- EfficientNet-B0 ----------------------------------------------------------------------------

# torchvision's MBConv settings: (expansion, kernel, stride, input channels, output channels,
# layers). Each block: 1x1 expansion (unless 1), depthwise k x k, squeeze-and-excitation (mean
# over the image, 1x1 convs to max(1, input / 4) channels and back, SiLU then sigmoid, scaling the
# channels), 1x1 projection; a residual where the shape stays. SiLU is x * sigmoid(x), as
# torch.onnx writes it.
EFFICIENTNET_B0_SETTINGS = [(1, 3, 1, 32, 16, 1), (6, 3, 2, 16, 24, 2), (6, 5, 2, 24, 40, 2),
                            (6, 3, 2, 40, 80, 3), (6, 5, 1, 80, 112, 3), (6, 5, 2, 112, 192, 4),
                            (6, 3, 1, 192, 320, 1)]
EFFICIENTNET_B0_STEM, EFFICIENTNET_B0_LAST = 32, 1280


def silu(b, x):
    return b.node("Mul", [x, b.node("Sigmoid", [x], "sigmoid")], "silu")


def conv1x1_bias(b, prefix, x, cin, cout):
    w = b.random(f"{prefix}.weight", (cout, cin, 1, 1), np.sqrt(2.0 / cin))
    bias = b.param(f"{prefix}.bias", (0.1 * b.rng.standard_normal(cout)).astype(np.float32))
    return b.node("Conv", [x, w, bias], "conv", kernel_shape=[1, 1])


def efficientnet_b0(dtype="f32", fold_bn=False):
    b = Builder(7, fold_bn)
    x = silu(b, b.conv_bn("features.0.0", "x", 3, EFFICIENTNET_B0_STEM, 3, 2, "features.0.1"))
    for stage, (t, k, s, cin, cout, layers) in enumerate(EFFICIENTNET_B0_SETTINGS):
        for i in range(layers):
            p, c_in, stride = f"features.{stage + 1}.{i}.block", cin if i == 0 else cout, \
                s if i == 0 else 1
            hidden, y, layer = c_in * t, x, 0
            if t != 1:  # 1x1 expansion
                y = silu(b, b.conv_bn(f"{p}.0.0", y, c_in, hidden, 1, 1, f"{p}.0.1"))
                layer = 1
            y = silu(b, b.conv_bn(f"{p}.{layer}.0", y, hidden, hidden, k, stride,
                                  f"{p}.{layer}.1", groups=hidden))  # depthwise
            squeeze = max(1, c_in // 4)
            se = b.node("ReduceMean", [y], "se_mean", axes=[2, 3], keepdims=1)
            se = silu(b, conv1x1_bias(b, f"{p}.{layer + 1}.fc1", se, hidden, squeeze))
            se = b.node("Sigmoid", [conv1x1_bias(b, f"{p}.{layer + 1}.fc2", se, squeeze, hidden)],
                        "se_gate")
            y = b.node("Mul", [y, se], "se_scale")
            y = b.conv_bn(f"{p}.{layer + 2}.0", y, hidden, cout, 1, 1, f"{p}.{layer + 2}.1")
            x = b.node("Add", [y, x], "residual") if stride == 1 and c_in == cout else y
    x = silu(b, b.conv_bn("features.8.0", x, EFFICIENTNET_B0_SETTINGS[-1][4],
                          EFFICIENTNET_B0_LAST, 1, 1, "features.8.1"))
    x = classifier(b, x, "classifier.1", EFFICIENTNET_B0_LAST, 1000)  # dropout: identity
    return b.model("efficientnet_b0", [("x", TensorProto.FLOAT, IMAGE)],
                   [(x, TensorProto.FLOAT, [BATCH, 1000])],
                   "EfficientNet-B0 (torchvision layout), random weights, batch norms "
                   + ("folded into the convs." if fold_bn else "kept."), dtype)


# ---- Transformers: shared pieces ----------------------------------------------------------------

SEQ, HIDDEN, HEADS, LAYERS, FFN = 128, 768, 12, 12, 3072
HEAD_DIM = HIDDEN // HEADS


def dense(b, prefix, x, n_in, n_out, scale=0.02, bias_scale=0.0):
    """x @ W + b with W [n_in, n_out] (MatMul then Add, as torch.onnx exports a Linear)."""
    w = b.random(f"{prefix}.weight", (n_in, n_out), scale)
    bias = (b.rng.standard_normal(n_out) * bias_scale).astype(np.float32) if bias_scale else \
        np.zeros(n_out, np.float32)
    y = b.node("MatMul", [x, w], "matmul")
    return b.node("Add", [y, b.param(f"{prefix}.bias", bias)], "bias")


def layer_norm(b, prefix, x, eps, random=False):
    g = (1 + 0.1 * b.rng.standard_normal(HIDDEN)).astype(np.float32) if random else \
        np.ones(HIDDEN, np.float32)
    beta = (0.1 * b.rng.standard_normal(HIDDEN)).astype(np.float32) if random else \
        np.zeros(HIDDEN, np.float32)
    return b.node("LayerNormalization",
                  [x, b.param(f"{prefix}.weight", g), b.param(f"{prefix}.bias", beta)], "ln",
                  axis=-1, epsilon=eps)


def split_heads(b, x, shape):  # [B, S, H] -> [B, heads, S, d]
    return b.node("Transpose", [b.node("Reshape", [x, shape], "split")], "heads",
                  perm=[0, 2, 1, 3])


def merge_heads(b, ctx, shape):  # [B, heads, S, d] -> [B, S, H]
    return b.node("Reshape", [b.node("Transpose", [ctx], "merge", perm=[0, 2, 1, 3]), shape],
                  "merged")


# ---- BERT-base encoder --------------------------------------------------------------------------

def bert(dtype="f32", fold_bn=False):
    b = Builder(110)
    half = b.const("half", np.array(0.5, np.float32))
    one = b.const("one", np.array(1.0, np.float32))
    sqrt2 = b.const("sqrt2", np.array(np.sqrt(2.0), np.float32))
    scale = b.const("scale", np.array(np.sqrt(HEAD_DIM), np.float32))
    heads_shape = b.const("heads_shape", np.array([0, SEQ, HEADS, HEAD_DIM], np.int64))
    merged_shape = b.const("merged_shape", np.array([0, SEQ, HIDDEN], np.int64))

    x = layer_norm(b, "embeddings.LayerNorm", "x", 1e-12)
    for i in range(LAYERS):
        p = f"encoder.layer.{i}"
        q, k, v = (split_heads(b, dense(b, f"{p}.attention.self.{n}", x, HIDDEN, HIDDEN),
                               heads_shape) for n in ("query", "key", "value"))
        kt = b.node("Transpose", [k], "kt", perm=[0, 1, 3, 2])
        scores = b.node("Div", [b.node("MatMul", [q, kt], "qk"), scale], "scaled")
        scores = b.node("Add", [scores, "mask"], "masked")
        probs = b.node("Softmax", [scores], "softmax", axis=-1)
        ctx = merge_heads(b, b.node("MatMul", [probs, v], "ctx"), merged_shape)
        attn = dense(b, f"{p}.attention.output.dense", ctx, HIDDEN, HIDDEN)
        x = layer_norm(b, f"{p}.attention.output.LayerNorm", b.node("Add", [x, attn], "res1"),
                       1e-12)
        h = dense(b, f"{p}.intermediate.dense", x, HIDDEN, FFN)
        erf = b.node("Erf", [b.node("Div", [h, sqrt2], "gelu_div")], "gelu_erf")
        h = b.node("Mul", [b.node("Mul", [h, b.node("Add", [erf, one], "gelu_add")], "gelu_mul"),
                           half], "gelu")
        x = layer_norm(b, f"{p}.output.LayerNorm",
                       b.node("Add", [x, dense(b, f"{p}.output.dense", h, FFN, HIDDEN)], "res2"),
                       1e-12)
    return b.model("bert_base",
                   [("x", TensorProto.FLOAT, [BATCH, SEQ, HIDDEN]),
                    ("mask", TensorProto.FLOAT, [BATCH, 1, 1, SEQ])],
                   [(x, TensorProto.FLOAT, [BATCH, SEQ, HIDDEN])],
                   "BERT-base encoder (12 x [self-attention, GELU FFN], post-LN) on embeddings; "
                   "mask is additive (0 or -10000).", dtype)


# ---- GPT-2 small --------------------------------------------------------------------------------

VOCAB, POSITIONS = 50257, 1024
GPT2_MASK_VALUE = -1e4  # Hugging Face GPT-2's masked_bias: where(causal, scores, -1e4)


def gpt2(dtype="f32", fold_bn=False):
    b = Builder(124)
    half = b.const("half", np.array(0.5, np.float32))
    one = b.const("one", np.array(1.0, np.float32))
    three = b.const("three", np.array(3.0, np.float32))
    cubic = b.const("gelu_cubic", np.array(0.044715, np.float32))
    sqrt_2_pi = b.const("gelu_scale", np.array(np.sqrt(2.0 / np.pi), np.float32))
    scale = b.const("scale", np.array(np.sqrt(HEAD_DIM), np.float32))
    heads_shape = b.const("heads_shape", np.array([0, SEQ, HEADS, HEAD_DIM], np.int64))
    merged_shape = b.const("merged_shape", np.array([0, SEQ, HIDDEN], np.int64))
    qkv_split = b.const("qkv_split", np.array([HIDDEN] * 3, np.int64))
    causal = b.const("causal", np.tril(np.ones((SEQ, SEQ), bool))[None, None])
    mask_value = b.const("mask_value", np.array(GPT2_MASK_VALUE, np.float32))
    positions = b.const("position_ids", np.arange(SEQ, dtype=np.int64))

    # Hugging Face's init: N(0, 0.02), residual projections scaled by 1/sqrt(2 * layers); biases
    # and LayerNorm affine parameters random too (a trained model has them), so they are tested.
    proj_scale = 0.02 / np.sqrt(2 * LAYERS)
    wte = b.random("wte.weight", (VOCAB, HIDDEN), 0.02)
    wpe = b.random("wpe.weight", (POSITIONS, HIDDEN), 0.02)
    x = b.node("Add", [b.node("Gather", [wte, "input_ids"], "tokens", axis=0),
                       b.node("Gather", [wpe, positions], "positions", axis=0)], "embed")
    for i in range(LAYERS):
        p = f"h.{i}"
        a = layer_norm(b, f"{p}.ln_1", x, 1e-5, random=True)
        qkv = dense(b, f"{p}.attn.c_attn", a, HIDDEN, 3 * HIDDEN, bias_scale=0.02)
        q, k, v = (f"{p}.{n}" for n in "qkv")
        b.nodes.append(helper.make_node("Split", [qkv, qkv_split], [q, k, v], name=f"{p}.split",
                                        axis=2))
        q, k, v = (split_heads(b, t, heads_shape) for t in (q, k, v))
        kt = b.node("Transpose", [k], "kt", perm=[0, 1, 3, 2])
        scores = b.node("Div", [b.node("MatMul", [q, kt], "qk"), scale], "scaled")
        scores = b.node("Where", [causal, scores, mask_value], "causal")
        probs = b.node("Softmax", [scores], "softmax", axis=-1)
        ctx = merge_heads(b, b.node("MatMul", [probs, v], "ctx"), merged_shape)
        x = b.node("Add", [x, dense(b, f"{p}.attn.c_proj", ctx, HIDDEN, HIDDEN, proj_scale,
                                    0.02)], "res1")
        m = layer_norm(b, f"{p}.ln_2", x, 1e-5, random=True)
        m = dense(b, f"{p}.mlp.c_fc", m, HIDDEN, FFN, bias_scale=0.02)
        # GELU, tanh approximation (Hugging Face's gelu_new, as torch.onnx exports it):
        # 0.5 * m * (1 + tanh(sqrt(2 / pi) * (m + 0.044715 * m^3)))
        inner = b.node("Mul", [cubic, b.node("Pow", [m, three], "gelu_cube")], "gelu_cubic")
        inner = b.node("Mul", [b.node("Add", [m, inner], "gelu_sum"), sqrt_2_pi], "gelu_inner")
        t = b.node("Add", [b.node("Tanh", [inner], "gelu_tanh"), one], "gelu_1p")
        m = b.node("Mul", [b.node("Mul", [m, half], "gelu_half"), t], "gelu")
        x = b.node("Add", [x, dense(b, f"{p}.mlp.c_proj", m, FFN, HIDDEN, proj_scale, 0.02)],
                   "res2")
    x = layer_norm(b, "ln_f", x, 1e-5, random=True)
    logits = b.node("MatMul", [x, b.node("Transpose", [wte], "lm_head_t", perm=[1, 0])], "logits")
    return b.model("gpt2_small", [("input_ids", TensorProto.INT64, [BATCH, SEQ])],
                   [(logits, TensorProto.FLOAT, [BATCH, SEQ, VOCAB])],
                   "GPT-2 small (12 x [causal self-attention, tanh-GELU MLP], pre-LN), learned "
                   "positions, LM head tied to the token embedding.", dtype)


MODELS = {"resnet50": resnet50, "mobilenetv2": mobilenetv2, "efficientnet_b0": efficientnet_b0,
          "bert": bert, "gpt2": gpt2}
CONVNETS = ("resnet50", "mobilenetv2", "efficientnet_b0")  # the models fold_bn changes


def generate(name, dtype="f32", fold_bn=False):
    """(ModelProto, {initializer name: numpy array}) of one model variant."""
    if name not in MODELS:
        raise SystemExit(f"make_zoo: unknown model '{name}'; known: {sorted(MODELS)}")
    return MODELS[name](dtype=dtype, fold_bn=fold_bn)


def variant_name(name, dtype="f32", fold_bn=False):
    """File stem of a variant: gpt2, gpt2_f16, resnet50_foldbn_f16..."""
    return name + ("_foldbn" if fold_bn and name in CONVNETS else "") + \
        ("" if dtype == "f32" else f"_{dtype}")


def example_inputs(name, batch, seed=0, dtype="f32"):
    """Inputs in the model's order: images and activations uniform in [-1, 1); BERT's additive
    mask 0 with the last quarter of each sequence masked (-10000); GPT-2's token ids uniform in
    the vocabulary."""
    rng = np.random.default_rng(seed)
    ftype = np.float16 if dtype == "f16" else np.float32
    if name in CONVNETS:
        return {"x": rng.uniform(-1, 1, [batch, 3, 224, 224]).astype(ftype)}
    if name == "bert":
        mask = np.zeros([batch, 1, 1, SEQ], ftype)
        mask[..., SEQ - SEQ // 4:] = -10000.0
        return {"x": rng.uniform(-1, 1, [batch, SEQ, HIDDEN]).astype(ftype), "mask": mask}
    if name == "gpt2":
        return {"input_ids": rng.integers(0, VOCAB, [batch, SEQ], dtype=np.int64)}
    raise SystemExit(f"make_zoo: unknown model '{name}'")


def build(names, out_dir, force=False, dtype="f32", fold_bn=False):
    """Writes <out_dir>/<variant>.onnx for each name (unless up to date); returns the paths."""
    os.makedirs(out_dir, exist_ok=True)
    paths = {}
    for name in names:
        path = os.path.join(out_dir, f"{variant_name(name, dtype, fold_bn)}.onnx")
        if force or not os.path.exists(path) or os.path.getmtime(path) < os.path.getmtime(__file__):
            model, _ = generate(name, dtype, fold_bn)
            onnx.checker.check_model(model)
            tmp = path + ".tmp"  # write then rename: a killed run leaves no truncated model
            onnx.save(model, tmp)
            os.replace(tmp, path)
            print(f"make_zoo: wrote {path}", file=sys.stderr)
        paths[name] = path
    return paths


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=default_out_dir())
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--dtype", choices=["f32", "f16"], default="f32")
    parser.add_argument("--fold-bn", action="store_true",
                        help="fold batch norms into the convs (resnet50, mobilenetv2)")
    parser.add_argument("--force", action="store_true")
    args = parser.parse_args()
    for path in build([m for m in args.models.split(",") if m], args.out, args.force, args.dtype,
                      args.fold_bn).values():
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
