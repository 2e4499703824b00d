/* SPDX-License-Identifier: GPL-2.0 */
/* Interrupt context. A wakeup from an interrupt runs sched_waking in the context of whatever
 * task the interrupt came in on: that task woke no one, so the waker is named by the
 * interrupt context instead ("[hardirq]", "[softirq]", "[nmi]"). */
#ifndef OFFWAKE_IRQ_BPF_H
#define OFFWAKE_IRQ_BPF_H

#include "block_rules.h"
#include "maps.bpf.h"

/* This CPU's preempt_count, found from the current task's runqueue (a static per-CPU
 * variable like preempt_count itself, at a distance the loader finds in the kernel's BTF:
 * x86 keeps preempt_count per CPU, and without CONFIG_KALLSYMS_ALL a __ksym for it does not
 * load). Returns -1 if it cannot be read. */
static __always_inline long preempt_count(void)
{
	struct task_struct *cur = bpf_get_current_task_btf();
	struct cfs_rq *cfs;
	__u64 rq;
	__u32 pc = 0;

	if (!cfg.irq_detect)
		return -1;
	cfs = cur->se.cfs_rq;
	if (!cfs)
		return -1;
	rq = (__u64)cfs->rq; /* a BTF-typed load: no helper call */
	if (!rq)
		return -1;
	if (bpf_probe_read_kernel(&pc, sizeof(pc), (void *)(rq + cfg.preempt_count_from_rq)))
		return -1;
	return pc;
}

/* Which interrupt context, if any, the current code runs in (OFFWAKE_WAKER_* bits). Only
 * preempt_count() tells: the stack the code runs on does not. x86-64 runs an interrupt that
 * came from user space on the interrupted task's own kernel stack (the CPU's interrupt stack
 * only for one from kernel mode), where a system call of that task runs too; a variant that
 * took every user thread on its own stack for task context named the interrupted thread as
 * the waker of timer wakeups (a CI run of 39fe72a). */
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

/* b's waker is interrupt context `irq` (one of OFFWAKE_WAKER_IRQ_MASK): no thread, no user
 * stack, and the context's name as its comm (the same as the tracepoint back end's). */
static __always_inline void set_irq_waker(struct offwake_task_block *b, __u32 irq)
{
	b->waker_flags = irq;
	b->waker_tgid = 0;
	b->waker_tid = 0;
	b->waker_ident = 0;
	b->waker_cgroup_id = 0;
	b->waker_user_stack_id = OFFWAKE_NO_STACK;
	offwake_irq_waker_comm(irq, b->waker_comm);
}

#endif /* OFFWAKE_IRQ_BPF_H */
