/* wl_pid_reuse's first child: COUNT times, blocks MS milliseconds in first_child_waits, then
 * wakes the parent by writing a byte to fd 3 from first_child_wakes. Prints its truth line
 * and its identity line, then exits, leaving its pid to wl_reuse_second. */
#define _GNU_SOURCE
#include "wl_common.h"

WL_NOINLINE uint64_t first_child_waits(long ms)
{
	return wl_block_ms(ms);
}

WL_NOINLINE void first_child_wakes(void)
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
		blocked += first_child_waits(ms);
		first_child_wakes();
	}
	to = wl_now_ns();
	wl_print_truth(wl_gettid(), "first_child_waits", blocked, count, 0, "[hardirq]");
	wl_print_identity(wl_gettid(), "wl_reuse_first", from, to);
	return 0;
}
