// Gradient check: every op with a gradient rule, analytic (the joint graph on the interpreter)
// against central finite differences of the forward graph, in f64.
#include "OpTestUtil.h"

#include "tensorc/Autodiff/Autodiff.h"
#include "tensorc/Interp/Interpreter.h"
#include "tensorc/Support/StrCat.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <set>

namespace tensorc {
namespace {

/// One input of a case: a differentiable f64 tensor with values in [lo, hi), or fixed data
/// (indices, masks) that gets no gradient.
struct InputSpec {
  std::vector<int64_t> shape;
  double lo = -1, hi = 1;
  std::optional<Tensor> fixed;
};

struct GradCase {
  std::string name;
  std::string op;
  std::vector<InputSpec> inputs;
  AttrMap attrs;
  double tolerance = 1e-5;
};

// gtest prints parameters on failure: the case name, not its bytes.
void PrintTo(const GradCase &c, std::ostream *os) { *os << c.name; }

InputSpec real(std::vector<int64_t> shape, double lo = -1, double hi = 1) {
  return {std::move(shape), lo, hi, std::nullopt};
}
InputSpec fixed(Tensor tensor) { return {tensor.shape(), 0, 0, std::move(tensor)}; }
Tensor indices(std::vector<int64_t> shape, const std::vector<double> &values) {
  return test::makeTensor(DType::I64, std::move(shape), values);
}
Attribute ints(std::vector<int64_t> values) { return Attribute(values); }

std::vector<GradCase> cases() {
  std::vector<GradCase> list;
  auto unary = [&](const std::string &op, double lo = -1, double hi = 1) {
    list.push_back({op.substr(op.find('.') + 1), op, {real({3, 4}, lo, hi)}, {}});
  };
  unary("aten.neg");
  unary("aten.abs");
  unary("aten.exp");
  unary("aten.log", 0.5, 2);
  unary("aten.sqrt", 0.5, 2);
  unary("aten.rsqrt", 0.5, 2);
  unary("aten.reciprocal", 0.5, 2);
  unary("aten.tanh");
  unary("aten.sigmoid");
  unary("aten.erf");
  unary("aten.sin");
  unary("aten.cos");
  unary("aten.tan");
  unary("aten.asin", -0.8, 0.8);
  unary("aten.acos", -0.8, 0.8);
  unary("aten.atan");
  unary("aten.sinh");
  unary("aten.cosh");
  unary("aten.asinh");
  unary("aten.acosh", 1.5, 3);
  unary("aten.atanh", -0.8, 0.8);
  unary("aten.relu");
  unary("aten.silu");
  unary("aten.floor");
  unary("aten.ceil");
  unary("aten.round");
  unary("aten.sign");
  unary("aten.clone");
  list.push_back({"full_like", "aten.full_like", {real({3, 4})}, {{"fill_value", Attribute(2.0)}}});
  list.push_back({"zeros_like", "aten.zeros_like", {real({3, 4})}, {}});
  list.push_back({"convert_element_type", "prims.convert_element_type", {real({3, 4})},
                  {{"dtype", Attribute(DType::F64)}}});
  list.push_back({"add_broadcast_alpha", "aten.add", {real({3, 4}), real({4})},
                  {{"alpha", Attribute(2.0)}}});
  list.push_back({"sub_broadcast", "aten.sub", {real({3, 1}), real({3, 4})}, {}});
  list.push_back({"mul_broadcast", "aten.mul", {real({2, 3, 4}), real({3, 1})}, {}});
  list.push_back({"div", "aten.div", {real({3, 4}), real({4}, 0.5, 2)}, {}});
  list.push_back({"pow", "aten.pow", {real({3, 4}, 0.5, 2), real({3, 4}, 0.5, 2)}, {}});
  list.push_back({"maximum", "aten.maximum", {real({3, 4}), real({3, 4})}, {}});
  list.push_back({"minimum", "aten.minimum", {real({3, 4}), real({4})}, {}});
  list.push_back({"where", "aten.where",
                  {fixed(test::makeTensor(DType::Bool, {3, 4}, {1, 0, 1, 1, 0, 0, 1, 0, 1, 1, 0, 1})),
                   real({3, 4}), real({4})},
                  {}});
  list.push_back({"sum_dim", "aten.sum", {real({3, 4, 2})}, {{"dim", ints({1})}}});
  list.push_back({"sum_all_keepdim", "aten.sum", {real({3, 4})},
                  {{"dim", ints({})}, {"keepdim", Attribute(true)}}});
  // A 0-d input accepts dim 0 and -1 with nothing to reduce (the rule once indexed its shape).
  list.push_back({"sum_0d_dim0", "aten.sum", {real({})}, {{"dim", ints({0})}}});
  list.push_back({"amax", "aten.amax", {real({3, 5})}, {{"dim", ints({1})}}});
  list.push_back({"amax_0d_dim_minus1", "aten.amax", {real({})}, {{"dim", ints({-1})}}});
  list.push_back({"amin", "aten.amin", {real({3, 5})},
                  {{"dim", ints({0})}, {"keepdim", Attribute(true)}}});
  list.push_back({"mm", "aten.mm", {real({3, 4}), real({4, 5})}, {}});
  list.push_back({"bmm", "aten.bmm", {real({2, 3, 4}), real({2, 4, 5})}, {}});
  list.push_back({"convolution_groups_stride", "aten.convolution",
                  {real({2, 4, 6, 5}), real({6, 2, 3, 3}), real({6})},
                  {{"stride", ints({2, 1})}, {"padding", ints({1, 1})}, {"groups", Attribute(2)}}});
  list.push_back({"convolution_dilation_1d", "aten.convolution",
                  {real({2, 3, 9}), real({4, 3, 3}), real({4})},
                  {{"dilation", ints({2})}, {"padding", ints({2})}}});
  list.push_back({"max_pool", "aten.max_pool", {real({2, 2, 5, 5})},
                  {{"kernel_size", ints({3, 3})}, {"stride", ints({2, 2})},
                   {"padding", ints({1, 1})}}});
  list.push_back({"avg_pool", "aten.avg_pool", {real({1, 2, 6, 6})},
                  {{"kernel_size", ints({3, 3})}, {"stride", ints({2, 2})},
                   {"padding", ints({1, 1})}}});
  list.push_back({"view", "aten.view", {real({3, 4})}, {{"size", ints({2, 6})}}});
  list.push_back({"squeeze", "aten.squeeze", {real({3, 1, 4})}, {{"dim", ints({1})}}});
  list.push_back({"unsqueeze", "aten.unsqueeze", {real({3, 4})}, {{"dim", Attribute(1)}}});
  list.push_back({"permute", "aten.permute", {real({2, 3, 4})}, {{"dims", ints({2, 0, 1})}}});
  list.push_back({"expand", "aten.expand", {real({3, 1})}, {{"size", ints({2, 3, 4})}}});
  list.push_back({"slice", "aten.slice", {real({3, 6})},
                  {{"dim", Attribute(1)}, {"start", Attribute(1)}, {"end", Attribute(-2)}}});
  list.push_back({"pad", "aten.pad", {real({3, 4})}, {{"pad", ints({1, 2, 0, 1})}}});
  list.push_back({"cat", "aten.cat", {real({3, 2}), real({3, 3})}, {{"dim", Attribute(1)}}});
  list.push_back({"split", "aten.split_with_sizes", {real({3, 5})},
                  {{"split_sizes", ints({2, 3})}, {"dim", Attribute(1)}}});
  list.push_back({"gather", "aten.gather",
                  {real({3, 4}), fixed(indices({3, 2}, {0, 3, 1, 1, 2, 0}))},
                  {{"dim", Attribute(1)}}});
  list.push_back({"index_select", "aten.index_select",
                  {real({4, 3}), fixed(indices({5}, {0, 2, 2, 3, 0}))},
                  {{"dim", Attribute(0)}}});
  list.push_back({"index_select_0d", "aten.index_select", {real({}), fixed(indices({1}, {0}))},
                  {{"dim", Attribute(0)}}});
  list.push_back({"embedding", "aten.embedding",
                  {real({6, 3}), fixed(indices({2, 3}, {1, 5, 1, 0, 2, 5}))}, {}});
  return list;
}

/// The graph `op(inputs)` followed by loss = sum_i sum(result_i * weight_i) with fixed random
/// weights, so that every result's gradient is exercised with distinct values.
Expected<Graph> lossGraph(const GradCase &c, std::mt19937_64 &rng) {
  const OpRegistry &registry = test::registry();
  Graph graph;
  std::vector<Value *> operands;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    const InputSpec &spec = c.inputs[i];
    DType dtype = spec.fixed ? spec.fixed->dtype() : DType::F64;
    TC_ASSIGN_OR_RETURN(Value * input, graph.addInput(strCat("in", i),
                                                      TensorType::fromStatic(dtype, spec.shape)));
    operands.push_back(input);
  }
  const OpDef *op = registry.lookup(c.op);
  if (!op)
    return makeError("no op ", c.op);
  TC_ASSIGN_OR_RETURN(Node * node, graph.addNode(*op, operands, c.attrs, "op"));
  std::uniform_real_distribution<double> uniform(-1, 1);
  Value *loss = nullptr;
  for (Value *result : node->outputs()) {
    if (result->type().dtype != DType::F64)
      continue;
    std::optional<std::vector<int64_t>> shape = result->type().staticShape();
    Tensor weight = Tensor::zerosUnchecked(DType::F64, *shape);
    for (int64_t k = 0; k < weight.numel(); ++k)
      weight.setDouble(k, uniform(rng));
    TC_ASSIGN_OR_RETURN(Node * constant, graph.addNode(*registry.get(OpId::Constant), {},
                                                       {{"value", Attribute(weight)}}, "weight"));
    TC_ASSIGN_OR_RETURN(Node * product,
                        graph.addNode(*registry.get(OpId::Mul), {result, constant->output()}, {}));
    TC_ASSIGN_OR_RETURN(Node * sum, graph.addNode(*registry.get(OpId::Sum), {product->output()},
                                                  {{"dim", ints({})}}));
    if (!loss) {
      loss = sum->output();
      continue;
    }
    TC_ASSIGN_OR_RETURN(Node * total, graph.addNode(*registry.get(OpId::Add),
                                                    {loss, sum->output()}, {}));
    loss = total->output();
  }
  graph.setOutputs({loss});
  return graph;
}

class GradCheck : public ::testing::TestWithParam<GradCase> {};

TEST_P(GradCheck, AnalyticMatchesFiniteDifferences) {
  const GradCase &c = GetParam();
  std::mt19937_64 rng(std::hash<std::string>()(c.name));
  Expected<Graph> graph = lossGraph(c, rng);
  ASSERT_TRUE(graph) << graph.error().message();

  std::vector<Tensor> inputs;
  std::vector<std::string> wrt;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    const InputSpec &spec = c.inputs[i];
    if (spec.fixed) {
      inputs.push_back(*spec.fixed);
      continue;
    }
    std::uniform_real_distribution<double> uniform(spec.lo, spec.hi);
    Tensor tensor = Tensor::zerosUnchecked(DType::F64, spec.shape);
    for (int64_t k = 0; k < tensor.numel(); ++k)
      tensor.setDouble(k, uniform(rng));
    inputs.push_back(tensor);
    wrt.push_back(strCat("in", i));
  }

  autodiff::GradOptions options;
  options.wrt = wrt;
  Expected<autodiff::JointGraph> joint = autodiff::buildJointGraph(*graph, options, test::registry());
  ASSERT_TRUE(joint) << joint.error().message();
  Expected<std::vector<Tensor>> analytic = interp::interpret(joint->graph, inputs);
  ASSERT_TRUE(analytic) << analytic.error().message();
  ASSERT_EQ(analytic->size(), 1 + wrt.size());

  auto lossAt = [&](const std::vector<Tensor> &at) {
    Expected<std::vector<Tensor>> out = interp::interpret(*graph, at);
    EXPECT_TRUE(out) << out.error().message();
    return out ? (*out)[0].getDouble(0) : NAN;
  };
  EXPECT_NEAR((*analytic)[0].getDouble(0), lossAt(inputs), 1e-12);

  const double step = 1e-6;
  size_t gradIndex = 1;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    if (c.inputs[i].fixed)
      continue;
    const Tensor &grad = (*analytic)[gradIndex++];
    ASSERT_EQ(grad.shape(), inputs[i].shape()) << "gradient of in" << i;
    for (int64_t k = 0; k < inputs[i].numel(); ++k) {
      std::vector<Tensor> plus = inputs, minus = inputs;
      plus[i] = Tensor::zerosUnchecked(DType::F64, inputs[i].shape());
      minus[i] = Tensor::zerosUnchecked(DType::F64, inputs[i].shape());
      for (int64_t j = 0; j < inputs[i].numel(); ++j) {
        plus[i].setDouble(j, inputs[i].getDouble(j) + (j == k ? step : 0));
        minus[i].setDouble(j, inputs[i].getDouble(j) - (j == k ? step : 0));
      }
      double numeric = (lossAt(plus) - lossAt(minus)) / (2 * step);
      EXPECT_NEAR(grad.getDouble(k), numeric, c.tolerance * (1 + std::abs(numeric)))
          << c.name << ": d loss / d in" << i << "[" << k << "]";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Ops, GradCheck, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<GradCase> &info) {
                           return info.param.name;
                         });

// Adding a gradient rule without a case here fails: every rule is checked.
TEST(GradCheckCoverage, EveryRuleHasACase) {
  std::set<std::string> covered;
  for (const GradCase &c : cases())
    covered.insert(c.op);
  size_t rules = 0;
  for (const auto &def : test::registry().all()) {
    if (def->gradient) {
      ++rules;
      EXPECT_TRUE(covered.count(def->name)) << def->name << " has a gradient rule but no case";
    }
  }
  EXPECT_GE(rules, covered.size()) << "the test registry lacks the gradient rules";
}

TEST(Autodiff, MissingRuleNamesTheNode) {
  const OpRegistry &registry = test::registry();
  Graph graph;
  Value *x = *graph.addInput("x", TensorType::fromStatic(DType::F64, {4}));
  Node *cumsum = *graph.addNode(*registry.lookup("aten.cumsum"), {x}, {{"dim", Attribute(0)}},
                                "running");
  Node *sum = *graph.addNode(*registry.get(OpId::Sum), {cumsum->output()}, {{"dim", ints({})}});
  graph.setOutputs({sum->output()});
  autodiff::GradOptions options;
  options.wrt = {"x"};
  Expected<autodiff::JointGraph> joint = autodiff::buildJointGraph(graph, options, registry);
  ASSERT_FALSE(joint);
  EXPECT_NE(joint.error().message().find("no gradient rule for aten.cumsum"), std::string::npos)
      << joint.error().message();
  EXPECT_NE(joint.error().message().find("%running"), std::string::npos);
}

TEST(Autodiff, MinCutSavesNoMoreThanDefault) {
  // y = sum(exp(x) * w): default saves exp(x) (and more); min-cut recomputes exp from x.
  const OpRegistry &registry = test::registry();
  Graph graph;
  Value *x = *graph.addInput("x", TensorType::fromStatic(DType::F32, {64, 64}));
  Value *w = *graph.addInput("w", TensorType::fromStatic(DType::F32, {64, 64}));
  Node *e = *graph.addNode(*registry.get(OpId::Exp), {x}, {});
  Node *m = *graph.addNode(*registry.get(OpId::Mm), {e->output(), w}, {});
  Node *t = *graph.addNode(*registry.get(OpId::Tanh), {m->output()}, {});
  Node *s = *graph.addNode(*registry.get(OpId::Sum), {t->output()}, {{"dim", ints({})}});
  graph.setOutputs({s->output()});
  autodiff::GradOptions options;
  options.wrt = {"x", "w"};
  Expected<autodiff::JointGraph> joint = autodiff::buildJointGraph(graph, options, registry);
  ASSERT_TRUE(joint) << joint.error().message();
  auto byDefault = autodiff::partitionJoint(*joint, autodiff::PartitionKind::Default);
  auto byMinCut = autodiff::partitionJoint(*joint, autodiff::PartitionKind::MinCut);
  ASSERT_TRUE(byDefault && byMinCut);
  EXPECT_LT(byMinCut->savedBytes, byDefault->savedBytes);
  // exp(x) is recomputed from the primal x rather than saved; the GEMM's result (which tanh's
  // gradient needs, through tanh) is saved, never recomputed.
  EXPECT_NE(std::find(byMinCut->recomputed.begin(), byMinCut->recomputed.end(), e->name()),
            byMinCut->recomputed.end());
  EXPECT_EQ(std::find(byMinCut->recomputed.begin(), byMinCut->recomputed.end(), m->name()),
            byMinCut->recomputed.end());

  // Both partitions compute the same gradients as the joint graph.
  std::vector<Tensor> inputs{Tensor::zerosUnchecked(DType::F32, {64, 64}),
                             Tensor::zerosUnchecked(DType::F32, {64, 64})};
  for (int64_t k = 0; k < 64 * 64; ++k) {
    inputs[0].setDouble(k, std::sin(double(k)) * 0.1);
    inputs[1].setDouble(k, std::cos(double(k)) * 0.1);
  }
  auto expected = interp::interpret(joint->graph, inputs);
  ASSERT_TRUE(expected) << expected.error().message();
  for (auto *partition : {&*byDefault, &*byMinCut}) {
    auto got = interp::interpret(partition->joint, inputs);
    ASSERT_TRUE(got) << got.error().message();
    ASSERT_EQ(got->size(), expected->size());
    for (size_t o = 0; o < got->size(); ++o)
      EXPECT_EQ(test::toDoubles((*got)[o]), test::toDoubles((*expected)[o])) << "output " << o;
  }
}

} // namespace
} // namespace tensorc

namespace tensorc {
namespace {

TEST(Autodiff, TangentsSeedNonScalarOutputs) {
  // (primals, tangents) -> (outputs, grads): y = x * x with tangent t gives grad 2 x t.
  const OpRegistry &registry = test::registry();
  Graph graph;
  Value *x = *graph.addInput("x", TensorType::fromStatic(DType::F64, {3}));
  Node *y = *graph.addNode(*registry.get(OpId::Mul), {x, x}, {}, "y");
  graph.setOutputs({y->output()});
  autodiff::GradOptions options;
  options.wrt = {"x"};
  options.scalarLoss = false;
  Expected<autodiff::JointGraph> joint = autodiff::buildJointGraph(graph, options, registry);
  ASSERT_TRUE(joint) << joint.error().message();
  ASSERT_EQ(joint->tangents, std::vector<std::string>{"tangent_y"});
  auto out = interp::interpret(joint->graph, {test::makeTensor(DType::F64, {3}, {1, -2, 3}),
                                              test::makeTensor(DType::F64, {3}, {0.5, 1, -1})});
  ASSERT_TRUE(out) << out.error().message();
  ASSERT_EQ(out->size(), 2u);
  EXPECT_EQ(test::toDoubles((*out)[0]), (std::vector<double>{1, 4, 9}));
  EXPECT_EQ(test::toDoubles((*out)[1]), (std::vector<double>{1, -4, -6}));
}

} // namespace
} // namespace tensorc
