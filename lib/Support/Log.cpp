// Category-filtered logging to stderr: through spdlog, or plain stdio in runtime-only builds.
#include "tensorc/Support/Log.h"

#include "tensorc/Support/Printable.h"

#include <set>

#ifdef TENSORC_LOG_STDIO
#include <cstdio>
#else
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#endif

namespace tensorc::log {

namespace {
/// Logging configuration is process-wide by nature (like LLVM's -debug-only).
struct State {
  std::set<std::string, std::less<>> categories;
  bool all = false;
};
State &state() {
  static State instance;
  return instance;
}

enum class Level { Debug, Info, Warn };

#ifdef TENSORC_LOG_STDIO
/// Runtime-only builds (cross builds for deployment) have no spdlog: the same lines, uncolored.
/// One fprintf per line keeps lines from different threads whole.
void emit(Level, std::string_view text) {
  std::fprintf(stderr, "tensorc: %.*s\n", int(text.size()), text.data());
}
#else
void emit(Level level, std::string_view text) {
  static const std::shared_ptr<spdlog::logger> logger = [] {
    auto logger = spdlog::stderr_color_st("tensorc");
    logger->set_pattern("%^tensorc: %v%$");
    logger->set_level(spdlog::level::debug);
    return logger;
  }();
  switch (level) {
  case Level::Debug:
    logger->debug("{}", text);
    return;
  case Level::Info:
    logger->info("{}", text);
    return;
  case Level::Warn:
    logger->warn("{}", text);
    return;
  }
}
#endif
} // namespace

void enableCategories(std::string_view list) {
  while (!list.empty()) {
    size_t comma = list.find(',');
    std::string_view item = list.substr(0, comma);
    if (item == "all")
      state().all = true;
    else if (!item.empty())
      state().categories.emplace(item);
    if (comma == std::string_view::npos)
      break;
    list.remove_prefix(comma + 1);
  }
}

bool enabled(std::string_view category) {
  return state().all || state().categories.count(category) != 0;
}

// Messages quote names from model files: no terminal escapes (IR dumps keep their newlines).
void debug(std::string_view category, const std::string &message) {
  if (enabled(category))
    emit(Level::Debug, "[" + std::string(category) + "] " + printable(message, true));
}

void info(const std::string &message) { emit(Level::Info, printable(message, true)); }
void warn(const std::string &message) { emit(Level::Warn, "warning: " + printable(message, true)); }

} // namespace tensorc::log
