/* wl_pid_reuse's second child, started with the pid of the first: COUNT times, blocks MS
 * milliseconds in second_child_waits, then wakes the parent by writing a byte to fd 3 from
 * second_child_wakes. second_padding comes first in .text and is 16 KiB long, so that it
 * covers every address of wl_reuse_first's code (both non-PIE at the same base; identity_test
 * checks this with nm): the first child's frames resolved in this binary name second_padding. */
#define _GNU_SOURCE
#include "wl_common.h"

WL_NOINLINE void second_padding(void)
{
	__asm__ volatile(".fill 16384, 1, 0x90");
}

WL_NOINLINE uint64_t second_child_waits(long ms)
{
	return wl_block_ms(ms);
}

WL_NOINLINE void second_child_wakes(void)
{
	char c = 'w';

	if (wl_syscall4(SYS_write, 3, (long)&c, 1, 0) != 1)
		exit(3);
}

int main(int argc, char **argv)
{
	long count = 10, ms = 10, i;
	uint64_t blocked = 0, from, to;

	wl_parse_args(argc, argv, &count, &ms);
	if (write(3, "r", 1) != 1) /* ready: see wl_pid_reuse.c */
		return 3;
	from = wl_now_ns();
	for (i = 0; i < count; i++) {
		blocked += second_child_waits(ms);
		second_child_wakes();
	}
	to = wl_now_ns();
	wl_print_truth(wl_gettid(), "second_child_waits", blocked, count, 0, "[hardirq]");
	wl_print_identity(wl_gettid(), "wl_reuse_second", from, to);
	return 0;
}
