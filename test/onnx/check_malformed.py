#!/usr/bin/env python3
"""Malformed and hostile ONNX models: each must be rejected by `inspect` and by `compile` with a
one-line message naming the node or tensor, exit status 1, no signal, nothing written (no bundle,
no staging directory, nothing in TMPDIR), within 10 s (run it against an ASan/UBSan build too:
`make test-asan`). Bundles and the runtime: test/e2e/check_hostile_bundles.py.

The models are generated here with onnx.helper into a temporary directory, including external
data files, symlinks and hard links that try to leave the model's directory.
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def model_with(initializers=(), nodes=None, inputs=None, outputs=None, opset=17):
    nodes = nodes if nodes is not None else [helper.make_node("Add", ["x", "w"], ["y"])]
    inputs = inputs if inputs is not None else [
        helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])]
    outputs = outputs if outputs is not None else [
        helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])]
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def external(name, location, offset=None, length=None, dims=(2,)):
    tensor = TensorProto(name=name, data_type=TensorProto.FLOAT, dims=list(dims))
    tensor.data_location = TensorProto.EXTERNAL
    for key, value in (("location", location), ("offset", offset), ("length", length)):
        if value is not None:
            entry = tensor.external_data.add()
            entry.key, entry.value = key, str(value)
    return tensor


def save(directory, name, model):
    path = os.path.join(directory, name)
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, "model.onnx"), "wb") as f:
        f.write(model.SerializeToString() if isinstance(model, onnx.ModelProto) else model)
    return path


def build_cases(root):
    """Returns [(name, model path, expected message fragment)]."""
    cases = []
    good = model_with([numpy_helper.from_array(np.ones(2, np.float32), "w")])
    outside = os.path.join(root, "outside.bin")
    with open(outside, "wb") as f:
        f.write(np.arange(4, dtype=np.float32).tobytes())

    def add(name, model, message, setup=None):
        path = save(root, name, model)
        if setup:
            setup(path)
        cases.append((name, os.path.join(path, "model.onnx"), message))

    raw = good.SerializeToString()
    add("truncated", raw[: len(raw) // 2], "not a valid ONNX model")
    add("garbage", b"\xff\xfe this is not a protobuf \x00\x01" * 8, "not a valid ONNX model")
    add("empty_file", b"", "the model has no graph")
    add("dotdot_location", model_with([external("w", "../outside.bin")]),
        "initializer 'w': external data location '../outside.bin' escapes the model directory")
    add("absolute_location", model_with([external("w", outside)]),
        "is an absolute path")
    add("symlink_escape", model_with([external("w", "link.bin")]),
        "resolves outside the model directory",
        lambda p: os.symlink(outside, os.path.join(p, "link.bin")))
    add("hardlink_escape", model_with([external("w", "hard.bin")]),
        "has several hard links",
        lambda p: os.link(outside, os.path.join(p, "hard.bin")))

    def write_data(p):
        with open(os.path.join(p, "data.bin"), "wb") as f:
            f.write(np.zeros(2, np.float32).tobytes())

    add("offset_past_end", model_with([external("w", "data.bin", offset=4, length=8)]),
        "lies outside 'data.bin'", write_data)
    add("offset_overflow",
        model_with([external("w", "data.bin", offset=2**64 - 4, length=8)]),
        "offset '18446744073709551612' is not a non-negative integer", write_data)
    add("length_mismatch", model_with([external("w", "data.bin", length=4)]),
        "external data holds 4 bytes, the tensor needs 8", write_data)
    add("missing_external_file", model_with([external("w", "nope.bin")]),
        "external data 'nope.bin'")
    short = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[2], raw_data=b"\0\0\0\0")
    add("raw_data_short", model_with([short]),
        "initializer 'w': raw_data holds 4 bytes, f32[2] needs 8")
    huge = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[2**40, 2**40],
                       raw_data=b"\0" * 8)
    add("overflowing_dims", model_with([huge]), "element count overflows 64 bits")
    negative = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[-2], raw_data=b"")
    add("negative_dim", model_with([negative]), "negative dimension -2")
    typed = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[3], float_data=[1.0])
    add("float_data_short", model_with([typed]),
        "float_data holds 1 values, the shape needs 3")
    strings = helper.make_tensor("w", TensorProto.STRING, [1], [b"a"])
    add("string_initializer", model_with([strings]), "unsupported element type STRING")
    untyped = onnx.ValueInfoProto(name="x")
    add("input_without_type", model_with([numpy_helper.from_array(np.ones(2, np.float32), "w")],
                                         inputs=[untyped]),
        "graph input 'x' has no tensor type")
    shapeless = helper.make_tensor_value_info("x", TensorProto.FLOAT, None)
    add("input_without_shape",
        model_with([numpy_helper.from_array(np.ones(2, np.float32), "w")], inputs=[shapeless]),
        "graph input 'x' has no shape")
    add("unsupported_ops",
        model_with(nodes=[helper.make_node("FooOp", ["x"], ["a"]),
                          helper.make_node("FooOp", ["a"], ["b"]),
                          helper.make_node("BarOp", ["b"], ["y"], domain="com.example")]),
        "unsupported op types: FooOp (2), com.example::BarOp (1)")
    add("not_topological",
        model_with(nodes=[helper.make_node("Relu", ["a"], ["y"]),
                          helper.make_node("Relu", ["x"], ["a"])]),
        "node 'y' (Relu): input 'a' is not defined before use")
    add("output_shape_mismatch",
        model_with(nodes=[helper.make_node("Relu", ["x"], ["y"])],
                   outputs=[helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])]),
        "output 'y' is declared with dim 0 = 3 but computes f32[2]")
    add("bad_broadcast",
        model_with([numpy_helper.from_array(np.ones(3, np.float32), "w")]),
        "do not broadcast")
    add("future_opset", model_with(opset=99), "opset 99 is newer than tensorc supports")
    # Control flow is resolved at import time; what it cannot resolve is rejected by name.
    value = helper.make_tensor_value_info

    def branch(constant):
        node = helper.make_node("Constant", [], ["o"], value=helper.make_tensor(
            "t", TensorProto.FLOAT, [2], [constant] * 2))
        return helper.make_graph([node], "branch", [], [value("o", TensorProto.FLOAT, [2])])

    add("if_runtime_condition",
        model_with(nodes=[helper.make_node("If", ["c"], ["y"], then_branch=branch(1.0),
                                           else_branch=branch(2.0))],
                   inputs=[value("c", TensorProto.BOOL, [])]),
        "node 'y' (If): the condition must be known at import time")

    def loop_body(cond_nodes):
        return helper.make_graph(
            cond_nodes + [helper.make_node("Add", ["v", "v"], ["vo"])], "body",
            [value("i", TensorProto.INT64, []), value("ci", TensorProto.BOOL, []),
             value("v", TensorProto.FLOAT, [2])],
            [value("co", TensorProto.BOOL, []), value("vo", TensorProto.FLOAT, [2])])

    data_dependent = loop_body([helper.make_node("ReduceSum", ["v"], ["s"], keepdims=0),
                                helper.make_node("Less", ["s", "s"], ["co"])])
    add("loop_runtime_condition",
        model_with(nodes=[helper.make_node("Loop", ["", "", "x"], ["y"], body=data_dependent)]),
        "node 'y' (Loop): the body's condition output must be known at import time")
    endless = loop_body([helper.make_node("Identity", ["ci"], ["co"])])
    add("loop_too_long",
        model_with(nodes=[helper.make_node("Loop", ["", "", "x"], ["y"], body=endless)]),
        "the loop runs more than 1000 iterations, too many to unroll")
    # Nested loops of 999 iterations each (a fuzzed model of nested Scans ran out of memory
    # unrolling them): unrolling stops at the graph size limit.
    count = helper.make_tensor("n", TensorProto.INT64, [], [999])
    inner = helper.make_node("Loop", ["n", "", "v"], ["vo"], body=loop_body(
        [helper.make_node("Identity", ["ci"], ["co"])]))
    outer_body = helper.make_graph(
        [helper.make_node("Constant", [], ["n"], value=count),
         helper.make_node("Identity", ["ci"], ["co"]), inner], "outer",
        [value("i", TensorProto.INT64, []), value("ci", TensorProto.BOOL, []),
         value("v", TensorProto.FLOAT, [2])],
        [value("co", TensorProto.BOOL, []), value("vo", TensorProto.FLOAT, [2])])
    add("nested_loops_past_the_node_limit",
        model_with(initializers=[helper.make_tensor("trips", TensorProto.INT64, [], [999])],
                   nodes=[helper.make_node("Loop", ["trips", "", "x"], ["y"], body=outer_body)]),
        "inlining its subgraph would grow the graph past 50000 nodes (unrolled Loop or Scan "
        "iterations)")

    # Hostile attribute values (issue 12): each once crashed, hung or misled.
    def one_hot(depth):
        return model_with(
            [numpy_helper.from_array(np.array(depth, np.int64), "d"),
             numpy_helper.from_array(np.array([0, 1], np.float32), "v")],
            nodes=[helper.make_node("OneHot", ["i", "d", "v"], ["y"], axis=-1)],
            inputs=[value("i", TensorProto.INT64, [3])],
            outputs=[value("y", TensorProto.FLOAT, None)])

    for depth, message in ((-1, "depth must be a positive integer, got -1"),
                           (-3, "depth must be a positive integer, got -3"),
                           (2**63 - 1, "with depth 9223372036854775807 the result is f32[3, "
                                       "9223372036854775807], whose byte size overflows 64 bits"),
                           (2**62, "with depth 4611686018427387904 the result is f32[3, "
                                   "4611686018427387904], whose byte size overflows 64 bits"),
                           (-2**63, "depth must be a positive integer, got -9223372036854775808")):
        add(f"onehot_depth_{depth}", one_hot(depth), "node 'y' (OneHot): " + message)
    # OneHot depth 2^31 and Range(0, 2^62, 2^31) with constant operands are no longer folded
    # (24 and 16 GiB): they compile, and running them is refused by the tensor size limit
    # (test/e2e/check_hostile_bundles.py).
    add("graph_output_listed_twice",
        model_with(nodes=[helper.make_node("Relu", ["x"], ["y"])],
                   outputs=[value("y", TensorProto.FLOAT, [2]), value("y", TensorProto.FLOAT, [2])]),
        "graph output 'y' is listed twice")
    add("input_dim_2^62_bool",
        model_with(nodes=[helper.make_node("Not", ["x"], ["y"])],
                   inputs=[value("x", TensorProto.BOOL, [2**62])],
                   outputs=[value("y", TensorProto.BOOL, None)]),
        "graph input 'x' is bool[4611686018427387904], whose byte size 4611686018427387904 is "
        "2^62 or more")
    x4 = value("x", TensorProto.FLOAT, [1, 4, 2, 2])
    add("depth_to_space_huge_blocksize",
        model_with(nodes=[helper.make_node("DepthToSpace", ["x"], ["y"], blocksize=2**62)],
                   inputs=[x4], outputs=[value("y", TensorProto.FLOAT, None)]),
        "node 'y' (DepthToSpace): blocksize 4611686018427387904 squared does not divide 4 channels")
    # An axis of a 0-d input: it has no dim to select along, though torch-style reductions
    # accept dim 0 and -1 there (Compress with axis 0 on a 0-d input read past its empty shape,
    # UBSan in fuzz_onnx_import).
    x0 = value("x", TensorProto.FLOAT, [])
    for op, axis, extra in (("Compress", 0, [value("c", TensorProto.BOOL, [1])]),
                            ("Unique", -1, [])):
        add(f"{op.lower()}_axis_of_0d_input",
            model_with(nodes=[helper.make_node(op, ["x"] + [v.name for v in extra], ["y"],
                                               axis=axis)],
                       inputs=[x0] + extra, outputs=[value("y", TensorProto.FLOAT, None)]),
            f"node 'y' ({op}): %y_{op.lower()}: prims.{op.lower()}: dim {axis} out of range "
            "for a 0-d tensor")
    add("gather_axis_of_0d_input",
        model_with(nodes=[helper.make_node("Gather", ["x", "i"], ["y"], axis=0)],
                   inputs=[x0, value("i", TensorProto.INT64, [])],
                   outputs=[value("y", TensorProto.FLOAT, None)]),
        "node 'y' (Gather): axis 0 is out of range for rank 0")
    # An empty input may have a channel dim near 2^63: LRN's zero-padded window then overflowed
    # its slice ends (UBSan in fuzz_onnx_attributes).
    add("lrn_channels_near_2^63",
        model_with(nodes=[helper.make_node("LRN", ["x"], ["y"], size=3)],
                   inputs=[value("x", TensorProto.FLOAT, [1, 2**63 - 1, 0])],
                   outputs=[value("y", TensorProto.FLOAT, None)]),
        "node 'y' (LRN): 9223372036854775807 channels padded by 1 before and 1 after overflow "
        "64 bits")
    # SAME padding of a spatial dim near 2^63 (an empty input) once overflowed computing the
    # output size (UBSan in fuzz_onnx_attributes); both MaxPool paths now reach a clean refusal.
    for outputs, message in (
            (["y"], "result %y_pad is f32[1, 1, 9223372036854775807, 1], whose byte size "
                    "overflows 64 bits"),
            (["y", "i"], "%y_max_pool_with_indices: prims.max_pool_with_indices: "
                         "max_pool_with_indices: spatial dim 0 of "
                         "f32[1, 1, 9223372036854775807, 0] with padding 1 and 1 overflows 64 "
                         "bits")):
        add(f"maxpool_same_upper_dim_near_2^63_{len(outputs)}_outputs",
            model_with(nodes=[helper.make_node("MaxPool", ["x"], outputs, kernel_shape=[3, 3],
                                               strides=[2, 2], auto_pad="SAME_UPPER")],
                       inputs=[value("x", TensorProto.FLOAT, [1, 1, 2**63 - 1, 0])],
                       outputs=[value(name, TensorProto.FLOAT, None) for name in outputs]),
            "node 'y' (MaxPool): " + message)
    add("two_writers_of_one_value",
        model_with(nodes=[helper.make_node("Relu", ["x"], ["y"]),
                          helper.make_node("Neg", ["x"], ["y"], name="second")]),
        "node 'second' (Neg): output 'y' is already defined by an earlier node")
    add("input_dims_overflow",
        model_with(nodes=[helper.make_node("Relu", ["x"], ["y"])],
                   inputs=[value("x", TensorProto.FLOAT, [2**62, 2])],
                   outputs=[value("y", TensorProto.FLOAT, None)]),
        "graph input 'x' is f32[4611686018427387904, 2], whose byte size overflows 64 bits")
    add("conv_string_group",
        model_with([numpy_helper.from_array(np.ones((2, 2, 1, 1), np.float32), "w")],
                   nodes=[helper.make_node("Conv", ["x", "w"], ["y"], group="two")],
                   inputs=[value("x", TensorProto.FLOAT, [1, 2, 4, 4])],
                   outputs=[value("y", TensorProto.FLOAT, None)]),
        "node 'y' (Conv): attribute 'group' is a STRING, expected an INT")
    # A name forging a second error line and a terminal escape: quoted escaped, on one line.
    add("forged_node_name",
        model_with([numpy_helper.from_array(np.ones((2, 2, 1, 1), np.float32), "w")],
                   nodes=[helper.make_node("Conv", ["x", "w"], ["y"], group=0,
                                           name="evil\nerror: forged\x1b[31mred")],
                   inputs=[value("x", TensorProto.FLOAT, [1, 2, 4, 4])],
                   outputs=[value("y", TensorProto.FLOAT, None)]),
        "node 'evil\\nerror: forged\\x1b[31mred' (Conv)")

    def if_nest(depth):
        def branch(level):
            if level == 0:
                node = helper.make_node("Constant", [], ["o"], value=helper.make_tensor(
                    "t", TensorProto.FLOAT, [2], [1.0, 1.0]))
            else:
                node = helper.make_node("If", ["c"], ["o"], then_branch=branch(level - 1),
                                        else_branch=branch(0))
            return helper.make_graph([node], "b", [], [value("o", TensorProto.FLOAT, [2])])
        top = branch(depth).node[0]
        return model_with([numpy_helper.from_array(np.array(True), "c")],
                          nodes=[helper.make_node("If", ["c"], ["y"],
                                                  then_branch=top.attribute[0].g,
                                                  else_branch=top.attribute[1].g)],
                          inputs=[])

    add("if_nested_32_deep", if_nest(32),
        "subgraphs (If branches, Loop and Scan bodies) are nested more than 16 levels deep")
    return cases


def error_problems(result, message):
    """What keeps a finished process's failure from being a clean error: exit 1 (no signal), one
    plain stderr line holding `message`, no sanitizer report. Shared with
    test/e2e/check_hostile_bundles.py."""
    problems = []
    if result.returncode < 0:
        problems.append(f"killed by signal {-result.returncode}")
    elif result.returncode != 1:
        problems.append(f"exit status {result.returncode} (want 1)")
    if message not in result.stderr:
        problems.append(f"message lacks {message!r}")
    if result.stderr.count("\n") != 1 or "\x1b" in result.stderr:
        problems.append("the error is not one plain line")
    if "Sanitizer" in result.stderr or "runtime error" in result.stderr:
        problems.append("sanitizer report")
    return problems


def run_case(command, message, work, seconds=10):
    """Runs `command` with TMPDIR=work/tmp; returns the problems found (empty: the case passed)."""
    tmp = os.path.join(work, "tmp")
    os.makedirs(tmp, exist_ok=True)
    start = time.monotonic()
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=60,
                                env=dict(os.environ, TMPDIR=tmp))
    except subprocess.TimeoutExpired:
        return ["still running after 60 s"], ""
    elapsed = time.monotonic() - start
    problems = error_problems(result, message)
    if result.stdout:
        problems.append("printed something on stdout")
    if elapsed > seconds:
        problems.append(f"took {elapsed:.1f} s (limit {seconds} s)")
    if os.listdir(tmp):
        problems.append(f"left {os.listdir(tmp)} in TMPDIR")
    return problems, result.stderr.strip()


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tensorc", required=True)
    args = parser.parse_args()
    passed = failed = 0
    with tempfile.TemporaryDirectory() as root:
        for name, path, message in build_cases(root):
            # Both reading the model and compiling it must fail alike, writing nothing.
            out = os.path.join(root, name + ".bundle")
            for command in ([args.tensorc, "inspect", path, "--stage", "import"],
                            [args.tensorc, "compile", path, "-o", out]):
                problems, stderr = run_case(command, message, os.path.join(root, name))
                leftovers = [entry for entry in os.listdir(root) if entry.startswith(
                    (name + ".bundle", "." + name + ".bundle"))]
                if leftovers:
                    problems.append(f"left {leftovers} next to the output")
                label = f"{name} ({command[1]})"
                if problems:
                    failed += 1
                    print(f"FAIL {label}: {'; '.join(problems)}\n  stderr: {stderr}")
                else:
                    passed += 1
                    print(f"ok   {label}: {stderr}")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
