#!/usr/bin/env python3
"""FX-text graphs that reach every LoopIR operation in every dtype: per dtype one graph with the
unary, binary (tensor and scalar operands), select and cast ops the registry accepts for it
(ops_<dtype>.fx: one pointwise kernel), and per dtype one graph of its reductions (red_<dtype>.fx). Used by test/snapshot/codegen_snapshot.py (the op cases of the codegen snapshot) and
test/e2e/check_op_semantics.py (compiled code against the interpreter on special values).

    op_cases.py --tensorc BIN --out DIR     writes DIR/ops_<dtype>.fx, DIR/red_<dtype>.fx

An op the registry rejects for a dtype is left out; result types are what `tensorc opt` infers.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

DTYPES = ["f64", "f32", "f16", "bf16", "i64", "i32", "i16", "i8", "u8", "u16", "u32", "u64",
          "bool"]
SHAPE = "[s0, 37]"  # 37: vector tails on every CPU width and on CUDA's 4-wide path

UNARY = ["neg", "abs", "exp", "log", "sqrt", "rsqrt", "reciprocal", "tanh", "sigmoid", "erf",
         "floor", "ceil", "round", "sign", "relu", "logical_not", "bitwise_not", "isnan"]
BINARY = ["add", "sub", "mul", "div", "pow", "remainder", "fmod", "maximum", "minimum", "eq",
          "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor", "bitwise_and",
          "bitwise_or", "bitwise_xor", "bitwise_left_shift", "bitwise_right_shift"]
# pow's exponents that lowerings special-case, and one they do not.
POW_SCALARS = ["0.0", "1.0", "2.0", "3.0", "0.5", "-0.5", "-1.0", "-2.0", "2.5", "2", "3"]
REDUCTIONS = ["sum", "prod", "amax", "amin", "argmax", "argmin", "mean"]


def candidate_lines(dtype, group):
    """(name, `call_function[...](...)` text) for every op of `group` ("ops": elementwise and
    casts, one pointwise kernel; "red": reductions) to try on inputs %x, %y, %d (divisors) of
    dtype and %c (bool)."""
    ops = []
    if group == "red":
        for op in REDUCTIONS:
            for dim in (1, 0):
                ops.append((f"{op}_d{dim}",
                            f"call_function[target=aten.{op}](args=(%x, [{dim}]))"
                            if op not in ("argmax", "argmin")
                            else f"call_function[target=aten.{op}](args=(%x, {dim}))"))
        ops.append(("softmax", "call_function[target=aten.softmax](args=(%x, -1))"))
        return ops
    for op in UNARY:
        ops.append((op, f"call_function[target=aten.{op}](args=(%x,))"))
    for op in BINARY:
        divisor = "%d" if op in ("div", "remainder", "fmod") else "%y"
        ops.append((op, f"call_function[target=aten.{op}](args=(%x, {divisor}))"))
    for mode in ("floor", "trunc"):
        ops.append((f"div_{mode}", f"call_function[target=aten.div](args=(%x, %d), "
                                   f"kwargs={{rounding_mode='{mode}'}})"))
    for i, e in enumerate(POW_SCALARS):
        ops.append((f"pow_s{i}", f"call_function[target=aten.pow](args=(%x, {e}))"))
    for i, s in enumerate(["3", "-3", "2.5"]):
        ops.append((f"remainder_s{i}", f"call_function[target=aten.remainder](args=(%x, {s}))"))
        ops.append((f"fmod_s{i}", f"call_function[target=aten.fmod](args=(%x, {s}))"))
        ops.append((f"div_s{i}", f"call_function[target=aten.div](args=(%x, {s}))"))
    ops.append(("where", "call_function[target=aten.where](args=(%c, %x, %y))"))
    ops.append(("clamp", "call_function[target=aten.clamp](args=(%x, -2, 5))"))
    for target in DTYPES:
        if target != dtype:
            ops.append((f"to_{target}", "call_function[target=prims.convert_element_type]"
                                        f"(args=(%x, {target}))"))
    return ops


def header(dtype):
    return (f"graph(%x: {dtype}{SHAPE}, %y: {dtype}{SHAPE}, %d: {dtype}{SHAPE}, "
            f"%c: bool{SHAPE}):\n")


def infer(tensorc, dtype, name, call, work):
    """The inferred result type of one op line, or None when the registry rejects it."""
    path = os.path.join(work, f"{dtype}_{name}.fx")
    guess = f"f32{SHAPE}"
    for _ in range(2):
        with open(path, "w") as f:
            f.write(header(dtype) + f"  %{name} : {guess} = {call}\n  return (%{name},)\n")
        result = subprocess.run([tensorc, "opt", path, "--passes=dce"], capture_output=True,
                                text=True)
        if result.returncode == 0:
            return guess
        m = re.search(r"declared type .* but inference gives (\S+\[[^\]]*\])", result.stderr)
        if not m:
            return None
        guess = m.group(1)
    return None


def graph_text(dtype, ops):
    return (header(dtype) + "".join(f"  %{name} : {result} = {call}\n" for name, result, call in ops)
            + f"  return ({', '.join('%' + name for name, _, _ in ops)},)\n")


def generates_code(tensorc, text, path):
    """Whether `text` compiles for the CPU and renders for CUDA."""
    with open(path, "w") as f:
        f.write(text)
    for command in (["compile", path, "-o", path + ".bundle"],
                    ["inspect", path, "--stage", "cuda", "--target", "cuda"]):
        if subprocess.run([tensorc] + command, capture_output=True).returncode:
            return False
    return True


def make_case(tensorc, dtype, group, work):
    ops = []
    for name, call in candidate_lines(dtype, group):
        result = infer(tensorc, dtype, name, call, work)
        if result:
            ops.append((name, result, call))
    # Ops the registry takes but code generation rejects are left out too (one at a time, only
    # when the whole graph fails).
    path = os.path.join(work, f"{group}_{dtype}_all.fx")
    if not generates_code(tensorc, graph_text(dtype, ops), path):
        ops = [op for op in ops if generates_code(tensorc, graph_text(dtype, [op]), path)]
    what = "reduction" if group == "red" else "elementwise op and cast"
    return (f"# Every {what} the registry takes and code generation handles on {dtype} "
            "(generated by test/e2e/op_cases.py).\n" + graph_text(dtype, ops))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tensorc", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--dtypes", default=",".join(DTYPES))
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    with tempfile.TemporaryDirectory() as work:
        for dtype in args.dtypes.split(","):
            for group in ("ops", "red"):
                text = make_case(args.tensorc, dtype, group, work)
                with open(os.path.join(args.out, f"{group}_{dtype}.fx"), "w") as f:
                    f.write(text)
                print(f"{group}_{dtype}.fx: {text.count(' = call_function')} ops")
    return 0


if __name__ == "__main__":
    sys.exit(main())
