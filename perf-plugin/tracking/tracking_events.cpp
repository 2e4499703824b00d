#include "tracking/tracking_events.h"

#include <fstream>

namespace offwake {

Result<uint64_t> perf_event_max_sample_rate() {
  std::ifstream in("/proc/sys/kernel/perf_event_max_sample_rate");
  uint64_t v = 0;
  if (!(in >> v)) return Error("reading /proc/sys/kernel/perf_event_max_sample_rate", EIO, ErrorKind::kIo);
  return v;
}

Status parse_sampling_event(const std::string& name, SamplingConfig& out) {
  static const struct {
    const char* name;
    uint32_t type;
    uint64_t config;
  } known[] = {
      {"cpu-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK},
      {"task-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK},
      {"cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES},
      {"cpu-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES},
      {"instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS},
      {"ref-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_REF_CPU_CYCLES},
      {"cache-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES},
      {"branch-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES},
  };
  for (const auto& k : known) {
    if (name == k.name) {
      out.name = k.name;
      out.type = k.type;
      out.config = k.config;
      return ok_status();
    }
  }
  return Error::usage("unknown event '" + name + "' (cpu-clock, task-clock, cycles, instructions, ref-cycles, "
                      "cache-misses, branch-misses)");
}

// As perf record --all-cgroups sets its tracking event: a cgroup made while recording is
// reported (PERF_RECORD_CGROUP) with its path, for the samples that name it. No build ids in
// MMAP2 records (attr.build_id): where one perf event asks for them, the kernel (6.18 here)
// leaves PERF_RECORD_MISC_MMAP_BUILD_ID set in the records of the same mapping that it then
// writes to other events, which hold a device and inode instead, and a perf record running
// beside us aborts reading them (Record.PerfRecordBesideARecordingIsUnharmed). The recorder
// reads a mapping's build id from its binary (Recorder::write_description).
static perf_event_attr tracking_attr(bool namespaces) {
  perf_event_attr a = base_perf_attr(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_DUMMY);
  a.sample_period = 1;
  a.comm = 1;
  a.comm_exec = 1;
  a.mmap = 1;
  a.mmap2 = 1;
  a.task = 1;
  a.cgroup = 1;
  a.namespaces = namespaces;  // --namespaces: a task's at fork, unshare and setns
  return a;
}

static perf_event_attr sampling_attr(const SamplingConfig& c) {
  perf_event_attr a = base_perf_attr(c.type, c.config);
  a.freq = c.use_frequency;
  a.sample_freq = c.use_frequency ? c.frequency : c.period;  // a union with sample_period
  a.sample_type |= PERF_SAMPLE_IP | PERF_SAMPLE_PERIOD | PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_CGROUP;
  a.sample_max_stack = c.max_stack;
  ask_user_stack_copy(a, c.user_stack_copy);
  return a;
}

Result<TrackingEvents> TrackingEvents::open(const SamplingConfig* sampling, unsigned mmap_pages, bool namespaces) {
  std::vector<perfdata::EventDesc> events = {{tracking_attr(namespaces), "dummy:u", {}}};
  if (sampling) events.push_back({sampling_attr(*sampling), sampling->name, {}});
  auto set = PerfEventSet::open(std::move(events), mmap_pages);
  if (!set) {
    const int err = set.error().errnum();
    if (sampling && (err == ENOENT || err == EOPNOTSUPP || err == ENODEV))
      return Error::unavailable("opening the sampling event " + sampling->name + ": not supported on this machine", err);
    return set.error().context("opening perf events");
  }
  return TrackingEvents(std::move(set).value());
}

Status TrackingEvents::drain(const std::function<Status(const perfdata::Record&)>& emit) {
  return set_.drain([&](size_t, const perfdata::Record& r) { return emit(r); });
}

}  // namespace offwake
