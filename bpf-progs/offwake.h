/* Structs shared by offwake.bpf.c and the user-space loader. Fixed-width types only, laid
 * out without holes: the aggregation key is hashed and compared byte for byte. */
#ifndef OFFWAKE_H
#define OFFWAKE_H

#include <linux/types.h>

#define OFFWAKE_COMM_LEN 16

/* A stack id half that was not asked for (the user stack of a kernel thread, or of a waker
 * in interrupt context). Same value as offwake::kNoStack on the user side. */
#define OFFWAKE_NO_STACK ((__s64)(-9223372036854775807LL - 1))

/* Task states at switch-out, as the scheduler passes them (include/linux/sched.h). The key
 * stores the raw value, so TASK_KILLABLE (WAKEKILL|UNINTERRUPTIBLE) and TASK_IDLE
 * (NOLOAD|UNINTERRUPTIBLE) show up as themselves; the state filter looks at the two bits. */
#define OFFWAKE_STATE_INTERRUPTIBLE 0x1u   /* "S" */
#define OFFWAKE_STATE_UNINTERRUPTIBLE 0x2u /* "D" */

/* offwake_key.waker_flags */
#define OFFWAKE_WAKER_HARDIRQ 0x1u /* woken from hard interrupt context (e.g. a timer) */
#define OFFWAKE_WAKER_SOFTIRQ 0x2u /* woken while serving a softirq (network, RCU, ...) */
#define OFFWAKE_WAKER_NMI 0x4u     /* woken from NMI context (should not happen) */
#define OFFWAKE_WAKER_NONE 0x8u    /* no sched_waking seen for this block: waker unknown */
#define OFFWAKE_WAKER_KTHREAD 0x10u /* the waker is a kernel thread (no user stack) */
#define OFFWAKE_WAKER_IRQ_UNKNOWN 0x20u /* interrupt context could not be checked */
#define OFFWAKE_WAKER_STILL_BLOCKED 0x40u /* the recording ended first: counted up to its end */
#define OFFWAKE_WAKER_IRQ_MASK (OFFWAKE_WAKER_HARDIRQ | OFFWAKE_WAKER_SOFTIRQ | OFFWAKE_WAKER_NMI)

/* One aggregation bucket: a blocked thread, the stacks it blocked in, and who woke it how.
 * In interrupt context the waker is not the interrupted task: waker_tgid/tid are 0, the
 * waker comm is "[hardirq]", "[softirq]" or "[nmi]", the waker kernel stack is the
 * interrupt path and the waker user stack is OFFWAKE_NO_STACK.
 * With OFFWAKE_WAKER_NONE all waker fields are zero and both waker stacks OFFWAKE_NO_STACK. */
struct offwake_key {
	__u32 tgid;              /* blocked process */
	__u32 tid;               /* blocked thread */
	__s64 kern_stack_id;     /* stack_trace map id, or -errno, or OFFWAKE_NO_STACK */
	__s64 user_stack_id;
	__u32 state;             /* prev_state at switch-out */
	__u32 waker_flags;       /* OFFWAKE_WAKER_* */
	__u32 waker_tgid;
	__u32 waker_tid;
	__s64 waker_kern_stack_id;
	__s64 waker_user_stack_id;
	char comm[OFFWAKE_COMM_LEN];       /* blocked thread, at switch-out */
	char waker_comm[OFFWAKE_COMM_LEN]; /* waker thread, at sched_waking */
};

struct offwake_value {
	__u64 total_ns; /* summed blocked time (switch-out to switch-in) */
	__u64 count;    /* number of blocks */
	__u64 max_ns;   /* longest single block; best effort (not atomic against a racing CPU) */
};

/* Timeline mode (offwake_config.timeline): one block, sent through the `events` ring buffer
 * instead of being added to a bucket. The key is filled exactly as in aggregated mode.
 * Times are bpf_ktime_get_ns() (CLOCK_MONOTONIC). The ring buffer is in reservation order,
 * which is end_ns order per thread but only roughly across threads (CPUs race, and a late
 * end is dated back to the recorded wakeup): a reader that needs global order must sort. */
struct offwake_event {
	struct offwake_key key;
	__u64 start_ns; /* switch-out */
	__u64 end_ns;   /* switch-in, or the late end (see late_ends) */
	__u32 cpu;      /* CPU on which the end was seen */
	__u32 reserved;
};

/* Index into the [2] arrays of struct offwake_counters. */
#define OFFWAKE_KERNEL 0
#define OFFWAKE_USER 1

/* Per-CPU counters, one element in a PERCPU_ARRAY; user space sums the CPUs. Stack
 * counters count every failed bpf_get_stackid() call, for blocked and waker stacks alike. */
struct offwake_counters {
	__u64 stack_collision[2];   /* -EEXIST: hash bucket owned by a different stack */
	__u64 stack_walk_failed[2]; /* -EFAULT: unwinder failed (user: no frame pointer, paged out) */
	__u64 stack_map_full[2];    /* -ENOMEM/-E2BIG: no free stack_trace map entry */
	__u64 stack_other_error[2]; /* any other negative return */
	__u64 agg_map_full;         /* blocks dropped: aggregation map full */
	__u64 agg_map_full_ns;      /* ... and their blocked time */
	__u64 storage_failed;       /* blocks or wakeups dropped: no task storage could be had */
	__u64 missed_wakeups;       /* blocks ended with no recorded waker (kept, WAKER_NONE) */
	__u64 filtered;             /* blocks ended but dropped by --min-block/--max-block */
	__u64 blocks;               /* blocks aggregated, or in timeline mode sent as events */
	__u64 wakeups;              /* wakeups recorded at sched_waking */
	__u64 irq_wakeups;          /* ... of which in interrupt context */
	__u64 forks_followed;       /* tgids added to the target set by follow_forks */
	__u64 unended_blocks;       /* a task blocked again before its previous block was seen
	                             * to end (a switch-in was missed): the older one is lost.
	                             * Should stay 0: late_ends catches these first */
	__u64 late_ends;            /* blocks whose switch-in sched_switch never fired (seen on
	                             * this kernel for switches out of idle and some other tasks,
	                             * by perf as well): kept, ended at the recorded wakeup time,
	                             * or at the task's next switch-out if no wakeup was seen */
	__u64 ringbuf_drops;        /* timeline mode: blocks lost, the ring buffer was full */
	__u64 ringbuf_drops_ns;     /* ... and their blocked time */
	__u64 still_blocked;        /* blocks not ended when the recording stopped: ended at the stop
	                             * (waker OFFWAKE_WAKER_STILL_BLOCKED) by the end_blocks iterator */
};

/* Read-only configuration, set in .rodata between open and load. Zero means "off" for every
 * filter except state_mask. */
struct offwake_config {
	__u64 min_block_ns;        /* drop blocks shorter than this (counted in filtered) */
	__u64 max_block_ns;        /* drop blocks longer than this; 0: no limit */
	__u32 state_mask;          /* OFFWAKE_STATE_* bits a blocking state must have */
	__u32 target_tid;          /* only this thread; 0: any */
	__u32 filter_tgids;        /* only processes in the target_tgids map */
	__u32 filter_cgroup;       /* only tasks under the cgroup in target_cgroup[0] */
	__u32 user_threads_only;   /* skip kernel threads (PF_KTHREAD) */
	__u32 kernel_threads_only; /* skip user threads */
	__u32 follow_forks;        /* children of target tgids become targets */
	__u32 irq_detect;          /* preempt_count_from_rq is valid: mark interrupt wakers */
	__u32 kernel_stack_skip;   /* leading kernel frames to drop (the BPF program's own) */
	__u32 timeline;            /* send each block to the events ring buffer, do not aggregate */
	/* Distance from this CPU's runqueue to its preempt_count, both static per-CPU
	 * variables (vmlinux BTF DATASEC .data..percpu). x86 keeps preempt_count per CPU, and
	 * without CONFIG_KALLSYMS_ALL a __ksym for it does not load; the runqueue is
	 * reachable from current->se.cfs_rq->rq. */
	__s64 preempt_count_from_rq;
};

#endif /* OFFWAKE_H */
