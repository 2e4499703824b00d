/* SPDX-License-Identifier: GPL-2.0 */
/* Reading a thread's user stack a word at a time, for the user walker (user_stack.bpf.h) and
 * the replay of a remembered walk (walk_memo.bpf.h): the walk's state, and the one place that
 * reads the stack. */
#ifndef OFFWAKE_STACK_READ_BPF_H
#define OFFWAKE_STACK_READ_BPF_H

#include "maps.bpf.h"
#include "unwind_row.h"

/* Kept small: it lies on the stack of the walk's global function, whose callers' frames and
 * its own callees' add up to the verifier's 512 bytes. */
struct walk_ctx {
	struct scratch *s;
	struct task_struct *task; /* another task (walk_task_frame), or the current one */
	const struct offwake_unwind_process *proc; /* its tables; 0: frame pointers only */
	__u64 pc, sp, bp; /* the registers of the frame last found */
	__u64 hi;         /* the thread's stack lies below this */
	__u16 nr;
	__u16 exact;      /* pc is where the frame stopped, not a return address: the first frame,
	                   * and the frame a signal interrupted */
	__u16 end;        /* OFFWAKE_WALK_*, once the walk has ended */
	__u16 table_frames, fp_frames;
	__u16 cached;     /* the per-CPU cache of rules it may use, 0 none (unwind_cache_for()) */
	__u16 cache_hits; /* frames whose rule came from the cache; the others were searched */
};

/* Ends the walk: a bpf_loop callback's "stop". */
static __always_inline long walk_end(struct walk_ctx *w, __u32 why)
{
	w->end = why;
	return 1;
}

/* Notes that the word at r->at held `val`, at its offset from the walk's first sp (r->sp0).
 * The address comes through the map value, like the count, not in a register or the walk's
 * state: the verifier follows those as known numbers, and would not see one frame's state as
 * another's. Masked, not branched on: past WALK_MEMO_WORDS the words wrap around, and the walk
 * is not remembered. A global function, verified once: inlined at each read, noting made the
 * verifier go through three times as many instructions (-v prints them). */
__noinline int note_word(struct walk_words *r, __u64 val)
{
	__u64 off, end;
	__u32 i;

	if (!r)
		return 0;
	i = r->n;
	off = r->at - r->sp0;
	/* The span ends past this word. A word below the first sp (a signal frame's, on another
	 * stack) gets a span past any a replay reads at once, so that its words are checked one
	 * by one, where sp plus its offset cut to 32 bits lies past the top of the stack and
	 * misses (off + 8 of the word just below the sp would wrap to 0, within any span). So
	 * does a word 4 GiB above the sp, which no stack holds. */
	end = r->at < r->sp0 || off > 0xffffffffull - 8 ? 0xffffffffull : off + 8;
	if (end > r->span)
		r->span = end;
	r->off[i & (WALK_MEMO_WORDS - 1)] = off;
	r->val[i & (WALK_MEMO_WORDS - 1)] = val;
	r->n = i + 1;
	return 0;
}

/* The 8 bytes of stack at `addr`, which must lie between the frame's sp and the top of the
 * thread's stack: the walk never reads anywhere else. The stack is read a window at a time,
 * within one page, so that shallow stacks cost one read (a replay may have read its walk's
 * whole span into the window first). A read that faults costs a page fault
 * with exception fixup, microseconds, and gives nothing. 0, or the OFFWAKE_WALK_* that ends
 * the walk. With `note` (a constant: a walk's reads, not a replay's), each word read is noted in
 * s->read, for the thread's memo (walk_memo.bpf.h). */
static __always_inline __u32 stack_word(struct walk_ctx *w, __u64 addr, __u64 *out, int other_task, int note)
{
	struct scratch *s = w->s;
	__u64 len, off;
	long err;

	if ((addr & 7) || addr < w->sp || addr + 8 > w->hi)
		return OFFWAKE_WALK_BAD_FRAME;
	if (addr < s->win_start || addr + 8 > s->win_start + s->win_len) {
		len = 4096 - (addr & 4095);
		if (len > WALK_READ)
			len = WALK_READ;
		if (other_task)
			err = bpf_copy_from_user_task(s->window, len, (void *)addr, w->task, 0);
		else
			err = bpf_probe_read_user(s->window, len, (void *)addr);
		if (err) {
			s->win_len = 0;
			return OFFWAKE_WALK_UNREADABLE;
		}
		s->win_start = addr;
		s->win_len = len;
	}
	off = (addr - s->win_start) & (WINDOW - 1);
	*out = *(__u64 *)&s->window[off];
	if (note) {
		s->read.at = addr;
		note_word(&s->read, *out);
	}
	return 0;
}

#endif /* OFFWAKE_STACK_READ_BPF_H */
