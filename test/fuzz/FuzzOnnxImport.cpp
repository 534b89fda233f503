// libFuzzer harness: arbitrary bytes imported as an ONNX model (protobuf parse, checks, every
// converter, import-time folding). A rejection is fine; a crash, leak, hang or sanitizer report
// is a finding.
#include "FuzzCommon.h"

#include "tensorc/Frontend/ONNX/OnnxImporter.h"
#include "tensorc/IR/Printer.h"

using namespace tensorc;

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  fuzz::limitTensorBytes();
  fuzz::registry();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string bytes(reinterpret_cast<const char *>(data), size);
  Expected<Graph> graph = onnx::importOnnxBytes(bytes, fuzz::scratchDir(), fuzz::registry());
  if (graph)
    (void)printGraph(*graph);
  return 0;
}
