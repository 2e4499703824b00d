/* SPDX-License-Identifier: GPL-2.0 */
/* Kernel stacks, and the stack store.
 *
 * Kernel stacks of the current task come from bpf_get_stackid() into one
 * BPF_MAP_TYPE_STACK_TRACE map compared exactly (no BPF_F_FAST_STACK_CMP, no
 * BPF_F_REUSE_STACKID: ids stored in keys keep naming their stack). That map keeps one stack
 * per hash bucket; a stack whose bucket is taken goes to stack_store instead, a hash map that
 * compares whole stacks, which also holds the stacks these programs walk or copy themselves:
 * user stacks (user_stack.bpf.h) and kernel stacks of sleeping tasks. With --switch-output,
 * user space empties the store of the stacks no window used once it is half full
 * (stack_store_epoch, maps.bpf.h); a stack stored again has the same id, its hash. */
#ifndef OFFWAKE_STACKS_BPF_H
#define OFFWAKE_STACKS_BPF_H

#include "maps.bpf.h"

/* A kernel address as a number: through this CPU's scratch slot `s`, since the verifier does
 * no arithmetic on the pointers such addresses come in (to the program's context, to memory
 * of no size). */
static __always_inline __u64 kernel_address(struct scratch *s, const void *p)
{
	s->kernel_sp = (__u64)p;
	return *(volatile __u64 *)&s->kernel_sp;
}

static __always_inline int frames_to_bytes(void)
{
	__u32 depth = cfg.stack_depth;

	if (depth > OFFWAKE_MAX_STACK_DEPTH)
		depth = OFFWAKE_MAX_STACK_DEPTH;
	return depth * sizeof(__u64);
}

/* The stack store: whole stacks compared, no collisions while it has room. */

struct frames_ctx {
	const __u64 *a; /* the scratch stack */
	const __u64 *b; /* a stored stack */
	__u64 hash;
	__u32 nr;
	__u32 differ;
};

/* An index the verifier can see is below both the array size and the stored depth (the
 * compiler may otherwise index with the copy it had before the check). */
static __always_inline __u64 frame_index(__u32 i)
{
	volatile __u64 v = i;
	__u64 j = v;

	if (j >= OFFWAKE_MAX_STACK_DEPTH || j >= cfg.stack_depth)
		return OFFWAKE_MAX_STACK_DEPTH;
	return j;
}

static long hash_frame(__u32 i, void *data)
{
	struct frames_ctx *f = data;
	__u64 j = frame_index(i);

	if (j >= OFFWAKE_MAX_STACK_DEPTH)
		return 1;
	f->hash = (f->hash ^ f->a[j]) * 0x100000001B3ull;
	f->hash ^= f->hash >> 29;
	return 0;
}

static long compare_frame(__u32 i, void *data)
{
	struct frames_ctx *f = data;
	__u64 j = frame_index(i);

	if (j >= OFFWAKE_MAX_STACK_DEPTH)
		return 1;
	if (f->a[j] != f->b[j]) {
		f->differ = 1;
		return 1;
	}
	return 0;
}

static __always_inline int same_stack(struct offwake_stored_stack *a, struct offwake_stored_stack *b)
{
	struct frames_ctx f = { .a = a->ips, .b = b->ips };
	__u32 nr = a->nr;

	if (nr != b->nr || a->half != b->half)
		return 0;
	if (nr > OFFWAKE_MAX_STACK_DEPTH)
		return 0;
	bpf_loop(nr, compare_frame, &f, 0);
	return !f.differ;
}

/* Stores s->st (nr frames of `half`) and returns its id, or -errno (counted). Tries a second
 * hash if the first one names another stack. Not map_lookup_or_insert(): a stack this call
 * inserts needs no comparison, and a full store is counted apart from a collision. */
static __always_inline __s64 store_stack(struct scratch *s, __u32 half, struct offwake_counters *c)
{
	struct frames_ctx f = { .a = s->st.ips, .hash = 0xCBF29CE484222325ull ^ half };
	struct offwake_stored_stack *v;
	__u32 nr = s->st.nr;
	__u64 id;
	long err;
	int attempt;

	if (nr > OFFWAKE_MAX_STACK_DEPTH)
		nr = OFFWAKE_MAX_STACK_DEPTH;
	s->st.half = half;
	bpf_loop(nr, hash_frame, &f, 0);
	for (attempt = 0; attempt < 2; attempt++) {
		id = OFFWAKE_STORE_ID | (f.hash & OFFWAKE_STORE_HASH_MASK);
		v = bpf_map_lookup_elem(&stack_store, &id);
		if (!v) {
			err = bpf_map_update_elem(&stack_store, &id, &s->st, BPF_NOEXIST);
			if (!err)
				return id;
			if (err != -EEXIST) {
				if (c && half <= OFFWAKE_USER)
					c->stack_map_full[half & 1]++;
				return -ENOMEM;
			}
			v = bpf_map_lookup_elem(&stack_store, &id); /* another CPU stored it first */
			if (!v)
				continue;
		}
		if (same_stack(&s->st, v))
			return id;
		f.hash = (f.hash + 0x9E3779B97F4A7C15ull) * 0xBF58476D1CE4E5B9ull;
	}
	if (c)
		c->stack_collision[half & 1]++;
	return -EEXIST;
}

/* Whether `id`, which a memo remembered at store epoch *epoch (stack_store_epoch, read before
 * the id was stored), still names its stack: stack_traces ids always do; a stored one may have
 * been emptied by user space since (--switch-output). Checked only once the epoch changed,
 * then the memo takes the epoch it was checked at: user space changes it only after its
 * deletes, so a delete after this check changes it again. */
static __always_inline int stored_id_current(__s64 id, __u32 *epoch)
{
	__u32 now = *(volatile __u32 *)&stack_store_epoch;

	if (*epoch == now)
		return 1;
	if ((id & OFFWAKE_STORE_ID) && !bpf_map_lookup_elem(&stack_store, &id))
		return 0;
	*epoch = now;
	return 1;
}

/* Counts a failed stack helper call by kind and returns it. */
static __always_inline __s64 stack_error(long err, int half, struct offwake_counters *c)
{
	if (!c)
		return err;
	if (err == -EFAULT)
		c->stack_walk_failed[half & 1]++;
	else
		c->stack_other_error[half & 1]++;
	return err;
}

/* bpf_get_stackid() of the current task; a stack whose bucket another stack owns goes to
 * the stack store. A kernel walk from tp_btf starts inside this JITed program, for which the
 * unwinder has no data: its first frames (two on x86-64) are not even kernel addresses and
 * would split identical stacks into different ids, so cfg.kernel_stack_skip of them are
 * skipped. */
static __always_inline __s64 current_stack(void *ctx, __u64 flags, int half, struct scratch *s,
					   struct offwake_counters *c)
{
	long id, n;

	if (half == OFFWAKE_KERNEL)
		flags |= cfg.kernel_stack_skip & BPF_F_SKIP_FIELD_MASK;
	if (c)
		c->stack_captures[half & 1]++;
	id = bpf_get_stackid(ctx, &stack_traces, flags);
	if (id >= 0)
		return id;
	if (id != -EEXIST || !s)
		return stack_error(id, half, c);
	/* The same unwind again, into the store. */
	n = bpf_get_stack(ctx, s->st.ips, frames_to_bytes(), flags);
	if (n <= 0)
		return stack_error(n ? n : -EFAULT, half, c);
	s->st.nr = n / sizeof(__u64);
	COUNT(c, stack_store_fallbacks[half & 1]);
	return store_stack(s, half, c);
}

/* The current task's kernel stack, unwound with bpf_get_stack() into the stack store, from a
 * tp_btf program (its own first frames skipped, as in current_stack). */
static __always_inline __s64 unwound_kernel_stack(void *ctx, struct scratch *s, struct offwake_counters *c)
{
	long n = bpf_get_stack(ctx, s->st.ips, frames_to_bytes(), cfg.kernel_stack_skip & BPF_F_SKIP_FIELD_MASK);

	if (n <= 0)
		return stack_error(n ? n : -EFAULT, OFFWAKE_KERNEL, c);
	s->st.nr = n / sizeof(__u64);
	return store_stack(s, OFFWAKE_KERNEL, c);
}

/* The kernel stack of a task that is not running (blocked, or about to be switched in): it
 * has not moved since the task blocked, so it is the blocked stack. */
static __always_inline __s64 sleeping_kernel_stack(struct task_struct *t, struct scratch *s,
						   struct offwake_counters *c)
{
	long n;

	if (!s)
		return -ENOMEM;
	COUNT(c, stack_captures[OFFWAKE_KERNEL]);
	n = bpf_get_task_stack(t, s->st.ips, frames_to_bytes(), 0);
	if (n <= 0)
		return stack_error(n ? n : -EFAULT, OFFWAKE_KERNEL, c);
	s->st.nr = n / sizeof(__u64);
	return store_stack(s, OFFWAKE_KERNEL, c);
}

#endif /* OFFWAKE_STACKS_BPF_H */
