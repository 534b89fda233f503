// ONNX control flow: If, Loop and Scan, resolved or unrolled at import time.
#include "NNHelpers.h"
#include "OnnxConverters.h"
#include "OnnxTensor.h"
#include "tensorc/Support/StrCat.h"

#include <algorithm>

namespace tensorc::onnx {

using Ints = std::vector<int64_t>;

// ---- Control flow ----------------------------------------------------------------------------
// If, Loop and Scan are resolved at import time: If inlines the branch its known condition
// picks, Loop and Scan inline their body once per iteration.

namespace {

/// Unrolled iterations at most; a larger Loop or Scan is rejected rather than bloating the graph
/// (and Graph::uniqueName probes suffixes linearly, so import time grows with its square).
constexpr int64_t kMaxUnrolledIterations = 1000;

/// The data of `value` when a prims.constant produces it.
std::optional<Tensor> knownTensor(Value *value) {
  Node *node = value->producer();
  if (!node || node->opId() != OpId::Constant)
    return std::nullopt;
  return node->attr("value").asTensor();
}

Expected<Value *> sliceAt(ConvertContext &c, Value *value, int64_t dim, int64_t index) {
  TC_ASSIGN_OR_RETURN(Value * row, slice(c, value, dim, index, index + 1));
  return squeezeDim(c, row, dim);
}

/// Stacks same-shaped values along a new dim `dim` (unsqueeze + cat).
Expected<Value *> stack(ConvertContext &c, const std::vector<Value *> &values, int64_t dim) {
  std::vector<Value *> parts;
  for (Value *value : values) {
    TC_ASSIGN_OR_RETURN(Value * part, unsqueezeDim(c, value, dim));
    parts.push_back(part);
  }
  if (parts.size() == 1)
    return parts[0];
  AttrMap attrs;
  attrs.emplace("dim", Attribute(dim));
  return c.emit("aten.cat", std::move(parts), std::move(attrs));
}

/// An empty [0, ...] tensor for a scan output of a loop that ran zero times, built from the
/// body output's declared type (which must be static).
Expected<Value *> emptyScanOutput(ConvertContext &c, const ::onnx::ValueInfoProto &info) {
  const auto &type = info.type().tensor_type();
  std::optional<DType> dtype = dtypeFromOnnx(type.elem_type());
  bool known = dtype.has_value() && type.has_shape();
  Ints shape{0};
  for (int i = 0; known && i < type.shape().dim_size(); ++i) {
    known = type.shape().dim(i).has_dim_value();
    shape.push_back(type.shape().dim(i).dim_value());
  }
  if (!known)
    return c.error(strCat("the loop runs zero times and scan output '", info.name(),
                          "' has no static declared type to build an empty result from"));
  TC_ASSIGN_OR_RETURN(Tensor empty, Tensor::zeros(*dtype, std::move(shape)));
  return c.constant(std::move(empty));
}

/// A condition known at import time as a bool; `what` names it in the error.
Expected<bool> knownCondition(ConvertContext &c, const std::optional<Tensor> &tensor,
                              const std::string &what) {
  if (!tensor)
    return c.error(strCat(what, " must be known at import time"));
  if (tensor->numel() != 1)
    return c.error(strCat(what, " must hold one value, got ", tensor->numel()));
  return tensor->getInt(0) != 0;
}

} // namespace

Status convertIf(ConvertContext &c) {
  TC_RETURN_IF_ERROR(c.checkAttrs({"then_branch", "else_branch"}));
  std::optional<Tensor> condition = c.constantInput(0);
  if (!condition)
    return c.error("the condition must be known at import time");
  TC_ASSIGN_OR_RETURN(bool taken, knownCondition(c, condition, "the condition"));
  TC_ASSIGN_OR_RETURN(const ::onnx::GraphProto *branch,
                      c.graphAttr(taken ? "then_branch" : "else_branch"));
  TC_ASSIGN_OR_RETURN(std::vector<Value *> outputs, c.inlineGraph(*branch, {}));
  if (outputs.size() < c.numOutputs())
    return c.error(
        strCat("the branch returns ", outputs.size(), " values for ", c.numOutputs(), " outputs"));
  for (size_t i = 0; i < c.numOutputs(); ++i)
    if (c.hasOutput(i))
      TC_RETURN_IF_ERROR(c.setOutput(i, outputs[i]));
  return Status::ok();
}

/// Loop: unrolled while the trip count and the condition, known at import time, allow.
Status convertLoop(ConvertContext &c) {
  TC_RETURN_IF_ERROR(c.checkAttrs({"body"}));
  TC_ASSIGN_OR_RETURN(const ::onnx::GraphProto *body, c.graphAttr("body"));
  int64_t tripCount = kMaxUnrolledIterations + 1;
  if (c.hasInput(0)) {
    if (!c.constantInput(0))
      return c.error("the trip count must be known at import time");
    TC_ASSIGN_OR_RETURN(tripCount, nn::constantScalar(c, 0, "the trip count"));
  }
  bool condition = true;
  if (c.hasInput(1)) {
    TC_ASSIGN_OR_RETURN(condition, knownCondition(c, c.constantInput(1), "the initial condition"));
  }
  std::vector<Value *> carried;
  for (size_t i = 2; i < c.numInputs(); ++i) {
    TC_ASSIGN_OR_RETURN(Value * value, c.input(i));
    carried.push_back(value);
  }
  if (body->input_size() != int(carried.size()) + 2 ||
      body->output_size() < int(carried.size()) + 1)
    return c.error(strCat("the body takes ", body->input_size(), " inputs and returns ",
                          body->output_size(), " values for ", carried.size(),
                          " loop-carried values"));
  size_t numScans = size_t(body->output_size()) - carried.size() - 1;
  std::vector<std::vector<Value *>> scans(numScans);
  int64_t iteration = 0;
  for (; iteration < tripCount && condition; ++iteration) {
    if (iteration == kMaxUnrolledIterations)
      return c.error(strCat("the loop runs more than ", kMaxUnrolledIterations,
                            " iterations, too many to unroll"));
    TC_ASSIGN_OR_RETURN(Value * index, c.scalar(double(iteration), DType::I64));
    TC_ASSIGN_OR_RETURN(Value * flag, c.scalar(1.0, DType::Bool));
    std::vector<Value *> inputs{index, flag};
    inputs.insert(inputs.end(), carried.begin(), carried.end());
    TC_ASSIGN_OR_RETURN(std::vector<Value *> outputs, c.inlineGraph(*body, inputs));
    TC_ASSIGN_OR_RETURN(condition,
                        knownCondition(c, knownTensor(outputs[0]), "the body's condition output"));
    for (size_t k = 0; k < carried.size(); ++k)
      carried[k] = outputs[1 + k];
    for (size_t k = 0; k < numScans; ++k)
      scans[k].push_back(outputs[1 + carried.size() + k]);
  }
  for (size_t k = 0; k < carried.size(); ++k)
    if (c.hasOutput(k))
      TC_RETURN_IF_ERROR(c.setOutput(k, carried[k]));
  for (size_t k = 0; k < numScans; ++k) {
    if (!c.hasOutput(carried.size() + k))
      continue;
    Value *stacked = nullptr;
    if (scans[k].empty()) {
      TC_ASSIGN_OR_RETURN(stacked, emptyScanOutput(c, body->output(int(1 + carried.size() + k))));
    } else {
      TC_ASSIGN_OR_RETURN(stacked, stack(c, scans[k], 0));
    }
    TC_RETURN_IF_ERROR(c.setOutput(carried.size() + k, stacked));
  }
  return Status::ok();
}

namespace {

/// Where and in which direction Scan walks its scan inputs and stacks its scan outputs.
struct ScanLayout {
  Ints inputAxes, outputAxes;
  std::vector<bool> inputReversed, outputReversed;
};

/// Runs a scan body over `scanInputs` (axes already normalized), starting from `states`;
/// returns the final states followed by the stacked scan outputs.
Expected<std::vector<Value *>> unrollScan(ConvertContext &c, const ::onnx::GraphProto &body,
                                          std::vector<Value *> states,
                                          const std::vector<Value *> &scanInputs,
                                          const ScanLayout &layout) {
  if (body.input_size() != int(states.size() + scanInputs.size()) ||
      body.output_size() < int(states.size()))
    return c.error(strCat("the body takes ", body.input_size(), " inputs and returns ",
                          body.output_size(), " values for ", states.size(), " states and ",
                          scanInputs.size(), " scan inputs"));
  std::optional<int64_t> length;
  for (size_t j = 0; j < scanInputs.size(); ++j) {
    const TensorType &type = scanInputs[j]->type();
    if (layout.inputAxes[j] < 0 || size_t(layout.inputAxes[j]) >= type.rank())
      return c.error(strCat("scan axis ", layout.inputAxes[j], " is out of range for scan input ",
                            type.str()));
    std::optional<int64_t> size = type.shape[size_t(layout.inputAxes[j])].constant();
    if (!size)
      return c.error(strCat("the scanned length must be static, got ", type.str()));
    if (length && *length != *size)
      return c.error(strCat("scan inputs have different lengths ", *length, " and ", *size));
    length = size;
  }
  if (!length || *length == 0)
    return c.error("Scan needs at least one scan input of nonzero length");
  if (*length > kMaxUnrolledIterations)
    return c.error(strCat("the scan runs ", *length, " iterations, more than the ",
                          kMaxUnrolledIterations, " it unrolls"));
  size_t numScans = size_t(body.output_size()) - states.size();
  if (layout.outputAxes.size() != numScans || layout.outputReversed.size() != numScans)
    return c.error(
        strCat("scan_output_axes and scan_output_directions must list ", numScans, " entries"));
  std::vector<std::vector<Value *>> scans(numScans);
  for (int64_t t = 0; t < *length; ++t) {
    std::vector<Value *> inputs = states;
    for (size_t j = 0; j < scanInputs.size(); ++j) {
      int64_t index = layout.inputReversed[j] ? *length - 1 - t : t;
      TC_ASSIGN_OR_RETURN(Value * slice, sliceAt(c, scanInputs[j], layout.inputAxes[j], index));
      inputs.push_back(slice);
    }
    TC_ASSIGN_OR_RETURN(std::vector<Value *> outputs, c.inlineGraph(body, inputs));
    for (size_t k = 0; k < states.size(); ++k)
      states[k] = outputs[k];
    for (size_t k = 0; k < numScans; ++k)
      scans[k].push_back(outputs[states.size() + k]);
  }
  std::vector<Value *> results = states;
  for (size_t k = 0; k < numScans; ++k) {
    if (layout.outputReversed[k])
      std::reverse(scans[k].begin(), scans[k].end());
    int64_t axis = layout.outputAxes[k], rank = int64_t(scans[k][0]->type().rank()) + 1;
    if (axis < 0)
      axis += rank;
    if (axis < 0 || axis >= rank)
      return c.error(strCat("scan output axis ", layout.outputAxes[k], " is out of range for ",
                            scans[k][0]->type().str()));
    TC_ASSIGN_OR_RETURN(Value * stacked, stack(c, scans[k], axis));
    results.push_back(stacked);
  }
  return results;
}

/// Scan-8: a leading batch axis on every input and output, scanned along axis 1; each batch
/// entry is scanned on its own and the results stacked back.
Expected<std::vector<Value *>> convertScan8(ConvertContext &c, const ::onnx::GraphProto &body,
                                            int64_t numScanInputs) {
  if (c.hasInput(0)) {
    std::optional<Tensor> lengths = c.constantInput(0);
    if (!lengths)
      return c.error("sequence_lens must be known at import time");
    // Only sequence lengths equal to the scanned length (the default) are supported.
    for (size_t j = c.numInputs() - std::min(c.numInputs(), size_t(numScanInputs));
         j < c.numInputs(); ++j) {
      TC_ASSIGN_OR_RETURN(TensorType type, c.inputType(j));
      std::optional<int64_t> full =
          type.rank() >= 2 ? type.shape[1].constant() : std::optional<int64_t>();
      for (int64_t b = 0; b < lengths->numel(); ++b)
        if (!full || lengths->getInt(b) != *full)
          return c.error("sequence_lens shorter than the scan inputs are not supported");
    }
  }
  std::vector<Value *> inputs;
  for (size_t j = 1; j < c.numInputs(); ++j) {
    TC_ASSIGN_OR_RETURN(Value * value, c.input(j));
    inputs.push_back(value);
  }
  if (inputs.size() < size_t(numScanInputs) || inputs.empty())
    return c.error(
        strCat("num_scan_inputs ", numScanInputs, " exceeds the ", inputs.size(), " inputs"));
  size_t numStates = inputs.size() - size_t(numScanInputs);
  std::optional<int64_t> batch = inputs[0]->type().rank() > 0
                                     ? inputs[0]->type().shape[0].constant()
                                     : std::optional<int64_t>();
  if (!batch || *batch < 1)
    return c.error(strCat("the batch dim must be static, got ", inputs[0]->type().str()));
  size_t numScans = size_t(body.output_size()) - std::min(numStates, size_t(body.output_size()));
  Ints directions = c.intsAttr("directions", Ints(size_t(numScanInputs), 0));
  if (directions.size() != size_t(numScanInputs))
    return c.error(strCat("directions must list ", numScanInputs, " entries"));
  ScanLayout layout;
  layout.inputAxes.assign(size_t(numScanInputs), 0);
  for (int64_t direction : directions)
    layout.inputReversed.push_back(direction != 0);
  layout.outputAxes.assign(numScans, 0);
  layout.outputReversed.assign(numScans, false);
  std::vector<std::vector<Value *>> perBatch;
  for (int64_t b = 0; b < *batch; ++b) {
    std::vector<Value *> states, scanInputs;
    for (size_t j = 0; j < inputs.size(); ++j) {
      TC_ASSIGN_OR_RETURN(Value * entry, sliceAt(c, inputs[j], 0, b));
      (j < numStates ? states : scanInputs).push_back(entry);
    }
    TC_ASSIGN_OR_RETURN(std::vector<Value *> results,
                        unrollScan(c, body, std::move(states), scanInputs, layout));
    perBatch.push_back(std::move(results));
  }
  std::vector<Value *> results;
  for (size_t k = 0; k < perBatch[0].size(); ++k) {
    std::vector<Value *> entries;
    for (const std::vector<Value *> &batchResults : perBatch)
      entries.push_back(batchResults[k]);
    TC_ASSIGN_OR_RETURN(Value * stacked, stack(c, entries, 0));
    results.push_back(stacked);
  }
  return results;
}

} // namespace

/// Scan (opset 9+; Scan-8 with its batch axis through convertScan8).
Status convertScan(ConvertContext &c) {
  TC_ASSIGN_OR_RETURN(const ::onnx::GraphProto *body, c.graphAttr("body"));
  if (!c.hasAttr("num_scan_inputs"))
    return c.error("missing attribute 'num_scan_inputs'");
  int64_t numScanInputs = c.intAttr("num_scan_inputs", 0);
  if (numScanInputs < 1)
    return c.error(strCat("num_scan_inputs must be positive, got ", numScanInputs));
  std::vector<Value *> results;
  if (c.opset() < 9) {
    TC_RETURN_IF_ERROR(c.checkAttrs({"body", "num_scan_inputs", "directions"}));
    TC_ASSIGN_OR_RETURN(results, convertScan8(c, *body, numScanInputs));
  } else {
    TC_RETURN_IF_ERROR(
        c.checkAttrs({"body", "num_scan_inputs", "scan_input_axes", "scan_input_directions",
                      "scan_output_axes", "scan_output_directions"}));
    if (c.numInputs() < size_t(numScanInputs))
      return c.error(
          strCat("num_scan_inputs ", numScanInputs, " exceeds the ", c.numInputs(), " inputs"));
    size_t numStates = c.numInputs() - size_t(numScanInputs);
    std::vector<Value *> states, scanInputs;
    for (size_t j = 0; j < c.numInputs(); ++j) {
      TC_ASSIGN_OR_RETURN(Value * value, c.input(j));
      (j < numStates ? states : scanInputs).push_back(value);
    }
    size_t numScans =
        size_t(body->output_size()) - std::min(numStates, size_t(body->output_size()));
    ScanLayout layout;
    layout.inputAxes = c.intsAttr("scan_input_axes", Ints(size_t(numScanInputs), 0));
    layout.outputAxes = c.intsAttr("scan_output_axes", Ints(numScans, 0));
    Ints inputDirections = c.intsAttr("scan_input_directions", Ints(size_t(numScanInputs), 0));
    Ints outputDirections = c.intsAttr("scan_output_directions", Ints(numScans, 0));
    if (layout.inputAxes.size() != size_t(numScanInputs) ||
        inputDirections.size() != size_t(numScanInputs))
      return c.error(strCat("scan_input_axes and scan_input_directions must list ", numScanInputs,
                            " entries"));
    for (size_t j = 0; j < scanInputs.size(); ++j) {
      int64_t rank = int64_t(scanInputs[j]->type().rank());
      int64_t &axis = layout.inputAxes[j];
      if (axis < 0)
        axis += rank;
      if (axis < 0 || axis >= rank)
        return c.error(
            strCat("scan input axis ", axis, " is out of range for ", scanInputs[j]->type().str()));
      layout.inputReversed.push_back(inputDirections[j] != 0);
    }
    for (int64_t direction : outputDirections)
      layout.outputReversed.push_back(direction != 0);
    TC_ASSIGN_OR_RETURN(results, unrollScan(c, *body, std::move(states), scanInputs, layout));
  }
  for (size_t k = 0; k < results.size() && k < c.numOutputs(); ++k)
    if (c.hasOutput(k))
      TC_RETURN_IF_ERROR(c.setOutput(k, results[k]));
  return Status::ok();
}

} // namespace tensorc::onnx
