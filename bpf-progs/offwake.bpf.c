// SPDX-License-Identifier: GPL-2.0
/* Off-CPU time with blocked and waker stacks, aggregated in the kernel, or (timeline mode)
 * sent block by block through a ring buffer.
 *
 * sched_switch, prev blocks (not preempted, state has S/D): remember when, its stacks and state
 *                                                          in prev's task storage.
 * sched_waking, runs in the waker's context: remember the waker and its stacks in the wakee's
 *                                            task storage (last waking before switch-in wins).
 * sched_switch, next was blocked: add now - block start to the bucket of (blocked thread,
 *                                 stacks, state, waker, waker stacks); in timeline mode, send
 *                                 that key with the block's start and end as one event.
 * sched_switch, prev still marked blocked: the switch-in that ended its block was never seen.
 *                                 On this kernel (6.18, paravirtualised) sched_switch now and
 *                                 then does not fire at all for a switch, mostly out of the idle
 *                                 task (perf -e sched:sched_switch misses the same switches).
 *                                 The task is running, so the block is over: it is kept, ended
 *                                 at its recorded wakeup (or now if none), and counted in
 *                                 late_ends, instead of being silently overwritten.
 *
 * Stack ids come from one BPF_MAP_TYPE_STACK_TRACE map compared exactly (no
 * BPF_F_FAST_STACK_CMP): a hash match with different frames is reported as -EEXIST and
 * counted, never silently merged into another stack. No BPF_F_REUSE_STACKID either: ids
 * already stored in aggregation keys must keep naming the stack they were given for.
 */
#include <linux/bpf.h>
#include <linux/errno.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "offwake.h"

char LICENSE[] SEC("license") = "GPL";

#define PF_KTHREAD 0x00200000u

/* preempt_count bits (include/linux/preempt.h) */
#define SOFTIRQ_OFFSET 0x00000100u
#define HARDIRQ_MASK 0x000f0000u
#define NMI_MASK 0x00f00000u

#define OFFWAKE_MAX_STACK_DEPTH 127

/* Just the fields we read; CO-RE relocates them to this kernel's layout. */
struct rq;

struct cfs_rq {
	struct rq *rq;
} __attribute__((preserve_access_index));

struct sched_entity {
	struct cfs_rq *cfs_rq;
} __attribute__((preserve_access_index));

struct task_struct {
	unsigned int flags;
	int pid;
	int tgid;
	char comm[OFFWAKE_COMM_LEN];
	struct sched_entity se;
} __attribute__((preserve_access_index));

const volatile struct offwake_config cfg = {
	.state_mask = OFFWAKE_STATE_INTERRUPTIBLE | OFFWAKE_STATE_UNINTERRUPTIBLE,
};

/* What a task left behind when it blocked, and who woke it. */
struct task_block {
	__u64 block_ts; /* 0: not blocked (or block not tracked) */
	__s64 kern_stack_id;
	__s64 user_stack_id;
	__u32 state;
	__u32 has_waker;
	__u32 waker_flags;
	__u32 waker_tgid;
	__u32 waker_tid;
	__u32 reserved;
	__u64 wake_ts;  /* when the recorded waker woke the task */
	__s64 waker_kern_stack_id;
	__s64 waker_user_stack_id;
	char comm[OFFWAKE_COMM_LEN];
	char waker_comm[OFFWAKE_COMM_LEN];
};

/* max_entries and value_size (depth * 8) are set by the loader before load. */
struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, OFFWAKE_MAX_STACK_DEPTH * sizeof(__u64));
	__uint(max_entries, 16384);
} stack_traces SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, struct offwake_key);
	__type(value, struct offwake_value);
	__uint(max_entries, 16384);
} aggregates SEC(".maps");

/* Timeline mode only. The loader sizes it (a power-of-2 number of pages); in aggregated mode
 * it is one page, and the cfg.timeline branch that writes it is dead code for the verifier. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct task_block);
} task_blocks SEC(".maps");

/* Filled by the loader after load, before attach; grown by follow_forks. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, __u8);
	__uint(max_entries, 1024);
} target_tgids SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_CGROUP_ARRAY);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(__u32));
	__uint(max_entries, 1);
} target_cgroup SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct offwake_counters);
	__uint(max_entries, 1);
} counters SEC(".maps");

static __always_inline struct offwake_counters *cpu_counters(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&counters, &zero);
}

static __always_inline int task_wanted(struct task_struct *t)
{
	__u32 tgid;

	if (cfg.target_tid && (__u32)t->pid != cfg.target_tid)
		return 0;
	if (cfg.user_threads_only && (t->flags & PF_KTHREAD))
		return 0;
	if (cfg.kernel_threads_only && !(t->flags & PF_KTHREAD))
		return 0;
	if (cfg.filter_tgids) {
		tgid = t->tgid;
		if (!bpf_map_lookup_elem(&target_tgids, &tgid))
			return 0;
	}
	return 1;
}

/* bpf_get_stackid() of the current task; every failure is counted by kind. Kernel walks
 * from tp_btf start inside this JITed program, which has no ORC data: the first frames are
 * junk (two on x86 6.18: not even kernel addresses) and would split identical stacks into
 * different ids, so they are skipped here. */
static __always_inline __s64 stack_id(void *ctx, __u64 flags, int half, struct offwake_counters *c)
{
	long id;

	if (half == OFFWAKE_KERNEL)
		flags |= cfg.kernel_stack_skip & BPF_F_SKIP_FIELD_MASK;
	id = bpf_get_stackid(ctx, &stack_traces, flags);

	if (id >= 0 || !c)
		return id;
	switch (-id) {
	case EEXIST:
		c->stack_collision[half]++;
		break;
	case EFAULT:
		c->stack_walk_failed[half]++;
		break;
	case ENOMEM:
	case E2BIG:
		c->stack_map_full[half]++;
		break;
	default:
		c->stack_other_error[half]++;
		break;
	}
	return id;
}

/* This CPU's preempt_count, found from the current task's runqueue (a static per-CPU
 * variable like preempt_count itself). Returns -1 if it cannot be read. */
static __always_inline long preempt_count(void)
{
	struct task_struct *cur = bpf_get_current_task_btf();
	struct cfs_rq *cfs;
	__u64 rq = 0;
	__u32 pc = 0;

	if (!cfg.irq_detect)
		return -1;
	cfs = cur->se.cfs_rq;
	if (!cfs || bpf_probe_read_kernel(&rq, sizeof(rq), &cfs->rq) || !rq)
		return -1;
	if (bpf_probe_read_kernel(&pc, sizeof(pc), (void *)(rq + cfg.preempt_count_from_rq)))
		return -1;
	return pc;
}

/* Which interrupt context, if any, the current code runs in (OFFWAKE_WAKER_* bits). */
static __always_inline __u32 irq_context(void)
{
	long pc = preempt_count();

	if (pc < 0)
		return OFFWAKE_WAKER_IRQ_UNKNOWN;
	if (pc & NMI_MASK)
		return OFFWAKE_WAKER_NMI;
	if (pc & HARDIRQ_MASK)
		return OFFWAKE_WAKER_HARDIRQ;
	if (pc & SOFTIRQ_OFFSET)
		return OFFWAKE_WAKER_SOFTIRQ;
	return 0;
}

/* prev (== current) is switched out in a blocking state. */
static __always_inline void record_block(void *ctx, struct task_struct *prev, __u32 state, __u64 now)
{
	struct offwake_counters *c;
	struct task_block *b;

	if (!task_wanted(prev))
		return;
	if (cfg.filter_cgroup && bpf_current_task_under_cgroup(&target_cgroup, 0) != 1)
		return;

	c = cpu_counters();
	b = bpf_task_storage_get(&task_blocks, prev, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!b) {
		if (c)
			c->storage_failed++;
		return;
	}
	if (b->block_ts && c)
		c->unended_blocks++;
	b->state = state;
	b->kern_stack_id = stack_id(ctx, 0, OFFWAKE_KERNEL, c);
	if (prev->flags & PF_KTHREAD)
		b->user_stack_id = OFFWAKE_NO_STACK;
	else
		b->user_stack_id = stack_id(ctx, BPF_F_USER_STACK, OFFWAKE_USER, c);
	bpf_get_current_comm(b->comm, sizeof(b->comm));
	/* Last: a block_ts != 0 tells the switch-in side the rest is filled in. */
	b->block_ts = now;
}

static __always_inline void aggregate(struct offwake_key *key, __u64 delta, struct offwake_counters *c)
{
	struct offwake_value zero = {}, *v;
	long err;

	v = bpf_map_lookup_elem(&aggregates, key);
	if (!v) {
		/* Insert zeros and add below, so that two CPUs racing to create the bucket both count. */
		err = bpf_map_update_elem(&aggregates, key, &zero, BPF_NOEXIST);
		if (!err || err == -EEXIST)
			v = bpf_map_lookup_elem(&aggregates, key);
		if (!v) {
			if (c) {
				c->agg_map_full++;
				c->agg_map_full_ns += delta;
			}
			return;
		}
	}
	__sync_fetch_and_add(&v->total_ns, delta);
	__sync_fetch_and_add(&v->count, 1);
	if (delta > v->max_ns)
		v->max_ns = delta;
	if (c)
		c->blocks++;
}

/* Timeline mode: the block as one event. A full ring buffer loses it, counted. */
static __always_inline void send_event(const struct offwake_key *key, __u64 start, __u64 end,
				       struct offwake_counters *c)
{
	struct offwake_event *e;

	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		if (c) {
			c->ringbuf_drops++;
			c->ringbuf_drops_ns += end - start;
		}
		return;
	}
	__builtin_memcpy(&e->key, key, sizeof(e->key));
	e->start_ns = start;
	e->end_ns = end;
	e->cpu = bpf_get_smp_processor_id();
	e->reserved = 0;
	/* Default wakeup policy: the reader is woken only when it has caught up. */
	bpf_ringbuf_submit(e, 0);
	if (c)
		c->blocks++;
}

/* The block recorded in b (block_ts != 0) of task t ended at `end`: aggregate it, or send it
 * in timeline mode. */
/* The block recorded in b (block_ts != 0) of task t ended at `end`: aggregate it (or send it).
 * A block with no recorded waker gets `no_waker`: OFFWAKE_WAKER_NONE (a missed wakeup) or
 * OFFWAKE_WAKER_STILL_BLOCKED (the recording stopped first). */
static __always_inline void finish_block_as(struct task_struct *t, struct task_block *b, __u64 end,
					    struct offwake_counters *c, __u32 no_waker)
{
	struct offwake_key key;
	__u64 start = b->block_ts;
	__u64 delta;

	if (end < start)
		end = start;
	delta = end - start;
	b->block_ts = 0;

	if (delta < cfg.min_block_ns || (cfg.max_block_ns && delta > cfg.max_block_ns)) {
		b->has_waker = 0;
		if (c)
			c->filtered++;
		return;
	}

	__builtin_memset(&key, 0, sizeof(key));
	key.tgid = t->tgid;
	key.tid = t->pid;
	key.kern_stack_id = b->kern_stack_id;
	key.user_stack_id = b->user_stack_id;
	key.state = b->state;
	__builtin_memcpy(key.comm, b->comm, sizeof(key.comm));
	if (b->has_waker) {
		key.waker_flags = b->waker_flags;
		key.waker_tgid = b->waker_tgid;
		key.waker_tid = b->waker_tid;
		key.waker_kern_stack_id = b->waker_kern_stack_id;
		key.waker_user_stack_id = b->waker_user_stack_id;
		__builtin_memcpy(key.waker_comm, b->waker_comm, sizeof(key.waker_comm));
		b->has_waker = 0;
	} else {
		key.waker_flags = no_waker;
		key.waker_kern_stack_id = OFFWAKE_NO_STACK;
		key.waker_user_stack_id = OFFWAKE_NO_STACK;
		if (c && no_waker == OFFWAKE_WAKER_NONE)
			c->missed_wakeups++;
	}
	if (cfg.timeline)
		send_event(&key, start, end, c);
	else
		aggregate(&key, delta, c);
}

static __always_inline void finish_block(struct task_struct *t, struct task_block *b, __u64 end,
					 struct offwake_counters *c)
{
	finish_block_as(t, b, end, c, OFFWAKE_WAKER_NONE);
}

/* next is switched in: if it was blocked, its off-CPU interval ends now. */
static __always_inline void end_block(struct task_struct *next, __u64 now)
{
	struct task_block *b;

	b = bpf_task_storage_get(&task_blocks, next, 0, 0);
	if (!b)
		return;
	if (!b->block_ts) {
		/* A wakeup of a block we did not see start (it began before the recording, or was
		 * filtered) is used up by this switch-in: it must not name the waker of a later block. */
		b->has_waker = 0;
		return;
	}
	finish_block(next, b, now, cpu_counters());
}

/* prev (== current) is being switched out, so it ran: if it is still marked blocked, the
 * switch-in that ended that block did not reach us (no sched_switch fired for it). Its
 * wakeup is the best end we know, if one was recorded during the block; else now, an upper
 * bound. Done for every switch-out, whatever the state, so that a task that never blocks
 * again (or exits) does not keep its block either. */
static __always_inline void end_missed_block(struct task_struct *prev, __u64 now)
{
	struct offwake_counters *c;
	struct task_block *b;
	__u64 end = now;

	b = bpf_task_storage_get(&task_blocks, prev, 0, 0);
	if (!b || !b->block_ts)
		return;
	if (b->has_waker && b->wake_ts >= b->block_ts && b->wake_ts <= now)
		end = b->wake_ts;
	c = cpu_counters();
	if (c)
		c->late_ends++;
	finish_block(prev, b, end, c);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(offwake_switch, _Bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	__u64 now = bpf_ktime_get_ns();

	/* A preempted task stays runnable whatever its state says; a task that had a signal
	 * pending arrives here as TASK_RUNNING (0). */
	end_missed_block(prev, now);
	if (!preempt && (prev_state & cfg.state_mask &
			 (OFFWAKE_STATE_INTERRUPTIBLE | OFFWAKE_STATE_UNINTERRUPTIBLE)))
		record_block(ctx, prev, prev_state, now);
	end_block(next, now);
	return 0;
}

/* Runs in the context of whoever wakes p (try_to_wake_up), before p can run again. The
 * waking that ends a block is the last one before p's switch-in, so a later waking simply
 * overwrites an earlier one that did not end a block; switch-in consumes it. It can also
 * come just before p's blocking switch-out (p still on its way into the scheduler), which
 * is why switch-out leaves the waker fields alone. */
SEC("tp_btf/sched_waking")
int BPF_PROG(offwake_waking, struct task_struct *p)
{
	struct offwake_counters *c;
	struct task_struct *cur;
	struct task_block *b;
	__u32 irq;

	if (!task_wanted(p))
		return 0;
	c = cpu_counters();
	b = bpf_task_storage_get(&task_blocks, p, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!b) {
		if (c)
			c->storage_failed++;
		return 0;
	}

	irq = irq_context();
	b->waker_kern_stack_id = stack_id(ctx, 0, OFFWAKE_KERNEL, c);
	if (irq & OFFWAKE_WAKER_IRQ_MASK) {
		/* The interrupted task did not wake anyone: name the context, not the task. */
		b->waker_flags = irq;
		b->waker_tgid = 0;
		b->waker_tid = 0;
		b->waker_user_stack_id = OFFWAKE_NO_STACK;
		if (irq == OFFWAKE_WAKER_HARDIRQ)
			__builtin_memcpy(b->waker_comm, "[hardirq]\0\0\0\0\0\0", OFFWAKE_COMM_LEN);
		else if (irq == OFFWAKE_WAKER_SOFTIRQ)
			__builtin_memcpy(b->waker_comm, "[softirq]\0\0\0\0\0\0", OFFWAKE_COMM_LEN);
		else
			__builtin_memcpy(b->waker_comm, "[nmi]\0\0\0\0\0\0\0\0\0\0", OFFWAKE_COMM_LEN);
		if (c)
			c->irq_wakeups++;
	} else {
		__u64 pid_tgid = bpf_get_current_pid_tgid();

		cur = bpf_get_current_task_btf();
		b->waker_tgid = pid_tgid >> 32;
		b->waker_tid = (__u32)pid_tgid;
		bpf_get_current_comm(b->waker_comm, sizeof(b->waker_comm));
		b->waker_flags = irq; /* 0, or IRQ_UNKNOWN */
		if (cur->flags & PF_KTHREAD) {
			b->waker_flags |= OFFWAKE_WAKER_KTHREAD;
			b->waker_user_stack_id = OFFWAKE_NO_STACK;
		} else {
			b->waker_user_stack_id = stack_id(ctx, BPF_F_USER_STACK, OFFWAKE_USER, c);
		}
	}
	b->wake_ts = bpf_ktime_get_ns();
	b->has_waker = 1;
	if (c)
		c->wakeups++;
	return 0;
}

/* With follow_forks, a child process of a target becomes a target (autoloaded only then). */
/* Set by user space once the scheduler programs are detached: the end of the recording. */
__u64 stop_ns = 0;

struct bpf_iter_meta;
struct bpf_iter__task {
	struct bpf_iter_meta *meta;
	struct task_struct *task;
} __attribute__((preserve_access_index));

/* Run once over every task after the recording stopped: a block that started during the
 * recording and had not ended is counted up to the stop, with its waker if it was already
 * woken (runnable, not yet switched in), else as OFFWAKE_WAKER_STILL_BLOCKED. */
SEC("iter/task")
int offwake_end_blocks(struct bpf_iter__task *ctx)
{
	struct task_struct *task = ctx->task;
	struct offwake_counters *c;
	struct task_block *b;

	if (!task || !stop_ns)
		return 0;
	b = bpf_task_storage_get(&task_blocks, task, 0, 0);
	if (!b || !b->block_ts || b->block_ts > stop_ns)
		return 0;
	c = cpu_counters();
	if (c)
		c->still_blocked++;
	/* Woken during this block but not yet switched in: the waker stands. Any older wakeup
	 * belongs to an earlier block. */
	if (b->has_waker && b->wake_ts < b->block_ts)
		b->has_waker = 0;
	finish_block_as(task, b, stop_ns, c, OFFWAKE_WAKER_STILL_BLOCKED);
	return 0;
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(offwake_fork, struct task_struct *parent, struct task_struct *child)
{
	struct offwake_counters *c;
	__u32 ptgid = parent->tgid;
	__u32 ctgid = child->tgid;
	__u8 one = 1;

	if (!cfg.filter_tgids || ptgid == ctgid || !bpf_map_lookup_elem(&target_tgids, &ptgid))
		return 0;
	if (bpf_map_update_elem(&target_tgids, &ctgid, &one, BPF_ANY) == 0) {
		c = cpu_counters();
		if (c)
			c->forks_followed++;
	}
	return 0;
}
