/* SPDX-License-Identifier: GPL-2.0 */
/* User stacks, walked from the registers a task entered the kernel with: frame by frame with
 * the unwind tables of .eh_frame (unwind_tables.bpf.h, --user-walker=auto), which serve code
 * built without frame pointers, or by frame pointers (--user-walker=fp, and wherever a pc has
 * no table). The programs walk them themselves, rather than with
 * bpf_get_stackid(BPF_F_USER_STACK) (still used with cfg.kernel_user_walker), so that a walk
 * stops before a read that would fault, and so that the stack of a task that is not running
 * can be walked too. */
#ifndef OFFWAKE_USER_STACK_BPF_H
#define OFFWAKE_USER_STACK_BPF_H

#include "stacks.bpf.h"
#include "unwind_tables.bpf.h"
#include "walk_memo.bpf.h"

/* The caller's frame is found: its pc (a return address unless `exact`), sp and bp, its sp
 * checked by the caller (next_frame(), or RA_RDI's own rule). */
static __always_inline long frame_found(struct walk_ctx *w, __u64 pc, __u64 sp, __u64 bp, __u32 exact)
{
	struct scratch *s = w->s;
	__u64 n = frame_index(w->nr);

	if (!pc || pc >= OFFWAKE_USER_ADDR_LIMIT)
		return walk_end(w, OFFWAKE_WALK_BAD_FRAME);
	if (n >= OFFWAKE_MAX_STACK_DEPTH)
		return walk_end(w, OFFWAKE_WALK_DEPTH);
	s->st.ips[n] = pc;
	w->nr = n + 1;
	w->pc = pc;
	w->sp = sp;
	w->bp = bp;
	w->exact = exact;
	return 0;
}

/* The same, for a caller whose frame lies above this one, as the stack grows down. */
static __always_inline long next_frame(struct walk_ctx *w, __u64 pc, __u64 sp, __u64 bp, __u32 exact)
{
	if (sp <= w->sp)
		return walk_end(w, OFFWAKE_WALK_BAD_FRAME);
	return frame_found(w, pc, sp, bp, exact);
}

/* Whether the code before `ret` ends with a call, as a return address's does: one of the forms
 * compilers emit (call rel32; call through a register, or through memory addressed by a
 * register, a SIB byte or rip, with or without a displacement). A walk by frame pointers of
 * code built without them reads words that are none (a time, a pointer to data); most are
 * not even mapped, and the read fails. c[7] is the byte just before `ret`. */
static __always_inline int follows_call(struct walk_ctx *w, __u64 ret, int other_task)
{
	__u8 *c = w->s->code;
	long err;

	if (ret < 8)
		return 0;
	if (other_task)
		err = bpf_copy_from_user_task(c, 8, (void *)(ret - 8), w->task, 0);
	else
		err = bpf_probe_read_user(c, 8, (void *)(ret - 8));
	if (err)
		return 0;
	return c[3] == 0xe8 ||                                                          /* call rel32 */
	       (c[6] == 0xff && ((c[7] & 0xf8) == 0xd0 || (c[7] & 0xf8) == 0x10)) ||    /* *%reg, *(%reg) */
	       (c[5] == 0xff && ((c[6] & 0xf8) == 0x50 || c[6] == 0x14)) ||             /* *d8(%reg), *(sib) */
	       (c[4] == 0xff && c[5] == 0x54) ||                                        /* *d8(sib) */
	       (c[2] == 0xff && (c[3] == 0x15 || (c[3] & 0xf8) == 0x90)) ||             /* *d32(%rip), *d32(%reg) */
	       (c[1] == 0xff && c[2] == 0x94);                                          /* *d32(sib) */
}

/* By frame pointer: {caller's rbp, return address} at rbp. A zero rbp is the outermost frame
 * (_start and a new thread clear it). With --user-walker=auto this is the way only for code
 * without a table: a process that started a moment ago, a binary whose table is still being
 * built, JIT code; and code that has a table but no row for the pc (code without CFI in a
 * binary with it: V8's builtins in node, hand-written assembly), as libdw's unwinder does. Most
 * of that has no frame pointers, so a return address that follows no call ends the walk there,
 * rather than give a word of data as a caller. `no_row`: the frame's pc had a table but no
 * row; a walk that cannot go on from it ends OFFWAKE_WALK_NO_ROW, whatever stopped it (a zero
 * rbp there is no outermost frame). */
static __always_inline long fp_step(struct walk_ctx *w, int other_task, int no_row)
{
	__u64 fp = w->bp, next, ret;
	__u32 err;

	if (!fp)
		return walk_end(w, no_row ? OFFWAKE_WALK_NO_ROW : OFFWAKE_WALK_COMPLETE);
	if ((err = stack_word(w, fp, &next, other_task, 1)) || (err = stack_word(w, fp + 8, &ret, other_task, 1)))
		return walk_end(w, no_row ? OFFWAKE_WALK_NO_ROW : err);
	if (cfg.unwind_tables && !follows_call(w, ret, other_task))
		return walk_end(w, no_row ? OFFWAKE_WALK_NO_ROW : OFFWAKE_WALK_BAD_FRAME);
	return next_frame(w, ret, fp + 16, next, 0);
}

/* By the row of the table: the CFA from rsp or rbp, the return address just below it, rbp
 * restored where it was saved. A signal trampoline's caller is the interrupted frame, whose
 * registers the kernel left on the stack. */
static __always_inline long table_step(struct walk_ctx *w, __u32 rule, int other_task)
{
	__u64 cfa, ret, bp = w->bp, sp;
	__s32 rbp_at;
	__u32 err;

	switch (offwake_unwind_kind(rule)) {
	case OFFWAKE_UNWIND_CFA_RSP:
	case OFFWAKE_UNWIND_CFA_RBP:
	case OFFWAKE_UNWIND_PLT:
		break;
	case OFFWAKE_UNWIND_END_OF_STACK:
		return walk_end(w, OFFWAKE_WALK_COMPLETE);
	case OFFWAKE_UNWIND_SIGNAL:
		if ((err = stack_word(w, w->sp + OFFWAKE_UNWIND_SIGNAL_RBP, &bp, other_task, 1)) ||
		    (err = stack_word(w, w->sp + OFFWAKE_UNWIND_SIGNAL_RSP, &sp, other_task, 1)) ||
		    (err = stack_word(w, w->sp + OFFWAKE_UNWIND_SIGNAL_RIP, &ret, other_task, 1)))
			return walk_end(w, err);
		return next_frame(w, ret, sp, bp, 1);
	case OFFWAKE_UNWIND_RA_RDI:
		/* rdi is known in the first frame only: the registers the thread entered with. Not
		 * in the walks of another task (at the stop): that path took the iterator's
		 * verification past a quarter of the limit (Verifier.EveryModesProgramsLoadFarBelowTheLimit). */
		if (other_task || w->nr != 1)
			return walk_end(w, OFFWAKE_WALK_UNSUPPORTED);
		w->s->reg_frames = 1;
		/* Its caller's sp may be this one's (the return address was popped already), never
		 * below (the CFA offset is unsigned). */
		return frame_found(w, w->s->first_di, offwake_unwind_cfa(rule, w->sp, w->bp, w->pc), bp, 0);
	case OFFWAKE_UNWIND_EXPRESSION:
		return walk_end(w, OFFWAKE_WALK_EXPRESSION);
	default:
		return walk_end(w, OFFWAKE_WALK_UNSUPPORTED);
	}
	cfa = offwake_unwind_cfa(rule, w->sp, w->bp, w->pc);
	if ((err = stack_word(w, cfa - 8, &ret, other_task, 1)))
		return walk_end(w, err);
	rbp_at = offwake_unwind_rbp_offset(rule);
	if (rbp_at && (err = stack_word(w, cfa + rbp_at, &bp, other_task, 1)))
		return walk_end(w, err);
	return next_frame(w, ret, cfa, bp, 0);
}

/* One frame, by the row of the tables where the pc has one, else by frame pointer. */
static __always_inline long walk_step(struct walk_ctx *w, int other_task)
{
	__u64 found;
	__u32 rule;

	if (w->nr >= cfg.stack_depth)
		return walk_end(w, OFFWAKE_WALK_DEPTH);
	if (w->proc) {
		found = unwind_frame_rule(w->proc, w->pc, w->exact, w->cached);
		rule = (__u32)found;
		/* Added, not branched on: two counters that branch make the verifier follow every
		 * mix of their values through the loop. The searches are the frames left. */
		w->cache_hits += found >> 32;
		if (rule != UNWIND_BY_FP && offwake_unwind_kind(rule) != OFFWAKE_UNWIND_NONE) {
			w->table_frames++;
			return table_step(w, rule, other_task);
		}
		w->fp_frames++;
		return fp_step(w, other_task, rule != UNWIND_BY_FP);
	}
	return fp_step(w, other_task, 0);
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

/* A walk's numbers: where it starts and, once walked, how it went. */
struct walk_run {
	__u64 pc, sp, bp; /* the registers the task entered the kernel with */
	__u64 hi;         /* the top of the thread's stack */
	__u32 cached;
	__u32 nr, end, table_frames, fp_frames, cache_hits; /* the walk's outcome */
};

static __always_inline void walk_start(struct walk_ctx *w, const struct walk_run *r, struct scratch *s,
				       const struct offwake_unwind_process *proc, struct task_struct *task)
{
	w->s = s;
	w->task = task;
	w->proc = proc;
	w->pc = r->pc;
	w->sp = r->sp;
	w->bp = r->bp;
	w->hi = r->hi;
	w->nr = 1;
	w->exact = 1;
	w->end = OFFWAKE_WALK_DEPTH; /* unless a step ends it first */
	w->cached = r->cached;
	w->table_frames = 0;
	w->fp_frames = 0;
	w->cache_hits = 0;
}

static __always_inline void walk_done(struct walk_run *r, const struct walk_ctx *w)
{
	r->nr = w->nr;
	r->end = w->end;
	r->table_frames = w->table_frames;
	r->fp_frames = w->fp_frames;
	r->cache_hits = w->cache_hits;
}

/* The walk of the current task's user stack, frame by frame, into s->st. A global function,
 * verified once on its own: inlined at each call site, the walk's loop was verified again
 * under each state of the program around it, which took the waking program past the
 * verifier's million instructions on a machine of this kind (2026-12-03, kernel 6.18.44). Its
 * pointers are its arguments (a global function's callers pass no others): `s`, the walk's
 * scratch, and `proc`, the process's tables (0: none). */
__noinline int walk_current_user_stack(struct walk_run *r, struct scratch *s, const struct offwake_unwind_process *proc)
{
	struct walk_ctx w;

	if (!r || !s)
		return 0;
	walk_start(&w, r, s, proc, 0);
	bpf_loop(OFFWAKE_MAX_STACK_DEPTH, walk_frame, &w, 0);
	walk_done(r, &w);
	return 0;
}

/* The same for task t, not running, from a sleepable program only. */
static __always_inline void walk_task_user_stack(struct walk_run *r, struct scratch *s,
						 const struct offwake_unwind_process *proc, struct task_struct *t)
{
	struct walk_ctx w;

	walk_start(&w, r, s, proc, t);
	bpf_loop(OFFWAKE_MAX_STACK_DEPTH, walk_task_frame, &w, 0);
	walk_done(r, &w);
}

/* Counts a walk that ended `end` with these frames: the walk made, or the one it replayed. */
static __always_inline void count_walk(struct offwake_counters *c, __u32 end, __u32 table_frames, __u32 fp_frames)
{
	if (!c)
		return;
	barrier_var(end);
	if (end < OFFWAKE_WALK_ENDS)
		c->user_walk_end[end]++;
	c->user_table_frames += table_frames;
	c->user_fp_frames += fp_frames;
}

/* The tables of t's process (0: none, or walks without tables), into the walk about to start. */
static __always_inline const struct offwake_unwind_process *tables_of(struct task_struct *t, struct walk_memo_head *h)
{
	const struct offwake_unwind_process *proc = cfg.unwind_tables ? unwind_process(t) : 0;

	h->tables = proc ? proc->generation : 0;
	h->tables_known = 1;
	return proc;
}

/* A walk, walked or replayed, of a process without unwind tables (t's) is counted, and the
 * tables asked for (want_tables()): `h` has the walk's tables (tables_of(), or the replayed
 * memo's; a published generation is never 0). */
static __always_inline void count_no_tables(const struct walk_memo_head *h, struct task_struct *t,
					    struct offwake_counters *c)
{
	if (cfg.unwind_tables && !h->tables) {
		COUNT(c, user_walk_no_tables);
		want_tables(t, c);
	}
}

/* Task t's user stack, from the registers it entered the kernel with: the current task's,
 * or (other_task, sleepable programs only) a task that is not running. `cached`: the cache of
 * unwind rules the calling program may use (unwind_cache_for()), 0 none. `role`: the current
 * task's memo (walk_memo.bpf.h) that the walk replays or is remembered in; MEMO_NONE for
 * another task's stack. */
static __always_inline __s64 user_stack_of(void *ctx, struct task_struct *t, int other_task, struct scratch *s,
					   __u32 cached, __u32 role, struct offwake_counters *c)
{
	const struct offwake_unwind_process *proc = 0;
	struct pt_regs *regs;
	struct walk_run run = {};
	struct walk_memo_head h = {};
	__s64 id;

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
	run.pc = regs_ip(regs);
	run.sp = regs_sp(regs);
	run.bp = regs_fp(regs);
	run.hi = run.sp + cfg.user_stack_limit;
	run.cached = cached;
	s->st.ips[0] = run.pc;
	s->win_start = 0;
	s->win_len = 0;
	s->read.n = 0;
	s->read.span = 0;
	s->read.sp0 = run.sp;
	s->first_di = regs_ra_reg(regs);
	s->reg_frames = 0;
	if (role < MEMO_ROLES) {
		/* The process's tables are looked up only if a memo of these registers is older
		 * than the last change to any process's (the epoch, read first). */
		h.pc = run.pc;
		h.sp = run.sp;
		h.bp = run.bp;
		h.epoch = *(volatile __u32 *)&unwind_tables_epoch;
		h.store_epoch = *(volatile __u32 *)&stack_store_epoch;
		id = walk_memo_replay(&h, s, run.hi, role);
		if (id == MEMO_TABLES_UNKNOWN) {
			proc = tables_of(t, &h);
			id = walk_memo_replay(&h, s, run.hi, role);
		}
		if (id >= 0) {
			count_no_tables(&h, t, c);
			count_walk(c, h.end, h.table_frames, h.fp_frames);
			COUNT(c, user_walks_replayed);
			return id;
		}
	}
	if (!h.tables_known)
		proc = tables_of(t, &h);
	count_no_tables(&h, t, c);
	if (other_task)
		walk_task_user_stack(&run, s, proc, t);
	else
		walk_current_user_stack(&run, s, proc);
	s->st.nr = run.nr;
	count_walk(c, run.end, run.table_frames, run.fp_frames);
	if (c) {
		c->user_unwind_cache_hits += run.cache_hits;
		c->user_unwind_searches += run.table_frames + run.fp_frames - run.cache_hits;
	}
	id = store_stack(s, OFFWAKE_USER, c);
	/* A memo replays a walk by its pc, sp, bp and the words it read: not one that took a
	 * return address from another register. */
	if (role < MEMO_ROLES && !s->reg_frames) {
		h.stack_id = id;
		h.words = s->read.n;
		h.end = run.end;
		h.table_frames = run.table_frames;
		h.fp_frames = run.fp_frames;
		walk_memo_keep(&h, s, role);
	}
	return id;
}

/* The current task's user stack, walked in scratch slot `slot` (SLOT_*), and remembered:
 * where it wakes another in the waking program's slot, where it blocks in the others. */
static __always_inline __s64 current_user_stack(void *ctx, __u32 slot, struct offwake_counters *c)
{
	return user_stack_of(ctx, bpf_get_current_task_btf(), 0, scratch_slot(slot), unwind_cache_for(slot),
			     slot == SLOT_WAKING ? MEMO_WAKER : MEMO_BLOCKED, c);
}

#endif /* OFFWAKE_USER_STACK_BPF_H */
