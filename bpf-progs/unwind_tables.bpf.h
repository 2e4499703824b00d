/* SPDX-License-Identifier: GPL-2.0 */
/* The unwind tables of .eh_frame, as user space builds them (perf-plugin/unwind/) and the user
 * walker (user_stack.bpf.h) reads them: every table's rows in one array, and per process the
 * mappings that say which rows serve which pc (unwind_row.h has both layouts). */
#ifndef OFFWAKE_UNWIND_TABLES_BPF_H
#define OFFWAKE_UNWIND_TABLES_BPF_H

#include "maps.bpf.h"
#include "unwind_row.h"

/* Every table's rows, one after another. Memory-mapped by user space, which writes a table's
 * rows before it publishes a mapping that names them, and never changes them afterwards. The
 * loader sets max_entries (--unwind-memory); 1 without tables. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct offwake_unwind_row);
	__uint(max_entries, 1);
} unwind_rows SEC(".maps");

/* Per tgid, its mappings with a table. Replaced whole by user space when they change: a walk
 * in progress keeps the element it looked up. The loader sets max_entries. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u32);
	__type(value, struct offwake_unwind_process);
	__uint(max_entries, 1);
} unwind_processes SEC(".maps");

/* Processes walked without tables while only some processes have them (cfg.unwind_on_request:
 * -p, -t or a command): the targets' wakers in other processes, which user space then gives
 * tables and follows (UserUnwind::serve_requests). A process asks once until user space has
 * read its request and removed it. The loader sets max_entries (1 when off). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, __u8);
	__uint(max_entries, 1);
} unwind_wanted SEC(".maps");

/* t's process has no tables: asked for, if tables come on request. */
static __always_inline void want_tables(struct task_struct *t, struct offwake_counters *c)
{
	__u32 tgid = t->tgid;
	__u8 one = 1;

	if (cfg.unwind_on_request && bpf_map_update_elem(&unwind_wanted, &tgid, &one, BPF_NOEXIST) == -E2BIG)
		COUNT(c, unwind_requests_full);
}

static __always_inline const struct offwake_unwind_process *unwind_process(struct task_struct *t)
{
	__u32 tgid = t->tgid;

	return bpf_map_lookup_elem(&unwind_processes, &tgid);
}

struct mapping_search {
	const struct offwake_unwind_process *p;
	__u64 pc;
	__u32 lo, hi;
};

static long mapping_halve(__u32 i, void *data)
{
	struct mapping_search *q = data;

	return offwake_unwind_mapping_halve(q->p, q->pc, &q->lo, &q->hi);
}

/* The mapping of process p that holds pc, or 0. */
static __always_inline const struct offwake_unwind_mapping *unwind_mapping(const struct offwake_unwind_process *p,
									   __u64 pc)
{
	struct mapping_search q = { .p = p, .pc = pc, .hi = offwake_unwind_mappings(p) };

	bpf_loop(OFFWAKE_UNWIND_MAPPING_STEPS, mapping_halve, &q, 0);
	return offwake_unwind_mapping_found(p, pc, q.lo);
}

struct row_search {
	__u32 first; /* the table's first row in unwind_rows */
	__u32 pc;    /* offset of the pc from the table's base */
	__u32 lo, hi;
};

static long row_halve(__u32 i, void *data)
{
	struct row_search *q = data;
	const struct offwake_unwind_row *row;
	__u32 key;

	if (q->lo >= q->hi)
		return 1;
	key = q->first + offwake_unwind_mid(q->lo, q->hi);
	row = bpf_map_lookup_elem(&unwind_rows, &key);
	if (!row) {
		q->lo = 0; /* outside the array: no row */
		return 1;
	}
	offwake_unwind_halve(&q->lo, &q->hi, row->pc, q->pc);
	return 0;
}

/* The rule for offset `pc` in mapping m's table: 0 (OFFWAKE_UNWIND_NONE) where no row is. */
static __always_inline __u32 unwind_rule(const struct offwake_unwind_mapping *m, __u64 pc)
{
	struct row_search q = { .first = m->first_row, .pc = (__u32)pc, .hi = m->rows };
	const struct offwake_unwind_row *row;
	__u32 key;

	if (pc > 0xffffffffull)
		return OFFWAKE_UNWIND_NONE;
	bpf_loop(OFFWAKE_UNWIND_SEARCH_STEPS, row_halve, &q, 0);
	if (!q.lo)
		return OFFWAKE_UNWIND_NONE;
	key = q.first + q.lo - 1;
	row = bpf_map_lookup_elem(&unwind_rows, &key);
	return row ? row->rule : OFFWAKE_UNWIND_NONE;
}

/* What the walker found for a frame's pc: the rule of its row, or UNWIND_BY_FP when no
 * mapping with a table holds the pc (the frame is walked by its frame pointer). No rule is
 * this value: its kind bits are 15. */
#define UNWIND_BY_FP 0xffffffffu

/* A per-CPU cache of those answers, direct-mapped: the two binary searches (the process's
 * mappings, then the table's rows, each a bpf_loop with a map lookup per halving) give the
 * same answer for the same pc as long as the process's mappings are the same, and a thread
 * blocks, and wakes others, from the same few places again and again. An entry is keyed by
 * the pc (times 2, plus 1 for an exact pc, whose row is the pc's own rather than the byte
 * before's) and the generation of the mappings it was found in, which user space renews at
 * every change (offwake_unwind_process.generation); rows never change once placed. There
 * are UNWIND_CACHES of them, each for programs that never run nested in each other on one
 * CPU (unwind_cache_for(), maps.bpf.h), so that an entry is never seen half written. The
 * loader keeps max_entries with tables, and sets 1 without. */
#define UNWIND_CACHE_ENTRIES 4096 /* a power of 2, per cache */
#define UNWIND_CACHES 2

struct unwind_cache_entry {
	__u64 tag;        /* pc * 2 + exact; 0: empty (no pc is 0) */
	__u32 generation;
	__u32 rule;       /* or UNWIND_BY_FP */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct unwind_cache_entry);
	__uint(max_entries, UNWIND_CACHE_ENTRIES * UNWIND_CACHES);
} unwind_cache SEC(".maps");

/* The entry for `tag` in cache `cache` (1 .. UNWIND_CACHES). */
static __always_inline struct unwind_cache_entry *unwind_cache_slot(__u64 tag, __u32 generation, __u32 cache)
{
	__u32 key = ((tag ^ (__u64)generation << 40) * 0x9E3779B97F4A7C15ull) >> 52;

	_Static_assert(UNWIND_CACHE_ENTRIES == 1 << 12, "the hash gives 12 bits");
	key += (cache - 1) * UNWIND_CACHE_ENTRIES;
	return bpf_map_lookup_elem(&unwind_cache, &key);
}

/* The rule for a frame at `pc` of process p (`exact`: pc is where the frame stopped, not a
 * return address), or UNWIND_BY_FP, in the low 32 bits; bit 32 set if it came from the cache
 * (`cached`: which, unwind_cache_for(); and p has a generation), else it was searched and the
 * cache keeps it. A global
 * function, verified once on its own: inlined into the walk's loop, its paths (hit or miss,
 * cached or not) multiplied the walk's states past the verifier's limit. */
__noinline __u64 unwind_frame_rule(const struct offwake_unwind_process *p, __u64 pc, __u32 exact, __u32 cached)
{
	struct unwind_cache_entry *e = 0;
	const struct offwake_unwind_mapping *m;
	__u64 tag = pc << 1 | (exact ? 1 : 0);
	__u32 generation, rule;

	if (!p)
		return UNWIND_BY_FP;
	generation = p->generation;
	if (cached && cached <= UNWIND_CACHES && generation && pc < OFFWAKE_USER_ADDR_LIMIT) {
		e = unwind_cache_slot(tag, generation, cached);
		if (e && e->tag == tag && e->generation == generation)
			return 1ull << 32 | e->rule;
	}
	m = unwind_mapping(p, pc);
	/* A return address is the instruction after a call, which may begin the next function:
	 * its rule is the one of the byte before. */
	rule = m && m->rows ? unwind_rule(m, pc - m->bias - (exact ? 0 : 1)) : UNWIND_BY_FP;
	if (e) {
		e->tag = tag;
		e->generation = generation;
		e->rule = rule;
	}
	return rule;
}

#endif /* OFFWAKE_UNWIND_TABLES_BPF_H */
