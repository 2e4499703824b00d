// A sub-command's option table, parsed by perf's own parser (libsubcmd's parse_options), so
// that every sub-command behaves as the rest of perf does: -oFILE, --output=FILE, combined
// short flags, unambiguous abbreviations (--dur 5), --no-<flag>, -- ends the options, and
// perf's usage text and exit status 129 for -h and for a usage error.
#pragma once

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "util/result.h"

namespace offwake {

struct Option {
  enum class Kind { kFlag, kString, kUint, kDouble, kCallback };
  char short_name = 0;        // 0: none
  std::string long_name;      // without the leading "--"
  Kind kind = Kind::kFlag;
  std::string arg_name;       // shown in usage, e.g. "file"
  std::string help;
  bool* flag = nullptr;       // kFlag: true when given, false with --no-<name>
  std::string* string = nullptr;
  uint64_t* uint = nullptr;
  double* dbl = nullptr;
  std::function<Status(const std::string&)> callback;  // kCallback: gets the argument
  // The value of an option given without one ("--switch-output", but "--switch-output=10s"),
  // for an option whose value is optional; unset: the value is required.
  const char* optional_default = nullptr;
};

Option flag_option(char s, std::string l, bool* target, std::string help);
Option string_option(char s, std::string l, std::string arg, std::string* target, std::string help);
// A string option whose value may be left out (given as --name=value only, as perf's own):
// then it is `if_bare`.
Option optional_string_option(char s, std::string l, std::string arg, std::string* target, const char* if_bare,
                              std::string help);
Option uint_option(char s, std::string l, std::string arg, uint64_t* target, std::string help);
Option double_option(char s, std::string l, std::string arg, double* target, std::string help);
Option callback_option(char s, std::string l, std::string arg,
                       std::function<Status(const std::string&)> cb, std::string help);

struct ParsedArgs {
  std::vector<std::string> rest;     // arguments after the options (e.g. the command to run)
  std::set<std::string> given;       // the options given, as errors name them ("--cgroup", "-t")
};

// Parses args[1..] (args[0] is the sub-command's name) with libsubcmd. With
// `stop_at_non_option` the first non-option ends the options (record's command). -h, --help
// and every usage error print perf's usage and end the process with status 129, as perf's
// own commands do; on return the options have been stored.
ParsedArgs parse_command_line(const std::vector<std::string>& args, const std::vector<Option>& table,
                              const std::vector<std::string>& usage, bool stop_at_non_option);

// A usage error found after the parse, as report and script say it: "perf offwake COMMAND:
// MESSAGE (see 'perf offwake COMMAND -h')" on standard error; returns kExitUsage.
int usage_error(const std::string& command, const std::string& message);

// The input of report and script without -i: standard input ("-") when it is a pipe, as perf
// report and perf script read `perf record -o - | perf report`; else "perf.data".
std::string default_input();
// The output of record without -o: standard output ("-") when it is a pipe (`perf offwake
// record | perf offwake report`), as perf record writes; else "perf.data".
std::string default_output();

}  // namespace offwake
