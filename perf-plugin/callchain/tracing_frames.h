// The kernel functions between the scheduler's tracepoints and whatever reads them: the
// tracepoint's iterator, perf's tracepoint handler, and the BPF trampoline and program. They
// sit at the leaf of every stack taken there, in a number that varies from one unwind to the
// next, and would split one blocking stack into several: both back ends (the BPF programs'
// stacks and perf's tracepoint callchains, recorded or converted) drop them. One list, so that
// the back ends cannot disagree.
#pragma once

#include <string_view>

namespace offwake {

inline bool is_tracing_frame(std::string_view kernel_symbol) {
  static constexpr std::string_view kPrefixes[] = {
      "__traceiter_",  // the tracepoint's iterator
      "perf_trace_", "perf_tp_event", "trace_event_",  // perf's tracepoint events
      "__bpf_trace_", "bpf_trace_run", "bpf_prog_",  // a BPF program attached to the tracepoint
  };
  for (std::string_view p : kPrefixes)
    if (kernel_symbol.substr(0, p.size()) == p) return true;
  return false;
}

// An interrupt's or exception's entry stub (asm_sysvec_apic_timer_interrupt,
// asm_common_interrupt, ...: x86-64's irqentry text): in a waker's kernel stack, what lies
// below it is whatever the interrupt came in on, which woke no one. The conversion cuts an
// interrupt waker's stack there, and a wakeup in a softirq with none below it is the task's
// own (offwake_softirq_is_tasks). The BPF programs tell the same from the irqentry text's
// bounds (bpf-progs/irq.bpf.h).
inline bool is_interrupt_entry_stub(std::string_view kernel_symbol) { return kernel_symbol.substr(0, 4) == "asm_"; }

}  // namespace offwake
