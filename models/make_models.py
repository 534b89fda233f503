#!/usr/bin/env python3
"""Writes the seed models of models/ as FX-text (.fx) plus random weights (.safetensors).

The .fx files are committed; the weights are regenerated on demand (the MLP's are 96 MB), from a
fixed seed so every machine gets the same bytes. Usage: make_models.py [OUT_DIR] (default: the
directory of this script).
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_np  # noqa: E402


class FxWriter:
    """Builds FX-text line by line; call(...) returns the new value's name."""

    def __init__(self):
        self.placeholders, self.lines, self.weights = [], [], {}

    def input(self, name, dtype, shape):
        self.placeholders.append(f"%{name}: {dtype}[{', '.join(map(str, shape))}]")
        return name

    def param(self, name, array):
        self.weights[name] = array.astype(np.float32)
        return self.input(name, "f32", array.shape)

    def call(self, name, dtype, shape, target, args, kwargs=None):
        args_text = ", ".join(args) + ("," if len(args) == 1 else "")
        line = (f"  %{name} : {dtype}[{', '.join(map(str, shape))}] = "
                f"call_function[target={target}](args=({args_text})")
        if kwargs:
            line += ", kwargs={" + ", ".join(f"{k}={v}" for k, v in kwargs.items()) + "}"
        self.lines.append(line + ")")
        return name

    def text(self, outputs, comment):
        head = "".join(f"# {c}\n" for c in comment)
        body = "\n".join(self.lines)
        return (f"{head}graph({', '.join(self.placeholders)}):\n{body}\n"
                f"  return ({', '.join('%' + o for o in outputs)},)\n")


def linear_weights(rng, fan_in, fan_out):
    bound = 1.0 / np.sqrt(fan_in)  # torch.nn.Linear's default init range
    return (rng.uniform(-bound, bound, (fan_out, fan_in)), rng.uniform(-bound, bound, fan_out))


def linear(fx, prefix, x, batch, fan_in, fan_out, rng):
    w, b = linear_weights(rng, fan_in, fan_out)
    fx.param(f"{prefix}_w", w)
    fx.param(f"{prefix}_b", b)
    t = fx.call(f"{prefix}_t", "f32", [fan_in, fan_out], "aten.t", [f"%{prefix}_w"])
    return fx.call(prefix, "f32", [batch, fan_out], "aten.addmm",
                   [f"%{prefix}_b", f"%{x}", f"%{t}"])


def mlp(rng):
    fx = FxWriter()
    x = fx.input("x", "f32", ["s0", 1024])
    sizes = [1024, 4096, 4096, 1024]
    for i in range(3):
        x = linear(fx, f"fc{i + 1}", x, "s0", sizes[i], sizes[i + 1], rng)
        if i < 2:
            x = fx.call(f"gelu{i + 1}", "f32", ["s0", sizes[i + 1]], "aten.gelu", [f"%{x}"],
                        {"approximate": "'none'"})
    return fx, [x], ["MLP 1024 -> 4096 -> 4096 -> 1024 with GELU; batch s0 is symbolic."]


def ln_silu(rng):
    fx = FxWriter()
    x = fx.input("x", "f32", ["s0", 128])
    for i in range(3):
        x = linear(fx, f"fc{i + 1}", x, "s0", 128, 128, rng)
        fx.param(f"ln{i + 1}_w", 1.0 + 0.1 * rng.standard_normal(128))
        fx.param(f"ln{i + 1}_b", 0.1 * rng.standard_normal(128))
        x = fx.call(f"ln{i + 1}", "f32", ["s0", 128], "aten.layer_norm",
                    [f"%{x}", "[128]", f"%ln{i + 1}_w", f"%ln{i + 1}_b"])
        x = fx.call(f"silu{i + 1}", "f32", ["s0", 128], "aten.silu", [f"%{x}"])
    return fx, [x], ["3 x [Linear 128, LayerNorm, SiLU]; batch s0 is symbolic."]


def convnet(rng):
    fx = FxWriter()
    x = fx.input("x", "f32", ["s0", 3, 32, 32])
    fx.param("conv1_w", rng.standard_normal((16, 3, 3, 3)) * np.sqrt(2.0 / 27))
    fx.param("conv1_b", 0.1 * rng.standard_normal(16))
    fx.param("bn1_w", 1.0 + 0.1 * rng.standard_normal(16))
    fx.param("bn1_b", 0.1 * rng.standard_normal(16))
    fx.param("bn1_mean", 0.1 * rng.standard_normal(16))
    fx.param("bn1_var", rng.uniform(0.5, 1.5, 16))
    fx.param("conv2_w", rng.standard_normal((32, 16, 3, 3)) * np.sqrt(2.0 / 144))
    fx.param("conv2_b", 0.1 * rng.standard_normal(32))
    x = fx.call("conv1", "f32", ["s0", 16, 32, 32], "aten.convolution",
                ["%x", "%conv1_w", "%conv1_b", "[1, 1]", "[1, 1]", "[1, 1]", "False", "[0, 0]",
                 "1"])
    x = fx.call("bn1", "f32", ["s0", 16, 32, 32], "aten.batch_norm",
                ["%conv1", "%bn1_w", "%bn1_b", "%bn1_mean", "%bn1_var", "False", "0.1",
                 "1e-05"])
    x = fx.call("relu1", "f32", ["s0", 16, 32, 32], "aten.relu", ["%bn1"])
    x = fx.call("pool1", "f32", ["s0", 16, 16, 16], "aten.max_pool", ["%relu1", "[2, 2]"])
    x = fx.call("conv2", "f32", ["s0", 32, 8, 8], "aten.convolution",
                ["%pool1", "%conv2_w", "%conv2_b", "[2, 2]", "[1, 1]", "[1, 1]", "False",
                 "[0, 0]", "1"])
    x = fx.call("relu2", "f32", ["s0", 32, 8, 8], "aten.relu", ["%conv2"])
    x = fx.call("pool2", "f32", ["s0", 32, 1, 1], "aten.avg_pool", ["%relu2", "[8, 8]"])
    x = fx.call("flat", "f32", ["s0", 32], "aten.view", ["%pool2", "[s0, 32]"])
    x = linear(fx, "fc", x, "s0", 32, 10, rng)
    return fx, [x], ["Small CNN: conv-bn-relu-maxpool, strided conv-relu, global avgpool, linear."]


def resblock(rng):
    fx = FxWriter()
    x = fx.input("x", "f32", ["s0", 16, 15, 15])
    fx.param("conv_a_w", rng.standard_normal((16, 16, 3, 3)) * np.sqrt(2.0 / 144))
    fx.param("conv_a_b", 0.1 * rng.standard_normal(16))
    fx.param("conv_g_w", rng.standard_normal((16, 4, 3, 3)) * np.sqrt(2.0 / 36))
    fx.param("conv_c_w", rng.standard_normal((16, 16, 3, 3)) * np.sqrt(2.0 / 144))
    conv = ["[1, 1]", "[1, 1]", "[1, 1]", "False", "[0, 0]"]
    a = fx.call("conv_a", "f32", ["s0", 16, 15, 15], "aten.convolution",
                ["%x", "%conv_a_w", "%conv_a_b"] + conv + ["1"])
    a = fx.call("relu_a", "f32", ["s0", 16, 15, 15], "aten.relu", [f"%{a}"])
    g = fx.call("conv_g", "f32", ["s0", 16, 15, 15], "aten.convolution",
                [f"%{a}", "%conv_g_w", "None"] + conv + ["4"])
    s = fx.call("sum", "f32", ["s0", 16, 15, 15], "aten.add", [f"%{g}", f"%{a}"])
    s = fx.call("relu_s", "f32", ["s0", 16, 15, 15], "aten.relu", [f"%{s}"])
    c = fx.call("conv_c", "f32", ["s0", 16, 13, 13], "aten.convolution",
                [f"%{s}", "%conv_c_w", "None", "[1, 1]", "[0, 0]", "[1, 1]", "False", "[0, 0]",
                 "1"])
    p = fx.call("pool", "f32", ["s0", 16, 1, 1], "aten.avg_pool", [f"%{c}", "[13, 13]"])
    p = fx.call("flat", "f32", ["s0", 16], "aten.view", [f"%{p}", "[s0, 16]"])
    y = linear(fx, "fc", p, "s0", 16, 10, rng)
    return fx, [y], ["Residual block on 15x15: 3x3 convolutions with odd-sized outputs of 15x15",
                     "and 13x13 (Winograd on the CPU), a grouped one of 4 channels per group",
                     "(the CPU's depthwise kernel), a residual add, global avgpool, linear."]


MODELS = {"mlp": mlp, "ln_silu": ln_silu, "convnet": convnet, "resblock": resblock}


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    os.makedirs(out_dir, exist_ok=True)
    for seed, (name, build) in enumerate(sorted(MODELS.items())):
        fx, outputs, comment = build(np.random.default_rng(1000 + seed))
        with open(os.path.join(out_dir, f"{name}.fx"), "w") as f:
            f.write(fx.text(outputs, comment + ["Generated by models/make_models.py."]))
        safetensors_np.save(os.path.join(out_dir, f"{name}.safetensors"), fx.weights)


if __name__ == "__main__":
    main()
