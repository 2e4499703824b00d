/* Two binaries from this one source, both named wl_twin (so one comm) in two directories,
 * twin-one/ and twin-two/, that differ only in the name of their blocking function:
 * twin_one_waits or twin_two_waits. Their code is byte for byte the same, so each function
 * has the same address in both. Blocks COUNT times for MS milliseconds in it; with
 * "-x PATH", then execs PATH with the same arguments minus -x.
 *
 * Run under `setarch -R` (no address randomization, kept across exec), the blocks before and
 * after twin-one execs twin-two have the same pid, tid, comm and user and kernel stacks: only
 * the exec tells them apart. Stays on one CPU, so that the timer interrupts that wake it come
 * through one path (one waker stack). Prints a truth and an identity line for its half. */
#define _GNU_SOURCE
#include "wl_common.h"

#ifdef WL_TWIN_TWO
#define TWIN_WAITS twin_two_waits
#define TWIN_NAME "twin_two_waits"
#else
#define TWIN_WAITS twin_one_waits
#define TWIN_NAME "twin_one_waits"
#endif

WL_NOINLINE uint64_t TWIN_WAITS(long ms, long *blocks)
{
	return wl_block_ms(ms, blocks);
}

int main(int argc, char **argv)
{
	long count = 10, ms = 10, blocks = 0, i;
	uint64_t blocked = 0, from, to;
	char *next = NULL, *args[6] = { NULL, "-n", "10", "-m", "10", NULL };

	for (i = 1; i + 1 < argc; i += 2) {
		if (argv[i][0] == '-' && argv[i][1] == 'n')
			count = atol(args[2] = argv[i + 1]);
		else if (argv[i][0] == '-' && argv[i][1] == 'm')
			ms = atol(args[4] = argv[i + 1]);
		else if (argv[i][0] == '-' && argv[i][1] == 'x')
			next = argv[i + 1];
	}
	wl_pin_to_this_cpu();
	from = wl_now_ns();
	for (i = 0; i < count; i++)
		blocked += TWIN_WAITS(ms, &blocks);
	to = wl_now_ns();
	wl_print_truth(wl_gettid(), TWIN_NAME, blocked, blocks, 0, "[hardirq]");
	wl_print_identity(wl_gettid(), "wl_twin", from, to);
	if (!next)
		return 0;
	args[0] = next;
	execv(next, args);
	perror("wl_twin: execv");
	return 1;
}
