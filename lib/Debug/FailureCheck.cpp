// The minifier's check in a forked child: stage lines and a result line come back through a pipe;
// a child killed by a signal or the timeout failed in the stage it last announced.
#include "FailureCheck.h"

#include "tensorc/Codegen/CPU/Target.h"
#include "tensorc/Debug/Compare.h"
#include "tensorc/Interp/Inputs.h"
#include "tensorc/Interp/Interpreter.h"
#include "tensorc/Pipeline/Compile.h"
#include "tensorc/Pipeline/Pipeline.h"
#include "tensorc/Runtime/Model.h"
#include "tensorc/Support/EnumNames.h"
#include "tensorc/Support/StrCat.h"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

namespace tensorc::debug {

namespace {
constexpr EnumName<CheckStage> kCheckStageNames[] = {{CheckStage::Invalid, "invalid"},
                                                     {CheckStage::Pass, "pass"},
                                                     {CheckStage::Compile, "compile"},
                                                     {CheckStage::Run, "run"},
                                                     {CheckStage::Accuracy, "accuracy"}};
} // namespace

const char *checkStageName(CheckStage stage) { return enumName(kCheckStageNames, stage); }

namespace {

/// The child's side: announces stages and the result on `fd`.
class Reporter {
public:
  explicit Reporter(int fd) : fd_(fd) {}
  void stage(CheckStage stage) { send(strCat("stage ", checkStageName(stage), "\n")); }
  void result(CheckStage stage, std::string message) {
    for (char &c : message)
      if (c == '\n')
        c = ' ';
    send(strCat("result ", checkStageName(stage), " ", message, "\n"));
  }

private:
  void send(const std::string &text) {
    size_t done = 0;
    while (done < text.size()) {
      ssize_t written = ::write(fd_, text.data() + done, text.size() - done);
      if (written < 0 && errno == EINTR)
        continue;
      if (written <= 0)
        return;
      done += size_t(written);
    }
  }
  int fd_;
};

void runChild(const std::string &path, const OpRegistry &registry, const CheckOptions &options,
              const std::string &bundleDir, Reporter &report) {
  report.stage(CheckStage::Invalid);
  PipelineOptions verifyOnly;
  verifyOnly.stopAfter = "verify";
  Expected<Graph> graph = runPipeline(path, registry, verifyOnly);
  if (!graph)
    return report.result(CheckStage::Invalid, graph.error().message());
  SymbolBindings dims = options.dims;
  for (const Value *input : graph->userInputs())
    for (const SymInt &dim : input->type().shape)
      if (auto symbol = dim.symbolName())
        dims.emplace(*symbol, 2);
  Expected<std::vector<Tensor>> inputs = interp::randomInputs(*graph, options.seed, dims);
  if (!inputs)
    return report.result(CheckStage::Invalid, inputs.error().message());

  report.stage(CheckStage::Compile);
  CompileOptions compile;
  compile.outDir = bundleDir;
  compile.target = options.target;
  compile.quiet = true;
  compile.cudaArchs = {options.cudaArch};
  compile.cpuArchs = {cpu::hostArch()};
  if (!options.variant.empty())
    compile.variants = {options.variant};
  Expected<CompileSummary> compiled = compileModel(path, registry, compile);
  if (!compiled)
    return report.result(CheckStage::Compile, compiled.error().message());
  if (options.until == CheckStage::Compile)
    return report.result(CheckStage::Pass, "");

  report.stage(CheckStage::Run);
  rt::LoadOptions load;
  load.device = options.target;
  load.cudaDevice = options.cudaDevice;
  load.variant = options.variant;
  Expected<std::unique_ptr<rt::Model>> model = rt::Model::load(bundleDir, load);
  if (!model)
    return report.result(CheckStage::Run, model.error().message());
  Expected<std::vector<Tensor>> outputs = (*model)->run(*inputs);
  if (!outputs)
    return report.result(CheckStage::Run, outputs.error().message());
  if (options.until == CheckStage::Run)
    return report.result(CheckStage::Pass, "");

  report.stage(CheckStage::Invalid); // the interpreter failing says nothing about the compiler
  Expected<std::vector<Tensor>> expected = interp::interpret(*graph, *inputs);
  if (!expected)
    return report.result(CheckStage::Invalid, expected.error().message());
  for (size_t i = 0; i < expected->size(); ++i) {
    Comparison comparison = compareTensors((*expected)[i], (*outputs)[i]);
    if (!comparison.matches)
      return report.result(CheckStage::Accuracy,
                           strCat("output '", graph->outputs()[i]->name(), "' differs: ",
                                  describeComparison(comparison, (*expected)[i].shape())));
  }
  report.result(CheckStage::Pass, "");
}

CheckStage parseStage(const std::string &name) {
  return parseEnumName(kCheckStageNames, name).value_or(CheckStage::Invalid);
}

} // namespace

CheckOutcome checkModelFile(const std::string &path, const OpRegistry &registry,
                            const CheckOptions &options) {
  static int counter = 0;
  std::string bundleDir = strCat(options.workDir, "/check", counter++);
  int fds[2];
  if (::pipe(fds) != 0)
    return {CheckStage::Invalid, strCat("pipe: ", std::strerror(errno))};
  std::fflush(stdout);
  std::fflush(stderr);
  pid_t child = ::fork();
  if (child < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return {CheckStage::Invalid, strCat("fork: ", std::strerror(errno))};
  }
  if (child == 0) {
    ::close(fds[0]);
    // The child's own chatter (compiler warnings, a crash report) stays out of the report.
    int null = ::open("/dev/null", O_WRONLY);
    if (null >= 0) {
      ::dup2(null, STDOUT_FILENO);
      ::dup2(null, STDERR_FILENO);
    }
    Reporter report(fds[1]);
    runChild(path, registry, options, bundleDir, report);
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string received;
  bool timedOut = false;
  auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(std::max(options.timeoutSeconds, 1));
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    deadline - std::chrono::steady_clock::now())
                    .count();
    if (left <= 0) {
      timedOut = true;
      ::kill(child, SIGKILL);
      break;
    }
    pollfd poller{fds[0], POLLIN, 0};
    int ready = ::poll(&poller, 1, int(std::min<int64_t>(left, 1000)));
    if (ready < 0 && errno == EINTR)
      continue;
    if (ready <= 0)
      continue;
    char buffer[4096];
    ssize_t got = ::read(fds[0], buffer, sizeof buffer);
    if (got < 0 && errno == EINTR)
      continue;
    if (got <= 0)
      break;
    received.append(buffer, size_t(got));
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  std::error_code ignored;
  std::filesystem::remove_all(bundleDir, ignored);

  CheckStage stage = CheckStage::Invalid;
  size_t start = 0;
  while (start < received.size()) {
    size_t end = received.find('\n', start);
    if (end == std::string::npos)
      break;
    std::string line = received.substr(start, end - start);
    start = end + 1;
    if (line.rfind("stage ", 0) == 0) {
      stage = parseStage(line.substr(6));
    } else if (line.rfind("result ", 0) == 0) {
      std::string rest = line.substr(7);
      size_t space = rest.find(' ');
      return {parseStage(rest.substr(0, space)),
              space == std::string::npos ? std::string() : rest.substr(space + 1)};
    }
  }
  if (timedOut)
    return {stage, strCat("timed out after ", options.timeoutSeconds, " s")};
  if (WIFSIGNALED(status))
    return {stage, strCat("killed by signal ", WTERMSIG(status), " (",
                          ::strsignal(WTERMSIG(status)), ")")};
  return {stage, strCat("exited with status ", WEXITSTATUS(status), " without a result")};
}

} // namespace tensorc::debug
