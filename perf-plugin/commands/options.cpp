#include "commands/options.h"

#include <cmath>

#include <cerrno>
#include <cstdio>

#include "commands/command.h"
#include <cstdlib>
#include <sstream>

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

static std::string display_name(const Option& o) {
  return o.long_name.empty() ? std::string("-") + o.short_name : "--" + o.long_name;
}

static Status apply_option(const Option& o, const std::string& value) {
  switch (o.kind) {
    case Option::Kind::kFlag: *o.flag = true; return ok_status();
    case Option::Kind::kString: *o.string = value; return ok_status();
    case Option::Kind::kCallback: {
      auto s = o.callback(value);
      if (!s) return s.error().context("option `" + display_name(o) + "'");
      return s;
    }
    case Option::Kind::kUint: {
      char* end = nullptr;
      errno = 0;
      unsigned long long v = strtoull(value.c_str(), &end, 0);
      if (value.empty() || *end || errno || value[0] == '-')
        return Error("option `" + display_name(o) + "' expects a non-negative integer, not '" + value + "'");
      *o.uint = v;
      return ok_status();
    }
    case Option::Kind::kDouble: {
      char* end = nullptr;
      errno = 0;
      double v = strtod(value.c_str(), &end);
      // nan and inf are not durations: nan would compare false against every limit.
      if (value.empty() || *end || errno || !std::isfinite(v) || v < 0)
        return Error("option `" + display_name(o) + "' expects a finite non-negative number, not '" + value + "'");
      *o.dbl = v;
      return ok_status();
    }
  }
  return ok_status();
}

Result<ParsedArgs> parse_options(const std::vector<std::string>& args, const std::vector<Option>& table,
                                 bool stop_at_non_option) {
  ParsedArgs out;
  size_t i = 1;
  for (; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") {
      ++i;
      break;
    }
    if (a == "-h" || a == "--help") {
      out.help = true;
      continue;
    }
    if (a.size() > 2 && a[0] == '-' && a[1] == '-') {
      std::string name = a.substr(2), value;
      bool has_value = false;
      if (auto eq = name.find('='); eq != std::string::npos) {
        value = name.substr(eq + 1);
        name = name.substr(0, eq);
        has_value = true;
      }
      const Option* o = nullptr;
      for (const auto& t : table)
        if (t.long_name == name) o = &t;
      if (!o) return Error("unknown option `" + name + "'", EINVAL);
      if (o->kind == Option::Kind::kFlag) {
        if (has_value) return Error("option `" + name + "' takes no value", EINVAL);
        OFFWAKE_TRY(apply_option(*o, ""));
        out.given.insert(display_name(*o));
        continue;
      }
      if (!has_value) {
        if (i + 1 >= args.size()) return Error("option `" + name + "' requires a value", EINVAL);
        value = args[++i];
      }
      OFFWAKE_TRY(apply_option(*o, value));
      out.given.insert(display_name(*o));
      continue;
    }
    if (a.size() > 1 && a[0] == '-' && a != "-") {
      for (size_t k = 1; k < a.size(); ++k) {
        const Option* o = nullptr;
        for (const auto& t : table)
          if (t.short_name && t.short_name == a[k]) o = &t;
        if (!o) return Error(std::string("unknown switch `") + a[k] + "'", EINVAL);
        if (o->kind == Option::Kind::kFlag) {
          OFFWAKE_TRY(apply_option(*o, ""));
          out.given.insert(display_name(*o));
          continue;
        }
        std::string value;
        if (k + 1 < a.size()) {
          value = a.substr(k + 1);
        } else {
          if (i + 1 >= args.size()) return Error(std::string("switch `") + a[k] + "' requires a value", EINVAL);
          value = args[++i];
        }
        OFFWAKE_TRY(apply_option(*o, value));
        out.given.insert(display_name(*o));
        break;
      }
      continue;
    }
    if (stop_at_non_option) break;
    out.rest.push_back(a);
  }
  for (; i < args.size(); ++i) out.rest.push_back(args[i]);
  return out;
}

std::optional<int> parse_command_line(const char* command, const std::vector<std::string>& args,
                                      const std::vector<Option>& table, const std::vector<std::string>& usage,
                                      bool stop_at_non_option, ParsedArgs& out) {
  auto parsed = parse_options(args, table, stop_at_non_option);
  if (!parsed) {
    fprintf(stderr, "perf offwake %s: %s (see 'perf offwake %s -h')\n", command, parsed.error().message().c_str(),
            command);
    return kExitUsage;
  }
  if (parsed->help) {
    printf("%s", usage_text(usage, table).c_str());
    return kExitOk;
  }
  out = std::move(parsed).value();
  return std::nullopt;
}

std::string usage_text(const std::vector<std::string>& usage_lines, const std::vector<Option>& table) {
  std::ostringstream s;
  for (size_t i = 0; i < usage_lines.size(); ++i)
    s << (i == 0 ? " Usage: " : "    or: ") << usage_lines[i] << "\n";
  s << "\n";
  for (const auto& o : table) {
    std::string left = "    ";
    left += o.short_name ? std::string("-") + o.short_name : "  ";
    if (!o.long_name.empty()) left += std::string(o.short_name ? ", " : "  ") + "--" + o.long_name;
    if (o.kind != Option::Kind::kFlag) left += " <" + o.arg_name + ">";
    if (left.size() < 30) left.resize(30, ' ');
    else left += "\n" + std::string(30, ' ');
    s << left << o.help << "\n";
  }
  return s.str();
}

}  // namespace offwake
