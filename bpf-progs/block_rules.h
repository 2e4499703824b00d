/* The rules that the BPF programs (offwake.bpf.c) and the tracepoint back end's pairer
 * (perf-plugin/sched/block_pairer.cpp) must both apply, written once: C, fixed-width types
 * only, compiled by clang -target bpf and by the C++ compiler alike. Always inlined, so that
 * the BPF programs make no call for them. */
#ifndef OFFWAKE_BLOCK_RULES_H
#define OFFWAKE_BLOCK_RULES_H

#include <linux/types.h>

#include "offwake.h"

#define OFFWAKE_RULE static inline __attribute__((__always_inline__))

/* Whether a task switched out in `state` (prev_state, OFFWAKE_STATE_*) starts a block that
 * --state records (`mask`, OFFWAKE_WANT_*): nonzero if so. TASK_IDLE (D with NOLOAD) is
 * "I", not "D". A task that is still runnable (state 0: preempted, or a signal pending)
 * starts none. */
OFFWAKE_RULE __u32 offwake_state_wanted(__u32 state, __u32 mask)
{
	if (state & OFFWAKE_STATE_UNINTERRUPTIBLE) {
		if (state & OFFWAKE_STATE_NOLOAD)
			return mask & OFFWAKE_WANT_I;
		return mask & OFFWAKE_WANT_D;
	}
	if (state & OFFWAKE_STATE_INTERRUPTIBLE)
		return mask & OFFWAKE_WANT_S;
	return 0;
}

/* Whether a block of `delta_ns` passes --min-block and --max-block (`max_ns` 0: no limit). */
OFFWAKE_RULE int offwake_duration_kept(__u64 delta_ns, __u64 min_ns, __u64 max_ns)
{
	return delta_ns >= min_ns && !(max_ns && delta_ns > max_ns);
}

/* The comm of a waker that is interrupt context `irq` (OFFWAKE_WAKER_HARDIRQ, _SOFTIRQ or
 * _NMI) rather than a thread: "[hardirq]", "[softirq]" or "[nmi]", zero-padded to
 * OFFWAKE_COMM_LEN bytes. */
OFFWAKE_RULE void offwake_irq_waker_comm(__u32 irq, char comm[OFFWAKE_COMM_LEN])
{
	if (irq == OFFWAKE_WAKER_HARDIRQ)
		__builtin_memcpy(comm, "[hardirq]\0\0\0\0\0\0", OFFWAKE_COMM_LEN);
	else if (irq == OFFWAKE_WAKER_SOFTIRQ)
		__builtin_memcpy(comm, "[softirq]\0\0\0\0\0\0", OFFWAKE_COMM_LEN);
	else
		__builtin_memcpy(comm, "[nmi]\0\0\0\0\0\0\0\0\0\0", OFFWAKE_COMM_LEN);
}

#undef OFFWAKE_RULE

#endif /* OFFWAKE_BLOCK_RULES_H */
