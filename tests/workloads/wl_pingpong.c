/* Overhead benchmark: two threads hand a token back and forth through a pthread condition
 * variable; every handoff is one block and one wakeup. Prints the mean ns per handoff.
 *   wl_pingpong [-n HANDOFFS] */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "wl_common.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static long turn, total;

static void *player(void *arg)
{
	long me = (long)arg;

	pthread_mutex_lock(&lock);
	while (turn < total) {
		while (turn < total && (turn & 1) != me)
			pthread_cond_wait(&cond, &lock);
		if (turn < total) {
			turn++;
			pthread_cond_signal(&cond);
		}
	}
	pthread_mutex_unlock(&lock);
	return NULL;
}

int main(int argc, char **argv)
{
	long count = 200000, ms = 0;
	pthread_t a, b;
	uint64_t start;

	wl_parse_args(argc, argv, &count, &ms);
	total = count;
	start = wl_now_ns();
	pthread_create(&a, NULL, player, (void *)0L);
	pthread_create(&b, NULL, player, (void *)1L);
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	printf("pingpong handoffs=%ld ns_per_handoff=%.0f\n", count, (double)(wl_now_ns() - start) / count);
	return 0;
}
