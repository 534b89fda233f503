// The tensor size limit: parsing, the environment default and the check with its message.
#include "tensorc/Support/Limits.h"

#include "tensorc/Support/StrCat.h"
#include "tensorc/Support/Tensor.h"

#include <cctype>
#include <cstdio>
#include <cstdlib>

namespace tensorc {

Expected<int64_t> parseByteSize(std::string_view text) {
  size_t pos = 0;
  int64_t value = 0;
  while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos]))) {
    if (__builtin_mul_overflow(value, int64_t(10), &value) ||
        __builtin_add_overflow(value, int64_t(text[pos] - '0'), &value))
      return makeError("byte size '", text, "' does not fit in 64 bits");
    ++pos;
  }
  if (pos == 0)
    return makeError("byte size '", text, "': expected a number of bytes such as 4G or 512M");
  std::string suffix;
  for (char c : text.substr(pos))
    suffix += char(std::toupper(static_cast<unsigned char>(c)));
  int shift = 0;
  if (suffix.empty() || suffix == "B")
    shift = 0;
  else if (suffix == "K" || suffix == "KB" || suffix == "KIB")
    shift = 10;
  else if (suffix == "M" || suffix == "MB" || suffix == "MIB")
    shift = 20;
  else if (suffix == "G" || suffix == "GB" || suffix == "GIB")
    shift = 30;
  else if (suffix == "T" || suffix == "TB" || suffix == "TIB")
    shift = 40;
  else
    return makeError("byte size '", text, "': unknown suffix '", text.substr(pos),
                     "' (expected K, M, G or T)");
  if (shift > 0 && value > (INT64_MAX >> shift))
    return makeError("byte size '", text, "' does not fit in 64 bits");
  return value << shift;
}

Expected<int64_t> byteSizeFromEnv(const char *name, int64_t fallback) {
  const char *env = std::getenv(name);
  if (!env || !*env)
    return fallback;
  Expected<int64_t> size = parseByteSize(env);
  if (!size)
    return size.takeError().withContext(name);
  return size;
}

Expected<int64_t> maxTensorBytesFromEnv() {
  return byteSizeFromEnv(kMaxTensorBytesEnv, kDefaultMaxTensorBytes);
}

Expected<int64_t> resolveMaxTensorBytes(int64_t explicitLimit) {
  if (explicitLimit > 0)
    return explicitLimit;
  return maxTensorBytesFromEnv();
}

std::string formatBytes(int64_t bytes) {
  static const char *const kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (bytes < 1024)
    return strCat(bytes, bytes == 1 ? " byte" : " bytes");
  double value = double(bytes);
  int unit = -1;
  while (value >= 1024 && unit < 5) {
    value /= 1024;
    ++unit;
  }
  char text[32];
  if (value == double(int64_t(value)))
    std::snprintf(text, sizeof text, "%lld %s", static_cast<long long>(value), kUnits[unit]);
  else
    std::snprintf(text, sizeof text, "%.1f %s", value, kUnits[unit]);
  return text;
}

bool tensorBytesWithin(DType dtype, const std::vector<int64_t> &shape, int64_t limit) {
  int64_t bytes = int64_t(dtypeSize(dtype));
  for (int64_t dim : shape)
    if (dim < 0 || __builtin_mul_overflow(bytes, dim, &bytes))
      return false;
  return bytes <= limit;
}

Status checkTensorBytes(DType dtype, const std::vector<int64_t> &shape, int64_t limit,
                        const std::string &what) {
  if (tensorBytesWithin(dtype, shape, limit))
    return Status::ok();
  std::string described = describeShape(dtype, shape);
  TC_ASSIGN_OR_RETURN(int64_t count, checkedNumel(shape, what + " " + described));
  int64_t bytes = 0;
  if (__builtin_mul_overflow(count, int64_t(dtypeSize(dtype)), &bytes))
    return makeError(what, " is ", described, ", whose byte size overflows 64 bits");
  if (bytes > limit)
    return makeError(what, " is ", described, " (", formatBytes(bytes),
                     "), more than the tensor size limit of ", formatBytes(limit),
                     " (raise it with --max-tensor-bytes or ", kMaxTensorBytesEnv, ")");
  return Status::ok();
}

} // namespace tensorc
