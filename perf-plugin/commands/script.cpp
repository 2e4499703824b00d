// perf offwake script: runs a perf-script-style Python script over a perf.data file or stream,
// in our own embedded Python (so it works where perf was built without Python), adding the
// off-wake keys to offwake-time samples.
#include <cstdio>
#include <map>

#include "commands/command.h"
#include "commands/options.h"
#include "perfdata/reader.h"
#include "record/offwake_events.h"
#include "script/python_host.h"
#include "script/sample_dict.h"
#include "symbolize/symbolizer.h"

namespace offwake {
namespace {

using perfdata::Record;
using perfdata::SampleRecord;

uint64_t record_time(const Record& r) {
  return std::visit(
      [](const auto& rec) -> uint64_t {
        using T = std::decay_t<decltype(rec)>;
        if constexpr (std::is_same_v<T, SampleRecord>) return rec.time;
        else if constexpr (requires { rec.sample_id; }) return rec.sample_id.time;
        else return 0;
      },
      r);
}

// Feeds the script samples in time order within each round, as perf script does, pairing
// each offwake-time sample with the offwake-waker sample that follows it.
class ScriptSession {
 public:
  ScriptSession(perfdata::PerfDataReader& reader, script::ScriptHost& host)
      : reader_(reader), host_(host), dicts_(symbolizer_) {}

  Status run() {
    symbolizer_.add_build_ids(reader_.info().build_ids);
    OFFWAKE_TRY(host_.trace_begin());
    std::vector<Record> round;
    for (;;) {
      auto next = reader_.next();
      if (!next) return next.error();
      if (!*next) break;
      Record& r = **next;
      if (std::holds_alternative<perfdata::FinishedRoundRecord>(r)) {
        OFFWAKE_TRY(flush(round));
        continue;
      }
      round.push_back(std::move(r));
    }
    OFFWAKE_TRY(flush(round));
    OFFWAKE_TRY(dispatch_pending(nullptr));
    return host_.trace_end();
  }
  uint64_t samples() const { return samples_; }

 private:
  Status flush(std::vector<Record>& round) {
    std::stable_sort(round.begin(), round.end(),
                     [](const Record& a, const Record& b) { return record_time(a) < record_time(b); });
    for (Record& r : round) OFFWAKE_TRY(handle(r));
    round.clear();
    return ok_status();
  }

  Status handle(const Record& r) {
    const auto* s = std::get_if<SampleRecord>(&r);
    if (!s) {
      symbolizer_.observe(r);
      return ok_status();
    }
    const perfdata::EventDesc* e = reader_.event_for(*s);
    if (!e) return Error("a sample of an unknown event");
    if (pending_) {
      if (e->name == kOffwakeWakerEvent) {
        OFFWAKE_TRY(dispatch_pending(s));
        return dispatch(*e, *s);
      }
      OFFWAKE_TRY(dispatch_pending(nullptr));
    }
    if (e->name == kOffwakeTimeEvent) {
      pending_ = *s;
      pending_event_ = e;
      return ok_status();
    }
    return dispatch(*e, *s);
  }

  Status dispatch_pending(const SampleRecord* waker) {
    if (!pending_) return ok_status();
    auto dict = dicts_.build(*pending_event_, *pending_);
    if (!dict) return dict.error();
    OFFWAKE_TRY(dicts_.add_offwake(dict->get(), *pending_, waker));
    pending_.reset();
    ++samples_;
    return host_.process_event(std::move(dict).value());
  }

  Status dispatch(const perfdata::EventDesc& e, const SampleRecord& s) {
    auto dict = dicts_.build(e, s);
    if (!dict) return dict.error();
    ++samples_;
    return host_.process_event(std::move(dict).value());
  }

  perfdata::PerfDataReader& reader_;
  script::ScriptHost& host_;
  symbolize::Symbolizer symbolizer_;
  script::SampleDicts dicts_;
  std::optional<SampleRecord> pending_;
  const perfdata::EventDesc* pending_event_ = nullptr;
  uint64_t samples_ = 0;
};

int cmd_script(const std::vector<std::string>& args) {
  std::string input = "perf.data", script_path;
  std::vector<Option> table = {
      string_option('i', "input", "file", &input, "input file name ('-' for standard input); default perf.data"),
      string_option('s', "script", "file.py", &script_path, "the Python script to run (perf script -s style)"),
  };
  const std::vector<std::string> usage = {"perf offwake script [-i <file>] -s <script.py> [-- <script args>]"};
  ParsedArgs parsed;
  if (auto exit = parse_command_line("script", args, table, usage, true, parsed)) return *exit;
  if (script_path.empty()) {
    fprintf(stderr, "perf offwake script: -s <script.py> is required (see 'perf offwake script -h')\n");
    return kExitUsage;
  }
  auto reader = perfdata::PerfDataReader::open(input);
  if (!reader) {
    fprintf(stderr, "perf offwake script: %s\n", reader.error().message().c_str());
    return kExitFailure;
  }
  auto host = script::ScriptHost::start(script_path, parsed.rest);
  if (!host) {
    fprintf(stderr, "perf offwake script: %s\n", host.error().message().c_str());
    return kExitFailure;
  }
  ScriptSession session(*reader, **host);
  Status s = session.run();
  if (!s) {
    int status = (*host)->exit_status();
    if (status == 0) return kExitOk;  // sys.exit(0) from a handler
    fprintf(stderr, "perf offwake script: %s\n", s.error().message().c_str());
    return status;
  }
  return kExitOk;
}

}  // namespace

int run_script(const std::vector<std::string>& args) { return cmd_script(args); }

}  // namespace offwake
