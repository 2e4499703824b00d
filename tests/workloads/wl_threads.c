/* THREADS threads of one process that each nap COUNT times in wl_thread_nap (clock_nanosleep,
 * woken by the hrtimer interrupt), thread i for MS + 5*i milliseconds at a time, once they are
 * told to start: for recording some threads of a process (-t) and not the others.
 *
 * It prints its threads' ids, then waits for SIGUSR1 (a recorder's timer command sends it once
 * the recording has begun), then the naps, then a truth line per thread:
 *
 *   tids T1,T2,...
 *   truth tid=Ti function=wl_thread_nap blocked_ns=N count=C waker_tid=0 waker_function=[hardirq]
 *
 * The main thread waits for the signal and then for the threads (pthread_join), and each
 * thread first waits for the start (a condition variable): blocks not in wl_thread_nap.
 *
 *   usage: wl_threads [-n COUNT] [-m MS] [-k THREADS (1-16)] */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>

#include "wl_common.h"

#define WL_MAX_THREADS 16

static long g_count = 10, g_ms = 20, g_threads = 3;

struct worker {
	pthread_t thread;
	long index;
	_Atomic int tid;
	uint64_t blocked_ns;
	long blocks;
};

static struct worker g_workers[WL_MAX_THREADS];
static pthread_mutex_t g_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cond = PTHREAD_COND_INITIALIZER;
static int g_go;

WL_NOINLINE uint64_t wl_thread_nap(long ms, long *blocks)
{
	return wl_block_ms(ms, blocks);
}

static void *worker(void *arg)
{
	struct worker *w = arg;
	long i;

	atomic_store(&w->tid, wl_gettid());
	pthread_mutex_lock(&g_mutex);
	while (!g_go)
		pthread_cond_wait(&g_cond, &g_mutex);
	pthread_mutex_unlock(&g_mutex);
	for (i = 0; i < g_count; i++)
		w->blocked_ns += wl_thread_nap(g_ms + 5 * w->index, &w->blocks);
	return NULL;
}

int main(int argc, char **argv)
{
	sigset_t usr1;
	int sig, i;

	wl_parse_args(argc, argv, &g_count, &g_ms);
	for (i = 1; i + 1 < argc; i++)
		if (strcmp(argv[i], "-k") == 0)
			g_threads = atol(argv[i + 1]);
	if (g_threads < 1 || g_threads > WL_MAX_THREADS)
		return 1;
	/* Blocked before the threads start, so that they inherit it and sigwait() takes it. */
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &usr1, NULL);
	for (i = 0; i < g_threads; i++) {
		g_workers[i].index = i;
		if (pthread_create(&g_workers[i].thread, NULL, worker, &g_workers[i]) != 0)
			return 1;
	}
	printf("tids ");
	for (i = 0; i < g_threads; i++) {
		while (!atomic_load(&g_workers[i].tid))
			wl_pause_ms(1);
		printf("%s%d", i ? "," : "", atomic_load(&g_workers[i].tid));
	}
	printf("\n");
	fflush(stdout);
	if (sigwait(&usr1, &sig) != 0)
		return 1;
	pthread_mutex_lock(&g_mutex);
	g_go = 1;
	pthread_cond_broadcast(&g_cond);
	pthread_mutex_unlock(&g_mutex);
	for (i = 0; i < g_threads; i++)
		pthread_join(g_workers[i].thread, NULL);
	for (i = 0; i < g_threads; i++)
		wl_print_truth(g_workers[i].tid, "wl_thread_nap", g_workers[i].blocked_ns, g_workers[i].blocks, 0,
			       "[hardirq]");
	return 0;
}
