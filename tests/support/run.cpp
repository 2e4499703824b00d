#include "support/run.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace offwake::test {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TempDir::TempDir() {
  std::string tmpl = std::filesystem::temp_directory_path().string() + "/offwake-test-XXXXXX";
  if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
  path_ = tmpl;
}

TempDir::~TempDir() {
  if (getenv("OFFWAKE_TEST_KEEP")) {  // for debugging a test: keep what it wrote
    fprintf(stderr, "keeping %s\n", path_.c_str());
    return;
  }
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

RunResult run(const std::string& command, const std::string& input) {
  TempDir dir;
  std::string in = dir.file("in"), out = dir.file("out"), err = dir.file("err");
  std::ofstream(in, std::ios::binary) << input;
  std::string full = "bash -c '" ;
  for (char c : command) full += (c == '\'') ? std::string("'\\''") : std::string(1, c);
  full += "' <" + in + " >" + out + " 2>" + err;
  RunResult r;
  int st = std::system(full.c_str());
  r.status = (st != -1 && WIFEXITED(st)) ? WEXITSTATUS(st) : -1;
  r.out = read_file(out);
  r.err = read_file(err);
  return r;
}

}  // namespace offwake::test
