#include "report/stdio_report.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

namespace offwake::report {

std::string human_ns(uint64_t ns) {
  char buf[32];
  if (ns < 1000) snprintf(buf, sizeof buf, "%llu ns", static_cast<unsigned long long>(ns));
  else if (ns < 1000000) snprintf(buf, sizeof buf, "%.2f us", ns / 1e3);
  else if (ns < 1000000000) snprintf(buf, sizeof buf, "%.2f ms", ns / 1e6);
  else snprintf(buf, sizeof buf, "%.3f s", ns / 1e9);
  return buf;
}

namespace {

// Frames of a stack on its line; more are cut, " <- ..." saying so.
constexpr size_t kStackFrames = 20;

std::string chain(const std::vector<Frame>& frames, size_t max_frames = kStackFrames) {
  if (frames.empty()) return kNoStackLabel;
  std::string out;
  for (size_t i = 0; i < frames.size() && i < max_frames; ++i) {
    if (i) out += " <- ";
    out += frames[i].name;
  }
  if (frames.size() > max_frames) out += " <- ...";
  return out;
}

std::string thread_label(const Thread& t) {
  if (t.tid >= 0x7ffffff0u) return t.comm;  // a pseudo thread ("[hardirq]", ...)
  return t.comm + " " + std::to_string(t.pid) + "/" + std::to_string(t.tid);
}

struct Waker {
  std::string label;
  const Stack* first = nullptr;  // waker_frames, chain, chain_end
  uint64_t ns = 0, count = 0;
};

struct Row {
  const Stack* first = nullptr;  // thread, frames, state
  uint64_t ns = 0, count = 0, max_ns = 0;
  double variance = 0;  // --sample-period: of ns
  size_t stacks = 0;    // per thread: the blocked stacks summed
  // A waker with its wakeup chain: the same waker with another chain is another entry.
  std::map<std::tuple<std::string, std::vector<Frame>, bool, std::vector<Hop>, std::string>, Waker> wakers;
};

// A waker's stack, or why it has none when that is known.
std::string waker_stack(const std::vector<Frame>& frames, bool not_taken, size_t max_frames = kStackFrames) {
  if (frames.empty() && not_taken) return kStacksNotTakenLabel;
  return chain(frames, max_frames);
}

// Frames of a hop, on one line with the others: fewer than a stack's.
constexpr size_t kHopFrames = 3;

// Under a waker line: the rest of its wakeup chain, a line per hop, and why it ends.
void print_chain(FILE* out, const Stack& s) {
  for (size_t i = 0; i < s.chain.size(); ++i) {
    const Hop& h = s.chain[i];
    std::string line = "hop " + std::to_string(i + 2) + ": " + thread_label(h.thread) + " [" + h.state +
                       "] blocked in " + chain(h.frames, kHopFrames) + ", woken by ";
    line += h.waker
                ? thread_label(*h.waker) + " at " + waker_stack(h.waker_frames, h.waker_stacks_not_taken, kHopFrames)
                : "[unknown waker]";
    fprintf(out, "  %10s %7s %8s %21s        %s\n", "", "", "", "", line.c_str());
  }
  if (!s.chain_end.empty())
    fprintf(out, "  %10s %7s %8s %21s        chain ends: %s\n", "", "", "", "", s.chain_end.c_str());
}

// A waker as its line names it: its thread, and its cgroup when it woke from another one
// than the blocked thread's (a process of another container).
std::string waker_label(const Stack& s) {
  std::string label = s.waker ? thread_label(*s.waker) : "[unknown waker]";
  if (!s.waker_cgroup.empty() && s.waker_cgroup != s.cgroup) label += " (cgroup " + s.waker_cgroup + ")";
  return label;
}

// The rows of one cgroup (--sort cgroup), or of the whole table.
struct Group {
  std::string cgroup;
  uint64_t ns = 0, count = 0;
  std::vector<const Row*> rows;
};

double share(uint64_t part, uint64_t whole) { return whole ? 100.0 * static_cast<double>(part) / whole : 0.0; }

// Counters that mean something was lost or not seen, and what they are called here.
const std::pair<const char*, const char*> kLossCounters[] = {
    {"lost_blocks", "blocks lost"},
    {"lost_wakeups", "wakeups lost"},
    {"missing_kernel_stacks", "kernel stacks missing"},
    {"missing_user_stacks", "user stacks missing"},
    {"missed_wakeups", "blocks without a wakeup seen"},
    {"late_block_ends", "blocks ended late"},
    {"perf_records_lost", "perf records lost"},
    {"forks_not_followed", "child processes not followed"},
};

// One row of the table: the blocked stack (or thread), and its top wakers with their chains.
void print_row(FILE* out, const Profile& p, const StdioOptions& o, const Row& r, bool sampled) {
  const Stack& s = *r.first;
  fprintf(out, "  %10s", human_ns(r.ns).c_str());
  if (sampled) fprintf(out, " %10s", human_ns(static_cast<uint64_t>(standard_error(r.variance))).c_str());
  // Sampled, the blocks kept are no fair sample of lengths (a block is kept with probability
  // length/period): their count does not divide the estimated time into a mean.
  fprintf(out, " %6.2f%% %8llu %10s %10s  ", share(r.ns, p.off_cpu_ns), static_cast<unsigned long long>(r.count),
          sampled ? "-" : human_ns(r.count ? r.ns / r.count : 0).c_str(), human_ns(r.max_ns).c_str());
  if (o.per_thread) fprintf(out, "%s: %zu stacks\n", thread_label(s.thread).c_str(), r.stacks);
  else fprintf(out, "%s [%s]: %s\n", thread_label(s.thread).c_str(), s.state.c_str(), chain(s.frames).c_str());
  std::vector<const Waker*> wakers;
  for (const auto& [k, w] : r.wakers) wakers.push_back(&w);
  std::stable_sort(wakers.begin(), wakers.end(), [](const Waker* a, const Waker* b) { return a->ns > b->ns; });
  for (size_t i = 0; i < wakers.size() && i < o.wakers_per_stack; ++i) {
    const Stack& first = *wakers[i]->first;
    fprintf(out, "  %10s %6.2f%% %8llu %21s    woken by %s: %s\n", human_ns(wakers[i]->ns).c_str(),
            share(wakers[i]->ns, r.ns), static_cast<unsigned long long>(wakers[i]->count), "",
            wakers[i]->label.c_str(), waker_stack(first.waker_frames, first.waker_stacks_not_taken).c_str());
    print_chain(out, first);
  }
  if (wakers.size() > o.wakers_per_stack)
    fprintf(out, "  %10s %7s %8s %21s    ... and %zu more wakers\n", "", "", "", "", wakers.size() - o.wakers_per_stack);
}

}  // namespace

void print_stdio_report(FILE* out, const Profile& p, const StdioOptions& o) {
  // Blocked stacks, summed over their wakers (and with --sort cgroup, per cgroup).
  std::map<std::tuple<std::string, Thread, std::vector<Frame>, std::string>, Row> rows;
  std::set<std::tuple<Thread, std::vector<Frame>, std::string>> stacks;
  for (const Stack& s : p.stacks) {
    if (s.kind != Kind::kOffCpu) continue;
    const std::string& cgroup = o.by_cgroup ? s.cgroup : std::string();
    Row& r = o.per_thread ? rows[{cgroup, s.thread, {}, ""}] : rows[{cgroup, s.thread, s.frames, s.state}];
    if (!r.first) r.first = &s;
    r.ns += s.ns;
    r.count += s.count;
    r.max_ns = std::max(r.max_ns, s.max_ns);
    r.variance += s.variance;
    if (stacks.insert({s.thread, s.frames, s.state}).second) ++r.stacks;
    if (p.wakers_dropped) continue;
    const std::string label = waker_label(s);
    Waker& w = r.wakers[{label, s.waker_frames, s.waker_stacks_not_taken, s.chain, s.chain_end}];
    w.label = label;
    if (!w.first) w.first = &s;
    w.ns += s.ns;
    w.count += s.count;
  }
  std::map<std::string, Group> groups;
  for (const auto& [k, r] : rows) {
    Group& g = groups[std::get<0>(k)];
    g.cgroup = std::get<0>(k);
    g.ns += r.ns;
    g.count += r.count;
    g.rows.push_back(&r);
  }
  auto metric = [&](const Row* r) -> double {
    switch (o.sort) {
      case SortKey::kCount: return static_cast<double>(r->count);
      case SortKey::kAvg: return r->count ? static_cast<double>(r->ns) / r->count : 0.0;
      case SortKey::kMax: return static_cast<double>(r->max_ns);
      default: return static_cast<double>(r->ns);
    }
  };
  std::vector<Group*> sorted;
  for (auto& [cgroup, g] : groups) {
    std::stable_sort(g.rows.begin(), g.rows.end(), [&](const Row* a, const Row* b) { return metric(a) > metric(b); });
    sorted.push_back(&g);
  }
  std::stable_sort(sorted.begin(), sorted.end(), [](const Group* a, const Group* b) { return a->ns > b->ns; });

  fprintf(out, "# perf offwake report of %s\n", o.input.c_str());
  if (!p.info.host.cmdline.empty()) {
    std::string cmd;
    for (const auto& a : p.info.host.cmdline) cmd += (cmd.empty() ? "" : " ") + a;
    // An argument may hold a newline (python3 -c "a script"): the comment stays one line.
    std::replace_if(cmd.begin(), cmd.end(), [](unsigned char c) { return c < 0x20 || c == 0x7f; }, ' ');
    fprintf(out, "# recorded by: %s\n", cmd.c_str());
  }
  if (!p.info.host.hostname.empty())
    fprintf(out, "# host: %s, Linux %s\n", p.info.host.hostname.c_str(), p.info.host.os_release.c_str());
  const bool sampled = p.sample_period_ns != 0;
  fprintf(out, "# off-CPU: %s", human_ns(p.off_cpu_ns).c_str());
  if (sampled) fprintf(out, " +- %s", human_ns(static_cast<uint64_t>(standard_error(p.off_cpu_variance))).c_str());
  fprintf(out, " in %llu blocks, %zu blocked stacks", static_cast<unsigned long long>(p.blocks), stacks.size());
  if (p.below_min_stacks)
    fprintf(out, " (and %llu stacks below --min, %s, left out)", static_cast<unsigned long long>(p.below_min_stacks),
            human_ns(p.below_min_ns).c_str());
  if (p.on_cpu_samples)
    fprintf(out, "; on-CPU (%s): %s in %llu samples", p.on_cpu_event.c_str(), human_ns(p.on_cpu_ns).c_str(),
            static_cast<unsigned long long>(p.on_cpu_samples));
  fprintf(out, "\n");
  // Every offwake-time sample of a recording is followed by its waker's: one without is cut
  // from it (a truncated recording), and shows as [unknown waker].
  if (p.unpaired)
    fprintf(out, "# Warning: %llu blocked samples without a waker sample (the recording ends inside them)\n",
            static_cast<unsigned long long>(p.unpaired));
  if (p.chains_cut_short)
    fprintf(out, "# Warning: %llu wakeup chains are cut short (the recording ends inside them)\n",
            static_cast<unsigned long long>(p.chains_cut_short));
  if (sampled)
    fprintf(out,
            "# Sampled (--sample-period %s): times are estimates, StdErr their standard error (the true time is "
            "within 2 of them in 95%% of recordings, 2.6 in 99%%); counts are of the blocks kept, Max the longest of "
            "them; no Avg (the blocks kept are no fair sample of lengths)\n",
            human_ns(p.sample_period_ns).c_str());
  fprintf(out, "#\n");
  if (sampled) fprintf(out, "# %10s %10s", "Total", "StdErr");
  else fprintf(out, "# %10s", "Total");
  fprintf(out, " %7s %8s %10s %10s  %s\n", "Share", "Count", "Avg", "Max",
          o.per_thread ? "Thread: blocked stacks" : "Thread [state]: blocked stack, leaf first");
  for (const Group* g : sorted) {
    if (o.by_cgroup)
      fprintf(out, "# cgroup %s: %s, %.2f%%, %llu blocks\n", g->cgroup.empty() ? "[none]" : g->cgroup.c_str(),
              human_ns(g->ns).c_str(), share(g->ns, p.off_cpu_ns), static_cast<unsigned long long>(g->count));
    for (const Row* r : g->rows) print_row(out, p, o, *r, sampled);
  }

  if (p.counters.empty()) return;
  fprintf(out, "#\n# recording counters:");
  uint64_t losses = 0;
  std::string lost;
  for (const auto& [key, value] : p.counters) {
    for (const auto& [name, text] : kLossCounters) {
      if (key != name) continue;
      fprintf(out, " %s %llu;", text, static_cast<unsigned long long>(value));
      if (value) {
        losses += value;
        lost += std::string(lost.empty() ? "" : ", ") + std::to_string(value) + " " + text;
      }
    }
  }
  fprintf(out, "\n");
  if (losses)
    fprintf(out, "# Warning: the recording did not see everything: %s (perf-offwake-record(1), LOSSES)\n",
            lost.c_str());
  if (std::string bpf = bpf_time_text(p); !bpf.empty()) fprintf(out, "# %s\n", bpf.c_str());
}

}  // namespace offwake::report
