#!/usr/bin/env python3
"""Writes ONNX twins of the seed models (mlp.onnx, seed003.onnx) from the .fx models' weights.

Each ONNX graph computes what its .fx model computes, with the same weights read from
models/<name>.safetensors, so onnxruntime (the benchmark peer) and tensorc run one model. Opset
17 ops only: Gemm (transB=1, the torch Linear layout), Erf-based exact GELU, LayerNormalization
and Sigmoid * x for SiLU; the batch is the symbolic dim "s0", as in the .fx files.

The MLP's file is ~100 MB, so the default output is a cache directory, not the repository:
    make_onnx_models.py [--out DIR] [--models mlp,seed003] [--weights-dir DIR]
DIR defaults to $TENSORC_CACHE/models or ~/.cache/tensorc/models. Only `onnx` and `numpy` are
needed. Missing weights are regenerated with models/make_models.py (deterministic).
"""
import argparse
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

MODELS_DIR = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, MODELS_DIR)
import safetensors_np  # noqa: E402

OPSET = 17
BATCH = "s0"  # same symbol as the .fx models, so --dim s0=N works for both


def default_out_dir():
    cache = os.environ.get("TENSORC_CACHE") or os.path.join(os.path.expanduser("~"), ".cache",
                                                            "tensorc")
    return os.path.join(cache, "models")


class OnnxWriter:
    """Collects nodes and initializers; each op helper returns its output's name."""

    def __init__(self, weights):
        self.weights, self.nodes, self.initializers = weights, [], []

    def param(self, name):
        self.initializers.append(numpy_helper.from_array(
            np.ascontiguousarray(self.weights[name], dtype=np.float32), name))
        return name

    def const(self, name, value):
        self.initializers.append(numpy_helper.from_array(np.array(value, np.float32), name))
        return name

    def node(self, op, inputs, output, **attrs):
        self.nodes.append(helper.make_node(op, inputs, [output], name=output, **attrs))
        return output

    def linear(self, prefix, x):
        """torch Linear: x @ W^T + b, with W stored [out, in] exactly as in the .fx weights."""
        return self.node("Gemm", [x, self.param(f"{prefix}_w"), self.param(f"{prefix}_b")],
                         prefix, transB=1)

    def gelu(self, prefix, x):
        """Exact GELU (approximate='none') as torch.onnx exports it at opset 17:
        (x * (1 + erf(x / sqrt(2)))) * 0.5, the pattern onnxruntime fuses into one Gelu op."""
        scaled = self.node("Div", [x, "sqrt2"], f"{prefix}_scaled")
        erf = self.node("Erf", [scaled], f"{prefix}_erf")
        one_plus = self.node("Add", [erf, "one"], f"{prefix}_1p")
        x_one_plus = self.node("Mul", [x, one_plus], f"{prefix}_x1p")
        return self.node("Mul", [x_one_plus, "half"], prefix)

    def silu(self, prefix, x):
        return self.node("Mul", [x, self.node("Sigmoid", [x], f"{prefix}_sig")], prefix)

    def model(self, name, x_width, y, y_width, doc):
        x_info = helper.make_tensor_value_info("x", TensorProto.FLOAT, [BATCH, x_width])
        y_info = helper.make_tensor_value_info(y, TensorProto.FLOAT, [BATCH, y_width])
        graph = helper.make_graph(self.nodes, name, [x_info], [y_info], self.initializers,
                                  doc_string=doc)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                                  producer_name="tensorc models/make_onnx_models.py")
        model.ir_version = 8  # opset 17's IR version; older onnxruntimes reject newer ones
        onnx.checker.check_model(model)
        return model


def mlp(weights):
    w = OnnxWriter(weights)
    w.const("sqrt2", np.sqrt(2.0))
    w.const("one", 1.0)
    w.const("half", 0.5)
    x = "x"
    for i in range(3):
        x = w.linear(f"fc{i + 1}", x)
        if i < 2:
            x = w.gelu(f"gelu{i + 1}", x)
    return w.model("mlp", 1024, x, 1024,
                   "MLP 1024 -> 4096 -> 4096 -> 1024 with exact GELU (twin of models/mlp.fx).")


def seed003(weights):
    w = OnnxWriter(weights)
    x = "x"
    for i in range(3):
        x = w.linear(f"fc{i + 1}", x)
        x = w.node("LayerNormalization", [x, w.param(f"ln{i + 1}_w"), w.param(f"ln{i + 1}_b")],
                   f"ln{i + 1}", axis=-1, epsilon=1e-5)
        x = w.silu(f"silu{i + 1}", x)
    return w.model("seed003", 128, x, 128,
                   "3 x [Linear 128, LayerNorm, SiLU] (twin of models/ln_silu.fx).")


# ONNX name -> (builder, stem of the .fx model whose weights it uses)
MODELS = {"mlp": (mlp, "mlp"), "seed003": (seed003, "ln_silu")}


def weights_path(weights_dir, name):
    return os.path.join(weights_dir, MODELS[name][1] + ".safetensors")


def ensure_weights(weights_dir, names):
    """Regenerates the .fx weights with make_models.py when one is missing (same seed, same
    bytes)."""
    if all(os.path.exists(weights_path(weights_dir, n)) for n in names):
        return
    print(f"make_onnx_models: generating weights into {weights_dir}", file=sys.stderr)
    subprocess.run([sys.executable, os.path.join(MODELS_DIR, "make_models.py"), weights_dir],
                   check=True)


def is_stale(onnx_path, weights_file):
    """True when the .onnx is missing or older than its weights or this script."""
    if not os.path.exists(onnx_path):
        return True
    built = os.path.getmtime(onnx_path)
    return built < os.path.getmtime(weights_file) or built < os.path.getmtime(__file__)


def build(names, out_dir, weights_dir=MODELS_DIR, force=False):
    """Writes <out_dir>/<name>.onnx for each name (skipping up-to-date ones); returns the paths."""
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        raise SystemExit(f"make_onnx_models: unknown model(s) {unknown}; known: {sorted(MODELS)}")
    ensure_weights(weights_dir, names)
    os.makedirs(out_dir, exist_ok=True)
    paths = {}
    for name in names:
        path = os.path.join(out_dir, f"{name}.onnx")
        src = weights_path(weights_dir, name)
        if force or is_stale(path, src):
            model = MODELS[name][0](safetensors_np.load(src))
            tmp = path + ".tmp"  # write then rename: a killed run leaves no truncated model
            onnx.save_model(model, tmp)
            os.replace(tmp, path)
            print(f"make_onnx_models: wrote {path}", file=sys.stderr)
        paths[name] = path
    return paths


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=default_out_dir(), help="output directory")
    parser.add_argument("--models", default=",".join(MODELS), help="comma-separated names")
    parser.add_argument("--weights-dir", default=MODELS_DIR,
                        help="where <stem>.safetensors live (default: models/)")
    parser.add_argument("--force", action="store_true", help="rewrite up-to-date files too")
    args = parser.parse_args()
    for path in build(args.models.split(","), args.out, args.weights_dir, args.force).values():
        print(path)


if __name__ == "__main__":
    main()
