// perf offwake script: runs a perf-script-style Python script over a perf.data file or stream,
// in our own embedded Python (so it works where perf was built without Python), adding the
// off-wake keys to offwake-time samples.
#include <signal.h>

#include <cstdio>
#include <map>

#include "commands/command.h"
#include "commands/options.h"
#include "commands/output_file.h"
#include "commands/sample_options.h"
#include "perfdata/reader.h"
#include "report/sample_stream.h"
#include "samples/offwake_events.h"
#include "script/perf_exec_path.h"
#include "script/python_host.h"
#include "script/sample_dict.h"
#include "script/skeleton.h"
#include "symbolize/symbolizer.h"

namespace offwake {
namespace {

// Ctrl-C ends the reading, not the process: trace_end() still runs and the status is 0, as
// under perf script. The handler only sets the flag, which the loop looks at before each event;
// SA_RESETHAND leaves a second Ctrl-C its default action, for a handler that never returns.
volatile sig_atomic_t g_interrupted = 0;
void on_interrupt(int) { g_interrupted = 1; }

void stop_reading_on_interrupt() {
  struct sigaction sa {};
  sa.sa_handler = on_interrupt;
  sa.sa_flags = SA_RESETHAND | SA_RESTART;  // reads and Python's calls go on as if not interrupted
  sigaction(SIGINT, &sa, nullptr);
}

// The samples `selection` keeps go to process_event().
Status run_session(perfdata::PerfDataReader& reader, script::ScriptHost& host, report::SampleSelection selection) {
  symbolize::Symbolizer symbolizer({.name_unnamed = false});  // frames as perf names them
  report::SampleStream stream(reader, symbolizer);
  bool interrupted = false;
  script::DictVisitor visitor(
      symbolizer,
      [&](script::PyRef dict) -> Status {
        if (g_interrupted) {
          interrupted = true;
          return Error("interrupted");  // ends stream.run() here; the session goes on to trace_end()
        }
        return host.process_event(std::move(dict));
      },
      std::move(selection));
  OFFWAKE_TRY(host.trace_begin());
  if (Status read = stream.run(visitor); !read && !interrupted) return read;
  return host.trace_end();
}

int usage_error(const std::string& message) { return offwake::usage_error("script", message); }

// -g python: perf-script.py in the current directory, as perf script -g python writes it.
int generate_script(const std::string& lang) {
  if (!script::is_python(lang)) return usage_error("-g '" + lang + "': the only script language is python");
  const std::string text = script::python_skeleton();
  if (Status s = write_file(script::kSkeletonFile, text.data(), text.size()); !s) {
    fprintf(stderr, "perf offwake script: %s\n", s.error().message().c_str());
    return kExitFailure;
  }
  fprintf(stderr, "generated Python script: %s\n", script::kSkeletonFile);
  return kExitOk;
}

int cmd_script(const std::vector<std::string>& args) {
  std::string script_path, lang;
  std::vector<std::string> inputs;  // all of them: a script runs over one, and a second is refused
  std::vector<Option> table = {
      callback_option('i', "input", "file",
                      [&](const std::string& v) {
                        inputs.push_back(v);
                        return ok_status();
                      },
                      "input file name ('-' for standard input); default perf.data, or standard input if a pipe"),
      string_option('s', "script", "file.py", &script_path, "the Python script to run (perf script -s style)"),
      string_option('g', "gen-script", "lang", &lang,
                    "write perf-script.py, a script to start from (python), in the current directory"),
  };
  SampleOptions samples("each sample's own thread's, as perf script");
  samples.add_to(table);
  const std::vector<std::string> usage = {"perf offwake script [<options>] -s <script.py> [-- <script args>]",
                                          "perf offwake script -g python"};
  ParsedArgs parsed = parse_command_line(args, table, usage, true);
  if (parsed.given.count("--gen-script")) {
    if (!script_path.empty()) return usage_error("-g writes a script and -s runs one: one at a time");
    return generate_script(lang);
  }
  if (script_path.empty()) return usage_error("-s <script.py> is required");
  auto selection = samples.selection(parsed);
  if (!selection) return usage_error(selection.error().message());
  // A string option would keep the last -i alone, and the script would run over it silently.
  if (inputs.size() > 1) return usage_error("-i given twice ('" + inputs[0] + "', '" + inputs[1] + "'): one input at a time");
  const std::string input = inputs.empty() ? default_input() : inputs[0];
  auto reader = perfdata::PerfDataReader::open(input);
  Status offwake = reader ? check_offwake_recording(reader->events(), input) : Status(reader.error());
  // A selection the recording cannot give (--time of summed blocks): before the script starts,
  // or, in a stream, where a sample shows it.
  if (Status can = offwake ? report::prepare_selection(*selection, reader->info(), input) : ok_status(); !can)
    return usage_error(can.error().message());
  if (!offwake) {
    fprintf(stderr, "perf offwake script: %s\n", offwake.error().message().c_str());
    return kExitFailure;
  }
  // A closed standard output is a BrokenPipeError in the script (python3 ignores SIGPIPE too).
  signal(SIGPIPE, SIG_IGN);
  stop_reading_on_interrupt();
  script::provide_perf_exec_path();  // before Python starts: os.environ is taken then
  auto host = script::ScriptHost::start(script_path, parsed.rest);
  if (!host) {
    fprintf(stderr, "perf offwake script: %s\n", host.error().message().c_str());
    return kExitFailure;
  }
  // sys.exit() (or a closed standard output) ends the run with its status, and nothing more is
  // said than Python says (a string argument), as under perf script and python3.
  if ((*host)->ended()) return (*host)->exit_status();  // at the script's top level
  Status s = run_session(*reader, **host, std::move(selection).value());
  if (auto cut = reader->cut_short()) fprintf(stderr, "perf offwake script: warning: %s\n", cut->c_str());
  if ((*host)->ended()) return (*host)->exit_status();  // in a handler
  if (!s && s.error().kind() == ErrorKind::kUnsupported) return usage_error(s.error().message());
  if (!s) {
    fprintf(stderr, "perf offwake script: %s\n", s.error().message().c_str());
    return kExitFailure;
  }
  return kExitOk;
}

}  // namespace

int run_script(const std::vector<std::string>& args) { return cmd_script(args); }

}  // namespace offwake
