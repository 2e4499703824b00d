#include "record/aggregate_samples.h"

namespace offwake {

const PseudoWaker* pseudo_waker(uint32_t flags) {
  if (flags & OFFWAKE_WAKER_STILL_BLOCKED) return &kStillBlocked;
  if (flags & OFFWAKE_WAKER_NONE) return &kUnknownWaker;
  if (flags & OFFWAKE_WAKER_EARLY) return &kEarlyWaker;
  if (flags & OFFWAKE_WAKER_NMI) return &kNmiWaker;
  if (flags & OFFWAKE_WAKER_HARDIRQ) return &kHardirqWaker;
  if (flags & OFFWAKE_WAKER_SOFTIRQ) return &kSoftirqWaker;
  return nullptr;
}

static bool tracing_frame(const Kallsyms& kallsyms, uint64_t ip) {
  const KernelSymbol* sym = kallsyms.find(ip);
  if (!sym) return false;
  const std::string& n = sym->name;
  return n.rfind("__traceiter_", 0) == 0 || n.rfind("bpf_trace_run", 0) == 0 ||
         n.rfind("__bpf_trace_", 0) == 0 || n.rfind("bpf_prog_", 0) == 0;
}

Callchain AggregateSamples::build(StackIds ids) {
  sample_stacks_ += (ids.kernel != kNoStack) + (ids.user != kNoStack);
  Callchain chain = builder_.build(ids);
  if (kallsyms_) chain.drop_leading(FrameContext::kKernel, [&](uint64_t ip) { return tracing_frame(*kallsyms_, ip); });
  return chain;
}

std::pair<perfdata::SampleRecord, perfdata::SampleRecord> AggregateSamples::convert(const bpf::Aggregate& a,
                                                                                    uint64_t fallback_time) {
  const offwake_key& k = a.key;
  // A time at which both threads were who the key says: perf resolves comm, maps and exits
  // as of the sample's time. The waker sample has the same time, so that it stays next to
  // its blocked sample when perf sorts.
  const uint64_t time = a.value.last_ns ? a.value.last_ns : fallback_time;
  perfdata::SampleRecord blocked;
  blocked.id = ids_.time;
  blocked.pid = k.tgid;
  blocked.tid = k.tid;
  blocked.time = time;
  blocked.period = a.value.total_ns;
  blocked.callchain = build(bpf::blocked_stacks(k));
  blocked.ip = blocked.callchain.empty() ? 0 : blocked.callchain.frames().front().ip;
  OffwakeRaw raw;
  raw.state = k.state;
  raw.count = a.value.count;
  raw.max_ns = a.value.max_ns;
  raw.waker_flags = k.waker_flags;
  const auto* bytes = reinterpret_cast<const uint8_t*>(&raw);
  blocked.raw.assign(bytes, bytes + sizeof raw);

  // Interrupt wakers carry the interrupt's kernel stack; they and unknown wakers belong to a
  // pseudo-thread whose comm names them.
  perfdata::SampleRecord waker;
  waker.id = ids_.waker;
  waker.pid = k.waker_tgid;
  waker.tid = k.waker_tid;
  if (const PseudoWaker* p = pseudo_waker(k.waker_flags)) waker.pid = waker.tid = p->tid;
  waker.time = time;
  waker.period = a.value.total_ns;
  waker.callchain = build(bpf::waker_stacks(k));
  waker.ip = waker.callchain.empty() ? 0 : waker.callchain.frames().front().ip;
  if (waker.callchain.empty()) waker.misc = PERF_RECORD_MISC_KERNEL;
  return {std::move(blocked), std::move(waker)};
}

std::pair<perfdata::SampleRecord, perfdata::SampleRecord> AggregateSamples::convert(const offwake_event& e) {
  const uint64_t ns = e.end_ns > e.start_ns ? e.end_ns - e.start_ns : 0;
  bpf::Aggregate one{e.key, offwake_value{ns, 1, ns, e.stamp_ns}};
  auto samples = convert(one, e.end_ns);
  samples.first.cpu = samples.second.cpu = e.cpu;
  return samples;
}

}  // namespace offwake
