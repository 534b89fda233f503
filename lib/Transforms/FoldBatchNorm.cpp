// fold-batchnorm: conv -> batch_norm (inference, constant parameters) becomes one conv.
#include "tensorc/Transforms/FoldBatchNorm.h"

#include "tensorc/IR/Rewriter.h"
#include "tensorc/Support/Log.h"

#include <cmath>

namespace tensorc {

Status foldBatchNorm(Graph &graph, const PassContext &context) {
  std::map<const Value *, std::vector<const Node *>> users = computeUsers(graph);
  const OpDef &convOp = *context.registry.get(OpId::Convolution);
  auto rewrite = [&](RewriteContext &ctx) -> Expected<std::optional<std::vector<Value *>>> {
    const Node &bn = ctx.node();
    if (bn.opId() != OpId::BatchNorm || AttrReader(bn.attrs()).getBool("training"))
      return std::optional<std::vector<Value *>>();
    const Value *source = bn.input(0);
    const Node *conv = source->producer();
    auto skip = [&](const std::string &why) -> std::optional<std::vector<Value *>> {
      log::debug("fold-batchnorm", "not folding " + bn.describe() + ": " + why);
      return std::nullopt;
    };
    if (!conv || conv->opId() != OpId::Convolution)
      return skip("its input is not a convolution");
    if (AttrReader(conv->attrs()).getBool("transposed"))
      return skip("the convolution is transposed");
    if (users.at(source).size() != 1)
      return skip("the convolution has other users");
    // The copied convolution in the graph being built, with its operands mapped.
    const Node *copied = ctx.operand(0)->producer();
    Graph &target = ctx.graph();
    const Tensor *weight = constantData(target, copied->input(1));
    const Tensor *convBias = copied->inputs().size() > 2 ? constantData(target, copied->input(2))
                                                         : nullptr;
    bool hasConvBias = copied->inputs().size() > 2 && copied->input(2);
    const Tensor *gamma = constantData(target, ctx.operand(1));
    const Tensor *beta = constantData(target, ctx.operand(2));
    const Tensor *mean = constantData(target, ctx.operand(3));
    const Tensor *var = constantData(target, ctx.operand(4));
    if (!weight || (hasConvBias && !convBias) || !mean || !var || (ctx.operand(1) && !gamma) ||
        (ctx.operand(2) && !beta))
      return skip("a parameter is not a constant");
    if (!isFloating(weight->dtype()) || weight->rank() < 1)
      return skip("the weight is not a floating tensor");
    int64_t channels = weight->dim(0);
    for (const Tensor *vector : {gamma, beta, mean, var, convBias})
      if (vector && vector->numel() != channels)
        return skip("a parameter does not have one value per output channel");

    double eps = AttrReader(bn.attrs()).getFloat("eps");
    Tensor newWeight = weight->clone();
    TC_ASSIGN_OR_RETURN(Tensor newBias, Tensor::zeros(weight->dtype(), {channels}));
    int64_t perChannel = channels ? weight->numel() / channels : 0;
    for (int64_t c = 0; c < channels; ++c) {
      double scale = (gamma ? gamma->getDouble(c) : 1.0) / std::sqrt(var->getDouble(c) + eps);
      for (int64_t i = 0; i < perChannel; ++i)
        newWeight.setDouble(c * perChannel + i, weight->getDouble(c * perChannel + i) * scale);
      double bias = (convBias ? convBias->getDouble(c) : 0.0) - mean->getDouble(c);
      newBias.setDouble(c, bias * scale + (beta ? beta->getDouble(c) : 0.0));
    }
    // The folded tensors become parameters (weights), like the ones they replace.
    auto addParameter = [&](const std::string &hint, Tensor data) -> Expected<Value *> {
      std::string name = target.uniqueName(hint);
      TensorType type = TensorType::fromStatic(data.dtype(), data.shape());
      TC_ASSIGN_OR_RETURN(Value * value, target.addInput(name, type));
      target.weights()[name] = std::move(data);
      return value;
    };
    TC_ASSIGN_OR_RETURN(Value * weightValue,
                        addParameter(conv->name() + "_w_folded", std::move(newWeight)));
    TC_ASSIGN_OR_RETURN(Value * biasValue,
                        addParameter(conv->name() + "_b_folded", std::move(newBias)));
    TC_ASSIGN_OR_RETURN(Value * folded, ctx.emit(convOp, {copied->input(0), weightValue, biasValue},
                                                 copied->attrs()));
    if (folded->type().dtype != bn.output()->type().dtype)
      return skip("the folded convolution's dtype differs");
    log::debug("fold-batchnorm", "folded " + bn.describe() + " into " + conv->describe());
    return std::optional<std::vector<Value *>>(std::vector<Value *>{folded});
  };
  TC_ASSIGN_OR_RETURN(Graph rewritten, rewriteGraph(graph, rewrite));
  graph = std::move(rewritten);
  return Status::ok();
}

} // namespace tensorc
