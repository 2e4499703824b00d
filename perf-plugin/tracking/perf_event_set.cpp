#include "tracking/perf_event_set.h"

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

#include "callchain/user_regs.h"
#include "perfdata/record_encoder.h"
#include "perfdata/sample_encoder.h"

namespace offwake {

uint64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// libperf's internal/evsel.h: frees what perf_evlist__mmap() allocated for an evsel's sample ids.
extern "C" void perf_evsel__free_id(struct perf_evsel* evsel);

// perf_evsel__delete() frees the evsel alone: the references to the maps that the evlist gave
// each evsel (perf_evlist__set_maps) and its sample ids stay allocated, as perf's own
// evsel__exit() knows. They go here, before the evlist deletes the evsels.
void PerfEventSet::EvlistDeleter::operator()(perf_evlist* e) const {
  perf_evlist__munmap(e);
  perf_evlist__close(e);
  perf_evsel* evsel;
  perf_evlist__for_each_evsel(e, evsel) {
    perf_evsel__free_id(evsel);
    perf_cpu_map__put(perf_evsel__cpus(evsel));
    perf_thread_map__put(perf_evsel__threads(evsel));
  }
  perf_evlist__delete(e);  // also deletes its evsels
}
void PerfEventSet::CpusDeleter::operator()(perf_cpu_map* c) const { perf_cpu_map__put(c); }
void PerfEventSet::ThreadsDeleter::operator()(perf_thread_map* t) const { perf_thread_map__put(t); }

PerfEventSet::PerfEventSet(PerfEventSet&&) noexcept = default;
PerfEventSet& PerfEventSet::operator=(PerfEventSet&&) noexcept = default;
PerfEventSet::~PerfEventSet() = default;

static int libperf_quiet(enum libperf_print_level, const char*, va_list) { return 0; }

perf_event_attr base_perf_attr(uint32_t type, uint64_t config, uint32_t wakeup_bytes) {
  perf_event_attr a{};
  a.type = type;
  a.config = config;
  a.size = sizeof a;
  a.sample_type = perfdata::kSampleIdLayout;
  a.read_format = PERF_FORMAT_ID;
  a.sample_id_all = 1;
  a.disabled = 1;
  a.watermark = 1;
  a.wakeup_watermark = wakeup_bytes;
  a.use_clockid = 1;
  a.clockid = CLOCK_MONOTONIC;
  return a;
}

void ask_user_stack_copy(perf_event_attr& a, uint32_t size) {
  if (!size) return;
  a.sample_type |= PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
  a.sample_regs_user = kUserRegsMask;
  a.sample_stack_user = size;
  a.exclude_callchain_user = 1;
}

void drop_user_stack_copy(perf_event_attr& a) {
  a.sample_type &= ~static_cast<uint64_t>(PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER);
  a.sample_regs_user = 0;
  a.sample_stack_user = 0;
  a.exclude_callchain_user = 0;
}

Result<PerfEventSet> PerfEventSet::open(std::vector<perfdata::EventDesc> events, unsigned mmap_pages) {
  libperf_init(libperf_quiet);
  PerfEventSet t;
  t.events_ = std::move(events);
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
    // No permission (perf_event_paranoid), or no such event or PMU here: the machine's limit,
    // which a caller may work around; anything else is not.
    const bool machine = -err == EACCES || -err == EPERM || -err == ENOENT || -err == ENODEV || -err == EOPNOTSUPP;
    return Error("perf_event_open", -err, machine ? ErrorKind::kUnavailable : ErrorKind::kOther);
  }

  // The kernel's sample id of each CPU's event, as reads with PERF_FORMAT_ID report it.
  // Read before mmap: once mapped, libperf may answer reads from the mmap page, without id.
  int nr_cpus = perf_cpu_map__nr(t.cpus_.get());
  for (size_t i = 0; i < evsels.size(); ++i) {
    t.events_[i].ids.clear();
    for (int idx = 0; idx < nr_cpus; ++idx) {
      perf_counts_values counts{};
      if (int err = perf_evsel__read(evsels[i], idx, 0, &counts); err < 0)
        return Error("reading the id of event " + t.events_[i].name, -err);
      t.events_[i].ids.push_back(counts.id);
    }
    t.events_[i].attr.disabled = 0;
  }
  if (int err = perf_evlist__mmap(t.evlist_.get(), static_cast<int>(mmap_pages)); err < 0)
    return Error("mapping the perf ring buffers (" + std::to_string(mmap_pages) + " pages per CPU)", -err);
  t.buffers_ = static_cast<size_t>(nr_cpus);
  return t;
}

void PerfEventSet::enable() { perf_evlist__enable(evlist_.get()); }
void PerfEventSet::disable() { perf_evlist__disable(evlist_.get()); }
void PerfEventSet::poll(int timeout_ms) { perf_evlist__poll(evlist_.get(), timeout_ms); }

// PERF_SAMPLE_IDENTIFIER comes first and says which event a sample is of.
const perfdata::EventDesc* PerfEventSet::event_of(std::span<const uint8_t> payload) const {
  uint64_t id = 0;
  if (payload.size() < sizeof id) return nullptr;
  std::memcpy(&id, payload.data(), sizeof id);
  for (const auto& d : events_)
    if (std::find(d.ids.begin(), d.ids.end(), id) != d.ids.end()) return &d;
  return nullptr;
}

// Each record is consumed as it is read: perf_mmap__read_event() keeps the read position just
// past it, and perf_mmap__consume() hands that much back to the kernel. Not
// perf_mmap__read_done(): it moves the read position to the ring's head as it is then, past any
// record the kernel wrote after the last one read, which would be lost without a LOST record
// (TrackingEvents.ADrainWhileTheKernelWritesMissesNoRecord: 17% of FORK records in a tight
// loop; at the recorder's pace, one child's FORK in 2 of 31 fork storms of 1,300 here).
Status PerfEventSet::drain(const EmitFn& emit) {
  perf_mmap* map;
  size_t buffer = 0;
  perf_evlist__for_each_mmap(evlist_.get(), map, false) {
    const size_t index = buffer++;
    if (perf_mmap__read_init(map) < 0) continue;  // empty
    while (union perf_event* ev = perf_mmap__read_event(map)) {
      const perf_event_header& h = ev->header;
      std::span<const uint8_t> payload(reinterpret_cast<const uint8_t*>(ev) + sizeof h, h.size - sizeof h);
      Result<perfdata::Record> rec = Error("undecodable");
      if (h.type == PERF_RECORD_SAMPLE) {
        if (const perfdata::EventDesc* e = event_of(payload)) {
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
      OFFWAKE_TRY(emit(index, *rec));
    }
  }
  return ok_status();
}

}  // namespace offwake
