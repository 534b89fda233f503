// Lowering rules: every op of OpList.def has exactly one entry, a rule or a fallback with its
// reason, in one family; --fallback=error turns a fallback into an error naming node and op.
#include "tensorc/Lowering/LoweringRules.h"
#include "OpTestUtil.h"
#include "tensorc/Frontend/FX/FxParser.h"
#include "tensorc/Lowering/ExprVisitor.h"
#include "tensorc/Lowering/Lower.h"

#include <algorithm>
#include <gtest/gtest.h>
#include <set>

namespace tensorc::loop {
namespace {

TEST(LoweringRules, CoverOpListExactlyOnceEach) {
  // describeLoweringRules fails when an op has no entry or two (the table's own check).
  Expected<std::vector<LoweringRuleInfo>> rules = describeLoweringRules();
  ASSERT_TRUE(rules) << rules.error().message();
  ASSERT_EQ(rules->size(), kNumOps);
  std::set<std::string> families;
  for (size_t i = 0; i < kNumOps; ++i) {
    const LoweringRuleInfo &rule = (*rules)[i];
    SCOPED_TRACE(std::string(opIdName(OpId(i))));
    EXPECT_EQ(rule.op, OpId(i));
    EXPECT_FALSE(rule.family.empty());
    // A rule, or a listed fallback that says why: never neither, never both.
    EXPECT_NE(rule.lowered, !rule.fallbackReason.empty());
    families.insert(rule.family);
    // Every op the registry defines is one of them (the registry covers OpList.def too).
    EXPECT_NE(test::registry().get(OpId(i)), nullptr);
  }
  EXPECT_EQ(families,
            (std::set<std::string>{"attention", "creation", "extern", "gemm-conv", "indexing",
                                   "pointwise", "pooling", "reductions", "views"}));
  // The ops the seed models' kernels rest on have rules.
  for (OpId id : {OpId::Add, OpId::Mm, OpId::Convolution, OpId::Sum, OpId::View, OpId::Cat,
                  OpId::Embedding, OpId::Constant})
    EXPECT_TRUE((*rules)[size_t(id)].lowered) << opIdName(id);
}

Expected<LoopProgram> lowerText(const char *text, FallbackPolicy policy) {
  TC_ASSIGN_OR_RETURN(Graph graph, fx::parseFx(text, test::registry(), "t.fx"));
  LowerOptions options;
  options.fallback = policy;
  return lower(graph, options);
}

TEST(LoweringRules, FallbackPolicy) {
  const char *text = R"(
graph(%x: f32[4, 8]):
  %s : f32[4, 8] = call_function[target=aten.sin](args=(%x,))
  %r : f32[4, 8] = call_function[target=aten.relu](args=(%s,))
  return (%r,)
)";
  Expected<LoopProgram> allowed = lowerText(text, FallbackPolicy::Allow);
  ASSERT_TRUE(allowed) << allowed.error().message();
  EXPECT_EQ(allowed->fallbacks, std::vector<std::string>{"aten.sin"});
  ASSERT_EQ(allowed->nodes.size(), 2u);
  EXPECT_EQ(allowed->nodes[0].kind, LoopNode::Kind::Extern);
  EXPECT_EQ(allowed->nodes[0].externReason, "no loop IR op for it yet");
  EXPECT_EQ(allowed->nodes[1].kind, LoopNode::Kind::Pointwise);
  Expected<LoopProgram> refused = lowerText(text, FallbackPolicy::Error);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().message(),
            "node 's' (aten.sin): no generated kernel (no loop IR op for it yet); "
            "--fallback=error forbids running it on its reference kernel");
  EXPECT_TRUE(parseFallbackPolicy("error"));
  EXPECT_FALSE(parseFallbackPolicy("maybe"));
}

// Reductions of a 0-d tensor name dim 0 or -1, which it accepts but does not have: they run
// on the reference kernel (the rule once marked that dim in a per-dim list of size 0).
TEST(LoweringRules, ReductionOfA0dTensorFallsBack) {
  const char *text = R"(
graph(%x: f32[]):
  %s : f32[] = call_function[target=aten.sum](args=(%x, [-1]))
  %m : f32[] = call_function[target=aten.amax](args=(%s, [0], True))
  %a : i64[] = call_function[target=aten.argmax](args=(%m, 0))
  return (%a,)
)";
  Expected<LoopProgram> program = lowerText(text, FallbackPolicy::Allow);
  ASSERT_TRUE(program) << program.error().message();
  EXPECT_EQ(program->fallbacks, (std::vector<std::string>{"aten.sum", "aten.amax", "aten.argmax"}));
  for (const LoopNode &node : program->nodes)
    EXPECT_EQ(node.externReason, "a reduction of a scalar");
}

TEST(LoweringRules, OneElementWeightsAreLiterals) {
  // An exporter's scalar initializers (gelu_new's pow exponent 3.0, its 0.5) are weights of one
  // element: they lower to literals in the body, not weight buffers, so the bundle does not carry
  // them and pow by 3 can become multiplies. A larger weight stays a buffer.
  const char *text = R"(
graph(%x: f32[4, 8], %e: f32[], %h: f32[1], %w: f32[8]):
  %p : f32[4, 8] = call_function[target=aten.pow](args=(%x, %e))
  %q : f32[4, 8] = call_function[target=aten.mul](args=(%p, %h))
  %r : f32[4, 8] = call_function[target=aten.add](args=(%q, %w))
  return (%r,)
)";
  Expected<Graph> graph = fx::parseFx(text, test::registry(), "t.fx");
  ASSERT_TRUE(graph) << graph.error().message();
  Tensor e = Tensor::zerosUnchecked(DType::F32, {}), h = Tensor::zerosUnchecked(DType::F32, {1});
  e.setDouble(0, 3.0);
  h.setDouble(0, 0.5);
  graph->weights()["e"] = e;
  graph->weights()["h"] = h;
  graph->weights()["w"] = Tensor::zerosUnchecked(DType::F32, {8});
  Expected<LoopProgram> program = lower(*graph, LowerOptions());
  ASSERT_TRUE(program) << program.error().message();
  EXPECT_EQ(program->weights.count("e"), 0u);
  EXPECT_EQ(program->weights.count("h"), 0u);
  EXPECT_EQ(program->weights.count("w"), 1u);
  std::vector<double> constants;
  for (const LoopNode &node : program->nodes)
    if (node.body)
      forEachExpr(node.body, [&](const Expr &expr) {
        if (expr.kind == ExprKind::Constant)
          constants.push_back(expr.value);
        EXPECT_FALSE(expr.kind == ExprKind::Load &&
                     (program->buffers[size_t(expr.buffer)].name == "e" ||
                      program->buffers[size_t(expr.buffer)].name == "h"));
      });
  EXPECT_NE(std::find(constants.begin(), constants.end(), 3.0), constants.end());
  EXPECT_NE(std::find(constants.begin(), constants.end(), 0.5), constants.end());
}

} // namespace
} // namespace tensorc::loop
