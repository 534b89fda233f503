// The tensor size limit: the most bytes one tensor may take when tensorc materializes it.
#pragma once

#include "tensorc/Support/DType.h"
#include "tensorc/Support/Status.h"
#include "tensorc/Support/Tensor.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tensorc {

/// A model is a few hundred bytes that may declare shapes far larger than any memory (a OneHot
/// depth of 2^31, a pad of 2^31): every tensor tensorc materializes (import-time constants, the
/// interpreter's results, the runtime's inputs, outputs and scratch buffers) is checked against
/// this many bytes before it is allocated. `--max-tensor-bytes` or TENSORC_MAX_TENSOR_BYTES
/// raise it.
constexpr int64_t kDefaultMaxTensorBytes = int64_t(4) << 30;

/// The environment variable naming the limit ("16G", "512M", "1000000").
inline constexpr const char *kMaxTensorBytesEnv = "TENSORC_MAX_TENSOR_BYTES";

/// A byte count: digits with an optional suffix K, M, G, T (powers of 1024; "KiB", "GB" and the
/// like are accepted too). Errors quote the text.
Expected<int64_t> parseByteSize(std::string_view text);

/// The byte size environment variable `name` holds, `fallback` when it is unset or empty; an
/// unparsable value is an error naming the variable.
Expected<int64_t> byteSizeFromEnv(const char *name, int64_t fallback);

/// TENSORC_MAX_TENSOR_BYTES when set (an unparsable value is an error naming it), else
/// kDefaultMaxTensorBytes.
Expected<int64_t> maxTensorBytesFromEnv();

/// `explicitLimit` when positive, else maxTensorBytesFromEnv().
Expected<int64_t> resolveMaxTensorBytes(int64_t explicitLimit);

/// "24 GiB", "1.5 MiB", "100 bytes": for messages.
std::string formatBytes(int64_t bytes);

/// An error when a tensor of `dtype` and `shape` would need more than `limit` bytes (or its size
/// overflows): "<what> is f32[3, 2147483648] (24 GiB), more than the tensor size limit of 4 GiB
/// (raise it with --max-tensor-bytes or TENSORC_MAX_TENSOR_BYTES)".
Status checkTensorBytes(DType dtype, const std::vector<int64_t> &shape, int64_t limit,
                        const std::string &what);

/// checkedNumel that builds the message's `what()` only when there is an error (hot paths: a
/// model's every run checks its buffers).
template <class What>
Expected<int64_t> checkedNumelLazily(const std::vector<int64_t> &shape, What &&what) {
  int64_t total = 1;
  for (int64_t dim : shape) {
    if (dim < 0 || (dim != 0 && total > INT64_MAX / dim))
      return checkedNumel(shape, what());
    total *= dim;
  }
  return total;
}

/// Whether that check passes (no message built).
bool tensorBytesWithin(DType dtype, const std::vector<int64_t> &shape, int64_t limit);

/// checkTensorBytes naming the tensor by `what()` only when it fails (hot paths).
template <class What>
Status checkTensorBytesLazily(DType dtype, const std::vector<int64_t> &shape, int64_t limit,
                              What &&what) {
  if (tensorBytesWithin(dtype, shape, limit))
    return Status::ok();
  return checkTensorBytes(dtype, shape, limit, what());
}

} // namespace tensorc
