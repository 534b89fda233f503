// Elementwise ops of two operands (arithmetic, comparisons, logical and bitwise ops) and where.
#include "ElementwiseKernels.h"
#include "OpGroups.h"

namespace tensorc::ops {

namespace {

using namespace elementwise;

// ---- Binary -----------------------------------------------------------------------------------

/// The promoted dtype of inputs 0 and 1 (torch.result_type).
DType promotedType(const InferContext &ctx) { return resultType({&ctx.input(0), &ctx.input(1)}); }

DType promotedType(const KernelContext &ctx) {
  TensorType a = TensorType::fromStatic(ctx.input(0).dtype(), ctx.input(0).shape());
  TensorType b = TensorType::fromStatic(ctx.input(1).dtype(), ctx.input(1).shape());
  return resultType({&a, &b});
}

Expected<std::vector<TensorType>> inferArithmetic(const InferContext &ctx) {
  TC_ASSIGN_OR_RETURN(Shape shape, broadcastShapes(ctx.input(0).shape, ctx.input(1).shape));
  return std::vector<TensorType>{TensorType(promotedType(ctx), std::move(shape))};
}

Expected<std::vector<TensorType>> inferBoolResult(const InferContext &ctx) {
  TC_ASSIGN_OR_RETURN(Shape shape, broadcastShapes(ctx.input(0).shape, ctx.input(1).shape));
  return std::vector<TensorType>{TensorType(DType::Bool, std::move(shape))};
}

/// add/sub: integer results need an integral alpha; sub rejects bool operands like torch.
template <bool IsSub> Expected<std::vector<TensorType>> inferAddSub(const InferContext &ctx) {
  TC_ASSIGN_OR_RETURN(std::vector<TensorType> types, inferArithmetic(ctx));
  const Attribute &alpha = ctx.attr("alpha");
  if (!isFloating(types[0].dtype) && alpha.isFloat())
    return makeError("alpha must not be a floating-point number for ", dtypeName(types[0].dtype),
                     " operands, got ", alpha.str());
  if (IsSub && (ctx.input(0).dtype == DType::Bool || ctx.input(1).dtype == DType::Bool))
    return makeError("subtraction with a bool tensor is not supported; use logical_xor or "
                     "logical_not");
  return types;
}

template <bool IsSub> Status addSubKernel(KernelContext &ctx) {
  const Attribute &alpha = ctx.attr("alpha");
  int64_t alphaInt = scalarAs<int64_t>(alpha);
  double alphaFloat = alpha.asScalar();
  return runBinary(ctx, ctx.output(0).dtype(), [&](auto a, auto b) {
    using S = decltype(a);
    if constexpr (std::is_integral_v<S>) {
      uint64_t scaled = uint64_t(alphaInt) * uint64_t(b);
      return S(IsSub ? uint64_t(a) - scaled : uint64_t(a) + scaled);
    } else {
      S scaled = alphaFloat == 1.0 ? b : S(alphaFloat) * b;
      return IsSub ? S(a - scaled) : S(a + scaled);
    }
  });
}

Status mulKernel(KernelContext &ctx) {
  return runBinary(ctx, ctx.output(0).dtype(), [](auto a, auto b) {
    using S = decltype(a);
    if constexpr (std::is_integral_v<S>)
      return S(uint64_t(a) * uint64_t(b));
    else
      return S(a * b);
  });
}

Expected<std::vector<TensorType>> inferDiv(const InferContext &ctx) {
  TC_ASSIGN_OR_RETURN(Shape shape, broadcastShapes(ctx.input(0).shape, ctx.input(1).shape));
  DType dtype = promotedType(ctx);
  if (ctx.isNone("rounding_mode")) {
    if (!isFloating(dtype))
      dtype = DType::F32; // true division of integers
  } else {
    const std::string &mode = ctx.getString("rounding_mode");
    if (mode != "trunc" && mode != "floor")
      return makeError("rounding_mode must be None, 'trunc' or 'floor', got '", mode, "'");
  }
  return std::vector<TensorType>{TensorType(dtype, std::move(shape))};
}

/// Truncating integer division; b == -1 wraps instead of trapping on INT64_MIN.
inline int64_t truncDivInt(int64_t a, int64_t b) { return b == -1 ? wrapNeg(a) : a / b; }

/// Python floor division (b != 0).
inline int64_t floorDivInteger(int64_t a, int64_t b) {
  int64_t quotient = truncDivInt(a, b);
  return (a % b != 0 && ((a < 0) != (b < 0))) ? quotient - 1 : quotient;
}

/// torch's div_floor_floating: floor(a / b) computed through fmod so that it is exact.
template <typename S> S floorDivFloat(S a, S b) {
  if (b == 0)
    return a / b;
  S mod = std::fmod(a, b);
  S div = (a - mod) / b;
  if (mod != 0 && (b < 0) != (mod < 0))
    div -= S(1);
  if (div == 0)
    return std::copysign(S(0), a / b);
  S floorDiv = std::floor(div);
  if (div - floorDiv > S(0.5))
    floorDiv += S(1);
  return floorDiv;
}

Status divKernel(KernelContext &ctx) {
  DType outType = ctx.output(0).dtype();
  if (ctx.isNone("rounding_mode"))
    return runBinary(ctx, outType, [](auto a, auto b) { return a / b; });
  // Python-style floor division, or C-style truncation.
  bool floorMode = ctx.getString("rounding_mode") != "trunc";
  return runBinary(
      ctx, outType,
      [floorMode](auto a, auto b) {
        using S = decltype(a);
        if constexpr (std::is_unsigned_v<S>)
          return S(a / b);
        else if constexpr (std::is_integral_v<S>)
          return floorMode ? floorDivInteger(a, b) : truncDivInt(a, b);
        else
          return floorMode ? floorDivFloat(a, b) : S(std::trunc(a / b));
      },
      DivisorCheck::NonZero);
}

/// torch's integer pow: negative exponents give 0 except for bases 1 and -1.
inline int64_t powInt(int64_t base, int64_t exponent) {
  if (exponent < 0) {
    if (base == 1)
      return 1;
    if (base == -1)
      return (exponent & 1) ? -1 : 1;
    return 0;
  }
  uint64_t result = 1, factor = uint64_t(base);
  for (; exponent != 0; exponent >>= 1) {
    if (exponent & 1)
      result *= factor;
    factor *= factor;
  }
  return int64_t(result);
}

/// Wrapping unsigned pow (u64 operands).
inline uint64_t powUint(uint64_t base, uint64_t exponent) {
  uint64_t result = 1;
  for (; exponent != 0; exponent >>= 1) {
    if (exponent & 1)
      result *= base;
    base *= base;
  }
  return result;
}

Status powKernel(KernelContext &ctx) {
  return runBinary(ctx, ctx.output(0).dtype(), [](auto a, auto b) {
    using S = decltype(a);
    if constexpr (std::is_unsigned_v<S>)
      return S(powUint(a, b));
    else if constexpr (std::is_integral_v<S>)
      return powInt(a, b);
    else
      return S(std::pow(a, b));
  });
}

/// Python-style remainder: the result takes the divisor's sign.
Status remainderKernel(KernelContext &ctx) {
  return runBinary(
      ctx, ctx.output(0).dtype(),
      [](auto a, auto b) {
        using S = decltype(a);
        if constexpr (std::is_unsigned_v<S>) {
          return S(a % b);
        } else {
          S mod;
          if constexpr (std::is_integral_v<S>)
            mod = b == -1 ? S(0) : S(a % b);
          else
            mod = std::fmod(a, b);
          if (mod != 0 && (b < 0) != (mod < 0))
            mod += b;
          return mod;
        }
      },
      DivisorCheck::NonZero);
}

/// C-style remainder: the result takes the dividend's sign.
Status fmodKernel(KernelContext &ctx) {
  return runBinary(
      ctx, ctx.output(0).dtype(),
      [](auto a, auto b) {
        using S = decltype(a);
        if constexpr (std::is_unsigned_v<S>)
          return S(a % b);
        else if constexpr (std::is_integral_v<S>)
          return b == -1 ? S(0) : S(a % b);
        else
          return S(std::fmod(a, b));
      },
      DivisorCheck::NonZero);
}

/// maximum/minimum propagate NaN from either side, as torch does.
template <bool IsMax> Status extremumKernel(KernelContext &ctx) {
  return runBinary(ctx, ctx.output(0).dtype(), [](auto a, auto b) {
    if (isNan(a))
      return a;
    if (isNan(b))
      return b;
    return IsMax ? (a > b ? a : b) : (a < b ? a : b);
  });
}

enum class Compare { Eq, Ne, Lt, Le, Gt, Ge };

/// Comparisons happen in the promoted type (i32 3 vs f32 2.5 compares as floats).
template <Compare C> Status compareKernel(KernelContext &ctx) {
  return runBinary(ctx, promotedType(ctx), [](auto a, auto b) {
    switch (C) {
    case Compare::Eq:
      return a == b;
    case Compare::Ne:
      return a != b;
    case Compare::Lt:
      return a < b;
    case Compare::Le:
      return a <= b;
    case Compare::Gt:
      return a > b;
    case Compare::Ge:
      return a >= b;
    }
    return false;
  });
}

enum class Logical { And, Or, Xor };

template <Logical L> Status logicalKernel(KernelContext &ctx) {
  return runBinary(ctx, promotedType(ctx), [](auto a, auto b) {
    bool x = a != 0, y = b != 0;
    switch (L) {
    case Logical::And:
      return x && y;
    case Logical::Or:
      return x || y;
    case Logical::Xor:
      return x != y;
    }
    return false;
  });
}

enum class Bitwise { And, Or, Xor, LeftShift, RightShift };

Expected<std::vector<TensorType>> inferBitwise(const InferContext &ctx) {
  for (size_t i = 0; i < 2; ++i)
    if (isFloating(ctx.input(i).dtype))
      return makeError("bitwise ops need integer or bool tensors, got ",
                       dtypeName(ctx.input(i).dtype));
  return inferArithmetic(ctx);
}

/// Computed in int64 (uint64 for u64) and narrowed on store, so shifts wrap at the element width.
/// Shifting by a negative amount or by 64 or more gives 0 (or the sign for an arithmetic right
/// shift).
template <Bitwise B> Status bitwiseKernel(KernelContext &ctx) {
  return runBinary(ctx, ctx.output(0).dtype(), [](auto a, auto b) {
    using S = decltype(a);
    if constexpr (!std::is_integral_v<S>) {
      return a; // unreachable: inference rejects floats
    } else {
      switch (B) {
      case Bitwise::And:
        return S(a & b);
      case Bitwise::Or:
        return S(a | b);
      case Bitwise::Xor:
        return S(a ^ b);
      case Bitwise::LeftShift:
        return (isNegative(b) || b >= 64) ? S(0) : S(uint64_t(a) << b);
      case Bitwise::RightShift:
        return (isNegative(b) || b >= 64) ? S(isNegative(a) ? -1 : 0) : S(a >> b);
      }
      return a;
    }
  });
}

// ---- where ------------------------------------------------------------------------------------

Expected<std::vector<TensorType>> inferWhere(const InferContext &ctx) {
  const TensorType &condition = ctx.input(0);
  if (condition.dtype != DType::Bool)
    return makeError("condition must be a bool tensor, got ", dtypeName(condition.dtype));
  TC_ASSIGN_OR_RETURN(Shape shape, broadcastShapes(condition.shape, ctx.input(1).shape));
  TC_ASSIGN_OR_RETURN(shape, broadcastShapes(shape, ctx.input(2).shape));
  DType dtype = resultType({&ctx.input(1), &ctx.input(2)});
  return std::vector<TensorType>{TensorType(dtype, std::move(shape))};
}

Status whereKernel(KernelContext &ctx) {
  const Tensor &condition = ctx.input(0);
  Tensor &out = ctx.output(0);
  BroadcastRows<3> rows(out.shape(),
                        {&condition.shape(), &ctx.input(1).shape(), &ctx.input(2).shape()});
  visitCompute(out.dtype(), [&](auto zero) {
    using S = decltype(zero);
    ComputeInput<S> self(ctx.input(1)), other(ctx.input(2));
    ComputeOutput<S> result(out);
    const uint8_t *c = condition.dataAs<uint8_t>();
    const S *x = self.data();
    const S *y = other.data();
    S *dst = result.data();
    rows.forEach([&](int64_t o, const std::array<int64_t, 3> &offset,
                     const std::array<int64_t, 3> &step, int64_t n) {
      for (int64_t j = 0; j < n; ++j)
        dst[o + j] =
            c[offset[0] + j * step[0]] ? x[offset[1] + j * step[1]] : y[offset[2] + j * step[2]];
    });
    result.commit();
  });
  return Status::ok();
}
} // namespace

Status registerElementwiseBinaryOps(OpRegistry &registry) {
  auto alpha = [] { return attrParam("alpha", AttrKind::Scalar, int64_t(1), true); };
  TC_RETURN_IF_ERROR(
      registry.add(makeOp(OpId::Add, {tensorParam("self"), tensorParam("other"), alpha()},
                          inferAddSub<false>, addSubKernel<false>)));
  TC_RETURN_IF_ERROR(
      registry.add(makeOp(OpId::Sub, {tensorParam("self"), tensorParam("other"), alpha()},
                          inferAddSub<true>, addSubKernel<true>)));
  TC_RETURN_IF_ERROR(registry.add(makeOp(OpId::Mul, selfOther(), inferArithmetic, mulKernel)));
  TC_RETURN_IF_ERROR(
      registry.add(makeOp(OpId::Div,
                          {tensorParam("self"), tensorParam("other"),
                           optionalAttrParam("rounding_mode", AttrKind::String, true)},
                          inferDiv, divKernel)));
  TC_RETURN_IF_ERROR(registry.add(makeOp(OpId::Pow, {tensorParam("self"), tensorParam("exponent")},
                                         inferArithmetic, powKernel)));

  struct Binary {
    OpId id;
    InferFn infer;
    KernelFn kernel;
  };
  const Binary binaryOps[] = {
      {OpId::Remainder, inferArithmetic, remainderKernel},
      {OpId::Fmod, inferArithmetic, fmodKernel},
      {OpId::Maximum, inferArithmetic, extremumKernel<true>},
      {OpId::Minimum, inferArithmetic, extremumKernel<false>},
      {OpId::Eq, inferBoolResult, compareKernel<Compare::Eq>},
      {OpId::Ne, inferBoolResult, compareKernel<Compare::Ne>},
      {OpId::Lt, inferBoolResult, compareKernel<Compare::Lt>},
      {OpId::Le, inferBoolResult, compareKernel<Compare::Le>},
      {OpId::Gt, inferBoolResult, compareKernel<Compare::Gt>},
      {OpId::Ge, inferBoolResult, compareKernel<Compare::Ge>},
      {OpId::LogicalAnd, inferBoolResult, logicalKernel<Logical::And>},
      {OpId::LogicalOr, inferBoolResult, logicalKernel<Logical::Or>},
      {OpId::LogicalXor, inferBoolResult, logicalKernel<Logical::Xor>},
      {OpId::BitwiseAnd, inferBitwise, bitwiseKernel<Bitwise::And>},
      {OpId::BitwiseOr, inferBitwise, bitwiseKernel<Bitwise::Or>},
      {OpId::BitwiseXor, inferBitwise, bitwiseKernel<Bitwise::Xor>},
      {OpId::BitwiseLeftShift, inferBitwise, bitwiseKernel<Bitwise::LeftShift>},
      {OpId::BitwiseRightShift, inferBitwise, bitwiseKernel<Bitwise::RightShift>},
  };
  for (const Binary &op : binaryOps)
    TC_RETURN_IF_ERROR(registry.add(makeOp(op.id, selfOther(), op.infer, op.kernel)));

  return registry.add(makeOp(OpId::Where,
                             {tensorParam("condition"), tensorParam("self"), tensorParam("other")},
                             inferWhere, whereKernel));
}

} // namespace tensorc::ops
