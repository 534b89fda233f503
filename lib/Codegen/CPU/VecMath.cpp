// Branch-free exp, log, tanh, erf and sigmoid as LLVM IR polynomials for f32 scalars and vectors.
//
// Everything is straight-line IR (fcmp + select for special cases) so the callers' loops stay
// vectorized; the only intrinsics are fma, fabs and copysign, which every CPU target lowers inline.
// Polynomial coefficients were fitted for this file (weighted minimax by iterative reweighting of
// least squares, then rounded to f32) and are written as hex floats so they are exact.
#include "tensorc/Codegen/CPU/VecMath.h"

#include <llvm/ADT/ArrayRef.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>

#include <cassert>
#include <limits>

using namespace llvm;

namespace tensorc::cpu {
namespace {

/// Builds f32 arithmetic of one shape (scalar or vector) with splatted constants.
class MathBuilder {
public:
  MathBuilder(IRBuilderBase &b, Value *x)
      : b(b), floatTy(x->getType()), intTy(floatTy->getWithNewType(b.getInt32Ty())) {
    assert(floatTy->getScalarType()->isFloatTy() && "vector math takes f32 or <N x f32>");
  }

  IRBuilderBase &b;
  Type *floatTy;
  Type *intTy;

  Value *f(float v) { return ConstantFP::get(floatTy, v); }
  Value *i(int32_t v) { return ConstantInt::get(intTy, v, /*IsSigned=*/true); }
  Value *inf() { return f(std::numeric_limits<float>::infinity()); }

  Value *fma(Value *x, Value *y, Value *z) {
    return b.CreateIntrinsic(Intrinsic::fma, {floatTy}, {x, y, z});
  }
  Value *abs(Value *x) { return b.CreateUnaryIntrinsic(Intrinsic::fabs, x); }
  Value *copySign(Value *mag, Value *sign) {
    return b.CreateBinaryIntrinsic(Intrinsic::copysign, mag, sign);
  }
  // Clamps through compare + select rather than minnum/maxnum so a NaN input stays NaN.
  Value *clampBelow(Value *x, float lo) {
    return b.CreateSelect(b.CreateFCmpOLT(x, f(lo)), f(lo), x);
  }
  Value *clampAbove(Value *x, float hi) {
    return b.CreateSelect(b.CreateFCmpOGT(x, f(hi)), f(hi), x);
  }

  /// c[0] + c[1]*x + ... + c[n-1]*x^(n-1), Horner with one fma per coefficient.
  Value *horner(Value *x, ArrayRef<float> c) {
    Value *p = f(c.back());
    for (size_t k = c.size() - 1; k-- > 0;)
      p = fma(p, x, f(c[k]));
    return p;
  }

  Value *toInt(Value *v) { return b.CreateBitCast(v, intTy); }
  Value *toFloat(Value *v) { return b.CreateBitCast(v, floatTy); }
};

// exp(r) = 1 + r + r^2 * P(r) on |r| <= ln2/2 (error below 3e-9 relative before rounding).
constexpr float kExpPoly[] = {0x1.fffffcp-2f, 0x1.55549p-3f, 0x1.5558f4p-5f, 0x1.123a6cp-7f,
                              0x1.6a2352p-10f};
// log1p(f) = f - f^2/2 + f^3 * P(f) on f in [sqrt(1/2)-1, sqrt(2)-1] (6e-9 relative).
constexpr float kLogPoly[] = {0x1.555554p-2f, -0x1.000226p-2f, 0x1.99a008p-3f, -0x1.547244p-3f,
                              0x1.22da1cp-3f, -0x1.0d8542p-3f, 0x1.055b6ap-3f, -0x1.38b58p-4f};
// tanh(x) = x + x^3 * P(x^2) on |x| < 0.625 (2e-10 relative).
constexpr float kTanhPoly[] = {-0x1.555554p-2f, 0x1.111066p-3f,  -0x1.b9ee9p-5f,
                               0x1.638b58p-6f,  -0x1.0bf4fep-7f, 0x1.18e1ep-9f};
// erf(x) = x + x * P(x^2) on |x| < 1 (1.2e-9 relative).
constexpr float kErfSmallPoly[] = {0x1.06eba8p-3f,  -0x1.81273ep-2f, 0x1.ce2cf8p-4f,
                                   -0x1.b7f90ep-6f, 0x1.5405b8p-8f,  -0x1.a3f722p-11f,
                                   0x1.496a84p-14f};
// erfc(a) * exp(a^2) = P(a - 2.5) on a in [1, 4], fitted for absolute error in erfc (below 5e-10).
constexpr float kErfcScaledPoly[] = {
    0x1.afbb3cp-3f,   -0x1.3088fap-4f, 0x1.98720ap-6f,   -0x1.06267ap-7f, 0x1.4a64eep-9f,
    -0x1.545964p-11f, 0x1.d513ap-13f,  -0x1.1da648p-13f, -0x1.e4b1cp-15f, -0x1.d5ab6ep-16f};

} // namespace

Value *emitExp(IRBuilderBase &b, Value *x) {
  MathBuilder m(b, x);
  // Past 89 the result is +inf and below -104 it rounds to 0; clamping keeps n in [-150, 128].
  Value *xc = m.clampAbove(m.clampBelow(x, -104.0f), 89.0f);
  // Adding 1.5 * 2^23 rounds x/ln2 to the nearest integer and leaves it in the low mantissa bits.
  const float shifter = 0x1.8p23f;
  Value *shifted = m.fma(xc, m.f(0x1.715476p+0f), m.f(shifter));
  Value *n = b.CreateFSub(shifted, m.f(shifter));
  Value *nInt = b.CreateSub(m.toInt(shifted), m.toInt(m.f(shifter)));
  // Cody-Waite: ln2 split in two so r = x - n*ln2 keeps f32 accuracy for |n| up to 150.
  Value *r = m.fma(n, m.f(-0x1.62e4p-1f), xc);
  r = m.fma(n, m.f(-0x1.7f7d1cp-20f), r);
  Value *p = m.horner(r, kExpPoly);
  p = b.CreateFAdd(m.fma(p, b.CreateFMul(r, r), r), m.f(1.0f));
  // Scale by 2^n as two factors 2^(n/2) * 2^(n - n/2): each stays a normal float for every
  // clamped n, the first product is exact, and the second rounds once, so results below
  // FLT_MIN underflow gradually to denormals and n = 128 overflows to +inf.
  Value *nHalf = b.CreateAShr(nInt, m.i(1));
  Value *nRest = b.CreateSub(nInt, nHalf);
  auto powerOfTwo = [&](Value *e) {
    return m.toFloat(b.CreateShl(b.CreateAdd(e, m.i(127)), m.i(23)));
  };
  return b.CreateFMul(b.CreateFMul(p, powerOfTwo(nHalf)), powerOfTwo(nRest));
}

Value *emitLog(IRBuilderBase &b, Value *x) {
  MathBuilder m(b, x);
  // Denormals are scaled into the normal range first; their exponent is corrected below.
  Value *isDenormal = b.CreateFCmpOLT(x, m.f(std::numeric_limits<float>::min()));
  Value *xn = b.CreateSelect(isDenormal, b.CreateFMul(x, m.f(0x1p23f)), x);
  // Subtracting the bits of sqrt(1/2) before splitting puts the mantissa in [sqrt(1/2), sqrt(2))
  // so log(mantissa) is small and symmetric-ish around zero.
  const int32_t sqrtHalfBits = 0x3f3504f3;
  Value *t = b.CreateSub(m.toInt(xn), m.i(sqrtHalfBits));
  Value *e = b.CreateSub(b.CreateAShr(t, m.i(23)), b.CreateSelect(isDenormal, m.i(23), m.i(0)));
  Value *mant = m.toFloat(b.CreateAdd(b.CreateAnd(t, m.i(0x7fffff)), m.i(sqrtHalfBits)));
  Value *f = b.CreateFSub(mant, m.f(1.0f)); // exact (Sterbenz)
  Value *ef = b.CreateSIToFP(e, m.floatTy);
  // Sum from the smallest term up; ln2 is split so e * ln2Hi is exact for every exponent.
  Value *f2 = b.CreateFMul(f, f);
  Value *y =
      m.fma(m.horner(f, kLogPoly), b.CreateFMul(f2, f), b.CreateFMul(ef, m.f(-0x1.bd0106p-13f)));
  y = m.fma(b.CreateFMul(f, m.f(-0.5f)), f, y);
  y = b.CreateFAdd(y, f);
  y = m.fma(ef, m.f(0x1.63p-1f), y);
  // Special cases: x < 0 or NaN -> NaN, +inf -> +inf, +-0 -> -inf.
  y = b.CreateSelect(b.CreateFCmpULT(x, m.f(0.0f)), m.f(std::numeric_limits<float>::quiet_NaN()),
                     y);
  y = b.CreateSelect(b.CreateFCmpOEQ(x, m.inf()), x, y);
  return b.CreateSelect(b.CreateFCmpOEQ(x, m.f(0.0f)), b.CreateFNeg(m.inf()), y);
}

Value *emitTanh(IRBuilderBase &b, Value *x) {
  MathBuilder m(b, x);
  Value *a = m.abs(x);
  // Near zero 1 - 2/(e^2a + 1) cancels, so an odd polynomial covers |x| < 0.625.
  Value *a2 = b.CreateFMul(a, a);
  Value *small = m.fma(b.CreateFMul(a, a2), m.horner(a2, kTanhPoly), a);
  // exp saturates to +inf for large |x|, which makes this exactly 1; NaN stays NaN.
  Value *e = emitExp(b, b.CreateFAdd(a, a));
  Value *large = b.CreateFSub(m.f(1.0f), b.CreateFDiv(m.f(2.0f), b.CreateFAdd(e, m.f(1.0f))));
  Value *y = b.CreateSelect(b.CreateFCmpOLT(a, m.f(0.625f)), small, large);
  // Computed on |x| and signed last so tanh(-0) = -0.
  return m.copySign(y, x);
}

Value *emitErf(IRBuilderBase &b, Value *x) {
  MathBuilder m(b, x);
  Value *a = m.abs(x);
  Value *small = m.fma(a, m.horner(b.CreateFMul(a, a), kErfSmallPoly), a);
  // erf rounds to 1 in f32 beyond 3.92; clamping at 4 keeps the fit's range (and NaN).
  Value *ac = m.clampAbove(a, 4.0f);
  Value *scaledErfc = m.horner(b.CreateFSub(ac, m.f(2.5f)), kErfcScaledPoly);
  Value *erfc = b.CreateFMul(emitExp(b, b.CreateFNeg(b.CreateFMul(ac, ac))), scaledErfc);
  Value *large = b.CreateFSub(m.f(1.0f), erfc);
  Value *y = b.CreateSelect(b.CreateFCmpOLT(a, m.f(1.0f)), small, large);
  return m.copySign(y, x);
}

Value *emitSigmoid(IRBuilderBase &b, Value *x) {
  MathBuilder m(b, x);
  // e = exp(-|x|) is in (0, 1], so nothing overflows: sigmoid is 1/(1+e) for x >= 0 and e/(1+e)
  // for x < 0, which also keeps tiny results for very negative x instead of flushing them.
  Value *e = emitExp(b, b.CreateFNeg(m.abs(x)));
  Value *num = b.CreateSelect(b.CreateFCmpOLT(x, m.f(0.0f)), e, m.f(1.0f));
  return b.CreateFDiv(num, b.CreateFAdd(m.f(1.0f), e));
}

} // namespace tensorc::cpu
