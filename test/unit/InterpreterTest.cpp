// Interpreter: symbol binding and input checks; a small graph against a hand computation.
#include "OpTestUtil.h"
#include "tensorc/Frontend/FX/FxParser.h"
#include "tensorc/Interp/Interpreter.h"
#include "tensorc/Ops/Registry.h"

#include <gtest/gtest.h>

namespace tensorc {
namespace {

using test::makeTensor;
using test::registry;
using test::toDoubles;

Graph parse(const char *text) {
  Expected<Graph> graph = fx::parseFx(text, registry(), "test.fx");
  EXPECT_TRUE(graph) << graph.error().message();
  return graph ? std::move(graph).value() : Graph();
}

TEST(Registry, CoversEveryListedOpWithAKernel) {
  Expected<OpRegistry> built = ops::buildCoreRegistry();
  ASSERT_TRUE(built) << built.error().message();
  EXPECT_EQ(built->all().size(), kNumOps);
  for (const auto &op : built->all())
    EXPECT_NE(op->kernel, nullptr) << op->name;
}

TEST(Interpreter, RunsASymbolicGraph) {
  Graph graph = parse(R"(
graph(%x: f32[s0, 2], %b: f32[2]):
  %y : f32[s0, 2] = call_function[target=aten.add](args=(%x, %b))
  %z : f32[s0, 2] = call_function[target=aten.relu](args=(%y,))
  %s : f32[s0] = call_function[target=aten.sum](args=(%z, [1]))
  return (%s, %z)
)");
  graph.weights()["b"] = makeTensor(DType::F32, {2}, {1, -1});
  Tensor x = makeTensor(DType::F32, {3, 2}, {1, 2, -3, 4, 0.5, 0.25});
  Expected<std::vector<Tensor>> out = interp::interpret(graph, {x});
  ASSERT_TRUE(out) << out.error().message();
  // relu(x + b) = [[2, 1], [0, 3], [1.5, 0]]; row sums [3, 3, 1.5].
  EXPECT_EQ(toDoubles((*out)[0]), (std::vector<double>{3, 3, 1.5}));
  EXPECT_EQ(toDoubles((*out)[1]), (std::vector<double>{2, 1, 0, 3, 1.5, 0}));
}

TEST(Interpreter, ChecksInputsAgainstTheSignature) {
  Graph graph = parse(R"(
graph(%x: f32[s0, 2], %y: f32[s0, 2]):
  %z : f32[s0, 2] = call_function[target=aten.mul](args=(%x, %y))
  return (%z,)
)");
  Tensor a = makeTensor(DType::F32, {3, 2}, {1, 2, 3, 4, 5, 6});
  Tensor b = makeTensor(DType::F32, {2, 2}, {1, 2, 3, 4});
  Expected<std::vector<Tensor>> mismatch = interp::interpret(graph, {a, b});
  ASSERT_FALSE(mismatch);
  EXPECT_NE(mismatch.error().message().find("symbol s0 is already 3"), std::string::npos)
      << mismatch.error().message();
  Tensor wrongDtype = makeTensor(DType::F64, {3, 2}, {1, 2, 3, 4, 5, 6});
  Expected<std::vector<Tensor>> dtype = interp::interpret(graph, {a, wrongDtype});
  ASSERT_FALSE(dtype);
  EXPECT_NE(dtype.error().message().find("input %y: expected f32[s0, 2], got f64[3, 2]"),
            std::string::npos)
      << dtype.error().message();
  EXPECT_FALSE(interp::interpret(graph, {a}));
}

} // namespace
} // namespace tensorc
