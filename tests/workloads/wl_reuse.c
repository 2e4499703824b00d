/* wl_pid_reuse's children, one source built twice (wl_reuse_first, and wl_reuse_second with
 * WL_REUSE_SECOND): COUNT times, block MS milliseconds in ROLE_child_waits, then wake the parent
 * by writing a byte to fd 3 from ROLE_child_wakes. Each prints its truth line and its identity
 * line, then exits; the first leaves its pid to the second.
 * In the second, second_padding comes first in .text and is 16 KiB long, so that it covers
 * every address of wl_reuse_first's code (both non-PIE at the same base; identity_test checks
 * this with nm): the first child's frames resolved in the second binary name second_padding. */
#define _GNU_SOURCE
#include "wl_common.h"

#ifdef WL_REUSE_SECOND
#define ROLE "second"
#define CHILD_WAITS second_child_waits
#define CHILD_WAKES second_child_wakes
#define COMM "wl_reuse_second"

WL_NOINLINE void second_padding(void)
{
	__asm__ volatile(".fill 16384, 1, 0x90");
}
#else
#define ROLE "first"
#define CHILD_WAITS first_child_waits
#define CHILD_WAKES first_child_wakes
#define COMM "wl_reuse_first"
#endif

WL_NOINLINE uint64_t CHILD_WAITS(long ms, long *blocks)
{
	return wl_block_ms(ms, blocks);
}

WL_NOINLINE void CHILD_WAKES(void)
{
	char c = 'w';

	if (wl_syscall4(SYS_write, 3, (long)&c, 1, 0) != 1)
		exit(3);
}

int main(int argc, char **argv)
{
	long count = 10, ms = 10, blocks = 0, i;
	uint64_t blocked = 0, from, to;

	wl_parse_args(argc, argv, &count, &ms);
	if (write(3, "r", 1) != 1) /* ready: see wl_pid_reuse.c */
		return 3;
	from = wl_now_ns();
	for (i = 0; i < count; i++) {
		blocked += CHILD_WAITS(ms, &blocks);
		CHILD_WAKES();
	}
	to = wl_now_ns();
	wl_print_truth(wl_gettid(), ROLE "_child_waits", blocked, blocks, 0, "[hardirq]");
	wl_print_identity(wl_gettid(), COMM, from, to);
	return 0;
}
