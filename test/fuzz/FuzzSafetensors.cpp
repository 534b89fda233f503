// libFuzzer harness: arbitrary bytes as a .safetensors file, read by both readers (Support's
// file reader and the runtime's in-memory one, which --emit=so libraries use); each must reject
// or accept without a memory error, and every tensor either accepts must lie within the bytes.
#include "FuzzCommon.h"

#include "WeightSource.h"
#include "tensorc/Support/Safetensors.h"

#include <fstream>

using namespace tensorc;

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  fuzz::limitTensorBytes();
  return 0;
}

namespace {

/// Reads every byte of every tensor (ASan reports a view past the data).
uint64_t touch(const std::map<std::string, Tensor> &tensors) {
  uint64_t sum = 0;
  for (const auto &[name, tensor] : tensors) {
    const unsigned char *bytes = static_cast<const unsigned char *>(tensor.data());
    for (size_t i = 0; i < tensor.nbytes(); ++i)
      sum += bytes[i];
  }
  return sum;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  // The in-memory reader views an exact-size heap copy, so ASan sees any read past its end.
  std::string copy(reinterpret_cast<const char *>(data), size);
  Expected<std::unique_ptr<rt::WeightSource>> viewed =
      rt::viewWeightBytes(copy.data(), copy.size(), "fuzz");
  if (viewed)
    (void)touch((*viewed)->tensors());

  std::string path = fuzz::scratchDir() + "/fuzz.safetensors";
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(copy.data(), std::streamsize(copy.size()));
  }
  Expected<std::map<std::string, Tensor>> read = readSafetensors(path);
  if (read)
    (void)touch(*read);
  return 0;
}
