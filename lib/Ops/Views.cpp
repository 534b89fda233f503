// View and data-movement ops: view, reshape, permute, transpose, t, expand, squeeze, unsqueeze,
// slice, cat, split_with_sizes, gather, index_select, pad, embedding, clone.
#include "DecomposeHelpers.h"
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

const std::byte *bytesOf(const Tensor &tensor) {
  return static_cast<const std::byte *>(tensor.data());
}
std::byte *mutableBytesOf(Tensor &tensor) { return static_cast<std::byte *>(tensor.mutableData()); }

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

/// view, reshape, squeeze, unsqueeze, clone: the bytes do not move.
Status copyKernel(KernelContext &ctx) {
  const Tensor &input = ctx.input(0);
  Tensor &output = ctx.output(0);
  if (output.nbytes() != input.nbytes())
    return makeError("internal: result holds ", output.nbytes(), " bytes, input ", input.nbytes());
  if (input.nbytes() != 0)
    std::memcpy(output.mutableData(), input.data(), input.nbytes());
  return Status::ok();
}

/// `tensor` converted to `dtype` (shared, not copied, when it already has it).
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

Status checkIndexDType(DType dtype, const char *what) {
  if (dtype != DType::I64 && dtype != DType::I32)
    return makeError(what, " must be i64 or i32, got ", dtypeName(dtype));
  return Status::ok();
}

Status indexOutOfRange(int64_t index, size_t dim, int64_t size) {
  return makeError("index ", index, " is out of bounds for dimension ", dim, " with size ", size);
}

std::string listStr(const std::vector<SymInt> &values) { return "[" + join(values, ", ") + "]"; }

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
  TC_ASSIGN_OR_RETURN(size_t dim, normalizeDim(ctx.getInt("dim"), self.rank()));
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
  TC_ASSIGN_OR_RETURN(size_t dim, normalizeDim(ctx.getInt("dim"), input.rank()));
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
  TC_ASSIGN_OR_RETURN(size_t dim, normalizeDim(ctx.getInt("dim"), first->rank()));
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
  TC_ASSIGN_OR_RETURN(size_t dim, normalizeDim(ctx.getInt("dim"), first->rank()));
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
  TC_ASSIGN_OR_RETURN(size_t dim, normalizeDim(ctx.getInt("dim"), self.rank()));
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
  TC_ASSIGN_OR_RETURN(size_t dim, normalizeDim(ctx.getInt("dim"), input.rank()));
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

// ---- gather, index_select, embedding ---------------------------------------------------------

Expected<Types> inferGather(const InferContext &ctx) {
  const TensorType &self = ctx.input(0), &index = ctx.input(1);
  TC_RETURN_IF_ERROR(checkIndexDType(index.dtype, "gather index"));
  if (index.rank() != self.rank())
    return makeError("gather index ", index.str(), " must have the rank of the input ", self.str());
  TC_ASSIGN_OR_RETURN(size_t dim, normalizeDim(ctx.getInt("dim"), self.rank()));
  for (size_t d = 0; d < self.rank(); ++d) {
    std::optional<int64_t> indexSize = index.shape[d].constant(), size = self.shape[d].constant();
    if (d != dim && indexSize && size && *indexSize > *size)
      return makeError("gather index ", index.str(), " is larger than the input ", self.str(),
                       " in dim ", d);
  }
  return Types{TensorType(self.dtype, index.shape)};
}

Status gatherKernel(KernelContext &ctx) {
  const Tensor &input = ctx.input(0), &index = ctx.input(1);
  Tensor &output = ctx.output(0);
  TC_ASSIGN_OR_RETURN(size_t dim, normalizeDim(ctx.getInt("dim"), input.rank()));
  size_t rank = index.rank();
  std::vector<int64_t> strides = input.strides();
  int64_t size = rank == 0 ? 1 : input.dim(dim);
  int64_t dimStride = rank == 0 ? 0 : strides[dim];
  size_t elementSize = dtypeSize(input.dtype());
  const std::byte *in = bytesOf(input);
  std::byte *out = mutableBytesOf(output);
  // Walk the index in row-major order; `base` is the input offset of every coordinate but `dim`.
  std::vector<int64_t> counter(rank, 0);
  int64_t base = 0;
  for (int64_t i = 0; i < index.numel(); ++i) {
    int64_t position = index.getInt(i);
    if (position < 0 || position >= size)
      return indexOutOfRange(position, dim, size);
    std::memcpy(out + i * int64_t(elementSize),
                in + (base + position * dimStride) * int64_t(elementSize), elementSize);
    for (size_t d = rank; d-- > 0;) {
      int64_t stride = d == dim ? 0 : strides[d];
      base += stride;
      if (++counter[d] < index.dim(d))
        break;
      base -= stride * index.dim(d);
      counter[d] = 0;
    }
  }
  return Status::ok();
}

Expected<Types> inferIndexSelect(const InferContext &ctx) {
  const TensorType &self = ctx.input(0), &index = ctx.input(1);
  TC_RETURN_IF_ERROR(checkIndexDType(index.dtype, "index_select index"));
  if (index.rank() > 1)
    return makeError("index_select index must be 0-d or 1-D, got ", index.str());
  TC_ASSIGN_OR_RETURN(size_t dim, normalizeDim(ctx.getInt("dim"), self.rank()));
  SymInt count = index.rank() == 0 ? SymInt(1) : index.shape[0];
  if (self.rank() == 0) {
    if (count != SymInt(1))
      return makeError("index_select on a 0-d input takes one index, got ", index.str());
    return Types{self};
  }
  Shape result = self.shape;
  result[dim] = count;
  return Types{TensorType(self.dtype, std::move(result))};
}

/// Copies rows `index[j]` of the (outer, size, inner) view of `input` into `output`.
Status selectRows(const Tensor &input, const Tensor &index, size_t dim, Tensor &output) {
  AxisSplit split = splitAtAxis(input.shape(), dim);
  size_t run = size_t(split.inner) * dtypeSize(input.dtype());
  int64_t count = index.numel();
  const std::byte *in = bytesOf(input);
  std::byte *out = mutableBytesOf(output);
  for (int64_t j = 0; j < count; ++j) {
    int64_t position = index.getInt(j);
    if (position < 0 || position >= split.size)
      return indexOutOfRange(position, dim, split.size);
  }
  if (run == 0)
    return Status::ok();
  for (int64_t o = 0; o < split.outer; ++o)
    for (int64_t j = 0; j < count; ++j)
      std::memcpy(out + (o * count + j) * int64_t(run),
                  in + (o * split.size + index.getInt(j)) * int64_t(run), run);
  return Status::ok();
}

Status indexSelectKernel(KernelContext &ctx) {
  const Tensor &input = ctx.input(0);
  TC_ASSIGN_OR_RETURN(size_t dim, normalizeDim(ctx.getInt("dim"), input.rank()));
  return selectRows(input, ctx.input(1), dim, ctx.output(0));
}

Expected<Types> inferEmbedding(const InferContext &ctx) {
  const TensorType &weight = ctx.input(0), &indices = ctx.input(1);
  if (weight.rank() != 2)
    return makeError("embedding weight must be 2-D, got ", weight.str());
  TC_RETURN_IF_ERROR(checkIndexDType(indices.dtype, "embedding indices"));
  Shape result = indices.shape;
  result.push_back(weight.shape[1]);
  return Types{TensorType(weight.dtype, std::move(result))};
}

Status embeddingKernel(KernelContext &ctx) {
  return selectRows(ctx.input(0), ctx.input(1), 0, ctx.output(0));
}

// ---- pad -------------------------------------------------------------------------------------

#define TENSORC_FOR_EACH_PAD_MODE(X)                                                               \
  X(Constant, "constant")                                                                          \
  X(Reflect, "reflect")                                                                            \
  X(Replicate, "replicate")                                                                        \
  X(Circular, "circular")

enum class PadMode : uint8_t {
#define TENSORC_PAD_MODE_ENUM(e, n) e,
  TENSORC_FOR_EACH_PAD_MODE(TENSORC_PAD_MODE_ENUM)
#undef TENSORC_PAD_MODE_ENUM
};

Expected<PadMode> parsePadMode(const std::string &name) {
#define TENSORC_PAD_MODE_PARSE(e, n)                                                               \
  if (name == n)                                                                                   \
    return PadMode::e;
  TENSORC_FOR_EACH_PAD_MODE(TENSORC_PAD_MODE_PARSE)
#undef TENSORC_PAD_MODE_PARSE
  return makeError("unknown padding mode '", name,
                   "' (expected constant, reflect, replicate or circular)");
}

/// Checks the pads of one dim of size `size` (constant or symbolic) and returns its padded size.
Expected<SymInt> paddedDim(const SymInt &size, const SymInt &before, const SymInt &after,
                           PadMode mode, size_t dim) {
  SymInt result = size + before + after;
  std::optional<int64_t> n = size.constant(), b = before.constant(), a = after.constant(),
                         out = result.constant();
  if (out && *out < 0)
    return makeError("padding (", before, ", ", after, ") of dim ", dim, " (size ", size,
                     ") gives a negative size ", *out);
  if (!n || !b || !a)
    return result;
  switch (mode) {
  case PadMode::Constant:
    break;
  case PadMode::Reflect:
    if (*b >= *n || *a >= *n)
      return makeError("reflect padding (", *b, ", ", *a, ") must be less than the size ", *n,
                       " of dim ", dim);
    break;
  case PadMode::Replicate:
    if (*n == 0 && *out > 0)
      return makeError("replicate padding of dim ", dim, " which is empty");
    break;
  case PadMode::Circular:
    if (*b > *n || *a > *n || -*b > *n || -*a > *n)
      return makeError("circular padding (", *b, ", ", *a, ") wraps around dim ", dim, " (size ",
                       *n, ") more than once");
    break;
  }
  return result;
}

Expected<Types> inferPad(const InferContext &ctx) {
  const TensorType &self = ctx.input(0);
  const std::vector<SymInt> &pad = ctx.getInts("pad");
  TC_ASSIGN_OR_RETURN(PadMode mode, parsePadMode(ctx.getString("mode")));
  if (pad.size() % 2 != 0)
    return makeError("pad ", listStr(pad), " must have an even length");
  if (pad.size() / 2 > self.rank())
    return makeError("pad ", listStr(pad), " pads ", pad.size() / 2, " dims of ", self.str());
  if (mode != PadMode::Constant && !ctx.isNone("value") && ctx.getFloat("value") != 0)
    return makeError("padding mode '", ctx.getString("mode"), "' takes no fill value");
  Shape result = self.shape;
  for (size_t k = 0; k < pad.size() / 2; ++k) {
    size_t dim = self.rank() - 1 - k;
    TC_ASSIGN_OR_RETURN(result[dim],
                        paddedDim(self.shape[dim], pad[2 * k], pad[2 * k + 1], mode, dim));
  }
  return Types{TensorType(self.dtype, std::move(result))};
}

/// For each output coordinate of one dim, the input coordinate it reads (-1: the fill value).
std::vector<int64_t> padSourceMap(int64_t size, int64_t before, int64_t outSize, PadMode mode) {
  std::vector<int64_t> map(size_t(outSize), -1);
  for (int64_t o = 0; o < outSize; ++o) {
    int64_t i = o - before;
    switch (mode) {
    case PadMode::Constant:
      map[size_t(o)] = i >= 0 && i < size ? i : -1;
      break;
    case PadMode::Reflect:
      map[size_t(o)] = i < 0 ? -i : i >= size ? 2 * (size - 1) - i : i;
      break;
    case PadMode::Replicate:
      map[size_t(o)] = std::clamp<int64_t>(i, 0, size - 1);
      break;
    case PadMode::Circular:
      map[size_t(o)] = floorModInt(i, size);
      break;
    }
  }
  return map;
}

Status padKernel(KernelContext &ctx) {
  const Tensor &input = ctx.input(0);
  Tensor &output = ctx.output(0);
  TC_ASSIGN_OR_RETURN(std::vector<int64_t> pad, ctx.getStaticInts("pad"));
  TC_ASSIGN_OR_RETURN(PadMode mode, parsePadMode(ctx.getString("mode")));
  size_t rank = input.rank();
  if (output.numel() == 0)
    return Status::ok();
  if (rank == 0)
    return copyKernel(ctx);
  std::vector<std::vector<int64_t>> maps(rank);
  for (size_t d = 0; d < rank; ++d) {
    size_t k = rank - 1 - d;
    int64_t before = k < pad.size() / 2 ? pad[2 * k] : 0;
    maps[d] = padSourceMap(input.dim(d), before, output.dim(d), mode);
  }
  size_t elementSize = dtypeSize(input.dtype());
  Tensor fill = Tensor::zerosUnchecked(input.dtype(), {});
  fill.setDouble(0, ctx.isNone("value") ? 0.0 : ctx.getFloat("value"));
  const std::byte *fillBytes = bytesOf(fill);
  const std::byte *in = bytesOf(input);
  std::byte *out = mutableBytesOf(output);
  std::vector<int64_t> strides = input.strides();
  int64_t inner = output.dim(rank - 1);
  int64_t outer = output.numel() / inner;
  std::vector<int64_t> counter(rank - 1, 0);
  const std::vector<int64_t> &innerMap = maps[rank - 1];
  for (int64_t o = 0; o < outer; ++o) {
    int64_t rowOffset = 0;
    bool rowIsFill = false;
    for (size_t d = 0; d + 1 < rank; ++d) {
      int64_t source = maps[d][size_t(counter[d])];
      rowIsFill |= source < 0;
      rowOffset += source * strides[d];
    }
    for (int64_t j = 0; j < inner; ++j, out += elementSize) {
      int64_t source = innerMap[size_t(j)];
      bool isFill = rowIsFill || source < 0;
      std::memcpy(out, isFill ? fillBytes : in + (rowOffset + source) * int64_t(elementSize),
                  elementSize);
    }
    for (size_t d = rank - 1; d-- > 0;) {
      if (++counter[d] < output.dim(d))
        break;
      counter[d] = 0;
    }
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
  TC_RETURN_IF_ERROR(registry.add(makeOp(
      OpId::Gather, {tensorParam("self"), attrParam("dim", AttrKind::Int), tensorParam("index")},
      inferGather, gatherKernel)));
  TC_RETURN_IF_ERROR(registry.add(
      makeOp(OpId::IndexSelect,
             {tensorParam("self"), attrParam("dim", AttrKind::Int), tensorParam("index")},
             inferIndexSelect, indexSelectKernel)));
  TC_RETURN_IF_ERROR(
      registry.add(makeOp(OpId::Pad,
                          {tensorParam("self"), attrParam("pad", AttrKind::Ints),
                           attrParam("mode", AttrKind::String, Attribute("constant")),
                           optionalAttrParam("value", AttrKind::Float)},
                          inferPad, padKernel)));
  TC_RETURN_IF_ERROR(
      registry.add(makeOp(OpId::Embedding, {tensorParam("weight"), tensorParam("indices")},
                          inferEmbedding, embeddingKernel)));
  TC_RETURN_IF_ERROR(
      registry.add(makeOp(OpId::Clone, {tensorParam("self")}, inferSameType, copyKernel)));
  return Status::ok();
}

} // namespace tensorc::ops
