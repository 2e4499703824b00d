// SPDX-License-Identifier: GPL-2.0
/* Off-CPU time with blocked and waker stacks, aggregated in the kernel, or (timeline mode)
 * sent block by block through a ring buffer. This file holds the programs; the headers hold
 * the kernel's types (kernel_types.bpf.h), maps (maps.bpf.h), filters, stacks, interrupt
 * context, chains, deferred user stacks and how a block ends (blocks.bpf.h).
 *
 * Each stack is taken only for a block that is kept, and as late as possible:
 *
 * sched_switch, prev blocks (not preempted, state wanted): remember when and its state in
 *     prev's task storage. Its user stack is walked now, unless a duration filter is set
 *     (or, recording a command, prev's process has no unwind tables yet): then it is deferred
 *     to the task's return to user space (deferred_user.bpf.h).
 * sched_waking, in the waker's context: remember the waker and take its kernel and user
 *     stacks. With a duration filter, a block already longer than --max-block gets nothing,
 *     and one shorter than --min-block so far gets the waker's name, thread and the time
 *     (what the waker's context gives for the price of a few loads), but no stacks: if it
 *     reaches --min-block on the run queue after all, it is kept with that waker, marked
 *     OFFWAKE_WAKER_EARLY and counted. A wakeup of a task that is still runnable ends no
 *     block: ignored.
 * sched_switch, next was blocked: the block ends now. Filters apply; a kept block's kernel
 *     stack is taken from the sleeping task (bpf_get_task_stack: its kernel stack has not
 *     moved since it blocked), and the block is aggregated by (blocked thread, its stacks,
 *     state, waker, waker stacks), or sent in timeline mode.
 * sched_switch, prev still marked blocked: the switch-in that ended its block was never seen
 *     (the kernel does not always fire sched_switch). The task is running, so the block is
 *     over: it is kept, ended at its recorded wakeup (or now if none), and counted in
 *     late_ends (end_missed_block).
 */
#include <linux/bpf.h>
#include <linux/errno.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "offwake.h"
#include "kernel_types.bpf.h"
#include "maps.bpf.h"
#include "filters.bpf.h"
#include "stacks.bpf.h"
#include "user_stack.bpf.h"
#include "kernel_memo.bpf.h"
#include "irq.bpf.h"
#include "chain.bpf.h"
#include "emit.bpf.h"
#include "deferred_user.bpf.h"
#include "blocks.bpf.h"

char LICENSE[] SEC("license") = "GPL";

/* prev (== current) is being switched out: it ran, so whatever it left open is settled first. */
static __always_inline void switch_out(void *ctx, struct task_struct *prev, _Bool preempt, __u32 prev_state,
				       __u64 now)
{
	struct offwake_counters *c = cpu_counters();
	struct offwake_task_block *b;
	int blocks;

	prev_state = offwake_block_state(prev_state); /* as the tracepoint back end gets it */
	b = task_block(prev);
	if (b) {
		/* Still in the system call its parked block was in: the user registers are those. */
		if (b->flags & TB_PENDING)
			emit_pending(b, current_user_stack(ctx, SLOT_SWITCH, c), c);
		if (b->block_ts)
			end_missed_block(prev, b, now, c);
	}
	/* A preempted task stays runnable whatever its state says; a task that had a signal
	 * pending arrives here as TASK_RUNNING (0). */
	blocks = !preempt && state_wanted(prev_state) && task_wanted(prev);
	if (blocks && cfg.filter_cgroup && bpf_current_task_under_cgroup(&target_cgroup, 0) != 1)
		blocks = 0;
	if (!blocks) {
		if (b) {
			clear_waker(b);
			/* A block not recorded (--state, the filters) is still the latest one. */
			if (!preempt && (prev_state & (OFFWAKE_STATE_INTERRUPTIBLE | OFFWAKE_STATE_UNINTERRUPTIBLE)))
				chain_no_last(b, OFFWAKE_CHAIN_END_UNSEEN);
		}
		return;
	}
	if (!b) {
		b = task_block_create(prev);
		if (!b) {
			COUNT(c, storage_failed_blocks);
			return;
		}
	}
	/* Only a wakeup that came on the way in belongs to this block. */
	drop_stale_waker(b);
	b->state = prev_state;
	b->cgroup_id = task_cgroup_id(prev); /* prev is current: its cgroup when it blocks */
	b->keep_ns = draw_keep_threshold();
	if (cfg.sched_frames)
		b->kern_stack_id = current_stack(ctx, 0, OFFWAKE_KERNEL, scratch_slot(SLOT_SWITCH), c);
	b->flags &= ~TB_DEFER_USER;
	if (prev->flags & PF_NO_USER_STACK) {
		b->user_stack_id = OFFWAKE_NO_STACK;
	} else if ((lazy() && ((cfg.user_rseq && task_has_rseq(prev)) ||
			       (cfg.user_task_work && !walk_at_switch_out(b->keep_ns, b->last_ns)))) ||
		   user_stack_awaits_tables(prev, b, c)) {
		/* The user registers stay as they are until the task is back in user space,
		 * whether it entered the kernel by a system call or an exception. A thread with
		 * rseq has the stack walked there, for kept blocks, at the price of a tracepoint
		 * run. With task work, a block likely to be kept has its stack walked now
		 * instead: scheduling a task work and walking the stack later, cold, cost more
		 * than walking it here. Exactly, a block of a process still without its unwind
		 * tables waits for them there. */
		b->flags |= TB_DEFER_USER;
	} else {
		struct pt_regs *regs = lazy() && cfg.user_sys_exit && !walk_at_switch_out(b->keep_ns, b->last_ns)
					       ? (struct pt_regs *)bpf_task_pt_regs(prev)
					       : 0;

		/* Inside a system call, the user registers stay as they are until its exit. */
		if (regs && regs_in_syscall(regs))
			b->flags |= TB_DEFER_USER;
		else
			b->user_stack_id = current_user_stack(ctx, SLOT_SWITCH, c);
	}
	/* Last: a block_ts != 0 tells the other programs the rest is filled in. */
	b->block_ts = now;
}

/* next is switched in: if it was blocked, its off-CPU interval ends now. */
static __always_inline void switch_in(struct task_struct *next, __u64 now)
{
	struct offwake_counters *c;
	struct offwake_task_block *b;
	struct block_end e = { .at = now, .at_switch_in = 1 };

	b = task_block(next);
	if (!b)
		return;
	if (!b->block_ts) {
		/* A wakeup of a block we did not see start (it began before the recording, or was
		 * filtered) is used up by this switch-in: it must not name the waker of a later block. */
		clear_waker(b);
		return;
	}
	c = cpu_counters();
	if (e.at < b->block_ts)
		e.at = b->block_ts;
	/* The wakeup is used up by this switch-in, whether the block is kept or not. */
	if (filtered_out(b, e.at - b->block_ts, c)) {
		clear_waker(b);
		return;
	}
	e.kern_stack_id = cfg.sched_frames ? b->kern_stack_id : blocked_kernel_stack(next, SLOT_SWITCH, c);
	e.no_waker = waker_of_block(b, b->wake_flags, 0) ? 0 : OFFWAKE_WAKER_NONE;
	finish_block(next, b, &e, c);
	clear_waker(b);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(offwake_switch, _Bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	__u64 now = bpf_ktime_get_ns();
	struct cpu_current *cc;

	if (stopped(now))
		return 0;
	cc = this_cpu_current();
	if (cc) {
		if (cc->tid && cc->tid != (__u32)prev->pid) {
			struct offwake_counters *c = cpu_counters();

			COUNT(c, untraced_switches);
		}
		cc->tid = next->pid;
		cc->parked_tid = 0; /* switch_in() names next if it parks its block */
	}
	/* The idle task (pid 0) never blocks and has no task storage. */
	if (prev->pid)
		switch_out(ctx, prev, preempt, prev_state, now);
	if (next->pid)
		switch_in(next, now);
	return 0;
}

/* Whether p is asleep as the kernel sees it: dequeued, or its dequeue delayed (EEVDF's delayed
 * dequeue, when the kernel has it). */
static __always_inline int task_dequeued(struct task_struct *p)
{
	if (!p->on_rq)
		return 1;
	return bpf_core_field_exists(p->se.sched_delayed) && p->se.sched_delayed;
}

/* Runs in the context of whoever wakes p (try_to_wake_up), before p can run again. The
 * waking that ends a block is the last one before p's switch-in, so a later waking simply
 * overwrites an earlier one; switch-in consumes it. It can also come while p is still on its
 * way into the scheduler (not yet switched out, dequeued or about to be): then it belongs to
 * the block that switch-out is about to start (TB_WAKE_ON_CPU). */
SEC("tp_btf/sched_waking")
int BPF_PROG(offwake_waking, struct task_struct *p)
{
	struct offwake_counters *c;
	struct task_struct *cur;
	struct offwake_task_block *b;
	struct kstack_window *win;
	__u64 now, so_far, keep;
	__u32 irq, on_cpu;
	int early;

	if (!task_wanted(p))
		return 0;
	/* The time is read once the waking is about a block: most runs end before. */
	c = cpu_counters();
	on_cpu = p->on_cpu; /* read once: it turns to 0 as p's switch-out completes */
	if (!offwake_wakeup_may_end_block(task_dequeued(p), on_cpu)) {
		if (!stopped_now())
			COUNT(c, runnable_wakeups);
		return 0;
	}
	b = on_cpu ? task_block_create(p) : task_block(p);
	if (!b) {
		if (on_cpu && !stopped_now())
			COUNT(c, storage_failed_wakeups);
		return 0; /* asleep, but not in a block we track */
	}
	if (!on_cpu && !b->block_ts) {
		clear_waker(b);
		return 0;
	}
	now = bpf_ktime_get_ns();
	if (stopped(now))
		return 0;
	so_far = on_cpu ? 0 : now - b->block_ts;
	/* The length at which the block is kept. A wakeup on the way in comes before its block
	 * has drawn its sampling threshold: taken as above zero then, as it nearly always is. */
	keep = on_cpu ? cfg.min_block_ns + sampling() : b->keep_ns;
	/* Lazily, a block already past --max-block is dropped whatever follows: nothing to record.
	 * One shorter than --min-block (or its sampling threshold) so far is usually dropped too,
	 * but may yet reach it on the run queue: it gets the waker's name and thread, which cost
	 * a few loads, not its stacks, which cost microseconds (and the waker's context is gone
	 * by the time we know). */
	early = lazy() && so_far < keep;
	if (lazy() && !early && !duration_kept(so_far, keep))
		return 0;

	irq = irq_context();
	cur = bpf_get_current_task_btf();
	/* Found once for both: whose softirq it is, and the waker's kernel stack. */
	win = irq == OFFWAKE_WAKER_SOFTIRQ || !early ? waker_window(ctx, SLOT_WAKING, cur) : 0;
	if (irq == OFFWAKE_WAKER_SOFTIRQ && win && softirq_is_currents(win, cur))
		irq = OFFWAKE_WAKER_OWN_SOFTIRQ; /* the task ran it: the task is the waker */
	b->waker_kern_stack_id = early ? OFFWAKE_NO_STACK : waker_kernel_stack(ctx, SLOT_WAKING, win, irq, c);
	if (irq & OFFWAKE_WAKER_IRQ_MASK) {
		/* The interrupted task did not wake anyone: name the context, not the task. */
		set_irq_waker(b, irq);
		if (!early)
			COUNT(c, irq_wakeups);
		chain_end(b, OFFWAKE_CHAIN_END_IRQ);
	} else {
		b->waker_tgid = cur->tgid;
		b->waker_tid = cur->pid;
		b->waker_ident = task_ident(cur);
		b->waker_cgroup_id = task_cgroup_id(cur);
		__builtin_memcpy(b->waker_comm, cur->comm, sizeof(b->waker_comm));
		b->waker_flags = irq; /* 0, IRQ_UNKNOWN or OWN_SOFTIRQ */
		if (cur->flags & PF_KTHREAD) {
			b->waker_flags |= OFFWAKE_WAKER_KTHREAD;
			b->waker_user_stack_id = OFFWAKE_NO_STACK;
		} else {
			b->waker_user_stack_id =
				early ? OFFWAKE_NO_STACK : current_user_stack(ctx, SLOT_WAKING, c);
		}
		/* The waker's own chain is a copy per hop: not for blocks mostly dropped. */
		if (early)
			chain_end(b, OFFWAKE_CHAIN_END_NO_WAKER);
		else
			chain_take(b, cur);
	}
	if (early)
		b->waker_flags |= OFFWAKE_WAKER_EARLY;
	b->wake_ts = now;
	/* Stored whole: on the way in, the task's CPU may be changing its `flags` meanwhile. */
	b->wake_flags = TB_WAKER | (on_cpu ? TB_WAKE_ON_CPU : 0);
	if (!early)
		COUNT(c, wakeups);
	return 0;
}

/* Whether the current task, on its way back to user space, may have something to do there:
 * a parked block, or a switch-in the switch program did not see (walk_for_untraced_switch_in).
 * Neither, if this CPU's last traced switch was to it and parked nothing (cpu_current): the
 * common case, told from per-CPU memory alone. */
static __always_inline int returning_task_has_work(const struct cpu_current *cc, struct task_struct *cur)
{
	return !cc || cc->tid != (__u32)cur->pid || cc->parked_tid == (__u32)cur->pid;
}

/* The current task is on its way back to user space with its user registers as they were
 * when it blocked: a parked block gets its user stack. */
static __always_inline void emit_parked(void *ctx, __u32 slot, struct cpu_current *cc, struct task_struct *cur)
{
	struct offwake_task_block *b;
	struct offwake_counters *c;

	b = task_block(cur);
	if (!b || !(b->flags & TB_PARKED))
		return;
	if (cc && cc->parked_tid == (__u32)cur->pid)
		cc->parked_tid = 0;
	c = cpu_counters();
	emit_pending(b, current_user_stack(ctx, slot, c), c);
}

/* The current task is on its way back to user space, switched in without the switch program
 * seeing it (this CPU's last traced switch was to another task; see untraced_switches): a
 * block of its still open ended then, and its user registers are still the block's. A user
 * stack deferred for it is walked now, unless the block is sure to be dropped; the block
 * itself is ended at the task's next switch-out (end_missed_block), which would otherwise
 * find its user stack gone. */
static __always_inline void walk_for_untraced_switch_in(void *ctx, const struct cpu_current *cc, struct task_struct *cur)
{
	struct offwake_task_block *b;

	if (!cc || cc->tid == (__u32)cur->pid)
		return;
	b = task_block(cur);
	if (!b || !b->block_ts || !(b->flags & TB_DEFER_USER) || missed_block_dropped(b, bpf_ktime_get_ns()))
		return;
	b->flags &= ~TB_DEFER_USER;
	b->user_stack_id = current_user_stack(ctx, SLOT_RETURN, cpu_counters());
}

/* Lazy capture, a thread with rseq: the kernel updates its rseq area on each way back to user
 * space after a switch-out, from wherever it entered the kernel. */
SEC("tp_btf/rseq_update")
int BPF_PROG(offwake_rseq_return, struct task_struct *t)
{
	struct cpu_current *cc = this_cpu_current();
	struct task_struct *cur = bpf_get_current_task_btf();

	if (!returning_task_has_work(cc, cur))
		return 0;
	emit_parked(ctx, SLOT_RETURN, cc, cur);
	walk_for_untraced_switch_in(ctx, cc, cur);
	return 0;
}

/* Lazy capture without task work nor rseq_update (cfg.user_sys_exit; loaded only then): a task
 * returns from a system call with its user registers as they were when it blocked inside it. */
SEC("tp_btf/sys_exit")
int BPF_PROG(offwake_sys_exit, struct pt_regs *regs, long ret)
{
	struct cpu_current *cc = this_cpu_current();
	struct task_struct *cur = bpf_get_current_task_btf();

	if (returning_task_has_work(cc, cur))
		emit_parked(ctx, SLOT_SYSCALL, cc, cur);
	return 0;
}

/* After an exec the user registers are the new program's (lazy capture), and the process's
 * code too: its unwind mappings go until user space writes the new image's (autoloaded for
 * either). */
SEC("tp_btf/sched_process_exec")
int BPF_PROG(offwake_exec, struct task_struct *p)
{
	struct offwake_counters *c;
	struct offwake_task_block *b;
	__u32 tgid = p->tgid;

	if (cfg.unwind_tables) {
		__sync_fetch_and_add(&unwind_tables_epoch, 1);
		bpf_map_delete_elem(&unwind_processes, &tgid);
	}
	b = task_block(p);
	if (!b)
		return 0;
	b->flags &= ~TB_HAS_TABLES; /* the new image's are still to come */
	if (!(b->flags & (TB_PENDING | TB_DEFER_USER)))
		return 0;
	c = cpu_counters();
	if (b->flags & TB_PENDING) {
		COUNT(c, user_stack_exec);
		emit_pending(b, -OFFWAKE_ERR_EXEC, c);
	}
	if (b->flags & TB_DEFER_USER) {
		COUNT(c, user_stack_exec);
		b->flags &= ~TB_DEFER_USER;
		b->user_stack_id = -OFFWAKE_ERR_EXEC;
	}
	return 0;
}

/* A new process: with follow_forks, a child process of a target becomes a target; with unwind
 * tables, it starts with its parent's mappings (the same code at the same addresses), before it
 * can run, where user space would learn of it only from the FORK record (autoloaded only for
 * either). */
SEC("tp_btf/sched_process_fork")
int BPF_PROG(offwake_fork, struct task_struct *parent, struct task_struct *child)
{
	struct offwake_counters *c = cpu_counters();
	__u32 ptgid = parent->tgid;
	__u32 ctgid = child->tgid;
	const struct offwake_unwind_process *tables;
	__u8 one = 1;

	if (ptgid == ctgid)
		return 0;
	if (cfg.unwind_tables && (tables = bpf_map_lookup_elem(&unwind_processes, &ptgid)))
		bpf_map_update_elem(&unwind_processes, &ctgid, tables, BPF_ANY);
	if (!cfg.filter_tgids || !bpf_map_lookup_elem(&target_tgids, &ptgid))
		return 0;
	if (bpf_map_update_elem(&target_tgids, &ctgid, &one, BPF_ANY) == 0)
		COUNT(c, forks_followed);
	else
		COUNT(c, forks_not_followed);
	return 0;
}

/* A thread exits (p is current). Lazily, a block still parked gets what its user stack is now
 * (a task work would be cancelled with its entry, and an exiting task has no rseq_update), and
 * the thread's task work entry goes. With a target set, a process that is gone leaves it: its
 * pid may name another one later. */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(offwake_exit, struct task_struct *p, _Bool group_dead)
{
	struct offwake_counters *c;
	struct offwake_task_block *b;
	__u32 tgid = p->tgid, tid = p->pid;

	if (lazy() || cfg.user_await_tables) {
		b = task_block(p);
		if (b && (b->flags & TB_PENDING)) {
			c = cpu_counters();
			emit_pending(b, current_user_stack(ctx, SLOT_RETURN, c), c);
		}
		if (cfg.user_task_work)
			bpf_map_delete_elem(&user_works, &tid);
	}
	if (!cfg.filter_tgids || !group_dead)
		return 0;
	if (bpf_map_delete_elem(&target_tgids, &tgid) == 0) {
		c = cpu_counters();
		COUNT(c, targets_exited);
	}
	return 0;
}


/* Run once over every task after the recording stopped, sleepable, so that it can read the
 * user stacks of tasks that are not running. A parked block gets its user stack.
 * A block that started during the recording and had not ended is counted up to the stop,
 * with its waker if it was already woken (runnable, not yet switched in), else as
 * OFFWAKE_WAKER_STILL_BLOCKED. The filters compare the length so far, a lower bound: already
 * longer than --max-block, it is dropped; shorter than --min-block so far, it is dropped too
 * (it may have gone on longer): both counted in still_blocked_filtered. */
SEC("iter.s/task")
int offwake_end_blocks(struct bpf_iter__task *ctx)
{
	struct task_struct *task = ctx->task;
	struct offwake_counters *c;
	struct offwake_task_block *b;
	struct block_end e = {};

	if (!task || !stop_ns)
		return 0;
	b = task_block(task);
	if (!b)
		return 0;
	c = cpu_counters();
	/* Not back in user space yet: its user registers are still those of the block. */
	if (b->flags & TB_PENDING)
		emit_pending(b, user_stack_of(ctx, task, 1, scratch_slot(SLOT_OTHER), 0, MEMO_NONE, c), c);
	if (!b->block_ts || b->block_ts > stop_ns)
		return 0;
	if (filtered_out(b, stop_ns - b->block_ts, c)) {
		COUNT(c, still_blocked_filtered);
		clear_waker(b);
		return 0;
	}
	COUNT(c, still_blocked);
	if (b->flags & TB_DEFER_USER) {
		b->flags &= ~TB_DEFER_USER;
		b->user_stack_id = user_stack_of(ctx, task, 1, scratch_slot(SLOT_OTHER), 0, MEMO_NONE, c);
	}
	e.at = stop_ns;
	e.kern_stack_id = cfg.sched_frames ? b->kern_stack_id : sleeping_kernel_stack(task, scratch_slot(SLOT_OTHER), c);
	e.no_waker = waker_of_block(b, b->wake_flags, 0) ? 0 : OFFWAKE_WAKER_STILL_BLOCKED;
	finish_block(task, b, &e, c);
	clear_waker(b);
	return 0;
}
