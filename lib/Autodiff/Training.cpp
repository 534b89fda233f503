// Training steps: the loss stage (parameters made inputs, loss attached) and the autodiff stage
// (joint graph, partition, optimizer update).
#include "tensorc/Autodiff/Training.h"

#include "tensorc/IR/Rewriter.h"
#include "tensorc/Ops/OpBuilder.h"
#include "tensorc/Support/StrCat.h"

#include <algorithm>
#include <set>

namespace tensorc::autodiff {

namespace {

/// The sum of all elements, as a 0-d tensor.
Expected<Value *> sumAll(ops::OpBuilder &b, Value *x) {
  return b.reduce(OpId::Sum, x, Attribute(std::vector<int64_t>{}), false);
}

/// The element count of `x` as an f32 0-d tensor: a constant when static, else counted at run
/// time (a sum of ones) so that symbolic batches average correctly.
Expected<Value *> elementCount(ops::OpBuilder &b, Value *x) {
  std::optional<int64_t> n = x->type().numel().constant();
  if (n)
    return b.scalar(double(*n), DType::F32);
  TC_ASSIGN_OR_RETURN(Value * ones, b.emit(OpId::FullLike, {x},
                                           {{"fill_value", Attribute(1.0)},
                                            {"dtype", Attribute(DType::F32)}}));
  return sumAll(b, ones);
}

Status checkOptions(const TrainOptions &options) {
  if (options.loss != "mse" && options.loss != "cross_entropy" && options.loss != "output")
    return makeError("unknown loss '", options.loss, "' (expected mse, cross_entropy or output)");
  if (options.optimizer != "sgd" && options.optimizer != "adamw" && options.optimizer != "none")
    return makeError("unknown optimizer '", options.optimizer,
                     "' (expected sgd, adamw or none)");
  if (!(options.lr > 0))
    return makeError("the learning rate must be positive, got ", options.lr);
  if (options.momentum < 0 || options.momentum >= 1 || options.beta1 < 0 ||
      options.beta1 >= 1 || options.beta2 < 0 || options.beta2 >= 1)
    return makeError("momentum and betas must be in [0, 1)");
  return Status::ok();
}

/// Names a value `name` when that is free (outputs get readable names).
void nameValue(Graph &graph, Value *value, const std::string &name) {
  if (value->name() != name && !graph.hasName(name))
    (void)graph.renameValue(value, name);
}

} // namespace

Expected<TrainingSignature> attachLoss(Graph &graph, const TrainOptions &options,
                                       const OpRegistry &registry) {
  TC_RETURN_IF_ERROR(checkOptions(options));
  TrainingSignature signature;
  signature.optimizer = options.optimizer;

  // The trained parameters.
  std::vector<std::string> params = options.params;
  if (params.empty()) {
    for (const auto &input : graph.inputs())
      if (graph.isParameter(input.get()) && isFloating(input->type().dtype))
        params.push_back(input->name());
    if (params.empty())
      return makeError("--train: the model has no floating-point parameters (initializers or "
                       ".safetensors weights) to train");
  }
  for (const std::string &name : params) {
    Value *value = graph.findValue(name);
    if (!value || !graph.isParameter(value))
      return makeError("--params: '", name, "' is not a parameter of the model");
    if (!isFloating(value->type().dtype))
      return makeError("--params: '", name, "' is ", value->type().str(),
                       "; only floating-point parameters train");
    signature.initialParams[name] = graph.weights().at(name);
    graph.weights().erase(name);
  }
  // Placeholder order, so the state's order does not depend on how --params was spelled.
  for (const auto &input : graph.inputs())
    if (signature.initialParams.count(input->name()))
      signature.params.push_back(input->name());

  if (graph.outputs().size() != 1)
    return makeError("--train: the model has ", graph.outputs().size(),
                     " outputs; a training loss needs exactly one");
  Value *output = graph.outputs()[0];
  const TensorType &outType = output->type();
  if (!isFloating(outType.dtype))
    return makeError("--train: output %", output->name(), " is ", outType.str(),
                     "; the loss needs a floating-point output");
  NodeEmitter emitter(graph, "loss", "attaching the loss");
  ops::OpBuilder e(emitter, registry, "attaching the loss");
  Value *loss = nullptr;
  if (options.loss == "output") {
    if (outType.numel() != SymInt(1))
      return makeError("--loss output: output %", output->name(), " is ", outType.str(),
                       ", not a scalar");
    TC_ASSIGN_OR_RETURN(Value * flat, e.view(output, Shape{}));
    TC_ASSIGN_OR_RETURN(loss, e.cast(flat, DType::F32));
  } else if (graph.hasName(options.label)) {
    return makeError("--label: the model already has a value named '", options.label, "'");
  } else if (options.loss == "mse") {
    // mean((output - label)^2), in f32.
    TC_ASSIGN_OR_RETURN(Value * label, graph.addInput(options.label, outType));
    signature.label = options.label;
    TC_ASSIGN_OR_RETURN(Value * out32, e.cast(output, DType::F32));
    TC_ASSIGN_OR_RETURN(Value * label32, e.cast(label, DType::F32));
    TC_ASSIGN_OR_RETURN(Value * diff, e.sub(out32, label32));
    TC_ASSIGN_OR_RETURN(Value * squares, e.mul(diff, diff));
    TC_ASSIGN_OR_RETURN(Value * sum, sumAll(e, squares));
    TC_ASSIGN_OR_RETURN(Value * count, elementCount(e, diff));
    TC_ASSIGN_OR_RETURN(loss, e.div(sum, count));
  } else {
    // cross_entropy: -mean(log_softmax(output)[i, label[i]]), in f32.
    if (outType.rank() != 2)
      return makeError("--loss cross_entropy: output %", output->name(), " is ", outType.str(),
                       "; expected logits [N, C]");
    std::optional<int64_t> classes = outType.shape[1].constant();
    if (!classes)
      return makeError("--loss cross_entropy: the class count of ", outType.str(),
                       " must be static");
    TC_ASSIGN_OR_RETURN(Value * label,
                        graph.addInput(options.label, TensorType(DType::I64, {outType.shape[0]})));
    signature.label = options.label;
    TC_ASSIGN_OR_RETURN(Value * out32, e.cast(output, DType::F32));
    TC_ASSIGN_OR_RETURN(Value * logp, e.emit(OpId::LogSoftmax, {out32}, {{"dim", Attribute(1)}}));
    TC_ASSIGN_OR_RETURN(Value * column,
                        e.view(label, Shape{outType.shape[0], 1}));
    TC_ASSIGN_OR_RETURN(Value * classIds, e.emit(OpId::Arange, {},
                                               {{"start", Attribute(int64_t(0))},
                                                {"end", Attribute(*classes)},
                                                {"dtype", Attribute(DType::I64)}}));
    TC_ASSIGN_OR_RETURN(Value * hit, e.binary(OpId::Eq, column, classIds));
    TC_ASSIGN_OR_RETURN(Value * oneHot, e.cast(hit, DType::F32));
    TC_ASSIGN_OR_RETURN(Value * picked, e.mul(logp, oneHot));
    TC_ASSIGN_OR_RETURN(Value * sum, sumAll(e, picked));
    TC_ASSIGN_OR_RETURN(Value * count, elementCount(e, label));
    TC_ASSIGN_OR_RETURN(Value * mean, e.div(sum, count));
    TC_ASSIGN_OR_RETURN(loss, e.unary(OpId::Neg, mean));
  }
  nameValue(graph, loss, "loss");
  graph.setOutputs({loss});
  signature.loss = loss->name();
  for (const Value *input : graph.userInputs())
    if (!signature.initialParams.count(input->name()))
      signature.data.push_back(input->name());
  return signature;
}

Expected<AutodiffReport> buildTrainingStep(Graph &graph, const TrainOptions &options,
                                           const OpRegistry &registry,
                                           TrainingSignature &signature) {
  AutodiffReport report;
  GradOptions gradOptions;
  gradOptions.wrt = signature.params;
  TC_ASSIGN_OR_RETURN(report.joint, buildJointGraph(graph, gradOptions, registry));
  TC_ASSIGN_OR_RETURN(Partition byDefault, partitionJoint(report.joint, PartitionKind::Default));
  TC_ASSIGN_OR_RETURN(Partition byMinCut, partitionJoint(report.joint, PartitionKind::MinCut));
  report.defaultSavedBytes = byDefault.savedBytes;
  report.minCutSavedBytes = byMinCut.savedBytes;
  report.chosen = std::move(options.partition == PartitionKind::MinCut ? byMinCut : byDefault);

  // The step: the partitioned joint graph, then the optimizer update per parameter.
  // partitionJoint's rebuilt joint graph, copied so that the report keeps its own.
  TC_ASSIGN_OR_RETURN(Graph step, cloneGraph(report.chosen.joint));
  Value *loss = step.outputs()[0];
  std::vector<Value *> grads(step.outputs().begin() + 1, step.outputs().end());
  std::vector<Value *> outputs{loss};
  signature.state.clear();
  signature.gradients.clear();

  if (options.optimizer == "none") {
    for (size_t i = 0; i < grads.size(); ++i) {
      nameValue(step, grads[i], "grad_" + signature.params[i]);
      signature.gradients.push_back(grads[i]->name());
      outputs.push_back(grads[i]);
      signature.state.push_back({signature.params[i], "", signature.params[i]});
    }
  } else {
    Value *stepCount = nullptr, *newStepCount = nullptr;
    if (options.optimizer == "adamw") {
      TC_ASSIGN_OR_RETURN(stepCount, step.addInput(step.uniqueName("adamw_step"),
                                                   TensorType(DType::F32, {})));
      NodeEmitter emitter(step, "adamw_step", "counting optimizer steps");
      ops::OpBuilder e(emitter, registry, "counting optimizer steps");
      TC_ASSIGN_OR_RETURN(newStepCount, e.binaryScalar(OpId::Add, stepCount, 1.0));
    }
    std::vector<std::pair<Value *, Value *>> moments; // (state input, new value), in order
    std::vector<Value *> newParams;
    for (size_t i = 0; i < grads.size(); ++i) {
      const std::string &name = signature.params[i];
      Value *param = step.findValue(name);
      Value *g = grads[i];
      DType dt = param->type().dtype;
      NodeEmitter emitter(step, name + "_update", "updating " + name);
      ops::OpBuilder e(emitter, registry, "updating " + name);
      Value *updated = nullptr;
      if (options.optimizer == "sgd") {
        if (options.weightDecay != 0) {
          TC_ASSIGN_OR_RETURN(Value * decay, e.binaryScalar(OpId::Mul, param, options.weightDecay));
          TC_ASSIGN_OR_RETURN(g, e.binary(OpId::Add, g, decay));
        }
        if (options.momentum != 0) {
          TC_ASSIGN_OR_RETURN(Value * buffer,
                              step.addInput(step.uniqueName(name + "_momentum"), param->type()));
          TC_ASSIGN_OR_RETURN(Value * kept, e.binaryScalar(OpId::Mul, buffer, options.momentum));
          TC_ASSIGN_OR_RETURN(g, e.binary(OpId::Add, kept, g));
          moments.push_back({buffer, g});
        }
        TC_ASSIGN_OR_RETURN(Value * delta, e.binaryScalar(OpId::Mul, g, options.lr));
        TC_ASSIGN_OR_RETURN(updated, e.binary(OpId::Sub, param, delta));
      } else {
        // AdamW: m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2;
        // p = p (1 - lr wd) - lr (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps).
        TC_ASSIGN_OR_RETURN(Value * m, step.addInput(step.uniqueName(name + "_exp_avg"),
                                                     param->type()));
        TC_ASSIGN_OR_RETURN(Value * v, step.addInput(step.uniqueName(name + "_exp_avg_sq"),
                                                     param->type()));
        TC_ASSIGN_OR_RETURN(Value * mKept, e.binaryScalar(OpId::Mul, m, options.beta1));
        TC_ASSIGN_OR_RETURN(Value * mNew, e.binaryScalar(OpId::Mul, g, 1 - options.beta1));
        TC_ASSIGN_OR_RETURN(mNew, e.binary(OpId::Add, mKept, mNew));
        TC_ASSIGN_OR_RETURN(Value * vKept, e.binaryScalar(OpId::Mul, v, options.beta2));
        TC_ASSIGN_OR_RETURN(Value * g2, e.binary(OpId::Mul, g, g));
        TC_ASSIGN_OR_RETURN(Value * vNew, e.binaryScalar(OpId::Mul, g2, 1 - options.beta2));
        TC_ASSIGN_OR_RETURN(vNew, e.binary(OpId::Add, vKept, vNew));
        moments.push_back({m, mNew});
        moments.push_back({v, vNew});
        TC_ASSIGN_OR_RETURN(Value * b1, e.scalar(options.beta1, DType::F32));
        TC_ASSIGN_OR_RETURN(Value * b2, e.scalar(options.beta2, DType::F32));
        TC_ASSIGN_OR_RETURN(Value * one, e.scalar(1.0, DType::F32));
        TC_ASSIGN_OR_RETURN(Value * b1t, e.binary(OpId::Pow, b1, newStepCount));
        TC_ASSIGN_OR_RETURN(Value * b2t, e.binary(OpId::Pow, b2, newStepCount));
        TC_ASSIGN_OR_RETURN(Value * c1, e.binary(OpId::Sub, one, b1t));
        TC_ASSIGN_OR_RETURN(Value * c2, e.binary(OpId::Sub, one, b2t));
        TC_ASSIGN_OR_RETURN(Value * mHat, e.binary(OpId::Div, mNew, c1));
        TC_ASSIGN_OR_RETURN(Value * vHat, e.binary(OpId::Div, vNew, c2));
        TC_ASSIGN_OR_RETURN(Value * root, e.unary(OpId::Sqrt, vHat));
        TC_ASSIGN_OR_RETURN(Value * eps, e.scalar(options.eps, dt));
        TC_ASSIGN_OR_RETURN(Value * denom, e.binary(OpId::Add, root, eps));
        TC_ASSIGN_OR_RETURN(Value * ratio, e.binary(OpId::Div, mHat, denom));
        TC_ASSIGN_OR_RETURN(Value * delta, e.binaryScalar(OpId::Mul, ratio, options.lr));
        Value *decayed = param;
        if (options.weightDecay != 0) {
          TC_ASSIGN_OR_RETURN(decayed, e.binaryScalar(OpId::Mul, param, 1 - options.lr * options.weightDecay));
        }
        TC_ASSIGN_OR_RETURN(updated, e.binary(OpId::Sub, decayed, delta));
        TC_ASSIGN_OR_RETURN(updated, e.cast(updated, dt));
      }
      nameValue(step, updated, name + "_next");
      newParams.push_back(updated);
    }
    for (size_t i = 0; i < newParams.size(); ++i) {
      outputs.push_back(newParams[i]);
      signature.state.push_back({signature.params[i], newParams[i]->name(), signature.params[i]});
    }
    for (auto &[input, next] : moments) {
      nameValue(step, next, input->name() + "_next");
      outputs.push_back(next);
      signature.state.push_back({input->name(), next->name(), ""});
    }
    if (stepCount) {
      nameValue(step, newStepCount, stepCount->name() + "_next");
      outputs.push_back(newStepCount);
      signature.state.push_back({stepCount->name(), newStepCount->name(), ""});
    }
  }
  step.setOutputs(std::move(outputs));
  graph = std::move(step);
  return report;
}

std::string describeReport(const AutodiffReport &report) {
  const Partition &chosen = report.chosen;
  size_t backwardNodes = report.joint.graph.nodes().size() - report.joint.numForwardNodes;
  return strCat("autodiff: ", report.joint.numForwardNodes, " forward and ", backwardNodes,
                " backward nodes; saved for the backward (symbols counted as 64): default ",
                report.defaultSavedBytes, " bytes, min-cut ", report.minCutSavedBytes,
                " bytes; using ", chosen.kind == PartitionKind::MinCut ? "min-cut" : "default",
                ": ", chosen.saved.size(), " saved tensors, ", chosen.recomputed.size(),
                " nodes recomputed");
}

} // namespace tensorc::autodiff
