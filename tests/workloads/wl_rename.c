/* A thread that renames itself: it blocks COUNT times for MS milliseconds in blocks_as_first
 * under the name it was born with ("wl_rename", its process's), then calls
 * prctl(PR_SET_NAME, "second-name") and blocks COUNT times in blocks_as_second. A timer wakes
 * it ("[hardirq]"). It prints a truth line and an identity line for each name: every block in
 * blocks_as_first happened while the thread was "wl_rename", every block in blocks_as_second
 * while it was "second-name". */
#define _GNU_SOURCE
#include <pthread.h>
#include <sys/prctl.h>

#include "wl_common.h"

static long g_count = 10, g_ms = 10;

WL_NOINLINE uint64_t blocks_as_first(long ms, long *blocks)
{
	return wl_block_ms(ms, blocks);
}

WL_NOINLINE uint64_t blocks_as_second(long ms, long *blocks)
{
	return wl_block_ms(ms, blocks);
}

static void *renamer(void *arg)
{
	uint64_t first = 0, second = 0, from1, to1, from2, to2;
	int tid = wl_gettid();
	long first_blocks = 0, second_blocks = 0, i;

	(void)arg;
	wl_prefault_stack();
	from1 = wl_now_ns();
	for (i = 0; i < g_count; i++)
		first += blocks_as_first(g_ms, &first_blocks);
	to1 = wl_now_ns();
	if (prctl(PR_SET_NAME, "second-name") != 0)
		exit(3);
	from2 = wl_now_ns();
	for (i = 0; i < g_count; i++)
		second += blocks_as_second(g_ms, &second_blocks);
	to2 = wl_now_ns();
	wl_print_truth(tid, "blocks_as_first", first, first_blocks, 0, "[hardirq]");
	wl_print_truth(tid, "blocks_as_second", second, second_blocks, 0, "[hardirq]");
	wl_print_identity(tid, "wl_rename", from1, to1);
	wl_print_identity(tid, "second-name", from2, to2);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t;

	wl_parse_args(argc, argv, &g_count, &g_ms);
	if (pthread_create(&t, NULL, renamer, NULL) != 0 || pthread_join(t, NULL) != 0)
		return 1;
	return 0;
}
