#!/usr/bin/env python3
"""Pooling, resize, pad, concat of many inputs, gather_nd, scatter_nd and 1-D convolutions as
generated kernels, on both targets, against onnxruntime.

Each case is one ONNX node on random inputs (one a torch module through the dynamo exporter). It is compiled with --fallback=error (a reference
kernel fallback fails the case) for the CPU, whose bundle runs with tensorc run on every host
variant, and for CUDA, whose kernels.cu runs on the CPU emulation of check_cuda_emulated.py (so
the CUDA renderer's output is compiled and checked without a GPU). The interpreter is checked
too. Prints one line per case and `N passed, M failed`.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import zlib

import numpy as np
import onnx
import onnxruntime
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "models"))
sys.path.insert(0, HERE)
import safetensors_np  # noqa: E402
from check_cuda_emulated import emulation_source  # noqa: E402

ONNX_TYPES = {np.float32: TensorProto.FLOAT, np.float16: TensorProto.FLOAT16,
              np.int64: TensorProto.INT64, np.int32: TensorProto.INT32}


def node_model(op, inputs, outputs, attrs=None, constants=None, opset=19):
    """One `op` node; inputs: name -> array (graph inputs), constants: name -> array
    (initializers); outputs: names."""
    constants = constants or {}
    graph = helper.make_graph(
        [helper.make_node(op, list(inputs) + list(constants), outputs, **(attrs or {}))],
        "case",
        [helper.make_tensor_value_info(k, ONNX_TYPES[v.dtype.type], v.shape)
         for k, v in inputs.items()],
        [], [numpy_helper.from_array(v, k) for k, v in constants.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    # The outputs' types and shapes from ONNX's shape inference.
    inferred = {v.name: v for v in onnx.shape_inference.infer_shapes(model).graph.value_info}
    model.graph.output.extend(inferred[name] for name in outputs)
    return model


def concat_model(parts, axis):
    inputs = {f"x{i}": p for i, p in enumerate(parts)}
    return node_model("Concat", inputs, ["y"], {"axis": axis}), inputs


def rand(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def cases():
    """name -> function(rng) returning (model, inputs)."""
    def pool(op, shape, dtype=np.float32, **attrs):
        def build(rng):
            x = {"x": rand(rng, *shape).astype(dtype)}
            outputs = ["y", "i"] if attrs.pop("indices", False) else ["y"]
            return node_model(op, x, outputs, dict(attrs)), x
        return build

    def conv1d(shape, weight_shape, bias=True, **attrs):
        """A 1-D convolution with constant weights (as exported models have them), which the
        decomposition turns into the 2-D templates."""
        def build(rng):
            x = {"x": rand(rng, *shape)}
            constants = {"w": rand(rng, *weight_shape) * np.float32(0.3)}
            if bias:
                constants["b"] = rand(rng, weight_shape[0])
            return node_model("Conv", x, ["y"], dict(attrs), constants), x
        return build

    def resize(shape, scales=None, sizes=None, roi=None, dtype=np.float32, **attrs):
        def build(rng):
            x = rand(rng, *shape) if dtype == np.float32 else \
                rng.integers(-50, 50, shape).astype(dtype)
            constants = {"roi": np.array(roi or [], np.float32),
                         "scales": np.array(scales or [], np.float32)}
            if sizes:
                constants["sizes"] = np.array(sizes, np.int64)
            return node_model("Resize", {"x": x}, ["y"], attrs, constants), {"x": x}
        return build

    def pad(shape, pads, mode, value=None):
        def build(rng):
            x = {"x": rand(rng, *shape)}
            constants = {"pads": np.array(pads, np.int64)}
            if value is not None:
                constants["value"] = np.array(value, np.float32)
            return node_model("Pad", x, ["y"], {"mode": mode}, constants), x
        return build

    def concat(count, axis):
        def build(rng):
            parts = [rand(rng, 2, 1 + (i * 7) % 5, 3) if axis == 1 else
                     rand(rng, 2, 3, 1 + (i * 5) % 4) for i in range(count)]
            return concat_model(parts, axis)
        return build

    def gather_nd(data_shape, index_shape, batch_dims=0):
        def build(rng):
            depth = index_shape[-1]
            limits = data_shape[batch_dims:batch_dims + depth]
            index = np.stack([rng.integers(-n, n, index_shape[:-1]) for n in limits], -1)
            inputs = {"data": rand(rng, *data_shape), "index": index.astype(np.int64)}
            return node_model("GatherND", inputs, ["y"], {"batch_dims": batch_dims}), inputs
        return build

    def scatter_nd(data_shape, index_shape, reduction, unique):
        def build(rng):
            depth = index_shape[-1]
            tuples = int(np.prod(index_shape[:-1]))
            space = int(np.prod(data_shape[:depth]))
            flat = rng.permutation(space)[:tuples] if unique else rng.integers(0, space, tuples)
            index = np.stack(np.unravel_index(flat, data_shape[:depth]), -1)
            update_shape = list(index_shape[:-1]) + list(data_shape[depth:])
            inputs = {"data": rand(rng, *data_shape),
                      "index": index.reshape(index_shape).astype(np.int64),
                      "updates": rand(rng, *update_shape)}
            return node_model("ScatterND", inputs, ["y"], {"reduction": reduction}, opset=18), \
                inputs
        return build

    def adaptive_avg_pool(shape, size):
        """torch's AdaptiveAvgPool2d with windows that do not divide the input, as the dynamo
        exporter writes it (GatherND of the windows' positions, then ReduceMean)."""
        def build(rng):
            try:
                import torch
            except ImportError as error:  # torch stays optional (CI has none)
                raise SkipCase(f"torch is not installed ({error})") from None
            x = rand(rng, *shape)
            with tempfile.TemporaryDirectory() as tmp:
                path = os.path.join(tmp, "adaptive.onnx")
                module = torch.nn.AdaptiveAvgPool2d(size).eval()
                torch.onnx.export(module, (torch.from_numpy(x),), path, dynamo=True,
                                  input_names=["x"], verbose=False)
                model = onnx.load(path)
            return model, {"x": x}
        return build

    return {
        # pooling: ResNet's stem, ceil_mode, dilation, 1-D and 3-D, indices, averages
        "maxpool_3x3_s2_p1": pool("MaxPool", (1, 4, 17, 17), kernel_shape=[3, 3], strides=[2, 2],
                                  pads=[1, 1, 1, 1]),
        "maxpool_ceil": pool("MaxPool", (2, 3, 10, 11), kernel_shape=[3, 3], strides=[2, 2],
                             ceil_mode=1),
        "maxpool_dilation_pad": pool("MaxPool", (1, 3, 12, 11), kernel_shape=[3, 2],
                                     dilations=[2, 3], pads=[2, 1, 2, 1]),
        "maxpool_1d_ceil_pad": pool("MaxPool", (2, 3, 20), kernel_shape=[4], strides=[3],
                                    pads=[1, 1], ceil_mode=1),
        "maxpool_3d": pool("MaxPool", (1, 2, 5, 6, 7), kernel_shape=[2, 3, 2], strides=[2, 2, 2]),
        "maxpool_large_window": pool("MaxPool", (1, 3, 11, 10), kernel_shape=[9, 9]),
        "maxpool_indices_pad": pool("MaxPool", (2, 3, 9, 8), kernel_shape=[3, 3], strides=[2, 2],
                                    pads=[1, 1, 1, 1], indices=True),
        "maxpool_indices_column_major": pool("MaxPool", (1, 2, 6, 7), kernel_shape=[2, 3],
                                             strides=[2, 2], storage_order=1, indices=True),
        "avgpool_include_pad_ceil": pool("AveragePool", (1, 3, 10, 9), kernel_shape=[3, 3],
                                         strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1,
                                         count_include_pad=1),
        "maxpool_f16": pool("MaxPool", (1, 8, 15, 15), np.float16, kernel_shape=[3, 3],
                            strides=[2, 2], pads=[1, 1, 1, 1]),
        "avgpool_f16_include_pad": pool("AveragePool", (1, 8, 9, 9), np.float16,
                                        kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                                        count_include_pad=1),
        "avgpool_exclude_pad": pool("AveragePool", (2, 4, 7, 8), kernel_shape=[3, 3],
                                    pads=[1, 1, 1, 1]),
        "avgpool_exclude_pad_ceil": pool("AveragePool", (1, 2, 11, 11), kernel_shape=[3, 3],
                                         strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1),
        "avgpool_adaptive_2x2_of_8x8": pool("AveragePool", (1, 5, 8, 8), kernel_shape=[4, 4],
                                            strides=[4, 4]),
        "adaptive_avg_pool_3x5_of_7x11": adaptive_avg_pool((2, 3, 7, 11), (3, 5)),
        # 1-D convolutions: strided, padded, dilated and grouped; depthwise; pointwise
        "conv1d_grouped_strided_dilated": conv1d((2, 8, 50), (12, 4, 5), kernel_shape=[5],
                                                 strides=[2], pads=[2, 2], dilations=[2],
                                                 group=2),
        "conv1d_depthwise": conv1d((1, 16, 33), (16, 1, 3), kernel_shape=[3], pads=[1, 1],
                                   group=16),
        "conv1d_pointwise_no_bias": conv1d((2, 24, 40), (32, 24, 1), bias=False,
                                           kernel_shape=[1]),
        "avgpool_large_window": pool("AveragePool", (2, 3, 12, 12), kernel_shape=[10, 10],
                                     strides=[2, 2]),
        "avgpool_1d": pool("AveragePool", (2, 3, 13), kernel_shape=[3], strides=[2],
                           pads=[1, 1]),
        "globalaveragepool": pool("GlobalAveragePool", (1, 16, 7, 7)),
        "globalmaxpool": pool("GlobalMaxPool", (2, 3, 5, 5)),
        # resize: nearest modes, coordinate transformations, linear, cubic, crop
        "resize_nearest_asymmetric_floor_x2": resize(
            (1, 2, 5, 6), scales=[1, 1, 2, 2], mode="nearest",
            coordinate_transformation_mode="asymmetric", nearest_mode="floor"),
        "resize_nearest_half_pixel_sizes": resize(
            (1, 2, 7, 5), sizes=[1, 2, 10, 3], mode="nearest"),
        "resize_nearest_align_corners_ceil": resize(
            (1, 1, 4, 6), sizes=[1, 1, 7, 9], mode="nearest",
            coordinate_transformation_mode="align_corners", nearest_mode="round_prefer_ceil"),
        "resize_nearest_tf_half_pixel_ceil": resize(
            (1, 1, 5, 4), scales=[1, 1, 1.5, 2.5], mode="nearest",
            coordinate_transformation_mode="tf_half_pixel_for_nn", nearest_mode="ceil"),
        "resize_nearest_int32": resize(
            (2, 3, 4), scales=[1, 2, 0.5], dtype=np.int32, mode="nearest",
            coordinate_transformation_mode="half_pixel_symmetric"),
        "resize_linear_half_pixel": resize((1, 3, 6, 8), sizes=[1, 3, 9, 13], mode="linear"),
        "resize_linear_align_corners": resize(
            (1, 2, 5, 5), scales=[1, 1, 1.6, 2.2], mode="linear",
            coordinate_transformation_mode="align_corners"),
        "resize_linear_pytorch_half_pixel_down": resize(
            (1, 2, 9, 10), sizes=[1, 2, 4, 1], mode="linear",
            coordinate_transformation_mode="pytorch_half_pixel"),
        "resize_cubic_exclude_outside": resize(
            (1, 2, 6, 7), scales=[1, 1, 1.5, 0.8], mode="cubic", exclude_outside=1,
            cubic_coeff_a=-0.5),
        "resize_linear_tf_crop_and_resize": resize(
            (1, 1, 6, 6), sizes=[1, 1, 5, 4], roi=[0, 0, 0.2, -0.1, 1, 1, 1.1, 0.7],
            mode="linear", coordinate_transformation_mode="tf_crop_and_resize",
            extrapolation_value=7.5),
        # pad: every mode, negative pads (cropping)
        "pad_constant_value": pad((2, 3, 5, 6), [0, 0, 1, 2, 0, 0, 3, 1], "constant", 1.5),
        "pad_constant_crop": pad((2, 3, 5, 6), [0, 1, -1, 2, 0, 0, 2, -2], "constant"),
        "pad_reflect": pad((2, 3, 5, 6), [0, 0, 2, 5, 0, 0, 4, 3], "reflect"),
        "pad_edge": pad((1, 3, 4, 5), [0, 0, 3, 1, 0, 0, 2, 6], "edge"),
        "pad_wrap": pad((1, 2, 4, 5), [0, 1, 3, 4, 0, 0, 2, 5], "wrap"),
        # concat of many inputs (grouped into copies above 16)
        "concat_20_inputs": concat(20, 1),
        "concat_40_inputs_last_dim": concat(40, 2),
        "concat_300_inputs": concat(300, 1),
        # gather_nd / scatter_nd
        "gathernd_depth2": gather_nd((3, 4, 5, 2), (2, 3, 2)),
        "gathernd_full_depth": gather_nd((3, 4), (5, 2)),
        "gathernd_batch_dims1": gather_nd((2, 3, 4), (2, 5, 1), batch_dims=1),
        "gathernd_batch_dims2": gather_nd((2, 3, 4, 5), (2, 3, 2, 2), batch_dims=2),
        "scatternd_none": scatter_nd((4, 5, 3), (2, 3, 2), "none", True),
        "scatternd_add_duplicates": scatter_nd((6, 4), (5, 1), "add", False),
        "scatternd_mul_duplicates": scatter_nd((3, 4, 2), (6, 2), "mul", False),
        "scatternd_max": scatter_nd((5, 3), (4, 1), "max", False),
        "scatternd_min": scatter_nd((2, 3, 4), (3, 3), "min", False),
    }


def compare(label, got, want):
    got = np.asarray(got)
    if got.shape != want.shape:
        return f"{label}: shape {got.shape} vs {want.shape}"
    if want.dtype.kind in "iub":
        bad = got != want
    else:
        tol = 2e-3 if want.dtype == np.float16 else 1e-4
        bad = ~np.isclose(got.astype(np.float64), want.astype(np.float64), rtol=tol,
                          atol=tol / 10, equal_nan=True)
    if bad.any():
        i = int(np.argmax(bad.reshape(-1)))
        return (f"{label}: {int(bad.sum())} of {bad.size} differ; first at "
                f"{np.unravel_index(i, want.shape)}: {got.reshape(-1)[i]!r} vs "
                f"{want.reshape(-1)[i]!r}")
    return None


def host_variants():
    flags = open("/proc/cpuinfo").read() if os.path.exists("/proc/cpuinfo") else ""
    variants = ["x86_64"]
    if all(f" {flag}" in flags for flag in ("avx512f", "avx512bw", "avx512vl", "avx512dq")):
        variants.append("x86_64-avx512")
    return variants


def run_tensorc(tensorc, args, outputs_path):
    ran = subprocess.run([tensorc] + args + ["--outputs", outputs_path], capture_output=True,
                         text=True)
    if ran.returncode:
        raise RuntimeError(f"tensorc {args[0]} failed: {ran.stderr.strip()[-500:]}")
    return safetensors_np.load(outputs_path)


def compile_bundle(tensorc, model, bundle, target):
    compiled = subprocess.run([tensorc, "compile", model, "-o", bundle, "--target", target,
                               "--fallback=error", "--cuda-arch", "sm_80"],
                              capture_output=True, text=True)
    if compiled.returncode:
        raise RuntimeError(f"compile --target {target} failed: {compiled.stderr.strip()}")


def run_emulated(args, case, bundle, inputs):
    """The CUDA bundle's kernels on the CPU emulation; outputs by buffer name."""
    manifest = json.load(open(os.path.join(bundle, "manifest.json")))
    kernels = open(os.path.join(bundle, "src", "kernels.cu")).read()
    source = os.path.join(case, "emulated.cpp")
    with open(source, "w") as f:
        f.write(emulation_source(kernels, manifest, {}))
    binary = os.path.join(case, "emulated")
    built = subprocess.run([args.cxx, "-std=c++17", "-O1", "-w", "-fno-pie", "-no-pie", "-I", HERE,
                            source, "-o", binary], capture_output=True, text=True)
    if built.returncode:
        raise RuntimeError(f"building the emulation failed: {built.stderr[:2000]}")
    buffers = manifest["buffers"]
    by_name = {b["name"]: b for b in buffers}
    weights = safetensors_np.load(os.path.join(bundle, "weights.safetensors"))
    for name, value in list(inputs.items()) + list(weights.items()):
        if name in by_name:
            value.tofile(os.path.join(case, f"buf{by_name[name]['id']}.bin"))
    sizes = {"f32": 4, "f16": 2, "i64": 8, "i32": 4}
    for b in buffers:  # weights no kernel reads (Pad's pads) are not in the file
        path = os.path.join(case, f"buf{b['id']}.bin")
        if b["kind"] == "weight" and b["name"] not in weights:
            with open(path, "wb") as f:
                f.write(bytes(sizes[b["dtype"]] * int(np.prod(b["shape"]))))
    ran = subprocess.run([binary, case, str(1 << 30), "deferred", "lockstep"],
                         capture_output=True, text=True)
    if ran.returncode:
        raise RuntimeError(f"emulation failed: {ran.stderr.strip()}")
    types = {"f32": np.float32, "f16": np.float16, "i64": np.int64, "i32": np.int32}
    got = {}
    for b in buffers:
        if b["kind"] == "output":
            raw = np.fromfile(os.path.join(case, f"out{b['id']}.bin"), types[b["dtype"]])
            got[b["name"]] = raw.reshape([int(d) for d in b["shape"]])
    return got


class SkipCase(Exception):
    """A case that cannot be built on this machine (its generator's package is missing)."""


def run_case(args, work, name, build):
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    model, inputs = build(rng)
    case = os.path.join(work, name)
    os.makedirs(case, exist_ok=True)
    path = os.path.join(case, "model.onnx")
    onnx.save(model, path)
    session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    want = dict(zip(names, session.run(None, inputs)))
    inputs_path = os.path.join(case, "inputs.safetensors")
    safetensors_np.save(inputs_path, inputs)
    outputs_path = os.path.join(case, "outputs.safetensors")
    failures = []

    def check(label, got):
        for out in names:
            failures.append(compare(f"{label} {out}", got[out], want[out]))

    check("interp", run_tensorc(args.tensorc, ["run", path, "--interp", "--inputs", inputs_path],
                                outputs_path))
    bundle = os.path.join(case, "cpu")
    compile_bundle(args.tensorc, path, bundle, "cpu")
    for variant in host_variants():
        check(variant, run_tensorc(args.tensorc, ["run", bundle, "--variant", variant,
                                                  "--inputs", inputs_path], outputs_path))
    bundle = os.path.join(case, "cuda")
    compile_bundle(args.tensorc, path, bundle, "cuda")
    check("cuda (emulated)", run_emulated(args, case, bundle, inputs))
    failures = [f for f in failures if f]
    return "; ".join(failures) if failures else None


def main(case_table=None, description=__doc__):
    """Runs the cases of `case_table()` (default: this file's) as the command line selects; the
    row-kernel checks use it with their own table."""
    parser = argparse.ArgumentParser(description=description.splitlines()[0])
    parser.add_argument("--tensorc", required=True)
    parser.add_argument("--cxx", default="c++", help="host C++ compiler (C++17, GNU extensions)")
    parser.add_argument("--cases", default="", help="comma-separated subset of the cases")
    parser.add_argument("--work", help="keep the cases' files here")
    args = parser.parse_args()
    all_cases = (case_table or cases)()
    names = [n for n in args.cases.split(",") if n] or list(all_cases)
    failed = skipped = 0
    with tempfile.TemporaryDirectory() as tmp:
        work = args.work or tmp
        for name in names:
            try:
                why = run_case(args, work, name, all_cases[name])
            except SkipCase as reason:
                print(f"skip {name}: {reason}", flush=True)
                skipped += 1
                continue
            except RuntimeError as error:
                why = str(error)
            print(f"{'FAIL' if why else 'ok'} {name}{': ' + why if why else ''}", flush=True)
            failed += why is not None
    print(f"{len(names) - failed - skipped} passed, {failed} failed, {skipped} skipped")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
