// Logging by category (`--log import,verify`, TENSORC_LOG): category names are stage names.
#pragma once

#include <string>
#include <string_view>

namespace tensorc::log {

/// Enables debug output for a comma-separated list of categories; "all" enables every one.
void enableCategories(std::string_view list);
bool enabled(std::string_view category);

/// Debug line for `category`, printed only when that category is enabled.
void debug(std::string_view category, const std::string &message);
/// Progress and warnings, always printed to stderr.
void info(const std::string &message);
void warn(const std::string &message);

} // namespace tensorc::log
