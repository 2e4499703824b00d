#include "samples/aggregate_samples.h"

#include <algorithm>

#include "callchain/tracing_frames.h"

namespace offwake {

static bool tracing_frame(const Kallsyms& kallsyms, uint64_t ip) {
  const KernelSymbol* sym = kallsyms.find(ip);
  return sym && is_tracing_frame(sym->name);
}

Callchain AggregateSamples::build(StackIds ids) {
  sample_stacks_ += (ids.kernel != kNoStack) + (ids.user != kNoStack);
  Callchain chain = builder_.build(ids);
  if (kallsyms_) chain.drop_leading(FrameContext::kKernel, [&](uint64_t ip) { return tracing_frame(*kallsyms_, ip); });
  return chain;
}

perfdata::SampleRecord AggregateSamples::sample(uint64_t id, uint32_t pid, uint32_t tid, uint64_t time,
                                                uint64_t period, StackIds stacks) {
  perfdata::SampleRecord s;
  s.id = id;
  s.pid = pid;
  s.tid = tid;
  s.time = time;
  s.period = period;
  s.callchain = build(stacks);
  s.ip = s.callchain.empty() ? 0 : s.callchain.frames().front().ip;
  return s;
}

// Interrupt wakers carry the interrupt's kernel stack; they and unknown wakers belong to a
// pseudo-thread whose comm names them. An interrupt's stack ends at the interrupt's handler
// entry (sysvec_*, common_interrupt, ...), the frame above its entry stub (asm_sysvec_*,
// asm_common_interrupt, ...): below that is whatever code the interrupt hit, which woke
// nobody and would split one waker into as many stacks. The BPF programs already end there
// the stacks of interrupts they remember (first_entry_stub, bpf-progs/irq.bpf.h); a stack
// from the tracepoint back end, and one unwound whole, go on, and are cut here the same way.
perfdata::SampleRecord AggregateSamples::waker_sample(uint64_t id, uint32_t flags, uint32_t tgid, uint32_t tid,
                                                      uint64_t time, uint64_t period, StackIds stacks) {
  if (const PseudoWaker* p = pseudo_waker(flags)) tgid = tid = p->tid;
  perfdata::SampleRecord s = sample(id, tgid, tid, time, period, stacks);
  if ((flags & OFFWAKE_WAKER_IRQ_MASK) && kallsyms_) {
    const auto& frames = s.callchain.frames();
    for (size_t i = 0; i < frames.size(); ++i) {
      const KernelSymbol* sym = frames[i].context == FrameContext::kKernel ? kallsyms_->find(frames[i].ip) : nullptr;
      if (sym && is_interrupt_entry_stub(sym->name)) {
        Callchain cut;
        for (size_t j = 0; j < i; ++j) cut.push(frames[j].ip, frames[j].context);
        s.callchain = std::move(cut);
        break;
      }
    }
  }
  if (s.callchain.empty()) s.misc = PERF_RECORD_MISC_KERNEL;
  return s;
}

std::vector<perfdata::SampleRecord> AggregateSamples::convert(const Aggregate& a, uint64_t fallback_time) {
  const offwake_key& k = a.key;
  // A time at which both threads were who the key says: perf resolves comm, maps and exits
  // as of the sample's time. The waker and hop samples have the same time, so that they stay
  // next to their blocked sample when perf sorts.
  const uint64_t time = aggregate_time(a, fallback_time);
  const uint64_t period = a.value.total_ns;
  std::vector<perfdata::SampleRecord> out;
  out.push_back(sample(ids_.time, k.tgid, k.tid, time, period, blocked_stacks(k)));
  out[0].cgroup = k.cgroup_id;
  OffwakeRaw raw;
  raw.state = k.state;
  raw.count = a.value.count;
  raw.max_ns = a.value.max_ns;
  raw.waker_flags = k.waker_flags;
  raw.waker_cgroup = k.waker_cgroup_id;
  if (sample_period_ns_) {
    raw.sample_period_ns = sample_period_ns_;
    raw.sampled = a.value.sampled;
    raw.sampled_ns = a.value.sampled_ns;
  }
  const uint32_t hops = ids_.hop_blocked ? std::min<uint32_t>(k.chain.hops, OFFWAKE_MAX_CHAIN_DEPTH - 1) : 0;
  if (ids_.hop_blocked) raw.chain = make_chain(hops, k.chain.end);
  std::vector<OffwakeRawHop> raw_hops;
  raw_hops.reserve(hops);
  for (uint32_t i = 0; i < hops; ++i) raw_hops.push_back({k.chain.hop[i].state, k.chain.hop[i].waker_flags});
  out[0].raw = encode_offwake_raw(raw, raw_hops);

  out.push_back(waker_sample(ids_.waker, k.waker_flags, k.waker_tgid, k.waker_tid, time, period,
                             waker_stacks(k)));
  out.back().cgroup = k.waker_cgroup_id;
  // Hop k's block is the previous hop's waker's (in the cgroup it woke from).
  uint32_t tgid = k.waker_tgid, tid = k.waker_tid;
  uint64_t cgroup = k.waker_cgroup_id;
  for (uint32_t i = 0; i < hops; ++i) {
    const offwake_hop& h = k.chain.hop[i];
    out.push_back(sample(ids_.hop_blocked, tgid, tid, time, period, {h.kern_stack_id, h.user_stack_id}));
    out.back().cgroup = cgroup;
    out.push_back(waker_sample(ids_.hop_waker, h.waker_flags, h.waker_tgid, h.waker_tid, time, period,
                               {h.waker_kern_stack_id, h.waker_user_stack_id}));
    out.back().cgroup = h.waker_cgroup_id;
    tgid = h.waker_tgid;
    tid = h.waker_tid;
    cgroup = h.waker_cgroup_id;
  }
  return out;
}

std::vector<perfdata::SampleRecord> AggregateSamples::convert(const offwake_event& e) {
  const uint64_t ns = e.end_ns > e.start_ns ? e.end_ns - e.start_ns : 0;
  Aggregate one{e.key, offwake_value{ns, 1, ns, e.stamp_ns, 0, 0}};
  if (e.flags & OFFWAKE_EVENT_SAMPLED) {
    one.value.total_ns = sample_period_ns_;
    one.value.sampled = 1;
    one.value.sampled_ns = ns;
  }
  auto samples = convert(one, e.end_ns);
  for (auto& s : samples) s.cpu = e.cpu;
  return samples;
}

}  // namespace offwake
