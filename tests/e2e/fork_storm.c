/* Forks CHILDREN child processes, BATCH at a time. Each child blocks once in
 * fs_child_waits (a 5 ms nanosleep issued inline, so that it is the user leaf) and exits; the
 * parent waits for each batch. Then starts THREADS threads, BATCH at a time, each blocking
 * once in fs_thread_waits the same way, and joins them. Prints "forked N threads M".
 *   fork_storm [-n CHILDREN] [-t THREADS] [-b BATCH] */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static inline long raw_syscall2(long nr, long a1, long a2)
{
	long ret;

	__asm__ volatile("syscall" : "=a"(ret) : "a"(nr), "D"(a1), "S"(a2) : "rcx", "r11", "memory");
	return ret;
}

__attribute__((noinline, used)) void fs_child_waits(void)
{
	struct timespec ts = { 0, 5000000 };

	raw_syscall2(SYS_nanosleep, (long)&ts, 0);
}

__attribute__((noinline, used)) void fs_thread_waits(void)
{
	struct timespec ts = { 0, 5000000 };

	raw_syscall2(SYS_nanosleep, (long)&ts, 0);
}

static void *thread_main(void *arg)
{
	(void)arg;
	fs_thread_waits();
	return NULL;
}

int main(int argc, char **argv)
{
	long children = 1300, threads = 0, started = 0, batch = 100, forked = 0;
	pthread_t ids[1024];
	int i;

	for (i = 1; i + 1 < argc; i += 2) {
		if (argv[i][1] == 'n')
			children = atol(argv[i + 1]);
		else if (argv[i][1] == 't')
			threads = atol(argv[i + 1]);
		else if (argv[i][1] == 'b')
			batch = atol(argv[i + 1]);
	}
	if (batch < 1 || batch > 1024) {
		fprintf(stderr, "fork_storm: -b takes 1 to 1024\n");
		return 2;
	}
	while (forked < children) {
		long n = children - forked < batch ? children - forked : batch, j;

		for (j = 0; j < n; j++) {
			pid_t pid = fork();

			if (pid == 0) {
				fs_child_waits();
				_exit(0);
			}
			if (pid < 0) {
				perror("fork");
				return 1;
			}
		}
		for (j = 0; j < n; j++)
			wait(NULL);
		forked += n;
	}
	while (started < threads) {
		long n = threads - started < batch ? threads - started : batch, j;

		for (j = 0; j < n; j++) {
			int err = pthread_create(&ids[j], NULL, thread_main, NULL);

			if (err) {
				fprintf(stderr, "pthread_create: error %d\n", err);
				return 1;
			}
		}
		for (j = 0; j < n; j++)
			pthread_join(ids[j], NULL);
		started += n;
	}
	printf("forked %ld threads %ld\n", forked, started);
	return 0;
}
