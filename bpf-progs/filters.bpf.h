/* SPDX-License-Identifier: GPL-2.0 */
/* Which tasks, states and blocks are recorded, and the modes the configuration selects.
 * cfg is constant after load, so the verifier drops the branches of the modes not chosen. */
#ifndef OFFWAKE_FILTERS_BPF_H
#define OFFWAKE_FILTERS_BPF_H

#include "block_rules.h"
#include "maps.bpf.h"

/* Whether the recording has stopped by `now`. */
static __always_inline int stopped(__u64 now)
{
	__u64 stop = *(volatile __u64 *)&stop_ns;

	return stop && now >= stop;
}

/* The same now, for a program that has not read the clock: it reads it only once user space
 * has set the stop, so that a run that ends before it needs the time costs no clock read
 * (110 to 150 ns here). */
static __always_inline int stopped_now(void)
{
	return *(volatile __u64 *)&stop_ns && stopped(bpf_ktime_get_ns());
}

static __always_inline int task_wanted(struct task_struct *t)
{
	__u32 tgid, tid;

	if (cfg.user_threads_only && (t->flags & PF_KTHREAD))
		return 0;
	if (cfg.kernel_threads_only && !(t->flags & PF_KTHREAD))
		return 0;
	if (cfg.filter_tgids) {
		tgid = t->tgid;
		if (!bpf_map_lookup_elem(&target_tgids, &tgid))
			return 0;
	}
	if (cfg.filter_tids) {
		tid = t->pid;
		if (!bpf_map_lookup_elem(&target_tids, &tid))
			return 0;
	}
	return 1;
}

/* The rules shared with the tracepoint back end (block_rules.h), with this recording's
 * configuration. */
static __always_inline int state_wanted(__u32 state)
{
	return offwake_state_wanted(state, cfg.state_mask);
}

/* Whether blocks are dropped (duration filters, sampling), so that stacks are worth deferring. */
static __always_inline int lazy(void)
{
	return offwake_lazy_capture(cfg.eager, cfg.min_block_ns, cfg.max_block_ns, cfg.sample_period_ns);
}

/* Whether blocks are sampled (--sample-period). */
static __always_inline int sampling(void)
{
	return cfg.sample_period_ns != 0;
}

/* Wakeup chains (--chain-depth > 1). Constant after load: with depth 1 the verifier drops
 * every chain branch, and nothing of this runs. */
static __always_inline int chains(void)
{
	return cfg.chain_depth > 1;
}

/* The length at which a block starting now is kept: --min-block, or with sampling a threshold
 * drawn now (block_rules.h). */
static __always_inline __u64 draw_keep_threshold(void)
{
	if (!sampling())
		return cfg.min_block_ns;
	return offwake_keep_threshold(cfg.min_block_ns, cfg.sample_period_ns, bpf_get_prandom_u32());
}

/* Whether a block of this length, with this threshold (draw_keep_threshold), is kept. */
static __always_inline int duration_kept(__u64 delta, __u64 keep_ns)
{
	return offwake_duration_kept(delta, keep_ns, cfg.max_block_ns);
}

/* Lazily, whether a block starting now, kept once it is `keep_ns` long, has its user stack
 * walked at switch-out rather than deferred until it is known to be kept: if the task's last
 * block (`last_ns` long, 0 if none was seen) would have been kept. Walked now, a stack costs
 * its walk, wasted if the block is dropped; deferred, it costs a task work and a cold walk
 * from another context, for kept blocks only. With sampling the threshold is drawn anew for
 * each block, so this follows the draw: a thread whose blocks last about d has a block's
 * stack walked now with probability d/P, about the blocks that are kept. */
static __always_inline int walk_at_switch_out(__u64 keep_ns, __u64 last_ns)
{
	return last_ns >= keep_ns;
}

/* Who a task is: its start time tells a reused pid apart, its exec count an exec. */
static __always_inline __u64 task_ident(struct task_struct *t)
{
	__u64 id = t->start_time ^ (t->self_exec_id * 0x9E3779B97F4A7C15ull);

	return id ? id : 1;
}

#endif /* OFFWAKE_FILTERS_BPF_H */
