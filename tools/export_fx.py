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

The file has two halves: a torch-free one (the graph description, the ATen -> tensorc mapping
and the FX-text writer, tested by --self-test and test/e2e/check_export_fx.py), and
`describe_exported_program`, which turns an ExportedProgram into that description.
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


class ExportError(Exception):
    """A program tensorc's FX-text cannot express; the message names the node."""


# ================================================================================================
# The graph description (torch-free)
# ================================================================================================

DTYPES = {"float64": "f64", "float32": "f32", "float16": "f16", "bfloat16": "bf16",
          "int64": "i64", "int32": "i32", "int16": "i16", "int8": "i8", "uint8": "u8",
          "uint16": "u16", "uint32": "u32", "uint64": "u64", "bool": "bool"}
FLOAT_DTYPES = ("f64", "f32", "f16", "bf16")


class Ref:
    """A reference to a placeholder or node result in arguments."""

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"Ref({self.name!r})"


class Sym:
    """A symbolic integer (a dim expression such as `4*s0`) in arguments."""

    def __init__(self, text):
        self.text = text

    def __repr__(self):
        return f"Sym({self.text!r})"


class DType:
    """A dtype argument, by tensorc name (f32, i64...)."""

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"DType({self.name!r})"


class TensorType:
    def __init__(self, dtype, shape):
        if dtype not in DTYPES.values():
            raise ExportError(f"dtype {dtype} has no tensorc equivalent")
        self.dtype, self.shape = dtype, tuple(shape)

    @property
    def rank(self):
        return len(self.shape)

    def text(self):
        return f"{self.dtype}[{', '.join(str(d) for d in self.shape)}]"

    def with_shape(self, shape):
        return TensorType(self.dtype, shape)

    def __repr__(self):
        return self.text()


class Node:
    """One call of the source program. target: the ATen overload ("aten.linear.default") or
    "getitem"; types: the result types (one per tensor result; None for a non-tensor result);
    source: where the op came from (for error messages)."""

    def __init__(self, name, target, args=(), kwargs=None, types=(), source=""):
        self.name, self.target, self.args = name, target, tuple(args)
        self.kwargs, self.types, self.source = dict(kwargs or {}), list(types), source

    @property
    def type(self):
        if len(self.types) != 1 or self.types[0] is None:
            raise ExportError(f"node '{self.name}' ({self.target}) has {len(self.types)} results")
        return self.types[0]

    def arg(self, index, name, default=None):
        """Argument by position or keyword (ATen schema order), else the default."""
        if index < len(self.args):
            return self.args[index]
        return self.kwargs.get(name, default)


class Placeholder:
    """A graph input; `data` (a numpy array) makes it a parameter (written to .safetensors)."""

    def __init__(self, name, type, data=None):
        self.name, self.type, self.data = name, type, data


class Program:
    def __init__(self, placeholders, nodes, outputs, comment=()):
        self.placeholders, self.nodes, self.outputs = placeholders, nodes, outputs
        self.comment = list(comment)


# ================================================================================================
# FX-text writer (torch-free)
# ================================================================================================

def literal(value):
    """An argument as FX-text."""
    if isinstance(value, Ref):
        return f"%{value.name}"
    if isinstance(value, Sym):
        return value.text
    if isinstance(value, DType):
        return value.name
    if value is None or isinstance(value, bool):
        return repr(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(literal(v) for v in value) + "]"
    raise ExportError(f"cannot write the argument {value!r} as FX-text")


class FxGraph:
    """tensorc FX-text being written: placeholders, lines, outputs."""

    def __init__(self):
        self.placeholders, self.lines, self.outputs, self.names = [], [], [], set()

    def unique(self, name):
        base, n = name, 0
        while name in self.names:
            n += 1
            name = f"{base}_{n}"
        self.names.add(name)
        return name

    def placeholder(self, name, type):
        self.names.add(name)
        self.placeholders.append(f"%{name}: {type.text()}")

    def call(self, name, types, target, args, kwargs=None):
        """Appends `%name : TYPE = call_function[target=...](args=(...), kwargs={...})`."""
        if isinstance(types, TensorType):
            types = [types]
        type_text = types[0].text() if len(types) == 1 else \
            "(" + ", ".join(t.text() for t in types) + ")"
        args_text = ", ".join(literal(a) for a in args) + ("," if len(args) == 1 else "")
        line = f"  %{name} : {type_text} = call_function[target={target}](args=({args_text})"
        kwargs = {k: v for k, v in (kwargs or {}).items()}
        if kwargs:
            line += ", kwargs={" + ", ".join(f"{k}={literal(v)}" for k, v in kwargs.items()) + "}"
        self.lines.append(line + ")")
        return Ref(name)

    def text(self, comment=()):
        head = "".join(f"# {c}\n" for c in comment)
        return (f"{head}graph({', '.join(self.placeholders)}):\n" + "".join(
            line + "\n" for line in self.lines) +
            f"  return ({', '.join('%' + o for o in self.outputs)},)\n")


# ================================================================================================
# ATen -> tensorc (torch-free)
# ================================================================================================

SAME_UNARY = {"neg", "abs", "exp", "log", "sqrt", "rsqrt", "reciprocal", "tanh", "sigmoid", "erf",
              "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh",
              "atanh", "floor", "ceil", "round", "sign", "relu", "silu", "logical_not",
              "bitwise_not", "isnan"}
SAME_BINARY = {"mul", "pow", "remainder", "fmod", "maximum", "minimum", "eq", "ne", "lt", "le",
               "gt", "ge", "logical_and", "logical_or", "logical_xor", "bitwise_and",
               "bitwise_or", "bitwise_xor", "bitwise_left_shift", "bitwise_right_shift"}
# Nodes that only check or constrain: nothing to emit.
IGNORED = {"_assert_tensor_metadata", "_assert_scalar", "sym_constrain_range",
           "sym_constrain_range_for_size", "_assert_async", "_functional_assert_async"}
# Ops that are the identity at inference.
ALIASES = {"alias", "detach", "lift_fresh_copy"}
INT64_MAX = 2 ** 63 - 1


class Lowering:
    """Emits tensorc FX-text for a Program, one ATen node at a time."""

    def __init__(self, program):
        self.program = program
        self.fx = FxGraph()
        self.alias = {}      # source name -> Ref of what stands for it
        # Multi-result source nodes: name -> "tuple" (a tensorc multi-result op: getitem lines),
        # "first" (only result 0 has a tensorc equivalent) or ("unbind", split Ref, dim, type).
        self.multi = {}
        self.types = {}      # emitted or source name -> TensorType (for helper shapes)
        self.used = used_names(program)
        # Helpers get fresh names: the source's own names are taken first.
        self.fx.names.update(p.name for p in program.placeholders)
        self.fx.names.update(n.name for n in program.nodes)

    # ---- helpers ------------------------------------------------------------------------------
    def fail(self, node, message):
        where = f" at {node.source}" if node.source else ""
        return ExportError(f"node '{node.name}' ({node.target}){where}: {message}")

    def ref(self, value):
        """Resolves references through aliases (recursively inside lists)."""
        if isinstance(value, Ref):
            return self.alias.get(value.name, value)
        if isinstance(value, (list, tuple)):
            return type(value)(self.ref(v) for v in value)
        return value

    def type_of(self, value):
        return self.types[self.ref(value).name]

    def emit(self, node, target, args, kwargs=None, types=None, name=None):
        """Emits one tensorc call standing for `node` (or a helper when `name` is given)."""
        types = types if types is not None else [node.type]
        name = self.fx.unique(name) if name else node.name
        result = self.fx.call(name, types, target, self.ref(list(args)),
                              {k: self.ref(v) for k, v in (kwargs or {}).items()})
        if len(types) == 1:
            self.types[name] = types[0]
        return result

    def helper(self, node, suffix, target, args, type, kwargs=None):
        return self.emit(node, target, args, kwargs, [type], name=f"{node.name}_{suffix}")

    def bind(self, node, ref):
        """`node`'s result is `ref` (no line of its own, or a helper's line)."""
        self.alias[node.name] = ref
        self.types[node.name] = self.types[ref.name]

    @staticmethod
    def shape_arg(type):
        """A size list written from a result type (static ints and symbolic exprs)."""
        return [d if isinstance(d, int) else Sym(str(d)) for d in type.shape]

    def dim(self, node, dim, rank):
        if not isinstance(dim, int):
            raise self.fail(node, f"dim {dim!r} must be a constant integer")
        if not -rank <= dim < max(rank, 1):
            raise self.fail(node, f"dim {dim} out of range for rank {rank}")
        return dim % rank if rank else 0

    # ---- the walk -----------------------------------------------------------------------------
    def run(self):
        prog = self.program
        for p in prog.placeholders:
            if p.data is not None and p.name not in self.used:
                continue  # an unused parameter or buffer (num_batches_tracked...)
            self.fx.placeholder(p.name, p.type)
            self.types[p.name] = p.type
        for node in prog.nodes:
            self.lower(node)
        for name in prog.outputs:
            if name not in self.types and name not in self.alias:
                raise ExportError(f"output '{name}' is not a tensor this graph computes")
            self.fx.outputs.append(self.ref(Ref(name)).name)
        return self.fx

    def lower(self, node):
        target = node.target
        if target == "getitem":
            return self.lower_getitem(node)
        parts = target.split(".")
        if len(parts) < 2 or parts[0] not in ("aten", "prims"):
            raise self.fail(node, "not an ATen op; tensorc maps ATen ops only")
        op, overload = parts[1], parts[2] if len(parts) > 2 else "default"
        if op in IGNORED:
            return None
        if op in ALIASES or (op in ("dropout", "native_dropout", "feature_dropout") and
                             not node.arg(2, "train", False)):
            if op == "native_dropout":
                self.multi[node.name] = "first"
            return self.bind(node, self.ref(node.args[0]))
        handler = getattr(self, f"op_{op}", None)
        if handler is None:
            if op in SAME_UNARY:
                return self.emit(node, f"aten.{op}", [node.args[0]])
            if op in SAME_BINARY:
                return self.emit(node, f"aten.{op}", node.args[:2])
            raise self.fail(node, f"no tensorc mapping for aten.{op}.{overload} (see "
                                  "tools/export_fx.py for the supported ops)")
        return handler(node, overload)

    def lower_getitem(self, node):
        source, index = node.args[0], node.args[1]
        kind = self.multi.get(source.name)
        if kind == "tuple":
            self.types[node.name] = node.type
            return self.fx.call(node.name, node.type, "getitem", [self.ref(source), index])
        if isinstance(kind, tuple):  # unbind: squeeze(getitem(split, index))
            _, split, dim, piece = kind
            item = self.fx.call(self.fx.unique(f"{node.name}_piece"), piece, "getitem",
                                [split, index])
            self.types[item.name] = piece
            return self.emit(node, "aten.squeeze", [item, [dim]])
        if kind == "first":
            if index != 0:
                raise self.fail(node, f"result {index} of '{source.name}' (statistics, indices "
                                      "or masks) has no tensorc equivalent")
            return self.bind(node, self.ref(source))
        raise self.fail(node, f"getitem of '{source.name}', which is not a multi-result op")

    # ---- elementwise --------------------------------------------------------------------------
    def op_gelu(self, node, _):
        return self.emit(node, "aten.gelu", [node.args[0]],
                         {"approximate": node.arg(1, "approximate", "none")})

    def clamp(self, node, lo, hi):
        if isinstance(lo, Ref) or isinstance(hi, Ref):
            raise self.fail(node, "tensor bounds are not supported (tensorc's clamp takes numbers)")
        return self.emit(node, "aten.clamp", [node.args[0], lo, hi])

    def op_clamp(self, node, _):
        return self.clamp(node, node.arg(1, "min"), node.arg(2, "max"))

    def op_clamp_min(self, node, _):
        return self.clamp(node, node.arg(1, "min"), None)

    def op_clamp_max(self, node, _):
        return self.clamp(node, None, node.arg(1, "max"))

    def op_relu6(self, node, _):
        return self.clamp(node, 0.0, 6.0)

    def op_hardtanh(self, node, _):
        return self.clamp(node, float(node.arg(1, "min_val", -1.0)),
                          float(node.arg(2, "max_val", 1.0)))

    def add_sub(self, node, target, swap=False):
        a, b = node.args[0], node.args[1]
        if swap:
            a, b = b, a
        alpha = node.arg(2, "alpha", 1)
        return self.emit(node, target, [a, b], {"alpha": alpha} if alpha != 1 else None)

    def op_add(self, node, _):
        return self.add_sub(node, "aten.add")

    def op_sub(self, node, _):
        return self.add_sub(node, "aten.sub")

    def op_rsub(self, node, _):
        return self.add_sub(node, "aten.sub", swap=True)

    def op_div(self, node, _):
        mode = node.arg(2, "rounding_mode")
        return self.emit(node, "aten.div", node.args[:2],
                         {"rounding_mode": mode} if mode is not None else None)

    def op_where(self, node, _):
        return self.emit(node, "aten.where", node.args[:3])

    def op_masked_fill(self, node, _):
        return self.emit(node, "aten.where", [node.args[1], node.args[2], node.args[0]])

    def convert(self, node, dtype):
        src = self.type_of(node.args[0])
        if dtype is None or dtype.name == src.dtype:
            return self.bind(node, self.ref(node.args[0]))
        return self.emit(node, "prims.convert_element_type", [node.args[0], dtype])

    def op__to_copy(self, node, _):
        return self.convert(node, node.kwargs.get("dtype"))

    def op_to(self, node, overload):
        dtype = next((a for a in list(node.args[1:]) + list(node.kwargs.values())
                      if isinstance(a, DType)), None)
        return self.convert(node, dtype)

    def op_type_as(self, node, _):
        return self.convert(node, DType(self.type_of(node.args[1]).dtype))

    def op_clone(self, node, _):
        return self.emit(node, "aten.clone", [node.args[0]])

    op_contiguous = op_clone

    # ---- reductions ---------------------------------------------------------------------------
    def reduce(self, node, target, dims, keepdim, dtype=None):
        dims = [] if dims is None else ([dims] if isinstance(dims, int) else list(dims))
        kwargs = {"dtype": dtype} if dtype is not None else None
        return self.emit(node, target, [node.args[0], dims, bool(keepdim)], kwargs)

    def op_sum(self, node, overload):
        if overload == "default":
            return self.reduce(node, "aten.sum", None, False, node.kwargs.get("dtype"))
        return self.reduce(node, "aten.sum", node.arg(1, "dim"), node.arg(2, "keepdim", False),
                           node.kwargs.get("dtype"))

    def op_mean(self, node, overload):
        if overload == "default":
            return self.reduce(node, "aten.mean", None, False, node.kwargs.get("dtype"))
        return self.reduce(node, "aten.mean", node.arg(1, "dim"), node.arg(2, "keepdim", False),
                           node.kwargs.get("dtype"))

    def op_amax(self, node, _):
        return self.reduce(node, "aten.amax", node.arg(1, "dim", []), node.arg(2, "keepdim", False))

    def op_amin(self, node, _):
        return self.reduce(node, "aten.amin", node.arg(1, "dim", []), node.arg(2, "keepdim", False))

    def op_prod(self, node, overload):
        if overload == "default":
            return self.reduce(node, "aten.prod", None, False, node.kwargs.get("dtype"))
        return self.reduce(node, "aten.prod", node.arg(1, "dim"), node.arg(2, "keepdim", False),
                           node.kwargs.get("dtype"))

    def arg_reduce(self, node, target):
        return self.emit(node, target, [node.args[0], node.arg(1, "dim"),
                                        bool(node.arg(2, "keepdim", False))])

    def op_argmax(self, node, _):
        return self.arg_reduce(node, "aten.argmax")

    def op_argmin(self, node, _):
        return self.arg_reduce(node, "aten.argmin")

    def op_var(self, node, overload):
        if overload == "correction":  # var(self, dim=None, *, correction=None, keepdim=False)
            dims, keepdim = node.arg(1, "dim"), node.kwargs.get("keepdim", False)
            correction = node.kwargs.get("correction")
            correction = 1 if correction is None else correction
        elif overload == "dim":  # var(self, dim, unbiased=True, keepdim=False)
            dims, keepdim = node.args[1], node.arg(3, "keepdim", False)
            correction = 1 if node.arg(2, "unbiased", True) else 0
        else:  # var(self, unbiased=True)
            dims, keepdim = None, False
            correction = 1 if node.arg(1, "unbiased", True) else 0
        dims = [] if dims is None else ([dims] if isinstance(dims, int) else list(dims))
        return self.emit(node, "aten.var", [node.args[0], dims], {"correction": correction,
                                                                  "keepdim": bool(keepdim)})

    def softmax(self, node, target):
        """softmax.int(self, dim, dtype=None) or _softmax(self, dim, half_to_float)."""
        third = node.arg(2, "dtype")
        if isinstance(third, bool):
            third = DType("f32") if third else None
        return self.emit(node, target, [node.args[0], node.arg(1, "dim")] + (
            [third] if third else []))

    def op_softmax(self, node, _):
        return self.softmax(node, "aten.softmax")

    op__softmax = op_softmax

    def op_log_softmax(self, node, _):
        return self.softmax(node, "aten.log_softmax")

    op__log_softmax = op_log_softmax

    # ---- linear algebra -----------------------------------------------------------------------
    def op_mm(self, node, _):
        return self.emit(node, "aten.mm", node.args[:2])

    def op_bmm(self, node, _):
        return self.emit(node, "aten.bmm", node.args[:2])

    def op_matmul(self, node, _):
        return self.emit(node, "aten.matmul", node.args[:2])

    def op_t(self, node, _):
        return self.emit(node, "aten.t", [node.args[0]])

    def op_addmm(self, node, _):
        kwargs = {k: node.kwargs[k] for k in ("beta", "alpha") if node.kwargs.get(k, 1) != 1}
        return self.emit(node, "aten.addmm", node.args[:3], kwargs)

    def op_linear(self, node, _):
        x, w, b = node.args[0], node.args[1], node.arg(2, "bias")
        wt = self.type_of(w)
        t = self.helper(node, "t", "aten.t", [w], wt.with_shape(wt.shape[::-1]))
        if b is not None and self.type_of(x).rank == 2:
            return self.emit(node, "aten.addmm", [b, x, t])
        if b is None:
            return self.emit(node, "aten.matmul", [x, t])
        mm = self.helper(node, "mm", "aten.matmul", [x, t], node.type)
        return self.emit(node, "aten.add", [mm, b])

    # ---- convolution, pooling, normalization --------------------------------------------------
    def conv(self, node, x, w, b, stride, padding, dilation, transposed, output_padding, groups):
        spatial = self.type_of(w).rank - 2
        expand = lambda v: list(v) * spatial if len(list(v)) == 1 else list(v)  # noqa: E731
        as_list = lambda v: expand(v if isinstance(v, (list, tuple)) else [v])  # noqa: E731
        if isinstance(padding, str):
            if padding == "valid":
                padding = [0] * spatial
            elif padding == "same":
                kernel = self.type_of(w).shape[2:]
                dil = as_list(dilation)
                totals = [d * (k - 1) for d, k in zip(dil, kernel)]
                if any(t % 2 for t in totals) or any(s != 1 for s in as_list(stride)):
                    raise self.fail(node, "padding='same' with an even kernel or a stride "
                                          "(asymmetric padding) is not supported")
                padding = [t // 2 for t in totals]
            else:
                raise self.fail(node, f"padding {padding!r}")
        return self.emit(node, "aten.convolution",
                         [x, w, b, as_list(stride), as_list(padding), as_list(dilation),
                          bool(transposed), as_list(output_padding), int(groups)])

    def op_convolution(self, node, _):
        a = list(node.args) + [None] * (9 - len(node.args))
        return self.conv(node, *a[:9])

    def _conv_nd(self, node, _):
        x, w = node.args[0], node.args[1]
        return self.conv(node, x, w, node.arg(2, "bias"), node.arg(3, "stride", [1]),
                         node.arg(4, "padding", [0]), node.arg(5, "dilation", [1]), False, [0],
                         node.arg(6, "groups", 1))

    op_conv1d = op_conv2d = op_conv3d = _conv_nd

    def _conv_transpose_nd(self, node, _):
        x, w = node.args[0], node.args[1]
        return self.conv(node, x, w, node.arg(2, "bias"), node.arg(3, "stride", [1]),
                         node.arg(4, "padding", [0]), node.arg(7, "dilation", [1]), True,
                         node.arg(5, "output_padding", [0]), node.arg(6, "groups", 1))

    op_conv_transpose1d = op_conv_transpose2d = op_conv_transpose3d = _conv_transpose_nd

    @staticmethod
    def pool_list(value, spatial):
        """An int or a one-element list, spelled out per spatial dim."""
        value = list(value) if isinstance(value, (list, tuple)) else [value]
        return value * spatial if len(value) == 1 else value

    def pool_args(self, node):
        """(input, kernel, stride, padding) of a pooling op; an empty stride means the kernel."""
        kernel = node.args[1]
        spatial = len(kernel) if isinstance(kernel, (list, tuple)) else \
            self.type_of(node.args[0]).rank - 2
        kernel = self.pool_list(kernel, spatial)
        stride = node.arg(2, "stride") or kernel
        return (node.args[0], kernel, self.pool_list(stride, spatial),
                self.pool_list(node.arg(3, "padding", 0), spatial), spatial)

    def max_pool(self, node, types=None):
        x, kernel, stride, padding, spatial = self.pool_args(node)
        return self.emit(node, "aten.max_pool",
                         [x, kernel, stride, padding,
                          self.pool_list(node.arg(4, "dilation", 1), spatial),
                          bool(node.arg(5, "ceil_mode", False))], types=types)

    def op_max_pool2d(self, node, _):
        return self.max_pool(node)

    op_max_pool1d = op_max_pool3d = op_max_pool2d

    def op_max_pool2d_with_indices(self, node, _):
        self.multi[node.name] = "first"
        return self.max_pool(node, [node.types[0]])

    op_max_pool1d_with_indices = op_max_pool3d_with_indices = op_max_pool2d_with_indices

    def op_avg_pool2d(self, node, _):
        x, kernel, stride, padding, _ = self.pool_args(node)
        return self.emit(node, "aten.avg_pool",
                         [x, kernel, stride, padding, bool(node.arg(4, "ceil_mode", False)),
                          bool(node.arg(5, "count_include_pad", True)),
                          node.arg(6, "divisor_override")])

    op_avg_pool1d = op_avg_pool3d = op_avg_pool2d

    def op_adaptive_avg_pool2d(self, node, _):
        x = self.type_of(node.args[0])
        out = list(node.args[1])
        spatial = x.shape[-len(out):]
        if all(o == 1 for o in out):
            dims = list(range(-len(out), 0))
            return self.emit(node, "aten.mean", [node.args[0], dims, True])
        if all(isinstance(s, int) and s % o == 0 for s, o in zip(spatial, out)):
            kernel = [s // o for s, o in zip(spatial, out)]
            return self.emit(node, "aten.avg_pool", [node.args[0], kernel, kernel])
        raise self.fail(node, f"adaptive pooling of {list(spatial)} to {out} (not a divisor)")

    op__adaptive_avg_pool2d = op_adaptive_avg_pool1d = op_adaptive_avg_pool3d = \
        op_adaptive_avg_pool2d

    def layer_norm(self, node, types):
        return self.emit(node, "aten.layer_norm",
                         [node.args[0], list(node.args[1]), node.arg(2, "weight"),
                          node.arg(3, "bias"), float(node.arg(4, "eps", 1e-5))], types=types)

    def op_layer_norm(self, node, _):
        return self.layer_norm(node, None)

    def op_native_layer_norm(self, node, _):
        self.multi[node.name] = "first"
        return self.layer_norm(node, [node.types[0]])

    def batch_norm(self, node, x, w, b, mean, var, momentum, eps, types=None):
        if mean is None or var is None:
            raise self.fail(node, "batch norm without running statistics (training mode?)")
        return self.emit(node, "aten.batch_norm", [x, w, b, mean, var, False, float(momentum),
                                                   float(eps)], types=types)

    def op__native_batch_norm_legit_no_training(self, node, _):
        self.multi[node.name] = "first"
        a = node.args
        return self.batch_norm(node, a[0], a[1], a[2], a[3], a[4], a[5], a[6], [node.types[0]])

    def op_batch_norm(self, node, _):
        a = node.args
        if a[5]:
            raise self.fail(node, "batch norm in training mode (call model.eval() first)")
        return self.batch_norm(node, a[0], a[1], a[2], a[3], a[4], a[6], a[7])

    def op__native_batch_norm_legit(self, node, _):
        raise self.fail(node, "batch norm in training mode (call model.eval() first)")

    # ---- views and data movement --------------------------------------------------------------
    def reshape_to_result(self, node, target):
        return self.emit(node, target, [node.args[0], self.shape_arg(node.type)])

    def op_view(self, node, _):
        return self.reshape_to_result(node, "aten.view")

    op__unsafe_view = op_view

    def op_reshape(self, node, _):
        return self.reshape_to_result(node, "aten.reshape")

    op_flatten = op_unflatten = op_reshape

    def op_expand(self, node, _):
        return self.reshape_to_result(node, "aten.expand")

    def op_expand_as(self, node, _):
        return self.reshape_to_result(node, "aten.expand")

    def op_permute(self, node, _):
        return self.emit(node, "aten.permute", [node.args[0], list(node.args[1])])

    def op_transpose(self, node, _):
        return self.emit(node, "aten.transpose", node.args[:3])

    def op_unsqueeze(self, node, _):
        return self.emit(node, "aten.unsqueeze", node.args[:2])

    def op_squeeze(self, node, overload):
        dims = node.arg(1, "dim", [])
        dims = [dims] if isinstance(dims, int) else list(dims or [])
        if overload == "default":  # every size-1 dim, spelled out
            src = self.type_of(node.args[0])
            dims = [i for i, d in enumerate(src.shape) if d == 1]
        return self.emit(node, "aten.squeeze", [node.args[0], dims])

    def op_slice(self, node, _):
        dim, start, end = node.arg(1, "dim", 0), node.arg(2, "start"), node.arg(3, "end")
        step = node.arg(4, "step", 1)
        if isinstance(end, int) and end >= INT64_MAX // 2:
            end = None
        if start == 0:
            start = None
        return self.emit(node, "aten.slice", [node.args[0], dim, start, end, step])

    def op_select(self, node, _):
        src = self.type_of(node.args[0])
        dim = self.dim(node, node.args[1], src.rank)
        index = node.args[2]
        if not isinstance(index, int):
            raise self.fail(node, "select with a symbolic index")
        size = src.shape[dim]
        if index < 0 and isinstance(size, int):
            index += size
        end = None if index == -1 else index + 1
        shape = list(src.shape)
        shape[dim] = 1
        sl = self.helper(node, "slice", "aten.slice", [node.args[0], dim, index, end, 1],
                         src.with_shape(shape))
        return self.emit(node, "aten.squeeze", [sl, [dim]])

    def op_cat(self, node, _):
        return self.emit(node, "aten.cat", [list(node.args[0]), node.arg(1, "dim", 0)])

    op_concat = op_concatenate = op_cat

    def op_stack(self, node, _):
        tensors, dim = list(node.args[0]), node.arg(1, "dim", 0)
        rank = node.type.rank
        dim = dim % rank
        parts = []
        for i, t in enumerate(tensors):
            shape = list(self.type_of(t).shape)
            shape.insert(dim, 1)
            parts.append(self.helper(node, f"u{i}", "aten.unsqueeze", [t, dim],
                                     self.type_of(t).with_shape(shape)))
        return self.emit(node, "aten.cat", [parts, dim])

    def split(self, node, dim):
        src = self.type_of(node.args[0])
        dim = self.dim(node, dim, src.rank)
        sizes = [t.shape[dim] for t in node.types]
        if not all(isinstance(s, int) for s in sizes):
            raise self.fail(node, "split along a symbolic dim")
        self.multi[node.name] = "tuple"
        return self.emit(node, "aten.split_with_sizes", [node.args[0], sizes, dim],
                         types=node.types)

    def op_split(self, node, _):
        return self.split(node, node.arg(2, "dim", 0))

    def op_split_with_sizes(self, node, _):
        return self.split(node, node.arg(2, "dim", 0))

    def op_chunk(self, node, _):
        return self.split(node, node.arg(2, "dim", 0))

    def op_unbind(self, node, _):
        src = self.type_of(node.args[0])
        dim = self.dim(node, node.arg(1, "dim", 0), src.rank)
        shape = list(src.shape)
        shape[dim] = 1
        piece = src.with_shape(shape)
        if not isinstance(src.shape[dim], int):
            raise self.fail(node, "unbind along a symbolic dim")
        split = self.emit(node, "aten.split_with_sizes", [node.args[0], [1] * src.shape[dim], dim],
                          types=[piece] * src.shape[dim], name=f"{node.name}_split")
        self.multi[node.name] = ("unbind", split, dim, piece)
        return split

    def op_gather(self, node, _):
        return self.emit(node, "aten.gather", node.args[:3])

    def op_index_select(self, node, _):
        return self.emit(node, "aten.index_select", node.args[:3])

    def op_embedding(self, node, _):
        return self.emit(node, "aten.embedding", node.args[:2])

    def op_constant_pad_nd(self, node, _):
        return self.emit(node, "aten.pad", [node.args[0], list(node.args[1]), "constant",
                                            float(node.arg(2, "value", 0.0))])

    def op_pad(self, node, _):
        mode, value = node.arg(2, "mode", "constant"), node.arg(3, "value")
        return self.emit(node, "aten.pad", [node.args[0], list(node.args[1]), mode,
                                            None if value is None else float(value)])

    def op_cumsum(self, node, _):
        dtype = node.kwargs.get("dtype")
        return self.emit(node, "aten.cumsum", node.args[:2], {"dtype": dtype} if dtype else None)

    def op_topk(self, node, _):
        self.multi[node.name] = "tuple"
        return self.emit(node, "aten.topk", [node.args[0], node.args[1], node.arg(2, "dim", -1),
                                             bool(node.arg(3, "largest", True)),
                                             bool(node.arg(4, "sorted", True))], types=node.types)

    # ---- creation -----------------------------------------------------------------------------
    def full(self, node, fill):
        return self.emit(node, "aten.full", [self.shape_arg(node.type), fill],
                         {"dtype": DType(node.type.dtype)})

    def op_full(self, node, _):
        return self.full(node, node.args[1])

    def op_zeros(self, node, _):
        return self.full(node, 0)

    def op_ones(self, node, _):
        return self.full(node, 1)

    def op_scalar_tensor(self, node, _):
        return self.full(node, node.args[0])

    def op_new_zeros(self, node, _):
        return self.full(node, 0)

    def op_new_ones(self, node, _):
        return self.full(node, 1)

    def op_new_full(self, node, _):
        return self.full(node, node.args[2])

    def op_zeros_like(self, node, _):
        return self.emit(node, "aten.zeros_like", [node.args[0]],
                         {"dtype": DType(node.type.dtype)})

    def op_ones_like(self, node, _):
        return self.emit(node, "aten.full_like", [node.args[0], 1],
                         {"dtype": DType(node.type.dtype)})

    def op_full_like(self, node, _):
        return self.emit(node, "aten.full_like", [node.args[0], node.args[1]],
                         {"dtype": DType(node.type.dtype)})

    def op_arange(self, node, overload):
        if overload == "default":
            start, end, step = 0, node.args[0], 1
        else:
            start, end = node.args[0], node.args[1]
            step = node.arg(2, "step", 1) if overload == "start_step" else 1
        if any(isinstance(v, (Sym, Ref)) for v in (start, end, step)):
            raise self.fail(node, "arange with symbolic bounds")
        return self.emit(node, "aten.arange", [start, end, step],
                         {"dtype": DType(node.type.dtype)})

    # ---- attention ----------------------------------------------------------------------------
    def op_scaled_dot_product_attention(self, node, _):
        """softmax(q @ k^T * scale [+ mask | masked where False | causal]) @ v, written out as
        the ops tensorc's fuse-attention pass recognizes."""
        q, k, v = node.args[:3]
        mask = node.arg(3, "attn_mask")
        if node.arg(4, "dropout_p", 0.0):
            raise self.fail(node, "dropout_p must be 0 at inference")
        causal = bool(node.arg(5, "is_causal", False))
        scale = node.arg(6, "scale") if len(node.args) > 6 else node.kwargs.get("scale")
        if node.kwargs.get("enable_gqa") or (len(node.args) > 7 and node.args[7]):
            raise self.fail(node, "enable_gqa is not supported")
        qt, kt_type = self.type_of(q), self.type_of(k)
        if scale is None:
            e = qt.shape[-1]
            if not isinstance(e, int):
                raise self.fail(node, "a symbolic head size needs an explicit scale")
            scale = 1.0 / math.sqrt(e)
        batch = list(qt.shape[:-2])
        L, S = qt.shape[-2], kt_type.shape[-2]
        kshape = list(kt_type.shape)
        kshape[-2], kshape[-1] = kshape[-1], kshape[-2]
        kt = self.helper(node, "kt", "aten.transpose", [k, -2, -1], kt_type.with_shape(kshape))
        scores_type = qt.with_shape(batch + [L, S])
        s = self.helper(node, "qk", "aten.matmul", [q, kt], scores_type)
        s = self.helper(node, "scaled", "aten.mul", [s, float(scale)], scores_type)
        if causal:
            if not (isinstance(L, int) and isinstance(S, int)):
                raise self.fail(node, "is_causal with symbolic sequence lengths")
            i64 = TensorType("i64", [])
            rows = self.helper(node, "rows", "aten.arange", [0, L, 1], i64.with_shape([L]),
                               {"dtype": DType("i64")})
            rows = self.helper(node, "rows2", "aten.unsqueeze", [rows, 1], i64.with_shape([L, 1]))
            cols = self.helper(node, "cols", "aten.arange", [0, S, 1], i64.with_shape([S]),
                               {"dtype": DType("i64")})
            # torch's is_causal keeps key j <= query i (top-left aligned).
            keep = self.helper(node, "causal", "aten.ge", [rows, cols],
                               TensorType("bool", [L, S]))
            s = self.helper(node, "masked", "aten.where", [keep, s, -math.inf], scores_type)
        if mask is not None:
            mt = self.type_of(mask)
            if mt.dtype == "bool":
                s = self.helper(node, "attn_mask", "aten.where", [mask, s, -math.inf],
                                scores_type)
            else:
                s = self.helper(node, "attn_mask", "aten.add", [s, mask], scores_type)
        p = self.helper(node, "probs", "aten.softmax", [s, -1], scores_type)
        return self.emit(node, "aten.matmul", [p, v])


def used_names(program):
    """Names that some node's arguments or the outputs mention."""
    used, stack = set(program.outputs), []
    for node in program.nodes:
        stack.extend(node.args)
        stack.extend(node.kwargs.values())
    while stack:
        v = stack.pop()
        if isinstance(v, Ref):
            used.add(v.name)
        elif isinstance(v, (list, tuple)):
            stack.extend(v)
    return used


def lower(program):
    """The tensorc FX-text of a Program (str)."""
    return Lowering(program).run().text(program.comment)


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
