// The lookup of ONNX op types in the lists of OnnxConverters.h.
#include "OnnxConverters.h"

#include <algorithm>
#include <iterator>
#include <utility>

namespace tensorc::onnx {

namespace {

#define TENSORC_ENTRY(type, value) {#type, value},
constexpr std::pair<std::string_view, ConvertFn> kConverters[] = {
    TENSORC_ONNX_CONVERTERS(TENSORC_ENTRY)};
constexpr std::pair<std::string_view, std::string_view> kDirectOps[] = {
    TENSORC_ONNX_DIRECT_OPS(TENSORC_ENTRY)};
#undef TENSORC_ENTRY

/// The entry of `type` in `table` (sorted by its first member), or nullptr.
template <typename Entry, size_t N>
constexpr const Entry *lookup(const Entry (&table)[N], std::string_view type) {
  const Entry *entry = std::lower_bound(
      std::begin(table), std::end(table), type,
      [](const Entry &candidate, std::string_view key) { return candidate.first < key; });
  return entry != std::end(table) && entry->first == type ? entry : nullptr;
}

/// Sorted, each op listed once, and no op in both tables (binary search depends on it).
constexpr bool wellFormed() {
  auto unsorted = [](const auto &table) {
    return std::adjacent_find(std::begin(table), std::end(table), [](const auto &a, const auto &b) {
             return a.first >= b.first;
           }) != std::end(table);
  };
  if (unsorted(kConverters) || unsorted(kDirectOps))
    return false;
  return std::none_of(std::begin(kDirectOps), std::end(kDirectOps),
                      [](const auto &op) { return lookup(kConverters, op.first) != nullptr; });
}
static_assert(wellFormed(), "the ONNX op tables must be sorted by op type, each op listed once");

} // namespace

ConvertFn findConverter(std::string_view type) {
  if (const auto *entry = lookup(kConverters, type))
    return entry->second;
  return lookup(kDirectOps, type) ? convertDirect : nullptr;
}

std::string_view directOp(std::string_view type) {
  const auto *entry = lookup(kDirectOps, type);
  return entry ? entry->second : std::string_view();
}

} // namespace tensorc::onnx
