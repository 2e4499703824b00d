// The sample filters that perf offwake report and perf offwake script both take, as perf
// report and perf script name them: --comm (perf's -c/--comms too), --pid, --tid, --cgroup, -C/--cpu, --time. One
// table and one check after the parse, for both commands; the rule they select by is
// report/sample_filter.h's.
#pragma once

#include <string>
#include <vector>

#include "commands/options.h"
#include "report/sample_filter.h"
#include "util/result.h"

namespace offwake {

// "a,b,c" -> {a, b, c}; empty items are left out.
std::vector<std::string> split_list(const std::string& s);

class SampleOptions {
 public:
  // `whose`: whose comm and cgroup --comm and --cgroup select by, in the command's words.
  explicit SampleOptions(std::string whose) : whose_(std::move(whose)) {}
  // Appends the options to a command's table; the strings they fill live in this object.
  void add_to(std::vector<Option>& table);
  // After the parse: what they select, or a usage error (an empty list, a bad number, cpu list
  // or time).
  Result<report::SampleSelection> selection(const ParsedArgs& parsed) const;

 private:
  std::string whose_;
  std::string comms_, pids_, tids_, cgroups_, cpus_, time_;
};

}  // namespace offwake
