/* SPDX-License-Identifier: GPL-2.0 */
/* Deferred user stacks. With a duration filter most blocks are dropped, so a blocked task's
 * user stack is not walked at switch-out: its user registers stay as they are until it is
 * back in user space, and the stack is walked then, for kept blocks only. A kept block waits
 * for it in b->pending (OFFWAKE_TB_PENDING), and is emitted with it by emit_pending(), on the
 * task's way back to user space:
 * - by offwake_rseq_return, if the thread registered rseq: the kernel then runs the rseq_update
 *   tracepoint on every return to user space after a switch-out, in the thread's context, at
 *   the price of a tracepoint (OFFWAKE_TB_PARKED);
 * - else by a task work (Linux 6.18, bpf_task_work_schedule_resume), whose scheduling costs an
 *   interrupt of its own (irq_work): 12-16 us a call on a virtual machine;
 * - else at its system call's exit (offwake_sys_exit, OFFWAKE_TB_PARKED; only blocks inside a
 *   system call are deferred then), where rseq_update is not used (cfg.user_sys_exit); with
 *   it, a thread without rseq has its user stack walked at switch-out. Some 6.18 kernels have
 *   the task work kfunc but refuse it from these programs: the loader then goes without. */
#ifndef OFFWAKE_DEFERRED_USER_BPF_H
#define OFFWAKE_DEFERRED_USER_BPF_H

#include "chain.bpf.h"
#include "emit.bpf.h"
#include "user_stack.bpf.h"

/* The parked block gets user stack `user` and is emitted. */
static __always_inline void emit_pending(struct offwake_task_block *b, __s64 user, struct offwake_counters *c)
{
	b->flags &= ~(TB_PENDING | TB_PARKED);
	b->pending.user_stack_id = user;
	chain_set_last_user(b, user); /* the parked block is the task's latest */
	emit(&b->pending, b->pending_start, b->pending_end, b->pending_stamp, b->pending_cpu, c);
}

/* Lazy capture with task work: runs in the task's own context on its way back to user space,
 * with its user registers as they were when it blocked. A parked block gets its user stack.
 * Preemptible (migration disabled): the walk uses this thread's own scratch space. The kernel
 * runs this callback outside any program's accounting, so it counts its own runs and time
 * (user_work_runs, user_work_ns), which the summary and scripts/bench-overhead.py add to the
 * programs'. */
static int user_work_run(struct bpf_map *map, void *key, void *value)
{
	__u64 start = bpf_ktime_get_ns();
	struct user_work *w = value;
	struct task_struct *cur = bpf_get_current_task_btf();
	struct offwake_task_block *b;
	struct offwake_counters *c = cpu_counters();

	b = task_block(cur);
	if (b && (b->flags & TB_PENDING))
		emit_pending(b, user_stack_of(0, cur, 0, &w->s, 0, MEMO_BLOCKED, c), c);
	if (c) {
		c->user_work_runs++;
		c->user_work_ns += bpf_ktime_get_ns() - start;
	}
	return 0;
}

/* Whether t (not running) shares the memory of the task running on this CPU, which is not a
 * kernel thread: then bpf_probe_read_user() reads t's user stack as well as its own. */
static __always_inline int same_memory_as_current(struct task_struct *t)
{
	struct task_struct *cur = bpf_get_current_task_btf();

	return cur->mm && cur->mm == t->mm && !(cur->flags & PF_NO_USER_STACK);
}

/* Exact capture, system-wide or of a command (cfg.user_await_tables): a process that execs has
 * no unwind tables until user space has read the MMAP2 records of its exec and built what it
 * maps, a few milliseconds in which its first blocks (a thread waiting for another it has just
 * started) would be walked by frame pointers, cut short in code without them; so has a process
 * whose tables are published while one is still being built (its binary's, after an exec; a
 * child forked meanwhile has its parent's). Such a block (prev's, being switched out, b its
 * block) has its user stack walked on its way back to user space instead (rseq_update): its
 * registers and stack stay as they are until then, and its tables have likely come meanwhile.
 * Once a thread's process is seen with its tables whole, the thread's later blocks do not look
 * again (TB_HAS_TABLES, until an exec): a table built later for a library it loads is not
 * waited for. */
static __always_inline int user_stack_awaits_tables(struct task_struct *prev, struct offwake_task_block *b,
						    struct offwake_counters *c)
{
	const struct offwake_unwind_process *proc;

	if (!cfg.user_await_tables || (b->flags & TB_HAS_TABLES) || !task_has_rseq(prev))
		return 0;
	proc = unwind_process(prev);
	if (proc && !proc->building) {
		b->flags |= TB_HAS_TABLES;
		return 0;
	}
	COUNT(c, user_walks_awaited_tables);
	return 1;
}

/* Has user_work_run called in t's context before t returns to user space (t is being
 * switched in, in the kernel). 0 if so, or if an earlier one is still to run, which then
 * serves; else -errno. */
static __always_inline long schedule_user_work(struct task_struct *t)
{
	struct user_work *w;
	struct user_work_bytes *zero;
	__u32 tid = t->pid, k0 = 0;
	long err;

	if (!bpf_task_work_schedule_resume_impl)
		return -ENOSYS;
	zero = bpf_map_lookup_elem(&user_work_zero, &k0);
	if (!zero)
		return -ENOMEM;
	w = map_lookup_or_insert(&user_works, &tid, zero);
	if (!w)
		return -ENOMEM;
	err = bpf_task_work_schedule_resume_impl(t, &w->tw, &user_works, user_work_run, 0);
	return err == -EBUSY ? 0 : err;
}

/* Task t is being switched in, ending its block, which b has just made into the key
 * b->pending and whose user stack was deferred. The stack is walked now if this CPU's memory
 * is t's; otherwise the block is parked until t is on its way back to user space. Returns
 * whether it was parked (then emit_pending() emits it). */
static __always_inline int defer_user_stack(struct task_struct *t, struct offwake_task_block *b, __u64 start,
					    __u64 end, __u64 stamp, struct offwake_counters *c)
{
	b->flags &= ~TB_DEFER_USER;
	b->pending_start = start;
	b->pending_end = end;
	b->pending_stamp = stamp;
	b->pending_cpu = bpf_get_smp_processor_id();
	if (!cfg.kernel_user_walker && same_memory_as_current(t)) {
		/* A thread of the process on the CPU now: its memory is the current one, so its
		 * stack is walked here, at no more cost than at switch-out. */
		b->pending.user_stack_id = user_stack_of(0, t, 0, scratch_slot(SLOT_SWITCH),
							    unwind_cache_for(SLOT_SWITCH), MEMO_NONE, c);
		return 0;
	}
	if (!cfg.user_task_work || (cfg.user_rseq && task_has_rseq(t))) {
		struct cpu_current *cc = this_cpu_current();

		b->flags |= TB_PENDING | TB_PARKED;
		if (cc)
			cc->parked_tid = t->pid; /* t is being switched in on this CPU */
		COUNT(c, user_parked);
		return 1;
	}
	if (!schedule_user_work(t)) {
		b->flags |= TB_PENDING;
		COUNT(c, user_work_scheduled);
		return 1;
	}
	COUNT(c, user_work_failed);
	b->pending.user_stack_id = -OFFWAKE_ERR_NO_TASK_WORK;
	return 0;
}

#endif /* OFFWAKE_DEFERRED_USER_BPF_H */
