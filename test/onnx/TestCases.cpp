// Test discovery over the ONNX backend test layouts, and the skip-list loader.
#include "TestCases.h"

#include "tensorc/Support/Json.h"
#include "tensorc/Support/StrCat.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace fs = std::filesystem;

namespace tensorc::conformance {
namespace {

/// `prefix0.pb`, `prefix1.pb`, ... up to the first missing index.
std::vector<std::string> numberedFiles(const fs::path &dir, const std::string &prefix) {
  std::vector<std::string> files;
  for (size_t k = 0;; ++k) {
    fs::path file = dir / strCat(prefix, k, ".pb");
    if (!fs::is_regular_file(file))
      return files;
    files.push_back(file.string());
  }
}

/// The number after the last '_' of a `test_data_set_N` name, for numeric order.
long dataSetNumber(const std::string &name) {
  return std::strtol(name.c_str() + name.rfind('_') + 1, nullptr, 10);
}

TestCase directoryTest(const std::string &suite, const fs::path &dir) {
  TestCase test{suite, dir.filename().string(), (dir / "model.onnx").string(), {}, false, ""};
  if (!fs::is_regular_file(test.modelPath)) {
    fs::path reference = dir / "data.json";
    std::ifstream in(reference);
    std::stringstream text;
    text << in.rdbuf();
    Expected<Json> json = Json::parse(text.str());
    const Json *url = json ? json->find("url") : nullptr;
    test.unavailable = url && url->isString()
                           ? "no local model: data.json only references " + url->asString()
                           : "no model.onnx in the test directory";
    return test;
  }
  std::vector<fs::path> dataDirs;
  for (const fs::directory_entry &entry : fs::directory_iterator(dir))
    if (entry.is_directory() && entry.path().filename().string().starts_with("test_data_set_"))
      dataDirs.push_back(entry.path());
  std::sort(dataDirs.begin(), dataDirs.end(), [](const fs::path &a, const fs::path &b) {
    return dataSetNumber(a.filename().string()) < dataSetNumber(b.filename().string());
  });
  for (const fs::path &dataDir : dataDirs)
    test.dataSets.push_back({dataDir.filename().string(), numberedFiles(dataDir, "input_"),
                             numberedFiles(dataDir, "output_")});
  if (test.dataSets.empty())
    test.unavailable = "no test_data_set_* directory";
  return test;
}

TestCase lightModelTest(const std::string &suite, const fs::path &model) {
  std::string stem = model.stem().string();
  TestCase test{suite, stem, model.string(), {}, true, ""};
  std::vector<std::string> outputs = numberedFiles(model.parent_path(), stem + "_output_");
  if (outputs.empty())
    test.unavailable = "no " + stem + "_output_0.pb next to the model";
  else
    test.dataSets.push_back({"generated", {}, std::move(outputs)});
  return test;
}

std::string trim(const std::string &text) {
  size_t begin = text.find_first_not_of(" \t\r");
  if (begin == std::string::npos)
    return "";
  return text.substr(begin, text.find_last_not_of(" \t\r") + 1 - begin);
}

} // namespace

Expected<std::vector<TestCase>> discoverSuite(const std::string &suite, const std::string &dir) {
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  if (ec)
    return makeError("suite ", suite, ": cannot read ", dir, ": ", ec.message());
  std::vector<TestCase> tests;
  for (const fs::directory_entry &entry : it) {
    if (entry.is_directory())
      tests.push_back(directoryTest(suite, entry.path()));
    else if (entry.path().extension() == ".onnx")
      tests.push_back(lightModelTest(suite, entry.path()));
  }
  std::sort(tests.begin(), tests.end(),
            [](const TestCase &a, const TestCase &b) { return a.name < b.name; });
  return tests;
}

Expected<std::map<std::string, std::string>> loadSkipList(const std::string &path) {
  std::ifstream in(path);
  if (!in)
    return makeError(path, ": cannot open the skip list");
  std::map<std::string, std::string> reasons;
  std::string line;
  for (int lineNumber = 1; std::getline(in, line); ++lineNumber) {
    std::string text = trim(line);
    if (text.empty() || text[0] == '#')
      continue;
    size_t hash = text.find('#');
    std::string name = trim(text.substr(0, hash));
    std::string reason = hash == std::string::npos ? "" : trim(text.substr(hash + 1));
    if (reason.empty())
      return makeError(path, ":", lineNumber, ": entry '", name, "' has no reason; write `", name,
                       "  # why it is skipped`");
    if (name.find_first_of(" \t") != std::string::npos)
      return makeError(path, ":", lineNumber, ": '", name, "' is not one test name");
    if (!reasons.emplace(name, reason).second)
      return makeError(path, ":", lineNumber, ": '", name, "' is listed twice");
  }
  return reasons;
}

} // namespace tensorc::conformance
