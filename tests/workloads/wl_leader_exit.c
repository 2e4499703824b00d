/* A process whose main thread exits first (pthread_exit): the main thread starts a thread
 * that sleeps COUNT times for MS milliseconds in leader_gone_sleep (woken by the timer), prints
 * "pid PID" and exits; the thread runs on, and prints its truth line at the end. /proc then shows the process's main thread in
 * state Z, as it shows a process that has exited but that its parent has not reaped: the
 * process is alive all the same, and perf record -p records it. */
#define _GNU_SOURCE
#include <pthread.h>

#include "wl_common.h"

static long g_count = 100, g_ms = 10;

WL_NOINLINE uint64_t leader_gone_sleep(long ms, long *blocks)
{
	return wl_block_ms(ms, blocks);
}

static void *sleeper(void *arg)
{
	long blocks = 0, i;
	uint64_t blocked = 0;

	(void)arg;
	for (i = 0; i < g_count; i++)
		blocked += leader_gone_sleep(g_ms, &blocks);
	wl_print_truth(wl_gettid(), "leader_gone_sleep", blocked, blocks, 0, "[hardirq]");
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t;

	wl_parse_args(argc, argv, &g_count, &g_ms);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (pthread_create(&t, NULL, sleeper, NULL) != 0)
		return 3;
	printf("pid %d\n", getpid());
	pthread_exit(NULL);
}
