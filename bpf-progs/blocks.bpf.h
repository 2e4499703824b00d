/* SPDX-License-Identifier: GPL-2.0 */
/* Ending a block: the duration filters, and a kept block made into its key (the blocked
 * thread, its stacks and state, its waker and chain) and emitted, or parked for its user
 * stack. */
#ifndef OFFWAKE_BLOCKS_BPF_H
#define OFFWAKE_BLOCKS_BPF_H

#include "block_rules.h"
#include "deferred_user.bpf.h"

/* Where no other CPU can be writing b's wakeup: at a switch-in (the waker's program has
 * returned before the task could be queued to run), or for a block not recorded. */
static __always_inline void clear_waker(struct offwake_task_block *b)
{
	b->wake_flags = 0;
}

/* As the task switches out, where a waker's CPU may be storing a wakeup on its way in: b's
 * wakeup, read as `seen` (0: none to drop), is dropped only if it is still that one. */
static __always_inline void drop_waker_seen(struct offwake_task_block *b, __u32 seen)
{
	if (seen)
		__sync_val_compare_and_swap(&b->wake_flags, seen, 0);
}

/* As the task switches out into a block: a wakeup recorded before, not on the way in, is
 * stale; one on the way in may be stored from the waker's CPU right now, and stays. */
static __always_inline void drop_stale_waker(struct offwake_task_block *b)
{
	__u32 seen = *(volatile __u32 *)&b->wake_flags;

	if (!(seen & TB_WAKE_ON_CPU))
		drop_waker_seen(b, seen);
}

/* Whether a recorded wakeup `wake` (b->wake_flags, read once) ended b's open block
 * (block_rules.h); `ran_since`: the task ran again with the block open (a late end). */
static __always_inline int waker_of_block(const struct offwake_task_block *b, __u32 wake, int ran_since)
{
	return offwake_wakeup_of_block(wake & TB_WAKER, wake & TB_WAKE_ON_CPU, b->wake_ts, b->block_ts, ran_since);
}

/* How an open block ended, for finish_block(). */
struct block_end {
	__u64 at;            /* the end time */
	__s64 kern_stack_id; /* the blocked kernel stack */
	__u32 no_waker;      /* 0: b's recorded waker ended the block. Else the block has none of
	                      * its own, and this says why: OFFWAKE_WAKER_NONE (no wakeup seen) or
	                      * OFFWAKE_WAKER_STILL_BLOCKED (the recording stopped first) */
	__u32 at_switch_in;  /* ended by its traced switch-in: a deferred user stack can be had */
};

/* The blocked thread's half of the key of b's block. */
static __always_inline void key_of_block(struct offwake_key *key, struct task_struct *t,
					 const struct offwake_task_block *b, __s64 kern)
{
	if (chains())
		__builtin_memset(key, 0, sizeof(*key));
	else
		__builtin_memset(key, 0, OFFWAKE_KEY_BASE_SIZE);
	key->tgid = t->tgid;
	key->tid = t->pid;
	key->ident = task_ident(t);
	key->kern_stack_id = kern;
	key->user_stack_id = b->user_stack_id;
	key->state = b->state;
	key->cgroup_id = b->cgroup_id;
	/* The comm at the end of the block: the thread could not rename itself while blocked. */
	__builtin_memcpy(key->comm, t->comm, sizeof(key->comm));
}

/* The key's waker is b's recorded one. Returns the sample's time stamp: the wakeup, when
 * both threads had these identities (the blocked one was asleep, the waker was running). A
 * waker recorded before the block reached --min-block (OFFWAKE_WAKER_EARLY: named, without
 * stacks or chain) is counted in woken_early. */
static __always_inline __u64 key_recorded_waker(struct offwake_key *key, const struct offwake_task_block *b,
						struct offwake_counters *c)
{
	OFFWAKE_COPY_WAKER(key, b);
	if (b->waker_flags & OFFWAKE_WAKER_EARLY)
		COUNT(c, woken_early);
	return b->wake_ts;
}

/* The key has no waker, for the reason `why` (block_end.no_waker). */
static __always_inline void key_no_waker(struct offwake_key *key, __u32 why, struct offwake_counters *c)
{
	key->waker_flags = why;
	key->waker_kern_stack_id = OFFWAKE_NO_STACK;
	key->waker_user_stack_id = OFFWAKE_NO_STACK;
	if (why == OFFWAKE_WAKER_NONE)
		COUNT(c, missed_wakeups);
}

/* The open block of task t (b->block_ts != 0) ended as `e` says and is kept. Its key is
 * built in b->pending and emitted now, or parked there until its user stack is walked (a
 * parked block is always emitted before the task can block again, so b->pending is free
 * here). */
static __always_inline void finish_block(struct task_struct *t, struct offwake_task_block *b,
					 const struct block_end *e, struct offwake_counters *c)
{
	struct offwake_key *key = &b->pending;
	__u64 start = b->block_ts;
	__u64 stamp = start;
	int park = 0;

	key_of_block(key, t, b, e->kern_stack_id);
	if (!e->no_waker) {
		stamp = key_recorded_waker(key, b, c);
		chain_of_waker(key, b);
	} else {
		key_no_waker(key, e->no_waker, c);
		chain_no_waker(key);
	}
	b->block_ts = 0;
	/* Only a switch-in can have a user stack still to walk (the other callers settle it
	 * first, and the sleepable iterator may not even refer to the task work). */
	if (e->at_switch_in && (b->flags & TB_DEFER_USER))
		park = defer_user_stack(t, b, start, e->at, stamp, c);
	chain_set_last(b, key, park);
	if (!park)
		emit(key, start, e->at, stamp, bpf_get_smp_processor_id(), c);
}

/* Whether a block of this length so far is dropped by the duration filters or its sampling
 * draw; counted. Its wakeup is the caller's to settle. */
static __always_inline int filtered_out(struct offwake_task_block *b, __u64 delta, struct offwake_counters *c)
{
	b->last_ns = delta;
	if (duration_kept(delta, b->keep_ns))
		return 0;
	b->block_ts = 0;
	/* The latest block has no stacks: the tasks this one wakes get no hop from it. */
	chain_no_last(b, OFFWAKE_CHAIN_END_NOT_KEPT);
	b->flags &= ~TB_DEFER_USER;
	if (sampling() && offwake_duration_kept(delta, cfg.min_block_ns, cfg.max_block_ns))
		COUNT(c, sample_dropped);
	else
		COUNT(c, filtered);
	return 1;
}

/* When b's block, still open while its task runs, ended: at its own recorded wakeup (`*own`
 * set to `wake`, b's wakeup as read), else `now`, the latest it can have ended (`*own` 0). A
 * wakeup that is not this block's stays: it came on the way into the block that the task's
 * next switch-out begins. */
static __always_inline __u64 missed_block_end(const struct offwake_task_block *b, __u32 wake, __u64 now,
					       __u32 *own)
{
	*own = waker_of_block(b, wake, 1) ? wake : 0;
	return offwake_late_block_end(*own != 0, b->wake_ts, b->block_ts, now);
}

/* Whether b's block, still open while its task runs, is sure to be dropped by the duration
 * filters or its draw when it is ended (end_missed_block): its end is its own wakeup, or it
 * is already too long at `now`. */
static __always_inline int missed_block_dropped(const struct offwake_task_block *b, __u64 now)
{
	__u32 own;
	__u64 delta = missed_block_end(b, b->wake_flags, now, &own) - b->block_ts;

	return !duration_kept(delta, b->keep_ns) && (own || delta >= b->keep_ns);
}

/* The current task `cur` runs with b's block still open: its switch-in was not traced (the
 * kernel now and then fires no sched_switch for a switch, mostly out of the idle task, as
 * perf -e sched:sched_switch also shows; see untraced_switches). The block ended at its
 * recorded wakeup if there was one, else now (an upper bound). Its kernel stack is gone
 * (unless taken at switch-out, --sched-frames), and so is a deferred user stack: the task
 * may have left that system call since. */
static __always_inline void end_missed_block(struct task_struct *cur, struct offwake_task_block *b, __u64 now,
					     struct offwake_counters *c)
{
	struct block_end e = { .kern_stack_id = b->kern_stack_id };
	__u32 own; /* its own wakeup, as read once (drop_waker_seen()) */

	e.at = missed_block_end(b, *(volatile __u32 *)&b->wake_flags, now, &own);
	COUNT(c, late_ends);
	if (!filtered_out(b, e.at - b->block_ts, c)) {
		if (b->flags & TB_DEFER_USER) {
			b->flags &= ~TB_DEFER_USER;
			b->user_stack_id = -OFFWAKE_ERR_NOT_TRACED;
		}
		if (!cfg.sched_frames) {
			COUNT(c, kernel_stack_not_traced);
			e.kern_stack_id = -OFFWAKE_ERR_NOT_TRACED;
		}
		e.no_waker = own ? 0 : OFFWAKE_WAKER_NONE;
		finish_block(cur, b, &e, c);
	}
	/* Its own wakeup is used up; another one came on the way into the next block. */
	drop_waker_seen(b, own);
}

#endif /* OFFWAKE_BLOCKS_BPF_H */
