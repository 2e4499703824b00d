// Errors as values: a Result<T> holds either a T or an Error that says what was being done.
#pragma once

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>
#include <variant>

namespace offwake {

class Error {
 public:
  Error(std::string what, int errnum = 0) : what_(std::move(what)), errnum_(errnum) {}

  // An error from the current errno, e.g. Error::from_errno("opening perf.data").
  static Error from_errno(std::string what) { return Error(std::move(what), errno); }

  int errnum() const { return errnum_; }
  const std::string& what() const { return what_; }

  // "what: strerror" or just "what" when no errno is attached.
  std::string message() const {
    if (errnum_ == 0) return what_;
    return what_ + ": " + std::strerror(errnum_);
  }

  // Adds an outer context: "reading header: short read".
  Error context(const std::string& outer) const { return Error(outer + ": " + what_, errnum_); }

 private:
  std::string what_;
  int errnum_;
};

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}
  Result(Error error) : v_(std::move(error)) {}

  bool ok() const { return std::holds_alternative<T>(v_); }
  explicit operator bool() const { return ok(); }

  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }

  const Error& error() const { return std::get<Error>(v_); }

 private:
  std::variant<T, Error> v_;
};

// Result of an operation that yields nothing but may fail.
struct Ok {};
using Status = Result<Ok>;
inline Status ok_status() { return Ok{}; }

}  // namespace offwake

// Propagates the error of an expression that yields a Result/Status.
#define OFFWAKE_TRY(expr)                             \
  do {                                                \
    auto offwake_try_r_ = (expr);                     \
    if (!offwake_try_r_) return offwake_try_r_.error(); \
  } while (0)
