// ONNX converters for constants, shapes and data movement, with import-time shape arithmetic.
#include "ImportState.h"
#include "OnnxConverters.h"
#include "OnnxTensor.h"
#include "ViewEmitters.h"
#include "tensorc/Support/StrCat.h"

#include <algorithm>
#include <climits>

namespace tensorc::onnx {

using Ints = std::vector<int64_t>;

namespace {

Attribute intsAttr(const std::vector<SymInt> &values) { return Attribute(values); }
Attribute intsAttr(const Ints &values) { return Attribute(values); }

/// Passes an input through to output 0, keeping it symbolic when it is.
Status forward(ConvertContext &c, size_t input = 0) {
  if (std::optional<SymVector> vector = c.symbolicInput(input); vector && !c.constantInput(input))
    return c.setSymbolicOutput(0, *vector);
  TC_ASSIGN_OR_RETURN(Value * value, c.input(input));
  return c.setOutput(0, value);
}

bool isSymbolicOnly(ConvertContext &c, size_t i) {
  return c.symbolicInput(i).has_value() && !c.constantInput(i).has_value();
}

} // namespace

Status convertConstant(ConvertContext &c) {
  Tensor tensor;
  if (c.hasAttr("value")) {
    TC_ASSIGN_OR_RETURN(tensor, c.tensorAttr("value"));
  } else if (c.hasAttr("value_float")) {
    tensor = Tensor::zerosUnchecked(DType::F32, {});
    tensor.setDouble(0, c.floatAttr("value_float", 0));
  } else if (c.hasAttr("value_int")) {
    tensor = Tensor::zerosUnchecked(DType::I64, {});
    tensor.setInt(0, c.intAttr("value_int", 0));
  } else if (c.hasAttr("value_floats")) {
    std::vector<double> values = c.floatsAttr("value_floats");
    tensor = Tensor::zerosUnchecked(DType::F32, {int64_t(values.size())});
    for (size_t i = 0; i < values.size(); ++i)
      tensor.setDouble(int64_t(i), values[i]);
  } else if (c.hasAttr("value_ints")) {
    Ints values = c.intsAttr("value_ints");
    tensor = Tensor::zerosUnchecked(DType::I64, {int64_t(values.size())});
    for (size_t i = 0; i < values.size(); ++i)
      tensor.setInt(int64_t(i), values[i]);
  } else {
    return c.error("only numeric tensor constants are supported (no string or sparse values)");
  }
  TC_ASSIGN_OR_RETURN(Value * value, c.constant(std::move(tensor)));
  return c.setOutput(0, value);
}

Status convertConstantOfShape(ConvertContext &c) {
  std::optional<SymVector> shape = c.symbolicInput(0);
  if (!shape)
    return c.error("the shape input must be known at import time");
  Tensor fill = Tensor::zerosUnchecked(DType::F32, {1});
  if (c.hasAttr("value")) {
    TC_ASSIGN_OR_RETURN(fill, c.tensorAttr("value"));
    if (fill.numel() != 1)
      return c.error("'value' must hold exactly one element");
  }
  AttrMap attrs;
  attrs.emplace("size", intsAttr(shape->elements));
  if (isFloating(fill.dtype()))
    attrs.emplace("fill_value", Attribute(fill.getDouble(0)));
  else if (fill.dtype() == DType::Bool)
    attrs.emplace("fill_value", Attribute(fill.getInt(0) != 0));
  else
    attrs.emplace("fill_value", Attribute(fill.getInt(0)));
  attrs.emplace("dtype", Attribute(fill.dtype()));
  TC_ASSIGN_OR_RETURN(Value * value, c.emit("aten.full", {}, std::move(attrs)));
  return c.setOutput(0, value);
}

Status convertIdentity(ConvertContext &c) { return forward(c); }

Status convertShape(ConvertContext &c) {
  TC_ASSIGN_OR_RETURN(TensorType type, c.inputType(0));
  int64_t rank = int64_t(type.rank());
  auto clampIndex = [&](int64_t index) {
    if (index < 0)
      index += rank;
    return std::clamp<int64_t>(index, 0, rank);
  };
  int64_t start = clampIndex(c.intAttr("start", 0));
  int64_t end = c.hasAttr("end") ? clampIndex(c.intAttr("end", rank)) : rank;
  SymVector vector;
  for (int64_t i = start; i < end; ++i)
    vector.elements.push_back(type.shape[size_t(i)]);
  return c.setSymbolicOutput(0, std::move(vector));
}

Status convertSize(ConvertContext &c) {
  TC_ASSIGN_OR_RETURN(TensorType type, c.inputType(0));
  SymVector vector;
  vector.scalar = true;
  vector.elements.push_back(type.numel());
  return c.setSymbolicOutput(0, std::move(vector));
}

namespace {

Expected<std::vector<SymInt>> requireSymbolic(ConvertContext &c, size_t i, const char *what) {
  std::optional<SymVector> vector = c.symbolicInput(i);
  if (!vector)
    return c.error(strCat(what, " (input ", i, ") must be known at import time"));
  return vector->elements;
}

} // namespace

Status convertReshape(ConvertContext &c) {
  std::vector<SymInt> shape;
  if (c.opset() < 5) {
    for (int64_t dim : c.intsAttr("shape"))
      shape.emplace_back(dim);
  } else {
    TC_ASSIGN_OR_RETURN(shape, requireSymbolic(c, 1, "the target shape"));
  }
  TC_ASSIGN_OR_RETURN(TensorType type, c.inputType(0));
  bool allowZero = c.intAttr("allowzero", 0) != 0;
  for (size_t i = 0; i < shape.size(); ++i)
    if (shape[i] == SymInt(0) && !allowZero) {
      if (i >= type.rank())
        return c.error(
            strCat("shape entry ", i, " is 0 (copy) but the input has rank ", type.rank()));
      shape[i] = type.shape[i];
    }
  // Shape values reshaped between 0-d and 1-element 1-D stay symbolic.
  if (isSymbolicOnly(c, 0)) {
    SymVector vector = *c.symbolicInput(0);
    if (shape.empty() && vector.elements.size() == 1) {
      vector.scalar = true;
      return c.setSymbolicOutput(0, std::move(vector));
    }
    if (shape.size() == 1 &&
        (shape[0] == SymInt(-1) || shape[0] == SymInt(int64_t(vector.elements.size())))) {
      vector.scalar = false;
      return c.setSymbolicOutput(0, std::move(vector));
    }
  }
  TC_ASSIGN_OR_RETURN(Value * input, c.input(0));
  TC_ASSIGN_OR_RETURN(Value * value, onnx::reshape(c, input, shape));
  return c.setOutput(0, value);
}

Status convertFlatten(ConvertContext &c) {
  TC_ASSIGN_OR_RETURN(Value * input, c.input(0));
  const TensorType &type = input->type();
  int64_t axis = c.intAttr("axis", 1);
  if (axis < 0)
    axis += int64_t(type.rank());
  if (axis < 0 || axis > int64_t(type.rank()))
    return c.error(
        strCat("axis ", c.intAttr("axis", 1), " is out of range for rank ", type.rank()));
  SymInt outer(1), inner(1);
  for (size_t i = 0; i < type.rank(); ++i)
    (int64_t(i) < axis ? outer : inner) = (int64_t(i) < axis ? outer : inner) * type.shape[i];
  TC_ASSIGN_OR_RETURN(Value * value, reshape(c, input, std::vector<SymInt>{outer, inner}));
  return c.setOutput(0, value);
}

namespace {

Expected<Ints> axesFromAttrOrInput(ConvertContext &c, int64_t inputSince) {
  if (c.opset() < inputSince)
    return c.intsAttr("axes");
  if (!c.hasInput(1))
    return Ints{};
  return c.constantInts(1, "axes");
}

} // namespace

Status convertSqueeze(ConvertContext &c) {
  TC_ASSIGN_OR_RETURN(Ints axes, axesFromAttrOrInput(c, 13));
  if (isSymbolicOnly(c, 0)) {
    SymVector vector = *c.symbolicInput(0);
    if (!vector.scalar && vector.elements.size() == 1 &&
        (axes.empty() || (axes.size() == 1 && (axes[0] == 0 || axes[0] == -1)))) {
      vector.scalar = true;
      return c.setSymbolicOutput(0, std::move(vector));
    }
  }
  TC_ASSIGN_OR_RETURN(Value * input, c.input(0));
  Ints dims;
  for (int64_t axis : axes) {
    TC_ASSIGN_OR_RETURN(int64_t dim, normalizeAxis(c, axis, input->type().rank()));
    if (input->type().shape[size_t(dim)] != SymInt(1) &&
        input->type().shape[size_t(dim)].isConstant())
      return c.error(
          strCat("cannot squeeze axis ", axis, " of size ", input->type().shape[size_t(dim)]));
    dims.push_back(dim);
  }
  AttrMap attrs;
  attrs.emplace("dim", intsAttr(dims));
  TC_ASSIGN_OR_RETURN(Value * value, c.emit("aten.squeeze", {input}, std::move(attrs)));
  return c.setOutput(0, value);
}

Status convertUnsqueeze(ConvertContext &c) {
  TC_ASSIGN_OR_RETURN(Ints axes, axesFromAttrOrInput(c, 13));
  if (axes.empty())
    return c.error("'axes' is required");
  if (isSymbolicOnly(c, 0)) {
    SymVector vector = *c.symbolicInput(0);
    if (vector.scalar && axes.size() == 1 && (axes[0] == 0 || axes[0] == -1)) {
      vector.scalar = false;
      return c.setSymbolicOutput(0, std::move(vector));
    }
  }
  TC_ASSIGN_OR_RETURN(Value * value, c.input(0));
  size_t outRank = value->type().rank() + axes.size();
  Ints dims;
  for (int64_t axis : axes) {
    TC_ASSIGN_OR_RETURN(int64_t dim, normalizeAxis(c, axis, outRank));
    if (std::find(dims.begin(), dims.end(), dim) != dims.end())
      return c.error(strCat("axis ", axis, " appears twice"));
    dims.push_back(dim);
  }
  std::sort(dims.begin(), dims.end());
  for (int64_t dim : dims) {
    TC_ASSIGN_OR_RETURN(value, unsqueezeDim(c, value, dim));
  }
  return c.setOutput(0, value);
}

Status convertTranspose(ConvertContext &c) {
  TC_ASSIGN_OR_RETURN(Value * input, c.input(0));
  Ints perm = c.intsAttr("perm");
  if (perm.empty())
    for (size_t i = input->type().rank(); i-- > 0;)
      perm.push_back(int64_t(i));
  TC_ASSIGN_OR_RETURN(Value * value, permute(c, input, perm));
  return c.setOutput(0, value);
}

Status convertConcat(ConvertContext &c) {
  int64_t axis = c.intAttr("axis", 0);
  bool symbolic = false, allVectors = true;
  for (size_t i = 0; i < c.numInputs(); ++i) {
    std::optional<SymVector> vector = c.symbolicInput(i);
    allVectors = allVectors && vector && !vector->scalar;
    symbolic = symbolic || isSymbolicOnly(c, i);
  }
  if (symbolic && allVectors && (axis == 0 || axis == -1)) {
    SymVector result;
    for (size_t i = 0; i < c.numInputs(); ++i) {
      SymVector part = *c.symbolicInput(i);
      result.elements.insert(result.elements.end(), part.elements.begin(), part.elements.end());
    }
    return c.setSymbolicOutput(0, std::move(result));
  }
  std::vector<Value *> inputs;
  for (size_t i = 0; i < c.numInputs(); ++i) {
    if (!c.hasInput(i))
      continue;
    TC_ASSIGN_OR_RETURN(Value * value, c.input(i));
    inputs.push_back(value);
  }
  if (inputs.empty())
    return c.error("needs at least one input");
  AttrMap attrs;
  attrs.emplace("dim", Attribute(axis));
  TC_ASSIGN_OR_RETURN(Value * value, c.emit("aten.cat", std::move(inputs), std::move(attrs)));
  return c.setOutput(0, value);
}

namespace {

/// Indices made non-negative for a dim of `size` (import time when constant, else at run time).
Expected<Value *> wrapIndices(ConvertContext &c, Value *indices, const SymInt &size) {
  TC_ASSIGN_OR_RETURN(indices, c.cast(indices, DType::I64));
  std::optional<int64_t> dim = size.constant();
  if (!dim)
    return indices; // symbolic dim: negative indices are not supported
  TC_ASSIGN_OR_RETURN(Value * zero, c.scalar(0, DType::I64));
  TC_ASSIGN_OR_RETURN(Value * negative, c.emit("aten.lt", {indices, zero}));
  TC_ASSIGN_OR_RETURN(Value * extent, c.scalar(double(*dim), DType::I64));
  TC_ASSIGN_OR_RETURN(Value * wrapped, c.emit("aten.add", {indices, extent}));
  return c.emit("aten.where", {negative, wrapped, indices});
}

} // namespace

Status convertGather(ConvertContext &c) {
  int64_t axis = c.intAttr("axis", 0);
  // Picking from a shape vector with constant indices stays symbolic.
  if (isSymbolicOnly(c, 0)) {
    SymVector data = *c.symbolicInput(0);
    std::optional<Tensor> indices = c.constantInput(1);
    if (indices && indices->rank() <= 1 && !data.scalar) {
      SymVector result;
      result.scalar = indices->rank() == 0;
      int64_t n = int64_t(data.elements.size());
      for (int64_t k = 0; k < indices->numel(); ++k) {
        int64_t index = indices->getInt(k);
        if (index < -n || index >= n)
          return c.error(strCat("index ", index, " is out of range for ", n, " elements"));
        result.elements.push_back(data.elements[size_t(index < 0 ? index + n : index)]);
      }
      return c.setSymbolicOutput(0, std::move(result));
    }
  }
  TC_ASSIGN_OR_RETURN(Value * data, c.input(0));
  TC_ASSIGN_OR_RETURN(Value * indices, c.input(1));
  const TensorType &dataType = data->type();
  TC_ASSIGN_OR_RETURN(int64_t dim, normalizeAxis(c, axis, dataType.rank()));
  TC_ASSIGN_OR_RETURN(indices, wrapIndices(c, indices, dataType.shape[size_t(dim)]));
  std::vector<SymInt> outShape(dataType.shape.begin(), dataType.shape.begin() + dim);
  const Shape &indexShape = indices->type().shape;
  outShape.insert(outShape.end(), indexShape.begin(), indexShape.end());
  outShape.insert(outShape.end(), dataType.shape.begin() + dim + 1, dataType.shape.end());
  TC_ASSIGN_OR_RETURN(Value * flat, reshape(c, indices, Ints{-1}));
  AttrMap select;
  select.emplace("dim", Attribute(dim));
  TC_ASSIGN_OR_RETURN(Value * picked, c.emit("aten.index_select", {data, flat}, std::move(select)));
  TC_ASSIGN_OR_RETURN(Value * value, reshape(c, picked, std::move(outShape)));
  return c.setOutput(0, value);
}

Status convertGatherElements(ConvertContext &c) {
  TC_ASSIGN_OR_RETURN(Value * data, c.input(0));
  TC_ASSIGN_OR_RETURN(Value * indices, c.input(1));
  TC_ASSIGN_OR_RETURN(int64_t dim, normalizeAxis(c, c.intAttr("axis", 0), data->type().rank()));
  TC_ASSIGN_OR_RETURN(indices, wrapIndices(c, indices, data->type().shape[size_t(dim)]));
  AttrMap attrs;
  attrs.emplace("dim", Attribute(dim));
  TC_ASSIGN_OR_RETURN(Value * value, c.emit("aten.gather", {data, indices}, std::move(attrs)));
  return c.setOutput(0, value);
}

namespace {

/// One axis of an ONNX Slice, clamped as the spec says; for a negative step the selected
/// indices are listed explicitly.
struct AxisSlice {
  int64_t start, end, step;
};
AxisSlice clampSlice(int64_t start, int64_t end, int64_t step, int64_t dim) {
  if (start < 0)
    start += dim;
  if (end < 0 && end > INT64_MIN / 2)
    end += dim;
  if (step > 0) {
    start = std::clamp<int64_t>(start, 0, dim);
    end = std::clamp<int64_t>(end, 0, dim);
  } else {
    start = std::clamp<int64_t>(start, 0, dim - 1);
    end = std::clamp<int64_t>(end, -1, dim - 1);
  }
  return {start, end, step};
}

} // namespace

Status convertSlice(ConvertContext &c) {
  Ints starts, ends, axes, steps;
  if (c.opset() < 10) {
    starts = c.intsAttr("starts");
    ends = c.intsAttr("ends");
    axes = c.intsAttr("axes");
  } else {
    TC_ASSIGN_OR_RETURN(starts, c.constantInts(1, "starts"));
    TC_ASSIGN_OR_RETURN(ends, c.constantInts(2, "ends"));
    if (c.hasInput(3)) {
      TC_ASSIGN_OR_RETURN(axes, c.constantInts(3, "axes"));
    }
    if (c.hasInput(4)) {
      TC_ASSIGN_OR_RETURN(steps, c.constantInts(4, "steps"));
    }
  }
  if (ends.size() != starts.size())
    return c.error("starts and ends differ in length");
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i)
      axes.push_back(int64_t(i));
  if (steps.empty())
    steps.assign(starts.size(), 1);
  if (axes.size() != starts.size() || steps.size() != starts.size())
    return c.error("starts, ends, axes and steps differ in length");

  if (isSymbolicOnly(c, 0)) {
    SymVector data = *c.symbolicInput(0);
    if (!data.scalar && starts.size() == 1 && (axes[0] == 0 || axes[0] == -1) && steps[0] != 0) {
      AxisSlice s = clampSlice(starts[0], ends[0], steps[0], int64_t(data.elements.size()));
      SymVector result;
      for (int64_t i = s.start; s.step > 0 ? i < s.end : i > s.end; i += s.step)
        result.elements.push_back(data.elements[size_t(i)]);
      return c.setSymbolicOutput(0, std::move(result));
    }
  }
  TC_ASSIGN_OR_RETURN(Value * value, c.input(0));
  for (size_t i = 0; i < starts.size(); ++i) {
    size_t rank = value->type().rank();
    TC_ASSIGN_OR_RETURN(int64_t axis, normalizeAxis(c, axes[i], rank));
    if (steps[i] == 0)
      return c.error("slice step 0");
    const SymInt &size = value->type().shape[size_t(axis)];
    std::optional<int64_t> dim = size.constant();
    if (!dim) {
      // Symbolic extent: only what torch's slice can express without knowing it.
      if (steps[i] < 0 || starts[i] < 0)
        return c.error(
            strCat("slicing symbolic dim ", size, " needs a non-negative start and step"));
      AttrMap attrs;
      attrs.emplace("dim", Attribute(axis));
      attrs.emplace("start", Attribute(starts[i]));
      attrs.emplace("end", ends[i] >= (int64_t(1) << 31) ? Attribute() : Attribute(ends[i]));
      attrs.emplace("step", Attribute(steps[i]));
      TC_ASSIGN_OR_RETURN(value, c.emit("aten.slice", {value}, std::move(attrs)));
      continue;
    }
    AxisSlice s = clampSlice(starts[i], ends[i], steps[i], *dim);
    if (s.step > 0) {
      AttrMap attrs;
      attrs.emplace("dim", Attribute(axis));
      attrs.emplace("start", Attribute(s.start));
      attrs.emplace("end", Attribute(std::max(s.start, s.end)));
      attrs.emplace("step", Attribute(s.step));
      TC_ASSIGN_OR_RETURN(value, c.emit("aten.slice", {value}, std::move(attrs)));
      continue;
    }
    // start > end and step < 0 here; the count is formed in unsigned arithmetic (no overflow).
    uint64_t span = uint64_t(s.start) - uint64_t(s.end);
    uint64_t stride = uint64_t(0) - uint64_t(s.step);
    int64_t count = int64_t((span + stride - 1) / stride);
    TC_ASSIGN_OR_RETURN(Tensor indices,
                        c.newTensor(DType::I64, {count}, "the index of a negative-step slice"));
    for (int64_t k = 0; k < count; ++k)
      indices.setInt(k, s.start + k * s.step);
    TC_ASSIGN_OR_RETURN(Value * indexValue, c.constant(std::move(indices)));
    AttrMap attrs;
    attrs.emplace("dim", Attribute(axis));
    TC_ASSIGN_OR_RETURN(value, c.emit("aten.index_select", {value, indexValue}, std::move(attrs)));
  }
  return c.setOutput(0, value);
}

Status convertSplit(ConvertContext &c) {
  TC_ASSIGN_OR_RETURN(Value * input, c.input(0));
  TC_ASSIGN_OR_RETURN(int64_t axis, normalizeAxis(c, c.intAttr("axis", 0), input->type().rank()));
  Ints sizes;
  if (c.opset() < 13)
    sizes = c.intsAttr("split");
  else if (c.hasInput(1)) {
    TC_ASSIGN_OR_RETURN(sizes, c.constantInts(1, "split"));
  }
  if (sizes.empty()) {
    std::optional<int64_t> dim = input->type().shape[size_t(axis)].constant();
    if (!dim)
      return c.error("splitting a symbolic dim needs explicit sizes");
    int64_t parts =
        c.hasAttr("num_outputs") ? c.intAttr("num_outputs", 1) : int64_t(c.numOutputs());
    if (parts <= 0)
      return c.error("needs at least one output");
    if (parts != int64_t(c.numOutputs()))
      return c.error(
          strCat("num_outputs ", parts, " differs from the node's ", c.numOutputs(), " outputs"));
    // opset 18: the last part may be smaller (ceil without overflow at huge dims)
    int64_t chunk = *dim / parts + (*dim % parts != 0), left = *dim;
    for (int64_t i = 0; i < parts; ++i) {
      sizes.push_back(std::min(chunk, left));
      left -= sizes.back();
    }
  }
  AttrMap attrs;
  attrs.emplace("split_sizes", intsAttr(sizes));
  attrs.emplace("dim", Attribute(axis));
  TC_ASSIGN_OR_RETURN(std::vector<Value *> parts,
                      c.emitMulti("aten.split_with_sizes", {input}, std::move(attrs)));
  if (parts.size() != c.numOutputs())
    return c.error(
        strCat("splits into ", parts.size(), " parts but has ", c.numOutputs(), " outputs"));
  for (size_t i = 0; i < parts.size(); ++i)
    TC_RETURN_IF_ERROR(c.setOutput(i, parts[i]));
  return Status::ok();
}

namespace {

/// ONNX's bidirectional broadcast of `a` with `b` (Expand).
Expected<std::vector<SymInt>> broadcast(ConvertContext &c, const Shape &a,
                                        const std::vector<SymInt> &b) {
  size_t rank = std::max(a.size(), b.size());
  std::vector<SymInt> result(rank);
  for (size_t i = 0; i < rank; ++i) {
    SymInt x = i < rank - a.size() ? SymInt(1) : a[i - (rank - a.size())];
    SymInt y = i < rank - b.size() ? SymInt(1) : b[i - (rank - b.size())];
    if (x == y || y == SymInt(1))
      result[i] = x;
    else if (x == SymInt(1))
      result[i] = y;
    else if (x.isConstant() && y.isConstant())
      return c.error(strCat("cannot broadcast dim ", x, " to ", y));
    else
      result[i] = x.isConstant() ? x : y;
  }
  return result;
}

} // namespace

Status convertExpand(ConvertContext &c) {
  TC_ASSIGN_OR_RETURN(Value * input, c.input(0));
  TC_ASSIGN_OR_RETURN(std::vector<SymInt> shape, requireSymbolic(c, 1, "the shape"));
  TC_ASSIGN_OR_RETURN(std::vector<SymInt> target, broadcast(c, input->type().shape, shape));
  AttrMap attrs;
  attrs.emplace("size", intsAttr(target));
  TC_ASSIGN_OR_RETURN(Value * value, c.emit("aten.expand", {input}, std::move(attrs)));
  return c.setOutput(0, value);
}

Status convertTile(ConvertContext &c) {
  TC_ASSIGN_OR_RETURN(Value * input, c.input(0));
  TC_ASSIGN_OR_RETURN(Ints repeats, c.constantInts(1, "repeats"));
  const Shape &shape = input->type().shape;
  if (repeats.size() != shape.size())
    return c.error(strCat(repeats.size(), " repeats for rank ", shape.size()));
  // [d0, d1] -> view [1, d0, 1, d1] -> expand [r0, d0, r1, d1] -> reshape [r0*d0, r1*d1].
  std::vector<SymInt> interleaved, expanded, result;
  for (size_t i = 0; i < shape.size(); ++i) {
    interleaved.insert(interleaved.end(), {SymInt(1), shape[i]});
    expanded.insert(expanded.end(), {SymInt(repeats[i]), shape[i]});
    result.push_back(SymInt(repeats[i]) * shape[i]);
  }
  AttrMap expand;
  expand.emplace("size", intsAttr(expanded));
  TC_ASSIGN_OR_RETURN(Value * value, reshape(c, input, std::move(interleaved)));
  TC_ASSIGN_OR_RETURN(value, c.emit("aten.expand", {value}, std::move(expand)));
  TC_ASSIGN_OR_RETURN(value, reshape(c, value, std::move(result)));
  return c.setOutput(0, value);
}

Status convertRange(ConvertContext &c) {
  std::optional<Tensor> start = c.constantInput(0), limit = c.constantInput(1),
                        delta = c.constantInput(2);
  if (!start || !limit || !delta)
    return c.error("start, limit and delta must be known at import time");
  if (start->numel() != 1 || limit->numel() != 1 || delta->numel() != 1)
    return c.error("start, limit and delta must be scalars");
  DType dtype = start->dtype();
  auto scalarAttr = [&](const Tensor &t) {
    return isFloating(dtype) ? Attribute(t.getDouble(0)) : Attribute(t.getInt(0));
  };
  AttrMap attrs;
  attrs.emplace("start", scalarAttr(*start));
  attrs.emplace("end", scalarAttr(*limit));
  attrs.emplace("step", scalarAttr(*delta));
  attrs.emplace("dtype", Attribute(dtype));
  TC_ASSIGN_OR_RETURN(Value * value, c.emit("aten.arange", {}, std::move(attrs)));
  return c.setOutput(0, value);
}

namespace {

Status castTo(ConvertContext &c, DType dtype) {
  if (isSymbolicOnly(c, 0) && isIntegral(dtype))
    return c.setSymbolicOutput(0, *c.symbolicInput(0));
  TC_ASSIGN_OR_RETURN(Value * input, c.input(0));
  TC_ASSIGN_OR_RETURN(Value * value, c.cast(input, dtype));
  if (value == input) { // a cast to the same type still needs its own output value
    TC_ASSIGN_OR_RETURN(value, c.emit("aten.clone", {input}));
  }
  return c.setOutput(0, value);
}

} // namespace

Status convertCast(ConvertContext &c) {
  int64_t to = c.intAttr("to", 0);
  std::optional<DType> dtype = dtypeFromOnnx(int32_t(to));
  if (!dtype)
    return c.error(strCat("casting to ", onnxTypeName(int32_t(to)), " is not supported"));
  return castTo(c, *dtype);
}

Status convertCastLike(ConvertContext &c) {
  TC_ASSIGN_OR_RETURN(TensorType target, c.inputType(1));
  return castTo(c, target.dtype);
}

Status convertOneHot(ConvertContext &c) {
  TC_ASSIGN_OR_RETURN(Value * indices, c.input(0));
  std::optional<Tensor> depthTensor = c.constantInput(1);
  if (!depthTensor || depthTensor->numel() != 1)
    return c.error("depth must be a scalar known at import time");
  // A float depth is truncated (ONNX allows any numeric type); one outside int64 is an error.
  int64_t depth = 0;
  if (isIntegral(depthTensor->dtype())) {
    depth = depthTensor->getInt(0);
  } else {
    double value = depthTensor->getDouble(0);
    if (!(value >= 1 && value < 0x1p63))
      return c.error(strCat("depth must be a positive integer, got ", value));
    depth = int64_t(value);
  }
  if (depth < 1)
    return c.error(strCat("depth must be a positive integer, got ", depth));
  TC_ASSIGN_OR_RETURN(Value * values, c.input(2));
  size_t outRank = indices->type().rank() + 1;
  TC_ASSIGN_OR_RETURN(int64_t axis, normalizeAxis(c, c.intAttr("axis", -1), outRank));
  Shape resultShape = indices->type().shape;
  resultShape.insert(resultShape.begin() + axis, SymInt(depth));
  TensorType resultType(values->type().dtype, resultShape);
  if (Status fits = checkStaticSize(resultType, strCat("with depth ", depth, " the result")); !fits)
    return c.error(fits.message());
  TC_ASSIGN_OR_RETURN(indices, wrapIndices(c, indices, SymInt(depth)));
  TC_ASSIGN_OR_RETURN(Value * expanded, unsqueezeDim(c, indices, axis));
  // classes: 0..depth-1 along `axis`, computed (folded only when small) rather than stored.
  AttrMap range;
  range.emplace("start", Attribute(int64_t(0)));
  range.emplace("end", Attribute(depth));
  range.emplace("step", Attribute(int64_t(1)));
  range.emplace("dtype", Attribute(DType::I64));
  TC_ASSIGN_OR_RETURN(Value * classes, c.emit("aten.arange", {}, std::move(range)));
  std::vector<SymInt> classShape(outRank, SymInt(1));
  classShape[size_t(axis)] = SymInt(depth);
  TC_ASSIGN_OR_RETURN(Value * classValue, reshape(c, classes, std::move(classShape)));
  TC_ASSIGN_OR_RETURN(Value * hot, c.emit("aten.eq", {expanded, classValue}));
  AttrMap sizes;
  sizes.emplace("split_sizes", intsAttr(Ints{1, 1}));
  sizes.emplace("dim", Attribute(int64_t(0)));
  TC_ASSIGN_OR_RETURN(std::vector<Value *> offOn,
                      c.emitMulti("aten.split_with_sizes", {values}, std::move(sizes)));
  TC_ASSIGN_OR_RETURN(Value * off, squeezeDim(c, offOn[0], 0));
  TC_ASSIGN_OR_RETURN(Value * on, squeezeDim(c, offOn[1], 0));
  TC_ASSIGN_OR_RETURN(Value * value, c.emit("aten.where", {hot, on, off}));
  return c.setOutput(0, value);
}

Expected<bool> foldSymbolicBinary(ConvertContext &c, char op) {
  if (!isSymbolicOnly(c, 0) && !isSymbolicOnly(c, 1))
    return false;
  std::optional<SymVector> a = c.symbolicInput(0), b = c.symbolicInput(1);
  if (!a || !b)
    return false;
  size_t n = std::max(a->elements.size(), b->elements.size());
  if ((a->elements.size() != n && a->elements.size() != 1) ||
      (b->elements.size() != n && b->elements.size() != 1))
    return false;
  SymVector result;
  result.scalar = a->scalar && b->scalar;
  for (size_t i = 0; i < n; ++i) {
    const SymInt &x = a->elements[a->elements.size() == 1 ? 0 : i];
    const SymInt &y = b->elements[b->elements.size() == 1 ? 0 : i];
    switch (op) {
    case '+':
      result.elements.push_back(x + y);
      break;
    case '-':
      result.elements.push_back(x - y);
      break;
    case '*':
      result.elements.push_back(x * y);
      break;
    case '/': {
      std::optional<int64_t> divisor = y.constant();
      if (!divisor || *divisor <= 0)
        return false;
      result.elements.push_back(SymInt::floorDiv(x, *divisor));
      break;
    }
    default:
      return false;
    }
  }
  TC_RETURN_IF_ERROR(c.setSymbolicOutput(0, std::move(result)));
  return true;
}

} // namespace tensorc::onnx
