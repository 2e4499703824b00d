/* The rules that the BPF programs (offwake.bpf.c) and the tracepoint back end's pairer
 * (perf-plugin/sched/block_pairer.cpp) must both apply, written once: C, fixed-width types
 * only, compiled by clang -target bpf and by the C++ compiler alike. Always inlined, so that
 * the BPF programs make no call for them. */
#ifndef OFFWAKE_BLOCK_RULES_H
#define OFFWAKE_BLOCK_RULES_H

#include <linux/types.h>

#include "offwake.h"

#define OFFWAKE_RULE static inline __attribute__((__always_inline__))

/* The state a block is recorded with, from the task's state at switch-out: the one state the
 * sched_switch tracepoint reports for it (prev_state, as 'perf script' shows it: S, D, I, ...;
 * __trace_sched_switch_state() and __task_state_index() in the kernel), in OFFWAKE_STATE_*
 * terms. TASK_IDLE exactly (0x402) is I; TASK_RTLOCK_WAIT exactly is D; any other state is its
 * highest TASK_REPORT bit, so that the modifiers go: an interruptible freezable sleep
 * (TASK_FREEZABLE, 0x2001) is 0x1, TASK_KILLABLE (0x102) 0x2. The BPF programs get the
 * scheduler's raw value and reduce it here; the tracepoint back end decodes a value the kernel
 * reduced already, which this leaves as it is. Both apply it before any rule below, so that
 * they keep the same blocks and store the same state. */
OFFWAKE_RULE __u32 offwake_block_state(__u32 state)
{
	__u32 r;

	if (state == (OFFWAKE_STATE_UNINTERRUPTIBLE | OFFWAKE_STATE_NOLOAD))
		return state;
	if (state == OFFWAKE_STATE_RTLOCK_WAIT)
		return OFFWAKE_STATE_UNINTERRUPTIBLE;
	/* The highest of the 7 report bits (the kernel's fls()), without a loop. */
	r = state & OFFWAKE_STATE_REPORT;
	r |= r >> 1;
	r |= r >> 2;
	r |= r >> 4;
	return r ^ (r >> 1);
}

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

/* Time-weighted sampling (--sample-period P, `period_ns`; 0: off). A block of length d is kept
 * with probability min(1, d/P) and, when kept, weighs max(d, P) nanoseconds: the expected
 * recorded time of every stack is its true blocked time, and blocks of P or longer are all
 * kept, at their length. The draw is made when the block starts: a threshold u, uniform in
 * [0, P) (`random`: 32 random bits, scaled to the period: u = floor(random * P / 2^32), so
 * that P(u < x) is x/P within 2^-32, with one random draw and no division), and the block is
 * kept once its length reaches u. So the decision only ever turns from "not yet" to "kept" as
 * the block goes on, and each stack is taken as soon as the block is known to be kept, as
 * with --min-block, which u joins here: a block is kept once it is at least this long. */
OFFWAKE_RULE __u64 offwake_keep_threshold(__u64 min_ns, __u64 period_ns, __u32 random)
{
	/* random * P >> 32 without overflow, P split in its 32-bit halves. */
	__u64 u = (__u64)random * (period_ns >> 32) + (((__u64)random * (period_ns & 0xffffffffu)) >> 32);

	return u > min_ns ? u : min_ns;
}

/* The nanoseconds a kept block of `delta_ns` adds to its stack's time (offwake_keep_threshold):
 * its length, or the period when it is shorter (it stands for the blocks not kept). */
OFFWAKE_RULE __u64 offwake_block_weight(__u64 delta_ns, __u64 period_ns)
{
	return delta_ns < period_ns ? period_ns : delta_ns;
}

/* Whether stacks are taken lazily: only once a block is known to be kept (a duration filter,
 * or sampling, drops blocks), not when it starts. `eager` (--eager) takes them at once. */
OFFWAKE_RULE int offwake_lazy_capture(int eager, __u64 min_ns, __u64 max_ns, __u64 period_ns)
{
	return !eager && (min_ns || max_ns || period_ns);
}

/* Whether a wakeup (sched_waking) may end a block of its wakee: the wakee is asleep (`asleep`:
 * dequeued, or its dequeue delayed; for the tracepoint back end, in an open block), or still
 * on a CPU (`on_cpu`). There it may be on its way into the scheduler with its dequeue not done
 * yet: sched_waking fires before try_to_wake_up() takes that CPU's runqueue lock, and the
 * kernel then finds the wakee dequeued and wakes it from the block its switch-out starts (the
 * wakeup is then the block's: TB_WAKE_ON_CPU, wake_on_cpu). Only a task queued to run and not
 * running is just runnable: its wakeup ends nothing. (Taking every queued wakee for runnable
 * left 212 blocks in 5 s of nginx under wrk without a waker, 2026-12-06.) */
OFFWAKE_RULE int offwake_wakeup_may_end_block(int asleep, int on_cpu)
{
	return asleep || on_cpu;
}

/* Whether the recorded wakeup (`woken`: one is recorded, at `wake_ts`; `on_cpu`: it came while
 * the task was still on a CPU, on its way into the scheduler) ended the open block that
 * started at `block_ts`. `ran_since`: the task has been seen running with that block still
 * open, its switch-in not traced (a late end); else the block is ended by its switch-in or by
 * the stop, with the task off the CPU all along.
 *
 * A wakeup while the task was asleep is this block's if it came during it; an older one is
 * left over. A wakeup on the way in is the block's whose switch-out followed it: its time is
 * no guide while the task has not run since, because the waker's clock races that switch-out
 * (it reads on_cpu, then the time). Once the task has run again, one after the block started
 * came on the way into the next block, and one before it still belongs to this block. */
OFFWAKE_RULE int offwake_wakeup_of_block(int woken, int on_cpu, __u64 wake_ts, __u64 block_ts, int ran_since)
{
	if (!woken)
		return 0;
	if (on_cpu)
		return !ran_since || wake_ts <= block_ts;
	return wake_ts >= block_ts;
}

/* When a block whose switch-in was not traced ended, the task seen running at `now`: at its
 * own wakeup (`own`, offwake_wakeup_of_block) if that came before now, but not before the
 * block started (a wakeup on the way in: it never slept); else now, an upper bound. */
OFFWAKE_RULE __u64 offwake_late_block_end(int own, __u64 wake_ts, __u64 block_ts, __u64 now)
{
	if (!own || wake_ts > now)
		return now;
	return wake_ts > block_ts ? wake_ts : block_ts;
}

/* Whether a wakeup in a softirq (OFFWAKE_WAKER_SOFTIRQ) is the current task's rather than the
 * softirq context's. A softirq runs at the end of a hard interrupt, which came in on whatever
 * was running and woke no one (`interrupt_below`: the interrupt's entry is below the softirq
 * on the stack), or in ksoftirqd and other kernel threads for work of any source; those are
 * named "[softirq]". A user task runs one itself when it enables bottom halves again
 * (local_bh_enable(): on x86-64 on the CPU's interrupt stack, nothing of an interrupt below):
 * then what its own system call raised (a packet sent over loopback, delivered in the
 * sender's call) wakes the receiver, and the sender is the waker (OFFWAKE_WAKER_OWN_SOFTIRQ).
 * The softirq serves whatever is pending, usually the task's own: its kernel stack, whole
 * down to the system call, says what (process_backlog for loopback, a driver's poll for a
 * packet an interrupt left pending while the task had bottom halves off). */
OFFWAKE_RULE int offwake_softirq_is_tasks(int interrupt_below, int kernel_thread)
{
	return !interrupt_below && !kernel_thread;
}

/* The comms of the pseudo-threads of wakers that are interrupt context rather than a thread:
 * the BPF programs and the tracepoint back end write them into the key, the perf.data writer
 * names the pseudo-threads with them. At most OFFWAKE_COMM_LEN - 1 characters. */
#define OFFWAKE_HARDIRQ_COMM "[hardirq]"
#define OFFWAKE_SOFTIRQ_COMM "[softirq]"
#define OFFWAKE_NMI_COMM "[nmi]"

/* Padded past OFFWAKE_COMM_LEN, so that copying a whole comm from it reads only the literal:
 * the compiler makes that copy a few constant stores. */
#define OFFWAKE_PADDED_COMM(name) name "\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0"

/* The comm of a waker that is interrupt context `irq` (OFFWAKE_WAKER_HARDIRQ, _SOFTIRQ or
 * _NMI): OFFWAKE_HARDIRQ_COMM, _SOFTIRQ_COMM or _NMI_COMM, zero-padded to OFFWAKE_COMM_LEN
 * bytes. */
OFFWAKE_RULE void offwake_irq_waker_comm(__u32 irq, char comm[OFFWAKE_COMM_LEN])
{
	if (irq == OFFWAKE_WAKER_HARDIRQ)
		__builtin_memcpy(comm, OFFWAKE_PADDED_COMM(OFFWAKE_HARDIRQ_COMM), OFFWAKE_COMM_LEN);
	else if (irq == OFFWAKE_WAKER_SOFTIRQ)
		__builtin_memcpy(comm, OFFWAKE_PADDED_COMM(OFFWAKE_SOFTIRQ_COMM), OFFWAKE_COMM_LEN);
	else
		__builtin_memcpy(comm, OFFWAKE_PADDED_COMM(OFFWAKE_NMI_COMM), OFFWAKE_COMM_LEN);
}

#undef OFFWAKE_PADDED_COMM
#undef OFFWAKE_RULE

#endif /* OFFWAKE_BLOCK_RULES_H */
