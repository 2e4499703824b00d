#include "commands/options.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>

extern "C" {
#include <subcmd/pager.h>
#include <subcmd/parse-options.h>
}

#include "commands/command.h"

namespace offwake {

Option flag_option(char s, std::string l, bool* target, std::string help) {
  Option o;
  o.short_name = s;
  o.long_name = std::move(l);
  o.kind = Option::Kind::kFlag;
  o.flag = target;
  o.help = std::move(help);
  return o;
}

static Option arg_option(char s, std::string l, Option::Kind kind, std::string arg, std::string help) {
  Option o;
  o.short_name = s;
  o.long_name = std::move(l);
  o.kind = kind;
  o.arg_name = std::move(arg);
  o.help = std::move(help);
  return o;
}

Option string_option(char s, std::string l, std::string arg, std::string* target, std::string help) {
  Option o = arg_option(s, std::move(l), Option::Kind::kString, std::move(arg), std::move(help));
  o.string = target;
  return o;
}

Option optional_string_option(char s, std::string l, std::string arg, std::string* target, const char* if_bare,
                              std::string help) {
  Option o = string_option(s, std::move(l), std::move(arg), target, std::move(help));
  o.optional_default = if_bare;
  return o;
}

Option uint_option(char s, std::string l, std::string arg, uint64_t* target, std::string help) {
  Option o = arg_option(s, std::move(l), Option::Kind::kUint, std::move(arg), std::move(help));
  o.uint = target;
  return o;
}

Option double_option(char s, std::string l, std::string arg, double* target, std::string help) {
  Option o = arg_option(s, std::move(l), Option::Kind::kDouble, std::move(arg), std::move(help));
  o.dbl = target;
  return o;
}

Option callback_option(char s, std::string l, std::string arg,
                       std::function<Status(const std::string&)> cb, std::string help) {
  Option o = arg_option(s, std::move(l), Option::Kind::kCallback, std::move(arg), std::move(help));
  o.callback = std::move(cb);
  return o;
}

// As libsubcmd's own errors name an option: "option `output'" or "switch `o'".
static std::string error_name(const Option& o) {
  return o.long_name.empty() ? std::string("switch `") + o.short_name + "'" : "option `" + o.long_name + "'";
}

static std::string given_name(const Option& o) {
  return o.long_name.empty() ? std::string("-") + o.short_name : "--" + o.long_name;
}

static Status apply_option(const Option& o, const std::string& value) {
  switch (o.kind) {
    case Option::Kind::kFlag: *o.flag = true; return ok_status();
    case Option::Kind::kString: *o.string = value; return ok_status();
    case Option::Kind::kCallback: {
      auto s = o.callback(value);
      // Whatever the callback found wrong, it is this option's value.
      if (!s) return s.error().context(error_name(o)).with_kind(ErrorKind::kUsage);
      return s;
    }
    case Option::Kind::kUint: {
      char* end = nullptr;
      errno = 0;
      unsigned long long v = strtoull(value.c_str(), &end, 0);
      if (value.empty() || *end || errno || value[0] == '-')
        return Error::usage(error_name(o) + " expects a non-negative integer, not '" + value + "'");
      *o.uint = v;
      return ok_status();
    }
    case Option::Kind::kDouble: {
      char* end = nullptr;
      errno = 0;
      double v = strtod(value.c_str(), &end);
      // nan and inf are not durations: nan would compare false against every limit.
      if (value.empty() || *end || errno || !std::isfinite(v) || v < 0)
        return Error::usage(error_name(o) + " expects a finite non-negative number, not '" + value + "'");
      *o.dbl = v;
      return ok_status();
    }
  }
  return ok_status();
}

// libsubcmd calls this for every option with a value; `value` points at our Option. On an
// error it prints the option's usage line after ours and exits 129. Its own errors have the
// form " Error: option `x' requires a value" with no newline, the usage following.
static int apply_callback(const struct option* opt, const char* arg, int unset) {
  const Option& o = *static_cast<const Option*>(opt->value);
  if (!unset && !arg && o.optional_default) arg = o.optional_default;  // PARSE_OPT_OPTARG, given bare
  if (unset || !arg) return -1;  // PARSE_OPT_NONEG: libsubcmd refuses --no-<option> before this
  if (Status s = apply_option(o, arg); !s) {
    fprintf(stderr, " Error: %s\n", s.error().message().c_str());
    return -1;
  }
  return 0;
}

ParsedArgs parse_command_line(const std::vector<std::string>& args, const std::vector<Option>& table,
                              const std::vector<std::string>& usage, bool stop_at_non_option) {
  // The usage goes through perf's pager when stdout is a terminal, as `perf record -h` does.
  pager_init("PERF_PAGER");

  auto given = std::make_unique<bool[]>(table.size());
  std::vector<struct option> options;
  options.reserve(table.size() + 1);
  for (size_t i = 0; i < table.size(); ++i) {
    const Option& o = table[i];
    struct option opt {};
    opt.short_name = o.short_name;
    opt.long_name = o.long_name.empty() ? nullptr : o.long_name.c_str();
    opt.help = o.help.c_str();
    opt.set = &given[i];
    if (o.kind == Option::Kind::kFlag) {
      opt.type = OPTION_BOOLEAN;
      opt.value = o.flag;
    } else {
      opt.type = OPTION_CALLBACK;
      opt.value = const_cast<Option*>(&o);
      opt.argh = o.arg_name.c_str();
      opt.flags = PARSE_OPT_NONEG | (o.optional_default ? PARSE_OPT_OPTARG : 0);
      opt.callback = apply_callback;
    }
    options.push_back(opt);
  }
  options.push_back(option{});  // OPTION_END

  std::vector<const char*> usage_lines;
  for (const auto& u : usage) usage_lines.push_back(u.c_str());
  usage_lines.push_back(nullptr);

  // parse_options moves the arguments it leaves to the front of argv.
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  argv.push_back(nullptr);
  int left = parse_options(static_cast<int>(args.size()), argv.data(), options.data(), usage_lines.data(),
                           stop_at_non_option ? PARSE_OPT_STOP_AT_NON_OPTION : 0);

  ParsedArgs out;
  for (int i = 0; i < left; ++i) out.rest.emplace_back(argv[i]);
  for (size_t i = 0; i < table.size(); ++i)
    // A flag turned off (--no-eager) is as good as not given.
    if (given[i] && (table[i].kind != Option::Kind::kFlag || *table[i].flag)) out.given.insert(given_name(table[i]));
  return out;
}

int usage_error(const std::string& command, const std::string& message) {
  fprintf(stderr, "perf offwake %s: %s (see 'perf offwake %s -h')\n", command.c_str(), message.c_str(),
          command.c_str());
  return kExitUsage;
}

namespace {

bool is_pipe(int fd) {
  struct stat st;
  return fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode);
}

}  // namespace

std::string default_input() { return is_pipe(STDIN_FILENO) ? "-" : "perf.data"; }

std::string default_output() { return is_pipe(STDOUT_FILENO) ? "-" : "perf.data"; }

}  // namespace offwake
