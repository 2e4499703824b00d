/* Blocks of known lengths and counts in three functions of one thread, each its own blocked
 * stack (a clock_nanosleep issued inline, woken by the timer interrupt), chosen so that the
 * three order differently by every key of perf offwake report --sort:
 *
 *   function        blocks              total   count  avg     max
 *   wl_short_naps   30 x 4 ms           120 ms  30     4 ms    4 ms
 *   wl_long_naps     4 x 40 ms          160 ms   4     40 ms   40 ms
 *   wl_mixed_naps    9 x 2 ms + 60 ms    78 ms  10     7.8 ms  60 ms
 *
 * time: long, short, mixed; count: short, mixed, long; avg: long, mixed, short; max: mixed,
 * long, short. Every block is under 5 ms or over 35 ms: --max-block or --min-block 20 ms
 * splits them in two known sets (the short ones, and the long ones with the mixed one's 60 ms).
 *
 * The thread is SCHED_FIFO (needs CAP_SYS_NICE), so that other load on the machine does not
 * stretch a block by keeping it on the run queue after its timer. Prints the truth line of
 * each function, and each block as it measured it:
 *   block tid=T function=F ns=N
 * in the order they happened. */
#define _GNU_SOURCE
#include "wl_common.h"

static int tid;

static void print_block(const char *function, uint64_t ns)
{
	printf("block tid=%d function=%s ns=%llu\n", tid, function, (unsigned long long)ns);
}

/* Each function sleeps the lengths it is given, prints each block, and returns their sum. The
 * three must be functions of their own (their names are the blocked stacks), and the sleep is
 * in each one's own body, so that no tail call can take its frame off the stack. */
#define WL_NAPS(name)                                          \
	WL_NOINLINE uint64_t name(const long *ms, long n,      \
				  long *blocks)                \
	{                                                      \
		uint64_t sum = 0, ns;                          \
		long i;                                        \
		for (i = 0; i < n; i++) {                      \
			sum += ns = wl_block_ms(ms[i], blocks);\
			print_block(#name, ns);                \
		}                                              \
		return sum;                                    \
	}

WL_NAPS(wl_short_naps)
WL_NAPS(wl_long_naps)
WL_NAPS(wl_mixed_naps)

int main(void)
{
	static const long short_ms[30] = { 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4,
					   4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4 };
	static const long long_ms[4] = { 40, 40, 40, 40 };
	static const long mixed_ms[10] = { 2, 2, 2, 2, 60, 2, 2, 2, 2, 2 };
	uint64_t short_ns, long_ns, mixed_ns;
	long short_blocks = 0, long_blocks = 0, mixed_blocks = 0;

	tid = wl_gettid();
	wl_become_fifo();
	short_ns = wl_short_naps(short_ms, 30, &short_blocks);
	long_ns = wl_long_naps(long_ms, 4, &long_blocks);
	mixed_ns = wl_mixed_naps(mixed_ms, 10, &mixed_blocks);
	wl_print_truth(tid, "wl_short_naps", short_ns, short_blocks, 0, "[hardirq]");
	wl_print_truth(tid, "wl_long_naps", long_ns, long_blocks, 0, "[hardirq]");
	wl_print_truth(tid, "wl_mixed_naps", mixed_ns, mixed_blocks, 0, "[hardirq]");
	return 0;
}
