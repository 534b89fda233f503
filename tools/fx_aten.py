"""ATen -> tensorc, torch-free, for tools/export_fx.py: Lowering maps each ATen node of a Program
onto tensorc's registry ops (include/tensorc/IR/OpList.def) and writes the FX-text."""
import math

from fx_graph import DType, ExportError, FxGraph, Ref, Sym, TensorType


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
