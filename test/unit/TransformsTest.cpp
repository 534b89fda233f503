// Graph passes (constant-fold, cse, dce): results unchanged on every model, idempotence, the
// decisions they log, and the pass runner's errors.
#include "OpTestUtil.h"
#include "tensorc/Frontend/FX/FxParser.h"
#include "tensorc/IR/Printer.h"
#include "tensorc/IR/Verifier.h"
#include "tensorc/Interp/Inputs.h"
#include "tensorc/Interp/Interpreter.h"
#include "tensorc/Support/Log.h"
#include "tensorc/Transforms/CSE.h"
#include "tensorc/Transforms/ConstantFold.h"
#include "tensorc/Transforms/DCE.h"
#include "tensorc/Transforms/PassRegistry.h"

#include <cmath>
#include <filesystem>
#include <gtest/gtest.h>

namespace tensorc {
namespace {

using test::makeTensor;
using test::registry;

const char *const kCleanupPasses[] = {"constant-fold", "cse", "dce"};

Graph parse(const char *text) {
  Expected<Graph> graph = fx::parseFx(text, registry(), "test.fx");
  EXPECT_TRUE(graph) << graph.error().message();
  return graph ? std::move(*graph) : Graph();
}

Status run(Graph &graph, std::string_view passes) {
  PassContext context{registry()};
  return runPasses(graph, passes, context);
}

/// Every symbol of the user inputs' shapes bound to `value`.
SymbolBindings bindAllSymbols(const Graph &graph, int64_t value) {
  std::set<std::string> symbols;
  for (const Value *input : graph.userInputs())
    for (const SymInt &dim : input->type().shape)
      dim.collectSymbols(symbols);
  SymbolBindings bindings;
  for (const std::string &symbol : symbols)
    bindings[symbol] = value;
  return bindings;
}

std::vector<Tensor> interpretRandom(const Graph &graph, uint64_t seed) {
  Expected<std::vector<Tensor>> inputs =
      interp::randomInputs(graph, seed, bindAllSymbols(graph, 3));
  EXPECT_TRUE(inputs) << inputs.error().message();
  if (!inputs)
    return {};
  Expected<std::vector<Tensor>> outputs = interp::interpret(graph, *inputs);
  EXPECT_TRUE(outputs) << outputs.error().message();
  return outputs ? std::move(*outputs) : std::vector<Tensor>();
}

/// The passes evaluate with the interpreter's own kernels, so results match bit for bit.
void expectSameResults(const std::vector<Tensor> &expected, const std::vector<Tensor> &actual) {
  ASSERT_EQ(expected.size(), actual.size());
  for (size_t i = 0; i < expected.size(); ++i)
    EXPECT_TRUE(expected[i].equals(actual[i])) << "output " << i;
}

/// A graph mixing foldable constants, duplicates and dead code with real inputs.
const char *const kMixedGraph = R"(
graph(%x: f32[s0, 4], %w: f32[4]):
  %c : f32[4] = call_function[target=aten.mul](args=(tensor<f32[4]>[1.0, 2.0, 3.0, 4.0], 0.5))
  %c2 : f32[4] = call_function[target=aten.exp](args=(%c,))
  %a : f32[s0, 4] = call_function[target=aten.add](args=(%x, %c2))
  %b : f32[s0, 4] = call_function[target=aten.add](args=(%x, %c2))
  %p : f32[s0, 4] = call_function[target=aten.mul](args=(%a, %b))
  %dead : f32[s0, 4] = call_function[target=aten.tanh](args=(%p,))
  %q : f32[s0, 4] = call_function[target=aten.mul](args=(%p, %w))
  %r : i64[3] = call_function[target=aten.arange](args=(0, 3))
  %s : f32[4] = call_function[target=aten.sum](args=(tensor<f32[3, 4]>[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0], [0]))
  %y : f32[s0, 4] = call_function[target=aten.sub](args=(%q, %s))
  return (%y, %r)
)";

TEST(TransformsResults, CleanupPassesKeepEveryModelsResults) {
  size_t count = 0;
  for (const auto &entry : std::filesystem::directory_iterator(TENSORC_SOURCE_DIR "/models")) {
    if (entry.path().extension() != ".fx")
      continue;
    SCOPED_TRACE(entry.path().string());
    Expected<Graph> graph = fx::loadFxFile(entry.path().string(), registry());
    ASSERT_TRUE(graph) << graph.error().message();
    std::vector<Tensor> expected = interpretRandom(*graph, 7);
    for (const char *pass : kCleanupPasses) {
      SCOPED_TRACE(pass);
      Expected<Graph> copy = fx::loadFxFile(entry.path().string(), registry());
      ASSERT_TRUE(copy) << copy.error().message();
      Status status = run(*copy, pass);
      ASSERT_TRUE(status) << status.message();
      expectSameResults(expected, interpretRandom(*copy, 7));
    }
    ++count;
  }
  EXPECT_GE(count, 3u);
}

TEST(TransformsResults, CleanupPassesKeepResultsOfAMixedGraph) {
  Graph graph = parse(kMixedGraph);
  graph.weights()["w"] = makeTensor(DType::F32, {4}, {0.5, -1.0, 2.0, 0.25});
  std::vector<Tensor> expected = interpretRandom(graph, 3);

  Graph folded = parse(kMixedGraph);
  folded.weights() = graph.weights();
  Status status = run(folded, "constant-fold,cse,dce");
  ASSERT_TRUE(status) << status.message();
  expectSameResults(expected, interpretRandom(folded, 3));

  // Only constants, placeholders' users and outputs remain: c, c2, r and s are constants now,
  // b merged into a, and the consumed literals and %dead are gone.
  std::vector<std::string> ops;
  for (const auto &node : folded.nodes())
    ops.push_back(node->name() + "=" + node->op().name);
  EXPECT_EQ(ops,
            (std::vector<std::string>{"c2=prims.constant", "a=aten.add", "p=aten.mul", "q=aten.mul",
                                      "r=prims.constant", "s=prims.constant", "y=aten.sub"}));
}

TEST(TransformsIdempotence, EachPassTwicePrintsTheSameText) {
  std::vector<std::string> sources = {kMixedGraph};
  for (const auto &entry : std::filesystem::directory_iterator(TENSORC_SOURCE_DIR "/models"))
    if (entry.path().extension() == ".fx")
      sources.push_back(entry.path().string());
  for (const std::string &source : sources) {
    for (const char *pass : kCleanupPasses) {
      SCOPED_TRACE(source.substr(0, 60) + " / " + pass);
      Expected<Graph> graph = source == kMixedGraph ? fx::parseFx(source, registry(), "mixed.fx")
                                                    : fx::loadFxFile(source, registry());
      ASSERT_TRUE(graph) << graph.error().message();
      ASSERT_TRUE(run(*graph, pass));
      std::string once = printGraph(*graph);
      ASSERT_TRUE(run(*graph, pass));
      EXPECT_EQ(printGraph(*graph), once);
      // The printed result parses back to the same graph.
      Expected<Graph> reparsed = fx::parseFx(once, registry(), "printed.fx");
      ASSERT_TRUE(reparsed) << reparsed.error().message() << "\n" << once;
      EXPECT_EQ(printGraph(*reparsed), once);
    }
  }
}

TEST(TransformsConstantFold, ParametersAreNotFolded) {
  // %w has data, so it is a parameter: the Freeze pass, not folding, turns it into a constant.
  Graph graph = parse(R"(
graph(%x: f32[2], %w: f32[2]):
  %a : f32[2] = call_function[target=aten.mul](args=(%w, 2.0))
  %y : f32[2] = call_function[target=aten.add](args=(%x, %a))
  return (%y,)
)");
  graph.weights()["w"] = makeTensor(DType::F32, {2}, {1.0, 2.0});
  std::string before = printGraph(graph);
  ASSERT_TRUE(foldConstants(graph, PassContext{registry()}));
  EXPECT_EQ(printGraph(graph), before);
  EXPECT_EQ(graph.weights().size(), 1u);
}

TEST(TransformsConstantFold, KeepsExactResultTypes) {
  // Integer and bool results, a 0-d result and a broadcast: each constant has the node's type.
  Graph graph = parse(R"(
graph(%x: f32[2]):
  %i : i32[2] = call_function[target=prims.convert_element_type](args=(tensor<f32[2]>[1.5, -2.5], i32))
  %b : bool[2] = call_function[target=aten.gt](args=(%i, 0))
  %s : i64[] = call_function[target=aten.sum](args=(%b,))
  %e : f32[3, 2] = call_function[target=aten.expand](args=(tensor<f32[2]>[1.0, 2.0], [3, 2]))
  return (%i, %b, %s, %e)
)");
  std::vector<std::string> typesBefore;
  for (const Value *output : graph.outputs())
    typesBefore.push_back(output->type().str());
  ASSERT_TRUE(run(graph, "constant-fold,dce"));
  ASSERT_EQ(graph.nodes().size(), 4u);
  for (size_t i = 0; i < graph.outputs().size(); ++i) {
    EXPECT_EQ(graph.outputs()[i]->type().str(), typesBefore[i]);
    EXPECT_EQ(graph.outputs()[i]->producer()->opId(), OpId::Constant);
  }
  EXPECT_EQ(graph.outputs()[2]->producer()->attr("value").asTensor().getInt(0), 1);
}

TEST(TransformsConstantFold, LogsWhyANodeStays) {
  Graph graph = parse(R"(
graph(%x: i64[2]):
  %big : f32[300, 300] = call_function[target=aten.full](args=([300, 300], 1.0))
  %d : i64[2] = call_function[target=aten.div](args=(tensor<i64[2]>[1, 2], 0), kwargs={rounding_mode='floor'})
  return (%big, %d)
)");
  log::enableCategories("constant-fold");
  testing::internal::CaptureStderr();
  Status status = foldConstants(graph, PassContext{registry()});
  std::string logged = testing::internal::GetCapturedStderr();
  ASSERT_TRUE(status) << status.message();
  EXPECT_NE(logged.find("not folding %big = aten.full: result %big: f32[300, 300] has 90000 "
                        "elements (limit 65536)"),
            std::string::npos)
      << logged;
  EXPECT_NE(logged.find("not folding %d = aten.div: the kernel failed"), std::string::npos)
      << logged;
  EXPECT_NE(logged.find("integer division by zero"), std::string::npos) << logged;
  // The error surfaces at run time instead, naming the node.
  Expected<std::vector<Tensor>> outputs =
      interp::interpret(graph, {makeTensor(DType::I64, {2}, {0, 0})});
  ASSERT_FALSE(outputs);
  EXPECT_NE(outputs.error().message().find("%d"), std::string::npos) << outputs.error().message();
}

TEST(TransformsDce, KeepsPlaceholdersAndWeights) {
  Graph graph = parse(R"(
graph(%x: f32[2], %w: f32[2]):
  %a : f32[2] = call_function[target=aten.mul](args=(%w, %x))
  return (%x,)
)");
  graph.weights()["w"] = makeTensor(DType::F32, {2}, {1.0, 2.0});
  ASSERT_TRUE(eliminateDeadCode(graph, PassContext{registry()}));
  EXPECT_TRUE(graph.nodes().empty());
  EXPECT_EQ(graph.inputs().size(), 2u);
  EXPECT_EQ(graph.weights().count("w"), 1u);
  EXPECT_TRUE(verifyGraph(graph));
}

TEST(TransformsCse, MergedDataDependentSymbolsFollowTheKeptNode) {
  // unique has four results, three of data-dependent size: all of u2's follow u1's symbols.
  Graph graph = parse(R"(
graph(%x: f32[4]):
  %u1 : (f32[u1_0_d0], i64[u1_1_d0], i64[4], i64[u1_3_d0]) = call_function[target=prims.unique](args=(%x,))
  %v1 : f32[u1_0_d0] = call_function[target=getitem](args=(%u1, 0))
  %u2 : (f32[u2_0_d0], i64[u2_1_d0], i64[4], i64[u2_3_d0]) = call_function[target=prims.unique](args=(%x,))
  %v2 : f32[u2_0_d0] = call_function[target=getitem](args=(%u2, 0))
  %c2 : i64[u2_3_d0] = call_function[target=getitem](args=(%u2, 3))
  %a : f32[u2_0_d0] = call_function[target=aten.abs](args=(%v2,))
  %n : i64[u2_3_d0] = call_function[target=aten.neg](args=(%c2,))
  return (%v1, %a, %n)
)");
  std::vector<Tensor> expected = interpretRandom(graph, 5);
  ASSERT_TRUE(eliminateCommonSubexpressions(graph, PassContext{registry()}));
  ASSERT_EQ(graph.nodes().size(), 3u);
  EXPECT_EQ(graph.findValue("a")->type().str(), "f32[u1_0_d0]");
  EXPECT_EQ(graph.findValue("n")->type().str(), "i64[u1_3_d0]");
  EXPECT_TRUE(verifyGraph(graph));
  expectSameResults(expected, interpretRandom(graph, 5));
}

// fuse-attention replaces the unfused graph by one attention op whose reference kernel computes
// the same values (scaled by a division or a multiplication, with and without an additive mask
// broadcast over the batch dims).
TEST(FuseAttention, ReferenceKernelMatchesTheUnfusedGraph) {
  const char *text =
      "graph(%q: f32[2, 3, 5, 4], %k: f32[2, 3, 6, 4], %v: f32[2, 3, 6, 7], %m: f32[5, 6]):\n"
      "  %kt : f32[2, 3, 4, 6] = call_function[target=aten.transpose](args=(%k, -2, -1))\n"
      "  %qk : f32[2, 3, 5, 6] = call_function[target=aten.matmul](args=(%q, %kt))\n"
      "  %s : f32[2, 3, 5, 6] = call_function[target=aten.div](args=(%qk, 2.0))\n"
      "  %p : f32[2, 3, 5, 6] = call_function[target=aten.softmax](args=(%s, -1))\n"
      "  %a : f32[2, 3, 5, 7] = call_function[target=aten.matmul](args=(%p, %v))\n"
      "  %kt2 : f32[2, 3, 4, 6] = call_function[target=aten.permute](args=(%k, [0, 1, 3, 2]))\n"
      "  %qk2 : f32[2, 3, 5, 6] = call_function[target=aten.matmul](args=(%q, %kt2))\n"
      "  %s2 : f32[2, 3, 5, 6] = call_function[target=aten.mul](args=(%qk2, 0.3))\n"
      "  %sm : f32[2, 3, 5, 6] = call_function[target=aten.add](args=(%m, %s2))\n"
      "  %p2 : f32[2, 3, 5, 6] = call_function[target=aten.softmax](args=(%sm, 3))\n"
      "  %b : f32[2, 3, 5, 7] = call_function[target=aten.matmul](args=(%p2, %v))\n"
      "  return (%a, %b)\n";
  Graph unfused = parse(text);
  Graph fused = parse(text);
  ASSERT_TRUE(run(fused, "fuse-attention,dce"));
  size_t attention = 0;
  for (const auto &node : fused.nodes()) {
    attention += node->opId() == OpId::ScaledDotProductAttention;
    EXPECT_NE(node->opId(), OpId::Softmax) << "softmax left in " << printGraph(fused);
  }
  EXPECT_EQ(attention, 2u) << printGraph(fused);
  std::vector<Tensor> want = interpretRandom(unfused, 11), got = interpretRandom(fused, 11);
  ASSERT_EQ(got.size(), 2u);
  for (size_t i = 0; i < got.size(); ++i)
    for (int64_t e = 0; e < want[i].numel(); ++e)
      EXPECT_NEAR(got[i].getDouble(e), want[i].getDouble(e), 1e-5) << "output " << i << " at " << e;
}

// Bool masks: where(keep, scores, -inf) and ONNX's where(drop, -inf, scores) become the op's bool
// mask (logical_not of drop); rows with every key masked are NaN in both graphs.
TEST(FuseAttention, BoolMasksMatchTheUnfusedGraph) {
  const char *text =
      "graph(%q: f32[2, 3, 5, 4], %k: f32[2, 3, 6, 4], %v: f32[2, 3, 6, 7], %m: bool[2, 1, 5, 6]):\n"
      "  %kt : f32[2, 3, 4, 6] = call_function[target=aten.transpose](args=(%k, -2, -1))\n"
      "  %qk : f32[2, 3, 5, 6] = call_function[target=aten.matmul](args=(%q, %kt))\n"
      "  %s : f32[2, 3, 5, 6] = call_function[target=aten.mul](args=(%qk, 0.5))\n"
      "  %w : f32[2, 3, 5, 6] = call_function[target=aten.where](args=(%m, %s, -inf))\n"
      "  %p : f32[2, 3, 5, 6] = call_function[target=aten.softmax](args=(%w, -1))\n"
      "  %a : f32[2, 3, 5, 7] = call_function[target=aten.matmul](args=(%p, %v))\n"
      "  %qk2 : f32[2, 3, 5, 6] = call_function[target=aten.matmul](args=(%q, %kt))\n"
      "  %w2 : f32[2, 3, 5, 6] = call_function[target=aten.where](args=(%m, -inf, %qk2))\n"
      "  %p2 : f32[2, 3, 5, 6] = call_function[target=aten.softmax](args=(%w2, -1))\n"
      "  %b : f32[2, 3, 5, 7] = call_function[target=aten.matmul](args=(%p2, %v))\n"
      "  return (%a, %b)\n";
  Graph unfused = parse(text);
  Graph fused = parse(text);
  ASSERT_TRUE(run(fused, "fuse-attention,dce"));
  size_t attention = 0, logicalNot = 0;
  for (const auto &node : fused.nodes()) {
    attention += node->opId() == OpId::ScaledDotProductAttention;
    logicalNot += node->opId() == OpId::LogicalNot;
  }
  EXPECT_EQ(attention, 2u) << printGraph(fused);
  EXPECT_EQ(logicalNot, 1u) << printGraph(fused);
  std::vector<Tensor> want = interpretRandom(unfused, 3), got = interpretRandom(fused, 3);
  ASSERT_EQ(got.size(), 2u);
  for (size_t i = 0; i < got.size(); ++i)
    for (int64_t e = 0; e < want[i].numel(); ++e) {
      double w = want[i].getDouble(e), g = got[i].getDouble(e);
      if (std::isnan(w))
        EXPECT_TRUE(std::isnan(g)) << "output " << i << " at " << e;
      else
        EXPECT_NEAR(g, w, 1e-5) << "output " << i << " at " << e;
    }
}

TEST(TransformsRunner, UnknownPassListsTheKnownOnes) {
  Graph graph = parse("graph(%x: f32[2]):\n  return (%x,)\n");
  Status status = run(graph, "cse,nope");
  ASSERT_FALSE(status);
  EXPECT_EQ(status.message(),
            "unknown pass 'nope' (passes: constant-fold, cse, dce, decompose, "
            "fold-batchnorm, fuse-attention, fuse-tiled-attention, merge-parallel-matmuls)");
}

} // namespace
} // namespace tensorc
