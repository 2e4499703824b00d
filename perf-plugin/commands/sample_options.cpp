#include "commands/sample_options.h"

#include <sstream>

#include "commands/id_list.h"

namespace offwake {

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

namespace {

Status parse_ids(const char* option, const char* what, const std::string& text, std::set<uint32_t>* out) {
  auto ids = parse_id_list(text, option, what);
  if (!ids) return Error::usage(std::string(option) + ": " + ids.error().message());
  out->insert(ids->begin(), ids->end());
  return ok_status();
}

}  // namespace

void SampleOptions::add_to(std::vector<Option>& table) {
  table.push_back(string_option(0, "comm", "comm[,comm...]", &comms_, "only these comms (" + whose_ + ")"));
  table.push_back(string_option('c', "comms", "comm[,comm...]", &comms_, "--comm, by perf's name for it"));
  table.push_back(string_option(0, "pid", "pid[,pid...]", &pids_, "only these processes"));
  table.push_back(string_option(0, "tid", "tid[,tid...]", &tids_, "only these threads"));
  table.push_back(string_option(0, "cgroup", "path[,path...]", &cgroups_,
                                "only threads in these cgroups or below (" + whose_ + "; paths as perf report --sort cgroup shows them)"));
  table.push_back(string_option('C', "cpu", "cpu", &cpus_,
                                "only samples of these cpus (0-2,5), where a block ended (--timeline recordings)"));
  table.push_back(string_option(0, "time", "start,stop[ ...]|percent", &time_,
                                "only samples within these times (seconds as perf script prints them, or perf's "
                                "percent forms of the recording's span: 10%/2, 0%-10%,30%-40%; --timeline recordings)"));
}

Result<report::SampleSelection> SampleOptions::selection(const ParsedArgs& parsed) const {
  // An empty list ("--pid $(pgrep -d, nginx)" with nginx down) would filter nothing out: say so.
  const std::pair<const char*, const std::string*> lists[] = {
      {"--comm", &comms_}, {"--comms", &comms_}, {"--pid", &pids_}, {"--tid", &tids_}, {"--cgroup", &cgroups_}, {"--cpu", &cpus_}};
  for (const auto& [name, text] : lists)
    if (parsed.given.count(name) && split_list(*text).empty()) return Error::usage(std::string(name) + ": an empty list");
  report::SampleSelection s;
  for (const auto& c : split_list(comms_)) s.comms.insert(c);
  for (const auto& c : split_list(cgroups_)) {
    if (c[0] != '/') return Error::usage("--cgroup '" + c + "': a cgroup path starts with '/' (as perf report --sort cgroup shows it)");
    s.cgroups.insert(c);
  }
  if (!pids_.empty()) OFFWAKE_TRY(parse_ids("--pid", "pid", pids_, &s.pids));
  if (!tids_.empty()) OFFWAKE_TRY(parse_ids("--tid", "thread id", tids_, &s.tids));
  if (!cpus_.empty()) {
    auto cpus = report::parse_cpu_list(cpus_);
    if (!cpus) return cpus.error();
    s.cpus = std::move(cpus).value();
  }
  if (parsed.given.count("--time")) {
    auto time = report::parse_time_range(time_);
    if (!time) return time.error();
    const bool everything = time->percents.empty() && time->ranges.size() == 1 && time->ranges[0] == report::TimeRange{};
    if (!everything) s.time = std::move(time).value();  // ",": the whole recording, as in perf
  }
  return s;
}

}  // namespace offwake
