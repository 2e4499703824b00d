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

#endif /* OFFWAKE_UNWIND_TABLES_BPF_H */
