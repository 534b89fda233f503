// cuBLASLt through dlopen: the entry points, and a plan per GEMM problem.
#include "CublasLt.h"

#include "tensorc/Support/StrCat.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>

namespace tensorc::rt::blaslt {

namespace {

// ABI values (cublasLt.h, cublas_api.h, library_types.h).
constexpr int kComputeF32 = 68;                           // CUBLAS_COMPUTE_32F: strict f32 FMAs
constexpr int kComputeF32FastTf32 = 77;                   // CUBLAS_COMPUTE_32F_FAST_TF32
constexpr int kRealF32 = 0, kRealF16 = 2, kRealBF16 = 14; // cudaDataType
constexpr int kOpN = 0, kOpT = 1;
constexpr int kDescTransA = 3, kDescTransB = 4, kDescEpilogue = 7, kDescBiasPointer = 8,
              kDescBiasDataType = 26;
constexpr int kEpilogueBias = 4; // CUBLASLT_EPILOGUE_BIAS: + a vector along D's rows
constexpr int kLayoutBatchCount = 5, kLayoutBatchStride = 6;
constexpr int kPrefMaxWorkspace = 1;
constexpr int kPrefAlignmentA = 5, kPrefAlignmentB = 6, kPrefAlignmentC = 7, kPrefAlignmentD = 8;

Expected<Library> load() {
  std::vector<std::string> names;
  if (const char *path = std::getenv("TENSORC_CUBLASLT"); path && *path)
    names.push_back(path);
  else
    names = {"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so"};
  void *handle = nullptr;
  std::string tried;
  for (const std::string &name : names) {
    handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      const char *why = dlerror();
      tried += strCat(tried.empty() ? "" : "; ", why ? why : name);
      continue;
    }
    Library library{};
    library.file = name;
    std::string missing;
    auto resolve = [&](auto &slot, const char *symbol) {
      cu::resolveSymbol(handle, slot, symbol, missing);
    };
    resolve(library.create, "cublasLtCreate");
    resolve(library.destroy, "cublasLtDestroy");
    resolve(library.descCreate, "cublasLtMatmulDescCreate");
    resolve(library.descDestroy, "cublasLtMatmulDescDestroy");
    resolve(library.descSetAttribute, "cublasLtMatmulDescSetAttribute");
    resolve(library.layoutCreate, "cublasLtMatrixLayoutCreate");
    resolve(library.layoutDestroy, "cublasLtMatrixLayoutDestroy");
    resolve(library.layoutSetAttribute, "cublasLtMatrixLayoutSetAttribute");
    resolve(library.preferenceCreate, "cublasLtMatmulPreferenceCreate");
    resolve(library.preferenceDestroy, "cublasLtMatmulPreferenceDestroy");
    resolve(library.preferenceSetAttribute, "cublasLtMatmulPreferenceSetAttribute");
    resolve(library.heuristic, "cublasLtMatmulAlgoGetHeuristic");
    resolve(library.matmul, "cublasLtMatmul");
    if (missing.empty())
      return library; // stays loaded for the process
    dlclose(handle);
    tried += strCat(tried.empty() ? "" : "; ", name, ": no ", missing);
  }
  return makeError("cannot load cuBLASLt (", tried,
                   "); set TENSORC_CUBLASLT to the library's path, or add its directory to "
                   "LD_LIBRARY_PATH");
}

int realType(DType dtype) {
  return dtype == DType::F16 ? kRealF16 : dtype == DType::BF16 ? kRealBF16 : kRealF32;
}

} // namespace

Status Library::check(int status, const std::string &what) const {
  if (status == 0)
    return Status::ok();
  return makeError(what, ": cuBLASLt status ", status);
}

Expected<const Library *> library() {
  static std::once_flag once;
  static Expected<Library> loaded = makeError("cuBLASLt not loaded");
  std::call_once(once, [] { loaded = load(); });
  if (!loaded)
    return makeError(loaded.error().message());
  return &*loaded;
}

std::string Problem::describe() const {
  return strCat(dtypeName(dtype), tf32 ? " (TF32)" : "", " ", batch > 1 ? strCat(batch, "x ") : "",
                m, "x", n, "x", k, " (A ", a.kContiguous ? "k" : "m", "-major, B ",
                b.kContiguous ? "k" : "n", "-major", output != DType::F32 ? ", out " : "",
                output != DType::F32 ? dtypeName(output) : "", bias ? ", + bias" : "", ")");
}

Expected<std::unique_ptr<Plan>> Plan::create(const Library &library, Handle handle,
                                             const Problem &p, int maxAlgorithms) {
  std::unique_ptr<Plan> plan(new Plan());
  plan->library_ = &library;
  plan->handle_ = handle;
  const Library &l = library;
  // cuBLASLt is column-major: row-major C[M][N] = A . B is column-major C^T[N][M] = B^T . A^T,
  // so B is the library's first operand and A its second; C^T is N x M with N between columns.
  struct Matrix {
    uint64_t rows, cols;
    int64_t ld;
    int op;
  };
  auto matrix = [](bool kContiguous, int64_t k, int64_t other, int64_t ld,
                   bool first) -> Expected<Matrix> {
    // K-contiguous: a column-major K x other matrix (columns `ld` apart); otherwise other x K.
    Matrix m{uint64_t(kContiguous ? k : other), uint64_t(kContiguous ? other : k), ld, 0};
    m.op = first ? (kContiguous ? kOpT : kOpN) : (kContiguous ? kOpN : kOpT);
    if (m.ld < int64_t(m.rows)) {
      if (m.cols != 1)
        return makeError("lines ", ld, " elements apart are shorter than ", m.rows);
      m.ld = int64_t(m.rows); // one line: its stride is never used
    }
    return m;
  };
  TC_ASSIGN_OR_RETURN(Matrix first, matrix(p.b.kContiguous, p.k, p.n, p.b.ld, true));
  TC_ASSIGN_OR_RETURN(Matrix second, matrix(p.a.kContiguous, p.k, p.m, p.a.ld, false));
  int type = realType(p.dtype);
  int compute = p.dtype == DType::F32 && p.tf32 ? kComputeF32FastTf32 : kComputeF32;
  TC_RETURN_IF_ERROR(l.check(l.descCreate(&plan->desc_, compute, kRealF32), "matmul descriptor"));
  TC_RETURN_IF_ERROR(l.check(
      l.descSetAttribute(plan->desc_, kDescTransA, &first.op, sizeof first.op), "transpose A"));
  TC_RETURN_IF_ERROR(l.check(
      l.descSetAttribute(plan->desc_, kDescTransB, &second.op, sizeof second.op), "transpose B"));
  if (p.bias) {
    // C^T's rows are N: the bias runs along them, in the output's dtype.
    int epilogue = kEpilogueBias, biasType = realType(p.output);
    TC_RETURN_IF_ERROR(l.check(
        l.descSetAttribute(plan->desc_, kDescEpilogue, &epilogue, sizeof epilogue), "epilogue"));
    TC_RETURN_IF_ERROR(
        l.check(l.descSetAttribute(plan->desc_, kDescBiasDataType, &biasType, sizeof biasType),
                "bias dtype"));
    TC_RETURN_IF_ERROR(l.check(
        l.descSetAttribute(plan->desc_, kDescBiasPointer, &p.bias, sizeof p.bias), "bias pointer"));
  }
  int32_t batch = int32_t(p.batch);
  auto layout = [&](Layout &out, int dtype, const Matrix &m, int64_t batchStride) -> Status {
    TC_RETURN_IF_ERROR(l.check(l.layoutCreate(&out, dtype, m.rows, m.cols, m.ld), "layout"));
    if (batch > 1) {
      TC_RETURN_IF_ERROR(l.check(l.layoutSetAttribute(out, kLayoutBatchCount, &batch, sizeof batch),
                                 "batch count"));
      TC_RETURN_IF_ERROR(
          l.check(l.layoutSetAttribute(out, kLayoutBatchStride, &batchStride, sizeof batchStride),
                  "batch stride"));
    }
    return Status::ok();
  };
  TC_RETURN_IF_ERROR(layout(plan->layoutA_, type, first, p.b.batchStride));
  TC_RETURN_IF_ERROR(layout(plan->layoutB_, type, second, p.a.batchStride));
  TC_RETURN_IF_ERROR(layout(plan->layoutD_, realType(p.output),
                            Matrix{uint64_t(p.n), uint64_t(p.m), p.n, kOpN}, p.m * p.n));

  Preference preference = nullptr;
  TC_RETURN_IF_ERROR(l.check(l.preferenceCreate(&preference), "matmul preference"));
  uint64_t workspace = kWorkspaceBytes;
  uint32_t alignFirst = uint32_t(p.b.alignment), alignSecond = uint32_t(p.a.alignment),
           alignD = uint32_t(p.outputAlignment);
  Status set =
      l.check(l.preferenceSetAttribute(preference, kPrefMaxWorkspace, &workspace, sizeof workspace),
              "workspace preference");
  for (auto [attr, value] :
       {std::pair{kPrefAlignmentA, &alignFirst}, std::pair{kPrefAlignmentB, &alignSecond},
        std::pair{kPrefAlignmentC, &alignD}, std::pair{kPrefAlignmentD, &alignD}})
    if (set)
      set = l.check(l.preferenceSetAttribute(preference, attr, value, sizeof *value),
                    "alignment preference");
  std::vector<HeuristicResult> results(size_t(std::max(maxAlgorithms, 1)));
  int returned = 0;
  if (set)
    set = l.check(l.heuristic(handle, plan->desc_, plan->layoutA_, plan->layoutB_, plan->layoutD_,
                              plan->layoutD_, preference, int(results.size()), results.data(),
                              &returned),
                  "no algorithm for " + p.describe());
  l.preferenceDestroy(preference);
  TC_RETURN_IF_ERROR(set);
  for (int i = 0; i < returned; ++i)
    if (results[size_t(i)].state == 0 && results[size_t(i)].workspaceSize <= kWorkspaceBytes)
      plan->algorithms_.push_back(results[size_t(i)]);
  if (plan->algorithms_.empty())
    return makeError("no algorithm for ", p.describe());
  return plan;
}

Plan::~Plan() {
  if (!library_)
    return;
  for (Layout layout : {layoutA_, layoutB_, layoutD_})
    if (layout)
      library_->layoutDestroy(layout);
  if (desc_)
    library_->descDestroy(desc_);
}

Status Plan::run(const void *a, const void *b, const void *bias, void *c, void *workspace,
                 cu::Stream stream, size_t algo) const {
  const HeuristicResult &chosen = algorithms_[std::min(algo, algorithms_.size() - 1)];
  if (bias)
    TC_RETURN_IF_ERROR(library_->check(
        library_->descSetAttribute(desc_, kDescBiasPointer, &bias, sizeof bias), "bias pointer"));
  const float one = 1.0f, zero = 0.0f;
  // The library's first operand is B (see create).
  return library_->check(library_->matmul(handle_, desc_, &one, b, layoutA_, a, layoutB_, &zero, c,
                                          layoutD_, c, layoutD_, &chosen.algo, workspace,
                                          kWorkspaceBytes, stream),
                         "cublasLtMatmul");
}

} // namespace tensorc::rt::blaslt
