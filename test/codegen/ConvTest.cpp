// Convolution (and unit-dim GEMM) templates end to end below the bundle: FX text -> lower ->
// schedule -> CPU kernels run in launch order, compared with the reference interpreter.
#include "tensorc/Codegen/CPU/CpuCodegen.h"

#include "tensorc/Bundle/Manifest.h"
#include "tensorc/Frontend/FX/FxParser.h"
#include "tensorc/Interp/Interpreter.h"
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

std::unique_ptr<Compiled> compileGraph(const Graph &graph) {
  auto compiled = std::make_unique<Compiled>();
  auto program = loop::lower(graph);
  EXPECT_TRUE(program.hasValue()) << program.error().message();
  compiled->program = std::move(*program);
  auto schedule = sched::schedule(compiled->program, {});
  EXPECT_TRUE(schedule.hasValue()) << schedule.error().message();
  compiled->schedule = std::move(*schedule);
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

/// Runs every kernel of `c` in order (each range in two halves) with one allocation per buffer;
/// returns the graph outputs.
std::vector<std::vector<float>> runCompiled(Compiled &c, const std::vector<Tensor> &inputs,
                                            const SymbolBindings &symbols, int reps = 1,
                                            double *secondsPerRun = nullptr) {
  std::vector<std::vector<float>> memory(c.program.buffers.size());
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
        args.push_back(memory[size_t(id)].data());
      auto fn = reinterpret_cast<bundle::TensorcKernelFn>(dlsym(c.handle, kernel.name.c_str()));
      EXPECT_NE(fn, nullptr) << kernel.name;
      if (!fn)
        continue;
      fn(args.data(), syms.data(), 0, count / 2);
      fn(args.data(), syms.data(), count / 2, count);
    }
  if (secondsPerRun)
    *secondsPerRun =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / reps;
  std::vector<std::vector<float>> outputs;
  for (int id : c.program.outputs)
    outputs.push_back(memory[size_t(id)]);
  return outputs;
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
};

/// Compiles and runs `fx`, compares every output with the interpreter; returns the schedule text.
std::string check(const Case &test) {
  auto registry = ops::buildCoreRegistry();
  EXPECT_TRUE(registry.hasValue());
  auto graph = fx::parseFx(test.fx, *registry);
  EXPECT_TRUE(graph.hasValue()) << graph.error().message();
  if (!graph)
    return "";
  std::vector<Tensor> inputs;
  for (size_t i = 0; i < test.inputShapes.size(); ++i)
    inputs.push_back(filled(test.inputShapes[i], int(i)));
  auto expected = interp::interpret(*graph, inputs);
  EXPECT_TRUE(expected.hasValue()) << expected.error().message();
  std::unique_ptr<Compiled> compiled = compileGraph(*graph);
  std::string text = sched::printSchedule(compiled->program, compiled->schedule);
  EXPECT_NE(text.find(test.expectKernel), std::string::npos) << text;
  std::vector<std::vector<float>> outputs = runCompiled(*compiled, inputs, test.symbols);
  if (!expected)
    return text;
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
