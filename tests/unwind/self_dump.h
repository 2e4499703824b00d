/* self_dump.c: a copy of the caller's own registers and stack, as a --call-graph dwarf sample
 * holds them. */
#ifndef SELF_DUMP_H
#define SELF_DUMP_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SELF_DUMP_DEPTH 2 /* self_dump_middle runs SELF_DUMP_DEPTH + 1 times */

struct self_dump {
	uint64_t regs[24]; /* perf's x86-64 order (asm/perf_regs.h); the segments left 0 */
	uint8_t stack[128 * 1024];
	size_t copied;
};

void self_dump_leaf(struct self_dump *d);
int self_dump_middle(struct self_dump *d, int n);
int self_dump_outer(struct self_dump *d);

#ifdef __cplusplus
}
#endif

#endif
