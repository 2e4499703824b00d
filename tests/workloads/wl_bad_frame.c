/* One thread sleeps COUNT times for MS milliseconds in wl_bad_frame_sleep, with its frame
 * pointer on a frame whose return address is no user address: 0xffffffffffffff00, a value in
 * perf's range of callchain context markers. A frame-pointer walk that stores it writes a
 * callchain that readers take for a corrupt marker. Code without frame pointers leaves such
 * garbage on real stacks (a system-wide record met one in a glibc pipe ping-pong).
 *   wl_bad_frame [-n COUNT] [-m MS] */
#define _GNU_SOURCE
#include "wl_common.h"

#define WL_BAD_RETURN 0xffffffffffffff00ull

WL_NOINLINE uint64_t wl_bad_frame_sleep(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	/* {next frame pointer, return address}, as a frame-pointer walk reads them. */
	volatile uint64_t frame[2] = { 0, WL_BAD_RETURN };
	uint64_t t0 = wl_now_ns();
	long ret;

	/* Built with -mno-red-zone: the push below may not clobber this function's locals. */
	__asm__ volatile("push %%rbp\n\t"
			 "mov %[fp], %%rbp\n\t"
			 "syscall\n\t"
			 "pop %%rbp"
			 : "=a"(ret)
			 : "a"((long)SYS_nanosleep), "D"(&ts), "S"(0L), [fp] "r"(frame)
			 : "rcx", "r11", "memory");
	if (ret != 0)
		exit(2);
	return wl_now_ns() - t0;
}

int main(int argc, char **argv)
{
	return wl_timer_sleeps_main(argc, argv, wl_bad_frame_sleep, "wl_bad_frame_sleep", "[hardirq]");
}
