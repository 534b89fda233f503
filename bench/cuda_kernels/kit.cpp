// tensorc-cuda-kernels: renders the kernel library's kernels for a list of cases (a JSON file)
// and either writes their CUDA source (for the CPU emulation test) or compiles them with NVRTC
// into a kit of cubins plus a manifest (for bench/cuda_kernels.py on a GPU machine).
//
//   tensorc-cuda-kernels render CASES.json OUT_DIR   -> OUT_DIR/kernels.cu, OUT_DIR/manifest.json
//   tensorc-cuda-kernels kit CASES.json OUT_DIR [--arch sm_90a] [--sms 132] [--watchdog MS]
//                                                    -> OUT_DIR/<case>.cubin, manifest.json
//   (sm_90a enables the Hopper wgmma kernel; --watchdog MS traps a barrier wait that has not
//   completed after MS milliseconds instead of hanging the benchmark)
//   tensorc-cuda-kernels compile FILE.cu --arch sm_80  (NVRTC only: rendered kernels compile)
//
// This is the caller side of the library's epilogue hook: the epilogues here (plain store,
// bias + ReLU, folded batch norm + residual + ReLU, bias + GELU, each converting to the output
// dtype) are what the CUDA renderer's fused pointwise epilogues will render in its place.
#include "KernelLibrary.h"

#include "tensorc/Support/Json.h"
#include "tensorc/Support/StrCat.h"

#include <nvrtc.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

namespace {

using namespace tensorc;
using namespace tensorc::cuda::kernels;

[[noreturn]] void die(const std::string &message) {
  std::cerr << "tensorc-cuda-kernels: " << message << "\n";
  std::exit(1);
}

ElemType parseType(const std::string &name, const std::string &where) {
  if (name == "f16")
    return ElemType::F16;
  if (name == "bf16")
    return ElemType::BF16;
  if (name == "f32")
    return ElemType::F32;
  die(where + ": unknown dtype '" + name + "' (f16, bf16, f32)");
}

MathMode parseMath(const std::string &name, ElemType type, const std::string &where) {
  if (name.empty())
    return type == ElemType::F32 ? MathMode::SimtF32 : MathMode::Tensor16;
  if (name == "tensor16")
    return MathMode::Tensor16;
  if (name == "tf32")
    return MathMode::TF32;
  if (name == "simt")
    return MathMode::SimtF32;
  die(where + ": unknown math '" + name + "' (tensor16, tf32, simt)");
}

/// Reads case fields with defaults; a missing required field is an error naming the case.
struct Fields {
  const Json &j;
  std::string name;
  int64_t integer(const std::string &key, std::optional<int64_t> fallback = std::nullopt) const {
    const Json *v = j.find(key);
    if (!v) {
      if (!fallback)
        die(name + ": missing field '" + key + "'");
      return *fallback;
    }
    if (!v->isInt())
      die(name + ": field '" + key + "' is not an integer");
    return v->asInt();
  }
  std::string string(const std::string &key, const std::string &fallback) const {
    const Json *v = j.find(key);
    return v && v->isString() ? v->asString() : fallback;
  }
  bool flag(const std::string &key, bool fallback) const {
    const Json *v = j.find(key);
    return v ? v->asBool() : fallback;
  }
  std::pair<int, int> pair(const std::string &key, int fallback) const {
    const Json *v = j.find(key);
    if (!v)
      return {fallback, fallback};
    if (v->isInt())
      return {int(v->asInt()), int(v->asInt())};
    if (!v->isArray() || v->items().size() != 2)
      die(name + ": field '" + key + "' is not an integer or a pair");
    return {int(v->items()[0].asInt()), int(v->items()[1].asInt())};
  }
};

std::string storageType(ElemType type) {
  return type == ElemType::F32 ? "float" : "unsigned short";
}

std::string fromFloat(ElemType type, const std::string &value) {
  switch (type) {
  case ElemType::F16:
    return "tk_f2h(" + value + ")";
  case ElemType::BF16:
    return "tk_f2bf(" + value + ")";
  case ElemType::F32:
    return value;
  }
  return value;
}

std::string toFloat(ElemType type, const std::string &value) {
  switch (type) {
  case ElemType::F16:
    return "tk_h2f(" + value + ")";
  case ElemType::BF16:
    return "tk_bf2f(" + value + ")";
  case ElemType::F32:
    return value;
  }
  return value;
}

/// The epilogue kinds: their parameters (after `out`) and the per-value transform.
/// Output element (batch, row, col) lives at out[batch * batchStride + row * rowStride + col].
Epilogue makeEpilogue(const std::string &kind, ElemType out, const std::string &rowStride,
                      const std::string &batchStride, bool vectorStores, const std::string &where) {
  Epilogue e;
  e.params.push_back(storageType(out) + " *__restrict__ out");
  if (kind == "bias_relu" || kind == "bias_gelu")
    e.params.push_back("const float *__restrict__ bias");
  else if (kind == "bn_add_relu")
    e.params = {e.params[0], "const float *__restrict__ scale", "const float *__restrict__ shift",
                "const " + storageType(out) + " *__restrict__ residual"};
  else if (kind != "store")
    die(where + ": unknown epilogue '" + kind + "' (store, bias_relu, bn_add_relu, bias_gelu)");
  e.render = [=](const EpilogueSite &s) {
    const std::string &in = s.indent;
    int count = int(s.acc.size());
    std::string text =
        strCat(in, "{\n", in, "  const long long tk_o = (", s.batch, ") * ", batchStride, " + (",
               s.row, ") * ", rowStride, " + (", s.col, ");\n", in, "  float tk_x[", count, "];\n");
    for (int i = 0; i < count; ++i) {
      std::string x = s.acc[size_t(i)], c = strCat("(", s.col, ") + ", i);
      if (kind == "bias_relu")
        x = strCat("fmaxf(", x, " + bias[", c, "], 0.0f)");
      else if (kind == "bias_gelu")
        x = strCat("tk_gelu(", x, " + bias[", c, "])");
      else if (kind == "bn_add_relu")
        x = strCat("fmaxf(", x, " * scale[", c, "] + shift[", c, "] + ",
                   toFloat(out, strCat("residual[tk_o + ", i, "]")), ", 0.0f)");
      text += strCat(in, "  tk_x[", i, "] = ", x, ";\n");
    }
    if (vectorStores && count == 8 && out != ElemType::F32) {
      text += strCat(in, "  TkVec<unsigned short, 8> tk_y;\n");
      for (int i = 0; i < count; ++i)
        text += strCat(in, "  tk_y.v[", i, "] = ", fromFloat(out, strCat("tk_x[", i, "]")), ";\n");
      text += strCat(in, "  *reinterpret_cast<TkVec<unsigned short, 8> *>(out + tk_o) = tk_y;\n");
    } else if (vectorStores && count % 4 == 0 && out == ElemType::F32) {
      for (int i = 0; i < count; i += 4)
        text +=
            strCat(in, "  *reinterpret_cast<float4 *>(out + tk_o + ", i, ") = make_float4(tk_x[", i,
                   "], tk_x[", i + 1, "], tk_x[", i + 2, "], tk_x[", i + 3, "]);\n");
    } else {
      for (int i = 0; i < count; ++i)
        text +=
            strCat(in, "  out[tk_o + ", i, "] = ", fromFloat(out, strCat("tk_x[", i, "]")), ";\n");
    }
    return text + in + "}\n";
  };
  return e;
}

const char *kEpilogueHelpers = R"(
// ---- the kit's epilogue helpers ----
TC_DEVICE float tk_gelu(float x) { return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f)); }
)";

GemmConfig parseConfig(const Json &j, GemmConfig c) {
  Fields f{j, "config"};
  // A config without "kernel" is an mma.sync config (the older format).
  std::string kernel = f.string("kernel", "mma");
  if (kernel != "wgmma" && kernel != "mma")
    die("config: unknown kernel '" + kernel + "' (mma, wgmma)");
  if ((kernel == "wgmma") != (c.kernel == GemmKernel::Wgmma)) {
    // Another kernel than the heuristic's: start from that kernel's defaults.
    c = GemmConfig();
    if (kernel == "wgmma")
      c.kernel = GemmKernel::Wgmma, c.bm = 128, c.bn = 128, c.bk = 64, c.stages = 4;
  }
  // Tiles given without their epilogue passes: whole-tile passes.
  c.epilogueCols = int(f.integer("epi_cols", j.find("bn") ? 0 : c.epilogueCols));
  c.gridLimit = int(f.integer("grid_limit", c.gridLimit));
  c.bm = int(f.integer("bm", c.bm));
  c.bn = int(f.integer("bn", c.bn));
  c.bk = int(f.integer("bk", c.bk));
  c.warpsM = int(f.integer("warps_m", c.warpsM));
  c.warpsN = int(f.integer("warps_n", c.warpsN));
  c.stages = int(f.integer("stages", c.stages));
  c.splitK = int(f.integer("split_k", c.splitK));
  return c;
}

Json configJson(const GemmConfig &c) {
  Json j = Json::object();
  j["kernel"] = c.kernel == GemmKernel::Wgmma ? "wgmma" : "mma";
  j["epi_cols"] = c.epilogueCols, j["grid_limit"] = c.gridLimit;
  j["bm"] = c.bm, j["bn"] = c.bn, j["bk"] = c.bk, j["warps_m"] = c.warpsM;
  j["warps_n"] = c.warpsN, j["stages"] = c.stages, j["split_k"] = c.splitK;
  return j;
}

/// Evaluates the integer C expressions the library returns (literals with an `ll` suffix, the
/// `tk_arg_*` scalars, + - * / and parentheses, `a < b ? a : b`) at the case's sizes.
struct Evaluator {
  std::map<std::string, int64_t> vars;
  std::string text;
  size_t at = 0;
  int64_t run(const std::string &expression, const std::string &where) {
    text = expression, at = 0;
    int64_t v = ternary();
    skip();
    if (at != text.size())
      die(where + ": cannot evaluate '" + expression + "'");
    return v;
  }
  void skip() {
    while (at < text.size() && text[at] == ' ')
      ++at;
  }
  bool eat(char c) {
    skip();
    if (at < text.size() && text[at] == c)
      return ++at, true;
    return false;
  }
  int64_t ternary() {
    int64_t a = sum();
    if (eat('<')) {
      int64_t b = sum();
      if (!eat('?'))
        die("expected ?");
      int64_t x = ternary();
      if (!eat(':'))
        die("expected :");
      int64_t y = ternary();
      return a < b ? x : y;
    }
    return a;
  }
  int64_t sum() {
    int64_t v = product();
    for (;;) {
      if (eat('+'))
        v += product();
      else if (eat('-'))
        v -= product();
      else
        return v;
    }
  }
  int64_t product() {
    int64_t v = atom();
    for (;;) {
      if (eat('*'))
        v *= atom();
      else if (eat('/'))
        v /= atom();
      else
        return v;
    }
  }
  int64_t atom() {
    skip();
    if (eat('(')) {
      int64_t v = ternary();
      if (!eat(')'))
        die("expected )");
      return v;
    }
    size_t start = at;
    while (at < text.size() && (std::isalnum((unsigned char)text[at]) || text[at] == '_'))
      ++at;
    std::string word = text.substr(start, at - start);
    if (word.empty())
      die("cannot evaluate '" + text + "'");
    if (std::isdigit((unsigned char)word[0])) {
      while (!word.empty() && (word.back() == 'l' || word.back() == 'L'))
        word.pop_back();
      return std::stoll(word);
    }
    auto found = vars.find(word);
    if (found == vars.end())
      die("unknown name '" + word + "' in '" + text + "'");
    return found->second;
  }
};

Json tensorMapJson(const TensorMapSpec &t, Evaluator &eval, const std::string &where) {
  Json j = Json::object();
  j["param"] = t.param, j["operand"] = t.operand;
  j["dtype"] = t.tf32 ? "tf32" : elemTypeName(t.type);
  Json dims = Json::array(), strides = Json::array(), box = Json::array();
  for (const std::string &d : t.dims)
    dims.push(eval.run(d, where));
  for (const std::string &d : t.strides)
    strides.push(eval.run(d, where));
  for (int b : t.box)
    box.push(b);
  j["dims"] = dims, j["strides"] = strides, j["box"] = box;
  return j;
}

/// One case rendered: the kernel, its manifest entry (roles of its parameters in order, sizes).
struct Rendered {
  KernelSource kernel;
  Json entry;
};

Rendered renderCase(const Json &j, GpuInfo gpu, const std::string &arch) {
  Fields f{j, "case"};
  f.name = f.string("name", "");
  if (f.name.empty())
    die("a case without a name");
  // A case may ask for an older target's heuristic ("arch": "sm_90": no wgmma).
  if (j.find("arch"))
    gpu.sm90a = gpu.sm90a && f.string("arch", "") == "sm_90a";
  std::string op = f.string("op", "");
  ElemType type = parseType(f.string("dtype", "f16"), f.name);
  ElemType out = parseType(f.string("out_dtype", f.string("dtype", "f16")), f.name);
  MathMode math = parseMath(f.string("math", ""), type, f.name);
  std::string epilogue = f.string("epilogue", "store");
  const Json *config = j.find("config");
  Rendered r;
  Json &e = r.entry = Json::object();
  e["name"] = f.name, e["op"] = op, e["dtype"] = elemTypeName(type);
  e["out_dtype"] = elemTypeName(out), e["math"] = mathModeName(math), e["epilogue"] = epilogue;
  Json roles = Json::array();
  std::string error;
  int64_t units = 0, partials = 0, counters = 0, grid = 0;
  Evaluator eval;
  if (op == "gemm") {
    int64_t m = f.integer("m"), n = f.integer("n"), k = f.integer("k"), b = f.integer("batch", 1);
    bool aK = f.flag("a_kmajor", true), bK = f.flag("b_kmajor", true);
    // Row pitches may exceed the extent (a view into a wider buffer).
    int64_t lda = (aK ? k : m) + f.integer("lda_pad", 0),
            ldb = (bK ? k : n) + f.integer("ldb_pad", 0);
    int vec = type == ElemType::F32 ? 4 : 8;
    bool runtime = f.flag("runtime_dims", false);
    GemmSpec s;
    s.name = f.name, s.type = type, s.math = math;
    s.a = {aK, std::to_string(lda), std::to_string(lda * (aK ? m : k)), lda % vec == 0};
    s.b = {bK, std::to_string(ldb), std::to_string(ldb * (bK ? n : k)), ldb % vec == 0};
    if (f.flag("b_broadcast", false))
      s.b.batchStride = "0";
    if (runtime) {
      s.m = "tk_arg_m", s.n = "tk_arg_n", s.k = "tk_arg_k", s.batch = "tk_arg_batch";
      s.scalarParams = {"long long tk_arg_m", "long long tk_arg_n", "long long tk_arg_k",
                        "long long tk_arg_batch"};
    } else {
      s.m = strCat(m, "ll"), s.n = strCat(n, "ll"), s.k = strCat(k, "ll"),
      s.batch = strCat(b, "ll");
    }
    s.config =
        chooseGemmConfig(m, n, k, b, type, math, gpu, aK && bK && s.a.aligned16 && s.b.aligned16);
    if (config)
      s.config = parseConfig(*config, s.config);
    s.epilogue =
        makeEpilogue(epilogue, out, strCat(n, "ll"), strCat(m * n, "ll"), n % vec == 0, f.name);
    r.kernel = renderGemm(s, error);
    units = gemmUnits(s.config, m, n, b);
    grid = gemmGrid(s.config, units);
    eval.vars = {{"tk_arg_m", m}, {"tk_arg_n", n}, {"tk_arg_k", k}, {"tk_arg_batch", b}};
    partials = gemmPartialFloats(s.config, math, m, n, b);
    counters = gemmCounterCount(s.config, m, n, b);
    e["m"] = m, e["n"] = n, e["k"] = k, e["batch"] = b, e["a_kmajor"] = aK, e["b_kmajor"] = bK;
    e["lda"] = lda, e["ldb"] = ldb, e["b_broadcast"] = f.flag("b_broadcast", false);
    e["runtime_dims"] = runtime;
    e["config"] = configJson(s.config);
    roles.push("A"), roles.push("B");
  } else if (op == "conv") {
    ConvSpec s;
    s.name = f.name, s.type = type, s.math = math;
    int64_t n = f.integer("n", 1);
    s.batch = strCat(n, "ll");
    s.h = int(f.integer("h")), s.w = int(f.integer("w")), s.c = int(f.integer("c"));
    s.oc = int(f.integer("oc")), s.kh = int(f.integer("kh")), s.kw = int(f.integer("kw"));
    std::tie(s.strideH, s.strideW) = f.pair("stride", 1);
    std::tie(s.padH, s.padW) = f.pair("pad", 0);
    std::tie(s.dilationH, s.dilationW) = f.pair("dilation", 1);
    s.groups = int(f.integer("groups", 1));
    if (s.c % s.groups || s.oc % s.groups || s.oh() < 1 || s.ow() < 1)
      die(f.name + ": bad convolution geometry");
    s.config = chooseConvConfig(s, n, gpu);
    if (config)
      s.config = parseConfig(*config, s.config);
    int vec = out == ElemType::F32 ? 4 : 8;
    int64_t pixels = n * s.oh() * s.ow();
    s.epilogue = makeEpilogue(epilogue, out, strCat(s.oc, "ll"), "0ll", s.oc % vec == 0, f.name);
    r.kernel = renderConv(s, error);
    int64_t ocg = s.oc / s.groups;
    units = gemmUnits(s.config, pixels, ocg, s.groups);
    grid = gemmGrid(s.config, units);
    partials = gemmPartialFloats(s.config, math, pixels, ocg, s.groups);
    counters = gemmCounterCount(s.config, pixels, ocg, s.groups);
    e["n"] = n, e["h"] = s.h, e["w"] = s.w, e["c"] = s.c, e["oc"] = s.oc, e["kh"] = s.kh;
    e["kw"] = s.kw, e["stride"] = Json::array(), e["pad"] = Json::array();
    e["dilation"] = Json::array();
    e["stride"].push(s.strideH), e["stride"].push(s.strideW);
    e["pad"].push(s.padH), e["pad"].push(s.padW);
    e["dilation"].push(s.dilationH), e["dilation"].push(s.dilationW);
    e["groups"] = s.groups, e["oh"] = s.oh(), e["ow"] = s.ow();
    e["config"] = configJson(s.config);
    roles.push("input"), roles.push("weight");
  } else if (op == "depthwise") {
    DepthwiseSpec s;
    s.name = f.name, s.type = type;
    int64_t n = f.integer("n", 1);
    s.batch = strCat(n, "ll");
    s.h = int(f.integer("h")), s.w = int(f.integer("w")), s.c = int(f.integer("c"));
    s.kh = int(f.integer("kh")), s.kw = int(f.integer("kw"));
    std::tie(s.strideH, s.strideW) = f.pair("stride", 1);
    std::tie(s.padH, s.padW) = f.pair("pad", 0);
    std::tie(s.dilationH, s.dilationW) = f.pair("dilation", 1);
    if (s.oh() < 1 || s.ow() < 1)
      die(f.name + ": bad depthwise geometry");
    chooseDepthwiseTiles(s, n, gpu);
    if (const Json *tile = j.find("tile")) {
      Fields t{*tile, f.name + " tile"};
      s.tileH = int(t.integer("h", s.tileH)), s.tileW = int(t.integer("w", s.tileW));
      s.channelsPerBlock = int(t.integer("c", s.channelsPerBlock));
      s.rowsPerThread = int(t.integer("rows", s.rowsPerThread));
    }
    int vec = type == ElemType::F32 ? 4 : 8;
    s.epilogue = makeEpilogue(epilogue, out, strCat(s.c, "ll"), "0ll", s.c % vec == 0, f.name);
    r.kernel = renderDepthwise(s, error);
    units = n * ((s.oh() + s.tileH - 1) / s.tileH) * ((s.ow() + s.tileW - 1) / s.tileW) *
            ((s.c + s.channelsPerBlock - 1) / s.channelsPerBlock);
    grid = units;
    e["n"] = n, e["h"] = s.h, e["w"] = s.w, e["c"] = s.c, e["kh"] = s.kh, e["kw"] = s.kw;
    e["stride"] = Json::array(), e["pad"] = Json::array(), e["dilation"] = Json::array();
    e["stride"].push(s.strideH), e["stride"].push(s.strideW);
    e["pad"].push(s.padH), e["pad"].push(s.padW);
    e["dilation"].push(s.dilationH), e["dilation"].push(s.dilationW);
    e["oh"] = s.oh(), e["ow"] = s.ow();
    Json tile = Json::object();
    tile["h"] = s.tileH, tile["w"] = s.tileW, tile["c"] = s.channelsPerBlock;
    tile["rows"] = s.rowsPerThread;
    e["tile"] = tile;
    roles.push("input"), roles.push("weight");
  } else {
    die(f.name + ": unknown op '" + op + "' (gemm, conv, depthwise)");
  }
  if (!error.empty())
    die(error);
  if (!r.kernel.tensorMaps.empty()) { // the operand pointers are tensor maps
    roles = Json::array();
    Json maps = Json::array();
    for (const TensorMapSpec &t : r.kernel.tensorMaps) {
      roles.push("map:" + t.operand);
      maps.push(tensorMapJson(t, eval, f.name));
    }
    e["tensor_maps"] = maps;
  }
  if (r.kernel.smemBytes > gpu.smemPerBlock)
    die(strCat(f.name, ": ", r.kernel.smemBytes, " bytes of shared memory, over the ",
               gpu.smemPerBlock, " a block may have"));
  if (!r.kernel.arch.empty() && r.kernel.arch != arch)
    die(f.name + ": the kernel needs " + r.kernel.arch + ", the kit is for " + arch);
  roles.push("out");
  if (epilogue == "bias_relu" || epilogue == "bias_gelu")
    roles.push("bias");
  if (epilogue == "bn_add_relu")
    roles.push("scale"), roles.push("shift"), roles.push("residual");
  if (partials)
    roles.push("partials"), roles.push("counters");
  if (op == "gemm" && f.flag("runtime_dims", false))
    roles.push("m"), roles.push("n"), roles.push("k"), roles.push("batch");
  e["roles"] = roles;
  e["threads"] = r.kernel.threads, e["smem"] = r.kernel.smemBytes, e["units"] = units;
  e["grid"] = grid, e["cluster"] = r.kernel.clusterSize, e["arch"] = r.kernel.arch;
  e["partial_floats"] = partials, e["counter_count"] = counters;
  return r;
}

std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    die("cannot read " + path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

void writeFile(const std::filesystem::path &path, const std::string &bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), std::streamsize(bytes.size()));
  if (!out)
    die("cannot write " + path.string());
}

/// NVRTC: the cubin for `arch`, and ptxas's resource report (registers, spills) in `log`.
std::string compile(const std::string &source, const std::string &name, const std::string &arch,
                    std::string &log, const std::string &define = "") {
  nvrtcProgram program;
  if (nvrtcCreateProgram(&program, source.c_str(), (name + ".cu").c_str(), 0, nullptr, nullptr) !=
      NVRTC_SUCCESS)
    die(name + ": nvrtcCreateProgram failed");
  std::string archOption = "--gpu-architecture=" + arch;
  const char *options[] = {archOption.c_str(), "-std=c++17", "--fmad=true", "--ptxas-options=-v",
                           define.c_str()};
  nvrtcResult result = nvrtcCompileProgram(program, define.empty() ? 4 : 5, options);
  size_t size = 0;
  nvrtcGetProgramLogSize(program, &size);
  log.assign(size, '\0');
  if (size)
    nvrtcGetProgramLog(program, log.data());
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n'))
    log.pop_back();
  if (result != NVRTC_SUCCESS) {
    nvrtcDestroyProgram(&program);
    die(name + " (" + arch + "): " + nvrtcGetErrorString(result) + "\n" + log);
  }
  nvrtcGetCUBINSize(program, &size);
  std::string cubin(size, '\0');
  nvrtcGetCUBIN(program, cubin.data());
  nvrtcDestroyProgram(&program);
  return cubin;
}

int usage() {
  std::cerr << "usage: tensorc-cuda-kernels render CASES.json OUT_DIR [--arch sm_90a] [--sms N]\n"
               "       tensorc-cuda-kernels kit CASES.json OUT_DIR [--arch sm_90a] [--sms N] "
               "[--watchdog MS]\n"
               "       tensorc-cuda-kernels compile FILE.cu --arch sm_90\n";
  return 2;
}

} // namespace

int main(int argc, char **argv) {
  if (argc == 5 && std::string(argv[1]) == "compile" && std::string(argv[3]) == "--arch") {
    std::string log;
    std::string cubin = compile(readFile(argv[2]), "kernels", argv[4], log);
    std::cout << "compiled " << argv[2] << " for " << argv[4] << ": " << cubin.size()
              << " bytes of cubin\n";
    return 0;
  }
  if (argc < 4)
    return usage();
  std::string mode = argv[1], casesPath = argv[2];
  std::filesystem::path outDir = argv[3];
  std::string arch = "sm_90";
  int64_t watchdogMs = 0;
  GpuInfo gpu;
  for (int i = 4; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--arch")
      arch = argv[i + 1];
    else if (flag == "--sms")
      gpu.sms = std::atoi(argv[i + 1]);
    else if (flag == "--watchdog")
      watchdogMs = std::atoll(argv[i + 1]);
    else
      return usage();
  }
  if (mode != "render" && mode != "kit")
    return usage();
  if (watchdogMs < 0)
    die("--watchdog: expected milliseconds (0: wait forever)");
  std::string define = watchdogMs ? strCat("-DTK_WATCHDOG_MS=", watchdogMs, "ull") : "";
  gpu.arch = std::atoi(arch.c_str() + 3);
  gpu.sm90a = arch == "sm_90a";
  if (gpu.arch < 90)
    gpu.smemPerBlock = 163 * 1024;
  Expected<Json> cases = Json::parse(readFile(casesPath));
  if (!cases)
    die(casesPath + ": " + cases.error().message());
  if (!cases->isArray())
    die(casesPath + ": expected a JSON array of cases");
  std::filesystem::create_directories(outDir);
  std::string library = kernelLibrarySource() + kEpilogueHelpers;
  Json manifest = Json::object();
  manifest["arch"] = arch, manifest["sms"] = gpu.sms;
  manifest["watchdog_ms"] = watchdogMs;
  Json kernels = Json::array();
  std::string all = library, portable = library;
  for (const Json &c : cases->items()) {
    Rendered r = renderCase(c, gpu, arch);
    if (mode == "render") {
      all += "\n" + r.kernel.source;
      if (r.kernel.arch.empty())
        portable += "\n" + r.kernel.source;
    } else {
      std::string log;
      std::string cubin =
          compile(library + "\n" + r.kernel.source, r.kernel.name, arch, log, define);
      writeFile(outDir / (r.kernel.name + ".cubin"), cubin);
      r.entry["cubin"] = r.kernel.name + ".cubin";
      r.entry["ptxas"] = log;
      std::cerr << r.kernel.name << ": " << cubin.size() << " bytes\n";
    }
    kernels.push(std::move(r.entry));
  }
  manifest["kernels"] = kernels;
  if (mode == "render") {
    writeFile(outDir / "kernels.cu", all);
    writeFile(outDir / "kernels_portable.cu", portable); // the kernels any target compiles
  }
  writeFile(outDir / "manifest.json", manifest.dump(1) + "\n");
  return 0;
}
