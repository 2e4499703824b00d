#include "report/pprof.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "blocks/pseudo_wakers.h"
#include "report/cgroups.h"
#include "report/folded.h"
#include "report/gzip.h"
#include "report/protobuf_writer.h"
#include "report/utf8.h"

namespace offwake::report {

namespace {

// Field numbers of github.com/google/pprof/proto/profile.proto (package perftools.profiles).
struct PbProfile {
  static constexpr uint32_t kSampleType = 1, kSample = 2, kMapping = 3, kLocation = 4, kFunction = 5,
                            kStringTable = 6, kDurationNanos = 10, kPeriodType = 11, kPeriod = 12,
                            kComment = 13, kDefaultSampleType = 14;
};
struct PbValueType {
  static constexpr uint32_t kType = 1, kUnit = 2;
};
struct PbSample {
  static constexpr uint32_t kLocationId = 1, kValue = 2, kLabel = 3;
};
struct PbLabel {  // num_unit (4) is not written: see num_label()
  static constexpr uint32_t kKey = 1, kStr = 2, kNum = 3;
};
struct PbMapping {
  static constexpr uint32_t kId = 1, kMemoryStart = 2, kMemoryLimit = 3, kFileOffset = 4, kFilename = 5,
                            kBuildId = 6, kHasFunctions = 7;
};
struct PbLocation {
  static constexpr uint32_t kId = 1, kMappingId = 2, kAddress = 3, kLine = 4;
};
struct PbLine {
  static constexpr uint32_t kFunctionId = 1;
};
struct PbFunction {
  static constexpr uint32_t kId = 1, kName = 2, kSystemName = 3, kFilename = 4;
};

// What the symbolizer calls the DSO of a frame outside every mapping: no Mapping for it.
constexpr std::string_view kUnknownDso = "[unknown]";

// profile.proto's strings are indices into one table whose entry 0 is "". A proto3 string
// must be UTF-8 (strict decoders refuse the profile otherwise): bytes that are not, which a
// comm may hold, become U+FFFD, as in the SVG.
class StringTable {
 public:
  StringTable() { index(""); }
  int64_t index(const std::string& s) {
    auto [it, added] = ids_.try_emplace(s, static_cast<int64_t>(strings_.size()));
    if (added) strings_.push_back(valid_utf8(s));
    return it->second;
  }
  const std::vector<std::string>& strings() const { return strings_; }

 private:
  std::map<std::string, int64_t> ids_;
  std::vector<std::string> strings_;
};

// One Mapping per DSO. Its address range is the one its locations span; the file offset is
// known only when every location of the DSO has the same load bias (ip - offset in the file):
// a library that several processes map at different addresses has no one range, and gets 0s
// ("unknown") rather than a range that mixes address spaces.
struct MappingEntry {
  std::string dso;
  bool seen = false;
  uint64_t lo = 0, hi = 0;  // [lo, hi): the addresses of its locations
  uint64_t bias = 0, offset_at_lo = 0;
  bool one_bias = true;

  void add(const Frame& f) {
    const uint64_t b = f.ip - f.dso_addr;
    if (!seen) {
      seen = true;
      bias = b;
      lo = f.ip;
      offset_at_lo = f.dso_addr;
      hi = f.ip + 1;
      return;
    }
    if (b != bias) one_bias = false;
    if (f.ip < lo) {
      lo = f.ip;
      offset_at_lo = f.dso_addr;
    }
    if (f.ip >= hi) hi = f.ip + 1;
  }
};

// A Location and its Function, one per distinct frame (what perf report merges: name, DSO,
// kernel or user), at the first address seen for it.
struct LocationEntry {
  uint64_t mapping_id = 0;  // 0: no mapping
  uint64_t address = 0;
  int64_t name = 0, filename = 0;
};

class PprofEncoder {
 public:
  explicit PprofEncoder(const Profile& p) : profile_(p) {
    on_cpu_ = p.on_cpu_samples > 0;
    for (const Stack& s : p.stacks) on_cpu_ = on_cpu_ || s.kind == Kind::kOnCpu;
    // The header's strings first, so the table reads in order of importance.
    off_cpu_ = strings_.index("off_cpu");
    nanoseconds_ = strings_.index("nanoseconds");
    blocks_ = strings_.index("blocks");
    count_ = strings_.index("count");
    if (on_cpu_) cpu_ = strings_.index("cpu");
    number_mappings();
  }

  perfdata::Bytes encode() {
    ProtoWriter samples;
    for (const Stack& s : profile_.stacks) samples.message_field(PbProfile::kSample, sample(s));

    ProtoWriter out;
    out.message_field(PbProfile::kSampleType, value_type(off_cpu_, nanoseconds_));
    out.message_field(PbProfile::kSampleType, value_type(blocks_, count_));
    if (on_cpu_) out.message_field(PbProfile::kSampleType, value_type(cpu_, nanoseconds_));
    out.append(samples);
    for (size_t i = 0; i < mappings_.size(); ++i) out.message_field(PbProfile::kMapping, mapping(i));
    for (size_t i = 0; i < locations_.size(); ++i) out.message_field(PbProfile::kLocation, location(i));
    for (size_t i = 0; i < locations_.size(); ++i) out.message_field(PbProfile::kFunction, function(i));
    ProtoWriter tail = header_tail();  // interns its strings before the table is written
    for (const std::string& s : strings_.strings()) out.string_field(PbProfile::kStringTable, s);
    out.append(tail);
    return out.take();
  }

 private:
  static ProtoWriter value_type(int64_t type, int64_t unit) {
    ProtoWriter w;
    w.int_field(PbValueType::kType, type);
    w.int_field(PbValueType::kUnit, unit);
    return w;
  }

  // The off-wake path of --folded and --svg (walk_offwake_path, bottom first: the comm, the
  // blocked stack root first, "--", the waker's stack leaf first, each further hop, the last
  // waker's comm), reversed: pprof wants the leaf first, so the blocked thread's comm is the
  // root of every sample and the call tree of pprof's flame graph nests as our --svg does.
  std::vector<uint64_t> location_ids(const Stack& s) {
    std::vector<uint64_t> ids;
    ids.reserve(s.frames.size() + s.waker_frames.size() + 3);
    walk_offwake_path(s, !profile_.wakers_dropped, [&](std::string name, PathPart, const Frame* f) {
      ids.push_back(f ? location_id(*f) : marker_id(name));
    });
    std::reverse(ids.begin(), ids.end());
    return ids;
  }

  ProtoWriter sample(const Stack& s) {
    const std::vector<uint64_t> ids = location_ids(s);
    // Each sample has a value for every sample type; those of the other kind are 0.
    std::vector<uint64_t> values;
    if (s.kind == Kind::kOffCpu) values = {s.ns, s.count};
    else values = {0, 0};
    if (on_cpu_) values.push_back(s.kind == Kind::kOnCpu ? s.ns : 0);

    ProtoWriter w;
    w.packed_field(PbSample::kLocationId, ids);
    w.packed_field(PbSample::kValue, values);
    str_label(w, "comm", s.thread.comm);
    num_label(w, "pid", s.thread.pid);
    num_label(w, "tid", s.thread.tid);
    if (!s.state.empty()) str_label(w, "state", s.state);
    cgroup_labels(w, "", s.cgroup);
    if (s.waker) {
      str_label(w, "waker_comm", s.waker->comm);
      // "[hardirq]" and the other pseudo threads have a made-up tid: the name says it all.
      if (!pseudo_waker_of_tid(s.waker->tid)) num_label(w, "waker_tid", s.waker->tid);
      if (!s.waker_context.empty()) str_label(w, "waker_context", s.waker_context);
      if (s.waker_stacks_not_taken) str_label(w, "waker_stacks", "not taken (woken early)");
      cgroup_labels(w, "waker_", s.waker_cgroup);
    }
    // A wakeup chain, as labels too (its stacks are in the locations): how long it is, who
    // woke at each further hop, and why it ends.
    if (!s.chain_end.empty()) {
      num_label(w, "chain_hops", 1 + s.chain.size());
      for (size_t i = 0; i < s.chain.size(); ++i)
        str_label(w, "hop" + std::to_string(i + 2) + "_waker_comm",
                  s.chain[i].waker ? s.chain[i].waker->comm : std::string("[unknown waker]"));
      str_label(w, "chain_end", s.chain_end);
    }
    return w;
  }

  // "cgroup" (its path) and, when the path names one, "container" (report/cgroups.h).
  void cgroup_labels(ProtoWriter& sample, const std::string& prefix, const std::string& cgroup) {
    if (cgroup.empty()) return;
    str_label(sample, prefix + "cgroup", cgroup);
    if (std::string id = container_id(cgroup); !id.empty()) str_label(sample, prefix + "container", id);
  }

  void str_label(ProtoWriter& sample, const std::string& key, const std::string& value) {
    ProtoWriter l;
    l.int_field(PbLabel::kKey, strings_.index(key));
    l.int_field(PbLabel::kStr, strings_.index(value));
    sample.message_field(PbSample::kLabel, l);
  }

  // Ids have no unit: none is given (pprof then takes the key for one).
  void num_label(ProtoWriter& sample, const std::string& key, uint64_t value) {
    ProtoWriter l;
    l.int_field(PbLabel::kKey, strings_.index(key));
    l.uint_field(PbLabel::kNum, value);
    sample.message_field(PbSample::kLabel, l);
  }

  uint64_t location_id(const Frame& f) {
    auto [it, added] = location_ids_.try_emplace(f, locations_.size() + 1);
    if (!added) return it->second;
    LocationEntry loc;
    loc.address = f.ip;
    loc.name = strings_.index(f.name);
    if (has_mapping(f)) {
      loc.filename = strings_.index(f.dso);
      loc.mapping_id = mapping_ids_.at(f.dso);
      mappings_[loc.mapping_id - 1].add(f);
    }
    locations_.push_back(loc);
    return it->second;
  }

  // A name of the path that is no frame: a thread's comm, "--", "[unknown waker]". Its
  // location has no mapping and no address, only a function of that name.
  uint64_t marker_id(const std::string& name) {
    auto [it, added] = marker_ids_.try_emplace(name, locations_.size() + 1);
    if (!added) return it->second;
    LocationEntry loc;
    loc.name = strings_.index(name);
    locations_.push_back(loc);
    return it->second;
  }

  // pprof takes mapping 1 for the main binary (the "File:" of its reports): executables come
  // first, then shared libraries, then code in no file of its own (a memfd, a deleted file:
  // a JIT's, a container runtime's sealed copy of itself), then the kernel and other pseudo
  // files ("[vdso]"); each by
  // the time of the stacks that use them, most first (in a system-wide recording, the
  // program that waits most, not whichever process came first), then in the order the stacks
  // first use them.
  void number_mappings() {
    std::vector<std::string> dsos;
    struct Use {
      uint64_t ns = 0;
      size_t last_stack = SIZE_MAX;  // each stack's time counted once per file
    };
    std::map<std::string, Use> uses;
    for (size_t i = 0; i < profile_.stacks.size(); ++i) {
      const Stack& s = profile_.stacks[i];
      walk_offwake_path(s, !profile_.wakers_dropped, [&](std::string, PathPart, const Frame* f) {
        if (!f || !has_mapping(*f)) return;
        auto [it, first_use] = uses.try_emplace(f->dso);
        if (first_use) dsos.push_back(f->dso);
        Use& u = it->second;
        if (u.last_stack != i) u.ns += s.ns;
        u.last_stack = i;
      });
    }
    std::stable_sort(dsos.begin(), dsos.end(), [&](const std::string& a, const std::string& b) {
      if (mapping_rank(a) != mapping_rank(b)) return mapping_rank(a) < mapping_rank(b);
      return uses.at(a).ns > uses.at(b).ns;
    });
    for (const std::string& dso : dsos) {
      mappings_.push_back(MappingEntry{dso});
      mapping_ids_[dso] = mappings_.size();
    }
  }

  static bool has_mapping(const Frame& f) { return !f.dso.empty() && f.dso != kUnknownDso; }

  static int mapping_rank(const std::string& dso) {
    if (dso[0] == '[') return 3;
    if (dso.starts_with("memfd:") || dso.starts_with("/memfd:") || dso.ends_with(" (deleted)")) return 2;
    const std::string_view base = std::string_view(dso).substr(dso.rfind('/') + 1);
    // "libc.so.6", "ld-linux-x86-64.so.2", "libfoo.so"
    for (size_t at = base.find(".so"); at != std::string_view::npos; at = base.find(".so", at + 1))
      if (at + 3 == base.size() || base[at + 3] == '.') return 1;
    return 0;
  }

  // The build id perf.data's header has for this file name (the kernel's is "[kernel.kallsyms]").
  std::string build_id(const std::string& dso) const {
    for (const auto& e : profile_.info.build_ids)
      if (e.filename == dso && !e.build_id.empty()) return e.build_id.hex();
    return "";
  }

  ProtoWriter mapping(size_t i) {
    const MappingEntry& m = mappings_[i];
    ProtoWriter w;
    w.uint_field(PbMapping::kId, i + 1);
    if (m.seen && m.one_bias) {
      w.uint_field(PbMapping::kMemoryStart, m.lo);
      w.uint_field(PbMapping::kMemoryLimit, m.hi);
      // "[kernel.kallsyms]", "[vdso]" and the like are not mapped from a file: no offset.
      if (m.dso[0] != '[') w.uint_field(PbMapping::kFileOffset, m.offset_at_lo);
    }
    w.int_field(PbMapping::kFilename, strings_.index(m.dso));
    const std::string id = build_id(m.dso);
    if (!id.empty()) w.int_field(PbMapping::kBuildId, strings_.index(id));
    // Frames are symbolized already (build ids checked): pprof must not symbolize them again
    // from whatever binaries the reading machine has.
    w.bool_field(PbMapping::kHasFunctions, true);
    return w;
  }

  ProtoWriter location(size_t i) const {
    const LocationEntry& l = locations_[i];
    ProtoWriter line;
    line.uint_field(PbLine::kFunctionId, i + 1);  // one function per location
    ProtoWriter w;
    w.uint_field(PbLocation::kId, i + 1);
    w.uint_field(PbLocation::kMappingId, l.mapping_id);
    w.uint_field(PbLocation::kAddress, l.address);
    w.message_field(PbLocation::kLine, line);
    return w;
  }

  ProtoWriter function(size_t i) const {
    const LocationEntry& l = locations_[i];
    ProtoWriter w;
    w.uint_field(PbFunction::kId, i + 1);
    w.int_field(PbFunction::kName, l.name);
    w.int_field(PbFunction::kSystemName, l.name);  // perf's names are already demangled
    w.int_field(PbFunction::kFilename, l.filename);
    return w;
  }

  // Fields after the string table: times, period, comments, default sample type.
  ProtoWriter header_tail() {
    const perfdata::FileInfo& info = profile_.info;
    ProtoWriter w;
    // Sample times are CLOCK_MONOTONIC, which says nothing about the wall clock time_nanos
    // wants: it is left out (0). The duration is the recording's own (perf offwake record's
    // duration_ns counter, in a file's feature sections); without it (a stream has none),
    // the time its timestamps span (recorded_span).
    uint64_t duration = counter(profile_, "duration_ns");
    if (!duration) duration = perfdata::recorded_span(info);
    w.int_field(PbProfile::kDurationNanos, static_cast<int64_t>(duration));
    w.message_field(PbProfile::kPeriodType, value_type(off_cpu_, nanoseconds_));
    w.int_field(PbProfile::kPeriod, 1);  // every nanosecond blocked is counted, none sampled
    // Comments (go tool pprof -raw and -comments show them): what was recorded, and where.
    std::vector<uint64_t> comments;
    std::string cmd;
    for (const auto& a : info.host.cmdline) cmd += (cmd.empty() ? "" : " ") + a;
    if (!cmd.empty()) comments.push_back(static_cast<uint64_t>(strings_.index(cmd)));
    if (!info.host.hostname.empty()) {
      std::string host = "host " + info.host.hostname;
      if (!info.host.os_release.empty()) host += " (Linux " + info.host.os_release + ")";
      comments.push_back(static_cast<uint64_t>(strings_.index(host)));
    }
    // What recording it cost, for a back end that keeps each window's profile.
    if (std::string bpf = bpf_time_text(profile_); !bpf.empty())
      comments.push_back(static_cast<uint64_t>(strings_.index(bpf)));
    w.packed_field(PbProfile::kComment, comments);
    w.int_field(PbProfile::kDefaultSampleType, off_cpu_);
    return w;
  }

  const Profile& profile_;
  bool on_cpu_ = false;
  StringTable strings_;
  int64_t off_cpu_ = 0, nanoseconds_ = 0, blocks_ = 0, count_ = 0, cpu_ = 0;
  std::map<Frame, uint64_t> location_ids_;
  std::map<std::string, uint64_t> marker_ids_;
  std::vector<LocationEntry> locations_;
  std::map<std::string, uint64_t> mapping_ids_;
  std::vector<MappingEntry> mappings_;
};

}  // namespace

perfdata::Bytes encode_pprof_proto(const Profile& profile) { return PprofEncoder(profile).encode(); }

Result<perfdata::Bytes> encode_pprof(const Profile& profile) {
  const perfdata::Bytes proto = encode_pprof_proto(profile);
  auto gz = gzip(proto);
  if (!gz) return gz.error().context("compressing the pprof profile");
  return gz;
}

}  // namespace offwake::report
