#!/usr/bin/env python3
"""Writes a torch.export program as tensorc FX-text (OUT.fx) plus its parameters, buffers and
constants (OUT.safetensors, same stem), so PyTorch models reach tensorc without ONNX.

    export_fx.py MODULE:NAME -o OUT.fx [--input f32[4,128] ...] [--dynamic-batch]
                 [--kwargs JSON] [--seed N]
    export_fx.py MODEL.pt2 -o OUT.fx                    # a torch.export.save()d program
    export_fx.py --self-test                            # the torch-free parts, no torch needed

MODULE is a dotted module name or a path to a .py file; NAME is an nn.Module subclass
(instantiated with --kwargs, in eval mode, after torch.manual_seed(--seed)) or a function that
returns a module or (module, example_inputs). Example inputs come from the function or from
--input specs (uniform in [-1, 1) for floats, [0, 10) for integers); --dynamic-batch makes dim 0
of every input one symbolic dim. Symbols are renamed s0, s1, ... in order of first appearance
in the inputs (so the batch is s0, as in models/*.fx).

The program is first decomposed to functional ATen with composite ops kept
(ep.run_decompositions({})), then each ATen op is mapped onto tensorc's registry ops
(include/tensorc/IR/OpList.def): most map one to one (same ATen argument order); some become a
few ops (linear -> t + addmm or t + matmul + add; select -> slice + squeeze; relu6/hardtanh ->
clamp; masked_fill -> where; scaled_dot_product_attention -> matmul, scale, mask, softmax,
matmul, which tensorc's fuse-attention pass can fuse back). Declared result types come from the
program's own shape metadata, so the tensorc parser cross-checks its inference against torch's.
An op with no mapping is an error naming the node, its op and the source line torch recorded.

The torch-free half lives beside this file: fx_graph.py (the graph description) and fx_aten.py
(the ATen -> tensorc mapping); this file holds the FX-text writer (tested with them by
--self-test and test/e2e/check_export_fx.py), `describe_exported_program`, which turns an
ExportedProgram into that description, and the command line.
"""
import argparse
import importlib
import importlib.util
import json
import math
import os
import re
import sys

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "models"))
import safetensors_np  # noqa: E402
from fx_aten import lower, used_names  # noqa: E402
from fx_graph import (DTYPES, FLOAT_DTYPES, DType, ExportError, Node, Placeholder,  # noqa: E402
                      Program, Ref, Sym, TensorType, literal)


def weights_of(program):
    """{placeholder name: numpy array} of the parameters the written graph declares (unused
    parameters and buffers, such as num_batches_tracked, are left out of both)."""
    used = used_names(program)
    return {p.name: p.data for p in program.placeholders if p.data is not None and p.name in used}


def write(program, out_path):
    """Writes OUT.fx and, when the program has parameters, OUT.safetensors."""
    text = lower(program)
    weights = weights_of(program)
    stem = out_path[:-3] if out_path.endswith(".fx") else out_path
    os.makedirs(os.path.dirname(os.path.abspath(out_path)), exist_ok=True)
    bf16 = [k for k, v in weights.items() if v.dtype == np.uint16 and
            next(p for p in program.placeholders if p.name == k).type.dtype == "bf16"]
    if weights:
        safetensors_np.save(stem + ".safetensors", weights, bf16=bf16)
    elif os.path.exists(stem + ".safetensors"):
        os.remove(stem + ".safetensors")  # a stale one would be read as this model's weights
    with open(out_path, "w") as f:
        f.write(text)
    return text


# ================================================================================================
# ExportedProgram -> Program (needs torch)
# ================================================================================================

def sym_text(expr, rename):
    """A sympy dim expression as tensorc dim text (`4*s0`, `(s0 + 1)//2`)."""
    import sympy

    def go(e, parent_prec=0):
        name = type(e).__name__
        if e.is_Integer:
            return str(int(e))
        if e.is_Symbol:
            return rename(str(e))
        if isinstance(e, sympy.Add):
            terms = sorted(e.args, key=lambda t: (t.is_Number, str(t)))
            text = go(terms[0], 1)
            for t in terms[1:]:
                if t.is_Number and t < 0:
                    text += f" - {-int(t)}"
                elif isinstance(t, sympy.Mul) and t.args[0].is_Number and t.args[0] < 0:
                    text += f" - {go(-t, 1)}"
                else:
                    text += f" + {go(t, 1)}"
            return f"({text})" if parent_prec > 1 else text
        if isinstance(e, sympy.Mul):
            factors = sorted(e.args, key=lambda t: (not t.is_Number, str(t)))
            return "*".join(go(f, 2) for f in factors)
        if isinstance(e, sympy.Pow) and e.exp.is_Integer and int(e.exp) > 0:
            return "*".join([go(e.base, 2)] * int(e.exp))
        if name == "FloorDiv":
            return f"{go(e.args[0], 3)}//{go(e.args[1], 3)}" if parent_prec < 2 else \
                f"({go(e.args[0], 3)}//{go(e.args[1], 3)})"
        if name in ("Mod", "PythonMod"):
            return f"({go(e.args[0], 3)}%{go(e.args[1], 3)})"
        raise ExportError(f"the dim expression {e} has no tensorc form")

    return go(expr)


def describe_exported_program(ep, comment=()):
    """A Program (with the parameter data) from a torch.export ExportedProgram."""
    import torch
    from torch.export.graph_signature import InputKind, OutputKind

    ep = ep.run_decompositions({})  # functional ATen; composite ops (linear, conv2d...) kept
    sig = ep.graph_signature
    renames = {}

    def rename(symbol):
        if symbol not in renames:
            renames[symbol] = f"s{len(renames)}"
        return renames[symbol]

    def dim_value(d):
        if isinstance(d, int):
            return d
        if isinstance(d, torch.SymInt):
            expr = d.node.expr
            if expr.is_Integer:
                return int(expr)
            return sym_text(expr, rename)
        raise ExportError(f"unexpected dim {d!r}")

    def dtype_name(dt):
        name = str(dt).replace("torch.", "")
        if name not in DTYPES:
            raise ExportError(f"dtype {dt} has no tensorc equivalent")
        return DTYPES[name]

    def type_of(val):
        if isinstance(val, torch.Tensor):
            return TensorType(dtype_name(val.dtype), [dim_value(d) for d in val.shape])
        return None

    # Name symbols in the order the user inputs mention them (so the batch is s0).
    user_inputs = [s.arg.name for s in sig.input_specs if s.kind == InputKind.USER_INPUT]
    by_name = {n.name: n for n in ep.graph.nodes}
    for name in user_inputs:
        val = by_name[name].meta.get("val")
        if isinstance(val, torch.Tensor):
            for d in val.shape:
                dim_value(d)

    data_by_input = {}
    for spec in sig.input_specs:
        if spec.kind == InputKind.USER_INPUT:
            continue
        if spec.kind in (InputKind.PARAMETER, InputKind.BUFFER, InputKind.CONSTANT_TENSOR):
            source = ep.state_dict if spec.target in ep.state_dict else ep.constants
            if spec.target not in source:
                raise ExportError(f"no data for {spec.kind.name.lower()} '{spec.target}'")
            data_by_input[spec.arg.name] = source[spec.target]
        else:
            raise ExportError(f"input '{spec.arg.name}' is a {spec.kind.name}; only tensors, "
                              "parameters, buffers and constants are supported")
    for spec in sig.output_specs:
        if spec.kind != OutputKind.USER_OUTPUT:
            raise ExportError(f"output '{spec.arg.name}' is a {spec.kind.name} (the program "
                              "mutates state); export the model in eval mode without mutation")

    def to_numpy(t):
        t = t.detach().cpu().contiguous()
        if t.dtype == torch.bfloat16:
            return t.view(torch.int16).numpy().view(np.uint16)
        return t.numpy()

    def convert(value):
        if isinstance(value, torch.fx.Node):
            val = value.meta.get("val")
            if isinstance(val, (torch.SymInt, int)) and not isinstance(val, bool):
                return dim_value(val) if isinstance(dim_value(val), int) else Sym(dim_value(val))
            if isinstance(val, (torch.SymFloat, torch.SymBool, float)):
                raise ExportError(f"'{value.name}' is a symbolic scalar; tensorc takes only "
                                  "symbolic dims")
            return Ref(value.name)
        if isinstance(value, torch.SymInt):
            v = dim_value(value)
            return v if isinstance(v, int) else Sym(v)
        if isinstance(value, torch.dtype):
            return DType(dtype_name(value))
        if isinstance(value, (torch.device, torch.layout, torch.memory_format)):
            return None
        if isinstance(value, (list, tuple)):
            return [convert(v) for v in value]
        if isinstance(value, (bool, int, float, str)) or value is None:
            return value
        raise ExportError(f"argument {value!r} ({type(value).__name__}) has no FX-text form")

    placeholders, nodes, outputs = [], [], []
    for n in ep.graph.nodes:
        if n.op == "placeholder":
            t = type_of(n.meta.get("val"))
            if t is None:
                raise ExportError(f"placeholder '{n.name}' is not a tensor")
            data = data_by_input.get(n.name)
            placeholders.append(Placeholder(n.name, t, None if data is None else to_numpy(data)))
        elif n.op == "call_function":
            val = n.meta.get("val")
            if isinstance(val, (torch.SymInt, torch.SymFloat, torch.SymBool, int, float)):
                continue  # sym_size and arithmetic on sizes: inlined where used
            target = "getitem" if n.target is __import__("operator").getitem else str(n.target)
            if isinstance(val, (list, tuple)):
                types = [type_of(v) for v in val]
            else:
                types = [type_of(val)] if val is not None else []
            trace = n.meta.get("stack_trace") or ""
            lines = [ln.strip() for ln in trace.strip().splitlines() if ln.strip()]
            source = lines[-2] + " | " + lines[-1] if len(lines) >= 2 else ""
            kwargs = {k: convert(v) for k, v in n.kwargs.items()}
            kwargs = {k: v for k, v in kwargs.items() if v is not None}  # None: the default
            nodes.append(Node(n.name, target, [convert(a) for a in n.args], kwargs, types,
                              source))
        elif n.op == "output":
            for out in n.args[0]:
                if not isinstance(out, torch.fx.Node):
                    raise ExportError(f"output {out!r} is not a tensor")
                outputs.append(out.name)
        else:
            raise ExportError(f"node '{n.name}': {n.op} nodes are not supported")
    return Program(placeholders, nodes, outputs, comment)


# ================================================================================================
# Command line
# ================================================================================================

SPEC_RE = re.compile(r"^\s*(\w+)\[([0-9,\s]*)\]\s*$")


def parse_input_spec(text):
    m = SPEC_RE.match(text)
    if not m or m.group(1) not in DTYPES.values():
        raise SystemExit(f"export_fx: --input '{text}': expected DTYPE[d0, d1, ...] such as "
                         "f32[4, 128]")
    return m.group(1), [int(d) for d in m.group(2).split(",") if d.strip()]


def load_target(spec):
    """MODULE:NAME -> the attribute (module by dotted name or .py path)."""
    if ":" not in spec:
        raise SystemExit(f"export_fx: '{spec}': expected MODULE:NAME or a .pt2 file")
    module_name, attr = spec.rsplit(":", 1)
    if module_name.endswith(".py") or os.path.sep in module_name:
        path = os.path.abspath(module_name)
        sys.path.insert(0, os.path.dirname(path))
        loader = importlib.util.spec_from_file_location(
            os.path.splitext(os.path.basename(path))[0], path)
        module = importlib.util.module_from_spec(loader)
        loader.loader.exec_module(module)
    else:
        module = importlib.import_module(module_name)
    if not hasattr(module, attr):
        raise SystemExit(f"export_fx: {module_name} has no '{attr}'")
    return getattr(module, attr)


def export_program(args):
    """The ExportedProgram the command line asks for."""
    import torch

    if args.model.endswith(".pt2"):
        return torch.export.load(args.model), f"torch.export.load('{args.model}')"
    torch.manual_seed(args.seed)
    target = load_target(args.model)
    kwargs = json.loads(args.kwargs) if args.kwargs else {}
    example = None
    if isinstance(target, type) and issubclass(target, torch.nn.Module):
        module = target(**kwargs)
    else:
        made = target(**kwargs)
        module, example = made if isinstance(made, tuple) else (made, None)
    module = module.eval()
    if args.input:
        gen = torch.Generator().manual_seed(args.seed)
        tdtypes = {v: getattr(torch, k) for k, v in DTYPES.items()}
        example = []
        for spec in args.input:
            dtype, shape = parse_input_spec(spec)
            if dtype in FLOAT_DTYPES:
                t = torch.rand(shape, generator=gen) * 2 - 1
            else:
                t = torch.randint(0, 10, shape, generator=gen)
            example.append(t.to(tdtypes[dtype]))
    if example is None:
        raise SystemExit("export_fx: no example inputs: give --input specs or return "
                         "(module, inputs) from the function")
    example = tuple(example)
    dynamic = None
    if args.dynamic_batch:
        batch = torch.export.Dim("batch", min=1, max=1 << 20)
        dynamic = tuple({0: batch} for _ in example)
    with torch.no_grad():
        ep = torch.export.export(module, example, dynamic_shapes=dynamic)
    return ep, f"{args.model} ({type(module).__name__}), inputs " + ", ".join(
        f"{DTYPES[str(t.dtype).replace('torch.', '')]}{list(t.shape)}" for t in example)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", nargs="?", help="MODULE:NAME or a .pt2 file")
    parser.add_argument("-o", "--out", help="output .fx (weights go to the same stem)")
    parser.add_argument("--input", action="append", default=[],
                        help="example input spec, e.g. f32[4,128] (repeat per input)")
    parser.add_argument("--dynamic-batch", action="store_true",
                        help="dim 0 of every input is one symbolic batch dim (s0)")
    parser.add_argument("--kwargs", help="JSON keyword arguments for the class or function")
    parser.add_argument("--seed", type=int, default=0, help="torch.manual_seed before building")
    parser.add_argument("--self-test", action="store_true",
                        help="check the torch-free writer and mapping, then exit")
    args = parser.parse_args()
    if args.self_test:
        return self_test()
    if not args.model or not args.out:
        parser.error("MODEL and -o OUT.fx are required (or --self-test)")
    try:
        ep, origin = export_program(args)
        program = describe_exported_program(ep, [f"Exported by tools/export_fx.py from {origin}."])
        write(program, args.out)
    except ExportError as error:
        print(f"export_fx: error: {error}", file=sys.stderr)
        return 1
    print(f"export_fx: wrote {args.out}" + (
        f" and {args.out[:-3]}.safetensors" if weights_of(program) else ""), file=sys.stderr)
    return 0


# ================================================================================================
# Self-test of the torch-free half
# ================================================================================================

def sample_program(weights=None):
    """A small Program in the shape torch.export gives (linear, relu6, tanh GELU, a view with the
    symbolic batch, split + getitem, an inference dropout, a scalar multiply), for tests.
    weights: {'p_fc_weight': [4, 8], 'p_fc_bias': [4]} f32 arrays (zeros by default)."""
    f32 = lambda *s: TensorType("f32", s)  # noqa: E731
    weights = weights or {"p_fc_weight": np.zeros((4, 8), np.float32),
                          "p_fc_bias": np.zeros(4, np.float32)}
    return Program(
        [Placeholder("p_fc_weight", f32(4, 8), weights["p_fc_weight"]),
         Placeholder("p_fc_bias", f32(4), weights["p_fc_bias"]),
         Placeholder("p_unused", f32(2), np.zeros(2, np.float32)),
         Placeholder("x", f32("s0", 8))],
        [Node("linear", "aten.linear.default", [Ref("x"), Ref("p_fc_weight"), Ref("p_fc_bias")],
              types=[f32("s0", 4)]),
         Node("relu6", "aten.relu6.default", [Ref("linear")], types=[f32("s0", 4)]),
         Node("gelu", "aten.gelu.default", [Ref("relu6")], {"approximate": "tanh"},
              [f32("s0", 4)]),
         Node("view", "aten.view.default", [Ref("gelu"), [Sym("s0"), 2, 2]],
              types=[f32("s0", 2, 2)]),
         Node("split", "aten.split.Tensor", [Ref("view"), 1, -1],
              types=[f32("s0", 2, 1), f32("s0", 2, 1)]),
         Node("getitem", "getitem", [Ref("split"), 1], types=[f32("s0", 2, 1)]),
         Node("dropout", "aten.dropout.default", [Ref("getitem"), 0.1, False],
              types=[f32("s0", 2, 1)]),
         Node("mul", "aten.mul.Tensor", [Ref("dropout"), 2.5], types=[f32("s0", 2, 1)])],
        ["mul"], ["test"])


def sample_reference(weights, x):
    """What sample_program computes, in float64 numpy."""
    y = x.astype(np.float64) @ weights["p_fc_weight"].T.astype(np.float64) + weights["p_fc_bias"]
    y = np.clip(y, 0.0, 6.0)
    y = 0.5 * y * (1 + np.tanh(np.sqrt(2 / np.pi) * (y + 0.044715 * y ** 3)))
    return y.reshape(-1, 2, 2)[:, :, 1:2] * 2.5


def self_test():
    """Lowers small hand-written programs and compares with the expected FX-text."""
    f32 = lambda *s: TensorType("f32", s)  # noqa: E731
    prog = sample_program()
    expected = """# test
graph(%p_fc_weight: f32[4, 8], %p_fc_bias: f32[4], %x: f32[s0, 8]):
  %linear_t : f32[8, 4] = call_function[target=aten.t](args=(%p_fc_weight,))
  %linear : f32[s0, 4] = call_function[target=aten.addmm](args=(%p_fc_bias, %x, %linear_t))
  %relu6 : f32[s0, 4] = call_function[target=aten.clamp](args=(%linear, 0.0, 6.0))
  %gelu : f32[s0, 4] = call_function[target=aten.gelu](args=(%relu6,), kwargs={approximate='tanh'})
  %view : f32[s0, 2, 2] = call_function[target=aten.view](args=(%gelu, [s0, 2, 2]))
  %split : (f32[s0, 2, 1], f32[s0, 2, 1]) = call_function[target=aten.split_with_sizes](args=(%view, [1, 1], 2))
  %getitem : f32[s0, 2, 1] = call_function[target=getitem](args=(%split, 1))
  %mul : f32[s0, 2, 1] = call_function[target=aten.mul](args=(%getitem, 2.5))
  return (%mul,)
"""
    failures = 0
    got = lower(prog)
    if got != expected:
        failures += 1
        print("self-test: linear/relu6/gelu/view/split program differs:\n--- expected\n"
              f"{expected}--- got\n{got}", file=sys.stderr)
    if set(weights_of(prog)) != {"p_fc_weight", "p_fc_bias"}:
        failures += 1
        print(f"self-test: weights {sorted(weights_of(prog))}", file=sys.stderr)
    bad = Program([Placeholder("x", f32(2))],
                  [Node("frob", "aten.frobnicate.default", [Ref("x")], types=[f32(2)],
                        source="model.py:3 | y = frob(x)")], ["frob"])
    try:
        lower(bad)
        failures += 1
        print("self-test: an unknown op was accepted", file=sys.stderr)
    except ExportError as error:
        want = "node 'frob' (aten.frobnicate.default) at model.py:3 | y = frob(x): no tensorc " \
               "mapping for aten.frobnicate.default"
        if not str(error).startswith(want):
            failures += 1
            print(f"self-test: unsupported-op message is '{error}'", file=sys.stderr)
    for value, text in ((1e-05, "1e-05"), (-math.inf, "-inf"), ("it's", "'it\\'s'"),
                        ([Sym("4*s0"), -1], "[4*s0, -1]"), (DType("bf16"), "bf16"),
                        (True, "True"), (None, "None")):
        if literal(value) != text:
            failures += 1
            print(f"self-test: literal({value!r}) = {literal(value)!r}, want {text!r}",
                  file=sys.stderr)
    print(f"self-test: {4 + 7 - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
