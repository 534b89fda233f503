#!/usr/bin/env python3
"""Writes the committed seed corpora of the libFuzzer harnesses (test/fuzz/corpus/<harness>).

ONNX seeds are small valid models whose converters read attributes and constant inputs at import
time (the values the structure-aware harness mutates); Debian's ONNX node tests are further seeds,
added by CMake. FX-text seeds are the repository's models and text tests. Safetensors seeds are
small files of each dtype. Run it again after changing it; the outputs are deterministic.
"""
import argparse
import json
import os
import struct

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
V = helper.make_tensor_value_info


def model(nodes, inputs, outputs, inits=(), opset=17):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def i64(name, values):
    return numpy_helper.from_array(np.array(values, np.int64), name)


def f32(name, values):
    return numpy_helper.from_array(np.array(values, np.float32), name)


def onnx_seeds():
    x4 = V("x", TensorProto.FLOAT, [1, 4, 4, 4])
    y = V("y", TensorProto.FLOAT, None)
    n = helper.make_node
    seeds = {
        "onehot": model([n("OneHot", ["i", "d", "v"], ["y"], axis=-1)],
                        [V("i", TensorProto.INT64, [3])], [y], [i64("d", 5), f32("v", [0, 1])]),
        "range": model([n("Range", ["a", "b", "c"], ["y"])], [], [V("y", TensorProto.INT64, None)],
                       [i64("a", 0), i64("b", 10), i64("c", 3)]),
        "pad": model([n("Pad", ["x", "p"], ["y"], mode="constant")], [x4], [y],
                     [i64("p", [0, 0, 1, 1, 0, 0, 1, 1])]),
        "depth_to_space": model([n("DepthToSpace", ["x"], ["y"], blocksize=2, mode="CRD")], [x4],
                                [y]),
        "space_to_depth": model([n("SpaceToDepth", ["x"], ["y"], blocksize=2)], [x4], [y]),
        "conv": model([n("Conv", ["x", "w"], ["y"], group=1, pads=[1, 1, 1, 1], strides=[1, 1],
                         dilations=[1, 1], kernel_shape=[3, 3])], [x4], [y],
                      [f32("w", np.ones((2, 4, 3, 3)))]),
        "conv_transpose": model([n("ConvTranspose", ["x", "w"], ["y"], strides=[2, 2],
                                   output_padding=[1, 1], auto_pad="NOTSET")], [x4], [y],
                                [f32("w", np.ones((4, 2, 3, 3)))]),
        "maxpool": model([n("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], strides=[2, 2],
                            auto_pad="SAME_UPPER", ceil_mode=0)], [x4], [y]),
        "averagepool": model([n("AveragePool", ["x"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                                count_include_pad=1)], [x4], [y]),
        "reshape": model([n("Reshape", ["x", "s"], ["y"])], [x4], [y], [i64("s", [2, -1, 0])]),
        "slice": model([n("Slice", ["x", "st", "en", "ax", "sp"], ["y"])], [x4], [y],
                       [i64("st", [3, 0]), i64("en", [-5, 4]), i64("ax", [2, 3]),
                        i64("sp", [-1, 2])]),
        "split": model([n("Split", ["x", "s"], ["y", "z"], axis=1)], [x4],
                       [y, V("z", TensorProto.FLOAT, None)], [i64("s", [1, 3])]),
        "tile": model([n("Tile", ["x", "r"], ["y"])], [x4], [y], [i64("r", [1, 2, 1, 1])]),
        "expand": model([n("Expand", ["x", "s"], ["y"])], [x4], [y], [i64("s", [2, 1, 1, 1])]),
        "transpose": model([n("Transpose", ["x"], ["y"], perm=[0, 2, 3, 1])], [x4], [y]),
        "gather": model([n("Gather", ["x", "i"], ["y"], axis=1)], [x4], [y], [i64("i", [0, -1])]),
        "squeeze": model([n("Unsqueeze", ["x", "a"], ["t"]), n("Squeeze", ["t", "a"], ["y"])],
                         [x4], [y], [i64("a", [0])]),
        "concat": model([n("Concat", ["x", "x"], ["y"], axis=-1)], [x4], [y]),
        "resize": model([n("Resize", ["x", "", "s"], ["y"], mode="linear",
                           coordinate_transformation_mode="half_pixel")], [x4], [y],
                        [f32("s", [1, 1, 2, 2])]),
        "trilu": model([n("Trilu", ["x", "k"], ["y"], upper=0)], [x4], [y], [i64("k", 1)]),
        "eyelike": model([n("EyeLike", ["x"], ["y"], k=1)], [V("x", TensorProto.FLOAT, [3, 4])],
                         [y]),
        "constant_of_shape": model([n("ConstantOfShape", ["s"], ["y"],
                                      value=helper.make_tensor("v", TensorProto.FLOAT, [1], [2]))],
                                   [], [y], [i64("s", [2, 3])]),
        "reduce": model([n("ReduceSum", ["x", "a"], ["y"], keepdims=1)], [x4], [y],
                        [i64("a", [1, -1])]),
        "topk": model([n("TopK", ["x", "k"], ["y", "z"], axis=-1, largest=1, sorted=1)], [x4],
                      [y, V("z", TensorProto.INT64, None)], [i64("k", [2])]),
        "cumsum": model([n("CumSum", ["x", "a"], ["y"], exclusive=1, reverse=1)], [x4], [y],
                        [i64("a", 2)]),
        "softmax": model([n("Softmax", ["x"], ["y"], axis=1)], [x4], [y]),
        "layernorm": model([n("LayerNormalization", ["x", "g"], ["y"], axis=-1, epsilon=1e-5)],
                           [x4], [y], [f32("g", np.ones(4))]),
        "gemm": model([n("Gemm", ["a", "b"], ["y"], transA=1, alpha=2.0, beta=0.5)],
                      [V("a", TensorProto.FLOAT, [3, 2])], [y], [f32("b", np.ones((3, 4)))]),
        "einsum": model([n("Einsum", ["a", "b"], ["y"], equation="ij,jk->ik")],
                        [V("a", TensorProto.FLOAT, [2, 3])], [y], [f32("b", np.ones((3, 2)))]),
        "cast": model([n("Cast", ["x"], ["y"], to=TensorProto.INT32)], [x4],
                      [V("y", TensorProto.INT32, None)]),
        "lstm": model([n("LSTM", ["x", "w", "r"], ["y"], hidden_size=2, direction="forward")],
                      [V("x", TensorProto.FLOAT, [2, 1, 3])], [y],
                      [f32("w", np.ones((1, 8, 3))), f32("r", np.ones((1, 8, 2)))]),
        "quantize": model([n("QuantizeLinear", ["x", "s", "z"], ["y"])], [x4],
                          [V("y", TensorProto.UINT8, None)],
                          [f32("s", 0.5), numpy_helper.from_array(np.array(3, np.uint8), "z")]),
        "if": model([n("If", ["c"], ["y"],
                       then_branch=helper.make_graph([n("Identity", ["x"], ["o"])], "t", [],
                                                     [V("o", TensorProto.FLOAT, [1, 4, 4, 4])]),
                       else_branch=helper.make_graph([n("Neg", ["x"], ["o"])], "e", [],
                                                     [V("o", TensorProto.FLOAT, [1, 4, 4, 4])]))],
                    [x4], [y], [numpy_helper.from_array(np.array(True), "c")]),
        "loop": model([n("Loop", ["m", "", "x"], ["y"], body=helper.make_graph(
            [n("Identity", ["ci"], ["co"]), n("Add", ["v", "v"], ["vo"])], "b",
            [V("i", TensorProto.INT64, []), V("ci", TensorProto.BOOL, []),
             V("v", TensorProto.FLOAT, [1, 4, 4, 4])],
            [V("co", TensorProto.BOOL, []), V("vo", TensorProto.FLOAT, [1, 4, 4, 4])]))],
                      [x4], [y], [i64("m", 3)]),
        "dropout": model([n("Dropout", ["x", "r", "t"], ["y", "m"])], [x4],
                         [y, V("m", TensorProto.BOOL, None)],
                         [f32("r", 0.0), numpy_helper.from_array(np.array(False), "t")]),
        "symbolic_shape": model([n("Shape", ["x"], ["s"]), n("Gather", ["s", "z"], ["b"]),
                                 n("Unsqueeze", ["b", "a"], ["b1"]),
                                 n("Concat", ["b1", "m"], ["t"], axis=0),
                                 n("Reshape", ["x", "t"], ["y"])],
                                [V("x", TensorProto.FLOAT, ["batch", 4, 4])], [y],
                                [i64("z", 0), i64("a", [0]), i64("m", [-1])]),
    }
    return {name: m.SerializeToString() for name, m in seeds.items()}


def safetensors(tensors):
    header, data = {}, b""
    for name, array in tensors.items():
        raw = array.tobytes()
        dtype = {np.float32: "F32", np.int64: "I64", np.float16: "F16", np.uint8: "U8",
                 np.bool_: "BOOL", np.int32: "I32", np.float64: "F64"}[array.dtype.type]
        header[name] = {"dtype": dtype, "shape": list(array.shape),
                        "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    return struct.pack("<Q", len(text)) + text + data


def safetensors_seeds():
    return {
        "empty": safetensors({}),
        "f32": safetensors({"w": np.arange(6, dtype=np.float32).reshape(2, 3)}),
        "mixed": safetensors({"a": np.arange(3, dtype=np.int64), "b": np.ones(4, np.float16),
                              "c": np.array([True, False]), "d": np.zeros((0, 3), np.uint8)}),
        "scalar": safetensors({"s": np.array(2.5, np.float64)}),
    }


def bundle_seeds():
    """Manifests for the bundle harness: its bundle holds weights w: f32[4] and the runtime
    tests' kernels (test/runtime/test_kernels.c) as the host's CPU variant."""
    host = "x86_64"
    matrix = ["batch", 4]
    add_graph = ("graph(%a: f32[n, 4], %b: f32[4]):\n"
                 "  %c : f32[n, 4] = call_function[target=aten.add](args=(%a, %b))\n"
                 "  return (%c,)\n")

    def buffer(i, name, kind, shape, **extra):
        return dict(id=i, name=name, kind=kind, dtype="f32", shape=shape, **extra)

    sample = {
        "format_version": 3, "tensorc_version": "0.1.0", "source_hash": "", "model": "m.fx",
        "symbols": ["batch"],
        "inputs": [{"name": "x", "dtype": "f32", "shape": matrix},
                   {"name": "y", "dtype": "f32", "shape": matrix}],
        "outputs": [{"name": "out", "dtype": "f32", "shape": matrix},
                    {"name": "rows", "dtype": "f32", "shape": ["batch"]}],
        "buffers": [buffer(0, "x", "input", matrix, index=0),
                    buffer(1, "y", "input", matrix, index=1),
                    buffer(2, "w", "weight", [4], weight="w"),
                    buffer(3, "sum", "arena", matrix, offset=0),
                    buffer(4, "biased", "arena", matrix, offset="64*batch"),
                    buffer(5, "out", "output", matrix, index=0),
                    buffer(6, "rows", "output", ["batch"], index=1)],
        "arena_bytes": "128*batch", "peak_bytes": 0,
        "launches": [
            {"kind": "kernel", "name": "tc_test_add_f32", "args": [0, 1, 3], "range": "4*batch",
             "grain": 16},
            {"kind": "extern", "name": "aten.add", "args": [3, 2, 4], "graph": add_graph},
            {"kind": "copy", "name": "copy", "args": [4, 5]},
            {"kind": "kernel", "name": "tc_test_fill_batch_f32", "args": [6], "range": "batch",
             "grain": 1}],
        "cpu": [{"name": host, "arch": host, "file": f"cpu/{host}.so", "requires": [],
                 "priority": 0}],
        "guards": [{"lhs": "(batch + 4095)//4096", "rhs": 1, "message": "batch too large"}],
        "files": [{"path": f"cpu/{host}.so", "sha256": "@kernels_sha256@"},
                  {"path": "weights.safetensors", "sha256": "@weights_sha256@"}],
    }
    externs = json.loads(json.dumps(sample))
    externs["launches"] = [
        {"kind": "extern", "name": "aten.mul", "args": [0, 1, 3],
         "graph": "graph(%a: f32[n, 4], %b: f32[n, 4]):\n"
                  "  %c : f32[n, 4] = call_function[target=aten.mul](args=(%a, %b))\n"
                  "  return (%c,)\n"},
        {"kind": "extern", "name": "aten.sum", "args": [3, 6],
         "graph": "graph(%a: f32[n, 4]):\n"
                  "  %c : f32[n] = call_function[target=aten.sum](args=(%a, [1]))\n"
                  "  return (%c,)\n"},
        {"kind": "copy", "name": "copy", "args": [3, 5]}]
    return {"sample": sample, "externs": externs}


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", default=os.path.join(HERE, "corpus"))
    args = parser.parse_args()
    onnx_models = onnx_seeds()
    for harness in ("onnx_import", "onnx_attributes"):
        directory = os.path.join(args.out, harness)
        os.makedirs(directory, exist_ok=True)
        for name, data in onnx_models.items():
            with open(os.path.join(directory, name + ".onnx"), "wb") as f:
                f.write(data)
    directory = os.path.join(args.out, "safetensors")
    os.makedirs(directory, exist_ok=True)
    for name, data in safetensors_seeds().items():
        with open(os.path.join(directory, name + ".safetensors"), "wb") as f:
            f.write(data)
    directory = os.path.join(args.out, "bundle_load")
    os.makedirs(directory, exist_ok=True)
    for name, manifest in bundle_seeds().items():
        with open(os.path.join(directory, name + ".json"), "w") as f:
            json.dump(manifest, f, indent=2, sort_keys=True)
    directory = os.path.join(args.out, "fx_parse")
    os.makedirs(directory, exist_ok=True)
    for folder in ("models", os.path.join("test", "lit"), os.path.join("test", "gpu")):
        for name in sorted(os.listdir(os.path.join(ROOT, folder))):
            if not name.endswith(".fx"):
                continue
            text = open(os.path.join(ROOT, folder, name)).read()
            # Text tests hold several cases split by "# -----": one seed per case.
            for index, case in enumerate(text.split("# -----")):
                if "graph(" not in case:
                    continue
                stem = folder.replace(os.sep, "_") + "_" + name[:-3]
                with open(os.path.join(directory, f"{stem}_{index}.fx"), "w") as f:
                    f.write(case.strip() + "\n")


if __name__ == "__main__":
    main()
