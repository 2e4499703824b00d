#include "support/user_stacks.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>

namespace offwake::test {
namespace {

// The pseudo-wakers' thread ids (perf-plugin/blocks/pseudo_wakers.h): 0x7ffffff0 and up.
constexpr uint32_t kFirstPseudoWakerTid = 0x7ffffff0;

bool is_ids(const std::string& t) {
  const auto slash = t.find('/');
  return slash != std::string::npos && slash > 0 && slash + 1 < t.size() &&
         t.find_first_not_of("0123456789/") == std::string::npos && t.find('/', slash + 1) == std::string::npos;
}

bool is_number(const std::string& t) { return !t.empty() && t.find_first_not_of("0123456789") == std::string::npos; }

// "    7f12 sym (dso)": false for anything else.
bool parse_frame(const std::string& line, StackFrame& f) {
  std::istringstream in(line);
  std::string ip;
  in >> ip;
  if (ip.empty() || ip.find_first_not_of("0123456789abcdef") != std::string::npos) return false;
  f.ip = std::stoull(ip, nullptr, 16);
  std::string rest;
  std::getline(in >> std::ws, rest);
  while (!rest.empty() && rest.back() == ' ') rest.pop_back();
  const auto open = rest.rfind(" (");
  if (!rest.empty() && rest.back() == ')' && open != std::string::npos) {
    f.dso = rest.substr(open + 2, rest.size() - open - 3);
    rest.resize(open);
  } else if (!rest.empty() && rest.front() == '(' && rest.back() == ')') {  // no symbol, a DSO
    f.dso = rest.substr(1, rest.size() - 2);
    rest.clear();
  }
  f.sym = rest.empty() ? "[unknown]" : rest;
  return true;
}

bool kernel_frame(const StackFrame& f) {
  return f.dso.rfind("[kernel", 0) == 0 || f.dso.rfind("[bpf", 0) == 0 || f.ip >= 0xffff800000000000ull;
}

// The header line of a sample: "COMM PID/TID [PERIOD] EVENT: [FIELDS]".
bool parse_header(const std::string& line, StackSample& s) {
  std::vector<std::string> tok;
  std::istringstream h(line);
  for (std::string t; h >> t;) tok.push_back(t);
  size_t ids = 0;
  while (ids < tok.size() && !is_ids(tok[ids])) ++ids;
  if (ids == 0 || ids >= tok.size()) return false;
  size_t event = ids + 1;
  while (event < tok.size() && tok[event].back() != ':') ++event;
  if (event >= tok.size()) return false;
  for (size_t i = 0; i < ids; ++i) s.comm += (i ? " " : "") + tok[i];
  const auto slash = tok[ids].find('/');
  s.pid = static_cast<uint32_t>(std::stoul(tok[ids].substr(0, slash)));
  s.tid = static_cast<uint32_t>(std::stoul(tok[ids].substr(slash + 1)));
  if (event > ids + 1 && is_number(tok[event - 1])) s.period = std::stoull(tok[event - 1]);
  s.event = tok[event].substr(0, tok[event].size() - 1);
  for (size_t i = event + 1; i < tok.size(); ++i) {
    const auto eq = tok[i].find('=');
    if (eq != std::string::npos && eq > 0) s.fields[tok[i].substr(0, eq)] = tok[i].substr(eq + 1);
  }
  return true;
}

uint32_t field_u32(const StackSample& s, const std::string& name) {
  auto it = s.fields.find(name);
  return it == s.fields.end() || !is_number(it->second) ? 0 : static_cast<uint32_t>(std::stoul(it->second));
}

size_t common_prefix(const UserStack& a, const UserStack& b) {
  size_t n = 0;
  while (n < a.size() && n < b.size() && same_frame(a[n], b[n])) ++n;
  return n;
}

// perf's stack nearest to `ours` (longest common prefix from the leaf), for the messages.
std::string nearest(const UserStack& ours, const std::vector<UserStack>& perf) {
  const UserStack* best = nullptr;
  size_t best_len = 0;
  for (const UserStack& p : perf) {
    const size_t n = common_prefix(ours, p);
    if (!best || n > best_len) best = &p, best_len = n;
  }
  if (!best) return "perf has no stack of this thread here";
  std::ostringstream o;
  o << "perf's nearest (" << best->size() << " frames, " << best_len << " in common from the leaf): " << describe(*best);
  return o.str();
}

// The largest few misses, by time: "ns in N frames: ours ... / perf's nearest ...".
struct Misses {
  std::map<std::string, uint64_t> ns;  // message -> time
  void add(const std::string& what, uint64_t t) { ns[what] += t; }
  std::vector<std::string> largest(size_t n) const {
    std::vector<std::pair<uint64_t, std::string>> v;
    for (const auto& [what, t] : ns) v.emplace_back(t, what);
    std::sort(v.rbegin(), v.rend());
    std::vector<std::string> out;
    for (size_t i = 0; i < v.size() && i < n; ++i) out.push_back(std::to_string(v[i].first) + " ns: " + v[i].second);
    return out;
  }
};

double share(uint64_t part, uint64_t whole) {
  return whole == 0 ? 0.0 : static_cast<double>(part) / static_cast<double>(whole);
}

}  // namespace

bool same_frame(const StackFrame& a, const StackFrame& b) {
  if (a.dso != b.dso) return false;
  return a.sym == b.sym ? a.sym != "[unknown]" || a.ip == b.ip || a.ip + 1 == b.ip || b.ip + 1 == a.ip
                        : a.ip == b.ip || a.ip + 1 == b.ip || b.ip + 1 == a.ip;
}

bool same_stack(const UserStack& a, const UserStack& b) {
  return a.size() == b.size() && common_prefix(a, b) == a.size();
}

std::string describe(const UserStack& s, size_t max_frames) {
  std::string out;
  for (size_t i = 0; i < s.size() && i < max_frames; ++i) {
    if (i) out += ";";
    out += s[i].sym == "[unknown]" ? "[unknown]@" + s[i].dso.substr(s[i].dso.rfind('/') + 1) : s[i].sym;
  }
  if (s.size() > max_frames) out += ";...";
  return out.empty() ? "(no user frames)" : out;
}

std::vector<StackSample> parse_stack_samples(const std::string& perf_script) {
  std::vector<StackSample> out;
  std::istringstream in(perf_script);
  bool open = false;
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) {
      open = false;
      continue;
    }
    if (line[0] == '\t' || line[0] == ' ') {
      StackFrame f;
      if (!open || !parse_frame(line, f)) continue;
      if (kernel_frame(f)) ++out.back().kernel_frames;
      else out.back().user.push_back(std::move(f));
      continue;
    }
    StackSample s;
    open = parse_header(line, s);
    if (open) out.push_back(std::move(s));
  }
  return out;
}

bool reaches_thread_start(const UserStack& s) {
  for (const StackFrame& f : s)
    if (f.sym == "main" || f.sym == "start_thread" || f.sym == "__libc_start_call_main" ||
        f.sym.rfind("__libc_start_main", 0) == 0)
      return true;
  return false;
}

DwarfStacks dwarf_stacks(const std::vector<StackSample>& perf_samples) {
  std::map<uint32_t, std::set<UserStack>> blocked;
  std::map<std::pair<uint32_t, uint32_t>, std::set<UserStack>> wakeups;
  DwarfStacks d;
  for (const StackSample& s : perf_samples) {
    d.process_of[s.tid] = s.pid;
    if (s.event == "sched:sched_switch") {
      auto state = s.fields.find("prev_state");
      // Blocked: asleep (S), uninterruptible (D) or an idle kernel thread (I), as our --state
      // counts; not preempted (R, R+) nor exiting (Z, X).
      if (state == s.fields.end() || state->second.empty() || std::string("SDI").find(state->second[0]) == std::string::npos)
        continue;
      ++d.switch_outs;
      blocked[field_u32(s, "prev_pid")].insert(s.user);
    } else if (s.event == "sched:sched_waking") {
      ++d.wakeup_samples;
      wakeups[{s.tid, field_u32(s, "pid")}].insert(s.user);
    }
  }
  for (auto& [tid, stacks] : blocked) d.blocked[tid].assign(stacks.begin(), stacks.end());
  for (auto& [key, stacks] : wakeups) d.wakeups[key].assign(stacks.begin(), stacks.end());
  return d;
}

bool among(const UserStack& stack, const std::vector<UserStack>& stacks) {
  return std::any_of(stacks.begin(), stacks.end(), [&](const UserStack& s) { return same_stack(stack, s); });
}

double StackAgreement::blocked_equal_share() const { return share(blocked_equal_ns, blocked_ns); }
double StackAgreement::blocked_complete_share() const { return share(blocked_complete_ns, blocked_ns); }
double StackAgreement::waker_complete_share() const { return share(waker_complete_ns, thread_waker_ns); }
double StackAgreement::waker_complete_share_beyond_perf() const {
  return share(waker_complete_ns + waker_complete_beyond_perf_ns, thread_waker_ns);
}

std::string StackAgreement::summary() const {
  std::ostringstream o;
  o.precision(4);
  o << samples << " blocked samples, " << blocked_ns << " ns: " << 100 * blocked_equal_share()
    << "% with a user stack equal to perf's DWARF one, " << 100 * blocked_complete_share()
    << "% equal and reaching the thread's start.\nWakers: " << interrupt_waker_ns << " ns by interrupts, "
    << no_user_context_ns << " ns by threads without user context, " << unseen_waker_ns
    << " ns by threads perf did not see wake this one, " << thread_waker_ns
    << " ns by threads with a user stack: " << 100 * share(waker_equal_ns, thread_waker_ns) << "% equal to perf's, "
    << 100 * waker_complete_share() << "% equal and reaching the waker's start; " << waker_perf_incomplete_ns
    << " ns where no stack of perf's reached it, " << waker_complete_beyond_perf_ns << " ns of them ours did.\n";
  for (const std::string& m : blocked_misses) o << "blocked, not equal: " << m << "\n";
  for (const std::string& m : waker_misses) o << "waker, not equal: " << m << "\n";
  return o.str();
}

StackAgreement compare_stacks(const std::vector<StackSample>& ours, const DwarfStacks& perf,
                              const std::set<uint32_t>& compared_pids) {
  static const std::vector<UserStack> kNone;
  auto stacks_of = [](const auto& map, const auto& key) -> const std::vector<UserStack>& {
    auto it = map.find(key);
    return it == map.end() ? kNone : it->second;
  };
  StackAgreement a;
  Misses blocked_misses, waker_misses;
  for (size_t i = 0; i < ours.size(); ++i) {
    const StackSample& s = ours[i];
    if (s.event != "offwake-time" || !compared_pids.count(s.pid)) continue;
    ++a.samples;
    a.blocked_ns += s.period;
    const auto& blocked = stacks_of(perf.blocked, s.tid);
    if (among(s.user, blocked)) {
      a.blocked_equal_ns += s.period;
      if (reaches_thread_start(s.user)) a.blocked_complete_ns += s.period;
    } else {
      blocked_misses.add("tid " + std::to_string(s.tid) + ", ours (" + std::to_string(s.user.size()) +
                             " frames): " + describe(s.user) + "\n    " + nearest(s.user, blocked),
                         s.period);
    }
    if (i + 1 >= ours.size() || ours[i + 1].event != "offwake-waker") {
      ADD_FAILURE() << "no offwake-waker sample after the blocked sample of " << s.tid;
      continue;
    }
    const StackSample& w = ours[i + 1];
    if (w.tid >= kFirstPseudoWakerTid) {
      a.interrupt_waker_ns += s.period;
      continue;
    }
    const auto& wakeups = stacks_of(perf.wakeups, std::make_pair(w.tid, s.tid));
    if (wakeups.empty()) {
      a.unseen_waker_ns += s.period;
      continue;
    }
    if (w.user.empty() && among(w.user, wakeups)) {
      a.no_user_context_ns += s.period;
      continue;
    }
    a.thread_waker_ns += s.period;
    if (among(w.user, wakeups)) {
      a.waker_equal_ns += s.period;
      if (reaches_thread_start(w.user)) a.waker_complete_ns += s.period;
    } else if (std::none_of(wakeups.begin(), wakeups.end(), reaches_thread_start)) {
      a.waker_perf_incomplete_ns += s.period;
      if (reaches_thread_start(w.user)) a.waker_complete_beyond_perf_ns += s.period;
    } else {
      waker_misses.add("waker " + std::to_string(w.tid) + " of " + std::to_string(s.tid) + ", ours (" +
                           std::to_string(w.user.size()) + " frames): " + describe(w.user) + "\n    " +
                           nearest(w.user, wakeups),
                       s.period);
    }
  }
  a.blocked_misses = blocked_misses.largest(3);
  a.waker_misses = waker_misses.largest(3);
  return a;
}

void record_agreement(const std::string& name, const StackAgreement& a) {
  auto ppm = [](double x) { return static_cast<int>(x * 1e6); };
  ::testing::Test::RecordProperty(name + "_blocked_ns", std::to_string(a.blocked_ns));
  ::testing::Test::RecordProperty(name + "_blocked_equal_ppm", ppm(a.blocked_equal_share()));
  ::testing::Test::RecordProperty(name + "_blocked_complete_ppm", ppm(a.blocked_complete_share()));
  ::testing::Test::RecordProperty(name + "_thread_waker_ns", std::to_string(a.thread_waker_ns));
  ::testing::Test::RecordProperty(name + "_waker_complete_ppm", ppm(a.waker_complete_share()));
}

}  // namespace offwake::test
