// ONNX backend tests: finding them on disk, the reviewed skip list, and a test's result.
#pragma once

#include "tensorc/Support/Status.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace tensorc::conformance {

enum class TestStatus { Passed, Failed, Skipped };

inline const char *statusName(TestStatus status) {
  switch (status) {
  case TestStatus::Passed:
    return "passed";
  case TestStatus::Failed:
    return "failed";
  case TestStatus::Skipped:
    return "skipped";
  }
  return "?";
}

/// A failure's reason starts with its category: `import:`, `compile:`, `run:`, `compare:`,
/// `crashed` or `timed out`. A skip's reason comes from the skip list or the test's layout.
struct TestResult {
  TestStatus status = TestStatus::Failed;
  std::string reason;
  /// Compiled targets: whether the model ran at least one generated kernel (false: only the
  /// reference kernels' fallbacks). Unset for the interpreter, skips and early failures.
  std::optional<bool> generatedCode;
};

/// One `test_data_set_*`: serialized TensorProtos, inputs and expected outputs in order.
struct DataSet {
  std::string name;
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
};

struct TestCase {
  std::string suite;
  std::string name;
  std::string modelPath;
  std::vector<DataSet> dataSets;
  /// The inputs are not on disk and are generated as onnx's runner does for its "light" models:
  /// float32 `arange(n).reshape(shape) / n`, symbolic dims taken as 1.
  bool generatedInputs = false;
  /// Non-empty when the test cannot run from what is on disk (e.g. a model known only by URL).
  std::string unavailable;
};

/// The tests of the suite in `dir`, sorted by name. Two layouts are understood: a directory per
/// test (`model.onnx`, `test_data_set_*/{input,output}_K.pb`; a `data.json` alone names a model
/// to download and becomes an unavailable test), and onnx's light models (`light_X.onnx` next to
/// `light_X_output_K.pb`). Errors if `dir` cannot be read.
Expected<std::vector<TestCase>> discoverSuite(const std::string &suite, const std::string &dir);

/// Test name -> reason. Lines are `test_name  # reason`; blank lines and lines starting with `#`
/// are comments. An entry without a reason, or listed twice, is an error naming the line.
Expected<std::map<std::string, std::string>> loadSkipList(const std::string &path);

} // namespace tensorc::conformance
