// What a usage error looks like, as every perf command shows one: exit status 129, nothing on
// standard output, and the first line on standard error says what is wrong. What follows is
// perf's usage text (libsubcmd prints the whole table, or the one option's line), or nothing
// for our own checks made after the parse.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "support/run.h"

namespace offwake::test {

inline std::string first_line(const std::string& text) {
  size_t start = text.find_first_not_of('\n');
  if (start == std::string::npos) return "";
  return text.substr(start, text.find('\n', start) - start);
}

// `says`: a part of the first line, e.g. "option `duration' expects a finite".
inline void expect_usage_error(const RunResult& r, const std::string& says, const std::string& command) {
  EXPECT_EQ(r.status, 129) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_NE(first_line(r.err).find(says), std::string::npos) << "first line: " << first_line(r.err);
  // Anything after the first line is the command's usage.
  std::string rest = r.err.substr(r.err.find(first_line(r.err)) + first_line(r.err).size());
  if (rest.find_first_not_of('\n') != std::string::npos) {
    EXPECT_NE(rest.find(" Usage: perf offwake " + command), std::string::npos) << r.err;
  }
}

}  // namespace offwake::test
