// Elementwise ops of one operand: constants, unary math, gelu, silu, clamp, casts (kernels and
// decompositions); ElementwiseBinary.cpp has the binary ops and where.
#include "DecomposeHelpers.h"
#include "ElementwiseKernels.h"
#include "OpGroups.h"

namespace tensorc::ops {

namespace {

using namespace elementwise;

// ---- Constant ---------------------------------------------------------------------------------

Expected<std::vector<TensorType>> inferConstant(const InferContext &ctx) {
  const Tensor &value = ctx.getTensor("value");
  return std::vector<TensorType>{TensorType::fromStatic(value.dtype(), value.shape())};
}

Status constantKernel(KernelContext &ctx) {
  const Tensor &value = ctx.getTensor("value");
  if (value.nbytes() > 0)
    std::memcpy(ctx.output(0).mutableData(), value.data(), value.nbytes());
  return Status::ok();
}

// ---- Unary ------------------------------------------------------------------------------------

/// Float math: integer and bool inputs compute in (and produce) f32, torch's default dtype.
Expected<std::vector<TensorType>> inferFloatMath(const InferContext &ctx) {
  const TensorType &self = ctx.input(0);
  return std::vector<TensorType>{
      TensorType(isFloating(self.dtype) ? self.dtype : DType::F32, self.shape)};
}

/// Ops that keep the dtype and have no meaning on bool (neg, abs, relu, floor, ceil, round).
Expected<std::vector<TensorType>> inferSameTypeNoBool(const InferContext &ctx) {
  const TensorType &self = ctx.input(0);
  if (self.dtype == DType::Bool)
    return makeError("not supported on bool tensors");
  return std::vector<TensorType>{self};
}

Expected<std::vector<TensorType>> inferSameType(const InferContext &ctx) {
  return std::vector<TensorType>{ctx.input(0)};
}

Expected<std::vector<TensorType>> inferPredicate(const InferContext &ctx) {
  return std::vector<TensorType>{TensorType(DType::Bool, ctx.input(0).shape)};
}

struct ExpFn {
  template <typename S> S operator()(S x) const { return std::exp(x); }
};
struct LogFn {
  template <typename S> S operator()(S x) const { return std::log(x); }
};
struct SqrtFn {
  template <typename S> S operator()(S x) const { return std::sqrt(x); }
};
struct RsqrtFn {
  template <typename S> S operator()(S x) const { return S(1) / std::sqrt(x); }
};
struct ReciprocalFn {
  template <typename S> S operator()(S x) const { return S(1) / x; }
};
struct TanhFn {
  template <typename S> S operator()(S x) const { return std::tanh(x); }
};
struct SigmoidFn {
  template <typename S> S operator()(S x) const { return S(1) / (S(1) + std::exp(-x)); }
};
struct ErfFn {
  template <typename S> S operator()(S x) const { return std::erf(x); }
};
struct SinFn {
  template <typename S> S operator()(S x) const { return std::sin(x); }
};
struct CosFn {
  template <typename S> S operator()(S x) const { return std::cos(x); }
};
struct TanFn {
  template <typename S> S operator()(S x) const { return std::tan(x); }
};
struct AsinFn {
  template <typename S> S operator()(S x) const { return std::asin(x); }
};
struct AcosFn {
  template <typename S> S operator()(S x) const { return std::acos(x); }
};
struct AtanFn {
  template <typename S> S operator()(S x) const { return std::atan(x); }
};
struct SinhFn {
  template <typename S> S operator()(S x) const { return std::sinh(x); }
};
struct CoshFn {
  template <typename S> S operator()(S x) const { return std::cosh(x); }
};
struct AsinhFn {
  template <typename S> S operator()(S x) const { return std::asinh(x); }
};
struct AcoshFn {
  template <typename S> S operator()(S x) const { return std::acosh(x); }
};
struct AtanhFn {
  template <typename S> S operator()(S x) const { return std::atanh(x); }
};
struct SiluFn {
  template <typename S> S operator()(S x) const { return x / (S(1) + std::exp(-x)); }
};

template <typename Fn> Status floatMathKernel(KernelContext &ctx) {
  mapFloat(ctx, Fn{});
  return Status::ok();
}

struct NegFn {
  template <typename S> S operator()(S x) const {
    if constexpr (std::is_integral_v<S>)
      return S(wrapNeg(int64_t(x)));
    else
      return -x;
  }
};
struct AbsFn {
  template <typename S> S operator()(S x) const {
    if constexpr (std::is_integral_v<S>)
      return isNegative(x) ? S(wrapNeg(int64_t(x))) : x;
    else
      return std::fabs(x);
  }
};
/// torch: (0 < x) - (x < 0), so sign(NaN) is 0.
struct SignFn {
  template <typename S> S operator()(S x) const { return S(int(S(0) < x) - int(isNegative(x))); }
};
struct ReluFn {
  template <typename S> S operator()(S x) const { return x > S(0) || isNan(x) ? x : S(0); }
};
/// floor, ceil, round: `Round` on floating-point elements; integers are already whole.
template <typename Round> struct WholeFn {
  template <typename S> S operator()(S x) const {
    if constexpr (std::is_integral_v<S>)
      return x;
    else
      return Round{}(x);
  }
};
struct Floor {
  template <typename S> S operator()(S x) const { return std::floor(x); }
};
struct Ceil {
  template <typename S> S operator()(S x) const { return std::ceil(x); }
};
/// Half to even: nearbyint under the default rounding mode.
struct RoundHalfEven {
  template <typename S> S operator()(S x) const { return std::nearbyint(x); }
};

template <typename Fn> Status sameTypeKernel(KernelContext &ctx) {
  mapSameType(ctx, Fn{});
  return Status::ok();
}

Status logicalNotKernel(KernelContext &ctx) {
  mapPredicate(ctx, [](auto x) { return !(x != 0); });
  return Status::ok();
}

/// Bitwise ops take integers and bool only.
Expected<std::vector<TensorType>> inferBitwiseNot(const InferContext &ctx) {
  if (isFloating(ctx.input(0).dtype))
    return makeError("bitwise ops need integer or bool tensors, got ",
                     dtypeName(ctx.input(0).dtype));
  return std::vector<TensorType>{ctx.input(0)};
}

struct BitwiseNotFn {
  template <typename S> S operator()(S x) const {
    if constexpr (std::is_integral_v<S>)
      return ~x;
    else
      return x; // unreachable: inference rejects floats
  }
};

Status bitwiseNotKernel(KernelContext &ctx) {
  if (ctx.input(0).dtype() == DType::Bool) {
    mapPredicate(ctx, [](auto x) { return !(x != 0); });
    return Status::ok();
  }
  mapSameType(ctx, BitwiseNotFn{});
  return Status::ok();
}

Status isNanKernel(KernelContext &ctx) {
  mapPredicate(ctx, [](auto x) { return isNan(x); });
  return Status::ok();
}

// ---- gelu, clamp, convert_element_type --------------------------------------------------------

Expected<std::vector<TensorType>> inferGelu(const InferContext &ctx) {
  const TensorType &self = ctx.input(0);
  if (!isFloating(self.dtype))
    return makeError("expects a floating-point tensor, got ", dtypeName(self.dtype));
  const std::string &approximate = ctx.getString("approximate");
  if (approximate != "none" && approximate != "tanh")
    return makeError("approximate must be 'none' or 'tanh', got '", approximate, "'");
  return std::vector<TensorType>{self};
}

Status geluKernel(KernelContext &ctx) {
  if (ctx.getString("approximate") == "tanh") {
    mapFloat(ctx, [](auto x) {
      using S = decltype(x);
      const S kBeta = S(0.7978845608028654); // sqrt(2 / pi)
      const S kKappa = S(0.044715);
      return S(0.5) * x * (S(1) + std::tanh(kBeta * (x + kKappa * x * x * x)));
    });
  } else {
    mapFloat(ctx, [](auto x) {
      using S = decltype(x);
      return S(0.5) * x * (S(1) + std::erf(x * S(0.7071067811865476))); // x / sqrt(2)
    });
  }
  return Status::ok();
}

/// torch promotes with the bounds as wrapped scalars: a float bound makes an integer tensor f32,
/// an integer bound makes a bool tensor i64.
Expected<std::vector<TensorType>> inferClamp(const InferContext &ctx) {
  const TensorType &self = ctx.input(0);
  if (ctx.isNone("min") && ctx.isNone("max"))
    return makeError("at least one of 'min' and 'max' must be set");
  DType dtype = self.dtype;
  for (const char *bound : {"min", "max"}) {
    const Attribute &value = ctx.attr(bound);
    if (value.isFloat() && !isFloating(dtype))
      dtype = DType::F32;
    else if (value.isInt() && dtype == DType::Bool)
      dtype = DType::I64;
  }
  return std::vector<TensorType>{TensorType(dtype, self.shape)};
}

Status clampKernel(KernelContext &ctx) {
  const Attribute &minValue = ctx.attr("min");
  const Attribute &maxValue = ctx.attr("max");
  bool hasMin = !minValue.isNone(), hasMax = !maxValue.isNone();
  int64_t minInt = hasMin ? scalarAs<int64_t>(minValue) : 0;
  int64_t maxInt = hasMax ? scalarAs<int64_t>(maxValue) : 0;
  double minFloat = hasMin ? minValue.asScalar() : 0.0;
  double maxFloat = hasMax ? maxValue.asScalar() : 0.0;
  // NaN in the input or a bound propagates; min > max gives max, as in torch.
  mapSameType(ctx, [&](auto x) {
    using S = decltype(x);
    S lo = std::is_integral_v<S> ? S(minInt) : S(minFloat);
    if constexpr (std::is_unsigned_v<S>)
      lo = minInt < 0 ? S(0) : lo; // a negative bound is below every u64
    S hi = std::is_integral_v<S> ? S(maxInt) : S(maxFloat);
    if (isNan(x))
      return x;
    if (hasMin)
      x = isNan(lo) ? lo : x < lo ? lo : x;
    if (hasMax)
      x = isNan(hi) ? hi : x > hi ? hi : x;
    return x;
  });
  return Status::ok();
}

Expected<std::vector<TensorType>> inferConvert(const InferContext &ctx) {
  return std::vector<TensorType>{TensorType(ctx.getDType("dtype"), ctx.input(0).shape)};
}

Status convertKernel(KernelContext &ctx) {
  const Tensor &in = ctx.input(0);
  Tensor &out = ctx.output(0);
  int64_t n = in.numel();
  visitElem(in.dtype(), [&](auto inTag) {
    constexpr DType DI = decltype(inTag)::value;
    // Integers go through int64 (u64 through uint64) so that 64-bit values survive exactly.
    using S = std::conditional_t<
        DI == DType::U64, uint64_t,
        std::conditional_t<std::is_integral_v<Storage<DI>> && DI != DType::F16 && DI != DType::BF16,
                           int64_t, double>>;
    const Storage<DI> *src = in.dataAs<Storage<DI>>();
    visitElem(out.dtype(), [&](auto outTag) {
      constexpr DType DO = decltype(outTag)::value;
      Storage<DO> *dst = out.mutableDataAs<Storage<DO>>();
      for (int64_t i = 0; i < n; ++i)
        dst[i] = storeAs<DO, S>(loadAs<S, DI>(src[i]));
    });
  });
  return Status::ok();
}

// ---- Decompositions ---------------------------------------------------------------------------
// Scalars become 0-d constants, which promote weakly: the tensor operand keeps its dtype.

/// gelu(x) = 0.5 * x * (1 + erf(x / sqrt(2))), or with approximate='tanh'
/// 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3))).
DecomposeResult decomposeGelu(RewriteContext &rewrite, const OpRegistry &registry) {
  DecomposeBuilder b(rewrite, registry);
  Value *x = b.operand(0);
  Value *inner = nullptr;
  if (AttrReader(b.node().attrs()).getString("approximate") == "tanh") {
    TC_ASSIGN_OR_RETURN(Value * square, b.mul(x, x));
    TC_ASSIGN_OR_RETURN(Value * cube, b.mul(square, x));
    TC_ASSIGN_OR_RETURN(Value * scaledCube, b.binaryScalar(OpId::Mul, cube, 0.044715));
    TC_ASSIGN_OR_RETURN(Value * sum, b.add(x, scaledCube));
    TC_ASSIGN_OR_RETURN(Value * scaled, b.binaryScalar(OpId::Mul, sum, 0.7978845608028654));
    TC_ASSIGN_OR_RETURN(inner, b.unary(OpId::Tanh, scaled));
  } else {
    TC_ASSIGN_OR_RETURN(Value * scaled, b.binaryScalar(OpId::Mul, x, 0.7071067811865476));
    TC_ASSIGN_OR_RETURN(inner, b.unary(OpId::Erf, scaled));
  }
  TC_ASSIGN_OR_RETURN(Value * onePlus, b.binaryScalar(OpId::Add, inner, 1.0));
  TC_ASSIGN_OR_RETURN(Value * half, b.binaryScalar(OpId::Mul, x, 0.5));
  TC_ASSIGN_OR_RETURN(Value * result, b.mul(half, onePlus));
  return replaceWith(result);
}

/// silu(x) = x * sigmoid(x); integer inputs compute in the result's float dtype.
DecomposeResult decomposeSilu(RewriteContext &rewrite, const OpRegistry &registry) {
  DecomposeBuilder b(rewrite, registry);
  TC_ASSIGN_OR_RETURN(Value * x, b.cast(b.operand(0), b.resultType().dtype));
  TC_ASSIGN_OR_RETURN(Value * sigmoid, b.unary(OpId::Sigmoid, x));
  TC_ASSIGN_OR_RETURN(Value * result, b.mul(x, sigmoid));
  return replaceWith(result);
}

/// clamp(x, min, max) = minimum(maximum(x, min), max) in the result dtype: maximum/minimum
/// propagate NaN from either side, as clamp does (and min > max gives max). A bool result keeps
/// the node.
DecomposeResult decomposeClamp(RewriteContext &rewrite, const OpRegistry &registry) {
  DecomposeBuilder b(rewrite, registry);
  DType dtype = b.resultType().dtype;
  if (dtype == DType::Bool)
    return keepNode();
  TC_ASSIGN_OR_RETURN(Value * result, b.cast(b.operand(0), dtype));
  AttrReader attrs(b.node().attrs());
  for (auto [bound, op] : {std::pair{"min", OpId::Maximum}, std::pair{"max", OpId::Minimum}}) {
    if (attrs.isNone(bound))
      continue;
    TC_ASSIGN_OR_RETURN(Value * limit, b.scalar(attrs.attr(bound), dtype));
    TC_ASSIGN_OR_RETURN(result, b.binary(op, result, limit));
  }
  return replaceWith(result);
}
} // namespace

Status registerElementwiseOps(OpRegistry &registry) {
  ParamSpec value = attrParam("value", AttrKind::Tensor);
  value.kwargOnly = true;
  TC_RETURN_IF_ERROR(registry.add(makeOp(OpId::Constant, {value}, inferConstant, constantKernel)));

  struct Unary {
    OpId id;
    InferFn infer;
    KernelFn kernel;
  };
  const Unary unaryOps[] = {
      {OpId::Neg, inferSameTypeNoBool, sameTypeKernel<NegFn>},
      {OpId::Abs, inferSameTypeNoBool, sameTypeKernel<AbsFn>},
      {OpId::Exp, inferFloatMath, floatMathKernel<ExpFn>},
      {OpId::Log, inferFloatMath, floatMathKernel<LogFn>},
      {OpId::Sqrt, inferFloatMath, floatMathKernel<SqrtFn>},
      {OpId::Rsqrt, inferFloatMath, floatMathKernel<RsqrtFn>},
      {OpId::Reciprocal, inferFloatMath, floatMathKernel<ReciprocalFn>},
      {OpId::Tanh, inferFloatMath, floatMathKernel<TanhFn>},
      {OpId::Sigmoid, inferFloatMath, floatMathKernel<SigmoidFn>},
      {OpId::Erf, inferFloatMath, floatMathKernel<ErfFn>},
      {OpId::Sin, inferFloatMath, floatMathKernel<SinFn>},
      {OpId::Cos, inferFloatMath, floatMathKernel<CosFn>},
      {OpId::Tan, inferFloatMath, floatMathKernel<TanFn>},
      {OpId::Asin, inferFloatMath, floatMathKernel<AsinFn>},
      {OpId::Acos, inferFloatMath, floatMathKernel<AcosFn>},
      {OpId::Atan, inferFloatMath, floatMathKernel<AtanFn>},
      {OpId::Sinh, inferFloatMath, floatMathKernel<SinhFn>},
      {OpId::Cosh, inferFloatMath, floatMathKernel<CoshFn>},
      {OpId::Asinh, inferFloatMath, floatMathKernel<AsinhFn>},
      {OpId::Acosh, inferFloatMath, floatMathKernel<AcoshFn>},
      {OpId::Atanh, inferFloatMath, floatMathKernel<AtanhFn>},
      {OpId::Floor, inferSameTypeNoBool, sameTypeKernel<WholeFn<Floor>>},
      {OpId::Ceil, inferSameTypeNoBool, sameTypeKernel<WholeFn<Ceil>>},
      {OpId::Round, inferSameTypeNoBool, sameTypeKernel<WholeFn<RoundHalfEven>>},
      {OpId::Sign, inferSameType, sameTypeKernel<SignFn>},
      {OpId::Relu, inferSameTypeNoBool, sameTypeKernel<ReluFn>},
      {OpId::LogicalNot, inferPredicate, logicalNotKernel},
      {OpId::BitwiseNot, inferBitwiseNot, bitwiseNotKernel},
      {OpId::IsNan, inferPredicate, isNanKernel},
  };
  for (const Unary &op : unaryOps)
    TC_RETURN_IF_ERROR(registry.add(makeOp(op.id, selfOnly(), op.infer, op.kernel)));
  TC_RETURN_IF_ERROR(registry.add(withDecompose(
      makeOp(OpId::Silu, selfOnly(), inferFloatMath, floatMathKernel<SiluFn>), decomposeSilu)));

  TC_RETURN_IF_ERROR(registry.add(withDecompose(
      makeOp(OpId::Gelu,
             {tensorParam("self"), attrParam("approximate", AttrKind::String, "none", true)},
             inferGelu, geluKernel),
      decomposeGelu)));
  TC_RETURN_IF_ERROR(registry.add(
      withDecompose(makeOp(OpId::Clamp,
                           {tensorParam("self"), optionalAttrParam("min", AttrKind::Scalar),
                            optionalAttrParam("max", AttrKind::Scalar)},
                           inferClamp, clampKernel),
                    decomposeClamp)));
  TC_RETURN_IF_ERROR(registry.add(makeOp(OpId::ConvertElementType,
                                         {tensorParam("self"), attrParam("dtype", AttrKind::DType)},
                                         inferConvert, convertKernel)));
  return Status::ok();
}

} // namespace tensorc::ops
