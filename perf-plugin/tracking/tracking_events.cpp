#include "tracking/tracking_events.h"

// libperf's headers declare C functions without extern "C".
extern "C" {
#include <perf/core.h>
#include <perf/cpumap.h>
#include <perf/event.h>
#include <perf/evlist.h>
#include <perf/evsel.h>
#include <perf/mmap.h>
#include <perf/threadmap.h>
}
#include <time.h>

#include <algorithm>
#include <cstdarg>
#include <cstring>

#include "perfdata/record_encoder.h"
#include "perfdata/sample_encoder.h"

namespace offwake {

uint64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

void TrackingEvents::EvlistDeleter::operator()(perf_evlist* e) const {
  perf_evlist__munmap(e);
  perf_evlist__close(e);
  perf_evlist__delete(e);  // also deletes its evsels
}
void TrackingEvents::CpusDeleter::operator()(perf_cpu_map* c) const { perf_cpu_map__put(c); }
void TrackingEvents::ThreadsDeleter::operator()(perf_thread_map* t) const { perf_thread_map__put(t); }

TrackingEvents::TrackingEvents(TrackingEvents&&) noexcept = default;
TrackingEvents& TrackingEvents::operator=(TrackingEvents&&) noexcept = default;
TrackingEvents::~TrackingEvents() = default;

static int libperf_quiet(enum libperf_print_level, const char*, va_list) { return 0; }

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
  return Error("unknown event '" + name + "' (cpu-clock, task-clock, cycles, instructions, ref-cycles, "
               "cache-misses, branch-misses)", EINVAL);
}

// What every event we open shares: the sample_id layout, ids readable, CLOCK_MONOTONIC
// timestamps, and ring buffers that wake us only when they fill up.
static perf_event_attr base_attr(uint32_t type, uint64_t config) {
  perf_event_attr a{};
  a.type = type;
  a.config = config;
  a.size = sizeof a;
  a.sample_type = kSampleIdLayout;
  a.read_format = PERF_FORMAT_ID;
  a.sample_id_all = 1;
  a.disabled = 1;
  a.watermark = 1;
  a.wakeup_watermark = 64 * 1024;
  a.use_clockid = 1;
  a.clockid = CLOCK_MONOTONIC;
  return a;
}

static perf_event_attr tracking_attr() {
  perf_event_attr a = base_attr(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_DUMMY);
  a.sample_period = 1;
  a.comm = 1;
  a.comm_exec = 1;
  a.mmap = 1;
  a.mmap2 = 1;
  a.build_id = 1;
  a.task = 1;
  return a;
}

static perf_event_attr sampling_attr(const SamplingConfig& c) {
  perf_event_attr a = base_attr(c.type, c.config);
  a.freq = c.use_frequency;
  a.sample_freq = c.use_frequency ? c.frequency : c.period;  // a union with sample_period
  a.sample_type |= PERF_SAMPLE_IP | PERF_SAMPLE_PERIOD | PERF_SAMPLE_CALLCHAIN;
  a.sample_max_stack = c.max_stack;
  return a;
}

Result<TrackingEvents> TrackingEvents::open(const SamplingConfig* sampling, unsigned mmap_pages) {
  libperf_init(libperf_quiet);
  TrackingEvents t;
  t.events_.push_back({tracking_attr(), "dummy:u", {}});
  if (sampling) t.events_.push_back({sampling_attr(*sampling), sampling->name, {}});

  t.cpus_.reset(perf_cpu_map__new_online_cpus());
  t.threads_.reset(perf_thread_map__new_dummy());
  t.evlist_.reset(perf_evlist__new());
  if (!t.cpus_ || !t.threads_ || !t.evlist_) return Error("libperf: out of memory", ENOMEM);
  std::vector<perf_evsel*> evsels;
  for (auto& e : t.events_) {
    perf_evsel* evsel = perf_evsel__new(&e.attr);
    if (!evsel) return Error("libperf: out of memory", ENOMEM);
    perf_evlist__add(t.evlist_.get(), evsel);
    evsels.push_back(evsel);
  }
  perf_evlist__set_maps(t.evlist_.get(), t.cpus_.get(), t.threads_.get());
  if (int err = perf_evlist__open(t.evlist_.get()); err < 0) {
    if (sampling && (-err == ENOENT || -err == EOPNOTSUPP || -err == ENODEV))
      return Error("opening the sampling event " + sampling->name + ": not supported on this machine", -err);
    return Error("opening perf events (perf_event_open)", -err);
  }

  // The kernel's sample id of each CPU's event, as reads with PERF_FORMAT_ID report it.
  // Read before mmap: once mapped, libperf may answer reads from the mmap page, without id.
  int nr_cpus = perf_cpu_map__nr(t.cpus_.get());
  for (size_t i = 0; i < evsels.size(); ++i) {
    for (int idx = 0; idx < nr_cpus; ++idx) {
      perf_counts_values counts{};
      if (int err = perf_evsel__read(evsels[i], idx, 0, &counts); err < 0)
        return Error("reading the id of event " + t.events_[i].name, -err);
      t.events_[i].ids.push_back(counts.id);
    }
    t.events_[i].attr.disabled = 0;
  }
  if (int err = perf_evlist__mmap(t.evlist_.get(), static_cast<int>(mmap_pages)); err < 0)
    return Error("mapping the perf ring buffers", -err);
  return t;
}

void TrackingEvents::enable() { perf_evlist__enable(evlist_.get()); }
void TrackingEvents::disable() { perf_evlist__disable(evlist_.get()); }
void TrackingEvents::poll(int timeout_ms) { perf_evlist__poll(evlist_.get(), timeout_ms); }

Status TrackingEvents::drain(const std::function<Status(const perfdata::Record&)>& emit) {
  perf_mmap* map;
  perf_evlist__for_each_mmap(evlist_.get(), map, false) {
    if (perf_mmap__read_init(map) < 0) continue;  // empty
    while (union perf_event* ev = perf_mmap__read_event(map)) {
      const perf_event_header& h = ev->header;
      std::span<const uint8_t> payload(reinterpret_cast<const uint8_t*>(ev) + sizeof h, h.size - sizeof h);
      Result<perfdata::Record> rec = Error("undecodable");
      if (h.type == PERF_RECORD_SAMPLE) {
        // PERF_SAMPLE_IDENTIFIER comes first and says which event the sample is of.
        const perfdata::EventDesc* e = nullptr;
        uint64_t id = 0;
        if (payload.size() >= sizeof id) {
          std::memcpy(&id, payload.data(), sizeof id);
          for (const auto& d : events_)
            if (std::find(d.ids.begin(), d.ids.end(), id) != d.ids.end()) e = &d;
        }
        if (e) {
          auto s = perfdata::decode_sample(e->attr, h.misc, payload);
          if (s) rec = perfdata::Record{std::move(s).value()};
        }
      } else {
        rec = perfdata::decode_record(events_[0].attr, h, payload);
      }
      perf_mmap__consume(map);
      if (!rec || std::holds_alternative<perfdata::OtherRecord>(*rec)) {
        ++undecodable_;
        continue;
      }
      Status s = emit(*rec);
      if (!s) {
        perf_mmap__read_done(map);
        return s;
      }
    }
    perf_mmap__read_done(map);
  }
  return ok_status();
}

}  // namespace offwake
