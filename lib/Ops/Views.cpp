// View and data-movement ops: view, reshape, permute, transpose, t, expand, squeeze, unsqueeze,
// slice, cat, split_with_sizes, clone; Pad.cpp has pad.
#include "DecomposeHelpers.h"
#include "DenseKernels.h"
#include "OpGroups.h"
#include "OpHelpers.h"

#include "tensorc/Support/StrCat.h"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <limits>

namespace tensorc::ops {

namespace {

using Types = std::vector<TensorType>;

// ---- Kernel helpers --------------------------------------------------------------------------
// The interpreter has no strided views: every op here materializes its result. Kernels work on
// bytes (element-size chunks) so that one code path serves every dtype.

/// A strided read of a contiguous buffer, as torch's as_strided describes it: `shape`, element
/// strides (0 on broadcast dims) and a starting element offset.
struct StridedView {
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;
  int64_t offset = 0;
};

template <size_t N>
void copyElements(const std::byte *src, int64_t srcStride, std::byte *dst, int64_t count) {
  for (int64_t i = 0; i < count; ++i)
    std::memcpy(dst + i * int64_t(N), src + i * srcStride * int64_t(N), N);
}

/// Copies `count` elements spaced `srcStride` elements apart into a contiguous run.
void copyRun(const std::byte *src, int64_t srcStride, std::byte *dst, int64_t count,
             size_t elementSize) {
  if (srcStride == 1) {
    std::memcpy(dst, src, size_t(count) * elementSize);
    return;
  }
  switch (elementSize) {
  case 1:
    return copyElements<1>(src, srcStride, dst, count);
  case 2:
    return copyElements<2>(src, srcStride, dst, count);
  case 4:
    return copyElements<4>(src, srcStride, dst, count);
  case 8:
    return copyElements<8>(src, srcStride, dst, count);
  }
  for (int64_t i = 0; i < count; ++i)
    std::memcpy(dst + i * int64_t(elementSize), src + i * srcStride * int64_t(elementSize),
                elementSize);
}

/// Materializes `view` of `src` into the contiguous `dst` (which holds the view's element count).
void copyStrided(const std::byte *src, const StridedView &view, std::byte *dst,
                 size_t elementSize) {
  // Coalesce: size-1 dims vanish, and a dim whose stride spans the next one merges with it, so
  // a permute that keeps the innermost dims together copies long contiguous runs.
  std::vector<int64_t> shape, strides;
  for (size_t i = 0; i < view.shape.size(); ++i) {
    if (view.shape[i] == 0)
      return;
    if (view.shape[i] == 1)
      continue;
    if (!shape.empty() && strides.back() == view.strides[i] * view.shape[i]) {
      shape.back() *= view.shape[i];
      strides.back() = view.strides[i];
    } else {
      shape.push_back(view.shape[i]);
      strides.push_back(view.strides[i]);
    }
  }
  const std::byte *base = src + view.offset * int64_t(elementSize);
  if (shape.empty()) {
    std::memcpy(dst, base, elementSize);
    return;
  }
  size_t outerRank = shape.size() - 1;
  int64_t inner = shape.back();
  int64_t outer = 1;
  for (size_t d = 0; d < outerRank; ++d)
    outer *= shape[d];
  std::vector<int64_t> counter(outerRank, 0);
  int64_t srcOffset = 0;
  for (int64_t o = 0; o < outer; ++o) {
    copyRun(base + srcOffset * int64_t(elementSize), strides.back(), dst, inner, elementSize);
    dst += inner * int64_t(elementSize);
    for (size_t d = outerRank; d-- > 0;) {
      srcOffset += strides[d];
      if (++counter[d] < shape[d])
        break;
      srcOffset -= strides[d] * shape[d];
      counter[d] = 0;
    }
  }
}

/// Copies `view` of the kernel's input 0 into its output 0.
Status materialize(KernelContext &ctx, const StridedView &view) {
  const Tensor &input = ctx.input(0);
  Tensor &output = ctx.output(0);
  copyStrided(bytesOf(input), view, mutableBytesOf(output), dtypeSize(input.dtype()));
  return Status::ok();
}

// ---- view, reshape ---------------------------------------------------------------------------

/// The result of viewing `input` as `sizes` (one -1 inferred from the element count).
Expected<Shape> viewShape(const Shape &input, const std::vector<SymInt> &sizes) {
  SymInt numel(1);
  for (const SymInt &dim : input)
    numel = numel * dim;
  std::optional<size_t> inferred;
  SymInt known(1);
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (std::optional<int64_t> size = sizes[i].constant()) {
      if (*size == -1) {
        if (inferred)
          return makeError("only one dimension can be inferred in ", listStr(sizes));
        inferred = i;
        continue;
      }
      if (*size < 0)
        return makeError("invalid size ", *size, " at position ", i, " of ", listStr(sizes));
    }
    known = known * sizes[i];
  }
  Shape result = sizes;
  if (inferred) {
    if (known == SymInt(0))
      return makeError("cannot infer the -1 in ", listStr(sizes),
                       ": the other sizes hold 0 elements, so it could be any value");
    std::optional<SymInt> quotient = SymInt::exactDiv(numel, known);
    if (!quotient)
      return makeError("shape ", listStr(sizes), " is invalid for input of shape ", listStr(input),
                       " (", numel, " elements are not a multiple of ", known, ")");
    result[*inferred] = *quotient;
  } else if (known != numel) {
    return makeError("shape ", listStr(sizes), " is invalid for input of shape ", listStr(input),
                     " (", known, " elements vs ", numel, ")");
  }
  return result;
}

Expected<Types> inferViewLike(const InferContext &ctx, const std::string &sizeName) {
  const TensorType &self = ctx.input(0);
  TC_ASSIGN_OR_RETURN(Shape shape, viewShape(self.shape, ctx.getInts(sizeName)));
  return Types{TensorType(self.dtype, std::move(shape))};
}

// ---- permute, transpose, t -------------------------------------------------------------------

/// The normalized permutation `dims` of a rank-`rank` tensor.
Expected<std::vector<size_t>> permutation(const std::vector<int64_t> &dims, size_t rank) {
  if (dims.size() != rank)
    return makeError("permutation has ", dims.size(), " dims for a tensor of rank ", rank);
  std::vector<size_t> result;
  std::vector<bool> seen(rank, false);
  for (int64_t dim : dims) {
    TC_ASSIGN_OR_RETURN(size_t d, normalizeDim(dim, rank));
    if (seen[d])
      return makeError("dim ", dim, " appears more than once in the permutation");
    seen[d] = true;
    result.push_back(d);
  }
  return result;
}

Shape permuteShape(const Shape &shape, const std::vector<size_t> &perm) {
  Shape result;
  for (size_t d : perm)
    result.push_back(shape[d]);
  return result;
}

Status permuteKernelImpl(KernelContext &ctx, const std::vector<size_t> &perm) {
  const Tensor &input = ctx.input(0);
  std::vector<int64_t> strides = input.strides();
  StridedView view;
  for (size_t d : perm) {
    view.shape.push_back(input.dim(d));
    view.strides.push_back(strides[d]);
  }
  return materialize(ctx, view);
}

/// The permutation that swaps dims `dim0` and `dim1` (identity for a 0-d tensor).
Expected<std::vector<size_t>> transposition(int64_t dim0, int64_t dim1, size_t rank) {
  TC_ASSIGN_OR_RETURN(size_t a, normalizeDim(dim0, rank));
  TC_ASSIGN_OR_RETURN(size_t b, normalizeDim(dim1, rank));
  std::vector<size_t> perm;
  for (size_t i = 0; i < rank; ++i)
    perm.push_back(i);
  if (rank != 0)
    std::swap(perm[a], perm[b]);
  return perm;
}

Expected<std::vector<size_t>> matrixTransposition(size_t rank) {
  if (rank > 2)
    return makeError("t expects a tensor of rank <= 2, got rank ", rank);
  return rank == 2   ? std::vector<size_t>{1, 0}
         : rank == 1 ? std::vector<size_t>{0}
                     : std::vector<size_t>{};
}

Expected<Types> inferPermute(const InferContext &ctx) {
  const TensorType &self = ctx.input(0);
  TC_ASSIGN_OR_RETURN(std::vector<int64_t> dims, ctx.getStaticInts("dims"));
  TC_ASSIGN_OR_RETURN(std::vector<size_t> perm, permutation(dims, self.rank()));
  return Types{TensorType(self.dtype, permuteShape(self.shape, perm))};
}

Status permuteKernel(KernelContext &ctx) {
  TC_ASSIGN_OR_RETURN(std::vector<int64_t> dims, ctx.getStaticInts("dims"));
  TC_ASSIGN_OR_RETURN(std::vector<size_t> perm, permutation(dims, ctx.input(0).rank()));
  return permuteKernelImpl(ctx, perm);
}

Expected<Types> inferTranspose(const InferContext &ctx) {
  const TensorType &self = ctx.input(0);
  TC_ASSIGN_OR_RETURN(std::vector<size_t> perm,
                      transposition(ctx.getInt("dim0"), ctx.getInt("dim1"), self.rank()));
  return Types{TensorType(self.dtype, permuteShape(self.shape, perm))};
}

Status transposeKernel(KernelContext &ctx) {
  TC_ASSIGN_OR_RETURN(std::vector<size_t> perm,
                      transposition(ctx.getInt("dim0"), ctx.getInt("dim1"), ctx.input(0).rank()));
  return permuteKernelImpl(ctx, perm);
}

Expected<Types> inferT(const InferContext &ctx) {
  const TensorType &self = ctx.input(0);
  TC_ASSIGN_OR_RETURN(std::vector<size_t> perm, matrixTransposition(self.rank()));
  return Types{TensorType(self.dtype, permuteShape(self.shape, perm))};
}

Status tKernel(KernelContext &ctx) {
  TC_ASSIGN_OR_RETURN(std::vector<size_t> perm, matrixTransposition(ctx.input(0).rank()));
  return permuteKernelImpl(ctx, perm);
}

// ---- expand ----------------------------------------------------------------------------------

Expected<Types> inferExpand(const InferContext &ctx) {
  const TensorType &self = ctx.input(0);
  const std::vector<SymInt> &sizes = ctx.getInts("size");
  if (sizes.size() < self.rank())
    return makeError("expand to ", listStr(sizes), " has fewer dims than the input ", self.str());
  size_t leading = sizes.size() - self.rank();
  Shape result;
  for (size_t i = 0; i < sizes.size(); ++i) {
    const SymInt &size = sizes[i];
    std::optional<int64_t> constant = size.constant();
    if (constant && *constant < -1)
      return makeError("invalid size ", *constant, " at position ", i, " of ", listStr(sizes));
    if (i < leading) {
      if (constant == -1)
        return makeError("expand size -1 is not allowed for the new leading dim ", i);
      result.push_back(size);
      continue;
    }
    const SymInt &dim = self.shape[i - leading];
    if (constant == -1 || size == dim) {
      result.push_back(dim);
    } else if (dim == SymInt(1)) {
      result.push_back(size);
    } else if (dim.isConstant() && constant) {
      return makeError("cannot expand ", self.str(), " to ", listStr(sizes), ": dim ", i,
                       " has size ", dim, ", not 1, and differs from ", size);
    } else {
      // A symbolic dim meeting another size must equal it at run time (the interpreter checks
      // concrete shapes); keep the constant side, as broadcasting does.
      result.push_back(dim.isConstant() ? dim : size);
    }
  }
  return Types{TensorType(self.dtype, std::move(result))};
}

Status expandKernel(KernelContext &ctx) {
  const Tensor &input = ctx.input(0);
  const std::vector<int64_t> &outShape = ctx.output(0).shape();
  std::vector<int64_t> strides = input.strides();
  size_t leading = outShape.size() - input.rank();
  StridedView view{outShape, std::vector<int64_t>(outShape.size(), 0), 0};
  for (size_t i = leading; i < outShape.size(); ++i) {
    int64_t dim = input.dim(i - leading);
    if (dim != outShape[i] && dim != 1)
      return makeError("internal: cannot expand dim of size ", dim, " to ", outShape[i]);
    view.strides[i] = dim == 1 ? 0 : strides[i - leading];
  }
  return materialize(ctx, view);
}

// ---- squeeze, unsqueeze ----------------------------------------------------------------------

Expected<Types> inferSqueeze(const InferContext &ctx) {
  const TensorType &self = ctx.input(0);
  TC_ASSIGN_OR_RETURN(std::vector<int64_t> dims, ctx.getStaticInts("dim"));
  TC_ASSIGN_OR_RETURN(std::vector<size_t> chosen, normalizeDims(dims, self.rank(), true));
  Shape result;
  for (size_t i = 0; i < self.rank(); ++i) {
    bool listed = std::find(chosen.begin(), chosen.end(), i) != chosen.end();
    // Only dims known to be 1 go; a listed dim of another size stays, as in torch.
    if (!(listed && self.shape[i] == SymInt(1)))
      result.push_back(self.shape[i]);
  }
  return Types{TensorType(self.dtype, std::move(result))};
}

Expected<Types> inferUnsqueeze(const InferContext &ctx) {
  const TensorType &self = ctx.input(0);
  TC_ASSIGN_OR_RETURN(size_t dim, normalizeDim(ctx.getInt("dim"), self.rank() + 1));
  Shape result = self.shape;
  result.insert(result.begin() + std::ptrdiff_t(dim), SymInt(1));
  return Types{TensorType(self.dtype, std::move(result))};
}

// ---- slice -----------------------------------------------------------------------------------

/// Bounds at or beyond this mean "to the end" on a symbolic dim (exporters write INT64_MAX or
/// INT32_MAX for an open end; no real dim is that large).
constexpr int64_t kOpenBound = std::numeric_limits<int32_t>::max();

struct SliceRange {
  int64_t start = 0, length = 0;
};

/// Python slice clamping on a dim of concrete size `size`.
Expected<SliceRange> sliceRange(int64_t size, std::optional<int64_t> start,
                                std::optional<int64_t> end, int64_t step) {
  if (step < 1)
    return makeError("slice step must be positive, got ", step);
  auto clamp = [size](int64_t bound) {
    if (bound < 0)
      bound = bound < -size ? 0 : bound + size;
    return std::min(bound, size);
  };
  int64_t first = clamp(start.value_or(0));
  int64_t last = clamp(end.value_or(size));
  SliceRange range;
  range.start = first;
  range.length = last > first ? (last - first - 1) / step + 1 : 0;
  return range;
}

/// The slice length on a symbolic dim. Constant bounds are assumed to lie inside the dim (as
/// torch.export guards `s0 >= end`); the interpreter's result-shape check catches a violation.
Expected<SymInt> symbolicSliceLength(const SymInt &size, std::optional<int64_t> start,
                                     std::optional<int64_t> end, int64_t step) {
  if (step < 1)
    return makeError("slice step must be positive, got ", step);
  auto resolve = [&size](std::optional<int64_t> bound, const SymInt &none) -> SymInt {
    if (!bound)
      return none;
    if (*bound >= kOpenBound)
      return size;
    if (*bound <= -kOpenBound)
      return SymInt(0);
    return *bound < 0 ? size + SymInt(*bound) : SymInt(*bound);
  };
  SymInt extent = resolve(end, size) - resolve(start, SymInt(0));
  if (std::optional<int64_t> constant = extent.constant())
    return SymInt(*constant > 0 ? (*constant - 1) / step + 1 : 0);
  return SymInt::floorDiv(extent + SymInt(step - 1), step);
}

std::optional<int64_t> optionalInt(const AttrReader &attrs, const std::string &name) {
  if (attrs.isNone(name))
    return std::nullopt;
  return attrs.getInt(name);
}

Expected<Types> inferSlice(const InferContext &ctx) {
  const TensorType &self = ctx.input(0);
  if (self.rank() == 0)
    return makeError("slice cannot be applied to a 0-d tensor");
  TC_ASSIGN_OR_RETURN(size_t dim, normalizeShapeDim(ctx.getInt("dim"), self.rank()));
  std::optional<int64_t> start = optionalInt(ctx, "start"), end = optionalInt(ctx, "end");
  int64_t step = ctx.getInt("step");
  Shape result = self.shape;
  if (std::optional<int64_t> size = self.shape[dim].constant()) {
    TC_ASSIGN_OR_RETURN(SliceRange range, sliceRange(*size, start, end, step));
    result[dim] = SymInt(range.length);
  } else {
    TC_ASSIGN_OR_RETURN(result[dim], symbolicSliceLength(self.shape[dim], start, end, step));
  }
  return Types{TensorType(self.dtype, std::move(result))};
}

Status sliceKernel(KernelContext &ctx) {
  const Tensor &input = ctx.input(0);
  TC_ASSIGN_OR_RETURN(size_t dim, normalizeShapeDim(ctx.getInt("dim"), input.rank()));
  int64_t step = ctx.getInt("step");
  TC_ASSIGN_OR_RETURN(SliceRange range, sliceRange(input.dim(dim), optionalInt(ctx, "start"),
                                                   optionalInt(ctx, "end"), step));
  StridedView view{input.shape(), input.strides(), 0};
  view.offset = range.start * view.strides[dim];
  view.shape[dim] = range.length;
  view.strides[dim] *= step;
  return materialize(ctx, view);
}

// ---- cat, split_with_sizes -------------------------------------------------------------------

/// torch.cat skips legacy 1-D empty tensors whatever the other inputs' rank.
bool isSkippedInCat(const Shape &shape) { return shape.size() == 1 && shape[0] == SymInt(0); }

Expected<Types> inferCat(const InferContext &ctx) {
  if (ctx.numInputs() == 0)
    return makeError("cat expects a non-empty list of tensors");
  std::vector<const TensorType *> operands;
  const TensorType *first = nullptr;
  for (size_t i = 0; i < ctx.numInputs(); ++i) {
    const TensorType &type = ctx.input(i);
    operands.push_back(&type);
    if (type.rank() == 0)
      return makeError("tensor ", i, " is 0-d and cannot be concatenated");
    if (!first && !isSkippedInCat(type.shape))
      first = &type;
  }
  DType dtype = resultType(operands);
  if (!first)
    return Types{TensorType(dtype, {SymInt(0)})};
  TC_ASSIGN_OR_RETURN(size_t dim, normalizeShapeDim(ctx.getInt("dim"), first->rank()));
  Shape result = first->shape;
  result[dim] = SymInt(0);
  for (size_t i = 0; i < ctx.numInputs(); ++i) {
    const TensorType &type = ctx.input(i);
    if (isSkippedInCat(type.shape))
      continue;
    if (type.rank() != first->rank())
      return makeError("tensor ", i, " has rank ", type.rank(), " but tensor 0 has rank ",
                       first->rank(), " (", type.str(), " vs ", first->str(), ")");
    for (size_t d = 0; d < type.rank(); ++d) {
      if (d == dim)
        continue;
      const SymInt &a = result[d], &b = type.shape[d];
      if (a == b)
        continue;
      if (a.isConstant() && b.isConstant())
        return makeError("sizes of tensors must match except in dim ", dim, ": tensor ", i, " is ",
                         type.str(), ", expected size ", a, " in dim ", d);
      // A symbolic size must equal the other at run time; keep the constant one.
      if (!a.isConstant() && b.isConstant())
        result[d] = b;
    }
    result[dim] = result[dim] + type.shape[dim];
  }
  return Types{TensorType(dtype, std::move(result))};
}

Status catKernel(KernelContext &ctx) {
  Tensor &output = ctx.output(0);
  const Tensor *first = nullptr;
  for (size_t i = 0; i < ctx.numInputs() && !first; ++i)
    if (!(ctx.input(i).rank() == 1 && ctx.input(i).dim(0) == 0))
      first = &ctx.input(i);
  if (!first)
    return Status::ok();
  TC_ASSIGN_OR_RETURN(size_t dim, normalizeShapeDim(ctx.getInt("dim"), first->rank()));
  AxisSplit split = splitAtAxis(output.shape(), dim);
  size_t elementSize = dtypeSize(output.dtype());
  std::byte *out = mutableBytesOf(output);
  int64_t position = 0; // along `dim`
  for (size_t i = 0; i < ctx.numInputs(); ++i) {
    if (ctx.input(i).rank() == 1 && ctx.input(i).dim(0) == 0)
      continue;
    TC_ASSIGN_OR_RETURN(Tensor input, convertTo(ctx.input(i), output.dtype()));
    int64_t run = input.dim(dim) * split.inner;
    const std::byte *in = bytesOf(input);
    if (run != 0)
      for (int64_t o = 0; o < split.outer; ++o)
        std::memcpy(out + ((o * split.size + position) * split.inner) * int64_t(elementSize),
                    in + o * run * int64_t(elementSize), size_t(run) * elementSize);
    position += input.dim(dim);
  }
  return Status::ok();
}

Expected<Types> inferSplit(const InferContext &ctx) {
  const TensorType &self = ctx.input(0);
  if (self.rank() == 0)
    return makeError("split_with_sizes cannot be applied to a 0-d tensor");
  TC_ASSIGN_OR_RETURN(size_t dim, normalizeShapeDim(ctx.getInt("dim"), self.rank()));
  const std::vector<SymInt> &sizes = ctx.getInts("split_sizes");
  if (sizes.empty())
    return makeError("split_sizes is empty");
  SymInt total(0);
  Types results;
  for (const SymInt &size : sizes) {
    if (std::optional<int64_t> constant = size.constant(); constant && *constant < 0)
      return makeError("split_sizes ", listStr(sizes), " holds a negative size");
    total = total + size;
    Shape shape = self.shape;
    shape[dim] = size;
    results.emplace_back(self.dtype, std::move(shape));
  }
  if (total != self.shape[dim])
    return makeError("split_sizes ", listStr(sizes), " sum to ", total, " but dim ", dim, " of ",
                     self.str(), " has size ", self.shape[dim]);
  return results;
}

Status splitKernel(KernelContext &ctx) {
  const Tensor &input = ctx.input(0);
  TC_ASSIGN_OR_RETURN(size_t dim, normalizeShapeDim(ctx.getInt("dim"), input.rank()));
  AxisSplit split = splitAtAxis(input.shape(), dim);
  size_t elementSize = dtypeSize(input.dtype());
  const std::byte *in = bytesOf(input);
  int64_t position = 0;
  for (size_t k = 0; k < ctx.numOutputs(); ++k) {
    Tensor &output = ctx.output(k);
    int64_t run = output.dim(dim) * split.inner;
    std::byte *out = mutableBytesOf(output);
    if (run != 0)
      for (int64_t o = 0; o < split.outer; ++o)
        std::memcpy(out + o * run * int64_t(elementSize),
                    in + ((o * split.size + position) * split.inner) * int64_t(elementSize),
                    size_t(run) * elementSize);
    position += output.dim(dim);
  }
  return Status::ok();
}

// ---- clone -----------------------------------------------------------------------------------

Expected<Types> inferSameType(const InferContext &ctx) { return Types{ctx.input(0)}; }

// ---- Decompositions ---------------------------------------------------------------------------
// Every view op here copies, so reshape and view are one op, and t/transpose are permutes.

/// A permute by `perm`, or the input itself when `perm` is the identity.
DecomposeResult permuteOrSelf(DecomposeBuilder &b, const std::vector<size_t> &perm) {
  bool identity = true;
  std::vector<int64_t> dims;
  for (size_t i = 0; i < perm.size(); ++i) {
    identity = identity && perm[i] == i;
    dims.push_back(int64_t(perm[i]));
  }
  if (identity)
    return replaceWith(b.operand(0));
  TC_ASSIGN_OR_RETURN(Value * result, b.emit(OpId::Permute, {b.operand(0)}, {{"dims", dims}}));
  return replaceWith(result);
}

/// transpose(x, d0, d1) = permute(x, identity with d0 and d1 swapped).
DecomposeResult decomposeTranspose(RewriteContext &rewrite, const OpRegistry &registry) {
  DecomposeBuilder b(rewrite, registry);
  AttrReader attrs(b.node().attrs());
  TC_ASSIGN_OR_RETURN(
      std::vector<size_t> perm,
      transposition(attrs.getInt("dim0"), attrs.getInt("dim1"), b.operand(0)->type().rank()));
  return permuteOrSelf(b, perm);
}

/// t(x) = permute(x, [1, 0]); a vector or 0-d tensor is its own transpose.
DecomposeResult decomposeT(RewriteContext &rewrite, const OpRegistry &registry) {
  DecomposeBuilder b(rewrite, registry);
  TC_ASSIGN_OR_RETURN(std::vector<size_t> perm, matrixTransposition(b.operand(0)->type().rank()));
  return permuteOrSelf(b, perm);
}

/// reshape(x, shape) = view(x, shape).
DecomposeResult decomposeReshape(RewriteContext &rewrite, const OpRegistry &registry) {
  DecomposeBuilder b(rewrite, registry);
  TC_ASSIGN_OR_RETURN(Value * result,
                      b.emit(OpId::View, {b.operand(0)}, {{"size", b.node().attr("shape")}}));
  return replaceWith(result);
}

} // namespace

Status registerViewOps(OpRegistry &registry) {
  const Attribute noDims{std::vector<SymInt>{}};
  TC_RETURN_IF_ERROR(registry.add(makeOp(
      OpId::View, {tensorParam("self"), attrParam("size", AttrKind::Ints)},
      [](const InferContext &ctx) { return inferViewLike(ctx, "size"); }, copyKernel)));
  TC_RETURN_IF_ERROR(registry.add(withDecompose(
      makeOp(
          OpId::Reshape, {tensorParam("self"), attrParam("shape", AttrKind::Ints)},
          [](const InferContext &ctx) { return inferViewLike(ctx, "shape"); }, copyKernel),
      decomposeReshape)));
  TC_RETURN_IF_ERROR(
      registry.add(makeOp(OpId::Permute, {tensorParam("self"), attrParam("dims", AttrKind::Ints)},
                          inferPermute, permuteKernel)));
  TC_RETURN_IF_ERROR(
      registry.add(withDecompose(makeOp(OpId::Transpose,
                                        {tensorParam("self"), attrParam("dim0", AttrKind::Int),
                                         attrParam("dim1", AttrKind::Int)},
                                        inferTranspose, transposeKernel),
                                 decomposeTranspose)));
  TC_RETURN_IF_ERROR(registry.add(
      withDecompose(makeOp(OpId::T, {tensorParam("self")}, inferT, tKernel), decomposeT)));
  TC_RETURN_IF_ERROR(
      registry.add(makeOp(OpId::Expand, {tensorParam("self"), attrParam("size", AttrKind::Ints)},
                          inferExpand, expandKernel)));
  TC_RETURN_IF_ERROR(registry.add(
      makeOp(OpId::Squeeze, {tensorParam("self"), attrParam("dim", AttrKind::Ints, noDims)},
             inferSqueeze, copyKernel)));
  TC_RETURN_IF_ERROR(
      registry.add(makeOp(OpId::Unsqueeze, {tensorParam("self"), attrParam("dim", AttrKind::Int)},
                          inferUnsqueeze, copyKernel)));
  TC_RETURN_IF_ERROR(registry.add(
      makeOp(OpId::Slice,
             {tensorParam("self"), attrParam("dim", AttrKind::Int, Attribute(0)),
              optionalAttrParam("start", AttrKind::Int), optionalAttrParam("end", AttrKind::Int),
              attrParam("step", AttrKind::Int, Attribute(1))},
             inferSlice, sliceKernel)));
  TC_RETURN_IF_ERROR(registry.add(
      makeOp(OpId::Cat, {tensorListParam("tensors"), attrParam("dim", AttrKind::Int, Attribute(0))},
             inferCat, catKernel)));
  TC_RETURN_IF_ERROR(
      registry.add(makeOp(OpId::Split,
                          {tensorParam("self"), attrParam("split_sizes", AttrKind::Ints),
                           attrParam("dim", AttrKind::Int, Attribute(0))},
                          inferSplit, splitKernel)));
  TC_RETURN_IF_ERROR(
      registry.add(makeOp(OpId::Clone, {tensorParam("self")}, inferSameType, copyKernel)));
  return Status::ok();
}

Expected<Tensor> convertTo(const Tensor &tensor, DType dtype) {
  if (tensor.dtype() == dtype)
    return tensor;
  TC_ASSIGN_OR_RETURN(Tensor result, Tensor::zeros(dtype, tensor.shape()));
  // Integers go through int64 so that large values survive; anything with a float through double.
  bool viaInt = !isFloating(tensor.dtype()) && !isFloating(dtype);
  for (int64_t i = 0; i < tensor.numel(); ++i) {
    if (viaInt)
      result.setInt(i, tensor.getInt(i));
    else
      result.setDouble(i, tensor.getDouble(i));
  }
  return result;
}

} // namespace tensorc::ops
