// Errors as values: a Result<T> holds either a T or an Error that says what was being done,
// and of what kind the failure is (ErrorKind), for callers to branch on.
#pragma once

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>
#include <variant>

namespace offwake {

// What a caller can do about an error, whatever its message says: fix the command line, try
// another way of doing it on this machine, record the input differently, or retry. Callers
// branch on this, never on the text.
enum class ErrorKind {
  kOther,        // none of these: a library's refusal, an internal limit, a bug
  kUsage,        // the options or arguments are wrong; the same call with others may work
  kUnavailable,  // this machine cannot do it (no BTF, no privilege, no tracefs); another back end may
  kBadInput,     // the input cannot be read as what it claims to be (malformed, truncated)
  kUnsupported,  // the input is well formed, but asks for what this implementation does not decode
  kIo,           // a system call on a file, pipe or device failed; errnum() says why
};

// "usage", "unavailable", ...: for tests and diagnostics.
inline const char* error_kind_name(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kOther: return "other";
    case ErrorKind::kUsage: return "usage";
    case ErrorKind::kUnavailable: return "unavailable";
    case ErrorKind::kBadInput: return "bad input";
    case ErrorKind::kUnsupported: return "unsupported";
    case ErrorKind::kIo: return "I/O";
  }
  return "unknown";
}

class Error {
 public:
  // Without a kind an error is kOther, errno or not: an errno alone does not say whose fault
  // it is (EINVAL from a bad option and from a library are alike).
  Error(std::string what, int errnum = 0, ErrorKind kind = ErrorKind::kOther)
      : what_(std::move(what)), errnum_(errnum), kind_(kind) {}

  // An error from the current errno, e.g. Error::from_errno("opening perf.data"): a failed
  // system call is I/O unless the caller knows better (kUnavailable for EPERM on a BPF load).
  static Error from_errno(std::string what, ErrorKind kind = ErrorKind::kIo) {
    return Error(std::move(what), errno, kind);
  }
  static Error usage(std::string what, int errnum = 0) { return Error(std::move(what), errnum, ErrorKind::kUsage); }
  static Error unavailable(std::string what, int errnum = 0) {
    return Error(std::move(what), errnum, ErrorKind::kUnavailable);
  }
  static Error bad_input(std::string what, int errnum = 0) {
    return Error(std::move(what), errnum, ErrorKind::kBadInput);
  }
  static Error unsupported(std::string what, int errnum = 0) {
    return Error(std::move(what), errnum, ErrorKind::kUnsupported);
  }

  int errnum() const { return errnum_; }
  ErrorKind kind() const { return kind_; }
  bool is(ErrorKind kind) const { return kind_ == kind; }
  const std::string& what() const { return what_; }

  // "what: strerror" or just "what" when no errno is attached.
  std::string message() const {
    if (errnum_ == 0) return what_;
    return what_ + ": " + std::strerror(errnum_);
  }

  // Adds an outer context: "reading header: short read". The kind stays: what can be done
  // about an error does not change with where it is reported.
  Error context(const std::string& outer) const { return Error(outer + ": " + what_, errnum_, kind_); }

  // The same error seen by a caller who knows better what it means (a load refused by the
  // verifier is, to a command, this machine's limit).
  Error with_kind(ErrorKind kind) const { return Error(what_, errnum_, kind); }

 private:
  std::string what_;
  int errnum_;
  ErrorKind kind_;
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
