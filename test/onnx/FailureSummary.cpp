// Failure summaries for the conformance runner: the reason histogram and the missing-op table.
#include "FailureSummary.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>
#include <regex>
#include <string>

namespace tensorc::conformance {
namespace {

constexpr size_t kHistogramKeyChars = 60;
constexpr size_t kHistogramRows = 30;

/// The first characters of a reason with numbers shown as N (digits right after a letter stay,
/// as in f32 or conv2d), so that reasons differing only in sizes or indices group together.
/// The model file's name after "import: " is dropped: it is the same for every test.
std::string histogramKey(std::string reason) {
  if (size_t model = reason.find(".onnx: ");
      reason.starts_with("import: ") && model != std::string::npos && reason.find(' ', 8) > model)
    reason.erase(8, model + 7 - 8);
  std::string key;
  for (size_t i = 0; i < reason.size() && key.size() < kHistogramKeyChars;) {
    bool number = std::isdigit(static_cast<unsigned char>(reason[i])) &&
                  (i == 0 || !std::isalpha(static_cast<unsigned char>(reason[i - 1])));
    if (!number) {
      key += reason[i++];
      continue;
    }
    key += 'N';
    while (i < reason.size() && std::isdigit(static_cast<unsigned char>(reason[i])))
      ++i;
  }
  return key;
}

} // namespace

void printFailureHistogram(const std::vector<TestResult> &results, std::ostream &os) {
  std::map<std::string, size_t> counts;
  for (const TestResult &result : results)
    if (result.status == TestStatus::Failed)
      ++counts[histogramKey(result.reason)];
  if (counts.empty())
    return;
  std::vector<std::pair<std::string, size_t>> rows(counts.begin(), counts.end());
  std::stable_sort(rows.begin(), rows.end(),
                   [](const auto &a, const auto &b) { return a.second > b.second; });
  os << "most common failure reasons (first " << kHistogramKeyChars << " chars, numbers as N):\n";
  for (size_t i = 0; i < rows.size() && i < kHistogramRows; ++i) {
    char count[16];
    std::snprintf(count, sizeof count, "%6zu", rows[i].second);
    os << count << "  " << rows[i].first << "\n";
  }
  if (rows.size() > kHistogramRows)
    os << "   ... " << rows.size() - kHistogramRows << " more kinds\n";
}

/// The op types of an importer reason "...unsupported op type(s): Foo (2), Bar (1)".
namespace {

std::vector<std::string> unsupportedOps(const std::string &reason) {
  static const std::regex list("unsupported op types?: (.*)");
  static const std::regex op("([A-Za-z0-9_.]+) \\([0-9]+\\)");
  std::vector<std::string> ops;
  std::smatch listMatch;
  if (!std::regex_search(reason, listMatch, list))
    return ops;
  std::string text = listMatch[1].str();
  for (auto it = std::sregex_iterator(text.begin(), text.end(), op); it != std::sregex_iterator();
       ++it)
    ops.push_back((*it)[1].str());
  return ops;
}

} // namespace

void printUnsupportedOps(const std::vector<TestResult> &results, std::ostream &os) {
  struct Blocked {
    size_t tests = 0, alone = 0;
  };
  std::map<std::string, Blocked> blocked;
  for (const TestResult &result : results) {
    if (result.status != TestStatus::Failed || !result.reason.starts_with("import: "))
      continue;
    std::vector<std::string> ops = unsupportedOps(result.reason);
    for (const std::string &op : ops) {
      ++blocked[op].tests;
      blocked[op].alone += ops.size() == 1;
    }
  }
  if (blocked.empty())
    return;
  std::vector<std::pair<std::string, Blocked>> rows(blocked.begin(), blocked.end());
  std::stable_sort(rows.begin(), rows.end(),
                   [](const auto &a, const auto &b) { return a.second.tests > b.second.tests; });
  os << "unsupported ops (tests that need the op, tests it alone blocks):\n";
  for (size_t i = 0; i < rows.size() && i < kHistogramRows; ++i) {
    char counts[32];
    std::snprintf(counts, sizeof counts, "%6zu %6zu", rows[i].second.tests, rows[i].second.alone);
    os << counts << "  " << rows[i].first << "\n";
  }
  if (rows.size() > kHistogramRows)
    os << "   ... " << rows.size() - kHistogramRows << " more ops\n";
}

} // namespace tensorc::conformance
