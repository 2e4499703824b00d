// Wakers as perf names them: Debian's perf 6.1 and perf 6.12 read a recording's waker samples.
#pragma once

#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "support/paths.h"
#include "support/perf_script.h"
#include "support/run.h"

namespace offwake::test {

// Every waker sample of `data` is named by both perfs: perf 6.12 forgets a thread at its
// PERF_RECORD_EXIT and prints ":TID" for one stamped after it. At least `least` wakers each.
inline void expect_wakers_named_by_every_perf(const std::string& data, size_t least) {
  for (const std::string& perf : {std::string(kDebianPerf), perf612_path()}) {
    SCOPED_TRACE(perf);
    auto script = run(perf + " script -F comm,tid,event -i " + data);
    ASSERT_EQ(script.status, 0) << script.err;
    size_t wakers = 0;
    std::istringstream lines(script.out);
    for (std::string line; std::getline(lines, line);) {
      if (line.find("offwake-waker") == std::string::npos) continue;
      ++wakers;
      std::string comm;
      std::istringstream(line) >> comm;
      EXPECT_NE(comm[0], ':') << line;
    }
    EXPECT_GE(wakers, least) << script.out;
  }
}

}  // namespace offwake::test
