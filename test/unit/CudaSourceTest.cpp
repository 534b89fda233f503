// The CUDA backend's guards around NVRTC: rendered source nests shallowly however deep the loop
// IR's indices and chains are, NVRTC errors name the kernel (and its fused nodes), and source
// nested too deeply for NVRTC is refused naming the kernel instead of crashing it; several
// programs compile apart, each cached on its own.
#include "tensorc/Bundle/Manifest.h"
#include "tensorc/Codegen/CUDA/CudaCodegen.h"
#include "tensorc/Lowering/LoopParser.h"
#include "tensorc/Scheduler/Schedule.h"
#include "tensorc/Support/StrCat.h"

#include <gtest/gtest.h>

#include <filesystem>

#include <unistd.h>

namespace tensorc {
namespace {

TEST(CudaSource, ExpressionDepthCountsParenthesesAndBracketsOutsideCommentsAndLiterals) {
  EXPECT_EQ(cuda::expressionDepth("x = f((b[1]));"), 3);
  EXPECT_EQ(cuda::expressionDepth("// ((((\nx = \"(((\" + '(';"), 0);
  EXPECT_EQ(cuda::expressionDepth("/* ((( */ g(h(1)) + \"\\\"((\" + k()"), 2);
  EXPECT_EQ(cuda::expressionDepth("no parentheses"), 0);
}

TEST(CudaSource, KernelsAreFoundWithTheirLines) {
  std::string source = "// prelude\n"
                       "extern \"C\" __global__ void __launch_bounds__(256) first_0(float *b0) {\n"
                       "  b0[0] = 1;\n"
                       "}\n"
                       "extern \"C\" __global__ void __cluster_dims__(2, 1, 1) "
                       "__launch_bounds__(128)\nsecond_1(float *b1) {\n"
                       "}\n";
  std::vector<cuda::SourceKernel> kernels = cuda::sourceKernels(source);
  ASSERT_EQ(kernels.size(), 2u);
  EXPECT_EQ(kernels[0].name, "first_0");
  EXPECT_EQ(kernels[0].firstLine, 2u);
  EXPECT_EQ(kernels[0].lastLine, 4u);
  EXPECT_EQ(kernels[1].name, "second_1");
  EXPECT_EQ(kernels[1].firstLine, 5u);
  EXPECT_EQ(source.substr(kernels[1].begin, kernels[1].end - kernels[1].begin),
            source.substr(source.rfind("extern")));
}

/// `(3*e + x0 + k) % m` nested `levels` deep: a chain of views' index that nothing simplifies.
SymInt deepIndex(int levels) {
  SymInt x0 = SymInt::symbol("x0"), index = x0;
  for (int k = 0; k < levels; ++k)
    index = SymInt::mod(index * SymInt(3) + x0 + SymInt(k), 61 + k % 7);
  return SymInt::mod(index, 64);
}

/// One pointwise kernel: a load at `deepIndex(levels)` through `chain` relus.
std::string deepProgram(int levels, int chain) {
  std::string text = "input x : f32[64]\nbuffer y : f32[64]\npointwise y over [64]\n";
  text += strCat("      t0 : f32 = load(x, ", deepIndex(levels).str(), ")\n");
  for (int k = 1; k <= chain; ++k)
    text += strCat("      t", k, " : f32 = relu(t", k - 1, ")\n");
  text += strCat("      -> t", chain, "\noutputs (y)\n");
  return text;
}

Expected<cuda::RenderedKernels> render(const std::string &text) {
  TC_ASSIGN_OR_RETURN(loop::LoopProgram program, loop::parseProgram(text, "deep.loop"));
  TC_ASSIGN_OR_RETURN(sched::Schedule schedule, sched::schedule(program, {}));
  return cuda::renderKernels(program, schedule);
}

/// The rendered source's nesting bound: index operands nested ExprRenderer::kMaxIndexDepth (8)
/// deep get locals, which leaves an index at most ~10 levels, a load or conversion a few more.
constexpr int kRenderedDepthBound = 16;

TEST(CudaSource, RenderedExpressionDepthIsBounded) {
  // The unbounded rendering of this index nests 2 levels per mod: 600 deep.
  ASSERT_GT(int(deepIndex(300).str().size()), 3000);
  Expected<cuda::RenderedKernels> rendered = render(deepProgram(300, 2000));
  ASSERT_TRUE(rendered) << rendered.error().message();
  EXPECT_LE(cuda::expressionDepth(rendered->source), kRenderedDepthBound);
  // Shallow programs keep their inline indices (no locals for them).
  Expected<cuda::RenderedKernels> shallow = render(deepProgram(2, 3));
  ASSERT_TRUE(shallow) << shallow.error().message();
  EXPECT_EQ(shallow->source.find("const long long ti"), std::string::npos);
  EXPECT_NE(rendered->source.find("const long long ti"), std::string::npos);
}

/// compileSource on `source`, or nullopt when this build has no NVRTC.
std::optional<Expected<cuda::CompiledModule>> compile(const std::string &source,
                                                      const std::string &notes = "") {
  cuda::CompileOptions options;
  options.archs = {"sm_80"};
  options.cacheDir = "-";
  if (!notes.empty())
    options.kernelNotes["broken_1"] = notes;
  Expected<cuda::CompiledModule> module = cuda::compileSource(source, "kernels", options);
  if (!module && module.error().message().find("without the CUDA toolkit") != std::string::npos)
    return std::nullopt;
  return module;
}

TEST(CudaSource, DeeplyNestedProgramCompiles) {
  // Rendered without locals, this index would nest 240 levels: more than compileSource accepts.
  Expected<cuda::RenderedKernels> rendered = render(deepProgram(120, 200));
  ASSERT_TRUE(rendered) << rendered.error().message();
  auto module = compile(rendered->source);
  if (!module)
    GTEST_SKIP() << "built without NVRTC";
  ASSERT_TRUE(*module) << module->error().message();
  EXPECT_FALSE((*module)->cubins.at("sm_80").empty());
}

TEST(CudaSource, NvrtcErrorsNameTheKernelAndItsNodes) {
  std::string source = "extern \"C\" __global__ void __launch_bounds__(32) fine_0(float *b0) {\n"
                       "  b0[0] = 1.0f;\n}\n"
                       "extern \"C\" __global__ void __launch_bounds__(32) broken_1(float *b1) {\n"
                       "  b1[0] = undeclared_value;\n}\n";
  auto module = compile(source, "fused nodes relu_3, add_4");
  if (!module)
    GTEST_SKIP() << "built without NVRTC";
  ASSERT_FALSE(*module);
  std::string message = module->error().message();
  EXPECT_NE(message.find("CUDA kernel broken_1 (fused nodes relu_3, add_4)"), std::string::npos)
      << message;
  EXPECT_EQ(message.find("fine_0"), std::string::npos) << message;
  EXPECT_NE(message.find("undeclared_value"), std::string::npos) << message; // NVRTC's log
}

TEST(CudaSource, TooDeepSourceIsRefusedNamingTheKernel) {
  std::string deep = std::string(size_t(cuda::kMaxExpressionDepth) + 50, '(') + "1.0f" +
                     std::string(size_t(cuda::kMaxExpressionDepth) + 50, ')');
  std::string source = "extern \"C\" __global__ void __launch_bounds__(32) broken_1(float *b1) {\n"
                       "  b1[0] = " +
                       deep + ";\n}\n";
  auto module = compile(source, "fused nodes n");
  if (!module)
    GTEST_SKIP() << "built without NVRTC";
  ASSERT_FALSE(*module);
  EXPECT_NE(module->error().message().find("CUDA kernel broken_1 (fused nodes n): expressions "
                                           "nest 250 levels deep"),
            std::string::npos)
      << module->error().message();
}

TEST(CudaSource, KernelsWaitForTheKernelBeforeThemOnHopper) {
  // Every kernel's first statement is TC_GRID_DEPENDENCY_WAIT() (so the runtime may launch it as
  // a programmatic dependent of the kernel before it), and a module built for sm_90 says so
  // through the symbol the runtime looks up; one whose PTX is for an older arch (where the wait
  // compiles to nothing) must not, or its kernels would race the kernel before them.
  Expected<cuda::RenderedKernels> rendered = render(deepProgram(2, 3));
  ASSERT_TRUE(rendered) << rendered.error().message();
  std::vector<cuda::SourceKernel> kernels = cuda::sourceKernels(rendered->source);
  ASSERT_FALSE(kernels.empty());
  for (const cuda::SourceKernel &kernel : kernels) {
    size_t body = rendered->source.find('{', kernel.begin);
    ASSERT_LT(body, kernel.end) << kernel.name;
    const std::string first = "{\n  TC_GRID_DEPENDENCY_WAIT();\n";
    EXPECT_EQ(rendered->source.compare(body, first.size(), first), 0)
        << kernel.name << ": " << rendered->source.substr(body, 60);
  }
  cuda::CompileOptions options;
  options.cacheDir = "-";
  for (const char *arch : {"sm_90", "sm_80"}) {
    options.archs = {arch};
    Expected<cuda::CompiledModule> module =
        cuda::compileSource(rendered->source, "kernels", options);
    if (!module && module.error().message().find("without the CUDA toolkit") != std::string::npos)
      GTEST_SKIP() << "built without NVRTC";
    ASSERT_TRUE(module) << module.error().message();
    bool hopper = std::string(arch) == "sm_90";
    EXPECT_EQ(module->ptx.find("griddepcontrol.wait") != std::string::npos, hopper) << arch;
    EXPECT_EQ(module->ptx.find(bundle::kGridDependencySymbol) != std::string::npos, hopper) << arch;
  }
}

/// A one-kernel program storing `value`.
cuda::SourcePart storeProgram(const std::string &name, const std::string &kernel,
                              const std::string &value) {
  return {name,
          "extern \"C\" __global__ void __launch_bounds__(32) " + kernel + "(float *b0) {\n" +
              "  b0[0] = " + value + ";\n}\n",
          1.0};
}

TEST(CudaSource, ProgramsCompileApartAndAreCachedEachOnItsOwn) {
  std::string dir = ::testing::TempDir() + "tensorc-nvrtc-cache-" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  cuda::CompileOptions options;
  options.archs = {"sm_80", "sm_90"};
  options.cacheDir = dir;
  options.jobs = 2;
  std::vector<cuda::SourcePart> parts = {storeProgram("kernels.0", "one_0", "1.0f"),
                                         storeProgram("kernels.1", "two_1", "2.0f")};
  Expected<std::vector<cuda::CompiledModule>> first = cuda::compileSources(parts, options);
  if (!first && first.error().message().find("without the CUDA toolkit") != std::string::npos)
    GTEST_SKIP() << "built without NVRTC";
  ASSERT_TRUE(first) << first.error().message();
  ASSERT_EQ(first->size(), 2u);
  for (size_t p = 0; p < 2; ++p) {
    const cuda::CompiledModule &module = (*first)[p];
    EXPECT_FALSE(module.fromCache);
    EXPECT_EQ(module.ptxArch, "sm_80");
    EXPECT_EQ(module.cubins.size(), 2u);
    // Each module holds its own kernel only.
    EXPECT_NE(module.ptx.find(p == 0 ? ".entry one_0" : ".entry two_1"), std::string::npos);
    EXPECT_EQ(module.ptx.find(p == 0 ? "two_1" : "one_0"), std::string::npos);
  }
  // The same programs again: both from the cache, the same bytes. A changed program alone is
  // compiled.
  Expected<std::vector<cuda::CompiledModule>> again = cuda::compileSources(parts, options);
  ASSERT_TRUE(again) << again.error().message();
  for (size_t p = 0; p < 2; ++p) {
    EXPECT_TRUE((*again)[p].fromCache);
    EXPECT_EQ((*again)[p].cubins, (*first)[p].cubins);
    EXPECT_EQ((*again)[p].ptx, (*first)[p].ptx);
  }
  parts[1] = storeProgram("kernels.1", "two_1", "3.0f");
  Expected<std::vector<cuda::CompiledModule>> changed = cuda::compileSources(parts, options);
  ASSERT_TRUE(changed) << changed.error().message();
  EXPECT_TRUE((*changed)[0].fromCache);
  EXPECT_FALSE((*changed)[1].fromCache);
  EXPECT_NE((*changed)[1].ptx, (*first)[1].ptx);
  // An error names the kernel of the program that failed, whichever finished first.
  parts[0] = storeProgram("kernels.0", "broken_0", "undeclared_value");
  options.kernelNotes["broken_0"] = "fused nodes n";
  Expected<std::vector<cuda::CompiledModule>> failed = cuda::compileSources(parts, options);
  ASSERT_FALSE(failed);
  EXPECT_NE(failed.error().message().find("CUDA kernel broken_0 (fused nodes n)"),
            std::string::npos)
      << failed.error().message();
  std::filesystem::remove_all(dir);
}

} // namespace
} // namespace tensorc
