// The tensorc driver: global options and dispatch; each subcommand lives in its own file
// (Inspect.cpp, Opt.cpp, Compile.cpp, Train.cpp, Run.cpp), which parses its options and calls
// the libraries. The only place that exits.
#include "Driver.h"

#include "tensorc/Ops/Registry.h"
#include "tensorc/Support/Log.h"

#include <cstdlib>

int main(int argc, char **argv) {
  using namespace tensorc;
  CLI::App app{"tensorc: an ahead-of-time model compiler"};
  app.set_version_flag("--version", std::string("tensorc ") + TENSORC_VERSION);
  app.require_subcommand(1);
  std::string logCategories;
  app.add_option("--log", logCategories,
                 "Debug logging for comma-separated categories (stage names, 'time', 'all'); "
                 "also TENSORC_LOG");

  // --help lists the subcommands in this order.
  std::vector<driver::Subcommand> commands = {
      driver::addInspectCommand(app), driver::addOptCommand(app), driver::addCompileCommand(app),
      driver::addTrainCommand(app),   driver::addRunCommand(app),
  };

  CLI11_PARSE(app, argc, argv);

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
