/* SPDX-License-Identifier: GPL-2.0 */
/* User stacks, walked by frame pointers from the registers a task entered the kernel with.
 * The programs walk them themselves, rather than with bpf_get_stackid(BPF_F_USER_STACK)
 * (still used with cfg.kernel_user_walker), so that a walk stops before a read that would
 * fault, and so that the stack of a task that is not running can be walked too. */
#ifndef OFFWAKE_USER_STACK_BPF_H
#define OFFWAKE_USER_STACK_BPF_H

#include "stacks.bpf.h"

struct walk_ctx {
	struct scratch *s;
	struct task_struct *task; /* another task (walk_task_frame), or 0 for the current one */
	__u64 fp;
	__u64 lo; /* a frame lies at or above this */
	__u64 hi; /* ... and below this */
	__u32 nr;
	__u32 depth;
};

/* One frame: {next frame pointer, return address} at fp. Stops where bpf_get_stackid's walk
 * would fault or find nothing: a frame pointer that is zero, misaligned, not above the
 * previous frame or outside the thread's stack. Also at a return address that is no user
 * address (code without frame pointers left other data there): the frames so far are kept.
 * A read that faults costs a page fault with exception fixup, microseconds, and gives
 * nothing. The stack is read a window at a time, within one page, so that shallow stacks
 * cost one read. */
static __always_inline long walk_step(struct walk_ctx *w, int other_task)
{
	struct scratch *s = w->s;
	__u64 fp = w->fp, off, len, next, ret;
	__u64 n = frame_index(w->nr);
	long err;

	if (n >= w->depth || n >= OFFWAKE_MAX_STACK_DEPTH)
		return 1;
	if (!fp || (fp & 7) || fp < w->lo || fp >= w->hi)
		return 1;
	if (fp < s->win_start || fp + 16 > s->win_start + s->win_len) {
		len = 4096 - (fp & 4095);
		if (len < 16)
			len = 16;
		if (len > WINDOW)
			len = WINDOW;
		if (other_task)
			err = bpf_copy_from_user_task(s->window, len, (void *)fp, w->task, 0);
		else
			err = bpf_probe_read_user(s->window, len, (void *)fp);
		if (err) {
			s->win_len = 0;
			return 1; /* unmapped: bpf_get_stackid's walk ends here too */
		}
		s->win_start = fp;
		s->win_len = len;
	}
	off = (fp - s->win_start) & (WINDOW - 1);
	next = *(__u64 *)&s->window[off];
	ret = *(__u64 *)&s->window[off + 8];
	if (!ret || ret >= OFFWAKE_USER_ADDR_LIMIT)
		return 1;
	s->st.ips[n] = ret;
	w->nr = n + 1;
	w->lo = fp + 16;
	w->fp = next;
	return 0;
}

static long walk_frame(__u32 i, void *data)
{
	return walk_step(data, 0);
}

/* The same for a task that is not running, from a sleepable program only: its memory is
 * read through its own mm (bpf_copy_from_user_task). */
static long walk_task_frame(__u32 i, void *data)
{
	return walk_step(data, 1);
}

/* Task t's user stack, from the registers it entered the kernel with: the current task's,
 * or (other_task, sleepable programs only) a task that is not running. */
static __always_inline __s64 user_stack_of(void *ctx, struct task_struct *t, int other_task, struct scratch *s,
					   struct offwake_counters *c)
{
	struct pt_regs *regs;
	struct walk_ctx w = {};

	if (t->flags & PF_NO_USER_STACK)
		return OFFWAKE_NO_STACK;
	if (!t->mm) {
		COUNT(c, no_user_context);
		return -OFFWAKE_ERR_NO_USER_CONTEXT;
	}
	if (cfg.kernel_user_walker && !other_task)
		return current_stack(ctx, BPF_F_USER_STACK, OFFWAKE_USER, s, c);
	if (!s)
		return -ENOMEM;
	COUNT(c, stack_captures[OFFWAKE_USER]);
	regs = (struct pt_regs *)bpf_task_pt_regs(t);
	if (!regs)
		return stack_error(-EFAULT, OFFWAKE_USER, c);
	s->st.ips[0] = regs_ip(regs);
	s->win_start = 0;
	s->win_len = 0;
	w.s = s;
	w.task = t;
	w.fp = regs_fp(regs);
	w.lo = regs_sp(regs);
	w.hi = w.lo + cfg.user_stack_limit;
	w.nr = 1;
	w.depth = cfg.stack_depth;
	bpf_loop(OFFWAKE_MAX_STACK_DEPTH, other_task ? walk_task_frame : walk_frame, &w, 0);
	s->st.nr = w.nr;
	return store_stack(s, OFFWAKE_USER, c);
}

static __always_inline __s64 current_user_stack(void *ctx, struct scratch *s, struct offwake_counters *c)
{
	return user_stack_of(ctx, bpf_get_current_task_btf(), 0, s, c);
}

#endif /* OFFWAKE_USER_STACK_BPF_H */
