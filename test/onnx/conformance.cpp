// tensorc-conformance: runs ONNX backend test suites on a target, each test in a forked process.
#include "CompareOutputs.h"
#include "ConformanceTarget.h"
#include "FailureSummary.h"
#include "TestCases.h"

#include "tensorc/Frontend/FX/FxParser.h"
#include "tensorc/Frontend/ONNX/OnnxImporter.h"
#include "tensorc/IR/Printer.h"
#include "tensorc/IR/Rewriter.h"
#include "tensorc/Lowering/LoopParser.h"
#include "tensorc/Ops/Registry.h"
#include "tensorc/Pipeline/Pipeline.h"
#include "tensorc/Support/Json.h"
#include "tensorc/Support/StrCat.h"
#include "tensorc/Transforms/PassRegistry.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <poll.h>
#include <regex>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

using namespace tensorc;
using namespace tensorc::conformance;
using Clock = std::chrono::steady_clock;

constexpr const char *kDebianTestData = "/usr/share/libonnx-testdata/data";
constexpr size_t kProgressEvery = 100;
constexpr size_t kStderrTailChars = 4096;

struct Options {
  std::string target = "interp";
  std::vector<std::string> suites;
  std::string skipList;
  std::string report;
  std::string filter;
  int64_t minPassed = 0;
  double timeoutSeconds = 60;
  unsigned jobs = 1;
  bool verbose = false;
  bool roundTrip = false;
  std::string passes;
  Tolerance tolerance;
  std::string kit; // --target cuda without a GPU: export each test into this GPU test kit
  int64_t minCompiled = 0;
};

//===----------------------------------------------------------------------===//
// One test, run inside the forked child.
//===----------------------------------------------------------------------===//

/// Reasons are one line, and name files relative to the test directory so that they group.
std::string tidyReason(std::string reason, const TestCase &test) {
  std::string testDir = std::filesystem::path(test.modelPath).parent_path().string() + "/";
  for (size_t at; (at = reason.find(testDir)) != std::string::npos;)
    reason.erase(at, testDir.size());
  for (char &c : reason)
    if (c == '\n' || c == '\r')
      c = ';';
  return reason;
}

Expected<std::vector<Tensor>> readTensors(const std::vector<std::string> &paths) {
  std::vector<Tensor> tensors;
  for (const std::string &path : paths) {
    TC_ASSIGN_OR_RETURN(Tensor tensor, onnx::readTensorProtoFile(path));
    tensors.push_back(std::move(tensor));
  }
  return tensors;
}

/// onnx 1.12's bf16 cast tests (test_cast_*BFLOAT16*, test_castlike_*BFLOAT16*) store bf16 bit
/// patterns as UINT16 tensors. Where the model wants (or produces) bf16 and the data set holds a
/// u16 of the same shape, the u16's bits are reinterpreted as bf16; other tensors pass unchanged.
Tensor reinterpretU16AsBf16(Tensor tensor, DType wanted, const Shape &wantedShape) {
  if (wanted != DType::BF16 || tensor.dtype() != DType::U16 ||
      wantedShape.size() != tensor.shape().size())
    return tensor;
  for (size_t d = 0; d < wantedShape.size(); ++d)
    if (wantedShape[d].constant().value_or(tensor.shape()[d]) != tensor.shape()[d])
      return tensor;
  Expected<Tensor> bits = Tensor::zeros(DType::BF16, tensor.shape());
  if (!bits)
    return tensor;
  if (tensor.nbytes() > 0)
    std::memcpy(bits->mutableData(), tensor.data(), tensor.nbytes());
  return std::move(*bits);
}

/// onnx's inputs for its light models: float32 arange(n).reshape(shape) / n, unknown dims 1.
Expected<std::vector<Tensor>> generateInputs(const Graph &graph) {
  std::vector<Tensor> tensors;
  for (const Value *input : graph.userInputs()) {
    const TensorType &type = input->type();
    if (type.dtype != DType::F32)
      return makeError("cannot generate input '", input->name(), "' of type ", type.str(),
                       " (only f32)");
    std::vector<int64_t> shape;
    for (const SymInt &dim : type.shape)
      shape.push_back(dim.constant().value_or(1));
    TC_ASSIGN_OR_RETURN(Tensor tensor, Tensor::zeros(DType::F32, shape));
    for (int64_t i = 0, n = tensor.numel(); i < n; ++i)
      tensor.setDouble(i, double(i) / double(n));
    tensors.push_back(std::move(tensor));
  }
  return tensors;
}

template <typename... Parts> TestResult failed(const Parts &...parts) {
  return {TestStatus::Failed, strCat(parts...)};
}

/// An ahead-of-time compiler needs shape-like inputs (Reshape's target, Slice's bounds, TopK's
/// k...) when it compiles. When the import asks for such a value, the data set's small inputs
/// (rank <= 1, at most 64 elements) are specialized into constants and the model is imported
/// again for that data set; the other inputs are fed as usual.
bool needsSpecialization(const Error &error) {
  return error.message().find("known at import time") != std::string::npos;
}

Expected<Graph> importSpecialized(const TestCase &test, const OpRegistry &registry,
                                  std::vector<Tensor> &inputs) {
  TC_ASSIGN_OR_RETURN(std::vector<std::string> names, onnx::listOnnxInputs(test.modelPath));
  if (names.size() != inputs.size())
    return makeError(inputs.size(), " inputs given, the model takes ", names.size());
  onnx::ImportOptions options;
  std::vector<Tensor> remaining;
  for (size_t i = 0; i < names.size(); ++i) {
    if (inputs[i].rank() <= 1 && inputs[i].numel() <= 64)
      options.specializedInputs[names[i]] = inputs[i];
    else
      remaining.push_back(inputs[i]);
  }
  inputs = std::move(remaining);
  return onnx::importOnnxFile(test.modelPath, registry, options);
}

/// The imported graph must print as FX-text and parse back to an equal graph.
std::optional<std::string> roundTripProblem(const Graph &graph, const OpRegistry &registry) {
  std::string text = printGraph(graph);
  Expected<Graph> reparsed = fx::parseFx(text, registry, "<printed>");
  if (!reparsed)
    return reparsed.error().message();
  for (const auto &[name, tensor] : graph.weights())
    reparsed->weights()[name] = tensor;
  std::string difference;
  if (!graphsEqual(graph, *reparsed, &difference))
    return difference;
  return std::nullopt;
}

/// For a compiled target: the graph's loop IR (after the graph stages and lowering for that
/// target) must print and parse back to an equal program that prints the same. A graph the
/// pipeline rejects is left to the compile step to report.
std::optional<std::string> loopRoundTripProblem(const Graph &graph, const OpRegistry &registry,
                                                const std::string &targetName) {
  RewriteFn keepEveryNode = [](RewriteContext &) -> Expected<std::optional<std::vector<Value *>>> {
    return std::optional<std::vector<Value *>>();
  };
  Expected<Graph> copy = rewriteGraph(graph, keepEveryNode);
  Expected<TargetSet> targets = parseTargets(targetName);
  if (!copy || !targets)
    return std::nullopt;
  Expected<PipelineOptions> options = pipelineOptionsFor(*targets, std::nullopt, false);
  if (!options || !runGraphStages(*copy, registry, *options))
    return std::nullopt;
  options->stopAfter = "lower";
  Expected<LoweredModel> lowered = lowerAndSchedule(*copy, *options);
  if (!lowered)
    return std::nullopt;
  std::string text = loop::printProgram(lowered->program);
  Expected<loop::LoopProgram> parsed =
      loop::parseProgram(text, "<printed loop IR>", lowered->program.weights);
  if (!parsed)
    return parsed.error().message();
  std::string difference;
  if (!loop::equalPrograms(lowered->program, *parsed, &difference))
    return "loop IR: " + difference;
  if (loop::printProgram(*parsed) != text)
    return "loop IR prints differently after parsing";
  return std::nullopt;
}

/// Checks the round trip and runs --passes on a freshly imported `graph`, then hands it to the
/// target; a failed result if any step fails.
std::optional<TestResult> prepareTarget(ConformanceTarget &target, Graph &graph,
                                        const OpRegistry &registry, const Options &options,
                                        const std::string &where) {
  if (options.roundTrip)
    if (std::optional<std::string> problem = roundTripProblem(graph, registry))
      return failed("roundtrip: ", *problem, where);
  if (options.roundTrip && options.target != "interp")
    if (std::optional<std::string> problem = loopRoundTripProblem(graph, registry, options.target))
      return failed("roundtrip: ", *problem, where);
  if (!options.passes.empty()) {
    PassContext context{registry};
    if (Status passed = runPasses(graph, options.passes, context); !passed)
      return failed("passes: ", passed.message(), where);
  }
  if (Status prepared = target.prepare(graph); !prepared)
    return failed("compile: ", prepared.message(), where);
  return std::nullopt;
}

TestResult runTest(const TestCase &test, const OpRegistry &registry, const Options &options) {
  Expected<Graph> graph = onnx::importOnnxFile(test.modelPath, registry);
  bool specialize = !graph && !test.generatedInputs && needsSpecialization(graph.error());
  if (!graph && !specialize)
    return failed("import: ", graph.error().message());
  std::unique_ptr<ConformanceTarget> target = createConformanceTarget(options.target, registry);
  auto withTargetInfo = [&](TestResult result) {
    result.generatedCode = target->ranGeneratedCode();
    return result;
  };
  if (graph)
    if (std::optional<TestResult> problem = prepareTarget(*target, *graph, registry, options, ""))
      return *problem;
  for (const DataSet &dataSet : test.dataSets) {
    // Only name the data set when there are several, so single-set reasons group cleanly.
    std::string where = test.dataSets.size() > 1 ? " [" + dataSet.name + "]" : "";
    Expected<std::vector<Tensor>> inputs =
        test.generatedInputs ? generateInputs(*graph) : readTensors(dataSet.inputs);
    if (!inputs)
      return failed("import: ", inputs.error().message(), where);
    if (specialize) {
      graph = importSpecialized(test, registry, *inputs);
      if (!graph)
        return failed("import: ", graph.error().message(), " (small inputs specialized)", where);
      if (std::optional<TestResult> problem =
              prepareTarget(*target, *graph, registry, options, where))
        return *problem;
    }
    size_t modelInputs = graph->userInputs().size();
    if (inputs->size() != modelInputs)
      return withTargetInfo(
          failed("run: ", inputs->size(), " inputs given, the model takes ", modelInputs, where));
    for (size_t i = 0; i < modelInputs; ++i) {
      const TensorType &type = graph->userInputs()[i]->type();
      (*inputs)[i] = reinterpretU16AsBf16(std::move((*inputs)[i]), type.dtype, type.shape);
    }
    if (std::optional<std::string> why = target->cannotRun()) {
      if (options.kit.empty())
        return withTargetInfo({TestStatus::Skipped, "compiled, not run: " + *why});
      Expected<std::vector<Tensor>> expected = readTensors(dataSet.outputs);
      if (!expected)
        return failed("import: ", expected.error().message(), where);
      for (size_t i = 0; i < expected->size() && i < graph->outputs().size(); ++i) {
        const TensorType &type = graph->outputs()[i]->type();
        (*expected)[i] = reinterpretU16AsBf16(std::move((*expected)[i]), type.dtype, type.shape);
      }
      std::string dir = strCat(options.kit, "/cases/", test.suite, "/", test.name,
                               test.dataSets.size() > 1 ? "__" + dataSet.name : "");
      if (Status exported = target->exportCase(dir, *inputs, *expected, options.tolerance.rtol,
                                               options.tolerance.atol);
          !exported)
        return withTargetInfo(failed("export: ", exported.message(), where));
      continue;
    }
    Expected<std::vector<Tensor>> outputs = target->run(*inputs);
    if (!outputs)
      return withTargetInfo(failed("run: ", outputs.error().message(), where));
    Expected<std::vector<Tensor>> expected = readTensors(dataSet.outputs);
    if (!expected)
      return failed("import: ", expected.error().message(), where);
    for (size_t i = 0; i < expected->size() && i < outputs->size(); ++i) {
      Shape shape;
      for (int64_t dim : (*outputs)[i].shape())
        shape.push_back(SymInt(dim));
      (*expected)[i] =
          reinterpretU16AsBf16(std::move((*expected)[i]), (*outputs)[i].dtype(), shape);
    }
    if (std::optional<std::string> why = compareOutputs(*outputs, *expected, options.tolerance))
      return withTargetInfo(failed("compare: ", *why, where));
  }
  if (target->cannotRun())
    return withTargetInfo({TestStatus::Skipped, "compiled, exported to the GPU kit"});
  return withTargetInfo({TestStatus::Passed, specialize ? "specialized" : ""});
}

//===----------------------------------------------------------------------===//
// The parent: a pool of forked children, each reporting through a pipe.
//===----------------------------------------------------------------------===//

struct Child {
  size_t index = 0;
  pid_t pid = -1;
  int resultFd = -1;
  int stderrFd = -1;
  std::string result;
  std::string stderrTail;
  Clock::time_point deadline;
};

void writeAll(int fd, const std::string &text) {
  for (size_t done = 0; done < text.size();) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return;
    done += size_t(n);
  }
}

/// A child's result on its pipe: the status (P/F/S), whether generated code ran (G: yes, N: no,
/// -: not known), then the reason.
std::string encodeResult(const TestResult &result, const TestCase &test) {
  char generated = !result.generatedCode ? '-' : *result.generatedCode ? 'G' : 'N';
  char status = result.status == TestStatus::Passed   ? 'P'
                : result.status == TestStatus::Skipped ? 'S'
                                                       : 'F';
  return std::string{status, generated} + tidyReason(result.reason, test);
}

TestResult decodeResult(const std::string &message) {
  TestResult result;
  result.status = message[0] == 'P'   ? TestStatus::Passed
                  : message[0] == 'S' ? TestStatus::Skipped
                                      : TestStatus::Failed;
  if (message.size() >= 2 && message[1] != '-')
    result.generatedCode = message[1] == 'G';
  result.reason = message.size() >= 2 ? message.substr(2) : ""; // "specialized" or empty on a pass
  return result;
}

[[noreturn]] void childMain(const TestCase &test, const OpRegistry &registry,
                            const Options &options, int resultFd, int stderrFd) {
  int devNull = ::open("/dev/null", O_WRONLY);
  ::dup2(devNull, STDOUT_FILENO);
  ::dup2(stderrFd, STDERR_FILENO);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL); // a killed runner leaves no hung children behind
  TestResult result = runTest(test, registry, options);
  writeAll(resultFd, encodeResult(result, test));
  ::_exit(0);
}

Expected<Child> startChild(size_t index, const TestCase &test, const OpRegistry &registry,
                           const Options &options) {
  int resultPipe[2], stderrPipe[2];
  if (::pipe2(resultPipe, O_CLOEXEC) != 0)
    return makeError("pipe: ", std::strerror(errno));
  if (::pipe2(stderrPipe, O_CLOEXEC) != 0) {
    ::close(resultPipe[0]);
    ::close(resultPipe[1]);
    return makeError("pipe: ", std::strerror(errno));
  }
  std::cout.flush();
  std::cerr.flush();
  pid_t pid = ::fork();
  if (pid == 0) {
    ::close(resultPipe[0]);
    ::close(stderrPipe[0]);
    childMain(test, registry, options, resultPipe[1], stderrPipe[1]);
  }
  ::close(resultPipe[1]);
  ::close(stderrPipe[1]);
  if (pid < 0) {
    ::close(resultPipe[0]);
    ::close(stderrPipe[0]);
    return makeError("fork: ", std::strerror(errno));
  }
  Child child;
  child.index = index;
  child.pid = pid;
  child.resultFd = resultPipe[0];
  child.stderrFd = stderrPipe[0];
  child.deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                      std::chrono::duration<double>(options.timeoutSeconds));
  return child;
}

/// Reads what is available on `fd` into `into` (keeping at most `limit` trailing bytes); closes
/// `fd` and sets it to -1 at end of file.
void drain(int &fd, std::string &into, size_t limit) {
  char buffer[65536];
  ssize_t n = ::read(fd, buffer, sizeof buffer);
  if (n < 0 && errno == EINTR)
    return;
  if (n <= 0) {
    ::close(fd);
    fd = -1;
    return;
  }
  into.append(buffer, size_t(n));
  if (into.size() > limit)
    into.erase(0, into.size() - limit);
}

/// The last non-empty line the child wrote to stderr, shortened; "" if none.
std::string lastStderrLine(const std::string &tail) {
  size_t end = tail.find_last_not_of(" \n\r\t");
  if (end == std::string::npos)
    return "";
  size_t begin = tail.rfind('\n', end);
  begin = begin == std::string::npos ? 0 : begin + 1;
  std::string line = tail.substr(begin, end + 1 - begin);
  return line.size() > 200 ? line.substr(0, 200) + "..." : line;
}

TestResult finishChild(Child &child, bool timedOut, const Options &options) {
  for (int *fd : {&child.resultFd, &child.stderrFd})
    if (*fd >= 0) {
      ::close(*fd);
      *fd = -1;
    }
  if (timedOut)
    ::kill(child.pid, SIGKILL);
  int waitStatus = 0;
  while (::waitpid(child.pid, &waitStatus, 0) < 0 && errno == EINTR) {
  }
  if (timedOut)
    return {TestStatus::Failed, strCat("timed out after ", options.timeoutSeconds, " s")};
  std::string detail = lastStderrLine(child.stderrTail);
  detail = detail.empty() ? "" : ": " + detail;
  if (WIFSIGNALED(waitStatus)) {
    int signal = WTERMSIG(waitStatus);
    return {TestStatus::Failed,
            strCat("crashed (signal ", signal, ", ", strsignal(signal), ")", detail)};
  }
  int exitCode = WIFEXITED(waitStatus) ? WEXITSTATUS(waitStatus) : -1;
  if (exitCode != 0 || child.result.empty())
    return {TestStatus::Failed,
            strCat("crashed (exit status ", exitCode, " before reporting a result)", detail)};
  return decodeResult(child.result);
}

struct Tally {
  size_t passed = 0, failed = 0, skipped = 0;
  size_t passedGenerated = 0; // passes that ran generated kernels (compiled targets)
  void add(const TestResult &result) {
    TestStatus status = result.status;
    (status == TestStatus::Passed ? passed : status == TestStatus::Failed ? failed : skipped)++;
    passedGenerated += status == TestStatus::Passed && result.generatedCode.value_or(false);
  }
  /// `showGenerated`: the target compiles code, so say how many passes ran some of it.
  std::string str(bool showGenerated) const {
    std::string generated =
        showGenerated ? strCat(" (", passedGenerated, " with generated kernels)") : "";
    return strCat(passed, " passed", generated, ", ", failed, " failed, ", skipped, " skipped");
  }
  Json json(bool showGenerated) const {
    Json object = Json::object();
    object["passed"] = uint64_t(passed);
    if (showGenerated)
      object["passed_with_generated_kernels"] = uint64_t(passedGenerated);
    object["failed"] = uint64_t(failed);
    object["skipped"] = uint64_t(skipped);
    return object;
  }
};

/// Runs every test not already decided (skipped) with up to `options.jobs` children at once.
Status runAll(const std::vector<TestCase> &tests, std::vector<std::optional<TestResult>> &results,
              const OpRegistry &registry, const Options &options) {
  size_t next = 0, finished = 0;
  Tally progress;
  bool showGenerated = false;
  auto record = [&](size_t index, TestResult result) {
    progress.add(result);
    showGenerated |= result.generatedCode.has_value();
    results[index] = std::move(result);
    if (++finished % kProgressEvery == 0)
      std::cerr << "conformance: " << finished << "/" << tests.size() << " tests ("
                << progress.str(showGenerated) << ")" << std::endl;
  };
  std::vector<Child> running;
  while (true) {
    while (running.size() < options.jobs && next < tests.size()) {
      size_t index = next++;
      if (results[index]) {
        record(index, *results[index]);
        continue;
      }
      TC_ASSIGN_OR_RETURN(Child child, startChild(index, tests[index], registry, options));
      running.push_back(std::move(child));
    }
    if (running.empty())
      return Status::ok();

    std::vector<pollfd> fds;
    Clock::time_point soonest = running.front().deadline;
    for (const Child &child : running) {
      soonest = std::min(soonest, child.deadline);
      for (int fd : {child.resultFd, child.stderrFd})
        if (fd >= 0)
          fds.push_back({fd, POLLIN, 0});
    }
    auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(soonest - Clock::now());
    int waitMs = int(std::clamp<int64_t>(wait.count() + 1, 0, 60'000));
    if (::poll(fds.data(), fds.size(), waitMs) < 0 && errno != EINTR)
      return makeError("poll: ", std::strerror(errno));
    for (const pollfd &ready : fds) {
      if (ready.revents == 0)
        continue;
      for (Child &child : running) {
        if (child.resultFd == ready.fd)
          drain(child.resultFd, child.result, size_t(1) << 20);
        else if (child.stderrFd == ready.fd)
          drain(child.stderrFd, child.stderrTail, kStderrTailChars);
      }
    }

    Clock::time_point now = Clock::now();
    for (size_t i = 0; i < running.size();) {
      Child &child = running[i];
      bool done = child.resultFd < 0 && child.stderrFd < 0;
      bool timedOut = !done && now >= child.deadline;
      if (!done && !timedOut) {
        ++i;
        continue;
      }
      TestResult result = finishChild(child, timedOut, options);
      record(child.index, std::move(result));
      running.erase(running.begin() + std::ptrdiff_t(i));
    }
  }
}

//===----------------------------------------------------------------------===//
// Reporting.
//===----------------------------------------------------------------------===//

Status writeReport(const std::string &path, const Options &options,
                   const std::vector<TestCase> &tests, const std::vector<TestResult> &results,
                   const std::map<std::string, Tally> &suites, const Tally &total,
                   bool showGenerated) {
  Json report = Json::object();
  report["target"] = options.target;
  Json entries = Json::array();
  for (size_t i = 0; i < tests.size(); ++i) {
    Json entry = Json::object();
    entry["suite"] = tests[i].suite;
    entry["name"] = tests[i].name;
    entry["status"] = statusName(results[i].status);
    entry["reason"] = results[i].reason;
    if (results[i].generatedCode)
      entry["generated_kernels"] = *results[i].generatedCode;
    entries.push(std::move(entry));
  }
  report["tests"] = std::move(entries);
  Json suiteTotals = Json::object();
  for (const auto &[suite, tally] : suites)
    suiteTotals[suite] = tally.json(showGenerated);
  report["suites"] = std::move(suiteTotals);
  report["totals"] = total.json(showGenerated);
  std::ofstream out(path, std::ios::binary);
  out << report.dump(2) << "\n";
  if (!out)
    return makeError(path, ": cannot write the report");
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// Driver.
//===----------------------------------------------------------------------===//

/// A directory for everything the children write (bundles, the linker's temporaries), made the
/// children's $TMPDIR and removed with its contents at the end: a crashed or killed child cannot
/// leave files behind.
class ScratchDir {
public:
  static Expected<std::unique_ptr<ScratchDir>> create() {
    const char *tmp = std::getenv("TMPDIR");
    std::string pattern = strCat(tmp && *tmp ? tmp : "/tmp", "/tensorc-conformance-XXXXXX");
    if (!::mkdtemp(pattern.data()))
      return makeError("mkdtemp ", pattern, ": ", std::strerror(errno));
    auto scratch = std::unique_ptr<ScratchDir>(new ScratchDir(pattern, tmp ? tmp : ""));
    ::setenv("TMPDIR", pattern.c_str(), 1);
    return scratch;
  }
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
    if (hadTmpDir_)
      ::setenv("TMPDIR", oldTmpDir_.c_str(), 1);
    else
      ::unsetenv("TMPDIR");
  }
  ScratchDir(const ScratchDir &) = delete;
  ScratchDir &operator=(const ScratchDir &) = delete;

private:
  ScratchDir(std::string path, std::string oldTmpDir)
      : path_(std::move(path)), oldTmpDir_(std::move(oldTmpDir)), hadTmpDir_(!oldTmpDir_.empty()) {}
  std::string path_;
  std::string oldTmpDir_;
  bool hadTmpDir_;
};

int usageError(const std::string &message) {
  std::cerr << "tensorc-conformance: error: " << message << "\n";
  return 2;
}

int runConformance(Options options) {
  if (options.suites.empty())
    for (const char *suite : {"node", "pytorch-converted", "pytorch-operator", "simple"})
      options.suites.push_back(strCat(suite, "=", kDebianTestData, "/", suite));
  std::map<std::string, std::string> skipList;
  if (!options.skipList.empty()) {
    Expected<std::map<std::string, std::string>> loaded = loadSkipList(options.skipList);
    if (!loaded)
      return usageError(loaded.error().message());
    skipList = std::move(*loaded);
  }
  std::optional<std::regex> filter;
  if (!options.filter.empty()) {
    try {
      filter.emplace(options.filter, std::regex::ECMAScript);
    } catch (const std::regex_error &error) {
      return usageError(strCat("--filter '", options.filter, "': ", error.what()));
    }
  }

  std::vector<std::string> suiteOrder;
  std::vector<TestCase> tests;
  for (const std::string &spec : options.suites) {
    size_t equals = spec.find('=');
    if (equals == std::string::npos || equals == 0)
      return usageError(strCat("--suite '", spec, "': expected NAME=DIR"));
    std::string suite = spec.substr(0, equals);
    if (std::find(suiteOrder.begin(), suiteOrder.end(), suite) != suiteOrder.end())
      return usageError(strCat("--suite '", suite, "' given twice"));
    suiteOrder.push_back(suite);
    Expected<std::vector<TestCase>> found = discoverSuite(suite, spec.substr(equals + 1));
    if (!found)
      return usageError(found.error().message());
    for (TestCase &test : *found)
      if (!filter || std::regex_search(test.name, *filter) ||
          std::regex_search(test.suite + "/" + test.name, *filter))
        tests.push_back(std::move(test));
  }

  // Skipped tests are decided here and never forked.
  std::vector<std::optional<TestResult>> decided(tests.size());
  for (size_t i = 0; i < tests.size(); ++i) {
    if (auto skip = skipList.find(tests[i].name); skip != skipList.end())
      decided[i] = TestResult{TestStatus::Skipped, skip->second};
    else if (!tests[i].unavailable.empty())
      decided[i] = TestResult{TestStatus::Skipped, tests[i].unavailable};
  }

  Expected<OpRegistry> registry = ops::buildCoreRegistry();
  if (!registry)
    return usageError(registry.error().message());
  Expected<std::unique_ptr<ScratchDir>> scratch = ScratchDir::create();
  if (!scratch)
    return usageError(scratch.error().message());
  std::cerr << "conformance: running " << tests.size() << " tests on " << options.target
            << std::endl;
  if (Status ran = runAll(tests, decided, *registry, options); !ran)
    return usageError(ran.message());
  scratch->reset();

  std::vector<TestResult> results;
  std::map<std::string, Tally> suites;
  Tally total;
  for (size_t i = 0; i < tests.size(); ++i) {
    results.push_back(*decided[i]);
    suites[tests[i].suite].add(results[i]);
    total.add(results[i]);
  }
  bool showGenerated = std::any_of(results.begin(), results.end(), [](const TestResult &result) {
    return result.generatedCode.has_value();
  });
  if (options.verbose) {
    for (size_t i = 0; i < tests.size(); ++i)
      if (results[i].status == TestStatus::Failed)
        std::cout << "FAILED " << tests[i].suite << "/" << tests[i].name << ": "
                  << results[i].reason << "\n";
    printFailureHistogram(results, std::cout);
    printUnsupportedOps(results, std::cout);
  }
  size_t specialized = 0;
  for (const TestResult &result : results)
    specialized += result.status == TestStatus::Passed && result.reason == "specialized";
  for (const std::string &suite : suiteOrder)
    std::cout << suite << ": " << suites[suite].str(showGenerated) << "\n";
  if (specialized)
    std::cout << "(" << specialized << " of the passes import small shape-like inputs as "
              << "constants)\n";
  std::cout << total.str(showGenerated) << std::endl;

  if (!options.report.empty())
    if (Status written =
            writeReport(options.report, options, tests, results, suites, total, showGenerated);
        !written)
      return usageError(written.message());
  size_t compiled = 0;
  for (const TestResult &result : results)
    compiled += result.status == TestStatus::Passed ||
                (result.status == TestStatus::Skipped && result.reason.rfind("compiled", 0) == 0);
  if (compiled > total.passed)
    std::cout << "(" << compiled - total.passed << " compiled for the GPU but not run here: no "
              << "GPU" << (options.kit.empty() ? "" : "; exported to " + options.kit) << ")\n";
  if (int64_t(compiled) < options.minCompiled) {
    std::cerr << "tensorc-conformance: " << compiled << " compiled, below the floor of "
              << options.minCompiled << " (--min-compiled)\n";
    return 1;
  }
  if (int64_t(total.passed) < options.minPassed) {
    std::cerr << "tensorc-conformance: " << total.passed << " passed, below the floor of "
              << options.minPassed << " (--min-passed)\n";
    return 1;
  }
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  Options options;
  CLI::App app{"tensorc-conformance: runs the ONNX backend test suites on a tensorc target and "
               "prints `N passed, M failed, K skipped` as its last line (compiled targets add "
               "`(G with generated kernels)` after the passes)"};
  app.add_option("--target", options.target, "Where to run the models")
      ->check(CLI::IsMember(conformanceTargetNames()))
      ->capture_default_str();
  app.add_option("--suite", options.suites,
                 "A suite as NAME=DIR (repeatable); default: Debian's node, pytorch-converted, "
                 "pytorch-operator and simple under /usr/share/libonnx-testdata/data");
  app.add_option("--skip-list", options.skipList,
                 "Reviewed skip list: `test_name  # reason` per line");
  app.add_option("--report", options.report, "Write per-test results and totals as JSON");
  app.add_option("--filter", options.filter, "Only tests whose name (or SUITE/NAME) matches");
  app.add_option("--min-passed", options.minPassed,
                 "Exit with status 1 if fewer tests pass (the committed floor)")
      ->capture_default_str();
  app.add_option("--kit", options.kit,
                 "--target cuda on a machine without a GPU: write each compiled test (bundle, "
                 "inputs, expected outputs) to this GPU test kit (run it with "
                 "test/gpu/verify_kit.py on a GPU machine)");
  app.add_option("--min-compiled", options.minCompiled,
                 "Exit with status 1 if fewer tests compile (passed, or compiled but not run)")
      ->capture_default_str();
  app.add_option("--timeout", options.timeoutSeconds, "Seconds allowed per test")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("-j,--jobs", options.jobs, "Tests run at once")
      ->check(CLI::Range(1u, 1024u))
      ->capture_default_str();
  app.add_option("--rtol", options.tolerance.rtol, "Relative tolerance for floating outputs")
      ->capture_default_str();
  app.add_option("--atol", options.tolerance.atol, "Absolute tolerance for floating outputs")
      ->capture_default_str();
  app.add_option("--passes", options.passes,
                 "Graph passes to run on each imported model before the target runs it, e.g. "
                 "constant-fold,cse,dce,decompose");
  app.add_flag("--check-roundtrip", options.roundTrip,
               "Also check that each imported graph prints as FX-text and parses back equal and, "
               "for compiled targets, that its loop IR prints and parses back equal");
  app.add_flag("-v,--verbose", options.verbose,
               "Print each failure's reason and a histogram of the most common reasons");
  CLI11_PARSE(app, argc, argv);
  return runConformance(std::move(options));
}
