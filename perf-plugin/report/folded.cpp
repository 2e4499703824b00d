#include "report/folded.h"

#include <algorithm>
#include <map>

namespace offwake::report {

std::string folded_frame(const std::string& name) {
  std::string out = name;
  std::replace(out.begin(), out.end(), ';', ':');
  std::replace(out.begin(), out.end(), '\n', ' ');
  return out;
}

std::string folded_comm(const std::string& comm) {
  if (comm.empty()) return "[unknown]";
  std::string out = comm;
  std::replace(out.begin(), out.end(), ';', ':');
  std::replace(out.begin(), out.end(), ' ', '_');
  return out;
}

std::vector<std::string> offwake_path(const Stack& s, bool with_waker) {
  std::vector<std::string> parts;
  parts.reserve(s.frames.size() + s.waker_frames.size() + 3);
  parts.push_back(folded_comm(s.thread.comm));
  for (auto it = s.frames.rbegin(); it != s.frames.rend(); ++it) parts.push_back(folded_frame(it->name));
  if (s.kind == Kind::kOnCpu || !with_waker) return parts;
  parts.push_back(kSeparator);
  if (!s.waker) {
    parts.push_back(kUnknownWaker);
    return parts;
  }
  for (const Frame& f : s.waker_frames) parts.push_back(folded_frame(f.name));
  parts.push_back(folded_comm(s.waker->comm));
  return parts;
}

namespace {

std::string join(const std::vector<std::string>& parts) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i) out += ';';
    out += parts[i];
  }
  return out;
}

std::string weight(uint64_t ns, Unit unit) {
  return std::to_string(unit == Unit::kUs ? (ns + 500) / 1000 : ns);
}

}  // namespace

std::vector<std::string> folded_lines(const Profile& profile, const FoldedOptions& o) {
  std::map<std::string, uint64_t> totals;
  for (const Stack& s : profile.stacks) {
    if (o.wallclock) {
      std::vector<std::string> parts{s.thread.comm.empty() ? "[unknown]" : s.thread.comm};
      for (auto it = s.frames.rbegin(); it != s.frames.rend(); ++it) parts.push_back(it->name);
      if (s.kind == Kind::kOffCpu) parts.push_back("[off-cpu]");
      totals[join(parts)] += s.ns;
    } else if (s.kind == Kind::kOffCpu) {
      totals[join(offwake_path(s, !profile.wakers_dropped))] += s.ns;
    }
  }
  std::vector<std::pair<std::string, uint64_t>> lines;
  for (auto& [text, ns] : totals)
    if (ns >= o.min_ns) lines.emplace_back(text, ns);
  if (o.wallclock)
    std::stable_sort(lines.begin(), lines.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  std::vector<std::string> out;
  out.reserve(lines.size());
  for (auto& [text, ns] : lines) out.push_back(text + " " + weight(ns, o.unit) + "\n");
  return out;
}

}  // namespace offwake::report
