/* One row of an unwind table: how to go from a frame at `pc` to its caller on x86-64.
 * C, fixed-width types only, so that the BPF user walker (issue 23 item 2) can compile the
 * same decoder and the same search as the C++ code that builds and checks the tables
 * (perf-plugin/unwind/); hence its place in offwake_abi, beside offwake.h.
 *
 * A table is an array of rows sorted by pc; a row holds from its pc up to the next row's.
 * 8 bytes a row, so that a 4 KiB page holds 512 rows and Debian 12's libc (28k rows) 221 KiB:
 *
 *   __u32 pc    offset of the row's first address from the table's base address (the ELF
 *               virtual address of its first executable byte), so that one table serves
 *               every process that maps the file, whatever its load bias
 *   __u32 rule  bits 0-3   kind (OFFWAKE_UNWIND_*)
 *               bits 4-11  where the caller's rbp was saved: signed, in 8-byte units, from
 *                          the CFA; 0 means rbp is unchanged (nothing is ever saved at the
 *                          CFA itself: that is the caller's own stack)
 *               bits 12-31 CFA offset in bytes from rsp or rbp (unsigned, < 1 MiB)
 *
 * The return address is always at CFA - 8 for CFA_RSP, CFA_RBP and PLT, and in rdi for RA_RDI:
 * a rule whose return address is elsewhere is UNSUPPORTED. The caller's rsp is the CFA. */
#ifndef OFFWAKE_UNWIND_ROW_H
#define OFFWAKE_UNWIND_ROW_H

#include <linux/types.h>

#define OFFWAKE_UNWIND_INLINE static inline __attribute__((__always_inline__))

/* Kinds a walker can follow, then kinds that end the walk (each counted on its own). Zero is
 * "no information", so that a row a walker finds zeroed never sends it anywhere. */
enum offwake_unwind_kind {
	OFFWAKE_UNWIND_NONE = 0,        /* no FDE covers this address (between functions) */
	OFFWAKE_UNWIND_CFA_RSP = 1,     /* CFA = rsp + offset */
	OFFWAKE_UNWIND_CFA_RBP = 2,     /* CFA = rbp + offset (code with a frame pointer) */
	/* PLT entries: CFA = rsp + 8 + ((pc & 15) >= offset ? 8 : 0). The one DWARF expression
	 * that binutils writes for every lazy PLT (offset 11; 10 with IBT's endbr64), worth a kind
	 * because every call into a shared library passes through one. rbp is unchanged. */
	OFFWAKE_UNWIND_PLT = 3,
	OFFWAKE_UNWIND_END_OF_STACK = 4, /* return address undefined: _start, a thread's start */
	OFFWAKE_UNWIND_SIGNAL = 5,      /* signal trampoline (CIE 'S'): the caller is in a ucontext */
	OFFWAKE_UNWIND_EXPRESSION = 6,  /* CFA, rbp or return address by another DWARF expression */
	/* Anything else: CFA from a register other than rsp and rbp, rbp saved in a register,
	 * return address not at CFA - 8, offsets that do not fit the fields. */
	OFFWAKE_UNWIND_UNSUPPORTED = 7,
	/* CFA = rsp + offset, the return address in rdi, rbp unchanged: glibc's vfork, which pops
	 * its return address before the system call (the child, sharing the parent's memory, would
	 * overwrite it on the stack). A walker knows rdi only in the first frame, from the
	 * registers the thread entered the kernel with; in any other frame this ends the walk as
	 * UNSUPPORTED does. */
	OFFWAKE_UNWIND_RA_RDI = 8,
	OFFWAKE_UNWIND_KINDS = 9,
};

#define OFFWAKE_UNWIND_KIND_BITS 4
#define OFFWAKE_UNWIND_RBP_BITS 8
#define OFFWAKE_UNWIND_CFA_BITS 20
#define OFFWAKE_UNWIND_CFA_MAX ((1u << OFFWAKE_UNWIND_CFA_BITS) - 1)
#define OFFWAKE_UNWIND_RBP_MIN (-(1 << (OFFWAKE_UNWIND_RBP_BITS - 1)) * 8)
#define OFFWAKE_UNWIND_RBP_MAX (((1 << (OFFWAKE_UNWIND_RBP_BITS - 1)) - 1) * 8)
/* A binary search over at most 2^32 rows ends within 32 halvings: the bound of the loop. */
#define OFFWAKE_UNWIND_SEARCH_STEPS 32

struct offwake_unwind_row {
	__u32 pc;
	__u32 rule;
};

/* `rbp_offset` in bytes from the CFA, a multiple of 8 within OFFWAKE_UNWIND_RBP_MIN..MAX, or 0
 * for unchanged; `cfa_offset` at most OFFWAKE_UNWIND_CFA_MAX. The builder checks both. */
OFFWAKE_UNWIND_INLINE __u32 offwake_unwind_pack(__u32 kind, __u32 cfa_offset, __s32 rbp_offset)
{
	__u32 rbp = (__u32)(rbp_offset / 8) & ((1u << OFFWAKE_UNWIND_RBP_BITS) - 1);

	return (kind & ((1u << OFFWAKE_UNWIND_KIND_BITS) - 1)) | rbp << OFFWAKE_UNWIND_KIND_BITS |
	       cfa_offset << (OFFWAKE_UNWIND_KIND_BITS + OFFWAKE_UNWIND_RBP_BITS);
}

OFFWAKE_UNWIND_INLINE __u32 offwake_unwind_kind(__u32 rule)
{
	return rule & ((1u << OFFWAKE_UNWIND_KIND_BITS) - 1);
}

OFFWAKE_UNWIND_INLINE __u32 offwake_unwind_cfa_offset(__u32 rule)
{
	return rule >> (OFFWAKE_UNWIND_KIND_BITS + OFFWAKE_UNWIND_RBP_BITS);
}

/* Bytes from the CFA to where rbp was saved (negative in practice), or 0: unchanged. */
OFFWAKE_UNWIND_INLINE __s32 offwake_unwind_rbp_offset(__u32 rule)
{
	__s8 units = (__s8)((rule >> OFFWAKE_UNWIND_KIND_BITS) & ((1u << OFFWAKE_UNWIND_RBP_BITS) - 1));

	return (__s32)units * 8;
}

/* One halving of the search for the last row whose pc is at or below `pc`, with the rows
 * [*lo, *hi) still in question: `mid_pc` is the pc of row offwake_unwind_mid(*lo, *hi). The
 * answer is *lo - 1 once *lo == *hi. The one step of both searches: over an array here, over a
 * BPF map in the walker. */
OFFWAKE_UNWIND_INLINE __u32 offwake_unwind_mid(__u32 lo, __u32 hi)
{
	return lo + (hi - lo) / 2;
}

OFFWAKE_UNWIND_INLINE void offwake_unwind_halve(__u32 *lo, __u32 *hi, __u32 mid_pc, __u32 pc)
{
	__u32 mid = offwake_unwind_mid(*lo, *hi);

	if (mid_pc <= pc)
		*lo = mid + 1;
	else
		*hi = mid;
}

/* The index of the row that holds `pc` (an offset from the table's base): the last row whose
 * pc is at or below it, or -1 if `pc` comes before the first row. A fixed number of halvings,
 * whatever `n`, so that the verifier sees a bounded loop. */
OFFWAKE_UNWIND_INLINE long offwake_unwind_search(const struct offwake_unwind_row *rows, __u32 n,
						 __u32 pc)
{
	__u32 lo = 0, hi = n;
	int i;

	for (i = 0; i < OFFWAKE_UNWIND_SEARCH_STEPS && lo < hi; i++)
		offwake_unwind_halve(&lo, &hi, rows[offwake_unwind_mid(lo, hi)].pc, pc);
	return (long)lo - 1;
}

/* The executable mappings of one process that have a table, sorted by start, for the walker
 * to find the table of a pc: the value of the BPF map unwind_processes, keyed by tgid, written
 * by user space (perf-plugin/unwind/process_mappings) whenever the process maps code. A pc in
 * no mapping here (JIT code, the vDSO, a binary whose table has not been built or did not fit)
 * is walked by its frame pointer. */
#define OFFWAKE_UNWIND_MAX_MAPPINGS 128 /* a power of 2: the search masks with it */
#define OFFWAKE_UNWIND_MAPPING_STEPS 8  /* halvings that find one of OFFWAKE_UNWIND_MAX_MAPPINGS */

struct offwake_unwind_mapping {
	__u64 start;     /* first address of the mapping */
	__u64 end;       /* and past its last */
	__u64 bias;      /* pc - bias is the pc's offset in its table (row pc) */
	__u32 first_row; /* the table: rows [first_row, first_row + rows) of unwind_rows */
	__u32 rows;
};

struct offwake_unwind_process {
	__u32 n; /* mappings used, at most OFFWAKE_UNWIND_MAX_MAPPINGS */
	/* Names these mappings: user space gives every value it publishes a new one, never 0
	 * (offwake_unwind_next_generation), so that the walker's cache of rules by pc (keyed by
	 * generation and pc, unwind_tables.bpf.h) never serves a pc by mappings that have been
	 * replaced. A fork's copy made in BPF keeps its parent's: the same mappings. 0: not
	 * cached. */
	__u32 generation;
	/* Mappings of code whose table is still being built: walked by frame pointer until user
	 * space publishes the process again with it (a command's blocks wait for it meanwhile:
	 * cfg.user_await_tables). */
	__u32 building;
	__u32 reserved;
	struct offwake_unwind_mapping m[OFFWAKE_UNWIND_MAX_MAPPINGS];
};

/* The generation after `g`: 0 is skipped (it means "not cached"). It wraps after 2^32
 * publications of one recording; a cached rule outlives that only if nothing else took its
 * place in the cache meanwhile. */
OFFWAKE_UNWIND_INLINE __u32 offwake_unwind_next_generation(__u32 g)
{
	return g + 1 ? g + 1 : 1;
}

/* One halving of the search for the mapping of `p` that holds `pc`, with mappings [*lo, *hi)
 * still in question; 1 once there is nothing left to halve. The step of both searches: the
 * loop below, and a bpf_loop callback in the walker (where a loop of its own would be
 * verified once per path through it). */
OFFWAKE_UNWIND_INLINE int offwake_unwind_mapping_halve(const struct offwake_unwind_process *p, __u64 pc,
						       __u32 *lo, __u32 *hi)
{
	__u32 mid;

	if (*lo >= *hi || *hi > OFFWAKE_UNWIND_MAX_MAPPINGS)
		return 1;
	mid = offwake_unwind_mid(*lo, *hi) & (OFFWAKE_UNWIND_MAX_MAPPINGS - 1);
	if (p->m[mid].start <= pc)
		*lo = mid + 1;
	else
		*hi = mid;
	return 0;
}

/* Once the halving is done: the mapping that holds `pc`, or 0. */
OFFWAKE_UNWIND_INLINE const struct offwake_unwind_mapping *
offwake_unwind_mapping_found(const struct offwake_unwind_process *p, __u64 pc, __u32 lo)
{
	const struct offwake_unwind_mapping *m;

	if (!lo)
		return 0;
	m = &p->m[(lo - 1) & (OFFWAKE_UNWIND_MAX_MAPPINGS - 1)];
	return pc < m->end ? m : 0;
}

/* The upper bound the search starts from. */
OFFWAKE_UNWIND_INLINE __u32 offwake_unwind_mappings(const struct offwake_unwind_process *p)
{
	return p->n < OFFWAKE_UNWIND_MAX_MAPPINGS ? p->n : OFFWAKE_UNWIND_MAX_MAPPINGS;
}

/* The mapping of `p` that holds `pc`, or 0. */
OFFWAKE_UNWIND_INLINE const struct offwake_unwind_mapping *
offwake_unwind_find_mapping(const struct offwake_unwind_process *p, __u64 pc)
{
	__u32 lo = 0, hi = offwake_unwind_mappings(p);
	int i;

	for (i = 0; i < OFFWAKE_UNWIND_MAPPING_STEPS; i++)
		if (offwake_unwind_mapping_halve(p, pc, &lo, &hi))
			break;
	return offwake_unwind_mapping_found(p, pc, lo);
}

/* Where a signal trampoline's frame keeps the interrupted registers: at its rsp lies the
 * kernel's struct ucontext (uc_flags, uc_link, uc_stack: 40 bytes), then struct sigcontext
 * (r8 ... r15, rdi, rsi, rbp, rbx, rdx, rax, rcx, rsp, rip: 8 bytes each). The Linux x86-64
 * signal frame ABI. */
#define OFFWAKE_UNWIND_SIGNAL_RBP (40 + 10 * 8)
#define OFFWAKE_UNWIND_SIGNAL_RSP (40 + 15 * 8)
#define OFFWAKE_UNWIND_SIGNAL_RIP (40 + 16 * 8)

/* The CFA of a frame under rule `rule` (CFA_RSP, CFA_RBP, PLT or RA_RDI), from its rsp, rbp
 * and pc; 0 for a kind that gives none. */
OFFWAKE_UNWIND_INLINE __u64 offwake_unwind_cfa(__u32 rule, __u64 rsp, __u64 rbp, __u64 pc)
{
	switch (offwake_unwind_kind(rule)) {
	case OFFWAKE_UNWIND_CFA_RSP:
	case OFFWAKE_UNWIND_RA_RDI:
		return rsp + offwake_unwind_cfa_offset(rule);
	case OFFWAKE_UNWIND_CFA_RBP:
		return rbp + offwake_unwind_cfa_offset(rule);
	case OFFWAKE_UNWIND_PLT:
		return rsp + 8 + ((pc & 15) >= offwake_unwind_cfa_offset(rule) ? 8 : 0);
	default:
		return 0;
	}
}

#endif /* OFFWAKE_UNWIND_ROW_H */
