/* The first half of an exec: blocks COUNT times for MS milliseconds in a_waits, then execs
 * wl_exec_b (found beside it) with the same arguments; the process keeps its pid and tid.
 * Both binaries are non-PIE at the same base, and wl_exec_b lays a never-called function
 * (b_padding) over the addresses of this binary's code: a block of this process symbolized
 * in the wrong binary names b_padding rather than a_waits. Prints a truth and an identity
 * line for its half. */
#define _GNU_SOURCE
#include "wl_common.h"

WL_NOINLINE uint64_t a_waits(long ms, long *blocks)
{
	return wl_block_ms(ms, blocks);
}

int main(int argc, char **argv)
{
	long count = 10, ms = 10, blocks = 0, i;
	uint64_t blocked = 0, from, to;
	char b[4096];

	(void)argc;
	wl_parse_args(argc, argv, &count, &ms);
	wl_sibling(b, sizeof b, "wl_exec_b");
	from = wl_now_ns();
	for (i = 0; i < count; i++)
		blocked += a_waits(ms, &blocks);
	to = wl_now_ns();
	wl_print_truth(wl_gettid(), "a_waits", blocked, blocks, 0, "[hardirq]");
	wl_print_identity(wl_gettid(), "wl_exec_a", from, to);
	argv[0] = b;
	execv(b, argv);
	perror("wl_exec_a: execv wl_exec_b");
	return 1;
}
