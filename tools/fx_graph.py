"""The torch-free description of a program for tools/export_fx.py: dtypes, dims and tensor types,
nodes, placeholders and the Program, and FxGraph, which collects tensorc FX-text lines."""
import math


class ExportError(Exception):
    """A program tensorc's FX-text cannot express; the message names the node."""


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
