// perf offwake report: the picture people look at. Reads a recording (file or stream) and
// prints a table of blocked stacks with their wakers (--stdio, the default), folded stacks
// (--folded), an interactive off-wake flame graph (--svg) or a pprof profile (--pprof).
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>

#include "commands/command.h"
#include "commands/options.h"
#include "commands/output_file.h"
#include "commands/sample_options.h"
#include "report/flamegraph.h"
#include "report/folded.h"
#include "report/pprof.h"
#include "report/profile.h"
#include "report/stdio_report.h"

namespace offwake {
namespace {

using report::Profile;

// "1ms", "250us", "2s", "1500ns" -> ns; "0.5%" -> a share. A number without a unit is refused.
struct Minimum {
  uint64_t ns = 0;
  double share = 0;  // percent
};

Status parse_minimum(const std::string& text, Minimum* out) {
  char* end = nullptr;
  errno = 0;
  const double v = strtod(text.c_str(), &end);
  if (end == text.c_str() || errno || !std::isfinite(v) || v < 0)
    return Error::usage("--min '" + text + "': expected a time (1ms, 250us, 2s) or a share (0.5%)");
  const std::string unit(end);
  static const std::pair<const char*, double> kUnits[] = {{"ns", 1}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}};
  if (unit == "%") {
    if (v > 100) return Error::usage("--min '" + text + "': a share is at most 100%");
    out->share = v;
    return ok_status();
  }
  for (const auto& [name, scale] : kUnits) {
    if (unit == name) {
      out->ns = static_cast<uint64_t>(v * scale);
      return ok_status();
    }
  }
  return Error::usage("--min '" + text + "': expected a time (1ms, 250us, 2s) or a share (0.5%)");
}

// --sort: an order (time, count, avg, max) and, first, cgroup to group the rows by cgroup.
Status parse_sort(const std::string& text, report::StdioOptions& so) {
  static const std::pair<const char*, report::SortKey> kKeys[] = {{"time", report::SortKey::kTime},
                                                                   {"count", report::SortKey::kCount},
                                                                   {"avg", report::SortKey::kAvg},
                                                                   {"max", report::SortKey::kMax}};
  const std::vector<std::string> keys = split_list(text);
  const auto bad = [&] {
    return Error::usage("--sort takes one of time, count, avg, max, or cgroup before one of them, not '" + text + "'");
  };
  size_t i = 0;
  if (!keys.empty() && keys[0] == "cgroup") {
    so.by_cgroup = true;
    ++i;
  }
  if (keys.size() - i > 1 || keys.empty()) return bad();
  if (i == keys.size()) return ok_status();  // cgroup alone: by time within each
  for (const auto& [name, key] : kKeys) {
    if (keys[i] == name) {
      so.sort = key;
      return ok_status();
    }
  }
  return bad();
}

// Progress on stderr once reading has taken a second: a bar on a terminal, else a line
// every 10%.
class ProgressReporter {
 public:
  explicit ProgressReporter(std::string what) : what_(std::move(what)), tty_(isatty(2)), start_(now()) {}
  ~ProgressReporter() {
    if (shown_ && tty_) fprintf(stderr, "\r%*s\r", 72, "");
  }
  void update(uint64_t done, uint64_t total) {
    const double elapsed = now() - start_;
    if (elapsed < 1.0) return;
    const int pct = total ? static_cast<int>(100.0 * static_cast<double>(done) / static_cast<double>(total)) : -1;
    if (tty_) {
      if (elapsed - last_ < 0.2 && pct != 100) return;
      last_ = elapsed;
      if (pct >= 0) {
        const int bars = pct / 4;
        fprintf(stderr, "\rReading %s: [%-25.*s] %3d%%", what_.c_str(), bars, "#########################", pct);
      } else {
        fprintf(stderr, "\rReading %s: %.1f MB", what_.c_str(), static_cast<double>(done) / 1048576.0);
      }
    } else {
      const int step = pct >= 0 ? pct / 10 : static_cast<int>(elapsed / 5);
      if (step == last_step_) return;
      last_step_ = step;
      if (pct >= 0) fprintf(stderr, "perf offwake report: read %d%% of %s\n", pct, what_.c_str());
      else fprintf(stderr, "perf offwake report: read %.1f MB of %s\n", static_cast<double>(done) / 1048576.0, what_.c_str());
    }
    shown_ = true;
  }

 private:
  static double now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  }
  std::string what_;
  bool tty_;
  double start_, last_ = 0;
  int last_step_ = -1;
  bool shown_ = false;
};

// write_file(), or standard output for "-".
Status write_output(const std::string& path, const void* data, size_t size) {
  if (path != "-") return write_file(path, data, size);
  if (fwrite(data, 1, size, stdout) != size || fflush(stdout) != 0)
    return Error::from_errno("writing standard output");
  return ok_status();
}

std::string output_name(const std::string& path) { return path == "-" ? "standard output" : path; }

std::string command_line(const Profile& p) {
  std::string cmd;
  for (const auto& a : p.info.host.cmdline) cmd += (cmd.empty() ? "" : " ") + a;
  return cmd;
}

report::FlameGraphOptions flame_options(const Profile& p, const std::string& input, bool wallclock) {
  report::FlameGraphOptions o;
  o.title = wallclock ? "Wall-clock flame graph (on-CPU and off-CPU)" : "Off-wake time flame graph";
  if (!p.info.host.cmdline.empty()) o.subtitle.push_back(command_line(p));
  std::string host = input;
  if (!p.info.host.hostname.empty()) host += " on " + p.info.host.hostname + " (Linux " + p.info.host.os_release + ")";
  o.subtitle.push_back(host);
  std::string totals = "off-CPU " + report::human_ns(p.off_cpu_ns) + " in " + std::to_string(p.blocks) + " blocks";
  if (wallclock) totals += ", on-CPU " + report::human_ns(p.on_cpu_ns) + " in " + std::to_string(p.on_cpu_samples) + " samples";
  o.subtitle.push_back(totals);
  o.value_name = wallclock ? "time" : "off-CPU";
  return o;
}

// Several inputs are summed: a file named twice (an overlapping glob of --switch-output's
// windows, a name repeated) would count its blocks twice. The message, if one is.
std::optional<std::string> input_given_twice(const std::vector<std::string>& inputs) {
  std::map<std::pair<dev_t, ino_t>, const std::string*> seen;
  for (const std::string& in : inputs) {
    struct stat st;
    if (in == "-" || stat(in.c_str(), &st) != 0) continue;  // reading it says what is wrong
    auto [it, added] = seen.emplace(std::make_pair(st.st_dev, st.st_ino), &in);
    if (added) continue;
    const std::string what = in == *it->second ? "'" + in + "' is given twice"
                                               : "'" + in + "' is the same file as '" + *it->second + "'";
    return what + ": each recording is read once (its blocks would count twice)";
  }
  return std::nullopt;
}

int fail(const std::string& message) {
  fprintf(stderr, "perf offwake report: %s\n", message.c_str());
  return kExitFailure;
}

int usage_error(const std::string& message) { return offwake::usage_error("report", message); }

int cmd_report(const std::vector<std::string>& args) {
  signal(SIGPIPE, SIG_IGN);  // a closed standard output is a failed write (EPIPE), seen below
  std::vector<std::string> inputs;
  std::string svg, pprof, unit = "ns", sort = "time", min_text;
  bool stdio = false, folded = false, wallclock = false;
  report::Filters filters;
  report::StdioOptions so;
  std::vector<Option> table = {
      callback_option('i', "input", "file",
                      [&](const std::string& v) {
                        inputs.push_back(v);
                        return ok_status();
                      },
                      "input file name ('-' for standard input; default perf.data, or standard input if a pipe); given again, several "
                      "recordings summed (--switch-output's windows)"),
      flag_option(0, "stdio", &stdio, "the table of blocked stacks and their wakers (the default)"),
      flag_option(0, "folded", &folded, "folded stacks on standard output (offwake-collapse.py's format)"),
      string_option(0, "svg", "file", &svg, "write an interactive off-wake flame graph ('-': standard output)"),
      string_option(0, "pprof", "file", &pprof,
                    "write a gzipped pprof profile (go tool pprof, Parca, Pyroscope; '-': standard output)"),
      string_option(0, "unit", "ns|us", &unit, "unit of the folded weights (default ns)"),
      string_option(0, "min", "time|share", &min_text, "leave out stacks below this (1ms, 250us, 0.5%)"),
      flag_option(0, "kernel-only", &filters.kernel_only, "kernel frames only"),
      flag_option(0, "user-only", &filters.user_only, "user frames only"),
      flag_option(0, "no-waker", &filters.no_waker, "blocked stacks only, without their wakers"),
      string_option(0, "sort", "key[,key]", &sort,
                    "table order: time (default), count, avg, max; cgroup: grouped by cgroup first"),
      flag_option(0, "per-thread", &so.per_thread, "the table: a row per blocked thread, its stacks summed"),
      flag_option(0, "wallclock", &wallclock, "on-CPU and off-CPU time per stack in one view (--on-cpu recordings)"),
  };
  SampleOptions samples("the blocked or sampled thread's");
  samples.add_to(table);
  const std::vector<std::string> usage = {"perf offwake report [<options>]"};
  ParsedArgs parsed = parse_command_line(args, table, usage, false);
  if (!parsed.rest.empty()) return usage_error("unexpected argument '" + parsed.rest[0] + "'");
  if (inputs.empty()) inputs.push_back(default_input());
  if (inputs.size() > 1 && std::count(inputs.begin(), inputs.end(), "-"))
    return usage_error("standard input ('-') is read alone, not with other files");
  if (auto again = input_given_twice(inputs)) return usage_error(*again);
  // As the outputs name the input: the file, or the first of several and how many.
  const std::string input =
      inputs.size() == 1 ? inputs[0] : inputs[0] + " and " + std::to_string(inputs.size() - 1) + " more";
  if (filters.kernel_only && filters.user_only) return usage_error("--kernel-only and --user-only exclude each other");
  if (unit != "ns" && unit != "us") return usage_error("--unit must be ns or us, not '" + unit + "'");
  so.input = input;
  if (Status s = parse_sort(sort, so); !s) return usage_error(s.error().message());
  Minimum minimum;
  if (!min_text.empty()) {
    if (Status s = parse_minimum(min_text, &minimum); !s) return usage_error(s.error().message());
  }
  auto selection = samples.selection(parsed);
  if (!selection) return usage_error(selection.error().message());
  filters.select = std::move(selection).value();
  if (wallclock && filters.no_waker) filters.no_waker = false;  // wall-clock stacks have no waker anyway
  // The table and the pprof profile are off-wake views, with wakers: --wallclock would be
  // ignored there.
  if (wallclock && (stdio || !pprof.empty() || (!folded && svg.empty())))
    return usage_error("--wallclock is a view of --svg and --folded, not of the table or --pprof");
  if (!folded && svg.empty() && pprof.empty()) stdio = true;
  if (int(stdio) + int(folded) + int(svg == "-") + int(pprof == "-") > 1 && (svg == "-" || pprof == "-"))
    return usage_error("one output at most goes to standard output ('-'): --stdio, --folded, --svg - or --pprof -");

  // Several files (windows of one recording): their blocks summed, as one recording's.
  Profile profile;
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::optional<ProgressReporter> progress;
    progress.emplace(inputs[i] == "-" ? "standard input" : inputs[i]);
    auto loaded = report::load_profile(inputs[i], filters,
                                       [&](uint64_t done, uint64_t total) { progress->update(done, total); });
    progress.reset();
    // Options the recording cannot give (--time of summed blocks) were misused.
    if (!loaded && loaded.error().kind() == ErrorKind::kUnsupported) return usage_error(loaded.error().message());
    if (!loaded) return fail(loaded.error().message());
    if (i == 0) profile = std::move(loaded).value();
    else report::merge_profile(profile, std::move(loaded).value());
  }
  for (const auto& w : profile.warnings) fprintf(stderr, "perf offwake report: warning: %s\n", w.c_str());
  if (wallclock && !profile.on_cpu_samples)
    fprintf(stderr, "perf offwake report: %s has no on-CPU samples (record with --on-cpu): off-CPU time only\n",
            input.c_str());

  // --min: stacks below it are left out of every output.
  const uint64_t whole = profile.off_cpu_ns + (wallclock ? profile.on_cpu_ns : 0);
  const uint64_t min_ns =
      minimum.share > 0 ? static_cast<uint64_t>(std::ceil(minimum.share / 100.0 * static_cast<double>(whole))) : minimum.ns;
  if (min_ns) {
    std::erase_if(profile.stacks, [&](const report::Stack& s) {
      if (s.ns >= min_ns) return false;
      if (s.kind == report::Kind::kOffCpu) {
        ++profile.below_min_stacks;
        profile.below_min_ns += s.ns;
      }
      return true;
    });
  }

  if (stdio) print_stdio_report(stdout, profile, so);
  if (folded) {
    report::FoldedOptions fo;
    fo.unit = unit == "us" ? report::Unit::kUs : report::Unit::kNs;
    fo.wallclock = wallclock;
    for (const auto& line : report::folded_lines(profile, fo)) fputs(line.c_str(), stdout);
  }
  // A reader that went away (report | head) wanted no more: not an error, as with perf report.
  if (fflush(stdout) != 0 && errno != EPIPE) return fail(std::string("writing standard output: ") + strerror(errno));
  if (!svg.empty()) {
    const std::vector<report::FlameStack> stacks = report::flame_stacks(profile, wallclock);
    uint64_t shown_ns = 0;
    for (const auto& s : stacks) shown_ns += s.value;
    const std::string doc = report::render_flamegraph_svg(stacks, flame_options(profile, input, wallclock));
    if (Status s = write_output(svg, doc.data(), doc.size()); !s) {
      if (s.error().errnum() != EPIPE) return fail(s.error().message());
    } else {
      fprintf(stderr, "perf offwake report: wrote %s (%zu stacks, %s)\n", output_name(svg).c_str(), stacks.size(),
              report::human_ns(shown_ns).c_str());
    }
  }
  if (!pprof.empty()) {
    auto bytes = report::encode_pprof(profile);
    if (!bytes) return fail(bytes.error().message());
    if (Status s = write_output(pprof, bytes->data(), bytes->size()); !s) {
      if (s.error().errnum() != EPIPE) return fail(s.error().message());
    } else {
      fprintf(stderr, "perf offwake report: wrote %s (%zu stacks)\n", output_name(pprof).c_str(), profile.stacks.size());
    }
  }
  return kExitOk;
}

}  // namespace

int run_report(const std::vector<std::string>& args) { return cmd_report(args); }

}  // namespace offwake
