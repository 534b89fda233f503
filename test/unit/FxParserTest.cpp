// FX-text: parse(print(g)) == g on every model and on tricky syntax; errors carry file:line:col.
#include "OpTestUtil.h"
#include "tensorc/Frontend/FX/FxParser.h"
#include "tensorc/IR/Printer.h"
#include "tensorc/IR/Verifier.h"

#include <filesystem>
#include <gtest/gtest.h>

namespace tensorc {
namespace {

using test::registry;

void expectRoundTrip(const Graph &graph) {
  std::string text = printGraph(graph);
  Expected<Graph> reparsed = fx::parseFx(text, registry(), "<printed>");
  ASSERT_TRUE(reparsed) << reparsed.error().message() << "\n" << text;
  // Weights live beside the text; carry them over before comparing.
  for (const auto &[name, tensor] : graph.weights())
    reparsed->weights()[name] = tensor;
  std::string difference;
  EXPECT_TRUE(graphsEqual(graph, *reparsed, &difference)) << difference << "\n" << text;
  EXPECT_EQ(printGraph(*reparsed), text);
}

TEST(FxRoundTrip, EveryModelInModelsDir) {
  size_t count = 0;
  for (const auto &entry : std::filesystem::directory_iterator(TENSORC_SOURCE_DIR "/models")) {
    if (entry.path().extension() != ".fx")
      continue;
    SCOPED_TRACE(entry.path().string());
    Expected<Graph> graph = fx::loadFxFile(entry.path().string(), registry());
    ASSERT_TRUE(graph) << graph.error().message();
    EXPECT_FALSE(graph->weights().empty()) << "weights not bound (run models/make_models.py)";
    EXPECT_EQ(graph->userInputs().size(), 1u);
    expectRoundTrip(*graph);
    ++count;
  }
  EXPECT_GE(count, 3u);
}

TEST(FxRoundTrip, LiteralsSymbolsTuplesAndDefaults) {
  const char *text = R"(
# comment lines and blank lines are ignored

graph(%x: f32[s0, 4*s1], %i: i64[3]):
  %a : f32[s0, 4*s1] = call_function[target=aten.add](args=(%x, tensor<f32[]>[2.5]), kwargs={alpha=2})
  %m : f32[s0, 4*s1] = call_function[target=aten.mul](args=(%a, 3))
  %v : f32[4*s0*s1] = call_function[target=aten.view](args=(%m, [-1]))
  %r : f32[s0, s1, 4] = call_function[target=aten.reshape](args=(%m, [s0, s1, 4]))
  %sp : (f32[s0, s1, 1], f32[s0, s1, 3]) = call_function[target=aten.split_with_sizes](args=(%r, [1, 3], -1))
  %first : f32[s0, s1, 1] = call_function[target=getitem](args=(%sp, 0))
  %rest : f32[s0, s1, 3] = call_function[target=operator.getitem](args=(%sp, 1))
  %s : f32[s0, s1, 1] = call_function[target=aten.sum](args=(%rest, [-1], True))
  %c : f32[s0, s1, 1] = call_function[target=prims.convert_element_type](args=(%s, torch.float32))
  %g : f32[s0, 4*s1] = call_function[target=aten.gelu](args=(%x,), kwargs={'approximate': 'tanh'})
  %f : f32[3] = call_function[target=prims.convert_element_type](args=(%i, f32))
  return (%first, %c, %g, %v, %f)
)";
  Expected<Graph> graph = fx::parseFx(text, registry(), "literals.fx");
  ASSERT_TRUE(graph) << graph.error().message();
  EXPECT_EQ(graph->outputs().size(), 5u);
  EXPECT_EQ(graph->findValue("rest")->resultIndex(), 1u);
  EXPECT_EQ(graph->findValue("v")->type().str(), "f32[4*s0*s1]");
  expectRoundTrip(*graph);
}

struct BadCase {
  const char *text;
  const char *message;
};

TEST(FxParser, ErrorsNameFileLineColumnAndToken) {
  const BadCase cases[] = {
      {"graph(%x: f32[2]):\n  %y : f32[2] = call_function[target=aten.nope](args=(%x,))\n"
       "  return (%y,)\n",
       "bad.fx:2:38: error: unknown op 'aten.nope'"},
      {"graph(%x: f32[2]):\n  %y : f32[2] = call_function[target=aten.relu](args=(%z,))\n"
       "  return (%y,)\n",
       "bad.fx:2:55: error: unknown value %z"},
      {"graph(%x: f33[2]):\n  return (%x,)\n", "bad.fx:1:11: error: unknown dtype 'f33'"},
      {"graph(%x: f32[2]):\n  %y : f32[3] = call_function[target=aten.relu](args=(%x,))\n"
       "  return (%y,)\n",
       "declared type f32[3] but inference gives f32[2]"},
      {"graph(%x: f32[2], %x: f32[2]):\n  return (%x,)\n", "defined twice"},
      {"graph(%x: f32[2]):\n  %y : f32[2] = call_function[target=aten.relu](args=(%x,))\n",
       "expected 'return'"},
      {"graph(%x: f32[2, 3]):\n  %y : f32[2, 3] = call_function[target=aten.add](args=(%x, %x),"
       " kwargs={beta=1})\n  return (%y,)\n",
       "aten.add has no parameter 'beta'"},
      {"graph(%x: f32[2, 3], %w: f32[4, 5]):\n  %y : f32[2, 5] = "
       "call_function[target=aten.mm](args=(%x, %w))\n  return (%y,)\n",
       "bad.fx:2:41: error: %y: aten.mm"},
      {"graph(%x: f32[2]):\n  %y : f32[2] = call_function[target=aten.relu](args=(%x,))\n"
       "  return (%y,)\n  junk\n",
       "unexpected text after 'return'"},
      {"graph(%x: f32[2]):\n  %y : f32[2] = call_function[target=aten.gelu](args=(%x,), "
       "kwargs={approximate=3})\n  return (%y,)\n",
       "'approximate' expects str"},
      {"graph(%x: f32[2]):\n  %y : f32[2] = call_function[target=aten.relu](args=(%x,)) $\n",
       "bad.fx:2:61: error: unexpected character '$'"},
      {"graph(%x: f32[2]):\n  %y : f32[2] = call_function[target=aten.add](args=(%x, "
       "tensor<f32[2]>[1.0]))\n  return (%y,)\n",
       "f32[2] needs 2 elements, got 1"},
  };
  for (const BadCase &bad : cases) {
    Expected<Graph> graph = fx::parseFx(bad.text, registry(), "bad.fx");
    ASSERT_FALSE(graph) << bad.text;
    EXPECT_NE(graph.error().message().find(bad.message), std::string::npos)
        << "got: " << graph.error().message() << "\nwant: " << bad.message;
  }
}

TEST(FxFile, WeightsMustMatchTheirPlaceholders) {
  std::string dir = ::testing::TempDir() + "tensorc_fxfile_" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  Graph graph;
  Value *x = *graph.addInput("x", TensorType::fromStatic(DType::F32, {2}));
  Value *w = *graph.addInput("w", TensorType::fromStatic(DType::F32, {2}));
  Node *add = *graph.addNode(*registry().lookup("aten.add"), {x, w}, {});
  graph.setOutputs({add->output()});
  graph.weights()["w"] = test::makeTensor(DType::F32, {2}, {1.5, -2});
  ASSERT_TRUE(fx::saveFxFile(graph, dir + "/m.fx").isOk());
  Expected<Graph> loaded = fx::loadFxFile(dir + "/m.fx", registry());
  ASSERT_TRUE(loaded) << loaded.error().message();
  EXPECT_TRUE(graphsEqual(graph, *loaded));
  EXPECT_EQ(loaded->userInputs().size(), 1u);

  // A weights file whose tensor disagrees with the declared placeholder type.
  Graph other;
  Value *y = *other.addInput("w", TensorType::fromStatic(DType::F32, {3}));
  other.setOutputs({y});
  other.weights()["w"] = test::makeTensor(DType::F32, {2}, {1, 2});
  ASSERT_TRUE(fx::saveFxFile(other, dir + "/bad.fx").isOk());
  Expected<Graph> bad = fx::loadFxFile(dir + "/bad.fx", registry());
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message().find("is f32[2] but"), std::string::npos)
      << bad.error().message();
  std::filesystem::remove_all(dir);
}

TEST(Verifier, RejectsUseBeforeDefinitionAndBadWeights) {
  Graph graph;
  Value *x = *graph.addInput("x", TensorType::fromStatic(DType::F32, {2}));
  Node *relu = *graph.addNode(*registry().lookup("aten.relu"), {x}, {});
  graph.setOutputs({relu->output()});
  EXPECT_TRUE(verifyGraph(graph).isOk());
  graph.weights()["x"] = test::makeTensor(DType::F32, {3}, {1, 2, 3});
  Status status = verifyGraph(graph);
  ASSERT_FALSE(status.isOk());
  EXPECT_NE(status.message().find("weight 'x' is f32[3]"), std::string::npos) << status.message();
}

TEST(Graph, CheckedConstructorReportsNodeAndOp) {
  Graph graph;
  Value *x = *graph.addInput("x", TensorType::fromStatic(DType::F32, {2, 3}));
  Value *y = *graph.addInput("y", TensorType::fromStatic(DType::F32, {4, 3}));
  Expected<Node *> node = graph.addNode(*registry().lookup("aten.add"), {x, y}, {}, "sum");
  ASSERT_FALSE(node);
  EXPECT_NE(node.error().message().find("%sum: aten.add"), std::string::npos)
      << node.error().message();
  EXPECT_NE(node.error().message().find("do not broadcast"), std::string::npos);
  Expected<Node *> arity = graph.addNode(*registry().lookup("aten.relu"), {x, y}, {});
  ASSERT_FALSE(arity);
  EXPECT_NE(arity.error().message().find("takes 1 tensor input(s), got 2"), std::string::npos);
  Expected<Value *> dup = graph.addInput("x", TensorType::fromStatic(DType::F32, {1}));
  ASSERT_FALSE(dup);
}

} // namespace
} // namespace tensorc
