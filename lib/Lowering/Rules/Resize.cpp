// resize (ONNX Resize) as index arithmetic and masked loads: each resized dim maps its output
// coordinate to a source coordinate in f64 with the reference kernel's formula (so nearest's
// rounding decisions agree bit for bit), then nearest reads one clamped position and linear/cubic
// sum their 2/4 taps per dim with the filter weights (exclude_outside renormalized).
#include "Sampling.h"

#include "tensorc/Support/MultiIndex.h"

namespace tensorc::loop {

namespace {

ExprRef f64(double value) { return makeConstant(value, DType::F64); }
ExprRef add(const ExprRef &a, const ExprRef &b) { return makeBinary(BinaryOp::Add, a, b); }
ExprRef sub(const ExprRef &a, const ExprRef &b) { return makeBinary(BinaryOp::Sub, a, b); }
ExprRef mul(const ExprRef &a, const ExprRef &b) { return makeBinary(BinaryOp::Mul, a, b); }
ExprRef div(const ExprRef &a, const ExprRef &b) { return makeBinary(BinaryOp::Div, a, b); }

/// One dim's resampling: sizes, scale, roi and the attributes shared by all dims.
struct ResizeDim {
  size_t dim;
  int64_t in, out;
  double scale, roiStart, roiEnd;
};

struct ResizeSpec {
  std::string mode, coordinates, nearest;
  double cubicA = -0.75, extrapolation = 0;
  bool excludeOutside = false;
};

/// The source coordinate of output coordinate `o` (an f64 expression), the reference kernel's
/// formula op for op; null for an unknown mode.
ExprRef sourceCoordinate(const ResizeSpec &spec, const ResizeDim &d, const ExprRef &o) {
  const std::string &m = spec.coordinates;
  double in = double(d.in), out = double(d.out);
  if (m == "half_pixel" || (m == "pytorch_half_pixel" && d.out > 1))
    return sub(div(add(o, f64(0.5)), f64(d.scale)), f64(0.5));
  if (m == "pytorch_half_pixel")
    return f64(0.0);
  if (m == "align_corners") {
    double length = d.scale * in;
    return length == 1 ? f64(0.0) : div(mul(o, f64(in - 1)), f64(length - 1));
  }
  if (m == "tf_half_pixel_for_nn")
    return div(add(o, f64(0.5)), f64(d.scale));
  if (m == "asymmetric")
    return div(o, f64(d.scale));
  if (m == "half_pixel_symmetric") {
    double adjustment = out / (d.scale * in);
    double center = in / 2;
    return sub(add(f64(center * (1 - adjustment)), div(add(o, f64(0.5)), f64(d.scale))), f64(0.5));
  }
  if (m == "tf_crop_and_resize") {
    if (d.out <= 1)
      return f64(0.5 * (d.roiStart + d.roiEnd) * (in - 1));
    return add(f64(d.roiStart * (in - 1)),
               div(mul(o, f64((d.roiEnd - d.roiStart) * (in - 1))), f64(out - 1)));
  }
  return nullptr;
}

/// Whether dim `d` maps every output coordinate to itself (no arithmetic needed).
bool isIdentity(const ResizeSpec &spec, const ResizeDim &d) {
  return d.in == d.out && d.scale == 1.0 && spec.coordinates != "tf_crop_and_resize" &&
         spec.coordinates != "tf_half_pixel_for_nn";
}

/// The cubic convolution weight of distance `x` (an f64 expression).
ExprRef cubicWeight(const ExprRef &distance, double a) {
  ExprRef x = makeUnary(UnaryOp::Abs, distance);
  ExprRef x2 = mul(x, x);
  ExprRef near = add(mul(sub(mul(f64(a + 2), x), f64(a + 3)), x2), f64(1.0));
  ExprRef far = sub(mul(add(mul(sub(mul(f64(a), x), f64(5 * a)), x), f64(8 * a)), x), f64(4 * a));
  return makeSelect(makeBinary(BinaryOp::Le, x, f64(1.0)), near,
                    makeSelect(makeBinary(BinaryOp::Lt, x, f64(2.0)), far, f64(0.0)));
}

/// One tap of one dim: its clamped source position (i64) and weight (f64, null: 1).
struct DimTap {
  ExprRef position, weight;
};

/// The taps of dim `d` at output coordinate `index[d.dim]`, and in `outside` whether it lies
/// outside the input (tf_crop_and_resize; null: never).
std::vector<DimTap> dimTaps(const ResizeSpec &spec, const ResizeDim &d, const Index &index,
                            ExprRef &outside) {
  ExprRef o = makeCast(indexExpr(index[d.dim]), DType::F64);
  ExprRef x = sourceCoordinate(spec, d, o);
  if (spec.coordinates == "tf_crop_and_resize")
    outside = makeBinary(BinaryOp::LogicalOr, makeBinary(BinaryOp::Lt, x, f64(0.0)),
                         makeBinary(BinaryOp::Gt, x, f64(double(d.in - 1))));
  ExprRef base = sub(makeUnary(UnaryOp::Ceil, x), f64(1.0)); // an integer x counts as ratio 1
  ExprRef ratio = sub(x, base);
  ExprRef baseIndex = makeCast(base, DType::I64);
  if (spec.mode == "nearest") {
    ExprRef up;
    if (spec.nearest == "round_prefer_floor")
      up = makeBinary(BinaryOp::Gt, ratio, f64(0.5));
    else if (spec.nearest == "round_prefer_ceil")
      up = makeBinary(BinaryOp::Ge, ratio, f64(0.5));
    else // floor; ceil is always up
      up = makeBinary(BinaryOp::Eq, ratio, f64(1.0));
    ExprRef position =
        spec.nearest == "ceil"
            ? add(baseIndex, i64Constant(1))
            : add(baseIndex, makeSelect(makeBinary(BinaryOp::LogicalOr, up,
                                                   makeBinary(BinaryOp::Eq, ratio, f64(1.0))),
                                        i64Constant(1), i64Constant(0)));
    return {{clampIndex(position, d.in), nullptr}};
  }
  bool linear = spec.mode == "linear";
  int64_t start = linear ? 0 : -1;
  std::vector<DimTap> taps;
  ExprRef total;
  for (int64_t j = start; j < 2 - start; ++j) {
    ExprRef distance = sub(f64(double(j)), ratio);
    ExprRef weight = linear ? makeBinary(BinaryOp::Maximum, f64(0.0),
                                         sub(f64(1.0), makeUnary(UnaryOp::Abs, distance)))
                            : cubicWeight(distance, spec.cubicA);
    ExprRef position = add(baseIndex, i64Constant(j));
    if (spec.excludeOutside) {
      ExprRef inside =
          makeBinary(BinaryOp::LogicalAnd, makeBinary(BinaryOp::Ge, position, i64Constant(0)),
                     makeBinary(BinaryOp::Lt, position, i64Constant(d.in)));
      weight = makeSelect(inside, weight, f64(0.0));
      total = total ? add(total, weight) : weight;
    }
    taps.push_back({clampIndex(position, d.in), weight});
  }
  if (total)
    for (DimTap &tap : taps)
      tap.weight = div(tap.weight, total);
  return taps;
}

} // namespace

Status lowerResize(LowerContext &context, const Node &node) {
  const TensorType &inType = node.input(0)->type(), &outType = node.output()->type();
  AttrReader attrs(node.attrs());
  ResizeSpec spec{attrs.getString("mode"),
                  attrs.getString("coordinate_transformation_mode"),
                  attrs.getString("nearest_mode"),
                  attrs.getFloat("cubic_coeff_a"),
                  attrs.getFloat("extrapolation_value"),
                  attrs.getBool("exclude_outside")};
  const std::vector<double> &scales = attrs.getFloats("scales"), &roi = attrs.getFloats("roi");
  size_t rank = inType.rank();
  if (spec.mode != "nearest" && !isFloating(outType.dtype))
    return context.fallback(node, "a " + spec.mode + " resize of integers");
  if (spec.mode == "nearest" && spec.nearest != "round_prefer_floor" &&
      spec.nearest != "round_prefer_ceil" && spec.nearest != "floor" && spec.nearest != "ceil")
    return context.fallback(node, "nearest_mode '" + spec.nearest + "'");
  std::vector<ResizeDim> dims;
  for (size_t d = 0; d < rank; ++d) {
    std::optional<int64_t> in = inType.shape[d].constant(), out = outType.shape[d].constant();
    if (!in || !out)
      return context.fallback(node, "symbolic dims");
    if (*in == 0 || *out == 0)
      return context.fallback(node, "an empty input or result");
    ResizeDim dim{d, *in, *out, scales[d], roi[d], roi[rank + d]};
    if (isIdentity(spec, dim))
      continue;
    if (!sourceCoordinate(spec, dim, f64(0.0)))
      return context.fallback(node, "coordinate_transformation_mode '" + spec.coordinates + "'");
    if (attrs.getBool("antialias") && spec.mode != "nearest" && dim.scale < 1.0)
      return context.fallback(node, "an antialiased downsampling (a filter wider than its taps)");
    dims.push_back(dim);
  }
  StridedView view = context.stridedView(node.input(0));
  DType dtype = outType.dtype, type = computeType(dtype);
  Loader load = [spec, dims, view, dtype, type, rank](const Index &index) {
    std::vector<std::vector<DimTap>> taps;
    ExprRef outside;
    for (const ResizeDim &d : dims) {
      ExprRef dimOutside;
      taps.push_back(dimTaps(spec, d, index, dimOutside));
      if (dimOutside)
        outside = outside ? makeBinary(BinaryOp::LogicalOr, outside, dimOutside) : dimOutside;
    }
    // The tensor product of the dims' taps, in the reference kernel's order.
    ExprRef sum;
    std::vector<size_t> at(dims.size(), 0);
    while (true) {
      std::vector<ExprRef> dynamic(rank);
      ExprRef weight;
      for (size_t k = 0; k < dims.size(); ++k) {
        const DimTap &tap = taps[k][at[k]];
        dynamic[dims[k].dim] = tap.position;
        if (tap.weight)
          weight = weight ? mul(weight, tap.weight) : tap.weight;
      }
      ExprRef value = makeCast(loadAt(view, dtype, index, dynamic), type);
      if (weight) { // a zero weight skips its tap (an infinite value must not make a NaN)
        ExprRef w = makeCast(weight, type);
        value = makeSelect(makeBinary(BinaryOp::Ne, weight, f64(0.0)), mul(w, value),
                           makeConstant(0.0, type));
      }
      sum = sum ? add(sum, value) : value;
      if (!nextMultiIndex(at, [&](size_t k) { return taps[k].size(); }))
        break;
    }
    ExprRef result = makeCast(sum, dtype);
    if (outside)
      result = makeSelect(outside, makeConstant(spec.extrapolation, dtype), result);
    return result;
  };
  context.setPointwise(node.output(), load, 8 * int(dims.size()) + 4, false,
                       context.mergedOrigins(node));
  return Status::ok();
}

} // namespace tensorc::loop
