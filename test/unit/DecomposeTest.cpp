// Decompose: every rule computes what the op's kernel does, on small graphs and on models/.
#include "tensorc/Transforms/Decompose.h"
#include "OpHelpers.h"
#include "OpTestUtil.h"
#include "tensorc/Frontend/FX/FxParser.h"
#include "tensorc/IR/Printer.h"
#include "tensorc/IR/Rewriter.h"
#include "tensorc/IR/Verifier.h"
#include "tensorc/Interp/Inputs.h"
#include "tensorc/Interp/Interpreter.h"

#include <algorithm>
#include <cmath>
#include <gtest/gtest.h>
#include <set>

namespace tensorc {
namespace {

using test::registry;

/// `text` with every "DT" replaced by `dtype`'s name.
std::string withDType(std::string text, DType dtype) {
  std::string name(dtypeName(dtype));
  for (size_t at = text.find("DT"); at != std::string::npos; at = text.find("DT", at))
    text.replace(at, 2, name);
  return text;
}

double tolerance(DType dtype) {
  if (!isFloating(dtype))
    return 0.0;
  return dtype == DType::F16 || dtype == DType::BF16 ? 1e-2 : dtype == DType::F64 ? 1e-9 : 1e-5;
}

/// |a - b| <= tol + tol * |b| elementwise, NaN matching NaN.
void expectClose(const Tensor &actual, const Tensor &expected, double tol) {
  ASSERT_EQ(actual.dtype(), expected.dtype());
  ASSERT_EQ(actual.shape(), expected.shape());
  std::vector<double> a = test::toDoubles(actual), e = test::toDoubles(expected);
  size_t bad = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    bool same = (std::isnan(a[i]) && std::isnan(e[i])) || a[i] == e[i] ||
                std::abs(a[i] - e[i]) <= tol + tol * std::abs(e[i]);
    if (!same && bad++ < 5)
      ADD_FAILURE() << "element " << i << ": decomposed " << a[i] << ", original " << e[i];
  }
  EXPECT_EQ(bad, 0u);
}

/// Ops of `graph` that still have a decomposition rule.
std::multiset<std::string> remainingRuleOps(const Graph &graph) {
  std::multiset<std::string> ops;
  for (const auto &node : graph.nodes())
    if (node->op().decompose)
      ops.insert(node->op().name);
  return ops;
}

/// Decomposes a copy of `original` (re-parsed from `text`), checks that it verifies, that only
/// `kept` rule ops remain, and that it computes what the original does on `inputs`.
void checkDecomposition(const Graph &original, Graph decomposed, const std::vector<Tensor> &inputs,
                        double tol, const std::multiset<std::string> &kept) {
  Status status = decompose(decomposed, PassContext{registry()});
  ASSERT_TRUE(status) << status.message();
  Status verified = verifyGraph(decomposed);
  ASSERT_TRUE(verified) << verified.message() << "\n" << printGraph(decomposed);
  EXPECT_EQ(remainingRuleOps(decomposed), kept) << printGraph(decomposed);
  Expected<std::vector<Tensor>> expected = interp::interpret(original, inputs);
  ASSERT_TRUE(expected) << expected.error().message();
  Expected<std::vector<Tensor>> actual = interp::interpret(decomposed, inputs);
  ASSERT_TRUE(actual) << actual.error().message() << "\n" << printGraph(decomposed);
  ASSERT_EQ(actual->size(), expected->size());
  for (size_t i = 0; i < actual->size(); ++i) {
    SCOPED_TRACE("output " + std::to_string(i) + "\n" + printGraph(decomposed));
    // An output of another dtype than the case's (a cast result) gets that dtype's tolerance.
    double outputTol = std::max(tol, tol == 0.0 ? 0.0 : tolerance((*expected)[i].dtype()));
    expectClose((*actual)[i], (*expected)[i], outputTol);
  }
}

struct RuleCase {
  const char *name;
  const char *text; // "DT" stands for each dtype in turn
  std::vector<DType> dtypes;
  std::multiset<std::string> kept = {};
};

void PrintTo(const RuleCase &rule, std::ostream *os) { *os << rule.name; }

const std::vector<DType> kFloats = {DType::F32, DType::F16, DType::F64};

const RuleCase kCases[] = {
    {"softmax", R"(graph(%x: DT[s0, 8]):
  %y : DT[s0, 8] = call_function[target=aten.softmax](args=(%x, 1))
  %z : DT[s0, 8] = call_function[target=aten.softmax](args=(%x, 0))
  return (%y, %z))",
     kFloats},
    {"softmax_dtype", R"(graph(%x: DT[3, 5]):
  %y : f32[3, 5] = call_function[target=aten.softmax](args=(%x, -1, torch.float32))
  return (%y,))",
     kFloats},
    {"log_softmax", R"(graph(%x: DT[2, s0, 6]):
  %y : DT[2, s0, 6] = call_function[target=aten.log_softmax](args=(%x, -1))
  %z : f64[2, s0, 6] = call_function[target=aten.log_softmax](args=(%x, 0, torch.float64))
  return (%y, %z))",
     kFloats},
    {"mean", R"(graph(%x: DT[s0, 5, 4]):
  %a : DT[s0, 1, 4] = call_function[target=aten.mean](args=(%x, [1], True))
  %b : DT[s0] = call_function[target=aten.mean](args=(%x, [-1, -2]))
  %c : f64[s0, 4] = call_function[target=aten.mean](args=(%x, [1]), kwargs={dtype=torch.float64})
  return (%a, %b, %c))",
     kFloats},
    {"mean_symbolic_kept",
     R"(graph(%x: DT[s0, 4]):
  %a : DT[4] = call_function[target=aten.mean](args=(%x, [0]))
  %b : DT[] = call_function[target=aten.mean](args=(%x,))
  %c : DT[s0] = call_function[target=aten.mean](args=(%x, [1]))
  return (%a, %b, %c))",
     kFloats,
     {"aten.mean", "aten.mean"}},
    {"var", R"(graph(%x: DT[s0, 6, 3]):
  %a : DT[s0, 1, 3] = call_function[target=aten.var](args=(%x, [1]), kwargs={keepdim=True})
  %b : DT[s0] = call_function[target=aten.var](args=(%x, [1, 2]), kwargs={correction=0})
  %c : DT[s0, 6] = call_function[target=aten.var](args=(%x, [2]), kwargs={correction=2.5})
  return (%a, %b, %c))",
     kFloats},
    {"layer_norm", R"(graph(%x: DT[s0, 4, 8], %w: DT[4, 8], %b: DT[4, 8], %w32: f32[8]):
  %a : DT[s0, 4, 8] = call_function[target=aten.layer_norm](args=(%x, [4, 8], %w, %b))
  %c : DT[s0, 4, 8] = call_function[target=aten.layer_norm](args=(%x, [8], None, None, 0.001))
  %d : DT[s0, 4, 8] = call_function[target=aten.layer_norm](args=(%x, [8], %w32))
  return (%a, %c, %d))",
     kFloats},
    {"batch_norm",
     R"(graph(%x: DT[s0, 3, 4, 5], %w: DT[3], %b: DT[3], %m: f32[3], %v: f32[3], %x2: DT[s0, 3]):
  %va : f32[3] = call_function[target=aten.abs](args=(%v,))
  %a : DT[s0, 3, 4, 5] = call_function[target=aten.batch_norm](args=(%x, %w, %b, %m, %va, False, 0.1, 1e-05))
  %c : DT[s0, 3, 4, 5] = call_function[target=aten.batch_norm](args=(%x, None, None, %m, %va, False, 0.1, 0.01))
  %d : DT[s0, 3] = call_function[target=aten.batch_norm](args=(%x2, %w, %b, %m, %va, False, 0.1, 1e-05))
  return (%a, %c, %d))",
     kFloats},
    {"batch_norm_training_kept",
     R"(graph(%x: DT[2, 3, 4], %w: DT[3], %b: DT[3]):
  %a : DT[2, 3, 4] = call_function[target=aten.batch_norm](args=(%x, %w, %b, None, None, True, 0.1, 1e-05))
  return (%a,))",
     kFloats,
     {"aten.batch_norm"}},
    {"convolution_1d", R"(graph(%x: DT[s0, 4, 19], %w: DT[6, 2, 3], %b: DT[6], %dw: DT[4, 1, 5]):
  %a : DT[s0, 6, 10] = call_function[target=aten.convolution](args=(%x, %w, %b, [2], [1], [1], False, [0], 2))
  %c : DT[s0, 6, 17] = call_function[target=aten.convolution](args=(%x, %w, None, [1], [0], [1], False, [0], 2))
  %d : DT[s0, 4, 15] = call_function[target=aten.convolution](args=(%x, %dw, None, [1], [2], [2], False, [0], 4))
  return (%a, %c, %d))",
     kFloats,
     // The 2-D convolutions they become (Decompose.OneDConvolutionsBecomeTwoD checks the ranks).
     {"aten.convolution", "aten.convolution", "aten.convolution"}},
    {"convolution_2d_and_transposed_kept",
     R"(graph(%x: DT[2, 4, 5, 5], %w: DT[6, 4, 3, 3], %x1: DT[2, 4, 7], %wt: DT[4, 3, 3]):
  %a : DT[2, 6, 3, 3] = call_function[target=aten.convolution](args=(%x, %w, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1))
  %t : DT[2, 3, 9] = call_function[target=aten.convolution](args=(%x1, %wt, None, [1], [0], [1], True, [0], 1))
  return (%a, %t))",
     kFloats,
     {"aten.convolution", "aten.convolution"}},
    {"gelu", R"(graph(%x: DT[s0, 7]):
  %a : DT[s0, 7] = call_function[target=aten.gelu](args=(%x,))
  %b : DT[s0, 7] = call_function[target=aten.gelu](args=(%x,), kwargs={approximate='tanh'})
  return (%a, %b))",
     kFloats},
    {"silu", R"(graph(%x: DT[s0, 7], %i: i32[5]):
  %a : DT[s0, 7] = call_function[target=aten.silu](args=(%x,))
  %b : f32[5] = call_function[target=aten.silu](args=(%i,))
  return (%a, %b))",
     kFloats},
    {"clamp", R"(graph(%x: DT[s0, 7], %i: i32[6], %p: bool[3]):
  %a : DT[s0, 7] = call_function[target=aten.clamp](args=(%x, -0.5, 0.5))
  %b : DT[s0, 7] = call_function[target=aten.clamp](args=(%x, 0))
  %c : DT[s0, 7] = call_function[target=aten.clamp](args=(%x, None, 0.25))
  %d : DT[s0, 7] = call_function[target=aten.clamp](args=(%x, 0.5, -0.5))
  %e : i32[6] = call_function[target=aten.clamp](args=(%i, 2, 7))
  %f : f32[6] = call_function[target=aten.clamp](args=(%i, 2.5))
  %g : i64[3] = call_function[target=aten.clamp](args=(%p, 0, 1))
  return (%a, %b, %c, %d, %e, %f, %g))",
     kFloats},
    {"addmm", R"(graph(%x: DT[s0, 6], %w: DT[6, 5], %b: DT[5], %b2: DT[s0, 5], %b1: DT[1, 5]):
  %a : DT[s0, 5] = call_function[target=aten.addmm](args=(%b, %x, %w))
  %c : DT[s0, 5] = call_function[target=aten.addmm](args=(%b2, %x, %w), kwargs={beta=0.5, alpha=2})
  %d : DT[s0, 5] = call_function[target=aten.addmm](args=(%b1, %x, %w), kwargs={beta=0})
  return (%a, %c, %d))",
     kFloats},
    {"matmul",
     R"(graph(%v: DT[6], %m: DT[6, 5], %n: DT[4, 6], %b3: DT[s0, 4, 6], %c3: DT[s0, 6, 5], %d4: DT[2, 1, 4, 6], %e3: DT[3, 6, 5]):
  %vv : DT[] = call_function[target=aten.matmul](args=(%v, %v))
  %vm : DT[5] = call_function[target=aten.matmul](args=(%v, %m))
  %mv : DT[4] = call_function[target=aten.matmul](args=(%n, %v))
  %mm : DT[4, 5] = call_function[target=aten.matmul](args=(%n, %m))
  %bm : DT[s0, 4, 5] = call_function[target=aten.matmul](args=(%b3, %m))
  %bv : DT[s0, 4] = call_function[target=aten.matmul](args=(%b3, %v))
  %bb : DT[s0, 4, 5] = call_function[target=aten.matmul](args=(%b3, %c3))
  %vb : DT[s0, 5] = call_function[target=aten.matmul](args=(%v, %c3))
  %me : DT[3, 4, 5] = call_function[target=aten.matmul](args=(%n, %e3))
  %de : DT[2, 3, 4, 5] = call_function[target=aten.matmul](args=(%d4, %e3))
  %be : DT[3, 4, 5] = call_function[target=aten.matmul](args=(%b3, %e3))
  return (%vv, %vm, %mv, %mm, %bm, %bv, %bb, %vb, %me, %de, %be))",
     kFloats,
     {"aten.matmul"}},
    {"views",
     R"(graph(%x: DT[s0, 3, 4], %w: DT[3, 4], %v: DT[4]):
  %a : DT[4, 3] = call_function[target=aten.t](args=(%w,))
  %b : DT[4] = call_function[target=aten.t](args=(%v,))
  %c : DT[s0, 4, 3] = call_function[target=aten.transpose](args=(%x, 1, 2))
  %d : DT[4, 3, s0] = call_function[target=aten.transpose](args=(%x, -1, 0))
  %e : DT[s0, 3, 4] = call_function[target=aten.transpose](args=(%x, 1, 1))
  %f : DT[s0, 12] = call_function[target=aten.reshape](args=(%x, [s0, -1]))
  return (%a, %b, %c, %d, %e, %f))",
     {DType::F32, DType::I64, DType::Bool}},
};

class DecomposeRule : public ::testing::TestWithParam<RuleCase> {};

TEST_P(DecomposeRule, ComputesWhatTheOpComputes) {
  const RuleCase &rule = GetParam();
  for (DType dtype : rule.dtypes) {
    SCOPED_TRACE(dtypeName(dtype));
    std::string text = withDType(rule.text, dtype);
    Expected<Graph> original = fx::parseFx(text, registry(), rule.name);
    ASSERT_TRUE(original) << original.error().message();
    Expected<Graph> copy = fx::parseFx(text, registry(), rule.name);
    ASSERT_TRUE(copy) << copy.error().message();
    Expected<std::vector<Tensor>> inputs = interp::randomInputs(*original, 7, {{"s0", 3}});
    ASSERT_TRUE(inputs) << inputs.error().message();
    checkDecomposition(*original, std::move(*copy), *inputs, tolerance(dtype), rule.kept);
  }
}

INSTANTIATE_TEST_SUITE_P(Rules, DecomposeRule, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<RuleCase> &info) {
                           return std::string(info.param.name);
                         });

TEST(Decompose, ModelsComputeTheSameDecomposed) {
  // convnet's 2-D convolutions stay (only 1-D ones decompose, into 2-D ones).
  const std::map<std::string, std::multiset<std::string>> kept = {
      {"convnet", {"aten.convolution", "aten.convolution"}}};
  for (const char *model : {"mlp", "convnet", "ln_silu"}) {
    SCOPED_TRACE(model);
    std::string path = std::string(TENSORC_SOURCE_DIR "/models/") + model + ".fx";
    Expected<Graph> original = fx::loadFxFile(path, registry());
    ASSERT_TRUE(original) << original.error().message();
    Expected<Graph> copy = fx::loadFxFile(path, registry());
    ASSERT_TRUE(copy) << copy.error().message();
    Expected<std::vector<Tensor>> inputs = interp::randomInputs(*original, 1, {{"s0", 2}});
    ASSERT_TRUE(inputs) << inputs.error().message();
    auto it = kept.find(model);
    checkDecomposition(*original, std::move(*copy), *inputs, 1e-4,
                       it == kept.end() ? std::multiset<std::string>{} : it->second);
  }
}

TEST(Decompose, OneDConvolutionsBecomeTwoD) {
  const char *text = R"(graph(%x: f32[s0, 4, 19], %w: f32[6, 2, 3], %b: f32[6]):
  %a : f32[s0, 6, 10] = call_function[target=aten.convolution](args=(%x, %w, %b, [2], [1], [1], False, [0], 2))
  return (%a,))";
  Expected<Graph> graph = fx::parseFx(text, registry(), "conv1d.fx");
  ASSERT_TRUE(graph) << graph.error().message();
  Status status = decompose(*graph, PassContext{registry()});
  ASSERT_TRUE(status) << status.message();
  int convolutions = 0;
  for (const auto &node : graph->nodes())
    if (node->op().name == "aten.convolution") {
      ++convolutions;
      EXPECT_EQ(node->input(0)->type().rank(), 4u) << printGraph(*graph);
      EXPECT_EQ(node->input(1)->type().rank(), 4u) << printGraph(*graph);
    }
  EXPECT_EQ(convolutions, 1);
}

TEST(Decompose, NaNsPropagateThroughClamp) {
  const char *text = R"(graph(%x: f32[5]):
  %a : f32[5] = call_function[target=aten.clamp](args=(%x, -1.0, 1.0))
  %b : f32[5] = call_function[target=aten.clamp](args=(%x, nan))
  %c : f32[5] = call_function[target=aten.clamp](args=(%x, None, nan))
  return (%a, %b, %c))";
  Expected<Graph> original = fx::parseFx(text, registry(), "nan.fx");
  ASSERT_TRUE(original) << original.error().message();
  Expected<Graph> copy = fx::parseFx(text, registry(), "nan.fx");
  ASSERT_TRUE(copy) << copy.error().message();
  Tensor x = test::makeTensor(DType::F32, {5}, {NAN, -2.0, 0.5, 3.0, -INFINITY});
  checkDecomposition(*original, std::move(*copy), {x}, 0.0, {});
}

// 0-d constants promote weakly, so the f32 scalars a rule emits keep an f16 tensor f16.
TEST(Decompose, ScalarConstantsKeepHalfTensorsHalf) {
  TensorType half(DType::F16, {SymInt(4)});
  for (DType scalar : {DType::F32, DType::F64}) {
    TensorType zeroDim(scalar, {});
    EXPECT_EQ(ops::resultType({&half, &zeroDim}), DType::F16) << dtypeName(scalar);
  }
  const char *text = R"(graph(%x: f16[4]):
  %y : f16[4] = call_function[target=aten.gelu](args=(%x,))
  return (%y,))";
  Expected<Graph> graph = fx::parseFx(text, registry(), "half.fx");
  ASSERT_TRUE(graph) << graph.error().message();
  ASSERT_TRUE(decompose(*graph, PassContext{registry()}));
  size_t constants = 0;
  for (const auto &node : graph->nodes()) {
    if (node->opId() == OpId::Constant) {
      ++constants;
      EXPECT_EQ(node->output()->type().str(), "f32[]");
    } else {
      EXPECT_EQ(node->output()->type().dtype, DType::F16) << node->describe();
    }
  }
  EXPECT_EQ(constants, 3u);
}

TEST(Decompose, GraphWithoutRulesIsUntouched) {
  const char *text = R"(graph(%x: f32[s0, 4]):
  %y : f32[s0, 4] = call_function[target=aten.relu](args=(%x,))
  %z : f32[4] = call_function[target=aten.mean](args=(%y, [0]))
  return (%z,))";
  Expected<Graph> graph = fx::parseFx(text, registry(), "plain.fx");
  ASSERT_TRUE(graph) << graph.error().message();
  std::string before = printGraph(*graph);
  ASSERT_TRUE(decompose(*graph, PassContext{registry()}));
  EXPECT_EQ(printGraph(*graph), before);
}

/// A registry whose aten.neg "decomposes" into itself.
const OpRegistry &loopingRegistry() {
  static const OpRegistry instance = [] {
    OpRegistry built;
    for (const auto &def : registry().all()) {
      OpDef copy = *def;
      if (copy.id == OpId::Neg)
        copy.decompose =
            [](RewriteContext &rewrite,
               const OpRegistry &ops) -> Expected<std::optional<std::vector<Value *>>> {
          Expected<Value *> again = rewrite.emit(*ops.get(OpId::Neg), {rewrite.operand(0)});
          if (!again)
            return again.takeError();
          return std::optional<std::vector<Value *>>(std::vector<Value *>{*again});
        };
      Status added = built.add(std::move(copy));
      EXPECT_TRUE(added);
    }
    return built;
  }();
  return instance;
}

TEST(Decompose, RuleThatNeverFinishesIsAnErrorNamingTheOp) {
  const char *text = R"(graph(%x: f32[4]):
  %y : f32[4] = call_function[target=aten.neg](args=(%x,))
  return (%y,))";
  Expected<Graph> graph = fx::parseFx(text, loopingRegistry(), "loop.fx");
  ASSERT_TRUE(graph) << graph.error().message();
  Status status = decompose(*graph, PassContext{loopingRegistry()});
  ASSERT_FALSE(status);
  EXPECT_NE(status.message().find("did not converge"), std::string::npos) << status.message();
  EXPECT_NE(status.message().find("aten.neg"), std::string::npos) << status.message();
}

} // namespace
} // namespace tensorc
