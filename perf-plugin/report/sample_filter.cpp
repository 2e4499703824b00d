#include "report/sample_filter.h"

#include <algorithm>
#include <cctype>

#include "samples/record_stats.h"

namespace offwake::report {
namespace {

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}

// A number of at most `digits` decimal digits (so that it cannot overflow what it goes into).
std::optional<uint64_t> number(std::string_view s, size_t digits) {
  if (!all_digits(s) || s.size() > digits) return std::nullopt;
  uint64_t v = 0;
  for (char c : s) v = v * 10 + static_cast<uint64_t>(c - '0');
  return v;
}

// perf's parse_nsec_time(): seconds, and after a '.' up to nine digits of their fraction.
std::optional<uint64_t> seconds_ns(std::string_view s) {
  const size_t dot = s.find('.');
  const auto sec = number(s.substr(0, dot), 10);  // 10^10 s: over three centuries of uptime
  if (!sec) return std::nullopt;
  uint64_t ns = 0;
  if (dot != std::string_view::npos) {
    const std::string_view frac = s.substr(dot + 1);
    auto f = number(frac, 9);
    if (!f) return std::nullopt;
    ns = *f;
    for (size_t i = frac.size(); i < 9; ++i) ns *= 10;
  }
  return *sec * 1000000000ull + ns;
}

}  // namespace

Result<TimeRange> parse_time_range(std::string_view text) {
  const std::string shown(text);
  const auto bad = [&](const std::string& why) {
    return Error::usage("--time '" + shown + "': " + why);
  };
  if (text.find('%') != std::string_view::npos)
    return bad("perf's percent forms (10%/2) are not taken: give start,stop in seconds");
  const size_t comma = text.find(',');
  if (comma == std::string_view::npos || text.find(',', comma + 1) != std::string_view::npos)
    return bad("expected start,stop (seconds as perf script prints them; either may be left out)");
  TimeRange r;
  const std::string_view start = text.substr(0, comma), stop = text.substr(comma + 1);
  if (!start.empty()) {
    auto ns = seconds_ns(start);
    if (!ns) return bad("'" + std::string(start) + "' is not a time in seconds (12345.678901)");
    r.start_ns = *ns;
  }
  if (!stop.empty()) {
    auto ns = seconds_ns(stop);
    if (!ns) return bad("'" + std::string(stop) + "' is not a time in seconds (12345.678901)");
    r.end_ns = *ns;
  }
  if (r.end_ns && r.end_ns < r.start_ns) return bad("it stops before it starts");
  return r;
}

Result<std::set<uint32_t>> parse_cpu_list(std::string_view text) {
  const std::string shown(text);
  std::set<uint32_t> cpus;
  size_t at = 0;
  while (at <= text.size()) {
    size_t comma = text.find(',', at);
    if (comma == std::string_view::npos) comma = text.size();
    const std::string_view item = text.substr(at, comma - at);
    at = comma + 1;
    if (item.empty()) continue;
    const size_t dash = item.find('-');
    // 4096 cpus at most: perf's MAX_NR_CPUS.
    const auto first = number(item.substr(0, dash), 4);
    const auto last = dash == std::string_view::npos ? first : number(item.substr(dash + 1), 4);
    if (!first || !last || *first >= 4096 || *last >= 4096 || *last < *first)
      return Error::usage("--cpu '" + shown + "': '" + std::string(item) + "' is not a cpu or a range of cpus (0-3)");
    for (uint64_t c = *first; c <= *last; ++c) cpus.insert(static_cast<uint32_t>(c));
  }
  if (cpus.empty()) return Error::usage("--cpu: an empty list");
  return cpus;
}

namespace {

std::string per_block_options(const SampleSelection& s) {
  if (s.time && !s.cpus.empty()) return "--time and --cpu";
  return s.time ? "--time" : "--cpu";
}

}  // namespace

Status check_selection(const SampleSelection& sel, const perfdata::FileInfo& info, const std::string& input) {
  if (!sel.per_block()) return ok_status();
  auto it = info.other_sections.find(kFeatOffwakeStats);
  if (it == info.other_sections.end()) return ok_status();  // a stream: keeps() says it per sample
  auto counters = decode_record_stats(it->second);
  if (!counters) return ok_status();
  for (const auto& [name, value] : *counters) {
    if (name == "aggregates" && value > 0)
      return Error::unsupported(per_block_options(sel) + ": " + (input == "-" ? "standard input" : input) +
                          " sums each stack's blocks over the recording, which has no time or cpu of its own "
                          "(record with --timeline: a sample per block)");
  }
  return ok_status();
}

bool SampleFilter::wanted(const perfdata::SampleRecord& s) const {
  if (!sel_.pids.empty() && !sel_.pids.count(s.pid)) return false;
  if (!sel_.tids.empty() && !sel_.tids.count(s.tid)) return false;
  if (!sel_.cpus.empty() && !sel_.cpus.count(s.cpu)) return false;
  if (sel_.time && sel_.time->skips(s.time)) return false;
  if (!sel_.comms.empty() && !sel_.comms.count(sym_.thread_name(s.tid))) return false;
  if (!sel_.cgroups.empty()) {
    const std::string& path = cgroups_.path(s.cgroup);
    return std::any_of(sel_.cgroups.begin(), sel_.cgroups.end(),
                       [&](const std::string& under) { return cgroup_under(path, under); });
  }
  return true;
}

Result<bool> SampleFilter::keeps(const perfdata::SampleRecord& blocked, uint64_t blocks) const {
  if (blocks > 1 && sel_.per_block())
    return Error::unsupported(per_block_options(sel_) + ": a sample sums " + std::to_string(blocks) +
                        " blocks (an aggregated recording), which have no time or cpu of their own "
                        "(record with --timeline: a sample per block)");
  return wanted(blocked);
}

}  // namespace offwake::report
