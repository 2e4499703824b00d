#include "report/profile.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
#include <span>
#include <tuple>
#include <unordered_map>

#include "samples/offwake_events.h"
#include "samples/offwake_raw.h"
#include "samples/record_stats.h"
#include "report/cgroups.h"
#include "report/sample_stream.h"

namespace offwake::report {

namespace {

// What makes two stacks one: every field but the sums.
auto stack_identity(const Stack& s) {
  return std::tie(s.kind, s.thread, s.frames, s.state, s.cgroup, s.waker, s.waker_frames, s.waker_context,
                  s.waker_stacks_not_taken, s.waker_cgroup, s.chain, s.chain_end);
}

using perfdata::EventDesc;
using perfdata::SampleRecord;

struct Sums {
  uint64_t ns = 0, count = 0, max_ns = 0;
  double variance = 0;
};

// A stack as ids of interned parts: samples are summed by these before anything is copied.
struct PartsKey {
  Kind kind;
  uint32_t thread, frames, waker, waker_frames;  // waker 0: none
  const char* state;                             // static strings
  const char* context;
  uint32_t chain = 0;            // interned hops 2.. (0: none)
  const char* chain_end = "";    // static string
  uint32_t cgroup = 0, waker_cgroup = 0;  // interned paths (0: "")
  bool waker_stacks_not_taken = false;    // as Stack's
  bool operator==(const PartsKey&) const = default;
};

struct PartsHash {
  size_t operator()(const PartsKey& k) const {
    uint64_t h = static_cast<uint64_t>(k.kind);
    for (uint64_t v : {uint64_t{k.thread}, uint64_t{k.frames}, uint64_t{k.waker}, uint64_t{k.waker_frames},
                       reinterpret_cast<uint64_t>(k.state), reinterpret_cast<uint64_t>(k.context),
                       uint64_t{k.chain}, reinterpret_cast<uint64_t>(k.chain_end), uint64_t{k.cgroup},
                       uint64_t{k.waker_cgroup}, uint64_t{k.waker_stacks_not_taken}})
      h = (h ^ v) * 0x100000001B3ull;
    return h;
  }
};

// A hop of a wakeup chain as ids of interned parts, like PartsKey.
struct HopKey {
  uint32_t thread = 0, frames = 0, waker = 0, waker_frames = 0;  // waker 0: none (cut short)
  const char* state = "";                                         // static strings
  const char* context = "";
  bool waker_stacks_not_taken = false;
  auto operator<=>(const HopKey&) const = default;
};

// A callchain as the sample has it: the process (its maps) and the ips with their contexts.
struct RawChain {
  uint32_t pid = 0;
  std::vector<uint64_t> words;  // ip, context, ip, context, ...
  bool operator==(const RawChain&) const = default;
};

struct RawChainHash {
  size_t operator()(const RawChain& c) const {
    uint64_t h = 0xCBF29CE484222325ull ^ c.pid;
    for (uint64_t w : c.words) h = (h ^ w) * 0x100000001B3ull;
    return h;
  }
};

// Sums samples into a Profile. Each distinct callchain is symbolized once while the maps it
// resolves against stay the same (a COMM, MMAP2, FORK or EXIT record starts afresh), and
// frames, frame lists and threads are interned, so a sample costs a few hash lookups.
class ProfileBuilder : public SampleVisitor {
 public:
  ProfileBuilder(symbolize::Symbolizer& sym, const Filters& f, Profile& p)
      : sym_(sym), filters_(f), profile_(p), filter_(f.select, sym, cgroups_) {
    threads_.emplace_back();       // id 0: no thread
  }

  void observed(const perfdata::Record& r) override {
    if (std::holds_alternative<perfdata::CgroupRecord>(r)) {
      cgroups_.observe(r);
      return;  // names no thread and maps nothing
    }
    chains_.clear();  // names may resolve differently from here on
    thread_ids_by_tid_.clear();
  }

  Status offwake(const EventDesc&, const SampleRecord& blocked, const OffwakeGroup& group) override {
    ++profile_.samples_read;
    const SampleRecord* waker = group.waker;
    if (!waker) ++profile_.unpaired;
    if (group.cut_short()) ++profile_.chains_cut_short;
    const std::optional<DecodedRaw> raw = decode_offwake_raw(blocked.raw);
    const bool has_raw = raw.has_value();
    const uint64_t count = blocks_summed(raw);
    auto kept = filter_.keeps(blocked, count);
    if (!kept) return kept.error();
    if (!*kept) return ok_status();
    PartsKey key{Kind::kOffCpu, thread_id(blocked), frames_id(blocked), 0, 0,
                 has_raw ? offwake_state_letters(raw->head.state) : "", ""};
    key.cgroup = cgroup_id(blocked.cgroup);
    if (waker && !filters_.no_waker) {
      key.waker = thread_id(*waker);
      // The raw data's, as the waker sample's own PERF_SAMPLE_CGROUP (the same id) may be
      // missing in a recording by something else.
      key.waker_cgroup = cgroup_id(has_raw && raw->head.waker_cgroup ? raw->head.waker_cgroup : waker->cgroup);
      key.waker_frames = frames_id(*waker);
      key.context = has_raw ? offwake_waker_context(raw->head.waker_flags) : "thread";
      key.waker_stacks_not_taken = has_raw && offwake_waker_stacks_not_taken(raw->head.waker_flags);
      key.chain = chain_id(raw ? std::span<const OffwakeRawHop>(raw->hops) : std::span<const OffwakeRawHop>(), group);
      if (group.cut_short()) key.chain_end = kChainCutShort;
      else if (group.chain_end) key.chain_end = offwake_chain_end_name(group.chain_end);
    }
    double variance = 0;
    if (has_raw && raw->head.sample_period_ns) {
      variance = sampled_variance(raw->head.sample_period_ns, raw->head.sampled, raw->head.sampled_ns);
      profile_.sample_period_ns = std::max(profile_.sample_period_ns, raw->head.sample_period_ns);
      profile_.off_cpu_variance += variance;
    }
    add(key, blocked.period, count, has_raw && raw->head.max_ns ? raw->head.max_ns : blocked.period, variance);
    profile_.off_cpu_ns += blocked.period;
    profile_.blocks += count;
    return ok_status();
  }

  Status sample(const EventDesc& e, const SampleRecord& s) override {
    // Counted with their blocked sample (or, stray hop samples, by the stream).
    if (e.name == kOffwakeWakerEvent || e.name == kOffwakeHopBlockedEvent || e.name == kOffwakeHopWakerEvent)
      return ok_status();
    ++profile_.samples_read;
    if (!filter_.wanted(s)) return ok_status();
    if (profile_.on_cpu_event.empty()) profile_.on_cpu_event = e.name;
    PartsKey key{Kind::kOnCpu, thread_id(s), frames_id(s), 0, 0, "", ""};
    key.cgroup = cgroup_id(s.cgroup);
    add(key, s.period, 1, s.period);
    profile_.on_cpu_ns += s.period;
    ++profile_.on_cpu_samples;
    return ok_status();
  }

  void finish() {
    profile_.stacks.reserve(sums_.size());
    for (const auto& [k, v] : sums_) {
      Stack st;
      st.kind = k.kind;
      st.thread = threads_[k.thread];
      st.frames = frame_lists_[k.frames];
      st.state = k.state;
      st.cgroup = cgroup_paths_[k.cgroup];
      st.waker_cgroup = cgroup_paths_[k.waker_cgroup];
      if (k.waker) st.waker = threads_[k.waker];
      st.waker_frames = frame_lists_[k.waker_frames];
      st.waker_context = k.context;
      st.waker_stacks_not_taken = k.waker_stacks_not_taken;
      for (const HopKey& h : hop_lists_[k.chain]) {
        Hop hop{threads_[h.thread], frame_lists_[h.frames], h.state, std::nullopt,
                frame_lists_[h.waker_frames], h.context, h.waker_stacks_not_taken};
        if (h.waker) hop.waker = threads_[h.waker];
        st.chain.push_back(std::move(hop));
      }
      st.chain_end = k.chain_end;
      st.ns = v.ns;
      st.count = v.count;
      st.max_ns = v.max_ns;
      st.variance = v.variance;
      profile_.stacks.push_back(std::move(st));
    }
    // A stable order for every output.
    std::sort(profile_.stacks.begin(), profile_.stacks.end(),
              [](const Stack& a, const Stack& b) { return stack_identity(a) < stack_identity(b); });
  }

 private:
  // A cgroup's path, interned (0: "").
  uint32_t cgroup_id(uint64_t id) {
    const std::string& path = cgroups_.path(id);
    auto [it, inserted] = cgroup_ids_.emplace(path, static_cast<uint32_t>(cgroup_paths_.size()));
    if (inserted) cgroup_paths_.push_back(path);
    return it->second;
  }

  uint32_t thread_id(const SampleRecord& s) {
    const uint64_t by = (uint64_t{s.pid} << 32) | s.tid;
    if (auto it = thread_ids_by_tid_.find(by); it != thread_ids_by_tid_.end()) return it->second;
    Thread t{sym_.thread_name(s.tid), s.pid, s.tid};
    auto [it, inserted] = thread_ids_.emplace(t, static_cast<uint32_t>(threads_.size()));
    if (inserted) threads_.push_back(std::move(t));
    thread_ids_by_tid_.emplace(by, it->second);
    return it->second;
  }

  uint32_t frames_id(const SampleRecord& s) {
    RawChain raw{s.pid, {}};
    raw.words.reserve(2 * s.callchain.frames().size());
    for (const auto& f : s.callchain.frames()) {
      raw.words.push_back(f.ip);
      raw.words.push_back(static_cast<uint64_t>(f.context));
    }
    if (auto it = chains_.find(raw); it != chains_.end()) return it->second;
    const uint32_t id = intern(symbolize(s));
    chains_.emplace(std::move(raw), id);
    return id;
  }

  std::vector<Frame> symbolize(const SampleRecord& s) {
    std::vector<Frame> out;
    const auto& resolved = sym_.resolve_cached(s.pid, s.callchain);
    out.reserve(resolved.size());
    for (size_t i = 0; i < resolved.size(); ++i) {
      const symbolize::ResolvedFrame& r = resolved[i];
      const FrameContext ctx = s.callchain.frames()[i].context;
      const bool kernel = ctx == FrameContext::kKernel || ctx == FrameContext::kGuestKernel;
      if ((filters_.kernel_only && !kernel) || (filters_.user_only && kernel)) continue;
      Frame f;
      f.name = r.function ? r.function->name : "[unknown]";
      f.dso = r.dso;
      f.ip = r.ip;
      f.dso_addr = r.dso_addr;
      f.kernel = kernel;
      out.push_back(std::move(f));
    }
    return out;
  }

  // Hops 2.. of the group, interned; 0 without any. A hop's state and its waker's context come
  // from the blocked sample's raw data (`raw_hops`, in hop order).
  uint32_t chain_id(std::span<const OffwakeRawHop> raw_hops, const OffwakeGroup& group) {
    if (group.hops.empty()) return 0;
    std::vector<HopKey> hops;
    hops.reserve(group.hops.size());
    for (size_t i = 0; i < group.hops.size(); ++i) {
      const OffwakeHop& h = group.hops[i];
      const bool known = i < raw_hops.size();
      const OffwakeRawHop rh = known ? raw_hops[i] : OffwakeRawHop{};
      HopKey k{thread_id(*h.blocked), frames_id(*h.blocked), 0, 0, known ? offwake_state_letters(rh.state) : "", ""};
      if (h.waker) {
        k.waker = thread_id(*h.waker);
        k.waker_frames = frames_id(*h.waker);
        k.context = known ? offwake_waker_context(rh.waker_flags) : "thread";
        k.waker_stacks_not_taken = known && offwake_waker_stacks_not_taken(rh.waker_flags);
      }
      hops.push_back(k);
    }
    auto [it, inserted] = hop_list_ids_.emplace(std::move(hops), static_cast<uint32_t>(hop_lists_.size()));
    if (inserted) hop_lists_.push_back(it->first);
    return it->second;
  }

  uint32_t intern(std::vector<Frame> frames) {
    auto [it, inserted] = frame_ids_.emplace(std::move(frames), static_cast<uint32_t>(frame_lists_.size()));
    if (inserted) frame_lists_.push_back(it->first);
    return it->second;
  }

  void add(const PartsKey& key, uint64_t ns, uint64_t count, uint64_t max_ns, double variance = 0) {
    Sums& s = sums_[key];
    s.ns += ns;
    s.count += count;
    s.variance += variance;
    if (max_ns > s.max_ns) s.max_ns = max_ns;
  }

  symbolize::Symbolizer& sym_;
  const Filters& filters_;
  Profile& profile_;
  std::vector<Thread> threads_;
  std::map<Thread, uint32_t> thread_ids_;
  std::unordered_map<uint64_t, uint32_t> thread_ids_by_tid_;  // (pid, tid) -> id, until a record
  std::vector<std::vector<Frame>> frame_lists_{std::vector<Frame>{}};  // id 0: no frames
  std::map<std::vector<Frame>, uint32_t> frame_ids_{{std::vector<Frame>{}, 0}};
  std::unordered_map<RawChain, uint32_t, RawChainHash> chains_;  // until a record
  std::vector<std::vector<HopKey>> hop_lists_{std::vector<HopKey>{}};  // id 0: no chain
  std::map<std::vector<HopKey>, uint32_t> hop_list_ids_{{std::vector<HopKey>{}, 0}};
  std::unordered_map<PartsKey, Sums, PartsHash> sums_;
  CgroupTable cgroups_;
  std::vector<std::string> cgroup_paths_{std::string()};  // id 0: ""
  std::unordered_map<std::string, uint32_t> cgroup_ids_{{std::string(), 0}};
  SampleFilter filter_;  // after cgroups_, which it reads
};

}  // namespace

void merge_profile(Profile& into, Profile from) {
  for (Stack& s : from.stacks) into.stacks.push_back(std::move(s));
  std::sort(into.stacks.begin(), into.stacks.end(),
            [](const Stack& a, const Stack& b) { return stack_identity(a) < stack_identity(b); });
  std::vector<Stack> summed;
  summed.reserve(into.stacks.size());
  for (Stack& s : into.stacks) {
    if (!summed.empty() && stack_identity(summed.back()) == stack_identity(s)) {
      Stack& t = summed.back();
      t.ns += s.ns;
      t.count += s.count;
      t.max_ns = std::max(t.max_ns, s.max_ns);
      t.variance += s.variance;  // windows are independent samples
    } else {
      summed.push_back(std::move(s));
    }
  }
  into.stacks = std::move(summed);
  for (const auto& counter : from.counters) {
    // Not a structured binding: clang (the fuzz build) does not let a lambda capture one.
    const std::string& key = counter.first;
    const uint64_t value = counter.second;
    auto it = std::find_if(into.counters.begin(), into.counters.end(), [&](const auto& kv) { return kv.first == key; });
    if (it == into.counters.end()) into.counters.emplace_back(key, value);
    else if (key == "sample_period_ns") it->second = std::max(it->second, value);  // a setting, not a count
    else it->second += value;
  }
  into.sample_period_ns = std::max(into.sample_period_ns, from.sample_period_ns);
  into.off_cpu_variance += from.off_cpu_variance;
  if (into.on_cpu_event.empty()) into.on_cpu_event = from.on_cpu_event;
  into.off_cpu_ns += from.off_cpu_ns;
  into.on_cpu_ns += from.on_cpu_ns;
  into.blocks += from.blocks;
  into.on_cpu_samples += from.on_cpu_samples;
  into.samples_read += from.samples_read;
  into.unpaired += from.unpaired;
  into.chains_cut_short += from.chains_cut_short;
  into.stray_hop_samples += from.stray_hop_samples;
  for (std::string& w : from.warnings) into.warnings.push_back(std::move(w));
}

uint64_t counter(const Profile& p, std::string_view name) {
  for (const auto& [key, value] : p.counters)
    if (key == name) return value;
  return 0;
}

std::string bpf_time_text(const Profile& p) {
  const uint64_t runs = counter(p, "bpf_prog_runs");
  if (!runs) return "";
  const uint64_t ns = counter(p, "bpf_prog_run_ns") + counter(p, "user_task_work_ns");
  const uint64_t duration = counter(p, "duration_ns");
  char text[160];
  snprintf(text, sizeof text, "BPF programs: %.3f s of CPU in %llu runs, %.2f%% of one CPU over %.3f s recorded",
           ns / 1e9, static_cast<unsigned long long>(runs + counter(p, "user_task_work_runs")),
           duration ? 100.0 * ns / duration : 0.0, duration / 1e9);
  return text;
}

Result<Profile> load_profile(const std::string& input, const Filters& filters, const Progress& progress) {
  if (filters.kernel_only && filters.user_only)
    return Error::usage("--kernel-only and --user-only exclude each other");
  auto reader = perfdata::PerfDataReader::open(input);
  if (!reader) return reader.error();
  OFFWAKE_TRY(check_offwake_recording(reader->events(), input));
  Filters prepared = filters;  // --time's percentages made times of this recording
  OFFWAKE_TRY(prepare_selection(prepared.select, reader->info(), input));
  Profile profile;
  symbolize::Symbolizer symbolizer;
  SampleStream stream(*reader, symbolizer);
  ProfileBuilder builder(symbolizer, prepared, profile);
  const uint64_t total = reader->input_size();
  OFFWAKE_TRY(stream.run(builder, [&](uint64_t) {
    if (progress) progress(reader->input_offset(), total);
  }));
  builder.finish();
  if (auto cut = reader->cut_short()) profile.warnings.push_back(*cut);
  profile.stray_hop_samples = stream.stats().stray_hop_samples;
  profile.info = reader->info();
  profile.wakers_dropped = filters.no_waker;
  // The counters are about the recording, not in it: without them (a corrupt section) the
  // recording is still read, as perf reads it.
  if (auto it = profile.info.other_sections.find(kFeatOffwakeStats); it != profile.info.other_sections.end()) {
    auto counters = decode_record_stats(it->second);
    if (counters) profile.counters = std::move(counters).value();
    else profile.warnings.push_back(reader->name() + ": " + counters.error().message() + ": the recording counters are left out");
  }
  if (progress) progress(total, total);
  return profile;
}

}  // namespace offwake::report
