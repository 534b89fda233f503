// Reduction identities: where every backend's accumulators start.
#include "tensorc/Codegen/Common/OpEmitter.h"

#include <limits>

namespace tensorc::codegen {

loop::ExprRef reductionIdentity(loop::ReduceOp op, DType dtype) {
  bool isMax = op == loop::ReduceOp::Max || op == loop::ReduceOp::ArgMax;
  switch (op) {
  case loop::ReduceOp::Sum:
    return isFloating(dtype) ? loop::makeConstant(0, dtype) : loop::makeIntConstant(0, dtype);
  case loop::ReduceOp::Prod:
    return isFloating(dtype) ? loop::makeConstant(1, dtype) : loop::makeIntConstant(1, dtype);
  case loop::ReduceOp::Max:
  case loop::ReduceOp::Min:
  case loop::ReduceOp::ArgMax:
  case loop::ReduceOp::ArgMin: {
    if (isFloating(dtype))
      return loop::makeConstant(isMax ? -std::numeric_limits<double>::infinity()
                                      : std::numeric_limits<double>::infinity(),
                                dtype);
    if (dtype == DType::Bool || !isSignedInteger(dtype)) // false / 0, true / all ones
      return loop::makeIntConstant(isMax ? 0 : -1, dtype);
    int bits = int(dtypeSize(dtype) * 8);
    int64_t lowest = bits == 64 ? std::numeric_limits<int64_t>::min() : -(int64_t(1) << (bits - 1));
    return loop::makeIntConstant(isMax ? lowest : -(lowest + 1), dtype);
  }
  }
  return loop::makeIntConstant(0, dtype);
}

} // namespace tensorc::codegen
