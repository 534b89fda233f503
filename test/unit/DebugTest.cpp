// Tests of the debugging tools' parts: comparisons and tolerances, the limit search, the
// runtime's launch observer (what bisect reads and writes between launches) and its profiler.
#include "tensorc/Debug/Bisect.h"
#include "tensorc/Debug/Compare.h"
#include "tensorc/Debug/Minify.h"
#include "tensorc/Frontend/FX/FxParser.h"
#include "tensorc/Interp/Interpreter.h"
#include "tensorc/Ops/Registry.h"
#include "tensorc/Pipeline/Compile.h"
#include "tensorc/Runtime/Model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <unistd.h>

using namespace tensorc;
namespace fs = std::filesystem;

namespace {

Tensor f32(std::vector<int64_t> shape, const std::vector<double> &values) {
  Tensor tensor = Tensor::zerosUnchecked(DType::F32, std::move(shape));
  for (size_t i = 0; i < values.size(); ++i)
    tensor.setDouble(int64_t(i), values[i]);
  return tensor;
}

TEST(DebugCompare, ToleranceFollowsTheDtype) {
  EXPECT_EQ(debug::toleranceFor(DType::F32).rtol, 1e-3);
  EXPECT_EQ(debug::toleranceFor(DType::F32).atol, 1e-5);
  EXPECT_EQ(debug::toleranceFor(DType::F16).rtol, 2e-2);
  EXPECT_EQ(debug::toleranceFor(DType::BF16).atol, 1e-3);
  EXPECT_EQ(debug::toleranceFor(DType::I64).rtol, 0.0);
}

TEST(DebugCompare, NamesTheWorstElement) {
  Tensor expected = f32({2, 3}, {0, 1, 2, 3, 4, 5});
  Tensor actual = f32({2, 3}, {0, 1.0005, 2, 3.5, 4, 7});
  debug::Comparison comparison = debug::compareTensors(expected, actual);
  EXPECT_FALSE(comparison.matches);
  // 1.0005 is within 1e-5 + 1e-3 * 1; 3.5 and 7 are not, 7 by more.
  EXPECT_EQ(comparison.mismatched, 2);
  EXPECT_EQ(comparison.worst, 5);
  EXPECT_EQ(comparison.expected, 5.0);
  EXPECT_EQ(comparison.actual, 7.0);
  EXPECT_EQ(debug::formatIndex({2, 3}, comparison.worst), "[1, 2]");
  EXPECT_NE(debug::describeComparison(comparison, {2, 3}).find("element [1, 2] is 7, expected 5"),
            std::string::npos);
}

TEST(DebugCompare, NanMatchesNanOnly) {
  double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_TRUE(debug::compareTensors(f32({2}, {nan, 1}), f32({2}, {nan, 1})).matches);
  debug::Comparison comparison = debug::compareTensors(f32({2}, {nan, 1}), f32({2}, {0, 1}));
  EXPECT_FALSE(comparison.matches);
  EXPECT_EQ(comparison.worst, 0);
  double inf = std::numeric_limits<double>::infinity();
  EXPECT_TRUE(debug::compareTensors(f32({1}, {inf}), f32({1}, {inf})).matches);
  EXPECT_FALSE(debug::compareTensors(f32({1}, {inf}), f32({1}, {-inf})).matches);
}

TEST(DebugCompare, ShapeAndDtypeMismatches) {
  debug::Comparison comparison = debug::compareTensors(f32({2}, {1, 2}), f32({1, 2}, {1, 2}));
  EXPECT_FALSE(comparison.matches);
  EXPECT_EQ(comparison.problem, "is f32[1, 2], expected f32[2]");
}

TEST(DebugBisect, FirstFailingLimitIsASmallestFailure) {
  for (int64_t culprit = 1; culprit <= 37; ++culprit) {
    int calls = 0;
    Expected<int64_t> found = debug::firstFailingLimit(0, 37, [&](int64_t k) -> Expected<bool> {
      ++calls;
      return k >= culprit;
    });
    ASSERT_TRUE(found.hasValue());
    EXPECT_EQ(*found, culprit);
    EXPECT_LE(calls, 6); // ceil(log2(37))
  }
  EXPECT_FALSE(debug::firstFailingLimit(3, 3, [](int64_t) -> Expected<bool> { return true; }));
  Expected<int64_t> failed = debug::firstFailingLimit(
      0, 8, [](int64_t) -> Expected<bool> { return makeError("compile broke"); });
  ASSERT_FALSE(failed.hasValue());
  EXPECT_EQ(failed.error().message(), "compile broke");
}

TEST(DebugMinify, FailureSignatureIsTheInnermostCauseWithoutDigits) {
  EXPECT_EQ(debug::failureSignature("m.fx: code generation of kernel poi_fused_relu_3 failed: "
                                    "injected bug (TENSORC_INJECT_BUG=relu:compile-error)"),
            "injected bug (TENSORC_INJECT_BUG=relu:compile-error)");
  EXPECT_EQ(debug::failureSignature("killed by signal 11 (Segmentation fault)"),
            "killed by signal # (Segmentation fault)");
  EXPECT_EQ(debug::failureSignature("a: b 12 and 345"), "b # and #");
}

/// A small model compiled into a temporary bundle, one kernel per node (y = exp(tanh(2x)) is
/// costly enough to get a buffer its two users read): y, then s = sum(y) and z = 3y.
class DebugCompiledModel : public ::testing::Test {
protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tensorc-debug-test-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    std::string model = (dir_ / "m.fx").string();
    std::ofstream(model) << kModel;
    Expected<OpRegistry> registry = ops::buildCoreRegistry();
    ASSERT_TRUE(registry.hasValue());
    Expected<Graph> graph = fx::parseFx(kModel, *registry);
    ASSERT_TRUE(graph.hasValue()) << graph.error().message();
    CompileOptions options;
    options.outDir = (dir_ / "bundle").string();
    options.quiet = true;
    options.limits.maxFusions = 0; // one kernel per node: launches to observe between
    Expected<CompileSummary> summary = compileModel(model, *registry, options);
    ASSERT_TRUE(summary.hasValue()) << summary.error().message();
    rt::LoadOptions load;
    load.threads = 3;
    Expected<std::unique_ptr<rt::Model>> loaded = rt::Model::load(options.outDir, load);
    ASSERT_TRUE(loaded.hasValue()) << loaded.error().message();
    model_ = std::move(*loaded);
    input_ = Tensor::zerosUnchecked(DType::F32, {8, 4096});
    for (int64_t i = 0; i < input_.numel(); ++i)
      input_.setDouble(i, double(i % 7) / 4.0 - 0.75);
    // The interpreter's y, the oracle for what the kernel writes.
    Expected<std::vector<Tensor>> reference =
        interp::interpret(*graph, {input_}, {}, [&](const Value &value, const Tensor &tensor) {
          if (value.name() == "y")
            expectedY_ = tensor;
        });
    ASSERT_TRUE(reference.hasValue()) << reference.error().message();
  }

  static constexpr const char *kModel =
      "graph(%x: f32[s0, 4096]):\n"
      "  %a : f32[s0, 4096] = call_function[target=aten.mul](args=(%x, 2.0))\n"
      "  %b : f32[s0, 4096] = call_function[target=aten.tanh](args=(%a,))\n"
      "  %y : f32[s0, 4096] = call_function[target=aten.exp](args=(%b,))\n"
      "  %s : f32[s0] = call_function[target=aten.sum](args=(%y, [1]))\n"
      "  %z : f32[s0, 4096] = call_function[target=aten.mul](args=(%y, 3.0))\n"
      "  return (%s, %z)\n";
  void TearDown() override { fs::remove_all(dir_); }

  int64_t bufferNamed(const std::string &name) const {
    for (const bundle::BufferDesc &buffer : model_->manifest().buffers)
      if (buffer.name == name)
        return buffer.id;
    return -1;
  }

  fs::path dir_;
  std::unique_ptr<rt::Model> model_;
  Tensor input_, expectedY_;
};

/// Records each launch's written buffer and can overwrite one buffer before a launch.
class Recorder : public rt::LaunchObserver {
public:
  std::map<size_t, std::vector<Tensor>> after;
  int64_t overwrite = -1; // buffer id written before the launch reading it
  Tensor value;
  Status lastWriteError = Status::ok();
  int64_t readOnly = -1;

  Status beforeLaunch(size_t, rt::BufferAccess &buffers) override {
    if (readOnly >= 0)
      lastWriteError = buffers.write(readOnly, value);
    if (overwrite >= 0)
      return buffers.write(overwrite, value);
    return Status::ok();
  }
  Status afterLaunch(size_t launch, rt::BufferAccess &buffers) override {
    for (int64_t arg : manifest->launches[launch].args) {
      Expected<Tensor> tensor = buffers.read(arg);
      if (!tensor)
        return tensor.takeError();
      after[launch].push_back(*tensor);
    }
    return Status::ok();
  }
  const bundle::Manifest *manifest = nullptr;
};

TEST_F(DebugCompiledModel, ObserverReadsWhatEachLaunchWrote) {
  Recorder recorder;
  recorder.manifest = &model_->manifest();
  model_->setLaunchObserver(&recorder);
  Expected<std::vector<Tensor>> outputs = model_->run({input_});
  ASSERT_TRUE(outputs.hasValue()) << outputs.error().message();
  int64_t y = bufferNamed("y");
  ASSERT_GE(y, 0);
  // y as read after each launch that has it as an argument: the interpreter's y.
  int seen = 0;
  for (const auto &[launch, tensors] : recorder.after) {
    const std::vector<int64_t> &args = model_->manifest().launches[launch].args;
    for (size_t a = 0; a < args.size(); ++a) {
      if (args[a] != y)
        continue;
      ++seen;
      debug::Comparison comparison = debug::compareTensors(expectedY_, tensors[a]);
      EXPECT_TRUE(comparison.matches) << debug::describeComparison(comparison, {8, 4096});
    }
  }
  EXPECT_EQ(seen, 3); // written by one launch, read by two
}

TEST_F(DebugCompiledModel, ObserverWritesFeedTheNextLaunch) {
  // Overwrite y with ones after its launch: s = sum(y) and z = 3y follow the written value.
  int64_t y = bufferNamed("y");
  // y is written by its own launch: overwrite it only for the launches after that one.
  class AfterProducer : public Recorder {
  public:
    int64_t target = -1;
    size_t producer = 0;
    Status beforeLaunch(size_t launch, rt::BufferAccess &buffers) override {
      if (launch > producer)
        return buffers.write(target, value);
      return Status::ok();
    }
  } writer;
  writer.manifest = &model_->manifest();
  writer.target = y;
  for (size_t i = 0; i < model_->manifest().launches.size(); ++i)
    if (model_->manifest().launches[i].name.find("exp") != std::string::npos)
      writer.producer = i;
  writer.value = Tensor::zerosUnchecked(DType::F32, {8, 4096});
  for (int64_t i = 0; i < writer.value.numel(); ++i)
    writer.value.setDouble(i, 1.0);
  model_->setLaunchObserver(&writer);
  Expected<std::vector<Tensor>> outputs = model_->run({input_});
  ASSERT_TRUE(outputs.hasValue()) << outputs.error().message();
  const Tensor &s = (*outputs)[0], &z = (*outputs)[1];
  for (int64_t i = 0; i < s.numel(); ++i)
    EXPECT_EQ(s.getDouble(i), 4096.0);
  for (int64_t i = 0; i < z.numel(); ++i)
    ASSERT_EQ(z.getDouble(i), 3.0);
  // Without the observer the model computes from x again.
  model_->setLaunchObserver(nullptr);
  outputs = model_->run({input_});
  ASSERT_TRUE(outputs.hasValue());
  EXPECT_NEAR((*outputs)[1].getDouble(0), 3.0 * expectedY_.getDouble(0), 1e-5);
}

TEST_F(DebugCompiledModel, ObserverCannotWriteInputs) {
  Recorder recorder;
  recorder.manifest = &model_->manifest();
  recorder.readOnly = bufferNamed("x");
  recorder.value = input_;
  model_->setLaunchObserver(&recorder);
  ASSERT_TRUE(model_->run({input_}).hasValue());
  ASSERT_FALSE(recorder.lastWriteError.isOk());
  EXPECT_NE(recorder.lastWriteError.message().find("'x' is read-only"), std::string::npos);
}

TEST_F(DebugCompiledModel, ProfilerChunksTileEachLaunch) {
  rt::Profiler profiler;
  model_->setProfiler(&profiler);
  ASSERT_TRUE(model_->run({input_}).hasValue());
  ASSERT_TRUE(model_->run({input_}).hasValue());
  model_->setProfiler(nullptr);
  ASSERT_EQ(profiler.runs().size(), 2u);
  EXPECT_EQ(profiler.runs()[0].bindings.at("s0"), 8);
  const bundle::Manifest &manifest = model_->manifest();
  std::map<std::pair<int64_t, size_t>, int64_t> covered;
  for (const rt::ProfileEvent &event : profiler.events()) {
    std::pair<int64_t, size_t> key{event.run, event.launch};
    EXPECT_EQ(event.begin, covered[key]) << manifest.launches[event.launch].name;
    covered[key] = event.end;
    EXPECT_GE(event.durationUs, 0.0);
    EXPECT_LT(event.thread, 3);
  }
  for (int64_t run = 0; run < 2; ++run)
    for (size_t i = 0; i < manifest.launches.size(); ++i) {
      const bundle::Launch &launch = manifest.launches[i];
      int64_t range = launch.kind == bundle::LaunchKind::Kernel
                          ? launch.range.evaluate({{"s0", 8}}).value()
                          : 1;
      EXPECT_EQ(covered[std::make_pair(run, i)], range) << launch.name;
    }
}

} // namespace
