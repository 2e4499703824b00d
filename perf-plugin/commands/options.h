// A perf-style option table: one per sub-command, parsed the way perf's parse-options does
// (-o FILE, -oFILE, --output FILE, --output=FILE, combined short flags, -- ends options).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
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
  bool* flag = nullptr;
  std::string* string = nullptr;
  uint64_t* uint = nullptr;
  double* dbl = nullptr;
  std::function<Status(const std::string&)> callback;  // kCallback: gets the argument
};

Option flag_option(char s, std::string l, bool* target, std::string help);
Option string_option(char s, std::string l, std::string arg, std::string* target, std::string help);
Option uint_option(char s, std::string l, std::string arg, uint64_t* target, std::string help);
Option double_option(char s, std::string l, std::string arg, double* target, std::string help);
Option callback_option(char s, std::string l, std::string arg,
                       std::function<Status(const std::string&)> cb, std::string help);

struct ParsedArgs {
  bool help = false;                 // -h/--help was given
  std::vector<std::string> rest;     // arguments after the options (e.g. the command to run)
  std::set<std::string> given;       // the options given, as errors name them ("--cgroup", "-t")
};

// Parses argv[1..] (argv[0] is the sub-command name). Stops at the first non-option when
// `stop_at_non_option` (record's command) and after "--".
Result<ParsedArgs> parse_options(const std::vector<std::string>& args, const std::vector<Option>& table,
                                 bool stop_at_non_option);

// The common front of a sub-command: parses, prints a one-line error (exit 129) or the
// usage (-h, exit 0). Returns the exit status to leave with, or nullopt to go on.
std::optional<int> parse_command_line(const char* command, const std::vector<std::string>& args,
                                      const std::vector<Option>& table, const std::vector<std::string>& usage,
                                      bool stop_at_non_option, ParsedArgs& out);

// perf-style usage text: " Usage: perf offwake record [<options>] [<command>]" then the table.
std::string usage_text(const std::vector<std::string>& usage_lines, const std::vector<Option>& table);

}  // namespace offwake
