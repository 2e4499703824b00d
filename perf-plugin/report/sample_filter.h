// Which samples a reader keeps: --comm, --pid, --tid, --cgroup, -C/--cpu and --time, one rule
// for perf offwake report (which sums what it keeps) and perf offwake script (whose handlers
// see only what it keeps), the rule of perf script and perf report for the options perf has:
// a sample is judged by its own thread, cpu and time.
//
// An aggregated recording (the default) sums each stack's blocks over the whole recording into
// one sample: its time is its latest block's and its cpu none. Such a sample cannot be cut by
// time or cpu, so --time and --cpu need a recording of one sample per block (record
// --timeline) and refuse any other (check_recording(), and per sample where a stream has no
// counters: keeps()), with an error of kind kUnsupported: the recording cannot give what the
// options ask, which the commands say as a usage error.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "perfdata/features.h"
#include "perfdata/records.h"
#include "report/cgroups.h"
#include "symbolize/symbolizer.h"
#include "util/result.h"

namespace offwake::report {

// One interval of --time, in the samples' clock (ns). 0 is an open end, as in perf.
struct TimeRange {
  uint64_t start_ns = 0, end_ns = 0;
  // Both ends belong to the range (perf_time__skip_sample()).
  bool contains(uint64_t time) const { return (!start_ns || time >= start_ns) && (!end_ns || time <= end_ns); }
  bool operator==(const TimeRange&) const = default;
};

// A share of the recording's time span, from and to fractions of it (0.1 for 10%).
struct PercentRange {
  double from = 0, to = 0;
  bool operator==(const PercentRange&) const = default;
};

// What --time selects: perf report's and perf script's forms (perf 6.1), each meaning what it
// means there. Either absolute ranges, or percent ranges until prepare_selection() turns them
// into absolute ones for a recording.
struct TimeSelection {
  std::string text;  // as given, for the messages
  std::vector<TimeRange> ranges;
  std::vector<PercentRange> percents;
  // Whether a sample stamped `time` is outside every range; a sample without a time (0) is
  // kept (perf_time__ranges_skip_sample()).
  bool skips(uint64_t time) const {
    return time && std::none_of(ranges.begin(), ranges.end(), [&](const TimeRange& r) { return r.contains(time); });
  }
};

// perf's --time syntax. Absolute: "start,stop", "start," or ",stop", each end seconds with up
// to nine decimals ("12345.678901", as perf script prints times); several such ranges separated
// by spaces, in order and apart ("1.5,2 3,3.5"). Percent: of the recording's span, "10%/2" (the
// second tenth), "0%-10%" (from and to), either kind several times separated by commas
// ("10%/1,10%/3", "0%-10%,30%-40%"), or "50%" (the first half). Errors are usage errors naming it.
Result<TimeSelection> parse_time_range(std::string_view text);

// Percent ranges as times of a recording whose samples span `first`..`last` (ns), as perf
// makes them: the ends rounded to the ns, and a range that ends before `last` ends 1 ns earlier
// so that slices next to each other share no time.
std::vector<TimeRange> percent_times(const std::vector<PercentRange>& percents, uint64_t first, uint64_t last);

// perf's cpu list: "0-3,6" (ranges and single cpus). Errors are usage errors.
Result<std::set<uint32_t>> parse_cpu_list(std::string_view text);

// What the samples are selected by. Empty sets and no time keep everything.
struct SampleSelection {
  std::set<std::string> comms;  // the sample's thread's comm, as perf script shows it
  std::set<uint32_t> pids, tids;
  // The sample's cgroup is one of these paths, or below one (cgroup_under()).
  std::set<std::string> cgroups;
  std::set<uint32_t> cpus;
  std::optional<TimeSelection> time;
  // --time or --cpu: only for samples of one block each.
  bool per_block() const { return time.has_value() || !cpus.empty(); }
};

// Before the samples, for `input`'s recording: percent ranges of --time become times, of the
// span its HEADER_SAMPLE_TIME says (perf's first and last sample times; kUnsupported without
// one: a stream); and a recording whose counters say its blocks are summed (an aggregated
// recording file) is refused for --time and --cpu (kUnsupported).
Status prepare_selection(SampleSelection& selection, const perfdata::FileInfo& info, const std::string& input);

class SampleFilter {
 public:
  // `symbolizer` names the threads and `cgroups` the cgroup ids, as the records read so far say.
  SampleFilter(SampleSelection selection, const symbolize::Symbolizer& symbolizer, const CgroupTable& cgroups)
      : sel_(std::move(selection)), sym_(symbolizer), cgroups_(cgroups) {}

  // Whether sample `s` is kept, by its own thread, cgroup, cpu and time.
  bool wanted(const perfdata::SampleRecord& s) const;
  // The same for an offwake-time sample that sums `blocks` blocks: under --time or --cpu one of
  // several blocks (a stream of an aggregated recording, which has no counters) is an error
  // (kUnsupported).
  Result<bool> keeps(const perfdata::SampleRecord& blocked, uint64_t blocks) const;

  const SampleSelection& selection() const { return sel_; }

 private:
  SampleSelection sel_;
  const symbolize::Symbolizer& sym_;
  const CgroupTable& cgroups_;
};

}  // namespace offwake::report
