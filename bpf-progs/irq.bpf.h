/* SPDX-License-Identifier: GPL-2.0 */
/* Interrupt context. A wakeup from an interrupt runs sched_waking in the context of whatever
 * task the interrupt came in on: that task woke no one, so the waker is named by the
 * interrupt context instead ("[hardirq]", "[softirq]", "[nmi]"). */
#ifndef OFFWAKE_IRQ_BPF_H
#define OFFWAKE_IRQ_BPF_H

#include "block_rules.h"
#include "maps.bpf.h"

/* This CPU's runqueue, a static per-CPU variable, from the current task (a BTF-typed load:
 * no helper call); 0 if it cannot be had. Other per-CPU variables lie at a distance from it
 * that the loader finds in the kernel's BTF (DATASEC .data..percpu): x86 keeps preempt_count
 * and the interrupt stack's pointer per CPU, and without CONFIG_KALLSYMS_ALL a __ksym for
 * them does not load. */
static __always_inline __u64 this_cpu_rq(void)
{
	struct task_struct *cur = bpf_get_current_task_btf();
	struct cfs_rq *cfs = cur->se.cfs_rq;

	return cfs ? (__u64)cfs->rq : 0;
}

/* This CPU's preempt_count (an int, the low half of the word on little-endian x86-64).
 * Returns -1 if its place is not known; one that cannot be read is 0. */
static __always_inline long preempt_count(void)
{
	__u64 rq;

	if (!cfg.irq_detect)
		return -1;
	rq = this_cpu_rq();
	if (!rq)
		return -1;
	return (__u32)kernel_word(rq + cfg.preempt_count_from_rq);
}

/* Words from `sp` to the top of this CPU's interrupt stack, where a hard interrupt that came
 * in kernel mode runs, and the softirqs run at its end (x86-64: hardirq_stack_ptr, the top
 * of that stack, holds the stack pointer the interrupt came in on; the word below it, the
 * return address of the call onto this stack, is the interrupt's outermost frame). 0 if sp
 * is not within `max_words` below that top, or the top is not known. */
static __always_inline __u32 irq_stack_words_above(__u64 sp, __u32 max_words)
{
	__u64 rq, top;

	if (!cfg.irq_stack_ptr_from_rq || (sp & 7))
		return 0;
	rq = this_cpu_rq();
	if (!rq)
		return 0;
	top = kernel_word(rq + cfg.irq_stack_ptr_from_rq);
	if (!top || sp >= top || top - sp > (__u64)max_words * 8)
		return 0;
	return (__u32)((top - sp) / 8);
}

/* The bounds of the kernel's noinstr text, where x86-64's interrupt entries (common_interrupt,
 * sysvec_*) are: text symbols, in kallsyms without CONFIG_KALLSYMS_ALL. 0 if missing. */
extern const void __noinstr_text_start __ksym __weak;
extern const void __noinstr_text_end __ksym __weak;

/* Whether kernel text from `start` to `end` (linker symbols, 0 if missing) holds `ip`. */
static __always_inline int text_holds(const void *start, const void *end, __u64 ip)
{
	return start && end > start && ip >= (__u64)start && ip < (__u64)end;
}

/* Whether the code on this CPU's interrupt stack was called onto it by an interrupt's
 * entry: the stack's outermost word (up to its top, irq_stack_words_above) is the return
 * address of that call, into the entry (noinstr text). A softirq there runs either at the
 * end of a hard interrupt, which came in on what woke no one (the idle loop, any thread's
 * system call), or for a task's local_bh_enable() (do_softirq_own_stack, as in loopback
 * networking), whose path below it is the waker's: told apart by this. */
static __always_inline int irq_stack_entered_by_interrupt(__u64 outermost)
{
	return text_holds(&__noinstr_text_start, &__noinstr_text_end, outermost);
}

/* The bounds of the kernel's interrupt and exception entry stubs (asm_common_interrupt,
 * asm_sysvec_*), text symbols too; 0 if missing. */
extern const void __irqentry_text_start __ksym __weak;
extern const void __irqentry_text_end __ksym __weak;

struct entry_stub_find {
	const __u64 *ips;
	__u32 found; /* the first stub's index; the frames' count if none */
};

static long entry_stub_frame(__u32 i, void *data)
{
	struct entry_stub_find *f = data;
	__u64 ip;

	if (i >= OFFWAKE_MAX_STACK_DEPTH)
		return 1;
	ip = f->ips[i];
	if (text_holds(&__irqentry_text_start, &__irqentry_text_end, ip)) {
		f->found = i;
		return 1;
	}
	return 0;
}

/* The index of the first of the `nr` frames `ips` (leaf first) that is an entry stub: an
 * interrupt's stack ends above it, at the handler's entry, and what lies below (what the
 * interrupt came in on, another interrupt's softirq for one that nested) woke no one. The
 * conversion cuts the same frame (aggregate_samples.cpp). `nr` if there is none. */
static __always_inline __u32 first_entry_stub(const __u64 *ips, __u32 nr)
{
	struct entry_stub_find f = { .ips = ips, .found = nr };

	if (&__irqentry_text_start) /* else none is found */
		bpf_loop(nr, entry_stub_frame, &f, 0);
	return f.found;
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
