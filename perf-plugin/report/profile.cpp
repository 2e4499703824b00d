#include "report/profile.h"

#include <map>
#include <tuple>

#include "record/offwake_events.h"
#include "record/record_stats.h"
#include "report/sample_stream.h"

namespace offwake::report {

namespace {

using perfdata::EventDesc;
using perfdata::SampleRecord;

// Everything a Stack is keyed by (all but the sums).
using StackKey = std::tuple<Kind, Thread, std::vector<Frame>, std::string, std::optional<Thread>,
                            std::vector<Frame>, std::string>;

struct Sums {
  uint64_t ns = 0, count = 0, max_ns = 0;
};

class ProfileBuilder : public SampleVisitor {
 public:
  ProfileBuilder(symbolize::Symbolizer& sym, const Filters& f, Profile& p) : sym_(sym), filters_(f), profile_(p) {}

  Status offwake(const EventDesc&, const SampleRecord& blocked, const SampleRecord* waker) override {
    ++profile_.samples_read;
    if (!waker) ++profile_.unpaired;
    if (!wanted(blocked)) return ok_status();
    OffwakeRaw raw;
    const bool has_raw = blocked.raw.size() >= sizeof raw;
    if (has_raw) std::memcpy(&raw, blocked.raw.data(), sizeof raw);
    std::optional<Thread> waker_thread;
    std::vector<Frame> waker_frames;
    std::string context;
    if (waker && !filters_.no_waker) {
      waker_thread = thread_of(*waker);
      waker_frames = frames_of(*waker);
      context = has_raw ? offwake_waker_context(raw.waker_flags) : "thread";
    }
    StackKey key{Kind::kOffCpu, thread_of(blocked), frames_of(blocked),
                 has_raw ? offwake_state_letters(raw.state) : "", std::move(waker_thread), std::move(waker_frames),
                 std::move(context)};
    const uint64_t count = has_raw && raw.count ? raw.count : 1;
    add(std::move(key), blocked.period, count, has_raw && raw.max_ns ? raw.max_ns : blocked.period);
    profile_.off_cpu_ns += blocked.period;
    profile_.blocks += count;
    return ok_status();
  }

  Status sample(const EventDesc& e, const SampleRecord& s) override {
    if (e.name == kOffwakeWakerEvent) return ok_status();  // counted with its blocked sample
    ++profile_.samples_read;
    if (!wanted(s)) return ok_status();
    if (profile_.on_cpu_event.empty()) profile_.on_cpu_event = e.name;
    add(StackKey{Kind::kOnCpu, thread_of(s), frames_of(s), "", std::nullopt, {}, ""}, s.period, 1, s.period);
    profile_.on_cpu_ns += s.period;
    ++profile_.on_cpu_samples;
    return ok_status();
  }

  void finish() {
    profile_.stacks.reserve(sums_.size());
    for (auto& [k, v] : sums_) {
      Stack st;
      std::tie(st.kind, st.thread, st.frames, st.state, st.waker, st.waker_frames, st.waker_context) = k;
      st.ns = v.ns;
      st.count = v.count;
      st.max_ns = v.max_ns;
      profile_.stacks.push_back(std::move(st));
    }
  }

 private:
  bool wanted(const SampleRecord& s) const {
    if (!filters_.pids.empty() && !filters_.pids.count(s.pid)) return false;
    if (!filters_.tids.empty() && !filters_.tids.count(s.tid)) return false;
    if (!filters_.comms.empty() && !filters_.comms.count(comm_of(s.tid))) return false;
    return true;
  }

  std::string comm_of(uint32_t tid) const { return sym_.has_comm(tid) ? sym_.comm(tid) : ":" + std::to_string(tid); }

  Thread thread_of(const SampleRecord& s) const { return Thread{comm_of(s.tid), s.pid, s.tid}; }

  std::vector<Frame> frames_of(const SampleRecord& s) {
    std::vector<Frame> out;
    const auto& resolved = sym_.resolve_cached(s.pid, s.callchain);
    out.reserve(resolved.size());
    for (size_t i = 0; i < resolved.size(); ++i) {
      const symbolize::ResolvedFrame& r = resolved[i];
      const bool kernel = s.callchain.frames()[i].context == FrameContext::kKernel ||
                          s.callchain.frames()[i].context == FrameContext::kGuestKernel;
      if ((filters_.kernel_only && !kernel) || (filters_.user_only && kernel)) continue;
      Frame f;
      f.name = r.sym ? r.sym->name : "[unknown]";
      f.dso = r.dso;
      f.ip = r.ip;
      f.dso_addr = r.dso_addr;
      f.kernel = kernel;
      out.push_back(std::move(f));
    }
    return out;
  }

  void add(StackKey key, uint64_t ns, uint64_t count, uint64_t max_ns) {
    Sums& s = sums_[std::move(key)];
    s.ns += ns;
    s.count += count;
    if (max_ns > s.max_ns) s.max_ns = max_ns;
  }

  symbolize::Symbolizer& sym_;
  const Filters& filters_;
  Profile& profile_;
  std::map<StackKey, Sums> sums_;
};

}  // namespace

Result<Profile> load_profile(const std::string& input, const Filters& filters, const Progress& progress) {
  if (filters.kernel_only && filters.user_only) return Error("--kernel-only and --user-only exclude each other", EINVAL);
  auto reader = perfdata::PerfDataReader::open(input);
  if (!reader) return reader.error();
  Profile profile;
  symbolize::Symbolizer symbolizer;
  SampleStream stream(*reader, symbolizer);
  ProfileBuilder builder(symbolizer, filters, profile);
  const uint64_t total = reader->input_size();
  OFFWAKE_TRY(stream.run(builder, [&](uint64_t) {
    if (progress) progress(reader->input_offset(), total);
  }));
  builder.finish();
  profile.info = reader->info();
  profile.wakers_dropped = filters.no_waker;
  if (auto it = profile.info.other_sections.find(kFeatOffwakeStats); it != profile.info.other_sections.end()) {
    auto counters = decode_record_stats(it->second);
    if (!counters) return counters.error();
    profile.counters = std::move(counters).value();
  }
  if (progress) progress(total, total);
  return profile;
}

}  // namespace offwake::report
