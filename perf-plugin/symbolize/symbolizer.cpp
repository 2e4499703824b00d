#include "symbolize/symbolizer.h"

#include <map>
#include <unordered_map>

#include "symbolize/dso.h"
#include "symbolize/process_maps.h"

namespace offwake::symbolize {
namespace {

const std::string kUnknown = "[unknown]";
const std::string kKernelDso = "[kernel.kallsyms]";
constexpr uint32_t kNoPid = static_cast<uint32_t>(-1);

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

// perf's map kinds by file name: JIT code perf finds in /tmp/perf-PID.map, and pseudo
// mappings whose addresses are their own.
bool is_anon(const std::string& f) {
  return starts_with(f, "//anon") || starts_with(f, "/dev/zero") || starts_with(f, "/anon_hugepage");
}
bool is_no_dso(const std::string& f) {
  return starts_with(f, "[stack") || starts_with(f, "/SYSV") || f == "[heap]";
}

uint64_t hash_chain(const std::vector<Frame>& frames) {
  uint64_t h = 1469598103934665603ull;
  for (const Frame& f : frames) {
    h ^= f.ip + static_cast<uint64_t>(f.context);
    h *= 1099511628211ull;
    h ^= h >> 29;
  }
  return h;
}

// What one chain resolved to, and the counters it adds each time it is used.
struct CachedChain {
  std::vector<Frame> frames;
  std::vector<ResolvedFrame> resolved;
  Symbolizer::Stats stats;
};

struct Process {
  ProcessMaps maps;
  std::unordered_multimap<uint64_t, CachedChain> chains;  // by hash_chain
};

struct Thread {
  std::string comm;
  bool comm_set = false;
};

void add(Symbolizer::Stats& to, const Symbolizer::Stats& d) {
  to.frames += d.frames;
  to.unknown_map += d.unknown_map;
  to.unknown_symbol += d.unknown_symbol;
  to.build_id_mismatch += d.build_id_mismatch;
  to.missing_file += d.missing_file;
}

}  // namespace

struct Symbolizer::Impl {
  SymbolizerOptions options;
  std::map<std::string, perfdata::BuildId> build_ids;     // by file name, from the header
  std::map<std::string, std::unique_ptr<Dso>> dsos;       // by name + '\0' + build id
  std::unordered_map<uint32_t, Process> processes;
  std::unordered_map<uint32_t, Thread> threads;
  Dso* kernel = nullptr;
  uint64_t kernel_start = 0;  // of the "[kernel.kallsyms]_text" mapping, 0 if none was seen
  uint64_t kernel_end = 0;

  Dso* dso(const std::string& name, perfdata::BuildId id, DsoKind kind) {
    std::string key = name;
    key.push_back('\0');
    key += id.hex();
    auto& d = dsos[key];
    if (!d) d = std::make_unique<Dso>(name, id, kind, options.kallsyms);
    return d.get();
  }

  Dso* kernel_dso() {
    if (!kernel) {
      auto it = build_ids.find(kKernelDso);
      kernel = dso(kKernelDso, it == build_ids.end() ? perfdata::BuildId{} : it->second, DsoKind::kKernel);
    }
    return kernel;
  }

  void observe_mmap(const perfdata::Mmap2Record& m) {
    const uint16_t mode = m.cpumode & PERF_RECORD_MISC_CPUMODE_MASK;
    if (m.pid == kNoPid || mode == PERF_RECORD_MISC_KERNEL) {
      if (starts_with(m.filename, "[kernel.kallsyms]")) {
        kernel_start = m.start;
        kernel_end = m.len > UINT64_MAX - m.start ? UINT64_MAX : m.start + m.len;
      }
      return;  // kernel modules resolve through kallsyms too
    }
    Mapping map{m.start, m.start + m.len, m.pgoff, nullptr, false};
    if (is_anon(m.filename)) {
      map.identity = true;
      map.dso = dso("/tmp/perf-" + std::to_string(m.pid) + ".map", {}, DsoKind::kPerfMap);
    } else if (is_no_dso(m.filename)) {
      map.identity = true;
      map.dso = dso(m.filename, {}, DsoKind::kNoFile);
    } else {
      perfdata::BuildId id = m.build_id;
      if (id.empty()) {
        auto it = build_ids.find(m.filename);
        if (it != build_ids.end()) id = it->second;
      }
      if (m.filename == "[vdso]") map.pgoff = 0;
      map.dso = dso(m.filename, id, DsoKind::kElf);
    }
    Process& p = processes[m.pid];
    p.maps.insert(map);
    p.chains.clear();
  }

  void observe_fork(const perfdata::TaskRecord& t) {
    Thread child;
    if (auto parent = threads.find(t.ptid); parent != threads.end() && parent->second.comm_set) child = parent->second;
    threads[t.tid] = child;
    if (t.pid != t.ppid) {
      Process& p = processes[t.pid];
      auto parent = processes.find(t.ppid);
      p.maps = parent == processes.end() ? ProcessMaps{} : parent->second.maps;
      p.chains.clear();
    }
  }

  // `return_address`: ip is where a call returns to (a caller's frame), not where code ran.
  ResolvedFrame resolve(uint32_t pid, uint64_t ip, FrameContext context, Stats& stats, bool return_address = false) {
    ResolvedFrame f;
    f.ip = ip;
    f.dso = kUnknown;
    ++stats.frames;
    Dso* d = nullptr;
    if (context == FrameContext::kKernel) {
      if (ip < kernel_start) {
        ++stats.unknown_map;
        return f;
      }
      d = kernel_dso();
      f.dso_addr = ip;
      f.map_start = kernel_start;
      f.map_end = kernel_end;
    } else if (context == FrameContext::kUser) {
      auto p = processes.find(pid);
      const Mapping* m = p == processes.end() ? nullptr : p->second.maps.find(ip);
      if (!m) {
        ++stats.unknown_map;
        return f;
      }
      d = m->dso;
      f.dso_addr = m->dso_addr(ip);
      f.map_start = m->start;
      f.map_end = m->end;
    } else {
      ++stats.unknown_map;  // guests and hypervisor: no maps for them in our files
      return f;
    }
    f.mapped = true;
    f.dso = d->name();
    f.build_id = &d->build_id();
    switch (d->state()) {
      case DsoState::kMissing: ++stats.missing_file; return f;
      case DsoState::kBuildIdMismatch: ++stats.build_id_mismatch; return f;
      default: break;
    }
    f.sym = d->find(f.dso_addr);
    if (!f.sym) {
      ++stats.unknown_symbol;
      if (!options.name_unnamed) return f;
      const uint64_t call = f.dso_addr - (return_address && f.dso_addr > 0 ? 1 : 0);
      f.function = call != f.dso_addr ? d->find(call) : nullptr;
      if (!f.function) f.function = d->find_unnamed(call);
      return f;
    }
    f.function = f.sym;
    f.symoff = f.dso_addr - f.sym->start;
    return f;
  }
};

Symbolizer::Symbolizer() : Symbolizer(SymbolizerOptions{}) {}
Symbolizer::Symbolizer(SymbolizerOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->options = std::move(options);
}
Symbolizer::~Symbolizer() = default;
Symbolizer::Symbolizer(Symbolizer&&) noexcept = default;
Symbolizer& Symbolizer::operator=(Symbolizer&&) noexcept = default;

void Symbolizer::add_build_ids(const std::vector<perfdata::BuildIdEntry>& entries) {
  for (const auto& e : entries) {
    if (!e.build_id.empty()) impl_->build_ids[e.filename] = e.build_id;
  }
}

void Symbolizer::observe(const perfdata::Record& record) {
  if (auto* c = std::get_if<perfdata::CommRecord>(&record)) {
    Thread& t = impl_->threads[c->tid];
    t.comm = c->comm;
    t.comm_set = true;
  } else if (auto* m = std::get_if<perfdata::Mmap2Record>(&record)) {
    impl_->observe_mmap(*m);
  } else if (auto* t = std::get_if<perfdata::TaskRecord>(&record)) {
    if (!t->exit) impl_->observe_fork(*t);  // an exited thread keeps its comm and maps
  }
}

const std::string& Symbolizer::comm(uint32_t tid) const {
  auto it = impl_->threads.find(tid);
  return it != impl_->threads.end() && it->second.comm_set ? it->second.comm : kUnknown;
}

bool Symbolizer::has_comm(uint32_t tid) const {
  auto it = impl_->threads.find(tid);
  return it != impl_->threads.end() && it->second.comm_set;
}

std::string Symbolizer::thread_name(uint32_t tid) const {
  return has_comm(tid) ? comm(tid) : ":" + std::to_string(tid);
}

ResolvedFrame Symbolizer::resolve(uint32_t pid, uint64_t ip, FrameContext context) {
  return impl_->resolve(pid, ip, context, stats_);
}

std::vector<ResolvedFrame> Symbolizer::resolve(uint32_t pid, const Callchain& chain) {
  return resolve_cached(pid, chain);
}

const std::vector<ResolvedFrame>& Symbolizer::resolve_cached(uint32_t pid, const Callchain& chain) {
  Process& p = impl_->processes[pid];
  const uint64_t h = hash_chain(chain.frames());
  auto [first, last] = p.chains.equal_range(h);
  for (auto it = first; it != last; ++it) {
    if (it->second.frames == chain.frames()) {
      add(stats_, it->second.stats);
      return it->second.resolved;
    }
  }
  CachedChain c;
  c.frames = chain.frames();
  c.resolved.reserve(chain.size());
  const Frame* prev = nullptr;
  for (const Frame& f : chain.frames()) {
    // Past the first frame of its context, a frame is a caller's: its ip a return address.
    c.resolved.push_back(impl_->resolve(pid, f.ip, f.context, c.stats, prev && prev->context == f.context));
    prev = &f;
  }
  add(stats_, c.stats);
  return p.chains.emplace(h, std::move(c))->second.resolved;
}

}  // namespace offwake::symbolize
