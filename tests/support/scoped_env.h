// An environment variable set for a scope, and put back as it was (set or not) at its end.
#pragma once

#include <stdlib.h>

#include <optional>
#include <string>

namespace offwake::test {

class ScopedEnv {
 public:
  ScopedEnv(std::string name, const std::string& value) : name_(std::move(name)) {
    if (const char* v = getenv(name_.c_str())) before_ = v;
    set(value);
  }
  ~ScopedEnv() {
    if (before_) setenv(name_.c_str(), before_->c_str(), 1);
    else unsetenv(name_.c_str());
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

  void set(const std::string& value) { setenv(name_.c_str(), value.c_str(), 1); }

 private:
  std::string name_;
  std::optional<std::string> before_;
};

}  // namespace offwake::test
