// perf-offwake: `perf offwake <command>` runs this program (perf looks for perf-<cmd> on its
// exec path and on PATH).
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "commands/command.h"
#include "commands/parent_perf.h"

namespace offwake {

int run_convert(const std::vector<std::string>& args);
int run_record(const std::vector<std::string>& args);
int run_script(const std::vector<std::string>& args);
int run_report(const std::vector<std::string>& args);

const std::vector<Command>& commands() {
  static const std::vector<Command> table = {
      {"convert", "Convert a stock perf recording of the scheduler tracepoints into an offwake recording",
       run_convert},
      {"record", "Record off-CPU time with blocked and waker stacks into perf.data", run_record},
      {"report", "Show a recording: top blocked stacks and wakers, folded stacks, flame graph, pprof", run_report},
      {"script", "Run a perf-script-style Python script over the recording", run_script},
  };
  return table;
}

static void print_main_usage(FILE* out) {
  fprintf(out,
          "\n usage: perf offwake [--version] [--help] <command> [<args>]\n\n"
          " Off-CPU time by blocked stack and by waker stack, from BPF, written as perf.data.\n\n"
          " The commands are:\n");
  for (const auto& c : commands()) fprintf(out, "   %-10s %s\n", c.name, c.summary);
  fprintf(out, "\n See 'perf offwake <command> -h' for a command's options.\n");
}

}  // namespace offwake

int main(int argc, char** argv) {
  using namespace offwake;
  std::vector<std::string> args(argv + 1, argv + argc);
  // "help COMMAND" is "COMMAND -h": that command's options.
  if (args.size() == 2 && args[0] == "help") args = {args[1], "-h"};
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    print_main_usage(stdout);
    return args.empty() ? kExitUsage : kExitOk;
  }
  if (args[0] == "--version" || args[0] == "version") {
    printf("perf-offwake version %s\n", OFFWAKE_VERSION);
    return kExitOk;
  }
  for (const auto& c : commands()) {
    if (args[0] == c.name) return exit_status_for_parent(c.run(args));
  }
  fprintf(stderr, "perf offwake: '%s' is not a command. See 'perf offwake --help'.\n", args[0].c_str());
  return kExitUsage;
}
