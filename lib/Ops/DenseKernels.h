// Kernels shared by the dense op groups: the blocked GEMM and f16/bf16 staging through f32.
#pragma once

#include "OpHelpers.h"
#include "tensorc/Support/Tensor.h"

#include <cstdint>
#include <type_traits>
#include <vector>

namespace tensorc::ops {

/// A read-only strided matrix: element (i, j) is data[i * rowStride + j * colStride].
template <typename T> struct MatrixView {
  const T *data = nullptr;
  int64_t rowStride = 0;
  int64_t colStride = 0;
};

/// C += alpha * A @ B with A [m, k], B [k, n] (any strides) and C row-major [m, n] with leading
/// dimension `ldc`. Packs panels of A and B and runs a register-blocked micro-kernel (AVX2+FMA
/// when the CPU has it); splits large problems over the hardware threads. Implemented in
/// LinearAlgebra.cpp.
void gemm(int64_t m, int64_t n, int64_t k, float alpha, MatrixView<float> a, MatrixView<float> b,
          float *c, int64_t ldc);
void gemm(int64_t m, int64_t n, int64_t k, double alpha, MatrixView<double> a, MatrixView<double> b,
          double *c, int64_t ldc);

/// `tensor` converted to `dtype` (shared, not copied, when it already has it): integers go
/// through int64 so that large values survive, anything with a float through double.
/// Implemented in Views.cpp.
Expected<Tensor> convertTo(const Tensor &tensor, DType dtype);

/// Whether kernels compute `dtype` by widening to f32 (f16 and bf16).
inline bool computesInF32(DType dtype) { return dtype == DType::F16 || dtype == DType::BF16; }
/// An f16/bf16 tensor widened to f32; an f32 tensor is returned as is (sharing its bytes).
Expected<Tensor> widenToF32(const Tensor &tensor);
/// Rounds the f32 `source` into `dest` (f16 or bf16, same element count), nearest-even.
void narrowFromF32(const Tensor &source, Tensor &dest);

/// Runs `fn(T{}, inputs, out)` with T the compute type of `out`'s dtype: for f16/bf16, T is float,
/// the inputs are widened copies (nullptr stays nullptr) and the f32 result is rounded into `out`
/// afterwards. Inputs of other dtypes must have `out`'s dtype (or be f32 when it is f16/bf16).
template <typename Fn>
Status dispatchCompute(const std::vector<const Tensor *> &inputs, Tensor &out, Fn &&fn) {
  if (computesInF32(out.dtype())) {
    std::vector<Tensor> wide(inputs.size());
    std::vector<const Tensor *> widePointers(inputs.size(), nullptr);
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (!inputs[i])
        continue;
      TC_ASSIGN_OR_RETURN(wide[i], widenToF32(*inputs[i]));
      widePointers[i] = &wide[i];
    }
    TC_ASSIGN_OR_RETURN(Tensor out32, Tensor::zeros(DType::F32, out.shape()));
    TC_RETURN_IF_ERROR(fn(float{}, widePointers, out32));
    narrowFromF32(out32, out);
    return Status::ok();
  }
  return visitDType(out.dtype(), [&](auto zero) -> Status { return fn(zero, inputs, out); });
}

/// dispatchCompute for kernels with only a floating form: runs `fn(T{}, inputs, out)` (returning
/// nothing) for a floating T; an integer `out` is the error "<op> needs a floating dtype, got i64".
template <typename Fn>
Status dispatchFloating(const char *op, const std::vector<const Tensor *> &inputs, Tensor &out,
                        Fn &&fn) {
  return dispatchCompute(
      inputs, out, [&](auto zero, const std::vector<const Tensor *> &in, Tensor &y) -> Status {
        if constexpr (std::is_floating_point_v<decltype(zero)>) {
          fn(zero, in, y);
          return Status::ok();
        } else {
          return makeError(op, " needs a floating dtype, got ", dtypeName(y.dtype()));
        }
      });
}

} // namespace tensorc::ops
