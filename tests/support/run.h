// Runs a shell command for a test and captures what it printed.
#pragma once

#include <string>

namespace offwake::test {

struct RunResult {
  int status = -1;  // exit code, or -1 if it did not exit normally
  std::string out, err;
};

// Runs `bash -c command`, with `input` on its standard input.
RunResult run(const std::string& command, const std::string& input = "");

// A fresh directory under the build tree, removed with its content when the object dies.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

std::string read_file(const std::string& path);

}  // namespace offwake::test
