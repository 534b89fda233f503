// Convolution (and unit-dim GEMM) templates end to end below the bundle: FX text -> lower ->
// schedule -> CPU kernels run in launch order, compared with the reference interpreter.
#include "tensorc/Codegen/CPU/CpuCodegen.h"

#include "tensorc/Codegen/CPU/PackGemmWeights.h"

#include "tensorc/Bundle/Manifest.h"
#include "tensorc/Frontend/FX/FxParser.h"
#include "tensorc/Interp/Interpreter.h"
#include "tensorc/Lowering/LoopParser.h"
#include "tensorc/Lowering/Lower.h"
#include "tensorc/Ops/Registry.h"
#include "tensorc/Scheduler/Schedule.h"

#include <gtest/gtest.h>

#include <dlfcn.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>

namespace tensorc::cpu {
namespace {

CpuTarget hostTarget() {
  auto targets = targetsForArch("x86_64");
  EXPECT_TRUE(targets.hasValue());
  return targets->front(); // the AVX2 baseline runs on every x86-64 test machine
}

/// A compiled graph: the lowered program, its schedule and the dlopen'ed kernels.
struct Compiled {
  loop::LoopProgram program;
  sched::Schedule schedule;
  void *handle = nullptr;
  ~Compiled() {
    if (handle)
      dlclose(handle);
  }
};

/// `channelsLast`: as a CPU-only inference compile lowers, schedules and packs it (convolutions
/// with constant weights channels-last, weights packed, NHWC kept between them, in-place
/// epilogues planned).
std::unique_ptr<Compiled> compileGraph(const Graph &graph, bool channelsLast = false) {
  auto compiled = std::make_unique<Compiled>();
  loop::LowerOptions options;
  options.channelsLastConv = channelsLast;
  options.channelsLastNeedsConstantWeights = channelsLast;
  options.channelsLastWindows = channelsLast;
  auto program = loop::lower(graph, options);
  EXPECT_TRUE(program.hasValue()) << program.error().message();
  compiled->program = std::move(*program);
  sched::ScheduleOptions scheduling;
  if (channelsLast)
    scheduling.writesOutputOnce = templateWritesOutputOnce;
  auto schedule = sched::schedule(compiled->program, scheduling);
  EXPECT_TRUE(schedule.hasValue()) << schedule.error().message();
  compiled->schedule = std::move(*schedule);
  if (channelsLast) {
    auto packed = packConvTemplates(compiled->program, compiled->schedule);
    EXPECT_TRUE(packed.hasValue()) << packed.error().message();
    EXPECT_GT(packed ? *packed : 0, 0) << "no convolution was packed";
  }
  auto kernels = compileKernels(compiled->program, compiled->schedule, hostTarget(), {});
  EXPECT_TRUE(kernels.hasValue()) << kernels.error().message();
  if (!kernels)
    return compiled;
  char path[] = "/tmp/tensorc-convtest-XXXXXX";
  int fd = mkstemp(path);
  EXPECT_GE(fd, 0);
  EXPECT_EQ(write(fd, kernels->sharedObject.data(), kernels->sharedObject.size()),
            ssize_t(kernels->sharedObject.size()));
  close(fd);
  compiled->handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  std::remove(path);
  EXPECT_NE(compiled->handle, nullptr) << dlerror();
  return compiled;
}

/// Runs every kernel of `c` in order (each range in two calls) with one allocation per buffer,
/// or with `arena` the intermediate buffers at their planned offsets in one arena (as the runtime
/// places them: buffers that share memory overwrite each other); returns the graph outputs.
std::vector<std::vector<float>> runCompiled(Compiled &c, const std::vector<Tensor> &inputs,
                                            const SymbolBindings &symbols, int reps = 1,
                                            double *secondsPerRun = nullptr, bool arena = false) {
  std::vector<std::vector<float>> memory(c.program.buffers.size());
  std::vector<float> arenaMemory(arena ? size_t(*c.schedule.plan.arenaBytes.evaluate(symbols)) / 4
                                       : 0,
                                 std::nanf(""));
  std::set<int> outputs(c.program.outputs.begin(), c.program.outputs.end());
  auto inArena = [&](const loop::Buffer &buffer) {
    return arena && buffer.kind == loop::Buffer::Kind::Intermediate && !outputs.count(buffer.id);
  };
  std::vector<int64_t> syms;
  for (const std::string &symbol : c.program.symbols)
    syms.push_back(symbols.at(symbol));
  for (const loop::Buffer &buffer : c.program.buffers) {
    EXPECT_EQ(buffer.dtype, DType::F32) << buffer.name;
    size_t numel = size_t(*buffer.numel().evaluate(symbols));
    std::vector<float> &data = memory[size_t(buffer.id)];
    data.assign(numel, std::nanf(""));
    if (buffer.kind == loop::Buffer::Kind::Input) {
      const Tensor &input = inputs[size_t(buffer.inputIndex)];
      data.assign(input.dataAs<float>(), input.dataAs<float>() + numel);
    }
    if (buffer.kind == loop::Buffer::Kind::Weight) {
      // A weight with no data is one no kernel reads (replaced by its dense or packed copy).
      auto weight = c.program.weights.find(buffer.name);
      if (weight == c.program.weights.end())
        continue;
      EXPECT_EQ(weight->second.numel(), int64_t(numel)) << buffer.name;
      data.assign(weight->second.dataAs<float>(),
                  weight->second.dataAs<float>() + weight->second.numel());
    }
  }
  auto start = std::chrono::steady_clock::now();
  for (int rep = 0; rep < reps; ++rep)
    for (const sched::Kernel &kernel : c.schedule.kernels) {
      EXPECT_NE(kernel.kind, sched::Kernel::Kind::Extern) << kernel.name;
      if (kernel.kind == sched::Kernel::Kind::Extern || !c.handle)
        continue;
      SymInt range(1);
      if (kernel.kind == sched::Kernel::Kind::Template)
        range = sched::templateTileCount(c.program.nodes[size_t(kernel.nodes[0])]);
      else
        for (const SymInt &dim : kernel.outerRanges)
          range = range * dim;
      int64_t count = *range.evaluate(symbols);
      std::vector<void *> args;
      for (int id : kernel.args)
        args.push_back(inArena(c.program.buffers[size_t(id)])
                           ? arenaMemory.data() +
                                 *c.schedule.plan.offsets[size_t(id)].evaluate(symbols) / 4
                           : memory[size_t(id)].data());
      auto fn = reinterpret_cast<bundle::TensorcKernelFn>(dlsym(c.handle, kernel.name.c_str()));
      EXPECT_NE(fn, nullptr) << kernel.name;
      if (!fn)
        continue;
      // Two calls split off the images' boundaries (a call's range may span several images).
      fn(args.data(), syms.data(), 0, count / 3);
      fn(args.data(), syms.data(), count / 3, count);
    }
  if (secondsPerRun)
    *secondsPerRun =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / reps;
  std::vector<std::vector<float>> results;
  for (int id : c.program.outputs)
    results.push_back(memory[size_t(id)]);
  return results;
}

Tensor filled(std::vector<int64_t> shape, int seed) {
  Tensor t = Tensor::zerosUnchecked(DType::F32, std::move(shape));
  float *data = t.mutableDataAs<float>();
  for (int64_t i = 0; i < t.numel(); ++i)
    data[i] = float(int((i * 7 + seed * 13) % 23) - 11) * 0.0625f;
  return t;
}

struct Case {
  std::string fx;
  std::vector<std::vector<int64_t>> inputShapes; // concrete, symbols bound below
  SymbolBindings symbols;
  std::string expectKernel; // a substring of some kernel name
  /// Channels-last (the CPU inference path): these inputs (by index) become constant weights.
  bool channelsLast = false;
  std::set<size_t> constants;
  /// Run with the planned arena (runCompiled's `arena`).
  bool arena = false;
};

/// Compiles and runs `fx`, compares every output with the interpreter; returns the compiled
/// program (its schedule text in `scheduleText`).
std::unique_ptr<Compiled> checkCompiled(const Case &test, std::string &scheduleText) {
  auto registry = ops::buildCoreRegistry();
  EXPECT_TRUE(registry.hasValue());
  auto graph = fx::parseFx(test.fx, *registry);
  EXPECT_TRUE(graph.hasValue()) << graph.error().message();
  if (!graph)
    return nullptr;
  std::vector<Tensor> inputs;
  for (size_t i = 0; i < test.inputShapes.size(); ++i) {
    Tensor value = filled(test.inputShapes[i], int(i));
    if (test.constants.count(i))
      graph->weights()[graph->inputs()[i]->name()] = std::move(value);
    else
      inputs.push_back(std::move(value));
  }
  auto expected = interp::interpret(*graph, inputs);
  EXPECT_TRUE(expected.hasValue()) << expected.error().message();
  std::unique_ptr<Compiled> compiled = compileGraph(*graph, test.channelsLast);
  std::string &text = scheduleText;
  text = sched::printSchedule(compiled->program, compiled->schedule);
  EXPECT_NE(text.find(test.expectKernel), std::string::npos) << text;
  if (test.channelsLast) {
    std::string loops = loop::printProgram(compiled->program);
    EXPECT_NE(loops.find("layout=nhwc tiles="), std::string::npos) << loops;
  }
  std::vector<std::vector<float>> outputs =
      runCompiled(*compiled, inputs, test.symbols, 1, nullptr, test.arena);
  if (!expected)
    return compiled;
  EXPECT_EQ(outputs.size(), expected->size());
  for (size_t o = 0; o < outputs.size() && o < expected->size(); ++o) {
    const Tensor &want = (*expected)[o];
    EXPECT_EQ(int64_t(outputs[o].size()), want.numel());
    int64_t bad = 0;
    for (int64_t i = 0; i < want.numel() && i < int64_t(outputs[o].size()); ++i) {
      float w = want.dataAs<float>()[i], got = outputs[o][size_t(i)];
      if (!(std::fabs(w - got) <= 1e-4f + 1e-4f * std::fabs(w)) && bad++ < 5)
        ADD_FAILURE() << "output " << o << " element " << i << ": got " << got << ", want " << w
                      << "\n"
                      << text;
    }
    EXPECT_EQ(bad, 0);
  }
  return compiled;
}

std::string check(const Case &test) {
  std::string text;
  checkCompiled(test, text);
  return text;
}

/// One conv (+ bias + relu) over input f32[s0, C, H, W] and weight [OC, C/groups, KH, KW].
Case convCase(int64_t n, int64_t c, int64_t h, int64_t w, int64_t oc, int64_t k, int64_t stride,
              int64_t pad, int64_t dilation, int64_t groups, bool bias, bool relu) {
  int64_t oh = (h + 2 * pad - dilation * (k - 1) - 1) / stride + 1;
  int64_t ow = (w + 2 * pad - dilation * (k - 1) - 1) / stride + 1;
  auto dims = [](std::vector<std::string> d) {
    std::string out;
    for (size_t i = 0; i < d.size(); ++i)
      out += (i ? ", " : "") + d[i];
    return "f32[" + out + "]";
  };
  auto s = [](int64_t v) { return std::to_string(v); };
  auto pair = [&](int64_t v) { return "[" + s(v) + ", " + s(v) + "]"; };
  std::string in = dims({"s0", s(c), s(h), s(w)}), out = dims({"s0", s(oc), s(oh), s(ow)});
  std::string weight = dims({s(oc), s(c / groups), s(k), s(k)});
  Case test;
  test.fx = "graph(%x: " + in + ", %w: " + weight + (bias ? ", %b: f32[" + s(oc) + "]" : "") +
            "):\n  %y : " + out + " = call_function[target=aten.convolution](args=(%x, %w, " +
            (bias ? "%b" : "None") + ", " + pair(stride) + ", " + pair(pad) + ", " +
            pair(dilation) + ", False, [0, 0], " + s(groups) + "))\n";
  std::string result = "%y";
  if (relu) {
    test.fx += "  %r : " + out + " = call_function[target=aten.relu](args=(%y,))\n";
    result = "%r";
  }
  test.fx += "  return (" + result + ",)\n";
  test.inputShapes = {{n, c, h, w}, {oc, c / groups, k, k}};
  if (bias)
    test.inputShapes.push_back({oc});
  test.symbols = {{"s0", n}};
  test.expectKernel = "tem_convolution";
  return test;
}

TEST(ConvTemplate, Basic3x3BiasReluSymbolicBatch) {
  std::string text = check(convCase(2, 5, 11, 11, 7, 3, 1, 1, 1, 1, true, true));
  EXPECT_NE(text.find("tem_convolution_relu_0"), std::string::npos) << text;
  EXPECT_NE(text.find("# epilogue"), std::string::npos) << text;
}

TEST(ConvTemplate, Stride2Padding1NoBias) {
  check(convCase(3, 4, 13, 12, 6, 3, 2, 1, 1, 1, false, false));
}

TEST(ConvTemplate, Dilation2OddSizes) {
  check(convCase(2, 3, 13, 9, 5, 3, 1, 2, 2, 1, true, false));
}

TEST(ConvTemplate, Groups2) { check(convCase(2, 6, 10, 10, 4, 3, 1, 1, 1, 2, true, true)); }

TEST(ConvTemplate, Depthwise) { check(convCase(2, 8, 9, 9, 8, 3, 1, 1, 1, 8, true, true)); }

TEST(ConvTemplate, Pointwise1x1) { check(convCase(2, 16, 7, 7, 24, 1, 1, 0, 1, 1, true, false)); }

TEST(ConvTemplate, ManyTilesAndKBlocks) {
  // OC 100 > one row tile, 20*20 > one column tile, K = 32*9 > one packed depth.
  check(convCase(1, 32, 20, 20, 100, 3, 1, 1, 1, 1, true, true));
}

TEST(ConvTemplate, UnitOutputDims) {
  // OC = 1 and OH = 1: the epilogue's ranges drop them; the batch of 1 is symbolic here.
  check(convCase(1, 3, 5, 9, 1, 5, 1, 0, 1, 1, true, true));
}

TEST(ConvTemplate, ResidualAndConcreteBatchOfOne) {
  // Batch 1 (dropped from the epilogue's ranges) with a residual add read at the identity, and
  // a [W]-broadcast add that reads the column dims unflattened (per-lane epilogue path).
  Case test;
  test.fx = "graph(%x: f32[1, 8, 6, 10], %w: f32[8, 8, 3, 3], %b: f32[8], %row: f32[10]):\n"
            "  %y : f32[1, 8, 6, 10] = call_function[target=aten.convolution](args=(%x, %w, %b, "
            "[1, 1], [1, 1], [1, 1], False, [0, 0], 1))\n"
            "  %s : f32[1, 8, 6, 10] = call_function[target=aten.add](args=(%y, %x))\n"
            "  %t : f32[1, 8, 6, 10] = call_function[target=aten.add](args=(%s, %row))\n"
            "  %r : f32[1, 8, 6, 10] = call_function[target=aten.relu](args=(%t,))\n"
            "  return (%r,)\n";
  test.inputShapes = {{1, 8, 6, 10}, {8, 8, 3, 3}, {8}, {10}};
  test.expectKernel = "tem_convolution_add_relu_0";
  check(test);
}

TEST(ConvTemplate, ChainedConvolutions) {
  // The second conv reads the first one's epilogue output.
  Case test;
  test.fx = "graph(%x: f32[s0, 3, 9, 9], %w1: f32[6, 3, 3, 3], %w2: f32[4, 6, 1, 1]):\n"
            "  %y : f32[s0, 6, 9, 9] = call_function[target=aten.convolution](args=(%x, %w1, "
            "None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1))\n"
            "  %r : f32[s0, 6, 9, 9] = call_function[target=aten.relu](args=(%y,))\n"
            "  %z : f32[s0, 4, 9, 9] = call_function[target=aten.convolution](args=(%r, %w2, "
            "None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1))\n"
            "  return (%z,)\n";
  test.inputShapes = {{2, 3, 9, 9}, {6, 3, 3, 3}, {4, 6, 1, 1}};
  test.symbols = {{"s0", 2}};
  test.expectKernel = "tem_convolution_relu_0";
  check(test);
}

// ---- Channels-last (CPU inference: constant weights packed, NHWC kernels) -------------------

/// convCase with its weight (and bias) constant, compiled channels-last.
Case nhwcCase(int64_t n, int64_t c, int64_t h, int64_t w, int64_t oc, int64_t k, int64_t stride,
              int64_t pad, int64_t dilation, int64_t groups, bool bias, bool relu) {
  Case test = convCase(n, c, h, w, oc, k, stride, pad, dilation, groups, bias, relu);
  test.channelsLast = true;
  test.constants = {1};
  if (bias)
    test.constants.insert(2);
  return test;
}

TEST(ConvChannelsLast, Basic3x3BiasReluSymbolicBatch) {
  // The result is a graph output (NCHW): bias and relu run in its NHWC -> NCHW copy.
  check(nhwcCase(2, 5, 11, 11, 7, 3, 1, 1, 1, 1, true, true));
}

TEST(ConvChannelsLast, Stride2Padding1NoBias) {
  check(nhwcCase(3, 4, 13, 12, 6, 3, 2, 1, 1, 1, false, false));
}

TEST(ConvChannelsLast, Dilation2OddSizes) {
  check(nhwcCase(2, 3, 13, 9, 5, 3, 1, 2, 2, 1, true, false));
}

TEST(ConvChannelsLast, Groups) {
  check(nhwcCase(2, 6, 10, 10, 4, 3, 1, 1, 1, 2, true, true));
  // Odd group widths (3 channels in, 5 out per group), strided and padded.
  check(nhwcCase(1, 9, 11, 7, 15, 3, 2, 1, 1, 3, true, true));
}

TEST(ConvChannelsLast, Depthwise) {
  check(nhwcCase(2, 8, 9, 9, 8, 3, 1, 1, 1, 8, true, true));
  // Channel counts not multiples of the vector width, stride 2, 5x5, batch 3.
  check(nhwcCase(3, 37, 12, 10, 37, 5, 2, 2, 1, 37, true, true));
  check(nhwcCase(1, 72, 7, 7, 72, 3, 1, 1, 2, 72, false, false));
  // Width below the register block (3 output columns).
  check(nhwcCase(2, 40, 3, 3, 40, 3, 1, 1, 1, 40, true, false));
}

TEST(ConvChannelsLast, SmallGroupsRunChannelwise) {
  // Groups of 4 and 8 channels (ResNeXt) on the depthwise kernel, strided and not; the LoopIR
  // says so and reads back the same.
  for (const Case &test : {nhwcCase(2, 32, 9, 9, 32, 3, 1, 1, 1, 8, true, true),
                           nhwcCase(1, 64, 11, 10, 64, 3, 2, 1, 1, 8, false, true)}) {
    std::string text;
    std::unique_ptr<Compiled> compiled = checkCompiled(test, text);
    ASSERT_TRUE(compiled);
    std::string loops = loop::printProgram(compiled->program);
    EXPECT_NE(loops.find(" channelwise"), std::string::npos) << loops;
    auto parsed = loop::parseProgram(loops, "channelwise.loop", compiled->program.weights);
    ASSERT_TRUE(parsed.hasValue()) << parsed.error().message();
    std::string difference;
    EXPECT_TRUE(loop::equalPrograms(compiled->program, *parsed, &difference)) << difference;
  }
}

TEST(ConvChannelsLast, ChannelMultiplier) {
  // groups == C with two outputs per channel: a grouped convolution, not depthwise.
  check(nhwcCase(2, 6, 8, 8, 12, 3, 1, 1, 1, 6, true, true));
}

TEST(ConvChannelsLast, Pointwise1x1) {
  check(nhwcCase(2, 16, 7, 7, 24, 1, 1, 0, 1, 1, true, false));
  check(nhwcCase(1, 19, 5, 9, 33, 1, 1, 0, 1, 1, false, true));
  // Strided 1x1 (a ResNet downsample): not a plain GEMM.
  check(nhwcCase(2, 24, 9, 9, 40, 1, 2, 0, 1, 1, true, false));
}

TEST(ConvChannelsLast, ManyTilesAndWideStem) {
  check(nhwcCase(1, 32, 20, 20, 100, 3, 1, 1, 1, 1, true, true));
  // A 7x7 stride-2 stem on 3 channels (row segments of 21 floats).
  check(nhwcCase(2, 3, 23, 21, 17, 7, 2, 3, 1, 1, true, true));
}

TEST(ConvChannelsLast, WinogradThreeByThrees) {
  // 3x3 stride-1 convolutions with >= 14x14 outputs and channels in multiples of 16 run as
  // Winograd F(2x2, 3x3) (odd sizes: edge tiles of one row or column; bias and relu as its
  // epilogue; a symbolic batch of 2); the LoopIR says so and reads back the same.
  for (const Case &test : {nhwcCase(2, 32, 14, 14, 48, 3, 1, 1, 1, 1, true, true),
                           nhwcCase(1, 16, 17, 15, 32, 3, 1, 0, 1, 1, false, true)}) {
    std::string text;
    std::unique_ptr<Compiled> compiled = checkCompiled(test, text);
    ASSERT_TRUE(compiled);
    std::string loops = loop::printProgram(compiled->program);
    EXPECT_NE(loops.find(" winograd"), std::string::npos) << loops;
    auto parsed = loop::parseProgram(loops, "winograd.loop", compiled->program.weights);
    ASSERT_TRUE(parsed.hasValue()) << parsed.error().message();
    std::string difference;
    EXPECT_TRUE(loop::equalPrograms(compiled->program, *parsed, &difference)) << difference;
  }
  // 13x13 outputs (49 tiles) on 8 channels: direct.
  std::string text;
  std::unique_ptr<Compiled> direct =
      checkCompiled(nhwcCase(1, 8, 13, 13, 16, 3, 1, 1, 1, 1, true, true), text);
  ASSERT_TRUE(direct);
  EXPECT_EQ(loop::printProgram(direct->program).find(" winograd"), std::string::npos);
}

TEST(ConvChannelsLast, UnitOutputDims) {
  check(nhwcCase(1, 3, 5, 9, 1, 5, 1, 0, 1, 1, true, true));
  check(nhwcCase(2, 20, 7, 7, 30, 7, 1, 0, 1, 1, true, false)); // 1x1 output
}

TEST(ConvChannelsLast, ResidualChainAndGraphInputWeight) {
  // conv -> relu -> depthwise -> conv 1x1 + residual (the first conv's output) -> relu, batch
  // 2: the NHWC buffers pass between convolutions and the residual add is an epilogue. The last
  // conv's weight is a graph input (not a constant): it keeps the NCHW template.
  Case test;
  test.fx = "graph(%x: f32[s0, 3, 10, 10], %w1: f32[16, 3, 3, 3], %b1: f32[16], "
            "%w2: f32[16, 1, 3, 3], %w3: f32[16, 16, 1, 1], %w4: f32[8, 16, 3, 3]):\n"
            "  %y : f32[s0, 16, 10, 10] = call_function[target=aten.convolution](args=(%x, %w1, "
            "%b1, [1, 1], [1, 1], [1, 1], False, [0, 0], 1))\n"
            "  %r : f32[s0, 16, 10, 10] = call_function[target=aten.relu](args=(%y,))\n"
            "  %d : f32[s0, 16, 10, 10] = call_function[target=aten.convolution](args=(%r, %w2, "
            "None, [1, 1], [1, 1], [1, 1], False, [0, 0], 16))\n"
            "  %p : f32[s0, 16, 10, 10] = call_function[target=aten.convolution](args=(%d, %w3, "
            "None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1))\n"
            "  %s : f32[s0, 16, 10, 10] = call_function[target=aten.add](args=(%p, %r))\n"
            "  %t : f32[s0, 16, 10, 10] = call_function[target=aten.relu](args=(%s,))\n"
            "  %z : f32[s0, 8, 5, 5] = call_function[target=aten.convolution](args=(%t, %w4, "
            "None, [2, 2], [1, 1], [1, 1], False, [0, 0], 1))\n"
            "  return (%t, %z)\n";
  test.inputShapes = {{2, 3, 10, 10}, {16, 3, 3, 3},  {16},
                      {16, 1, 3, 3},  {16, 16, 1, 1}, {8, 16, 3, 3}};
  test.symbols = {{"s0", 2}};
  test.channelsLast = true;
  test.constants = {1, 2, 3, 4};
  test.expectKernel = "tem_convolution_add_relu";
  check(test);
}

TEST(ConvChannelsLast, ConcatenationOfManyFeaturesStaysChannelsLast) {
  // DenseNet: a 3-channel input and 17 convolutions of it (2 channels each) concatenated along
  // the channels, then batch norm's scale and shift, relu and a 1x1 convolution. More inputs
  // than one select chain takes: the first 16 are copied into a part, which holds NHWC pixels
  // as the convolutions' outputs do (not [N, C, H, W]: every read would be a transpose).
  const int parts = 17, channels = 3 + 2 * parts;
  std::string fx = "graph(%x: f32[s0, 3, 5, 6]";
  for (int i = 0; i < parts; ++i)
    fx += ", %w" + std::to_string(i) + ": f32[2, 3, 1, 1]";
  std::string c = std::to_string(channels);
  fx += ", %scale: f32[1, " + c + ", 1, 1], %shift: f32[1, " + c + ", 1, 1], %wout: f32[4, " + c +
        ", 1, 1]):\n";
  std::string list = "%x";
  for (int i = 0; i < parts; ++i) {
    std::string n = std::to_string(i);
    fx += "  %y" + n + " : f32[s0, 2, 5, 6] = call_function[target=aten.convolution](args=(%x, %w" +
          n + ", None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1))\n";
    list += ", %y" + n;
  }
  fx += "  %cat : f32[s0, " + c + ", 5, 6] = call_function[target=aten.cat](args=([" + list +
        "], 1))\n"
        "  %m : f32[s0, " +
        c +
        ", 5, 6] = call_function[target=aten.mul](args=(%cat, %scale))\n"
        "  %a : f32[s0, " +
        c +
        ", 5, 6] = call_function[target=aten.add](args=(%m, %shift))\n"
        "  %r : f32[s0, " +
        c +
        ", 5, 6] = call_function[target=aten.relu](args=(%a,))\n"
        "  %z : f32[s0, 4, 5, 6] = call_function[target=aten.convolution](args=(%r, %wout, None, "
        "[1, 1], [0, 0], [1, 1], False, [0, 0], 1))\n"
        "  return (%z,)\n";
  Case test;
  test.fx = fx;
  test.inputShapes = {{2, 3, 5, 6}};
  for (int i = 0; i < parts; ++i)
    test.inputShapes.push_back({2, 3, 1, 1});
  test.inputShapes.push_back({1, channels, 1, 1});
  test.inputShapes.push_back({1, channels, 1, 1});
  test.inputShapes.push_back({4, channels, 1, 1});
  test.symbols = {{"s0", 2}};
  test.channelsLast = true;
  for (size_t i = 1; i < test.inputShapes.size(); ++i)
    test.constants.insert(i);
  test.expectKernel = "tem_convolution";
  std::string text;
  std::unique_ptr<Compiled> compiled = checkCompiled(test, text);
  ASSERT_TRUE(compiled);
  std::string loops = loop::printProgram(compiled->program);
  // 3 + 15 * 2 = 33 channels from the first 16 inputs, stored [N, H, W, C].
  EXPECT_NE(loops.find("_part over [s0, 5, 6, 33]"), std::string::npos) << loops;
}

/// The arena slot of the output of `c`'s kernel whose name contains `name` (its last node's).
std::optional<int64_t> outputSlot(const Compiled &c, const std::string &name) {
  for (const sched::Kernel &kernel : c.schedule.kernels)
    if (kernel.name.find(name) != std::string::npos)
      return *c.schedule.plan.offsets[size_t(c.program.nodes[size_t(kernel.nodes.back())].output)]
                  .evaluate({{"s0", 2}});
  ADD_FAILURE() << "no kernel " << name;
  return std::nullopt;
}

/// A bottleneck block: r = relu(conv3x3(x)); q = relu(conv1x1(r)); t = relu(conv3x3(q) + r);
/// then a conv of t (and, with `keepResidual`, one of r after it, so r outlives the add).
Case bottleneck(bool keepResidual) {
  Case test;
  test.fx = "graph(%x: f32[s0, 8, 9, 9], %w1: f32[16, 8, 3, 3], %b1: f32[16], "
            "%w2: f32[16, 16, 1, 1], %w3: f32[16, 16, 3, 3], %w4: f32[8, 16, 1, 1]):\n"
            "  %y : f32[s0, 16, 9, 9] = call_function[target=aten.convolution](args=(%x, %w1, "
            "%b1, [1, 1], [1, 1], [1, 1], False, [0, 0], 1))\n"
            "  %r : f32[s0, 16, 9, 9] = call_function[target=aten.relu](args=(%y,))\n"
            "  %p : f32[s0, 16, 9, 9] = call_function[target=aten.convolution](args=(%r, %w2, "
            "None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1))\n"
            "  %q : f32[s0, 16, 9, 9] = call_function[target=aten.relu](args=(%p,))\n"
            "  %c : f32[s0, 16, 9, 9] = call_function[target=aten.convolution](args=(%q, %w3, "
            "None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1))\n"
            "  %s : f32[s0, 16, 9, 9] = call_function[target=aten.add](args=(%c, %r))\n"
            "  %t : f32[s0, 16, 9, 9] = call_function[target=aten.relu](args=(%s,))\n"
            "  %z : f32[s0, 8, 9, 9] = call_function[target=aten.convolution](args=(%t, %w4, "
            "None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1))\n";
  if (keepResidual)
    test.fx += "  %u : f32[s0, 8, 9, 9] = call_function[target=aten.convolution](args=(%r, %w4, "
               "None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1))\n"
               "  %v : f32[s0, 8, 9, 9] = call_function[target=aten.add](args=(%z, %u))\n"
               "  return (%v,)\n";
  else
    test.fx += "  return (%z,)\n";
  test.inputShapes = {{2, 8, 9, 9},     {16, 8, 3, 3},   {16},
                      {16, 16, 1, 1}, {16, 16, 3, 3}, {8, 16, 1, 1}};
  test.symbols = {{"s0", 2}};
  test.channelsLast = true;
  test.constants = {1, 2, 3, 4, 5};
  test.arena = true;
  test.expectKernel = "tem_convolution_add_relu";
  return test;
}

/// Compiles and checks bottleneck(keepResidual) in the planned arena; returns the arena offsets of
/// the residual r and of the add's output t.
std::pair<std::optional<int64_t>, std::optional<int64_t>> residualAndSumSlots(bool keepResidual,
                                                                              std::string &text) {
  std::unique_ptr<Compiled> c = checkCompiled(bottleneck(keepResidual), text);
  if (!c)
    return {};
  return {outputSlot(*c, "tem_convolution_relu_channels_last_1"),
          outputSlot(*c, "tem_convolution_add_relu")};
}

TEST(ConvChannelsLast, ResidualAddWritesOverTheResidual) {
  // The add's kernel writes t over r (r's last use): same slot, and the results still match
  // with the buffers placed as planned.
  std::string text;
  auto [residual, sum] = residualAndSumSlots(false, text);
  ASSERT_TRUE(residual && sum) << text;
  EXPECT_EQ(*residual, *sum) << text;
}

TEST(ConvChannelsLast, ResidualReadLaterKeepsItsMemory) {
  std::string text;
  auto [residual, sum] = residualAndSumSlots(true, text);
  ASSERT_TRUE(residual && sum) << text;
  EXPECT_NE(*residual, *sum) << text;
}

TEST(ConvChannelsLast, DepthwiseResidualAddKeepsTheResidual) {
  // r = relu(conv1x1(x)); q = relu(conv1x1(r)); t = depthwise3x3(q) + r, r's last use: the
  // depthwise kernel overlaps a row's last micro-tile with the one before (7 wide: 4 + 4 pixels
  // on AVX2) and stores a partial channel block (20 channels) before its epilogue, so writing t
  // over r would add the residual twice or read it after the store. The results must match with
  // buffers placed as planned.
  Case test;
  test.fx = "graph(%x: f32[s0, 8, 7, 7], %w1: f32[20, 8, 1, 1], %w2: f32[20, 20, 1, 1], "
            "%w3: f32[20, 1, 3, 3], %w4: f32[8, 20, 1, 1]):\n"
            "  %y : f32[s0, 20, 7, 7] = call_function[target=aten.convolution](args=(%x, %w1, "
            "None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1))\n"
            "  %r : f32[s0, 20, 7, 7] = call_function[target=aten.relu](args=(%y,))\n"
            "  %p : f32[s0, 20, 7, 7] = call_function[target=aten.convolution](args=(%r, %w2, "
            "None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1))\n"
            "  %q : f32[s0, 20, 7, 7] = call_function[target=aten.relu](args=(%p,))\n"
            "  %d : f32[s0, 20, 7, 7] = call_function[target=aten.convolution](args=(%q, %w3, "
            "None, [1, 1], [1, 1], [1, 1], False, [0, 0], 20))\n"
            "  %t : f32[s0, 20, 7, 7] = call_function[target=aten.add](args=(%d, %r))\n"
            "  %z : f32[s0, 8, 7, 7] = call_function[target=aten.convolution](args=(%t, %w4, "
            "None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1))\n"
            "  return (%z,)\n";
  test.inputShapes = {{2, 8, 7, 7}, {20, 8, 1, 1}, {20, 20, 1, 1}, {20, 1, 3, 3}, {8, 20, 1, 1}};
  test.symbols = {{"s0", 2}};
  test.channelsLast = true;
  test.constants = {1, 2, 3, 4};
  test.arena = true;
  test.expectKernel = "tem_convolution_add";
  check(test);
}

TEST(ConvChannelsLast, WhichConvolutionsWriteTheirOutputOnce) {
  // A deep 1x1 convolution runs the packed GEMM in K blocks: its partial sums go through the
  // output, which therefore must not overwrite a buffer the epilogue still reads.
  ConvParams pointwise;
  pointwise.c = 512, pointwise.h = pointwise.w = pointwise.oh = pointwise.ow = 7;
  pointwise.oc = 2048;
  EXPECT_FALSE(convWritesOutputOnce(pointwise));
  pointwise.c = 256;
  EXPECT_TRUE(convWritesOutputOnce(pointwise));
  ConvParams window = pointwise;
  window.c = 512, window.kh = window.kw = 3, window.padTop = window.padLeft = 1;
  EXPECT_TRUE(convWritesOutputOnce(window));
  ConvParams strided = pointwise;
  strided.c = 1024, strided.strideH = strided.strideW = 2;
  EXPECT_TRUE(convWritesOutputOnce(strided));
  // The template's rule: a channels-last convolution that writes once, never a depthwise one.
  loop::LoopNode node;
  node.kind = loop::LoopNode::Kind::Template;
  node.templateKind = loop::LoopNode::TemplateKind::Conv2d;
  node.conv.channelsLast = true;
  node.conv.c = node.conv.oc = 72, node.conv.h = node.conv.w = node.conv.oh = node.conv.ow = 7;
  node.conv.kh = node.conv.kw = 3, node.conv.padH = node.conv.padW = 1;
  EXPECT_TRUE(templateWritesOutputOnce(node));
  node.conv.groups = 72;
  EXPECT_FALSE(templateWritesOutputOnce(node));
}

TEST(ConvChannelsLast, StemWithMaxPool) {
  // conv 7x7/2 -> relu -> max_pool 3x3/2 pad 1 -> conv 3x3: the relu stays the first conv's
  // epilogue and the pool reads (and writes) NHWC.
  Case test;
  test.fx = "graph(%x: f32[2, 3, 19, 19], %w1: f32[8, 3, 7, 7], %b1: f32[8], "
            "%w2: f32[12, 8, 3, 3]):\n"
            "  %y : f32[2, 8, 10, 10] = call_function[target=aten.convolution](args=(%x, %w1, "
            "%b1, [2, 2], [3, 3], [1, 1], False, [0, 0], 1))\n"
            "  %r : f32[2, 8, 10, 10] = call_function[target=aten.relu](args=(%y,))\n"
            "  %m : f32[2, 8, 5, 5] = call_function[target=aten.max_pool](args=(%r,), "
            "kwargs={kernel_size=[3, 3], stride=[2, 2], padding=[1, 1], dilation=[1, 1], "
            "ceil_mode=False})\n"
            "  %z : f32[2, 12, 5, 5] = call_function[target=aten.convolution](args=(%m, %w2, "
            "None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1))\n"
            "  return (%z,)\n";
  test.inputShapes = {{2, 3, 19, 19}, {8, 3, 7, 7}, {8}, {12, 8, 3, 3}};
  test.channelsLast = true;
  test.constants = {1, 2, 3};
  test.expectKernel = "tem_convolution_relu";
  check(test);
}

TEST(GemmTemplate, BatchOneEpilogueFuses) {
  // [1, K] x [K, N] + bias: the pointwise node drops the unit row, the epilogue still fuses.
  Case test;
  test.fx = "graph(%x: f32[1, 37], %w: f32[37, 50], %b: f32[50]):\n"
            "  %y : f32[1, 50] = call_function[target=aten.mm](args=(%x, %w))\n"
            "  %z : f32[1, 50] = call_function[target=aten.add](args=(%y, %b))\n"
            "  %r : f32[1, 50] = call_function[target=aten.relu](args=(%z,))\n"
            "  return (%r,)\n";
  test.inputShapes = {{1, 37}, {37, 50}, {50}};
  test.expectKernel = "tem_mm_add_relu_0";
  std::string text = check(test);
  EXPECT_NE(text.find("# 1 kernels"), std::string::npos) << text;
}

/// Single-threaded throughput of a ResNet-like 3x3 conv (N=1, C=OC=64, 56x56, pad 1) and, for
/// comparison, of a 64 x 1024 x 4096 GEMM (the MLP's first layer at batch 64) and of the conv's
/// implicit GEMM (64 x 576 x 3136) with B in memory.
TEST(ConvTemplate, DISABLED_Throughput) {
  auto measure = [](const std::string &fx, const std::vector<std::vector<int64_t>> &shapes,
                    double flops, const char *what) {
    auto registry = ops::buildCoreRegistry();
    auto graph = fx::parseFx(fx, *registry);
    ASSERT_TRUE(graph.hasValue()) << graph.error().message();
    std::vector<Tensor> inputs;
    for (size_t i = 0; i < shapes.size(); ++i)
      inputs.push_back(filled(shapes[i], int(i)));
    std::unique_ptr<Compiled> c = compileGraph(*graph);
    double seconds = 0;
    runCompiled(*c, inputs, {}, 20, &seconds);
    std::printf("%s: %.3f ms, %.1f GFLOP/s\n", what, seconds * 1e3, flops / seconds * 1e-9);
  };
  measure("graph(%x: f32[1, 64, 56, 56], %w: f32[64, 64, 3, 3], %b: f32[64]):\n"
          "  %y : f32[1, 64, 56, 56] = call_function[target=aten.convolution](args=(%x, %w, %b, "
          "[1, 1], [1, 1], [1, 1], False, [0, 0], 1))\n"
          "  %r : f32[1, 64, 56, 56] = call_function[target=aten.relu](args=(%y,))\n"
          "  return (%r,)\n",
          {{1, 64, 56, 56}, {64, 64, 3, 3}, {64}}, 2.0 * 64 * 64 * 9 * 56 * 56,
          "conv 3x3 64->64 56x56");
  measure("graph(%x: f32[64, 1024], %w: f32[1024, 4096]):\n"
          "  %y : f32[64, 4096] = call_function[target=aten.mm](args=(%x, %w))\n"
          "  return (%y,)\n",
          {{64, 1024}, {1024, 4096}}, 2.0 * 64 * 1024 * 4096, "gemm 64x1024x4096");
  // The conv's own GEMM shape with an explicit B: the cost of reading patches through the loader.
  measure("graph(%w: f32[64, 576], %p: f32[576, 3136]):\n"
          "  %y : f32[64, 3136] = call_function[target=aten.mm](args=(%w, %p))\n"
          "  return (%y,)\n",
          {{64, 576}, {576, 3136}}, 2.0 * 64 * 576 * 3136, "gemm 64x576x3136 (explicit B)");
}

} // namespace
} // namespace tensorc::cpu
