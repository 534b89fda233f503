// EnumNames: one table of a small enum's names, for printing a value and parsing it back, so
// the two directions and the "expected ..." list of an error cannot disagree.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace tensorc {

template <typename E> struct EnumName {
  E value;
  const char *name;
};

/// The name of `value` in `table`; "?" when the table lacks it.
template <typename E, size_t N> const char *enumName(const EnumName<E> (&table)[N], E value) {
  for (const EnumName<E> &entry : table)
    if (entry.value == value)
      return entry.name;
  return "?";
}

/// The value named `name` in `table`, or std::nullopt.
template <typename E, size_t N>
std::optional<E> parseEnumName(const EnumName<E> (&table)[N], std::string_view name) {
  for (const EnumName<E> &entry : table)
    if (entry.name == name)
      return entry.value;
  return std::nullopt;
}

/// The table's names for a message, in its order: "input, output, weight or arena".
template <typename E, size_t N> std::string enumNameList(const EnumName<E> (&table)[N]) {
  std::string list;
  for (size_t i = 0; i < N; ++i)
    list += std::string(i == 0 ? "" : i + 1 == N ? " or " : ", ") + table[i].name;
  return list;
}

} // namespace tensorc
