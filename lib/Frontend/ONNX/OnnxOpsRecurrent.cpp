// ONNX converters for recurrent layers: RNN, GRU and LSTM, unrolled over the sequence.
#include "NNHelpers.h"
#include "OnnxConverters.h"
#include "tensorc/Support/StrCat.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace tensorc::onnx {

using namespace nn;

// ---- Recurrent layers --------------------------------------------------------------------------

namespace {

enum class CellKind { RNN, GRU, LSTM };

/// Sequence steps unrolled at import at most (Loop's limit too).
constexpr int64_t kMaxUnrolledSteps = 1000;

/// Applies ONNX activation `name` (with its alpha/beta where it takes them).
Expected<Value *> activate(ConvertContext &c, const std::string &name, Value *x, double alpha,
                           double beta) {
  DType dtype = x->type().dtype;
  std::string lower = name;
  std::transform(lower.begin(), lower.end(), lower.begin(), ::tolower);
  if (lower == "sigmoid")
    return c.emit("aten.sigmoid", {x});
  if (lower == "tanh")
    return c.emit("aten.tanh", {x});
  if (lower == "relu")
    return c.emit("aten.relu", {x});
  if (lower == "affine" || lower == "scaledtanh" || lower == "hardsigmoid") {
    TC_ASSIGN_OR_RETURN(Value * a, c.scalar(alpha, dtype));
    TC_ASSIGN_OR_RETURN(Value * b, c.scalar(beta, dtype));
    if (lower == "scaledtanh") {
      TC_ASSIGN_OR_RETURN(Value * t, binary(c, "aten.mul", x, b));
      TC_ASSIGN_OR_RETURN(t, c.emit("aten.tanh", {t}));
      return binary(c, "aten.mul", t, a);
    }
    TC_ASSIGN_OR_RETURN(Value * t, binary(c, "aten.mul", x, a));
    TC_ASSIGN_OR_RETURN(t, binary(c, "aten.add", t, b));
    if (lower == "affine")
      return t;
    AttrMap attrs;
    attrs.emplace("min", Attribute(0.0));
    attrs.emplace("max", Attribute(1.0));
    return c.emit("aten.clamp", {t}, std::move(attrs));
  }
  return c.error(strCat("activation '", name, "' is not supported"));
}

struct RnnSetup {
  CellKind kind;
  int64_t hidden = 0, gates = 1, dirs = 1, seq = 0;
  std::vector<std::string> activations;
  std::vector<double> alphas, betas;
  std::optional<double> clip;
  bool linearBeforeReset = false;
};

/// Direction `d` of a [dirs, ...] input as [...].
Expected<Value *> directionOf(ConvertContext &c, Value *value, int64_t d) {
  TC_ASSIGN_OR_RETURN(Value * part, slice(c, value, 0, d, d + 1));
  return squeezeDim(c, part, 0);
}

/// Columns [gate * H, (gate + count) * H) of a [B, G*H] value.
Expected<Value *> gateSlice(ConvertContext &c, Value *value, int64_t gate, int64_t count,
                            int64_t hidden) {
  return slice(c, value, int64_t(value->type().rank()) - 1, gate * hidden, (gate + count) * hidden);
}

Expected<Value *> act(ConvertContext &c, const RnnSetup &s, size_t index, Value *x) {
  if (s.clip) {
    AttrMap attrs;
    attrs.emplace("min", Attribute(-*s.clip));
    attrs.emplace("max", Attribute(*s.clip));
    TC_ASSIGN_OR_RETURN(x, c.emit("aten.clamp", {x}, std::move(attrs)));
  }
  double alpha = index < s.alphas.size() ? s.alphas[index] : 0.0;
  double beta = index < s.betas.size() ? s.betas[index] : 0.0;
  return activate(c, s.activations[index], x, alpha, beta);
}

Status convertRecurrent(ConvertContext &c, CellKind kind) {
  RnnSetup s;
  s.kind = kind;
  s.gates = kind == CellKind::RNN ? 1 : kind == CellKind::GRU ? 3 : 4;
  s.hidden = c.intAttr("hidden_size", 0);
  std::string direction = c.stringAttr("direction", "forward");
  s.dirs = direction == "bidirectional" ? 2 : 1;
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional")
    return c.error(strCat("unknown direction '", direction, "'"));
  if (c.hasAttr("clip"))
    s.clip = c.floatAttr("clip", 0.0);
  s.linearBeforeReset = c.intAttr("linear_before_reset", 0) != 0;
  if (c.intAttr("input_forget", 0) != 0)
    return c.error("input_forget=1 is not supported");
  int64_t layout = c.intAttr("layout", 0);
  std::vector<std::string> defaults = kind == CellKind::RNN ? std::vector<std::string>{"Tanh"}
                                      : kind == CellKind::GRU
                                          ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                          : std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"};
  if (c.hasAttr("activations")) {
    const ::onnx::AttributeProto *attr = nullptr;
    for (const ::onnx::AttributeProto &a : c.node().attribute())
      if (a.name() == "activations")
        attr = &a;
    for (const std::string &name : attr->strings())
      s.activations.push_back(name);
  } else {
    for (int64_t d = 0; d < s.dirs; ++d)
      s.activations.insert(s.activations.end(), defaults.begin(), defaults.end());
  }
  size_t perDir = defaults.size();
  if (s.activations.size() != perDir * size_t(s.dirs))
    return c.error(
        strCat("expected ", perDir * size_t(s.dirs), " activations, got ", s.activations.size()));
  s.alphas = c.floatsAttr("activation_alpha");
  s.betas = c.floatsAttr("activation_beta");

  TC_ASSIGN_OR_RETURN(Value * x, c.input(0));
  TC_ASSIGN_OR_RETURN(Value * w, c.input(1));
  TC_ASSIGN_OR_RETURN(Value * r, c.input(2));
  if (layout != 0 && layout != 1)
    return c.error(strCat("layout must be 0 or 1, got ", layout));
  for (Value *operand : {x, w, r})
    if (operand->type().rank() != 3)
      return c.error(strCat("X, W and R must have rank 3, got ", x->type().str(), ", ",
                            w->type().str(), " and ", r->type().str()));
  if (s.hidden < 0 || s.hidden > kMaxWindowValue)
    return c.error(strCat("hidden_size ", s.hidden, " is out of range"));
  if (layout == 1) {
    TC_ASSIGN_OR_RETURN(x, permute(c, x, Ints{1, 0, 2}));
  }
  std::optional<int64_t> seq = x->type().shape[0].constant();
  if (!seq)
    return c.error(strCat("needs a static sequence length, got ", x->type().str()));
  s.seq = *seq;
  // Every step is unrolled at import, as Loop iterations are.
  if (s.seq > kMaxUnrolledSteps)
    return c.error(strCat("the sequence has ", s.seq, " steps, more than the ", kMaxUnrolledSteps,
                          " tensorc unrolls"));
  if (s.hidden == 0) {
    std::optional<int64_t> rows = r->type().shape[2].constant();
    if (!rows || *rows < 1 || *rows > kMaxWindowValue)
      return c.error("hidden_size is required");
    s.hidden = *rows;
  }
  if (c.hasInput(4)) {
    TC_ASSIGN_OR_RETURN(Ints lens, c.constantInts(4, "sequence_lens"));
    for (int64_t len : lens)
      if (len != s.seq)
        return c.error("sequence_lens shorter than the sequence are not supported");
  }
  DType dtype = x->type().dtype;
  SymInt batch = x->type().shape[1];
  int64_t H = s.hidden, G = s.gates;
  auto initialState = [&](size_t i) -> Expected<Value *> {
    if (c.hasInput(i)) {
      TC_ASSIGN_OR_RETURN(Value * v, c.input(i));
      if (layout == 1) {
        TC_ASSIGN_OR_RETURN(v, permute(c, v, Ints{1, 0, 2}));
      }
      return v;
    }
    AttrMap attrs;
    attrs.emplace("size", Attribute(std::vector<SymInt>{SymInt(s.dirs), batch, SymInt(H)}));
    attrs.emplace("fill_value", Attribute(0.0));
    attrs.emplace("dtype", Attribute(dtype));
    return c.emit("aten.full", {}, std::move(attrs));
  };
  TC_ASSIGN_OR_RETURN(Value * h0, initialState(5));
  Value *c0 = nullptr, *peep = nullptr;
  if (kind == CellKind::LSTM) {
    TC_ASSIGN_OR_RETURN(c0, initialState(6));
    if (c.hasInput(7)) {
      TC_ASSIGN_OR_RETURN(peep, c.input(7));
    }
  }
  TC_ASSIGN_OR_RETURN(Value * bias, c.optionalInput(3));
  std::vector<Value *> ys, hs, cs;
  for (int64_t d = 0; d < s.dirs; ++d) {
    bool reverse = direction == "reverse" || d == 1;
    RnnSetup ds = s;
    ds.activations.assign(s.activations.begin() + int64_t(perDir) * d,
                          s.activations.begin() + int64_t(perDir) * (d + 1));
    if (s.alphas.size() >= perDir * size_t(d + 1))
      ds.alphas.assign(s.alphas.begin() + int64_t(perDir) * d, s.alphas.end());
    if (s.betas.size() >= perDir * size_t(d + 1))
      ds.betas.assign(s.betas.begin() + int64_t(perDir) * d, s.betas.end());
    TC_ASSIGN_OR_RETURN(Value * wd, directionOf(c, w, d));
    TC_ASSIGN_OR_RETURN(wd, transpose2d(c, wd)); // [I, G*H]
    TC_ASSIGN_OR_RETURN(Value * rd, directionOf(c, r, d));
    TC_ASSIGN_OR_RETURN(rd, transpose2d(c, rd)); // [H, G*H]
    Value *wb = nullptr, *rb = nullptr;
    if (bias) {
      TC_ASSIGN_OR_RETURN(Value * bd, directionOf(c, bias, d));
      TC_ASSIGN_OR_RETURN(wb, slice(c, bd, 0, 0, G * H));
      TC_ASSIGN_OR_RETURN(rb, slice(c, bd, 0, G * H, 2 * G * H));
    }
    Value *pi = nullptr, *po = nullptr, *pf = nullptr;
    if (peep) {
      TC_ASSIGN_OR_RETURN(Value * pd, directionOf(c, peep, d));
      TC_ASSIGN_OR_RETURN(pi, slice(c, pd, 0, 0, H));
      TC_ASSIGN_OR_RETURN(po, slice(c, pd, 0, H, 2 * H));
      TC_ASSIGN_OR_RETURN(pf, slice(c, pd, 0, 2 * H, 3 * H));
    }
    TC_ASSIGN_OR_RETURN(Value * h, directionOf(c, h0, d));
    Value *cell = nullptr;
    if (c0) {
      TC_ASSIGN_OR_RETURN(cell, directionOf(c, c0, d));
    }
    std::vector<Value *> steps(size_t(s.seq), nullptr);
    for (int64_t i = 0; i < s.seq; ++i) {
      int64_t t = reverse ? s.seq - 1 - i : i;
      TC_ASSIGN_OR_RETURN(Value * xt, directionOf(c, x, t)); // dim 0 of [S, B, I]
      TC_ASSIGN_OR_RETURN(Value * xw, c.emit("aten.mm", {xt, wd}));
      if (wb) {
        TC_ASSIGN_OR_RETURN(xw, binary(c, "aten.add", xw, wb));
      }
      TC_ASSIGN_OR_RETURN(Value * hr, c.emit("aten.mm", {h, rd}));
      if (rb) {
        TC_ASSIGN_OR_RETURN(hr, binary(c, "aten.add", hr, rb));
      }
      if (kind == CellKind::RNN) {
        TC_ASSIGN_OR_RETURN(Value * sum, binary(c, "aten.add", xw, hr));
        TC_ASSIGN_OR_RETURN(h, act(c, ds, 0, sum));
      } else if (kind == CellKind::GRU) {
        TC_ASSIGN_OR_RETURN(Value * xzr, gateSlice(c, xw, 0, 2, H));
        TC_ASSIGN_OR_RETURN(Value * hzr, gateSlice(c, hr, 0, 2, H));
        TC_ASSIGN_OR_RETURN(Value * zr, binary(c, "aten.add", xzr, hzr));
        TC_ASSIGN_OR_RETURN(zr, act(c, ds, 0, zr));
        TC_ASSIGN_OR_RETURN(Value * z, gateSlice(c, zr, 0, 1, H));
        TC_ASSIGN_OR_RETURN(Value * rg, gateSlice(c, zr, 1, 1, H));
        TC_ASSIGN_OR_RETURN(Value * xh, gateSlice(c, xw, 2, 1, H));
        Value *hh = nullptr;
        if (s.linearBeforeReset) {
          TC_ASSIGN_OR_RETURN(Value * hrh, gateSlice(c, hr, 2, 1, H));
          TC_ASSIGN_OR_RETURN(hh, binary(c, "aten.mul", rg, hrh));
        } else {
          TC_ASSIGN_OR_RETURN(Value * rh, binary(c, "aten.mul", rg, h));
          TC_ASSIGN_OR_RETURN(Value * rdh, gateSlice(c, rd, 2, 1, H));
          TC_ASSIGN_OR_RETURN(hh, c.emit("aten.mm", {rh, rdh}));
          if (rb) {
            TC_ASSIGN_OR_RETURN(Value * rbh, gateSlice(c, rb, 2, 1, H));
            TC_ASSIGN_OR_RETURN(hh, binary(c, "aten.add", hh, rbh));
          }
        }
        TC_ASSIGN_OR_RETURN(hh, binary(c, "aten.add", xh, hh));
        TC_ASSIGN_OR_RETURN(hh, act(c, ds, 1, hh));
        // h = (1 - z) * hh + z * h = hh + z * (h - hh)
        TC_ASSIGN_OR_RETURN(Value * diff, binary(c, "aten.sub", h, hh));
        TC_ASSIGN_OR_RETURN(diff, binary(c, "aten.mul", z, diff));
        TC_ASSIGN_OR_RETURN(h, binary(c, "aten.add", hh, diff));
      } else {
        TC_ASSIGN_OR_RETURN(Value * g, binary(c, "aten.add", xw, hr));
        TC_ASSIGN_OR_RETURN(Value * gi, gateSlice(c, g, 0, 1, H));
        TC_ASSIGN_OR_RETURN(Value * go, gateSlice(c, g, 1, 1, H));
        TC_ASSIGN_OR_RETURN(Value * gf, gateSlice(c, g, 2, 1, H));
        TC_ASSIGN_OR_RETURN(Value * gc, gateSlice(c, g, 3, 1, H));
        if (pi) {
          TC_ASSIGN_OR_RETURN(Value * t1, binary(c, "aten.mul", pi, cell));
          TC_ASSIGN_OR_RETURN(gi, binary(c, "aten.add", gi, t1));
          TC_ASSIGN_OR_RETURN(Value * t2, binary(c, "aten.mul", pf, cell));
          TC_ASSIGN_OR_RETURN(gf, binary(c, "aten.add", gf, t2));
        }
        TC_ASSIGN_OR_RETURN(Value * ig, act(c, ds, 0, gi));
        TC_ASSIGN_OR_RETURN(Value * fg, act(c, ds, 0, gf));
        TC_ASSIGN_OR_RETURN(Value * cg, act(c, ds, 1, gc));
        TC_ASSIGN_OR_RETURN(Value * keep, binary(c, "aten.mul", fg, cell));
        TC_ASSIGN_OR_RETURN(Value * write, binary(c, "aten.mul", ig, cg));
        TC_ASSIGN_OR_RETURN(cell, binary(c, "aten.add", keep, write));
        if (po) {
          TC_ASSIGN_OR_RETURN(Value * t3, binary(c, "aten.mul", po, cell));
          TC_ASSIGN_OR_RETURN(go, binary(c, "aten.add", go, t3));
        }
        TC_ASSIGN_OR_RETURN(Value * og, act(c, ds, 0, go));
        TC_ASSIGN_OR_RETURN(Value * hc, act(c, ds, 2, cell));
        TC_ASSIGN_OR_RETURN(h, binary(c, "aten.mul", og, hc));
      }
      TC_ASSIGN_OR_RETURN(steps[size_t(t)], unsqueezeDim(c, h, 0));
    }
    AttrMap catAttrs;
    catAttrs.emplace("dim", Attribute(int64_t(0)));
    TC_ASSIGN_OR_RETURN(Value * yd, c.emit("aten.cat", steps, std::move(catAttrs)));
    TC_ASSIGN_OR_RETURN(yd, unsqueezeDim(c, yd, 1)); // [S, 1, B, H]
    ys.push_back(yd);
    TC_ASSIGN_OR_RETURN(Value * hd, unsqueezeDim(c, h, 0));
    hs.push_back(hd);
    if (cell) {
      TC_ASSIGN_OR_RETURN(Value * cd, unsqueezeDim(c, cell, 0));
      cs.push_back(cd);
    }
  }
  auto concat = [&](std::vector<Value *> parts, int64_t dim) -> Expected<Value *> {
    if (parts.size() == 1)
      return parts[0];
    AttrMap attrs;
    attrs.emplace("dim", Attribute(dim));
    return c.emit("aten.cat", std::move(parts), std::move(attrs));
  };
  TC_ASSIGN_OR_RETURN(Value * y, concat(ys, 1));
  TC_ASSIGN_OR_RETURN(Value * yh, concat(hs, 0));
  Value *yc = nullptr;
  if (!cs.empty()) {
    TC_ASSIGN_OR_RETURN(yc, concat(cs, 0));
  }
  if (layout == 1) {
    TC_ASSIGN_OR_RETURN(y, permute(c, y, Ints{2, 0, 1, 3}));
    TC_ASSIGN_OR_RETURN(yh, permute(c, yh, Ints{1, 0, 2}));
    if (yc) {
      TC_ASSIGN_OR_RETURN(yc, permute(c, yc, Ints{1, 0, 2}));
    }
  }
  if (c.hasOutput(0))
    TC_RETURN_IF_ERROR(c.setOutput(0, y));
  if (c.hasOutput(1))
    TC_RETURN_IF_ERROR(c.setOutput(1, yh));
  if (c.hasOutput(2) && yc)
    TC_RETURN_IF_ERROR(c.setOutput(2, yc));
  return Status::ok();
}

} // namespace

Status convertRNN(ConvertContext &c) { return convertRecurrent(c, CellKind::RNN); }
Status convertGRU(ConvertContext &c) { return convertRecurrent(c, CellKind::GRU); }
Status convertLSTM(ConvertContext &c) { return convertRecurrent(c, CellKind::LSTM); }

} // namespace tensorc::onnx
