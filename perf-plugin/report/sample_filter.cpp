#include "report/sample_filter.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <functional>

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

namespace {

bool is_space(char c) { return std::isspace(static_cast<unsigned char>(c)); }

// "start,stop" with either end left out; an error says why not.
Result<TimeRange> one_range(std::string_view item, const std::function<Error(const std::string&)>& bad) {
  const size_t comma = item.find(',');
  if (comma == std::string_view::npos || item.find(',', comma + 1) != std::string_view::npos)
    return bad("expected start,stop (seconds as perf script prints them; either may be left out), "
               "or ranges of them separated by spaces, or perf's percent forms (10%/2, 0%-10%)");
  TimeRange r;
  const std::string_view ends[] = {item.substr(0, comma), item.substr(comma + 1)};
  uint64_t* into[] = {&r.start_ns, &r.end_ns};
  for (int i = 0; i < 2; ++i) {
    if (ends[i].empty()) continue;
    auto ns = seconds_ns(ends[i]);
    if (!ns) return bad("'" + std::string(ends[i]) + "' is not a time in seconds (12345.678901)");
    *into[i] = *ns;
  }
  if (r.end_ns && r.end_ns < r.start_ns) return bad("'" + std::string(item) + "' stops before it starts");
  return r;
}

// Absolute ranges: one "start,stop", or several separated by spaces (spaces after a comma are
// the range's), each after the one before with no time shared, as perf_time__parse_strs() takes
// them.
Result<std::vector<TimeRange>> absolute_ranges(std::string_view text, const std::function<Error(const std::string&)>& bad) {
  std::string joined;  // spaces after commas dropped: what is left separates ranges
  for (size_t i = 0; i < text.size(); ++i)
    if (!(is_space(text[i]) && !joined.empty() && joined.back() == ',')) joined += text[i];
  std::vector<TimeRange> ranges;
  std::string_view rest = joined;
  while (true) {
    while (!rest.empty() && is_space(rest.front())) rest.remove_prefix(1);
    if (rest.empty()) break;
    size_t end = 0;
    while (end < rest.size() && !is_space(rest[end])) ++end;
    auto r = one_range(rest.substr(0, end), bad);
    if (!r) return r.error();
    if (!ranges.empty() && ranges.back().end_ns >= r->start_ns)
      return bad("'" + std::string(rest.substr(0, end)) + "' does not start after the range before it ends");
    ranges.push_back(*r);
    rest.remove_prefix(end);
  }
  if (ranges.empty()) return bad("expected start,stop (seconds as perf script prints them; either may be left out)");
  return ranges;
}

// "12.5%" as a fraction (0.125): a number as strtod() reads it, then '%' and nothing more.
std::optional<double> percent(std::string_view s) {
  if (s.size() < 2 || s.back() != '%') return std::nullopt;
  const std::string digits(s.substr(0, s.size() - 1));
  char* end = nullptr;
  const double v = std::strtod(digits.c_str(), &end);
  if (end != digits.c_str() + digits.size() || !std::isfinite(v)) return std::nullopt;
  return v / 100.0;
}

bool is_share(double f) { return f >= 0.0 && f <= 1.0; }

// "10%/2": the second slice of 10%.
std::optional<PercentRange> percent_slice(std::string_view item) {
  const size_t slash = item.find('/');
  if (slash == std::string_view::npos) return std::nullopt;
  const auto share = percent(item.substr(0, slash));
  const std::string n(item.substr(slash + 1));
  char* end = nullptr;
  errno = 0;
  const long which = std::strtol(n.c_str(), &end, 10);
  if (!share || *share <= 0.0 || n.empty() || *end || errno) return std::nullopt;
  const PercentRange r{*share * static_cast<double>(which - 1), *share * static_cast<double>(which)};
  if (!is_share(r.from) || !is_share(r.to)) return std::nullopt;
  return r;
}

// "0%-10%": from and to. One that ends before it starts selects nothing, as in perf.
std::optional<PercentRange> percent_span(std::string_view item) {
  const size_t dash = item.find('-');
  if (dash == std::string_view::npos) return std::nullopt;
  const auto from = percent(item.substr(0, dash)), to = percent(item.substr(dash + 1));
  if (!from || !to || !is_share(*from) || !is_share(*to)) return std::nullopt;
  return PercentRange{*from, *to};
}

// perf's percent forms: all slices ('/' anywhere) or all spans ('-' anywhere), comma-separated
// (a trailing comma is let be, as perf lets it), or one share ("50%": "50%/1").
Result<std::vector<PercentRange>> percent_ranges(std::string_view text, const std::function<Error(const std::string&)>& bad) {
  const auto wrong = [&](std::string_view item) {
    return bad("'" + std::string(item) + "' is not one of perf's percent forms (10%/2: the second tenth; 0%-10%; 50%)");
  };
  std::vector<PercentRange> out;
  if (text.find('/') == std::string_view::npos && text.find('-') == std::string_view::npos) {
    auto r = percent_slice(std::string(text) + "/1");
    if (!r) return wrong(text);
    out.push_back(*r);
    return out;
  }
  const bool slices = text.find('/') != std::string_view::npos;
  size_t at = 0;
  while (at < text.size()) {
    size_t comma = text.find(',', at);
    if (comma == std::string_view::npos) comma = text.size();
    const std::string_view item = text.substr(at, comma - at);
    auto r = slices ? percent_slice(item) : percent_span(item);
    if (!r) return wrong(item);
    out.push_back(*r);
    at = comma + 1;
  }
  return out;
}

}  // namespace

Result<TimeSelection> parse_time_range(std::string_view text) {
  TimeSelection t;
  t.text = text;
  const std::function<Error(const std::string&)> bad = [&](const std::string& why) {
    return Error::usage("--time '" + t.text + "': " + why);
  };
  if (text.find('%') != std::string_view::npos) {
    auto p = percent_ranges(text, bad);
    if (!p) return p.error();
    t.percents = std::move(p).value();
  } else {
    auto r = absolute_ranges(text, bad);
    if (!r) return r.error();
    t.ranges = std::move(r).value();
  }
  return t;
}

std::vector<TimeRange> percent_times(const std::vector<PercentRange>& percents, uint64_t first, uint64_t last) {
  const double span = static_cast<double>(last - first);
  // In double, as perf adds the rounded offset to the first time: the same ns for every time.
  const auto at = [&](double f) { return static_cast<uint64_t>(static_cast<double>(first) + std::round(f * span)); };
  std::vector<TimeRange> out;
  for (const PercentRange& p : percents) {
    TimeRange r{at(p.from), at(p.to)};
    if (r.end_ns > r.start_ns && r.end_ns != last) --r.end_ns;
    out.push_back(r);
  }
  return out;
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

Status prepare_selection(SampleSelection& sel, const perfdata::FileInfo& info, const std::string& input) {
  const std::string named = input == "-" ? "standard input" : input;
  if (sel.time && !sel.time->percents.empty()) {
    if (!info.first_sample_time && !info.last_sample_time)
      return Error::unsupported("--time '" + sel.time->text + "': percentages are of the recording's first to last sample, which " +
                                named + " does not say (no HEADER_SAMPLE_TIME: a stream); give start,stop in seconds");
    sel.time->ranges = percent_times(sel.time->percents, info.first_sample_time, info.last_sample_time);
    sel.time->percents.clear();
  }
  if (!sel.per_block()) return ok_status();
  auto it = info.other_sections.find(kFeatOffwakeStats);
  if (it == info.other_sections.end()) return ok_status();  // a stream: keeps() says it per sample
  auto counters = decode_record_stats(it->second);
  if (!counters) return ok_status();
  for (const auto& [name, value] : *counters) {
    if (name == "aggregates" && value > 0)
      return Error::unsupported(per_block_options(sel) + ": " + named +
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
