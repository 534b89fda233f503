// LoopIR text: parse(print(p)) == p and print(parse(print(p))) == print(p) for the loop IR of every
// model in models/ and every lit case (CPU and CUDA lowering, inference and training), each
// program verified; hand-written text parses with implied literal dtypes and gathers.
#include "OpTestUtil.h"
#include "tensorc/Lowering/LoopParser.h"
#include "tensorc/Lowering/LoopVerifier.h"
#include "tensorc/Pipeline/Pipeline.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <regex>
#include <sstream>

namespace tensorc::loop {
namespace {

using test::registry;

void expectRoundTrip(const LoopProgram &program, const std::string &name) {
  ASSERT_TRUE(verifyProgram(program)) << verifyProgram(program).message();
  std::string text = printProgram(program);
  Expected<LoopProgram> parsed = parseProgram(text, name, program.weights);
  ASSERT_TRUE(parsed) << parsed.error().message() << "\n" << text;
  std::string difference;
  EXPECT_TRUE(equalPrograms(program, *parsed, &difference)) << name << ": " << difference;
  EXPECT_EQ(printProgram(*parsed), text) << name;
}

/// The loop IR of `model` as `compile --target` would lower it (nullopt when the model does not
/// get that far: the invalid-input lit cases).
std::optional<LoopProgram> lowerModel(const std::string &model, const std::string &targets,
                                      bool train) {
  Expected<TargetSet> set = parseTargets(targets);
  Expected<PipelineOptions> options = pipelineOptionsFor(*set, std::nullopt, train);
  if (!options)
    return std::nullopt;
  if (train)
    options->train = autodiff::TrainOptions{};
  Expected<Graph> graph = runPipeline(model, registry(), *options);
  if (!graph)
    return std::nullopt;
  options->stopAfter = "lower";
  Expected<LoweredModel> lowered = lowerAndSchedule(*graph, *options);
  if (!lowered)
    return std::nullopt;
  return std::move(lowered->program);
}

/// models/*.fx and *.onnx, and every case of test/lit/*.fx written to its own file.
std::vector<std::string> modelsAndLitCases(const std::string &scratch) {
  std::vector<std::string> paths;
  for (const auto &entry : std::filesystem::directory_iterator(TENSORC_SOURCE_DIR "/models"))
    if (entry.path().extension() == ".fx" || entry.path().extension() == ".onnx")
      paths.push_back(entry.path().string());
  std::filesystem::create_directories(scratch);
  for (const auto &entry : std::filesystem::directory_iterator(TENSORC_SOURCE_DIR "/test/lit")) {
    if (entry.path().extension() != ".fx")
      continue;
    std::ifstream file(entry.path());
    std::stringstream text;
    text << file.rdbuf();
    std::string all = text.str();
    std::regex separator("^# -----[ \t]*$", std::regex::multiline);
    int index = 0;
    for (std::sregex_token_iterator it(all.begin(), all.end(), separator, -1), end; it != end;
         ++it) {
      std::string path =
          scratch + "/" + entry.path().stem().string() + "_" + std::to_string(index++) + ".fx";
      std::ofstream(path) << it->str();
      paths.push_back(path);
    }
  }
  std::sort(paths.begin(), paths.end());
  return paths;
}

TEST(LoopIRRoundTrip, EveryModelAndLitCaseForEachTarget) {
  std::string scratch = std::filesystem::temp_directory_path().string() + "/tensorc-loop-rt-" +
                        std::to_string(::getpid());
  size_t programs = 0;
  for (const std::string &path : modelsAndLitCases(scratch)) {
    for (const char *targets : {"cpu", "cuda"}) {
      for (bool train : {false, true}) {
        SCOPED_TRACE(path + " --target " + targets + (train ? " --train" : ""));
        std::optional<LoopProgram> program = lowerModel(path, targets, train);
        if (!program)
          continue;
        expectRoundTrip(*program, path);
        ++programs;
      }
    }
  }
  std::filesystem::remove_all(scratch);
  // The seed models on both targets, with and without training, and most lit cases.
  EXPECT_GE(programs, 100u);
}

TEST(LoopIRParser, ReadsHandWrittenTextWithImpliedDtypes) {
  const char *text = R"(
# a comment, and blank lines, are skipped

input x : f32[s0, 4]
input i : i64[s0]
weight w : f32[4] data=[0.5, -1, 2.25, nan]
buffer y : f32[s0, 4]
buffer g : f32[s0]
pointwise y over [s0, 4] origins=[add, relu]
      a : f32 = load(x, 4*x0 + x1)
      b : f32 = load(w, x1)
      c : f32 = add(a, 1.5)
      big : bool = gt(c, b)
      d : f32 = where(big, c, 0)
      -> d
pointwise g over [s0] origins=[gather]
      j : i64 = load(i, x0)
      k : i64 = minimum(j, 3)
      -> load(x, 4*x0 + k)
outputs (y, g)
)";
  // The root of `g` is not a temporary: a gather needs its own line.
  Expected<LoopProgram> bad = parseProgram(text, "t.loop");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message().find("t.loop:19:10: error: unknown temporary 'load'"),
            std::string::npos)
      << bad.error().message();
  std::string fixed =
      std::regex_replace(std::string(text), std::regex("      -> load\\(x, 4\\*x0 \\+ k\\)"),
                         "      v : f32 = load(x, 4*x0 + k)\n      -> v");
  Expected<LoopProgram> program = parseProgram(fixed, "t.loop");
  ASSERT_TRUE(program) << program.error().message();
  EXPECT_EQ(program->symbols, std::vector<std::string>{"s0"});
  EXPECT_EQ(program->buffers[1].inputIndex, 1);
  const ExprRef &body = program->nodes[0].body; // where(gt(add(x, 1.5), w), ., 0)
  ASSERT_EQ(body->kind, ExprKind::Select);
  EXPECT_EQ(body->operands[2]->kind, ExprKind::Constant);
  EXPECT_EQ(body->operands[2]->dtype, DType::F32);
  EXPECT_EQ(body->operands[0]->operands[0]->operands[1]->value, 1.5);
  const ExprRef &gather = program->nodes[1].body;
  ASSERT_EQ(gather->kind, ExprKind::IndirectLoad);
  EXPECT_EQ(gather->index, SymInt(4) * SymInt::symbol("x0"));
  EXPECT_EQ(gather->operands[0]->binary, BinaryOp::Minimum);
  EXPECT_TRUE(std::isnan(program->weights.at("w").getDouble(3)));
  EXPECT_EQ(program->nodes[0].origins, (std::vector<std::string>{"add", "relu"}));
  expectRoundTrip(*program, "t.loop");
}

TEST(LoopIRParser, ErrorsNameLineColumnAndToken) {
  struct Case {
    const char *text, *message;
  };
  const Case cases[] = {
      {"input x : f32[4]\nbuffer y : f32[4]\npointwise y over [4]\n  a : f32 = frob(x)\n  -> a\n"
       "outputs (y)\n",
       "bad.loop:4:13: error: unknown operation 'frob' (at 'frob')"},
      {"input x : f32[4]\nbuffer y : f32[4]\npointwise y over [4]\n  a : f32 = load(z, x0)\n"
       "  -> a\noutputs (y)\n",
       "bad.loop:4:18: error: unknown buffer 'z' (at 'z')"},
      {"input x : i32[4]\nbuffer y : f32[4]\npointwise y over [4]\n  a : i32 = load(x, x0)\n"
       "  b : bool = lt(1, 2)\n  -> a\noutputs (y)\n",
       "bad.loop:5:17: error: this number needs its dtype, as in 1:f32 (at '1')"},
      {"input x : f32[4]\nweight w : f32[8] data=fnv1a64:0123456789abcdef\noutputs (x)\n",
       "weight 'w' (fnv1a64:0123456789abcdef) has no data"},
      {"input x : f32[4]\nbuffer y : f32[4]\n", "bad.loop: no outputs line"},
  };
  for (const Case &c : cases) {
    Expected<LoopProgram> program = parseProgram(c.text, "bad.loop");
    ASSERT_FALSE(program) << c.text;
    EXPECT_NE(program.error().message().find(c.message), std::string::npos)
        << program.error().message();
  }
}

TEST(LoopIRVerifier, RejectsWhatLoweringNeverProduces) {
  struct Case {
    const char *text, *message;
  };
  // Each parses, then fails verification with a message naming the node.
  const Case cases[] = {
      {"input x : f32[4]\nbuffer y : f32[4]\npointwise y over [4]\n  a : f32 = load(x, x0 + 1)\n"
       "  -> a\noutputs (y)\n",
       "node 0 (y): loads x at x0 + 1, in [1, 4], outside its 4 elements"},
      {"input x : f32[4]\nbuffer y : f32[4]\npointwise y over [4]\n  a : f32 = load(x, r0)\n"
       "  -> a\noutputs (y)\n",
       "uses 'r0', which is not a loop variable of the node or a shape symbol"},
      {"input x : f32[4]\nbuffer y : f32[4]\nbuffer z : f32[4]\npointwise y over [4]\n"
       "  a : f32 = load(z, x0)\n  -> a\npointwise z over [4]\n  a : f32 = load(x, x0)\n"
       "  -> a\noutputs (y)\n",
       "node 0 (y): reads z before any node writes it"},
      {"input x : f32[4]\nbuffer y : f32[2, 4]\npointwise y over [4]\n  a : f32 = load(x, x0)\n"
       "  -> a\noutputs (y)\n",
       "ranges [4] do not cover its output y[2, 4]"},
      {"input x : f32[4]\nbuffer y : i32[4]\npointwise y over [4]\n  a : f32 = load(x, x0)\n"
       "  -> a\noutputs (y)\n",
       "body of dtype f32 for an output of i32"},
      {"input x : f32[s0, 4]\ninput w : f32[4, 8]\nbuffer y : f32[s0, 8]\n"
       "template gemm y batch=1 m=s0 n=8 k=4\n  a = x offset 0 strides [0, 4, 1]\n"
       "  b = w offset 0 strides [0, 8, 2]\noutputs (y)\n",
       "gemm operand b reads w in [0, 38], outside its 32 elements"},
  };
  for (const Case &c : cases) {
    Expected<LoopProgram> program = parseProgram(c.text, "bad.loop");
    ASSERT_FALSE(program) << c.text;
    EXPECT_NE(program.error().message().find(c.message), std::string::npos)
        << program.error().message();
  }
}

} // namespace
} // namespace tensorc::loop
