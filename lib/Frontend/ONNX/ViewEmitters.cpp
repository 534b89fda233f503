// Small emitters of view ops and axis checks shared by the converters.
#include "ViewEmitters.h"

#include "tensorc/Support/StrCat.h"

namespace tensorc::onnx {

Expected<int64_t> normalizeAxis(ConvertContext &c, int64_t axis, size_t rank,
                                const std::string &what) {
  int64_t r = int64_t(rank);
  if (axis < -r || axis >= r)
    return c.error(strCat(what, " ", axis, " is out of range for rank ", rank));
  return axis < 0 ? axis + r : axis;
}

Expected<Value *> reshape(ConvertContext &c, Value *value, std::vector<SymInt> shape) {
  AttrMap attrs;
  attrs.emplace("shape", Attribute(std::move(shape)));
  return c.emit("aten.reshape", {value}, std::move(attrs));
}

Expected<Value *> reshape(ConvertContext &c, Value *value, const std::vector<int64_t> &shape) {
  return reshape(c, value, std::vector<SymInt>(shape.begin(), shape.end()));
}

Expected<Value *> permute(ConvertContext &c, Value *value, const std::vector<int64_t> &dims) {
  AttrMap attrs;
  attrs.emplace("dims", Attribute(dims));
  return c.emit("aten.permute", {value}, std::move(attrs));
}

Expected<Value *> reshapeTo(ConvertContext &c, Value *value, std::vector<SymInt> shape) {
  if (value->type().shape == Shape(shape.begin(), shape.end()))
    return value;
  return reshape(c, value, std::move(shape));
}

Expected<Value *> permuteTo(ConvertContext &c, Value *value, const std::vector<int64_t> &dims) {
  for (size_t i = 0; i < dims.size(); ++i)
    if (dims[i] != int64_t(i))
      return permute(c, value, dims);
  return value;
}

Expected<Value *> reduceOp(ConvertContext &c, std::string_view op, Value *value,
                           const std::vector<int64_t> &dims, bool keepdim,
                           std::optional<DType> dtype) {
  AttrMap attrs;
  attrs.emplace("dim", Attribute(dims));
  attrs.emplace("keepdim", Attribute(keepdim));
  if (dtype)
    attrs.emplace("dtype", Attribute(*dtype));
  return c.emit(op, {value}, std::move(attrs));
}

Expected<Value *> slice(ConvertContext &c, Value *value, int64_t dim, int64_t start, int64_t end) {
  AttrMap attrs;
  attrs.emplace("dim", Attribute(dim));
  attrs.emplace("start", Attribute(start));
  attrs.emplace("end", Attribute(end));
  return c.emit("aten.slice", {value}, std::move(attrs));
}

Expected<Value *> squeezeDim(ConvertContext &c, Value *value, int64_t dim) {
  AttrMap attrs;
  attrs.emplace("dim", Attribute(std::vector<int64_t>{dim}));
  return c.emit("aten.squeeze", {value}, std::move(attrs));
}

std::vector<int64_t> dimsFrom(size_t first, size_t rank) {
  std::vector<int64_t> dims;
  for (size_t d = first; d < rank; ++d)
    dims.push_back(int64_t(d));
  return dims;
}

Expected<Value *> unsqueezeDim(ConvertContext &c, Value *value, int64_t dim) {
  AttrMap attrs;
  attrs.emplace("dim", Attribute(dim));
  return c.emit("aten.unsqueeze", {value}, std::move(attrs));
}

} // namespace tensorc::onnx
