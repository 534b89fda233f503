// Tests of the bundle manifest: SizeExpr parsing and evaluation, JSON round trip, validation.
#include "tensorc/Bundle/Manifest.h"
#include "tensorc/Bundle/BundleWriter.h"
#include "tensorc/Bundle/TuningCache.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>

using namespace tensorc;
using namespace tensorc::bundle;

namespace {

int64_t eval(const std::string &text, const std::map<std::string, int64_t> &symbols = {}) {
  Expected<SizeExpr> expr = SizeExpr::parse(text);
  EXPECT_TRUE(expr) << (expr ? "" : expr.error().message());
  if (!expr)
    return INT64_MIN;
  Expected<int64_t> value = expr->evaluate(symbols);
  EXPECT_TRUE(value) << (value ? "" : value.error().message());
  return value ? *value : INT64_MIN;
}

std::string parseError(const std::string &text) {
  Expected<SizeExpr> expr = SizeExpr::parse(text);
  return expr ? "(parsed)" : expr.error().message();
}

std::string evalError(const std::string &text, const std::map<std::string, int64_t> &symbols) {
  Expected<SizeExpr> expr = SizeExpr::parse(text);
  if (!expr)
    return "(parse error) " + expr.error().message();
  Expected<int64_t> value = expr->evaluate(symbols);
  return value ? "(evaluated)" : value.error().message();
}

SizeExpr expr(const std::string &text) { return SizeExpr::parse(text).value(); }

/// A small manifest using every buffer and launch kind.
Manifest sampleManifest() {
  Manifest m;
  m.tensorcVersion = "0.1.0";
  m.sourceHash = "abc123";
  m.model = "sample.fx";
  m.symbols = {"batch"};
  m.inputs = {{"x", DType::F32, {expr("batch"), SizeExpr::constant(4)}}};
  m.outputs = {{"y", DType::F32, {expr("batch"), SizeExpr::constant(4)}}};
  BufferDesc x{0, "x", BufferKind::Input, DType::F32, m.inputs[0].shape, 0, "", {}};
  BufferDesc w{1, "w", BufferKind::Weight, DType::F32, {SizeExpr::constant(4)}, 0, "w", {}};
  BufferDesc t{2, "t", BufferKind::Arena, DType::F32, m.inputs[0].shape, 0, "", expr("0")};
  BufferDesc y{3, "y", BufferKind::Output, DType::F32, m.outputs[0].shape, 0, "", {}};
  m.buffers = {x, w, t, y};
  m.arenaBytes = expr("16*batch");
  m.peakBytes = 128;
  Launch kernel;
  kernel.name = "poi_fused_add_0";
  kernel.args = {0, 1, 2};
  kernel.range = expr("4*batch");
  kernel.grain = 64;
  Launch copy;
  copy.kind = LaunchKind::Copy;
  copy.name = "copy";
  copy.args = {2, 3};
  Launch ext;
  ext.kind = LaunchKind::Extern;
  ext.name = "aten.relu";
  ext.args = {3, 3};
  ext.graph =
      "graph(%a: f32[s, 4]):\n  %b : f32[s, 4] = call_function[target=aten.relu](args=(%a,))\n"
      "  return (%b,)\n";
  m.launches = {kernel, copy, ext};
  m.cpu = {{"x86_64", "x86_64", "cpu/x86_64.so", {"avx2", "fma"}, 1},
           {"x86_64-avx512", "x86_64", "cpu/x86_64-avx512.so", {"avx512f"}, 2}};
  m.guards = {{expr("batch % 2"), SizeExpr::constant(0), "input 'x' dim 0 must be even"}};
  m.files = {{"cpu/x86_64-avx512.so", std::string(64, 'a')},
             {"cpu/x86_64.so", std::string(64, 'b')},
             {"weights.safetensors", std::string(64, 'c')}};
  return m;
}

/// fromJson's error after `edit` changes the sample's JSON.
std::string errorAfter(const std::function<void(Json &)> &edit) {
  Json json = sampleManifest().toJson();
  edit(json);
  Expected<Manifest> manifest = Manifest::fromJson(json);
  return manifest ? "(valid)" : manifest.error().message();
}

/// Mutable access to element `index` of the array member `key` (Json exposes arrays read-only).
Json &item(Json &json, const std::string &key, size_t index) {
  return const_cast<Json &>(json[key].items()[index]);
}

} // namespace

TEST(ManifestSizeExpr, EvaluatesArithmetic) {
  EXPECT_EQ(eval("64*batch + 128", {{"batch", 3}}), 320);
  EXPECT_EQ(eval("(h + 1)//2", {{"h", 5}}), 3);
  EXPECT_EQ(eval("2*s0*s1 - 3", {{"s0", 2}, {"s1", 5}}), 17);
  EXPECT_EQ(eval("-s0 + 10", {{"s0", 4}}), 6);
  EXPECT_EQ(eval("-(a - 1)", {{"a", 4}}), -3);
  EXPECT_EQ(eval("  7  "), 7);
  // `*` and `//` associate left, as in Python and the FX parser: (4*3)//2, not 4*(3//2).
  EXPECT_EQ(eval("4*s//2", {{"s", 3}}), 6);
  EXPECT_EQ(eval("1 + 2*3"), 7);
}

TEST(ManifestSizeExpr, FloorDivisionAndRemainderFollowPython) {
  EXPECT_EQ(eval("-7//2"), -4);
  EXPECT_EQ(eval("7//-2"), -4);
  EXPECT_EQ(eval("-7//-2"), 3);
  EXPECT_EQ(eval("-7%3"), 2);
  EXPECT_EQ(eval("7%-3"), -2);
  EXPECT_EQ(eval("-6%3"), 0);
  EXPECT_EQ(eval("(n - 10)//4", {{"n", 3}}), -2);
  EXPECT_EQ(eval("(n - 10)%4", {{"n", 3}}), 1);
}

TEST(ManifestSizeExpr, ReportsOverflowAndBadValues) {
  EXPECT_EQ(evalError("a*a", {{"a", int64_t(1) << 32}}), "size expression 'a*a': overflows int64");
  EXPECT_NE(evalError("a + 1", {{"a", INT64_MAX}}).find("overflows int64"), std::string::npos);
  EXPECT_NE(evalError("-a - 2", {{"a", INT64_MAX}}).find("overflows int64"), std::string::npos);
  EXPECT_NE(evalError("a//-1", {{"a", INT64_MIN}}).find("overflows int64"), std::string::npos);
  EXPECT_EQ(evalError("a//b", {{"a", 1}, {"b", 0}}), "size expression 'a//b': division by zero");
  EXPECT_EQ(evalError("a%0", {{"a", 1}}), "size expression 'a%0': remainder by zero");
  EXPECT_EQ(evalError("2*batch", {}), "size expression '2*batch': symbol 'batch' has no value");
}

TEST(ManifestSizeExpr, RejectsBadText) {
  EXPECT_EQ(parseError(""), "size expression '': empty expression at column 1");
  EXPECT_EQ(parseError("2 +"),
            "size expression '2 +': expected an integer, a symbol or '(' but found 'end of text' "
            "at column 4");
  EXPECT_EQ(parseError("a $ b"), "size expression 'a $ b': unexpected '$' at column 3");
  EXPECT_EQ(parseError("(a + 1"),
            "size expression '(a + 1': expected ')' but found 'end of text' at column 7");
  EXPECT_EQ(parseError("a b"), "size expression 'a b': unexpected 'b' at column 3");
  EXPECT_EQ(parseError("3x"), "size expression '3x': bad number '3x' at column 1");
  EXPECT_EQ(parseError("a / 2"), "size expression 'a / 2': unexpected '/' at column 3");
  EXPECT_NE(parseError("99999999999999999999").find("does not fit in int64"), std::string::npos);
  std::string deep = std::string(1000, '(') + "1" + std::string(1000, ')');
  EXPECT_NE(parseError(deep).find("nesting deeper than"), std::string::npos);
}

TEST(ManifestSizeExpr, QueriesShape) {
  EXPECT_EQ(expr("batch").symbolName(), "batch");
  EXPECT_EQ(expr("batch + 0").symbolName(), std::nullopt);
  EXPECT_EQ(expr("2*(3 + 1)").constantValue(), 8);
  EXPECT_EQ(expr("2*n").constantValue(), std::nullopt);
  EXPECT_EQ(SizeExpr::constant(-5).text(), "-5");
  EXPECT_EQ(*SizeExpr::constant(-5).evaluate({}), -5);
  std::set<std::string> symbols;
  expr("a*(b + 1)//c").collectSymbols(symbols);
  EXPECT_EQ(symbols, (std::set<std::string>{"a", "b", "c"}));
}

TEST(ManifestJson, RoundTrips) {
  Manifest manifest = sampleManifest();
  std::string text = manifest.toJson().dump(2);
  Expected<Json> json = Json::parse(text);
  ASSERT_TRUE(json) << json.error().message();
  Expected<Manifest> parsed = Manifest::fromJson(*json);
  ASSERT_TRUE(parsed) << parsed.error().message();
  EXPECT_EQ(parsed->toJson().dump(2), text);
  EXPECT_EQ(parsed->buffers[2].offset.text(), "0");
  EXPECT_EQ(parsed->launches[0].range.text(), "4*batch");
  EXPECT_EQ(parsed->launches[0].grain, 64);
  EXPECT_EQ(parsed->cpu[1].requires_, std::vector<std::string>{"avx512f"});
  EXPECT_EQ(parsed->guards[0].message, "input 'x' dim 0 must be even");
  // Constant dims are JSON integers, symbolic ones strings.
  EXPECT_TRUE(json->find("inputs")->items()[0].find("shape")->items()[1].isInt());
  EXPECT_TRUE(json->find("inputs")->items()[0].find("shape")->items()[0].isString());
}

TEST(ManifestJson, RejectsOtherFormatVersions) {
  EXPECT_EQ(errorAfter([](Json &j) { j["format_version"] = 1; }),
            "bundle format version 1, this runtime reads 3 to 4");
  EXPECT_EQ(errorAfter([](Json &j) { j["format_version"] = 5; }),
            "bundle format version 5, this runtime reads 3 to 4");
  EXPECT_EQ(errorAfter([](Json &j) { j["format_version"] = "1"; }),
            "format_version: expected an integer, got a string");
  EXPECT_EQ(Manifest::fromJson(Json(3)).error().message(),
            "manifest: expected an object, got an integer");
}

TEST(ManifestJson, NamesTheFieldOfEachError) {
  EXPECT_EQ(errorAfter([](Json &j) { j["inputs"] = Json(); }),
            "inputs: expected an array, got null");
  EXPECT_EQ(errorAfter([](Json &j) { item(j, "inputs", 0)["dtype"] = "f33"; }),
            "inputs[0].dtype: unknown dtype 'f33'");
  EXPECT_EQ(errorAfter([](Json &j) {
              Json shape = Json::array();
              shape.push("batch +");
              item(j, "inputs", 0)["shape"] = shape;
            }),
            "inputs[0].shape[0]: size expression 'batch +': expected an integer, a symbol or '(' "
            "but found 'end of text' at column 8");
  EXPECT_EQ(errorAfter([](Json &j) { item(j, "buffers", 2)["id"] = 7; }),
            "buffers[2].id: is 7, expected 2 (buffers are listed densely by id)");
  EXPECT_EQ(
      errorAfter([](Json &j) { item(j, "buffers", 2)["kind"] = "heap"; }),
      "buffers[2].kind: unknown buffer kind 'heap' (expected input, output, weight or arena)");
  EXPECT_EQ(errorAfter([](Json &j) { item(j, "buffers", 0)["index"] = 3; }),
            "buffers[0].index: no inputs[3] (there are 1)");
  EXPECT_EQ(errorAfter([](Json &j) { item(j, "buffers", 3)["dtype"] = "f16"; }),
            "buffers[3].dtype: f16 but outputs[0] 'y' is f32");
  EXPECT_EQ(errorAfter([](Json &j) { item(j, "buffers", 3)["kind"] = "arena"; }),
            "buffers[3].offset: missing");
  EXPECT_EQ(errorAfter([](Json &j) { item(j, "buffers", 2)["offset"] = "16*rows"; }),
            "buffers[2].offset: '16*rows' uses undeclared symbol 'rows'");
  EXPECT_EQ(errorAfter([](Json &j) {
              Json args = Json::array();
              args.push(0);
              args.push(17);
              item(j, "launches", 0)["args"] = args;
            }),
            "launches[0].args[1]: no buffer 17");
  EXPECT_EQ(errorAfter([](Json &j) { item(j, "launches", 0)["grain"] = 0; }),
            "launches[0].grain: must be at least 1, got 0");
  EXPECT_EQ(errorAfter([](Json &j) { item(j, "launches", 1)["kind"] = "launch"; }),
            "launches[1].kind: unknown launch kind 'launch' (expected kernel, extern or copy)");
  EXPECT_EQ(errorAfter([](Json &j) { item(j, "launches", 2)["graph"] = ""; }),
            "launches[2].graph: empty graph");
  EXPECT_EQ(errorAfter([](Json &j) {
              Json args = Json::array();
              args.push(2);
              args.push(0);
              item(j, "launches", 1)["args"] = args;
            }),
            "launches[1].args[1]: copy into read-only input buffer 'x'");
  EXPECT_EQ(errorAfter([](Json &j) { item(j, "cpu", 0)["file"] = "../evil.so"; }),
            "cpu[0].file: '../evil.so' is not a relative path inside the bundle");
  EXPECT_EQ(errorAfter([](Json &j) { item(j, "cpu", 0)["file"] = "/tmp/evil.so"; }),
            "cpu[0].file: '/tmp/evil.so' is not a relative path inside the bundle");
  EXPECT_EQ(errorAfter([](Json &j) { item(j, "cpu", 1)["arch"] = "riscv64"; }),
            "cpu[1].arch: unknown arch 'riscv64' (expected x86_64 or aarch64)");
  EXPECT_EQ(errorAfter([](Json &j) { item(j, "cpu", 1)["name"] = "x86_64"; }),
            "cpu[1].name: duplicate variant 'x86_64'");
  EXPECT_EQ(errorAfter([](Json &j) { item(j, "guards", 0)["lhs"] = "n % 2"; }),
            "guards[0].lhs: 'n % 2' uses undeclared symbol 'n'");
  EXPECT_EQ(errorAfter([](Json &j) {
              Json symbols = Json::array();
              symbols.push("batch");
              symbols.push("batch");
              j["symbols"] = symbols;
            }),
            "symbols[1]: duplicate symbol 'batch'");
  EXPECT_EQ(errorAfter([](Json &j) {
              Json copy = item(j, "outputs", 0);
              j["outputs"].push(copy);
            }),
            "outputs[1].name: duplicate name 'y'");
}

TEST(ManifestJson, RequiresABufferForEveryOutput) {
  Manifest manifest = sampleManifest();
  manifest.outputs.push_back({"z", DType::F32, {SizeExpr::constant(1)}});
  Expected<Manifest> parsed = Manifest::fromJson(manifest.toJson());
  ASSERT_FALSE(parsed);
  EXPECT_EQ(parsed.error().message(), "outputs[1]: no buffer holds output 'z'");
}

/// The sample with CUDA images and a launch shape for its kernel.
Manifest cudaManifest() {
  Manifest m = sampleManifest();
  m.launches[0].cudaGrid = expr("(4*batch + 255)//256");
  m.launches[0].cudaBlock = 256;
  m.launches[0].cudaSharedBytes = 98304;
  m.launches[0].cudaPartials = expr("8192*((batch + 63)//64)");
  m.launches[0].cudaCounters = expr("(batch + 63)//64");
  m.matmulPrecision = "high";
  m.cuda = {{"sm_90", "cuda/sm_90.cubin", false}, {"sm_80", "cuda/kernels.ptx", true}};
  m.files.push_back({"cuda/sm_90.cubin", std::string(64, 'd')});
  m.files.push_back({"cuda/kernels.ptx", std::string(64, 'e')});
  m.cudaGraphs = true;
  return m;
}

std::string cudaErrorAfter(const std::function<void(Json &)> &edit) {
  Json json = cudaManifest().toJson();
  edit(json);
  Expected<Manifest> manifest = Manifest::fromJson(json);
  return manifest ? "(valid)" : manifest.error().message();
}

TEST(ManifestJson, RoundTripsCudaImagesAndLaunchShapes) {
  std::string text = cudaManifest().toJson().dump(2);
  Expected<Json> json = Json::parse(text);
  ASSERT_TRUE(json) << json.error().message();
  Expected<Manifest> parsed = Manifest::fromJson(*json);
  ASSERT_TRUE(parsed) << parsed.error().message();
  EXPECT_EQ(parsed->toJson().dump(2), text);
  EXPECT_EQ(parsed->launches[0].cudaGrid.text(), "(4*batch + 255)//256");
  EXPECT_EQ(parsed->launches[0].cudaBlock, 256);
  EXPECT_EQ(parsed->launches[0].cudaSharedBytes, 98304);
  EXPECT_TRUE(parsed->launches[0].splitK());
  EXPECT_EQ(parsed->launches[0].cudaPartials.text(), "8192*((batch + 63)//64)");
  EXPECT_EQ(parsed->launches[0].cudaCounters.text(), "(batch + 63)//64");
  EXPECT_EQ(parsed->matmulPrecision, "high");
  ASSERT_EQ(parsed->cuda.size(), 2u);
  EXPECT_FALSE(parsed->cuda[0].ptx);
  EXPECT_TRUE(parsed->cuda[1].ptx);
  EXPECT_EQ(parsed->cuda[1].arch, "sm_80");
  EXPECT_TRUE(parsed->cudaGraphs);
  // A CPU-only bundle has no CUDA fields at all.
  EXPECT_EQ(sampleManifest().toJson().find("cuda"), nullptr);
}

TEST(ManifestJson, RejectsBadCudaFields) {
  EXPECT_EQ(cudaErrorAfter([](Json &j) { item(j, "cuda", 0)["arch"] = "gfx90a"; }),
            "cuda[0].arch: 'gfx90a' is not an sm_<NN> arch (or sm_90a)");
  EXPECT_EQ(cudaErrorAfter([](Json &j) { item(j, "cuda", 1)["kind"] = "fatbin"; }),
            "cuda[1].kind: unknown image kind 'fatbin' (expected cubin or ptx)");
  EXPECT_EQ(cudaErrorAfter([](Json &j) { item(j, "cuda", 0)["file"] = "../sm_90.cubin"; }),
            "cuda[0].file: '../sm_90.cubin' is not a relative path inside the bundle");
  EXPECT_EQ(cudaErrorAfter([](Json &j) { item(j, "launches", 0)["cuda_block"] = 2048; }),
            "launches[0].cuda_block: must be 0 to 1024 threads, got 2048");
  EXPECT_EQ(cudaErrorAfter([](Json &j) { item(j, "launches", 0)["cuda_smem"] = 300000; }),
            "launches[0].cuda_smem: must be 0 to 232448 bytes, got 300000");
  EXPECT_EQ(cudaErrorAfter([](Json &j) { item(j, "launches", 0)["cuda_grid"] = "4*n"; }),
            "launches[0].cuda_grid: '4*n' uses undeclared symbol 'n'");
  EXPECT_EQ(cudaErrorAfter([](Json &j) { item(j, "launches", 0)["cuda_block"] = 0; }),
            "launches[0]: kernel 'poi_fused_add_0' has no cuda_block, but the bundle has CUDA "
            "images");
  // Split-K kernels take both workspaces, sized over declared symbols.
  auto withOnly = [](const char *key) {
    Manifest m = cudaManifest();
    m.launches[0].cudaPartials = m.launches[0].cudaCounters = SizeExpr();
    Json json = m.toJson();
    item(json, "launches", 0)[key] = "batch";
    Expected<Manifest> parsed = Manifest::fromJson(json);
    return parsed ? "(valid)" : parsed.error().message();
  };
  EXPECT_EQ(withOnly("cuda_partials"),
            "launches[0].cuda_counters: missing (split-K kernels take both workspaces)");
  EXPECT_EQ(withOnly("cuda_counters"),
            "launches[0].cuda_partials: missing (split-K kernels take both workspaces)");
  EXPECT_EQ(cudaErrorAfter([](Json &j) { item(j, "launches", 0)["cuda_partials"] = "n"; }),
            "launches[0].cuda_partials: 'n' uses undeclared symbol 'n'");
  EXPECT_EQ(cudaErrorAfter([](Json &j) { j["matmul_precision"] = "medium"; }),
            "matmul_precision: 'medium' is not highest or high");
}

/// cudaManifest whose kernel is a GEMM with a library call: x[batch, 4] . w viewed as [4, 1]
/// (one column) into t, chosen for cuBLASLt's algorithm 3.
Manifest gemmManifest() {
  Manifest m = cudaManifest();
  GemmCall g;
  g.dtype = DType::F32;
  g.a = {0, SizeExpr::constant(0), SizeExpr::constant(4), SizeExpr::constant(0), true};
  g.b = {1, SizeExpr::constant(0), SizeExpr::constant(4), SizeExpr::constant(0), true};
  g.output = 2;
  g.m = expr("batch"), g.n = SizeExpr::constant(1), g.k = SizeExpr::constant(4);
  g.batch = SizeExpr::constant(1);
  g.epilogueGrid = expr("(batch + 255)//256");
  g.library = kCublasLt;
  g.algo = 3;
  m.launches[0].gemm = g;
  return m;
}

std::string gemmErrorAfter(const std::function<void(Json &)> &edit) {
  Json json = gemmManifest().toJson();
  edit(json);
  Expected<Manifest> manifest = Manifest::fromJson(json);
  return manifest ? "(valid)" : manifest.error().message();
}

TEST(ManifestJson, RoundTripsGemmCalls) {
  std::string text = gemmManifest().toJson().dump(2);
  Expected<Json> json = Json::parse(text);
  ASSERT_TRUE(json) << json.error().message();
  Expected<Manifest> parsed = Manifest::fromJson(*json);
  ASSERT_TRUE(parsed) << parsed.error().message();
  EXPECT_EQ(parsed->toJson().dump(2), text);
  const std::optional<GemmCall> &g = parsed->launches[0].gemm;
  ASSERT_TRUE(g);
  EXPECT_EQ(g->m.text(), "batch");
  EXPECT_EQ(g->b.arg, 1);
  EXPECT_TRUE(g->a.kContiguous);
  EXPECT_EQ(g->output, 2);
  EXPECT_EQ(g->epilogueGrid.text(), "(batch + 255)//256");
  EXPECT_EQ(g->library, "cublaslt");
  EXPECT_EQ(g->algo, 3);
  EXPECT_EQ(g->bias, -1);
  EXPECT_EQ(item(*json, "launches", 0)["cuda_gemm"].find("bias"), nullptr);
  // A direct call with a bias (w, one f32 per column) reads back as written.
  Manifest biased = gemmManifest();
  biased.launches[0].gemm->direct = true;
  biased.launches[0].gemm->bias = 1;
  Expected<Manifest> withBias = Manifest::fromJson(biased.toJson());
  ASSERT_TRUE(withBias) << withBias.error().message();
  EXPECT_EQ(withBias->launches[0].gemm->bias, 1);
  EXPECT_TRUE(withBias->launches[0].gemm->direct);
  // Untuned: no choice is written, and none is read back.
  Manifest untuned = gemmManifest();
  untuned.launches[0].gemm->library.clear();
  Json plain = untuned.toJson();
  const Json *call = item(plain, "launches", 0).find("cuda_gemm");
  ASSERT_NE(call, nullptr);
  EXPECT_EQ(call->find("library"), nullptr);
  EXPECT_EQ(call->find("algo"), nullptr);
  // Kernels without a library call have no cuda_gemm.
  EXPECT_EQ(item(*json, "launches", 1).find("cuda_gemm"), nullptr);
  EXPECT_EQ(cudaManifest().toJson()["launches"].items()[0].find("cuda_gemm"), nullptr);
}

TEST(ManifestJson, RejectsBadGemmCalls) {
  auto gemm = [](Json &j) -> Json & {
    return const_cast<Json &>(item(j, "launches", 0)["cuda_gemm"]);
  };
  EXPECT_EQ(gemmErrorAfter([&](Json &j) { gemm(j)["library"] = "cudnn"; }),
            "launches[0].cuda_gemm.library: unknown GEMM library 'cudnn' (expected cublaslt)");
  EXPECT_EQ(gemmErrorAfter([&](Json &j) { gemm(j)["dtype"] = "i64"; }),
            "launches[0].cuda_gemm.dtype: GEMM calls take f32, f16 or bf16, not i64");
  EXPECT_EQ(gemmErrorAfter([&](Json &j) { gemm(j)["dtype"] = "f16"; }),
            "launches[0].cuda_gemm.a.arg: buffer 'x' is f32, the GEMM's operands f16");
  EXPECT_EQ(gemmErrorAfter([&](Json &j) { const_cast<Json &>(gemm(j)["b"])["arg"] = 7; }),
            "launches[0].cuda_gemm.b.arg: the launch has no argument 7 (it has 3)");
  EXPECT_EQ(gemmErrorAfter([&](Json &j) { gemm(j)["output"] = -1; }),
            "launches[0].cuda_gemm.output: the launch has no argument -1 (it has 3)");
  EXPECT_EQ(gemmErrorAfter([&](Json &j) { gemm(j)["m"] = "rows"; }),
            "launches[0].cuda_gemm.m: 'rows' uses undeclared symbol 'rows'");
  EXPECT_EQ(gemmErrorAfter([&](Json &j) { const_cast<Json &>(gemm(j)["a"])["ld"] = "n"; }),
            "launches[0].cuda_gemm.a.ld: 'n' uses undeclared symbol 'n'");
  EXPECT_EQ(gemmErrorAfter([&](Json &j) {
              gemm(j)["direct"] = true;
              item(j, "buffers", 2)["dtype"] = "i32";
            }),
            "launches[0].cuda_gemm.direct: a library cannot write a i32 output");
  EXPECT_EQ(gemmErrorAfter([&](Json &j) { gemm(j)["bias"] = 1; }),
            "launches[0].cuda_gemm.bias: only a direct GEMM call adds a bias");
  EXPECT_EQ(gemmErrorAfter([&](Json &j) {
              gemm(j)["direct"] = true;
              gemm(j)["bias"] = 3;
            }),
            "launches[0].cuda_gemm.bias: the launch has no argument 3 (it has 3)");
  EXPECT_EQ(gemmErrorAfter([&](Json &j) {
              gemm(j)["direct"] = true;
              gemm(j)["bias"] = 1;
              item(j, "buffers", 2)["dtype"] = "f16";
            }),
            "launches[0].cuda_gemm.bias: buffer 'w' is f32, the output f16");
  EXPECT_EQ(gemmErrorAfter([&](Json &j) { gemm(j)["algo"] = 5000; }),
            "launches[0].cuda_gemm.algo: must be 0 to 1000, got 5000");
  EXPECT_EQ(gemmErrorAfter([&](Json &j) { gemm(j)["epilogue_grid"] = true; }),
            "launches[0].cuda_gemm.epilogue_grid: expected an integer or a size expression "
            "string, got a boolean");
}

TEST(BundleWriter, ReplaceFileSwapsWholeAndLeavesNoTemporary) {
  namespace fs = std::filesystem;
  fs::path dir = fs::path(::testing::TempDir()) / "replace-file-test";
  fs::remove_all(dir);
  fs::create_directories(dir);
  auto names = [&] {
    std::vector<std::string> found;
    for (const fs::directory_entry &e : fs::directory_iterator(dir))
      found.push_back(e.path().filename().string());
    std::sort(found.begin(), found.end());
    return found;
  };
  std::string path = (dir / "manifest.json").string();
  ASSERT_TRUE(writeFile(path, "old").isOk());
  ASSERT_TRUE(replaceFile(path, "new contents").isOk());
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "new contents");
  EXPECT_EQ(names(), std::vector<std::string>{"manifest.json"});
  // A target that cannot be replaced (a non-empty directory): an error naming it, and the
  // temporary file is gone.
  fs::create_directories(dir / "taken" / "inside");
  Status failed = replaceFile((dir / "taken").string(), "bytes");
  ASSERT_FALSE(failed.isOk());
  EXPECT_EQ(failed.message().rfind((dir / "taken").string() + ": cannot replace: ", 0), 0u)
      << failed.message();
  EXPECT_EQ(names(), (std::vector<std::string>{"manifest.json", "taken"}));
  fs::remove_all(dir);
}

TEST(TuningCache, KeysSavesAndAppliesChoices) {
  Manifest manifest = gemmManifest();
  std::map<std::string, int64_t> bindings = {{"batch", 128}};
  std::optional<std::string> key =
      TuningCache::key(manifest, manifest.launches[0], bindings, "sm_90");
  ASSERT_TRUE(key);
  EXPECT_EQ(*key, "sm_90|f32->f32|1x128x1x4|A:k,ld4,bs0,a16|B:k,ld4,bs0,a16|epilogue|"
                  "poi_fused_add");
  // Without a binding for `batch` there is no key; launches without a GEMM call have none.
  EXPECT_FALSE(TuningCache::key(manifest, manifest.launches[0], {}, "sm_90"));
  EXPECT_FALSE(TuningCache::key(manifest, manifest.launches[1], bindings, "sm_90"));

  std::string path = ::testing::TempDir() + "/tuning-cache-test.json";
  std::remove(path.c_str());
  Expected<TuningCache> empty = TuningCache::load(path); // a missing file: an empty cache
  ASSERT_TRUE(empty) << empty.error().message();
  EXPECT_EQ(empty->size(), 0u);
  TuningCache cache;
  cache.put(*key, {kCublasLt, 5, 41.5, 25.25});
  ASSERT_TRUE(cache.save(path).isOk());
  Expected<TuningCache> loaded = TuningCache::load(path);
  ASSERT_TRUE(loaded) << loaded.error().message();
  const TuningEntry *entry = loaded->find(*key);
  ASSERT_NE(entry, nullptr);
  EXPECT_EQ(entry->library, "cublaslt");
  EXPECT_EQ(entry->algo, 5);
  EXPECT_DOUBLE_EQ(entry->kernelUs, 41.5);
  EXPECT_DOUBLE_EQ(entry->libraryUs, 25.25);

  manifest.launches[0].gemm->library.clear();
  EXPECT_EQ(loaded->apply(manifest, "sm_80", bindings), 0); // another arch: nothing applies
  EXPECT_EQ(manifest.launches[0].gemm->library, "");
  EXPECT_EQ(loaded->apply(manifest, "sm_90", bindings), 1);
  EXPECT_EQ(manifest.launches[0].gemm->library, "cublaslt");
  EXPECT_EQ(manifest.launches[0].gemm->algo, 5);

  auto errorIn = [&](const std::string &text) {
    std::FILE *f = std::fopen(path.c_str(), "w");
    std::fputs(text.c_str(), f);
    std::fclose(f);
    Expected<TuningCache> bad = TuningCache::load(path);
    return bad ? std::string("(valid)") : bad.error().message();
  };
  EXPECT_EQ(errorIn(R"({"format": 2, "entries": {}})"),
            path + ": tuning cache format 2, this tensorc reads 1");
  EXPECT_EQ(errorIn(R"({"format": 1, "entries": {"k": {"library": "cudnn"}}})"),
            path + ": entries.k.library: unknown GEMM library 'cudnn'");
  EXPECT_EQ(errorIn(R"({"format": 1, "entries": {"k": {"algo": -3}}})"),
            path + ": entries.k.algo: must be 0 to 1000, got -3");
  EXPECT_NE(errorIn("{").find(path + ": "), std::string::npos);
  std::remove(path.c_str());
  // A directory where the file should be: refused, not read.
  std::string directory = ::testing::TempDir() + "/tuning-cache-dir.json";
  std::filesystem::create_directories(directory);
  Expected<TuningCache> notFile = TuningCache::load(directory);
  ASSERT_FALSE(notFile);
  EXPECT_EQ(notFile.error().message(), directory + ": not a regular file");
  std::filesystem::remove(directory);
}

TEST(ManifestJson, RequiresADigestForEveryFileTheRuntimeReads) {
  EXPECT_EQ(errorAfter([](Json &j) { item(j, "files", 1)["path"] = "cpu/other.so"; }),
            "cpu[0].file: 'cpu/x86_64.so' has no sha256 in files");
  EXPECT_EQ(errorAfter([](Json &j) { item(j, "files", 2)["path"] = "weights.bin"; }),
            "files: weights.safetensors has no sha256, but the bundle reads weights");
  EXPECT_EQ(errorAfter([](Json &j) { item(j, "files", 0)["sha256"] = "ABCD"; }),
            "files[0].sha256: 'ABCD' is not a SHA-256 digest (64 lowercase hex digits)");
  EXPECT_EQ(errorAfter([](Json &j) { item(j, "files", 0)["path"] = "../escape.so"; }),
            "files[0].path: '../escape.so' is not a relative path inside the bundle");
  EXPECT_EQ(errorAfter([](Json &j) { item(j, "files", 0)["path"] = "cpu/x86_64.so"; }),
            "files[1].path: 'cpu/x86_64.so' is listed twice");
  EXPECT_EQ(cudaErrorAfter([](Json &j) { item(j, "files", 4)["path"] = "cuda/other.ptx"; }),
            "cuda[1].file: 'cuda/kernels.ptx' has no sha256 in files");
}

/// cudaManifest with its kernels split over `modules` modules (each an sm_90 cubin and sm_80
/// PTX); the kernel lives in the last one.
Manifest multiModuleManifest(int64_t modules) {
  Manifest m = cudaManifest();
  m.cuda.clear();
  m.files.resize(m.files.size() - 2);
  for (int64_t i = 0; i < modules; ++i) {
    std::string cubin = "cuda/sm_90." + std::to_string(i) + ".cubin";
    std::string ptx = "cuda/kernels." + std::to_string(i) + ".ptx";
    m.cuda.push_back({"sm_90", cubin, false, i});
    m.cuda.push_back({"sm_80", ptx, true, i});
    m.files.push_back({cubin, std::string(64, char('a' + i % 6))});
    m.files.push_back({ptx, std::string(64, char('a' + i % 6))});
  }
  m.launches[0].cudaModule = modules - 1;
  return m;
}

std::string multiModuleErrorAfter(const std::function<void(Json &)> &edit) {
  Json json = multiModuleManifest(3).toJson();
  edit(json);
  Expected<Manifest> manifest = Manifest::fromJson(json);
  return manifest ? "(valid)" : manifest.error().message();
}

TEST(ManifestJson, RoundTripsCudaModules) {
  std::string text = multiModuleManifest(3).toJson().dump(2);
  Expected<Json> json = Json::parse(text);
  ASSERT_TRUE(json) << json.error().message();
  Expected<Manifest> parsed = Manifest::fromJson(*json);
  ASSERT_TRUE(parsed) << parsed.error().message();
  EXPECT_EQ(parsed->toJson().dump(2), text);
  ASSERT_EQ(parsed->cuda.size(), 6u);
  for (size_t i = 0; i < 6; ++i)
    EXPECT_EQ(parsed->cuda[i].module, int64_t(i / 2));
  EXPECT_EQ(parsed->launches[0].cudaModule, 2);
  // A bundle written before modules (no "module", no "cuda_module") has one module, 0.
  Json old = cudaManifest().toJson();
  for (size_t i = 0; i < 2; ++i) {
    Json image = Json::object();
    for (const auto &[key, value] : item(old, "cuda", i).members())
      if (key != "module")
        image[key] = value;
    item(old, "cuda", i) = image;
  }
  Expected<Manifest> single = Manifest::fromJson(old);
  ASSERT_TRUE(single) << single.error().message();
  EXPECT_EQ(single->cuda[1].module, 0);
  EXPECT_EQ(single->launches[0].cudaModule, 0);
}

TEST(ManifestJson, RejectsInconsistentCudaModules) {
  EXPECT_EQ(multiModuleErrorAfter([](Json &j) { item(j, "launches", 0)["cuda_module"] = 3; }),
            "launches[0].cuda_module: no CUDA module 3 (the bundle has 3)");
  EXPECT_EQ(multiModuleErrorAfter([](Json &j) { item(j, "launches", 0)["cuda_module"] = -1; }),
            "launches[0].cuda_module: no CUDA module -1 (the bundle has 3)");
  EXPECT_EQ(multiModuleErrorAfter([](Json &j) { item(j, "cuda", 0)["module"] = -2; }),
            "cuda[0].module: must be 0 to 4095, got -2");
  // Module 1 missing altogether.
  EXPECT_EQ(multiModuleErrorAfter([](Json &j) {
              item(j, "cuda", 2)["module"] = 2;
              item(j, "cuda", 3)["module"] = 2;
            }),
            "cuda[4]: module 2 has two sm_90 cubin images");
  EXPECT_EQ(multiModuleErrorAfter([](Json &j) {
              item(j, "cuda", 2)["module"] = 0;
              item(j, "cuda", 2)["arch"] = "sm_89";
              item(j, "cuda", 3)["module"] = 0;
              item(j, "cuda", 3)["arch"] = "sm_75";
            }),
            "cuda: no image of module 1 (the bundle has modules up to 2)");
  // A module without the cubin module 0 has, and one with an image module 0 lacks.
  EXPECT_EQ(multiModuleErrorAfter([](Json &j) {
              item(j, "cuda", 4)["kind"] = "ptx";
              item(j, "cuda", 4)["arch"] = "sm_80";
            }),
            "cuda[5]: module 2 has two sm_80 PTX images");
  EXPECT_EQ(multiModuleErrorAfter([](Json &j) { item(j, "cuda", 4)["kind"] = "ptx"; }),
            "cuda: module 2 has no sm_90 cubin image, which module 0 has");
  EXPECT_EQ(multiModuleErrorAfter([](Json &j) { item(j, "cuda", 4)["arch"] = "sm_86"; }),
            "cuda: module 2 has no sm_90 cubin image, which module 0 has");
  EXPECT_EQ(multiModuleErrorAfter([](Json &j) { item(j, "cuda", 0)["arch"] = "sm_86"; }),
            "cuda: module 1 has no sm_86 cubin image, which module 0 has");
}

TEST(CudaImages, EveryModuleLoadsTheSameChoice) {
  Manifest manifest = multiModuleManifest(3);
  auto files = [&](int major, int minor) -> std::string {
    Expected<std::vector<const CudaImage *>> images =
        chooseCudaImages(manifest, major, minor, "device 0 (test GPU)");
    if (!images)
      return images.error().message();
    std::vector<std::string> names;
    for (const CudaImage *image : *images)
      names.push_back(image->file);
    return join(names, " ");
  };
  // The device's own arch: cubins; a newer minor of it too.
  EXPECT_EQ(files(9, 0), "cuda/sm_90.0.cubin cuda/sm_90.1.cubin cuda/sm_90.2.cubin");
  EXPECT_EQ(files(9, 2), "cuda/sm_90.0.cubin cuda/sm_90.1.cubin cuda/sm_90.2.cubin");
  // Another major at least the PTX's arch: PTX, JIT-compiled.
  EXPECT_EQ(files(8, 6), "cuda/kernels.0.ptx cuda/kernels.1.ptx cuda/kernels.2.ptx");
  EXPECT_EQ(files(10, 0), "cuda/kernels.0.ptx cuda/kernels.1.ptx cuda/kernels.2.ptx");
  // Older than everything.
  EXPECT_EQ(files(7, 5), "bundle built for sm_90, sm_80 (PTX); device 0 (test GPU) is sm_75");
  // One module: the bundles written before modules.
  Manifest old = cudaManifest();
  Expected<std::vector<const CudaImage *>> single =
      chooseCudaImages(old, 9, 0, "device 0 (test GPU)");
  ASSERT_TRUE(single) << single.error().message();
  ASSERT_EQ(single->size(), 1u);
  EXPECT_EQ(single->front()->file, "cuda/sm_90.cubin");
}

/// multiModuleManifest(2) whose kernel (in module 1, which has an sm_90a cubin) has a Hopper
/// form: x[batch, 4] . w viewed K-major, TF32.
Manifest hopperManifest() {
  Manifest m = multiModuleManifest(2);
  m.cuda.push_back({kHopperArch, "cuda/sm_90a.1.cubin", false, 1});
  m.files.push_back({"cuda/sm_90a.1.cubin", std::string(64, 'f')});
  HopperGemm h;
  h.dtype = DType::F32;
  h.tf32 = true;
  h.k = SizeExpr::constant(4), h.batch = SizeExpr::constant(1);
  h.units = expr("(batch + 127)//128");
  h.blocksPerSm = 1, h.block = 384, h.sharedBytes = 100000;
  h.a = {0,  SizeExpr::constant(0), expr("batch"), SizeExpr::constant(4), SizeExpr::constant(0),
         128};
  h.b = {
      1, SizeExpr::constant(0), SizeExpr::constant(1), SizeExpr::constant(4), SizeExpr::constant(0),
      16};
  m.launches[0].hopper = h;
  m.formatVersion = kFormatVersion;
  return m;
}

std::string hopperErrorAfter(const std::function<void(Json &)> &edit) {
  Json json = hopperManifest().toJson();
  edit(json);
  Expected<Manifest> manifest = Manifest::fromJson(json);
  return manifest ? "(valid)" : manifest.error().message();
}

TEST(ManifestJson, RoundTripsHopperForms) {
  std::string text = hopperManifest().toJson().dump(2);
  Expected<Json> json = Json::parse(text);
  ASSERT_TRUE(json) << json.error().message();
  Expected<Manifest> parsed = Manifest::fromJson(*json);
  ASSERT_TRUE(parsed) << parsed.error().message();
  EXPECT_EQ(parsed->toJson().dump(2), text);
  const std::optional<HopperGemm> &h = parsed->launches[0].hopper;
  ASSERT_TRUE(h);
  EXPECT_TRUE(h->tf32);
  EXPECT_EQ(h->units.text(), "(batch + 127)//128");
  EXPECT_EQ(h->a.rows.text(), "batch");
  EXPECT_EQ(h->b.boxRows, 16);
  EXPECT_EQ(h->blocksPerSm, 1);
  EXPECT_EQ(parsed->cuda.back().arch, kHopperArch);
  // Kernels without a Hopper form have none.
  EXPECT_EQ(cudaManifest().toJson()["launches"].items()[0].find("cuda_sm90a"), nullptr);
}

TEST(ManifestJson, RejectsBadHopperForms) {
  auto form = [](Json &j) -> Json & {
    return const_cast<Json &>(item(j, "launches", 0)["cuda_sm90a"]);
  };
  EXPECT_EQ(hopperErrorAfter([&](Json &j) { form(j)["tf32"] = false; }),
            "launches[0].cuda_sm90a.dtype: Hopper GEMMs take f16, bf16 or (tf32) f32, not f32 "
            "without tf32");
  EXPECT_EQ(hopperErrorAfter([&](Json &j) {
              form(j)["dtype"] = "f16";
              form(j)["tf32"] = false;
            }),
            "launches[0].cuda_sm90a.a.arg: buffer 'x' is f32, the GEMM's operands f16");
  EXPECT_EQ(hopperErrorAfter([&](Json &j) { const_cast<Json &>(form(j)["b"])["arg"] = 5; }),
            "launches[0].cuda_sm90a.b.arg: the launch has no argument 5 (it has 3)");
  EXPECT_EQ(hopperErrorAfter([&](Json &j) { const_cast<Json &>(form(j)["a"])["box_rows"] = 0; }),
            "launches[0].cuda_sm90a.a.box_rows: must be 1 to 256, got 0");
  EXPECT_EQ(hopperErrorAfter([&](Json &j) { form(j)["block"] = 2048; }),
            "launches[0].cuda_sm90a.block: must be 1 to 1024 threads, got 2048");
  EXPECT_EQ(hopperErrorAfter([&](Json &j) { form(j)["units"] = "rows"; }),
            "launches[0].cuda_sm90a.units: 'rows' uses undeclared symbol 'rows'");
  EXPECT_EQ(hopperErrorAfter([&](Json &j) { item(j, "cuda", 4)["kind"] = "ptx"; }),
            "cuda[4]: sm_90a images are cubins");
  EXPECT_EQ(hopperErrorAfter([&](Json &j) { item(j, "cuda", 4)["module"] = 2; }),
            "cuda: module 2 has only an sm_90a image");
  EXPECT_EQ(hopperErrorAfter([&](Json &j) { item(j, "cuda", 4)["arch"] = "sm_90b"; }),
            "cuda[4].arch: 'sm_90b' is not an sm_<NN> arch (or sm_90a)");
  EXPECT_EQ(hopperErrorAfter([&](Json &j) { form(j)["blocks_per_sm"] = 0; }),
            "launches[0].cuda_sm90a.blocks_per_sm: must be 1 to 32, got 0");
  // A runtime that reads 3 would launch these functions without their tensor maps.
  EXPECT_EQ(hopperErrorAfter([&](Json &j) { j["format_version"] = 3; }),
            "cuda[4]: sm_90a images need bundle format version 4, the manifest says 3");
  EXPECT_EQ(hopperErrorAfter([&](Json &j) {
              j["format_version"] = 3;
              Json images = Json::array();
              for (size_t i = 0; i < 4; ++i)
                images.push(item(j, "cuda", i));
              j["cuda"] = images;
            }),
            "launches[0].cuda_sm90a: Hopper forms need bundle format version 4, the manifest says 3");
}

TEST(CudaImages, HopperImagesLoadOnComputeCapability90Alone) {
  Manifest manifest = hopperManifest();
  Expected<std::vector<const CudaImage *>> base =
      chooseCudaImages(manifest, 9, 0, "device 0 (test GPU)");
  ASSERT_TRUE(base) << base.error().message();
  ASSERT_EQ(base->size(), 2u);
  EXPECT_EQ((*base)[1]->file, "cuda/sm_90.1.cubin");
  std::vector<const CudaImage *> hopper = chooseHopperImages(manifest, 9, 0);
  ASSERT_EQ(hopper.size(), 2u);
  EXPECT_EQ(hopper[0], nullptr);
  ASSERT_NE(hopper[1], nullptr);
  EXPECT_EQ(hopper[1]->file, "cuda/sm_90a.1.cubin");
  for (auto [major, minor] : {std::pair{9, 2}, std::pair{10, 0}, std::pair{8, 0}})
    for (const CudaImage *image : chooseHopperImages(manifest, major, minor))
      EXPECT_EQ(image, nullptr) << major << "." << minor;
}

TEST(KernelSignatures, AcceptTheManifestTheyWereMadeFrom) {
  Manifest manifest = sampleManifest();
  std::string table = kernelSignatureTable(manifest);
  EXPECT_TRUE(checkKernelSignatures(manifest, table, "k.so", false).isOk());
  Manifest cuda = cudaManifest();
  EXPECT_TRUE(checkKernelSignatures(cuda, kernelSignatureTable(cuda), "k.ptx", true).isOk());
}

TEST(KernelSignatures, RejectAnotherHopperForm) {
  Manifest compiled = hopperManifest();
  std::string table = kernelSignatureTable(compiled);
  EXPECT_TRUE(checkKernelSignatures(compiled, table, "k.cubin", true).isOk());
  Manifest edited = compiled;
  edited.launches[0].hopper->a.boxRows = 64;
  Status status = checkKernelSignatures(edited, table, "k.cubin", true);
  ASSERT_FALSE(status.isOk());
  EXPECT_NE(status.message().find("its Hopper form"), std::string::npos) << status.message();
  Manifest plain = compiled;
  plain.launches[0].hopper.reset();
  status = checkKernelSignatures(plain, table, "k.cubin", true);
  ASSERT_FALSE(status.isOk());
  EXPECT_NE(status.message().find("its Hopper form (none)"), std::string::npos) << status.message();
}

TEST(KernelSignatures, RejectEveryChangeAKernelCouldOverrunOn) {
  Manifest compiled = sampleManifest();
  std::string table = kernelSignatureTable(compiled);
  auto errorWith = [&](const std::function<void(Manifest &)> &edit, bool cuda = false) {
    Manifest manifest = cuda ? cudaManifest() : sampleManifest();
    std::string source = cuda ? kernelSignatureTable(manifest) : table;
    edit(manifest);
    Status status = checkKernelSignatures(manifest, source, "cpu/x86_64.so", cuda);
    return status ? std::string("(matches)") : status.message();
  };
  // A shrunk output (the kernel would write past it) or input (read past it).
  EXPECT_EQ(errorWith([](Manifest &m) { m.buffers[2].shape[1] = SizeExpr::constant(1); }),
            "launches[0] (kernel poi_fused_add_0): argument 2 is buffer 't' f32[batch, 1], but "
            "the kernel in cpu/x86_64.so was compiled for f32[batch, 4]");
  EXPECT_EQ(errorWith([](Manifest &m) { m.buffers[0].dtype = DType::F16; }),
            "launches[0] (kernel poi_fused_add_0): argument 0 is buffer 'x' f16[batch, 4], but "
            "the kernel in cpu/x86_64.so was compiled for f32[batch, 4]");
  EXPECT_EQ(errorWith([](Manifest &m) { m.launches[0].args.pop_back(); }),
            "launches[0] (kernel poi_fused_add_0): passes 2 arguments, but the kernel in "
            "cpu/x86_64.so takes 3");
  EXPECT_EQ(errorWith([](Manifest &m) { m.launches[0].range = expr("8*batch"); }),
            "launches[0] (kernel poi_fused_add_0): range '8*batch', but the kernel in "
            "cpu/x86_64.so was compiled for '4*batch'");
  EXPECT_EQ(errorWith([](Manifest &m) { m.launches[0].name = "poi_other_1"; }),
            "launches[0] (kernel poi_other_1): cpu/x86_64.so has no kernel of that name");
  EXPECT_EQ(errorWith([](Manifest &m) {
              m.symbols = {"batch", "extra"};
            }),
            "cpu/x86_64.so: its kernels were compiled for the symbols [batch], but the manifest "
            "lists [batch, extra]");
  EXPECT_EQ(errorWith([](Manifest &m) { m.launches[0].cudaBlock = 1024; }, true),
            "launches[0] (kernel poi_fused_add_0): cuda_block 1024, but the kernel in "
            "cpu/x86_64.so was compiled for 256 threads");
  // cudaManifest's kernel takes 98304 bytes of dynamic shared memory: less would fault.
  EXPECT_EQ(errorWith([](Manifest &m) { m.launches[0].cudaSharedBytes = 1024; }, true),
            "launches[0] (kernel poi_fused_add_0): cuda_smem 1024, but the kernel in "
            "cpu/x86_64.so was compiled for 98304 bytes of dynamic shared memory");
  // Smaller split-K workspaces than the kernel indexes, or none for a kernel that splits.
  EXPECT_EQ(errorWith([](Manifest &m) { m.launches[0].cudaPartials = expr("8192"); }, true),
            "launches[0] (kernel poi_fused_add_0): split-K workspaces [8192, (batch + 63)//64], "
            "but the kernel in cpu/x86_64.so was compiled for [8192*((batch + 63)//64), "
            "(batch + 63)//64]");
  EXPECT_EQ(errorWith(
                [](Manifest &m) {
                  m.launches[0].cudaPartials = SizeExpr();
                  m.launches[0].cudaCounters = SizeExpr();
                },
                true),
            "launches[0] (kernel poi_fused_add_0): split-K workspaces [, ], but the kernel in "
            "cpu/x86_64.so was compiled for [8192*((batch + 63)//64), (batch + 63)//64]");
  // A GEMM call bounds what a library reads and the product its epilogue function reads: one
  // that differs from the compiled call (or is missing, or added) is refused; tuning's choice is
  // not part of it.
  auto gemmErrorWith = [&](const std::function<void(Manifest &)> &edit) {
    Manifest manifest = gemmManifest();
    std::string source = kernelSignatureTable(manifest);
    edit(manifest);
    Status status = checkKernelSignatures(manifest, source, "cuda/sm_90.0.cubin", true);
    return status ? std::string("(matches)") : status.message();
  };
  EXPECT_EQ(gemmErrorWith([](Manifest &m) { m.launches[0].gemm->library.clear(); }), "(matches)");
  EXPECT_EQ(gemmErrorWith([](Manifest &m) { m.launches[0].gemm->algo = 0; }), "(matches)");
  std::string grown = gemmErrorWith([](Manifest &m) { m.launches[0].gemm->k = expr("64"); });
  EXPECT_NE(grown.find("launches[0] (kernel poi_fused_add_0): its GEMM call {"), std::string::npos)
      << grown;
  EXPECT_NE(grown.find("is not the one the kernel in cuda/sm_90.0.cubin was compiled for"),
            std::string::npos)
      << grown;
  EXPECT_NE(
      gemmErrorWith([](Manifest &m) { m.launches[0].gemm.reset(); }).find("its GEMM call (none)"),
      std::string::npos);
  std::string added =
      errorWith([](Manifest &m) { m.launches[0].gemm = gemmManifest().launches[0].gemm; }, true);
  EXPECT_NE(added.find("was compiled for (none)"), std::string::npos) << added;
  Status garbage = checkKernelSignatures(compiled, "{", "k.so", false);
  ASSERT_FALSE(garbage.isOk());
  EXPECT_EQ(garbage.message().rfind("k.so: its kernel signature table is not valid JSON", 0), 0u)
      << garbage.message();
}
