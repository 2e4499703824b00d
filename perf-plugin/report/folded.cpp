#include "report/folded.h"

#include <algorithm>
#include <map>

#include "report/utf8.h"

namespace offwake::report {

std::string folded_frame(const std::string& name) {
  std::string out = valid_utf8(name);
  std::replace(out.begin(), out.end(), ';', ':');
  std::replace(out.begin(), out.end(), '\n', ' ');
  return out;
}

std::string folded_comm(const std::string& comm) {
  if (comm.empty()) return "[unknown]";
  std::string out = valid_utf8(comm);
  std::replace(out.begin(), out.end(), ';', ':');
  // A space ends the stack; a newline or another control character would end the line.
  for (char& c : out)
    if (c == ' ' || static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '_';
  return out;
}

void walk_offwake_path(const Stack& s, bool with_waker,
                       const std::function<void(std::string, PathPart, const Frame*)>& part) {
  auto blocked = [&](const std::vector<Frame>& frames) {
    for (auto it = frames.rbegin(); it != frames.rend(); ++it) part(folded_frame(it->name), PathPart::kBlocked, &*it);
  };
  auto waker = [&](const std::vector<Frame>& frames, bool not_taken) {
    if (frames.empty() && not_taken) part(kStacksNotTaken, PathPart::kNotTaken, nullptr);
    for (const Frame& f : frames) part(folded_frame(f.name), PathPart::kWaker, &f);
  };
  part(folded_comm(s.thread.comm), PathPart::kThread, nullptr);
  blocked(s.frames);
  if (s.kind == Kind::kOnCpu || !with_waker) return;
  part(kSeparator, PathPart::kSeparator, nullptr);
  if (!s.waker) return part(kUnknownWaker, PathPart::kWakerThread, nullptr);
  waker(s.waker_frames, s.waker_stacks_not_taken);
  const Thread* last = &*s.waker;
  for (const Hop& hop : s.chain) {
    part(kSeparator, PathPart::kSeparator, nullptr);
    blocked(hop.frames);
    part(kSeparator, PathPart::kSeparator, nullptr);
    if (!hop.waker) return part(kUnknownWaker, PathPart::kWakerThread, nullptr);
    waker(hop.waker_frames, hop.waker_stacks_not_taken);
    last = &*hop.waker;
  }
  part(folded_comm(last->comm), PathPart::kWakerThread, nullptr);
}

std::vector<std::string> offwake_path(const Stack& s, bool with_waker) {
  std::vector<std::string> parts;
  parts.reserve(s.frames.size() + s.waker_frames.size() + 3);
  walk_offwake_path(s, with_waker, [&](std::string name, PathPart, const Frame*) { parts.push_back(std::move(name)); });
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
