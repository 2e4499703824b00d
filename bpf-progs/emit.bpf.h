/* SPDX-License-Identifier: GPL-2.0 */
/* Where a kept block goes: added to its bucket in the aggregates map, or (timeline mode)
 * sent as one event through the events ring buffer. */
#ifndef OFFWAKE_EMIT_BPF_H
#define OFFWAKE_EMIT_BPF_H

#include "filters.bpf.h"

/* Whether a kept block of this length weighs the period rather than its length (--sample-period). */
static __always_inline int weighs_period(__u64 delta)
{
	return sampling() && delta < cfg.sample_period_ns;
}

/* A kept block of `delta` into its bucket `v` (0: the map was full): its weight, the length
 * or with --sample-period the period for a shorter block (block_rules.h). */
static __always_inline void add_to(struct offwake_value *v, __u64 delta, __u64 stamp,
				   struct offwake_counters *c)
{
	__u64 weight = sampling() ? offwake_block_weight(delta, cfg.sample_period_ns) : delta;

	if (!v) {
		if (c) {
			c->agg_map_full++;
			c->agg_map_full_ns += weight;
		}
		return;
	}
	__sync_fetch_and_add(&v->total_ns, weight);
	__sync_fetch_and_add(&v->count, 1);
	if (weighs_period(delta)) {
		__sync_fetch_and_add(&v->sampled, 1);
		__sync_fetch_and_add(&v->sampled_ns, delta);
		COUNT(c, sample_weighted);
	}
	if (delta > v->max_ns)
		v->max_ns = delta;
	if (stamp > v->last_ns)
		v->last_ns = stamp;
	COUNT(c, blocks);
}

/* --switch-output: added to the current window's map, with this CPU's count of programs on
 * that window held meanwhile (see window_busy). The count is taken before agg_window is read
 * again: a flip that came in between is then seen, and the program moves to the new window;
 * one that comes later waits for the count to drop. */
static __always_inline void aggregate_window(struct offwake_key *key, __u64 delta, __u64 stamp,
					     struct offwake_counters *c)
{
	struct offwake_value zero = {}, *v;
	__u32 zero_key = 0, w, now;
	struct window_busy *busy = bpf_map_lookup_elem(&window_busy, &zero_key);

	if (!busy) { /* never: a per-CPU array's entry 0 */
		add_to(0, delta, stamp, c);
		return;
	}
	w = *(volatile __u32 *)&agg_window & 1;
	__sync_fetch_and_add(&busy->programs[w], 1);
	now = *(volatile __u32 *)&agg_window & 1;
	if (now != w) {
		__sync_fetch_and_add(&busy->programs[w], -1);
		w = now;
		__sync_fetch_and_add(&busy->programs[w], 1);
	}
	if (w)
		v = map_lookup_or_insert(&aggregates_next, key, &zero);
	else
		v = map_lookup_or_insert(&aggregates, key, &zero);
	add_to(v, delta, stamp, c);
	__sync_fetch_and_add(&busy->programs[w], -1);
}

static __always_inline void aggregate(struct offwake_key *key, __u64 delta, __u64 stamp,
				      struct offwake_counters *c)
{
	/* Inserted as zeros and added to below, so that two CPUs racing to create the bucket
	 * both count. */
	struct offwake_value zero = {};

	if (switch_windows) {
		aggregate_window(key, delta, stamp, c);
		return;
	}
	add_to(map_lookup_or_insert(&aggregates, key, &zero), delta, stamp, c);
}

/* Timeline mode: the block as one event. A full ring buffer loses it, counted. */
static __always_inline void send_event(const struct offwake_key *key, __u64 start, __u64 end, __u64 stamp,
				       __u32 cpu, struct offwake_counters *c)
{
	struct offwake_event *e;

	/* Without a chain, the event ends where the key's chain would start. */
	if (chains())
		e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	else
		e = bpf_ringbuf_reserve(&events, OFFWAKE_EVENT_BASE_SIZE, 0);
	if (!e) {
		if (c) {
			c->ringbuf_drops++;
			c->ringbuf_drops_ns += sampling() ? offwake_block_weight(end - start, cfg.sample_period_ns)
							  : end - start;
		}
		return;
	}
	if (chains())
		__builtin_memcpy(&e->key, key, sizeof(e->key));
	else
		__builtin_memcpy(&e->key, key, OFFWAKE_KEY_BASE_SIZE);
	e->start_ns = start;
	e->end_ns = end;
	e->stamp_ns = stamp;
	e->cpu = cpu;
	e->flags = 0;
	if (weighs_period(end - start)) {
		e->flags = OFFWAKE_EVENT_SAMPLED;
		COUNT(c, sample_weighted);
	}
	/* Default wakeup policy: the reader is woken only when it has caught up. */
	bpf_ringbuf_submit(e, 0);
	COUNT(c, blocks);
}

static __always_inline void emit(struct offwake_key *key, __u64 start, __u64 end, __u64 stamp, __u32 cpu,
				 struct offwake_counters *c)
{
	if (cfg.timeline)
		send_event(key, start, end, stamp, cpu, c);
	else
		aggregate(key, end - start, stamp, c);
}

#endif /* OFFWAKE_EMIT_BPF_H */
