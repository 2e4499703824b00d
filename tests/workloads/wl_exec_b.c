/* The second half of wl_exec_a's exec: blocks COUNT times for MS milliseconds in b_waits.
 * b_padding comes first in .text and is 16 KiB long, so that it covers every address of
 * wl_exec_a's own code (both are non-PIE, linked at the same base; identity_test checks this
 * with nm): a pre-exec address resolved in this binary names b_padding. */
#define _GNU_SOURCE
#include "wl_common.h"

WL_NOINLINE void b_padding(void)
{
	__asm__ volatile(".fill 16384, 1, 0x90");
}

WL_NOINLINE uint64_t b_waits(long ms, long *blocks)
{
	return wl_block_ms(ms, blocks);
}

int main(int argc, char **argv)
{
	long count = 10, ms = 10, blocks = 0, i;
	uint64_t blocked = 0, from, to;

	wl_parse_args(argc, argv, &count, &ms);
	from = wl_now_ns();
	for (i = 0; i < count; i++)
		blocked += b_waits(ms, &blocks);
	to = wl_now_ns();
	wl_print_truth(wl_gettid(), "b_waits", blocked, blocks, 0, "[hardirq]");
	wl_print_identity(wl_gettid(), "wl_exec_b", from, to);
	return 0;
}
