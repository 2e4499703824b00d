// perf offwake convert: a recording made by stock perf (the two scheduler tracepoints with
// callchains) made into what perf offwake record writes, by record/convert_recording.h. This
// file checks the options and prints the summary.
#include <csignal>
#include <cstdio>

#include "blocks/block_filters.h"
#include "commands/command.h"
#include "commands/options.h"
#include "record/convert_recording.h"
#include "record/offwake_file.h"
#include "samples/record_stats.h"

namespace offwake {
namespace {

int cmd_convert(const std::vector<std::string>& args) {
  ConvertOptions o;
  std::vector<Option> table = {
      string_option('i', "input", "file", &o.input, "stock perf recording ('-' for standard input); default perf.data"),
      string_option('o', "output", "file", &o.output, "output file name ('-' for a pipe)"),
      string_option(0, "state", "S|D|I", &o.state,
                    "waits kept: S sleep, D uninterruptible, I idle kernel threads (default SDI)"),
      double_option(0, "min-block", "usecs", &o.min_block_us, "ignore blocks shorter than this"),
      double_option(0, "max-block", "usecs", &o.max_block_us, "ignore blocks longer than this"),
      double_option(0, "sample-period", "usecs", &o.sample_period_us,
                    "sample blocks by time: keep a block of d with probability d/usecs, weighted usecs"),
      flag_option(0, "sched-frames", &o.sched_frames,
                  "keep the scheduler's own frames (schedule, __schedule, ...) in blocked kernel stacks"),
      flag_option('q', "quiet", &o.quiet, "do not print the summary"),
  };
  const std::vector<std::string> usage = {"perf offwake convert [-i <file>] -o <file> [<options>]"};
  ParsedArgs parsed = parse_command_line(args, table, usage, false);
  auto usage_error = [](const std::string& m) {
    fprintf(stderr, "perf offwake convert: %s\n", m.c_str());
    return kExitUsage;
  };
  if (!parsed.rest.empty()) return usage_error("unexpected argument '" + parsed.rest[0] + "'");
  if (o.output.empty()) return usage_error("-o/--output is required (the offwake recording to write)");
  if (o.output != "-" && o.output == o.input) return usage_error("-o names the input file");
  if (std::string e = durations_error(o.min_block_us, o.max_block_us, o.sample_period_us); !e.empty())
    return usage_error(e);
  if (auto m = parse_state_letters(o.state); !m) return usage_error(m.error().message());
  if (o.output != "-" && o.input != "-" && !path_exists(o.input)) {
    fprintf(stderr, "perf offwake convert: %s does not exist (record it with %s -a)\n", o.input.c_str(), kConvertRecipe);
    return kExitFailure;
  }
  signal(SIGPIPE, SIG_IGN);

  std::vector<std::string> argv = {"perf", "offwake"};
  argv.insert(argv.end(), args.begin(), args.end());
  auto c = convert_recording(o, argv);
  if (!c) {
    fprintf(stderr, "perf offwake convert: %s\n", c.error().message().c_str());
    return kExitFailure;
  }
  if (!o.quiet) {
    for (const auto& n : c->notes) fprintf(stderr, "perf offwake convert: note: %s\n", n.c_str());
    const RecordStats& st = c->stats;
    fprintf(stderr, "[ perf offwake convert: %llu blocks, %llu wakeups, %.3f s blocked, %llu distinct stacks ]\n",
            static_cast<unsigned long long>(st.counters.blocks), static_cast<unsigned long long>(st.counters.wakeups),
            st.blocked_ns / 1e9, static_cast<unsigned long long>(st.keys));
    fprintf(stderr, "[ perf offwake convert: wrote %.3f MB %s (%llu samples); %llu perf records lost; "
            "%llu blocks without a waker; %llu callchains cut at a word that is no context marker ]\n",
            st.bytes / 1048576.0, st.output.c_str(), static_cast<unsigned long long>(st.offwake_samples),
            static_cast<unsigned long long>(st.perf_lost), static_cast<unsigned long long>(st.counters.missed_wakeups),
            static_cast<unsigned long long>(st.callchains_cut));
    print_sampling_summary(stderr, "convert", st);
    print_user_unwind_summary(stderr, "convert", st.user_unwind);
  }
  return kExitOk;
}

}  // namespace

int run_convert(const std::vector<std::string>& args) { return cmd_convert(args); }

}  // namespace offwake
