// tensorc-cuda-kernels: renders the kernel library's kernels for a list of cases (a JSON file)
// and either writes their CUDA source (for the CPU emulation test) or compiles them with NVRTC
// into a kit of cubins plus a manifest (for bench/cuda_kernels.py on a GPU machine).
//
//   tensorc-cuda-kernels render CASES.json OUT_DIR   -> OUT_DIR/kernels.cu, OUT_DIR/manifest.json
//   tensorc-cuda-kernels kit CASES.json OUT_DIR [--arch sm_90] [--sms 132]
//                                                    -> OUT_DIR/<case>.cubin, manifest.json
//   tensorc-cuda-kernels compile FILE.cu --arch sm_80  (NVRTC only: rendered kernels compile)
//
// This is the caller side of the library's epilogue hook: the epilogues here (plain store,
// bias + ReLU, folded batch norm + residual + ReLU, bias + GELU, each converting to the output
// dtype) are what the CUDA renderer's fused pointwise epilogues will render in its place.
#include "KernelLibrary.h"

#include "tensorc/Support/Json.h"
#include "tensorc/Support/StrCat.h"

#include <nvrtc.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
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
  j["bm"] = c.bm, j["bn"] = c.bn, j["bk"] = c.bk, j["warps_m"] = c.warpsM;
  j["warps_n"] = c.warpsN, j["stages"] = c.stages, j["split_k"] = c.splitK;
  return j;
}

/// One case rendered: the kernel, its manifest entry (roles of its parameters in order, sizes).
struct Rendered {
  KernelSource kernel;
  Json entry;
};

Rendered renderCase(const Json &j, const GpuInfo &gpu) {
  Fields f{j, "case"};
  f.name = f.string("name", "");
  if (f.name.empty())
    die("a case without a name");
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
  int64_t units = 0, partials = 0, counters = 0;
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
    s.config = chooseGemmConfig(m, n, k, b, type, math, gpu);
    if (config)
      s.config = parseConfig(*config, s.config);
    s.epilogue =
        makeEpilogue(epilogue, out, strCat(n, "ll"), strCat(m * n, "ll"), n % vec == 0, f.name);
    r.kernel = renderGemm(s, error);
    units = gemmUnits(s.config, m, n, b);
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
                    std::string &log) {
  nvrtcProgram program;
  if (nvrtcCreateProgram(&program, source.c_str(), (name + ".cu").c_str(), 0, nullptr, nullptr) !=
      NVRTC_SUCCESS)
    die(name + ": nvrtcCreateProgram failed");
  std::string archOption = "--gpu-architecture=" + arch;
  const char *options[] = {archOption.c_str(), "-std=c++17", "--fmad=true", "--ptxas-options=-v"};
  nvrtcResult result = nvrtcCompileProgram(program, 4, options);
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
  std::cerr << "usage: tensorc-cuda-kernels render CASES.json OUT_DIR [--sms N]\n"
               "       tensorc-cuda-kernels kit CASES.json OUT_DIR [--arch sm_90] [--sms N]\n"
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
  GpuInfo gpu;
  for (int i = 4; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--arch")
      arch = argv[i + 1];
    else if (flag == "--sms")
      gpu.sms = std::atoi(argv[i + 1]);
    else
      return usage();
  }
  if (mode != "render" && mode != "kit")
    return usage();
  gpu.arch = std::atoi(arch.c_str() + 3);
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
  Json kernels = Json::array();
  std::string all = library;
  for (const Json &c : cases->items()) {
    Rendered r = renderCase(c, gpu);
    if (mode == "render") {
      all += "\n" + r.kernel.source;
    } else {
      std::string log;
      std::string cubin = compile(library + "\n" + r.kernel.source, r.kernel.name, arch, log);
      writeFile(outDir / (r.kernel.name + ".cubin"), cubin);
      r.entry["cubin"] = r.kernel.name + ".cubin";
      r.entry["ptxas"] = log;
      std::cerr << r.kernel.name << ": " << cubin.size() << " bytes\n";
    }
    kernels.push(std::move(r.entry));
  }
  manifest["kernels"] = kernels;
  if (mode == "render")
    writeFile(outDir / "kernels.cu", all);
  writeFile(outDir / "manifest.json", manifest.dump(1) + "\n");
  return 0;
}
