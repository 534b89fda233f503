// Category-filtered logging on spdlog (stderr).
#include "tensorc/Support/Log.h"

#include <set>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

namespace tensorc::log {

namespace {
/// Logging configuration is process-wide by nature (like LLVM's -debug-only).
struct State {
  std::set<std::string, std::less<>> categories;
  bool all = false;
  std::shared_ptr<spdlog::logger> logger = [] {
    auto logger = spdlog::stderr_color_st("tensorc");
    logger->set_pattern("%^tensorc: %v%$");
    logger->set_level(spdlog::level::debug);
    return logger;
  }();
};
State &state() {
  static State instance;
  return instance;
}
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

void debug(std::string_view category, const std::string &message) {
  if (enabled(category))
    state().logger->debug("[{}] {}", category, message);
}

void info(const std::string &message) { state().logger->info("{}", message); }
void warn(const std::string &message) { state().logger->warn("warning: {}", message); }

} // namespace tensorc::log
