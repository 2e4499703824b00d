/* One thread sleeps COUNT times for MS milliseconds in wl_sleep_for, with clock_nanosleep
 * issued inline. No thread wakes it: the hrtimer interrupt does, so the expected waker is
 * "[hardirq]" with tid 0. */
#define _GNU_SOURCE
#include <errno.h>

#include "wl_common.h"

WL_NOINLINE uint64_t wl_sleep_for(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	uint64_t t0 = wl_now_ns();
	long r = wl_syscall4(SYS_clock_nanosleep, CLOCK_MONOTONIC, 0, (long)&ts, 0);

	if (r != 0 && !(r == -EINTR && wl_stop)) /* -l's SIGUSR1 may cut the last nap short */
		exit(2);
	return wl_now_ns() - t0;
}

int main(int argc, char **argv)
{
	return wl_timer_sleeps_main(argc, argv, wl_sleep_for, "wl_sleep_for", "[hardirq]");
}
