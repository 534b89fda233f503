// The tensorc driver: global options and dispatch; each subcommand lives in its own file
// (Inspect.cpp, Opt.cpp, ..., named after it), which parses its options and calls the libraries.
// The only place that exits.
#include "Driver.h"

#include "tensorc/Ops/Registry.h"
#include "tensorc/Support/Limits.h"
#include "tensorc/Support/Log.h"
#include "tensorc/Support/SignalCleanup.h"

#include <cstdlib>

int main(int argc, char **argv) {
  using namespace tensorc;
  CLI::App app{"tensorc: an ahead-of-time model compiler"};
  app.set_version_flag("--version", std::string("tensorc ") + TENSORC_VERSION);
  app.require_subcommand(1);
  // Global options (--log, --max-tensor-bytes) are accepted after the subcommand too.
  app.fallthrough();
  std::string logCategories;
  app.add_option("--log", logCategories,
                 "Debug logging for comma-separated categories (stage names, 'time', 'all'); "
                 "also TENSORC_LOG");
  std::string maxTensorBytes;
  app.add_option("--max-tensor-bytes", maxTensorBytes,
                 "The most bytes one tensor may take when tensorc makes it (import-time "
                 "constants, the interpreter's and the runtime's tensors), e.g. 16G; also "
                 "TENSORC_MAX_TENSOR_BYTES (default 4G)");

  // --help lists the subcommands in this order.
  std::vector<driver::Subcommand> commands = {
      driver::addInspectCommand(app), driver::addOptCommand(app),    driver::addCompileCommand(app),
      driver::addTrainCommand(app),   driver::addRunCommand(app),    driver::addExplainCommand(app),
      driver::addBisectCommand(app),  driver::addMinifyCommand(app), driver::addTuneCommand(app),
  };

  CLI11_PARSE(app, argc, argv);
  // An interrupted compile removes its staging directory (and kills the linker it started).
  cleanup::installSignalHandlers();

  // One limit for every layer: the flag sets the variable they all read.
  if (!maxTensorBytes.empty()) {
    Expected<int64_t> bytes = parseByteSize(maxTensorBytes);
    if (!bytes)
      return driver::fail("--max-tensor-bytes: " + bytes.error().message());
    ::setenv(kMaxTensorBytesEnv, std::to_string(*bytes).c_str(), 1);
  }
  if (Expected<int64_t> bytes = maxTensorBytesFromEnv(); !bytes)
    return driver::fail(bytes.error().message());
  if (const char *env = std::getenv("TENSORC_LOG"))
    log::enableCategories(env);
  log::enableCategories(logCategories);

  Expected<OpRegistry> registry = ops::buildCoreRegistry();
  if (!registry)
    return driver::fail(registry.error().message());
  for (const driver::Subcommand &command : commands)
    if (*command.app)
      return command.run(*registry);
  return driver::fail("no command given (see --help)");
}
