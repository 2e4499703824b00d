/* SPDX-License-Identifier: GPL-2.0 */
/* Wakeup chains (--chain-depth > 1): who woke the waker, hop by hop. A hop costs no stack
 * walk: each task keeps its latest block, with that block's own chain, as `last`; a waker's
 * `last` is copied at sched_waking into the `chain` of the task it wakes, and from there into
 * the key of the block that wakeup ends. Every function here does nothing with depth 1, and
 * since cfg is constant after load the verifier drops it all. */
#ifndef OFFWAKE_CHAIN_BPF_H
#define OFFWAKE_CHAIN_BPF_H

#include "filters.bpf.h"

/* dst->hop[i] = src[i] for the first n hops that the depth has room for. */
static __always_inline void copy_hops(struct offwake_hop *dst, const struct offwake_hop *src, __u32 n)
{
#pragma unroll
	for (int i = 0; i < OFFWAKE_CHAIN_SLOTS; i++) {
		if (i + 1 >= cfg.chain_depth || i >= n)
			break;
		__builtin_memcpy(&dst[i], &src[i], sizeof(dst[i]));
	}
}

/* b's open block ends with no further hop, for the reason `end` (OFFWAKE_CHAIN_END_*): its
 * waker is an interrupt, or was not followed. */
static __always_inline void chain_end(struct offwake_task_block *b, __u32 end)
{
	if (!chains())
		return;
	b->chain.hops = 0;
	b->chain.end = end;
}

/* The chain of the block the waker `cur` (not an interrupt) is ending: its own latest block
 * and what was behind that, as `last` holds them. */
static __always_inline void chain_take(struct offwake_task_block *b, struct task_struct *cur)
{
	struct offwake_task_block *w;
	__u32 n;

	if (!chains())
		return;
	b->chain.hops = 0;
	if (cur->flags & PF_KTHREAD) {
		b->chain.end = OFFWAKE_CHAIN_END_KTHREAD;
		return;
	}
	w = task_block(cur);
	if (!w || !w->last.hops) {
		b->chain.end = w && w->last.end ? w->last.end : OFFWAKE_CHAIN_END_UNSEEN;
		return;
	}
	n = w->last.hops;
	copy_hops(b->chain.hop, w->last.hop, n);
	b->chain.hops = n < cfg.chain_depth ? n : cfg.chain_depth - 1;
	b->chain.end = w->last.end;
}

/* The chain of the block b is finishing as `key`, which its recorded waker ended: the one
 * that waker brought (chain_take). */
static __always_inline void chain_of_waker(struct offwake_key *key, const struct offwake_task_block *b)
{
	if (!chains())
		return;
	copy_hops(key->chain.hop, b->chain.hop, b->chain.hops);
	key->chain.hops = b->chain.hops;
	key->chain.end = b->chain.end;
}

/* The chain of a key without a recorded waker: none. */
static __always_inline void chain_no_waker(struct offwake_key *key)
{
	if (chains())
		key->chain.end = OFFWAKE_CHAIN_END_NO_WAKER;
}

/* b's block, just finished as `key`, becomes the task's latest block: the first hop of the
 * chains of the tasks it wakes next, its own chain behind it. A block parked for its user
 * stack gets it when it is walked (emit_pending, chain_set_last_user). */
static __always_inline void chain_set_last(struct offwake_task_block *b, const struct offwake_key *key, int parked)
{
	struct offwake_chain *l = &b->last;
	struct offwake_hop *h = &l->hop[0];
	__u32 n;

	if (!chains())
		return;
	n = key->chain.hops + 1;
	h->kern_stack_id = key->kern_stack_id;
	h->user_stack_id = parked ? -OFFWAKE_ERR_IN_PROGRESS : key->user_stack_id;
	h->state = key->state;
	OFFWAKE_COPY_WAKER(h, key);
	copy_hops(&l->hop[1], key->chain.hop, cfg.chain_depth > 2 ? key->chain.hops : 0);
	if (n >= cfg.chain_depth) {
		n = cfg.chain_depth - 1;
		l->end = OFFWAKE_CHAIN_END_DEPTH;
	} else {
		l->end = key->chain.end;
	}
	l->hops = n;
}

/* The task's latest block, parked until now, got its user stack. */
static __always_inline void chain_set_last_user(struct offwake_task_block *b, __s64 user)
{
	if (chains())
		b->last.hop[0].user_stack_id = user;
}

/* The task's latest block gives no hop to the tasks it wakes, for the reason `end`: it was
 * not recorded, or dropped by the duration filters (it has no stacks). */
static __always_inline void chain_no_last(struct offwake_task_block *b, __u32 end)
{
	if (!chains())
		return;
	b->last.hops = 0;
	b->last.end = end;
}

#endif /* OFFWAKE_CHAIN_BPF_H */
