// OpBuilder: emits registry ops by id, with the helpers rules share.
#include "tensorc/Ops/OpBuilder.h"

namespace tensorc::ops {

Expected<std::vector<Value *>> OpBuilder::emitMulti(OpId id, std::vector<Value *> inputs,
                                                    AttrMap attrs) {
  const OpDef *op = registry_.get(id);
  if (!op)
    return makeError(what_, ": the registry has no ", opIdName(id));
  return emitter_.emitMulti(*op, std::move(inputs), std::move(attrs));
}

Expected<Value *> OpBuilder::emit(OpId id, std::vector<Value *> inputs, AttrMap attrs) {
  TC_ASSIGN_OR_RETURN(std::vector<Value *> results,
                      emitMulti(id, std::move(inputs), std::move(attrs)));
  return results.front();
}

namespace {
DType scalarDType(DType like) {
  return like == DType::F16 || like == DType::BF16 ? DType::F32 : like;
}
} // namespace

Expected<Value *> OpBuilder::scalar(double value, DType like) {
  TC_ASSIGN_OR_RETURN(Tensor tensor, Tensor::zeros(scalarDType(like), {}));
  tensor.setDouble(0, value);
  return emitter_.constant(*registry_.get(OpId::Constant), std::move(tensor));
}

Expected<Value *> OpBuilder::scalar(const Attribute &value, DType like) {
  if (isFloating(like) || value.isFloat())
    return scalar(value.asScalar(), like);
  TC_ASSIGN_OR_RETURN(Tensor tensor, Tensor::zeros(scalarDType(like), {}));
  tensor.setInt(0, value.isBool() ? int64_t(value.asBool()) : value.asInt());
  return emitter_.constant(*registry_.get(OpId::Constant), std::move(tensor));
}

Expected<Value *> OpBuilder::binaryScalar(OpId id, Value *x, double value) {
  TC_ASSIGN_OR_RETURN(Value * constant, scalar(value, x->type().dtype));
  return binary(id, x, constant);
}

Expected<Value *> OpBuilder::cast(Value *x, DType dtype) {
  if (x->type().dtype == dtype)
    return x;
  return emit(OpId::ConvertElementType, {x}, {{"dtype", Attribute(dtype)}});
}

Expected<Value *> OpBuilder::view(Value *x, Shape shape) {
  if (x->type().shape == shape)
    return x;
  return emit(OpId::View, {x}, {{"size", Attribute(std::move(shape))}});
}

Expected<Value *> OpBuilder::expand(Value *x, Shape shape) {
  if (x->type().shape == shape)
    return x;
  return emit(OpId::Expand, {x}, {{"size", Attribute(std::move(shape))}});
}

Expected<Value *> OpBuilder::reduce(OpId id, Value *x, const Attribute &dims, bool keepdim) {
  return emit(id, {x}, {{"dim", dims}, {"keepdim", Attribute(keepdim)}});
}

} // namespace tensorc::ops
