/* Forks CHILDREN child processes, BATCH at a time. Each child blocks once in
 * fs_child_waits (a 5 ms nanosleep issued inline, so that it is the user leaf) and exits; the
 * parent waits for each batch. Prints "forked N" and the pids' range.
 *   fork_storm [-n CHILDREN] [-b BATCH] */
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

int main(int argc, char **argv)
{
	long children = 1300, batch = 100, forked = 0;
	int i;

	for (i = 1; i + 1 < argc; i += 2) {
		if (argv[i][1] == 'n')
			children = atol(argv[i + 1]);
		else if (argv[i][1] == 'b')
			batch = atol(argv[i + 1]);
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
	printf("forked %ld\n", forked);
	return 0;
}
