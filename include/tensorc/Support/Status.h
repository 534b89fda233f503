// Errors as values: Status (ok or a message) and Expected<T> (a value or an Error).
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace tensorc {

/// An error message, meant to be read by a user: it names the node, tensor, file or line at fault.
class Error {
public:
  explicit Error(std::string message) : message_(std::move(message)) {}
  const std::string &message() const { return message_; }
  /// Prefixes context ("while parsing model.fx: ...") and returns the error for chaining.
  Error &&withContext(const std::string &context) && {
    message_ = context + ": " + message_;
    return std::move(*this);
  }

private:
  std::string message_;
};

/// Success, or an Error. Library code returns this; only the driver exits.
class [[nodiscard]] Status {
public:
  Status() = default;
  Status(Error error) : error_(std::move(error)) {}
  static Status ok() { return Status(); }

  bool isOk() const { return !error_.has_value(); }
  explicit operator bool() const { return isOk(); }
  const Error &error() const {
    assert(error_ && "error() on an ok Status");
    return *error_;
  }
  Error takeError() {
    assert(error_ && "takeError() on an ok Status");
    return std::move(*error_);
  }
  const std::string &message() const { return error().message(); }

private:
  std::optional<Error> error_;
};

/// A T, or the Error explaining why there is none.
template <typename T> class [[nodiscard]] Expected {
public:
  Expected(T value) : storage_(std::move(value)) {}
  Expected(Error error) : storage_(std::move(error)) {}
  Expected(Status status) : storage_(status.takeError()) {}

  bool hasValue() const { return storage_.index() == 0; }
  explicit operator bool() const { return hasValue(); }

  T &operator*() & { return value(); }
  const T &operator*() const & { return value(); }
  T *operator->() { return &value(); }
  const T *operator->() const { return &value(); }

  T &value() & {
    assert(hasValue() && "value() on an Expected holding an error");
    return std::get<0>(storage_);
  }
  const T &value() const & {
    assert(hasValue() && "value() on an Expected holding an error");
    return std::get<0>(storage_);
  }
  T &&value() && {
    assert(hasValue() && "value() on an Expected holding an error");
    return std::get<0>(std::move(storage_));
  }
  const Error &error() const {
    assert(!hasValue() && "error() on an Expected holding a value");
    return std::get<1>(storage_);
  }
  Error takeError() {
    assert(!hasValue() && "takeError() on an Expected holding a value");
    return std::get<1>(std::move(storage_));
  }
  Status status() { return hasValue() ? Status::ok() : Status(takeError()); }

private:
  std::variant<T, Error> storage_;
};

/// Builds an Error from streamable parts: makeError("node ", name, ": bad rank ", r).
template <typename... Parts> Error makeError(const Parts &...parts);

} // namespace tensorc

#include "tensorc/Support/StrCat.h"

namespace tensorc {
template <typename... Parts> Error makeError(const Parts &...parts) {
  return Error(strCat(parts...));
}
} // namespace tensorc

#define TC_CONCAT_INNER(a, b) a##b
#define TC_CONCAT(a, b) TC_CONCAT_INNER(a, b)

/// Returns the error of a Status-returning expression from the enclosing function.
#define TC_RETURN_IF_ERROR(expr)                                                                   \
  do {                                                                                             \
    ::tensorc::Status tc_status_ = (expr);                                                         \
    if (!tc_status_.isOk())                                                                        \
      return tc_status_.takeError();                                                               \
  } while (false)

/// `TC_ASSIGN_OR_RETURN(auto x, computeX());` binds the value or returns the error.
#define TC_ASSIGN_OR_RETURN(lhs, expr)                                                             \
  TC_ASSIGN_OR_RETURN_IMPL(TC_CONCAT(tc_expected_, __LINE__), lhs, expr)
#define TC_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr)                                                   \
  auto tmp = (expr);                                                                               \
  if (!tmp.hasValue())                                                                             \
    return tmp.takeError();                                                                        \
  lhs = std::move(tmp).value()
