/* Structs shared by offwake.bpf.c and the user-space loader. Fixed-width types only, laid
 * out without holes: the aggregation key is hashed and compared byte for byte. */
#ifndef OFFWAKE_H
#define OFFWAKE_H

#include <linux/types.h>

#define OFFWAKE_COMM_LEN 16
#define OFFWAKE_MAX_STACK_DEPTH 127
/* No user address reaches this (x86-64 user space ends below 1 << 47, or 1 << 56 with five
 * page-table levels). A frame-pointer walk that reads a return address at or above it has
 * left the frame chain; perf would even take such a value for a callchain context marker. */
#define OFFWAKE_USER_ADDR_LIMIT (1ULL << 56)

/* A stack id half that was not asked for (the user stack of a kernel thread, or of a waker
 * in interrupt context). Same value as offwake::kNoStack on the user side. */
#define OFFWAKE_NO_STACK ((__s64)(-9223372036854775807LL - 1))

/* Stack ids are one of:
 *   0 .. 2^32-1       an id in the BPF_MAP_TYPE_STACK_TRACE map (bpf_get_stackid());
 *   OFFWAKE_STORE_ID  a key of the stack_store hash map: stacks the programs walked or
 *                     copied themselves (user stacks, kernel stacks of sleeping tasks, and
 *                     kernel stacks whose stack_trace bucket was owned by another stack);
 *                     the low 62 bits are a hash of the frames, and the store compares whole
 *                     stacks, so two stacks never share an id while both are stored (one
 *                     emptied at a --switch-output switch could pass its id to another of
 *                     the same 62-bit hash: not in practice);
 *   -errno            no stack, and why (OFFWAKE_ERR_* below, or a helper's error);
 *   OFFWAKE_NO_STACK  not asked for. */
#define OFFWAKE_STORE_ID (1LL << 62)
#define OFFWAKE_STORE_HASH_MASK (OFFWAKE_STORE_ID - 1)

/* Why a stack was not taken, as -errno stack ids. */
#define OFFWAKE_ERR_NO_USER_CONTEXT 61 /* ENODATA: the task had no user memory left (exiting) */
#define OFFWAKE_ERR_NOT_TRACED 3       /* ESRCH: a blocked kernel stack is taken at switch-in, and
                                        * a deferred user stack on the way out of the system call;
                                        * this switch-in was never traced (late end) */
#define OFFWAKE_ERR_NO_TASK_WORK 37     /* ENOLCK: a deferred user stack could not be scheduled for
                                         * the task's return to user space (no task-work entry) */
#define OFFWAKE_ERR_EXEC 116            /* ESTALE: the task exec'd before its user stack was taken */
#define OFFWAKE_ERR_IN_PROGRESS 115     /* EINPROGRESS: a chain hop's user stack, still to be walked
                                         * (on the task's way back to user space) when the task
                                         * woke the next one */

/* Task states at switch-out (include/linux/sched.h). The key stores one state, reduced from
 * the scheduler's value as the sched_switch tracepoint reduces it (offwake_block_state(),
 * block_rules.h): 0x1 S, 0x2 D, or TASK_IDLE (NOLOAD|UNINTERRUPTIBLE, 0x402) for I, without
 * modifier bits (TASK_FREEZABLE, TASK_WAKEKILL, ...). */
#define OFFWAKE_STATE_INTERRUPTIBLE 0x1u   /* "S" */
#define OFFWAKE_STATE_UNINTERRUPTIBLE 0x2u /* "D" */
#define OFFWAKE_STATE_NOLOAD 0x400u        /* with D: TASK_IDLE, an idle kernel thread's wait */
#define OFFWAKE_STATE_REPORT 0x7fu         /* TASK_REPORT: S D T t X Z P, one of which is reported */
#define OFFWAKE_STATE_RTLOCK_WAIT 0x1000u  /* PREEMPT_RT's wait for a sleeping spinlock: "D" */
/* offwake_config.state_mask: which waits are recorded. "I" is TASK_IDLE, which is D|NOLOAD
 * but not what "D" (uninterruptible sleep, counted in the load average) means. */
#define OFFWAKE_WANT_S 0x1u
#define OFFWAKE_WANT_D 0x2u
#define OFFWAKE_WANT_I 0x4u

/* offwake_key.waker_flags */
#define OFFWAKE_WAKER_HARDIRQ 0x1u /* woken from hard interrupt context (e.g. a timer) */
#define OFFWAKE_WAKER_SOFTIRQ 0x2u /* woken while serving a softirq (network, RCU, ...) */
#define OFFWAKE_WAKER_NMI 0x4u     /* woken from NMI context (should not happen) */
#define OFFWAKE_WAKER_NONE 0x8u    /* no sched_waking seen for this block: waker unknown */
#define OFFWAKE_WAKER_KTHREAD 0x10u /* the waker is a kernel thread (no user stack) */
#define OFFWAKE_WAKER_IRQ_UNKNOWN 0x20u /* interrupt context could not be checked on this kernel:
                                         * the waker is the interrupted task, maybe wrongly */
#define OFFWAKE_WAKER_STILL_BLOCKED 0x40u /* the recording ended first: counted up to its end */
#define OFFWAKE_WAKER_EARLY 0x80u /* woken before it reached --min-block, and kept because it
                                   * reached it waiting on the run queue: the waker is named
                                   * (thread, or interrupt context) but its stacks were not
                                   * taken (OFFWAKE_NO_STACK) and its chain is not followed
                                   * (OFFWAKE_CHAIN_END_NO_WAKER); counted in woken_early */
#define OFFWAKE_WAKER_OWN_SOFTIRQ 0x100u /* woken in a softirq that the waker, a user task, ran
                                        * itself as it enabled bottom halves again
                                        * (local_bh_enable(): loopback networking, where the
                                        * sender's system call delivers the packet): the waker is
                                        * that task, with its stacks (offwake_softirq_is_tasks) */
#define OFFWAKE_WAKER_IRQ_MASK (OFFWAKE_WAKER_HARDIRQ | OFFWAKE_WAKER_SOFTIRQ | OFFWAKE_WAKER_NMI)

/* Wakeup chains (--chain-depth N > 1): who woke the waker, hop by hop. Hop 1 is the key's
 * own waker. Hop k > 1 is the latest block of hop k-1's waker before that wakeup (its stacks
 * and state), and the waker of that block (its thread and stacks). A hop's stacks were taken
 * when that block ended and when it was woken: a chain walks no stack of its own; the ids
 * are copied from task to task at sched_waking.
 * Why a chain has no further hop (offwake_chain.end): */
#define OFFWAKE_CHAIN_END_NONE 0     /* no chain was asked for (--chain-depth 1) */
#define OFFWAKE_CHAIN_END_DEPTH 1    /* --chain-depth reached */
#define OFFWAKE_CHAIN_END_IRQ 2      /* the last waker is an interrupt: nothing blocked */
#define OFFWAKE_CHAIN_END_KTHREAD 3  /* the last waker is a kernel thread */
#define OFFWAKE_CHAIN_END_UNSEEN 4   /* the last waker was not seen blocking before its wakeup
                                      * (since the recording began, or ever: not a target, or a
                                      * state --state leaves out) */
#define OFFWAKE_CHAIN_END_NOT_KEPT 5 /* the last waker's latest block was dropped by --min-block
                                      * or --max-block: it has no stacks */
#define OFFWAKE_CHAIN_END_NO_WAKER 6 /* the last block has no recorded waker (none seen, or still
                                      * blocked at the stop), or one without stacks or chain (woken
                                      * before --min-block) */
#define OFFWAKE_MAX_CHAIN_DEPTH 7 /* --chain-depth: 1 to this */
/* Hop slots of a chain. A key's chain holds at most OFFWAKE_MAX_CHAIN_DEPTH - 1 hops; a task's
 * latest block (offwake_task_block.last) one more: its own block in front of its key's hops
 * (chain_set_last), so that a chain of the greatest depth fits there too. */
#define OFFWAKE_CHAIN_SLOTS OFFWAKE_MAX_CHAIN_DEPTH

/* Hop k > 1 of a chain. The blocked thread is the previous hop's waker. */
struct offwake_hop {
	__s64 kern_stack_id;       /* the block: its stacks and state, as in offwake_key */
	__s64 user_stack_id;
	__u32 state;
	__u32 waker_flags;         /* its waker, as the key's waker fields */
	__u32 waker_tgid;
	__u32 waker_tid;
	__u64 waker_ident;
	__s64 waker_kern_stack_id;
	__s64 waker_user_stack_id;
	char waker_comm[OFFWAKE_COMM_LEN];
	__u64 waker_cgroup_id;
};

struct offwake_chain {
	__u32 hops; /* hops after the first that are filled in, hop[0 .. hops-1]; the rest is zero */
	__u32 end;  /* OFFWAKE_CHAIN_END_*: why there is no further hop */
	struct offwake_hop hop[OFFWAKE_CHAIN_SLOTS];
};

/* One aggregation bucket: a blocked thread, the stacks it blocked in, and who woke it how.
 * In interrupt context the waker is not the interrupted task: waker_tgid/tid are 0, the
 * waker comm is "[hardirq]", "[softirq]" or "[nmi]", the waker kernel stack is the
 * interrupt path and the waker user stack is OFFWAKE_NO_STACK.
 * With OFFWAKE_WAKER_NONE all waker fields are zero and both waker stacks OFFWAKE_NO_STACK.
 * ident and waker_ident tell apart two tasks that had the same tid and comm (pid reuse) and
 * a task before and after an exec: a sample names one identity, never a mix. */
struct offwake_key {
	__u32 tgid;              /* blocked process */
	__u32 tid;               /* blocked thread */
	__s64 kern_stack_id;     /* see "Stack ids" above */
	__s64 user_stack_id;
	__u32 state;             /* prev_state at switch-out */
	__u32 waker_flags;       /* OFFWAKE_WAKER_* */
	__u32 waker_tgid;
	__u32 waker_tid;
	__s64 waker_kern_stack_id;
	__s64 waker_user_stack_id;
	__u64 ident;             /* blocked task: its start time and exec count, mixed */
	__u64 waker_ident;       /* waker task, likewise; 0 for interrupt and unknown wakers */
	/* cgroup v2 ids (bpf_get_current_cgroup_id(), PERF_SAMPLE_CGROUP's), 0 when unknown: the
	 * blocked thread's when the block started (switch-out), so that blocks of one thread in
	 * two cgroups are two samples; the waker's at sched_waking (0 for interrupt wakers). */
	__u64 cgroup_id;
	__u64 waker_cgroup_id;
	char comm[OFFWAKE_COMM_LEN];       /* blocked thread, at switch-out */
	char waker_comm[OFFWAKE_COMM_LEN]; /* waker thread, at sched_waking */
	/* --chain-depth > 1 only: the aggregation map's key, and a timeline event, end after
	 * chain.hop[depth - 2] (offwake_key_size()); with depth 1 before `chain`. */
	struct offwake_chain chain;
};

/* The waker as offwake_key, offwake_task_block and offwake_hop each carry it, under the same
 * field names: copied field by field in one place, so that a field added to the waker is
 * copied wherever a waker moves (block -> key at the end of a block, key -> hop in a chain). */
#define OFFWAKE_COPY_WAKER(dst, src)                                                               \
	do {                                                                                       \
		(dst)->waker_flags = (src)->waker_flags;                                           \
		(dst)->waker_tgid = (src)->waker_tgid;                                             \
		(dst)->waker_tid = (src)->waker_tid;                                               \
		(dst)->waker_ident = (src)->waker_ident;                                           \
		(dst)->waker_kern_stack_id = (src)->waker_kern_stack_id;                           \
		(dst)->waker_user_stack_id = (src)->waker_user_stack_id;                           \
		(dst)->waker_cgroup_id = (src)->waker_cgroup_id;                                   \
		__builtin_memcpy((dst)->waker_comm, (src)->waker_comm, sizeof((dst)->waker_comm)); \
	} while (0)

/* Bytes of struct offwake_key that are used (hashed, compared, sent) at a chain depth. */
#define OFFWAKE_KEY_BASE_SIZE __builtin_offsetof(struct offwake_key, chain)
#define OFFWAKE_KEY_SIZE(depth)                                                                     \
	((depth) > 1 ? __builtin_offsetof(struct offwake_key, chain.hop) + ((depth) - 1) * sizeof(struct offwake_hop) \
		     : OFFWAKE_KEY_BASE_SIZE)

struct offwake_value {
	__u64 total_ns; /* summed blocked time (switch-out to switch-in); with --sample-period,
	                 * summed weights (offwake_block_weight), an estimate of it */
	__u64 count;    /* number of blocks (kept) */
	__u64 max_ns;   /* longest single block; best effort (not atomic against a racing CPU) */
	__u64 last_ns;  /* a time (CLOCK_MONOTONIC) at which both threads of the key had the key's
	                 * identity: the wakeup of its latest block, or that block's start when
	                 * there was no waker. Samples are stamped with it, so that perf resolves
	                 * comm and maps as they were then, not at the end of the recording. */
	/* --sample-period: the kept blocks shorter than the period, which weigh the period, and
	 * their true summed length. The estimate's variance follows from them (offwake_raw.h). */
	__u64 sampled;
	__u64 sampled_ns;
};

/* Timeline mode (offwake_config.timeline): one block, sent through the `events` ring buffer
 * instead of being added to a bucket. The key is filled exactly as in aggregated mode.
 * Times are bpf_ktime_get_ns() (CLOCK_MONOTONIC). The ring buffer is in reservation order,
 * which is only roughly end order (CPUs race, a late end is dated back to the recorded wakeup,
 * and a block whose user stack is taken on the way back to user space is sent then): a
 * reader that needs global order must sort. */
struct offwake_event {
	__u64 start_ns; /* switch-out */
	__u64 end_ns;   /* switch-in, or the late end (see late_ends) */
	__u64 stamp_ns; /* the sample's time: the wakeup (both threads were who the key says
	                 * then; the waker may be gone by the end), or the start if none */
	__u32 cpu;      /* CPU on which the end was seen */
	__u32 flags;    /* OFFWAKE_EVENT_* */
	/* Last: with --chain-depth 1 the event ends before key.chain (OFFWAKE_EVENT_BASE_SIZE). */
	struct offwake_key key;
};
/* offwake_event.flags: the block is shorter than --sample-period and weighs the period. */
#define OFFWAKE_EVENT_SAMPLED 0x1u
#define OFFWAKE_EVENT_BASE_SIZE (__builtin_offsetof(struct offwake_event, key) + OFFWAKE_KEY_BASE_SIZE)

/* Index into the [2] arrays of struct offwake_counters. */
#define OFFWAKE_KERNEL 0
#define OFFWAKE_USER 1

/* How a user stack walk of these programs ended (not with the kernel walker), one counter
 * each: what the summary prints and the tests check. */
enum offwake_walk_end {
	OFFWAKE_WALK_COMPLETE = 0,    /* at the outermost frame: a row saying the return address is
	                               * undefined (_start, a thread's start), or a zero frame
	                               * pointer */
	OFFWAKE_WALK_DEPTH = 1,       /* --max-stack frames taken */
	OFFWAKE_WALK_BAD_FRAME = 2,   /* the next frame would lie outside the thread's stack, or its
	                               * return address is no user address: with frame pointers,
	                               * the usual end in code built without them */
	OFFWAKE_WALK_UNREADABLE = 3,  /* the stack could not be read there (not present) */
	OFFWAKE_WALK_NO_ROW = 4,      /* tables: no FDE covers the pc, and its frame pointer gave
	                               * no caller */
	OFFWAKE_WALK_EXPRESSION = 5,  /* tables: a DWARF expression the walker does not follow */
	OFFWAKE_WALK_UNSUPPORTED = 6, /* tables: a rule the walker does not follow */
	OFFWAKE_WALK_ENDS = 7,
};

/* Per-CPU counters, one element in a PERCPU_ARRAY; user space sums the CPUs. Stack
 * counters count stack captures (blocked and waker stacks alike), not keys. */
struct offwake_counters {
	__u64 stack_captures[2];    /* stacks asked for: every outcome below is one of these */
	__u64 stack_collision[2];   /* no id: the stack_trace bucket was owned by another stack and
	                             * the stack store was full, or the store's two hashes of it
	                             * were both owned by other stacks */
	__u64 stack_walk_failed[2]; /* the walk gave no frame (kernel: unwinder error; user:
	                             * bpf_get_stackid's -EFAULT with the kernel walker) */
	__u64 stack_map_full[2];    /* the stack store had no free entry (the stack_trace map cannot
	                             * be full: a full one shows up as collisions, handed to the store) */
	__u64 stack_other_error[2]; /* any other negative return */
	__u64 stack_store_fallbacks[2]; /* stack_trace bucket owned by another stack: stored in the
	                                 * stack store instead (not a loss) */
	__u64 no_user_context;      /* user stacks not taken: the task had no user memory (exiting) */
	__u64 user_stack_exec;      /* user stacks not taken: the task exec'd first */
	__u64 kernel_stack_not_traced; /* blocked kernel stacks not taken: switch-in not traced */
	__u64 woken_early;          /* blocks kept that reached --min-block only on the run queue
	                             * after their wakeup: the waker is named, without its stacks
	                             * (WAKER_EARLY) */
	__u64 user_work_scheduled;  /* deferred user stacks taken by a task work (the others at
	                             * switch-in, from a thread of the process on the CPU) */
	__u64 user_work_failed;     /* deferred user stacks not taken: the return to user space
	                             * could not be hooked (OFFWAKE_ERR_NO_TASK_WORK) */
	__u64 user_parked;          /* deferred user stacks parked for a program on the thread's
	                             * way back to user space (rseq_update, sys_exit) */
	__u64 agg_map_full;         /* blocks dropped: aggregation map full */
	__u64 agg_map_full_ns;      /* ... and their blocked time */
	__u64 storage_failed_blocks;  /* blocks not recorded: no task storage could be had */
	__u64 storage_failed_wakeups; /* wakeups not recorded: likewise */
	__u64 missed_wakeups;       /* blocks ended with no recorded waker (kept, WAKER_NONE) */
	__u64 filtered;             /* blocks ended but dropped by --min-block/--max-block */
	__u64 blocks;               /* blocks aggregated, or in timeline mode sent as events */
	__u64 wakeups;              /* wakeups recorded at sched_waking, with stacks (lazily: of
	                             * blocks that had reached --min-block by then; the waker of an
	                             * earlier one is only named, uncounted here) */
	__u64 irq_wakeups;          /* ... of which in interrupt context */
	__u64 runnable_wakeups;     /* wakeups of a task queued to run and not running: they end
	                             * no block, so they are not recorded (and cost no stacks) */
	__u64 forks_followed;       /* tgids added to the target set by follow_forks */
	__u64 forks_not_followed;   /* children of targets not added: the target set was full */
	__u64 targets_exited;       /* target processes removed from the set when they exited */
	__u64 late_ends;            /* blocks whose switch-in sched_switch never fired: kept, ended
	                             * at the recorded wakeup time, or when the task was next seen
	                             * running if no wakeup was seen */
	__u64 untraced_switches;    /* a CPU switched away from a task we never saw it switch to:
	                             * the kernel ran no BPF program for that switch. On this kind
	                             * of VM the init process's threads are invisible to BPF, and
	                             * so are interrupts taken while they run, wakeups included:
	                             * those blocks end with no waker (missed_wakeups) or late */
	__u64 ringbuf_drops;        /* timeline mode: blocks lost, the ring buffer was full */
	__u64 ringbuf_drops_ns;     /* ... and their blocked time */
	__u64 still_blocked;        /* blocks not ended when the recording stopped, kept: counted up
	                             * to the stop (waker OFFWAKE_WAKER_STILL_BLOCKED) */
	__u64 still_blocked_filtered; /* ... not kept: shorter than --min-block so far, or already
	                               * longer than --max-block (also counted in filtered) */
	__u64 user_walk_end[OFFWAKE_WALK_ENDS]; /* user stacks walked, by how the walk ended */
	__u64 user_walk_no_tables;  /* --user-walker=auto: user stacks of a process with no unwind
	                             * tables yet, walked by frame pointers */
	__u64 user_table_frames;    /* frames found with the unwind tables */
	__u64 user_fp_frames;       /* ... by frame pointer in a process with tables: the pc in no
	                             * mapping with a table (JIT code, vDSO, a binary whose table
	                             * is not built yet or did not fit) */
	__u64 user_unwind_cache_hits; /* frames of a process with tables (the two above) whose rule
	                               * came from the per-CPU cache of rules by pc */
	__u64 user_unwind_searches; /* ... whose rule was searched in its mappings and rows: every
	                             * other such frame (the cache missed, or was not used: walks
	                             * outside the switch and waking programs) */
	__u64 sample_dropped;       /* --sample-period: blocks that passed the duration filters but
	                             * not their draw (shorter than their threshold): not recorded,
	                             * their time is in the weight of the blocks kept */
	__u64 sample_weighted;      /* ... blocks kept that were shorter than the period: they weigh
	                             * the period (the others weigh their length) */
	__u64 user_walks_replayed;  /* user stacks (counted in user_walk_end) that repeated the
	                             * thread's last walk from the same place, checked word by word
	                             * and not walked again (walk_memo.bpf.h) */
	__u64 user_work_runs;       /* task work callbacks run (user_work_run): the kernel counts
	                             * their time in no program's run_time_ns (kernel.bpf_stats),
	                             * so they time themselves: */
	__u64 user_work_ns;         /* ... their time, from their first to their last instruction */
	__u64 kernel_stacks_replayed; /* kernel stacks (counted in stack_captures) that repeated
	                             * the thread's last one from the same place, their frames
	                             * found at their places, not unwound again (kernel_memo.bpf.h) */
	__u64 kernel_replays_checked; /* --check-replays: replayed kernel stacks unwound as well */
	__u64 kernel_replays_wrong; /* ... whose unwind differed from the replay */
	__u64 unwind_requests_full; /* cfg.unwind_on_request: processes whose tables could not be
	                             * asked for (unwind_wanted full): walked by frame pointers */
	__u64 user_walks_awaited_tables; /* cfg.user_await_tables: blocks of a process without unwind
	                             * tables yet whose user stack was left to their way back to
	                             * user space (parked), where the tables have likely come */
};

/* Read-only configuration, set in .rodata between open and load. Zero means "off" for every
 * filter except state_mask. */
struct offwake_config {
	__u64 min_block_ns;        /* drop blocks shorter than this (counted in filtered) */
	__u64 max_block_ns;        /* drop blocks longer than this; 0: no limit */
	__u32 state_mask;          /* OFFWAKE_WANT_* */
	__u32 filter_tids;         /* only threads in the target_tids map (-t) */
	__u32 filter_tgids;        /* only processes in the target_tgids map */
	__u32 filter_cgroup;       /* only tasks under the cgroup in target_cgroup[0] */
	__u32 user_threads_only;   /* skip kernel threads (PF_KTHREAD) */
	__u32 kernel_threads_only; /* skip user threads */
	__u32 follow_forks;        /* children of target tgids become targets */
	__u32 irq_detect;          /* preempt_count_from_rq is valid: mark interrupt wakers */
	__u32 kernel_stack_skip;   /* leading kernel frames to drop (the BPF program's own) */
	__u32 timeline;            /* send each block to the events ring buffer, do not aggregate */
	__u32 eager;               /* take every stack at once (switch-out, sched_waking), as
	                            * before lazy capture; for comparison and tests */
	__u32 kernel_user_walker;  /* user stacks by bpf_get_stackid(BPF_F_USER_STACK), not by
	                            * the programs' own frame-pointer walk */
	__u32 stack_depth;         /* frames per stack, at most OFFWAKE_MAX_STACK_DEPTH */
	__u32 sched_frames;        /* blocked kernel stacks by bpf_get_stackid() at switch-out, with
	                            * the scheduler's own frames (schedule, mutex_lock, ...), not
	                            * from the sleeping task at switch-in (bpf_get_task_stack()
	                            * leaves out .sched.text) */
	__u32 user_task_work;      /* lazily, deferred user stacks are walked by a task work run on
	                            * the task's return to user space (bpf_task_work_schedule_resume,
	                            * Linux 6.18), not by a program on every system call exit */
	__u32 unwind_tables;       /* user stacks by the unwind tables of .eh_frame (unwind_row.h),
	                            * with frame pointers where a pc has none (--user-walker=auto) */
	__u32 unwind_on_request;   /* with unwind_tables, when only some processes have them from the
	                            * start (-p, -t, a command): a process walked without tables
	                            * asks user space for them (unwind_wanted) */
	__u32 check_replays;       /* every kernel stack the memo replays (kernel_memo.bpf.h) is
	                            * unwound as well, and counted if it differs: a check of the
	                            * memo, at the cost it saves */
	__u32 user_rseq;           /* lazily (or for user_await_tables), a thread with rseq has its
	                            * deferred user stack walked by the rseq_update program on its
	                            * way back to user space (no task work to schedule); others as
	                            * user_task_work says */
	__u32 user_await_tables;   /* exactly, system-wide or a followed command (unwind_tables): a
	                            * block of a process with no unwind tables yet, in the first
	                            * milliseconds after its exec, has its user stack walked on its
	                            * way back to user space (rseq_update), not at once by frame
	                            * pointers (user_stack_awaits_tables()) */
	__u32 user_sys_exit;       /* lazily, without task work nor rseq_update: a block inside a
	                            * system call has its user stack walked at its exit (the
	                            * offwake_sys_exit program, on every system call of the machine).
	                            * With rseq_update but no task work, the few threads without rseq
	                            * have theirs walked at switch-out instead */
	__u32 chain_depth;         /* hops of wakeup chain per block, 1 .. OFFWAKE_MAX_CHAIN_DEPTH
	                            * (1: the waker only) */
	__u64 sample_period_ns;    /* --sample-period: time-weighted sampling (block_rules.h); 0: off */
	__u64 user_stack_limit;    /* a user frame lies within this many bytes above the stack
	                            * pointer (the thread's stack size limit) */
	/* Distance from this CPU's runqueue to its preempt_count, both static per-CPU
	 * variables (vmlinux BTF DATASEC .data..percpu). x86 keeps preempt_count per CPU, and
	 * without CONFIG_KALLSYMS_ALL a __ksym for it does not load; the runqueue is
	 * reachable from current->se.cfs_rq->rq. */
	__s64 preempt_count_from_rq;
	/* Distance from this CPU's runqueue to the pointer to the top of its interrupt stack
	 * (x86-64's hardirq_stack_ptr); 0: not known, and a waker in an interrupt on that stack
	 * has its whole stack unwound each time (irq_stack_words_above, kernel_memo.bpf.h). */
	__s64 irq_stack_ptr_from_rq;
};

/* A stack in the stack_store map (the value; the key is the stack's store id). */
struct offwake_stored_stack {
	__u32 nr;   /* frames used */
	__u32 half; /* OFFWAKE_KERNEL or OFFWAKE_USER */
	__u64 ips[OFFWAKE_MAX_STACK_DEPTH]; /* leaf first; the map's value_size cuts this to the depth */
};

/* task_block.wake_flags */
#define OFFWAKE_TB_WAKER 0x1u        /* a wakeup is recorded */
#define OFFWAKE_TB_WAKE_ON_CPU 0x2u  /* ... it came while the task was still on its way into the
                              * scheduler: it belongs to the block that switch-out starts */
/* task_block.flags */
#define OFFWAKE_TB_DEFER_USER 0x4u   /* the open block's user stack is walked when the task returns to user space */
#define OFFWAKE_TB_PENDING 0x8u      /* `pending` holds a finished block waiting for its user stack */
#define OFFWAKE_TB_PARKED 0x10u      /* ... named by its CPU (cpu_current.parked_tid): a program on the task's
                              * way back to user space (rseq_update, sys_exit) walks it, not a task work */
#define OFFWAKE_TB_HAS_TABLES 0x20u  /* cfg.user_await_tables: the task's process had its unwind tables, none
                              * being built, at one of its blocks (cleared at exec): its later blocks
                              * do not look again */

/* What a task left behind when it blocked, and who woke it: the value of the task_blocks
 * task storage map. Shared so that tests can set a task's state from user space.
 *
 * The fields that every switch and wakeup read or write come first, within 56 bytes, so that
 * the programs touch fewer cache lines of a task that has been asleep (they were spread over
 * 128 bytes: keep_ns and last_ns at its end). On pgbench with no block kept
 * (--sample-period 100000000), that took the switch program from 571-592 to 540-559 ns a
 * run, and the three programs from 20.8 to 20.3 us a transaction (5 rounds each, alternated,
 * 2026-12-04). */
struct offwake_task_block {
	__u64 block_ts; /* 0: not blocked (or block not tracked) */
	__u64 keep_ns;  /* the open block is kept once it is this long: --min-block, or its
	                 * sampling threshold (offwake_keep_threshold), drawn when it started */
	__u64 last_ns;  /* how long the task's last block was, kept or not (0: none seen): a
	                 * thread's blocks tend to last alike, so a block whose keep_ns its last
	                 * block reached has its user stack walked at switch-out, while it is hot */
	__u64 wake_ts;  /* when the recorded waker woke the task */
	__u32 state;
	__u32 flags;    /* OFFWAKE_TB_DEFER_USER, _PENDING, _PARKED, _HAS_TABLES: written only where no other
	                 * CPU writes this block (the task's own CPU, or a switch-in) */
	__u64 cgroup_id; /* of the open block: the task's at switch-out */
	__u32 wake_flags; /* OFFWAKE_TB_WAKER, _WAKE_ON_CPU. A wakeup on the task's way into the
	                   * scheduler is written from the waker's CPU while the switch program
	                   * runs on the task's: in a word of their own, stored whole, so that
	                   * neither CPU's read-modify-write of `flags` overwrites the other's */
	__u32 reserved0;
	__s64 user_stack_id; /* of the open block, unless OFFWAKE_TB_DEFER_USER */
	__u32 waker_flags;
	__u32 waker_tgid;
	__u32 waker_tid;
	__u32 reserved;
	__u64 waker_ident;
	__s64 waker_kern_stack_id;
	__s64 waker_user_stack_id;
	char waker_comm[OFFWAKE_COMM_LEN];
	__u64 waker_cgroup_id;
	__s64 kern_stack_id; /* of the open block, with --sched-frames (taken at switch-out) */
	/* A finished, kept block waiting for its user stack (OFFWAKE_TB_PENDING). */
	struct offwake_key pending;
	__u64 pending_start;
	__u64 pending_end;
	__u64 pending_stamp;
	__u32 pending_cpu;
	__u32 pending_reserved;
	/* --chain-depth > 1 only. `chain`: the hops after the recorded waker, copied from the
	 * waker's `last` at the wakeup. `last`: this task's latest block seen as a hop, for the
	 * tasks it wakes: last.hop[0] is the block and its waker, last.hop[1..] that block's
	 * chain; last.hops == 0 when there is none to give (last.end says why, 0: never seen). */
	struct offwake_chain chain;
	struct offwake_chain last;
};

#endif /* OFFWAKE_H */
