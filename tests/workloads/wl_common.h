/* Shared by the test workloads: an inline syscall, so that the named function that blocks
 * is the user leaf (glibc's wrappers have no frame pointer and would hide their caller),
 * a monotonic clock, and the "truth" line the tests parse:
 *
 *   truth tid=T function=F blocked_ns=N count=C waker_tid=W waker_function=G
 *
 * blocked_ns sums CLOCK_MONOTONIC around each blocking call that blocked; count counts the
 * blocks as the kernel does (wl_blocks_so_far): a call that blocked twice counts two.
 * waker_tid=0 with waker_function=[hardirq] means an interrupt (a timer) woke the thread.
 *
 * Workloads whose threads change identity (comm, binary, or a pid that is reused) also print
 *
 *   identity tid=T comm=C from_ns=A to_ns=B
 *
 * where [A, B] (CLOCK_MONOTONIC) lies inside the time the thread T had the name C and ran the
 * binary the workload names: A is read after the identity began, B before it ended, and every
 * block the workload reports under that identity lies inside. */
#ifndef WL_COMMON_H
#define WL_COMMON_H

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define WL_NOINLINE __attribute__((noinline, used))

static inline __attribute__((always_inline)) long wl_syscall4(long nr, long a1, long a2, long a3,
                                                              long a4)
{
	long ret;
	register long r10 __asm__("r10") = a4;

	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(nr), "D"(a1), "S"(a2), "d"(a3), "r"(r10)
			 : "rcx", "r11", "memory");
	return ret;
}

static inline uint64_t wl_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#ifndef RUSAGE_THREAD
#define RUSAGE_THREAD 1 /* <sys/resource.h> names it with _GNU_SOURCE only */
#endif

/* The kernel's count of the calling thread's blocks so far: its voluntary context switches,
 * each a switch out in a sleeping state (a preemption is counted apart, as involuntary). A
 * workload counts a call's blocks as the change across it, never by the clock: a read that
 * found its byte there blocked none however long it took, one that slept 100 us blocked
 * once, and a nap that also slept in a page fault blocked twice, as a recorder sees it (in
 * a CI run, 11 blocks in dwarf_target_wait, one without a waker, where it had counted its 10
 * calls). */
static inline long wl_blocks_so_far(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_THREAD, &ru) != 0)
		exit(5);
	return ru.ru_nvcsw;
}

static inline int wl_gettid(void)
{
	return (int)syscall(SYS_gettid);
}

/* Touches the 64 KiB of stack below the caller's frame, so that the calls a workload measures
 * find their stack pages there. A stack page's first write (a new thread's, or any page after
 * fork: copy on write) allocates memory, which under memory pressure may sleep in reclaim: a
 * block that a recorder rightly puts in the function that wrote, but that the function's own
 * count cannot see when it was its prologue. Called by a thread, or a forked child, before it
 * blocks in the calls it counts. */
static __attribute__((noinline, unused)) void wl_prefault_stack(void)
{
	volatile char stack[64 * 1024];
	size_t i;

	for (i = 0; i < sizeof stack; i += 4096)
		stack[i] = 0;
}

/* The time from t0 (CLOCK_MONOTONIC) if the thread blocked since it had `before` blocks
 * (wl_blocks_so_far), adding them to *blocks; else 0. */
static inline uint64_t wl_blocked_since(uint64_t t0, long before, long *blocks)
{
	uint64_t t1 = wl_now_ns();
	long n = wl_blocks_so_far() - before;

	if (n <= 0)
		return 0;
	*blocks += n;
	return t1 - t0;
}

/* Sleeps MS milliseconds with clock_nanosleep issued inline, so that the caller (the function
 * this is inlined into) is the user leaf; returns the time blocked, counting blocks in
 * *blocks. */
static inline __attribute__((always_inline)) uint64_t wl_block_ms(long ms, long *blocks)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	long before = wl_blocks_so_far();
	uint64_t t0 = wl_now_ns();

	if (wl_syscall4(SYS_clock_nanosleep, CLOCK_MONOTONIC, 0, (long)&ts, 0) != 0)
		exit(2);
	return wl_blocked_since(t0, before, blocks);
}

/* Reads one byte from fd, the read() issued inline (so the caller is the user leaf); returns
 * the time blocked if it slept, 0 if the byte was already there, counting blocks in *blocks.
 * Exits 2 if the read fails. */
static inline __attribute__((always_inline)) uint64_t wl_read_one(int fd, long *blocks)
{
	char c;
	long before = wl_blocks_so_far();
	uint64_t t0 = wl_now_ns();
	long r = wl_syscall4(SYS_read, fd, (long)&c, 1, 0);
	uint64_t ns = wl_blocked_since(t0, before, blocks);

	if (r != 1)
		exit(2);
	return ns;
}

/* A plain sleep for the waking side; its stack does not matter. The wakers pause before each
 * wakeup so that the other side is asleep by then ("by now" in the workloads). When load makes
 * that side late, the wakeup comes first: no block for the workload (FUTEX_WAIT returns
 * EAGAIN, the byte is already there) nor for the recorder; the truth is shorter, still true. */
static inline void wl_pause_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) != 0)
		;
}

#ifdef _GNU_SOURCE /* sched_yield, in the waits below */
/* Returns once *DONE reaches N: the wakee is done with the call the waker ended last. /proc
 * alone would not do: a task being woken (TASK_WAKING, not yet on a CPU) is still in its call
 * for /proc, and a waker that took it for the next call would wake that one before it began. */
static inline void wl_await_count(_Atomic long *done, long n)
{
	while (atomic_load(done) < n)
		sched_yield();
}

/* Returns once thread TID of process PID sleeps in system call NR (with FD as its first argument
 * if FD >= 0): /proc/PID/task/TID/syscall names the call of a task that is off the CPU, and
 * says "running" otherwise. */
static inline void wl_await_sleep(int pid, int tid, long nr, int fd)
{
	char path[64], buf[256], want[64];

	snprintf(path, sizeof path, "/proc/%d/task/%d/syscall", pid, tid);
	if (fd >= 0)
		snprintf(want, sizeof want, "%ld 0x%x ", nr, fd);
	else
		snprintf(want, sizeof want, "%ld ", nr);
	for (;;) {
		int f = open(path, O_RDONLY);
		ssize_t n;

		if (f < 0)
			exit(5);
		n = read(f, buf, sizeof buf - 1);
		close(f);
		if (n > 0) {
			buf[n] = 0;
			if (strncmp(buf, want, strlen(want)) == 0)
				return;
		}
		sched_yield();
	}
}
#endif /* _GNU_SOURCE */

/* -g: says "ready pid=PID" and waits for SIGUSR1, so that recorders can attach to the process
 * (or this one of its processes) before it does anything they should see. SIGUSR1 stays
 * blocked in the calling thread, and in the threads it starts after. */
static inline void wl_wait_for_go(void)
{
	sigset_t go;
	int sig;

	sigemptyset(&go);
	sigaddset(&go, SIGUSR1);
	if (sigprocmask(SIG_BLOCK, &go, NULL) != 0)
		exit(4);
	printf("ready pid=%d\n", getpid());
	fflush(stdout);
	if (sigwait(&go, &sig) != 0)
		exit(4);
}

static inline void wl_print_truth(int tid, const char *function, uint64_t blocked_ns, long count,
				  int waker_tid, const char *waker_function)
{
	printf("truth tid=%d function=%s blocked_ns=%llu count=%ld waker_tid=%d waker_function=%s\n",
	       tid, function, (unsigned long long)blocked_ns, count, waker_tid, waker_function);
	fflush(stdout);
}

static inline void wl_print_identity(int tid, const char *comm, uint64_t from_ns, uint64_t to_ns)
{
	printf("identity tid=%d comm=%s from_ns=%llu to_ns=%llu\n", tid, comm,
	       (unsigned long long)from_ns, (unsigned long long)to_ns);
	fflush(stdout);
}

#ifdef _GNU_SOURCE /* sched_getcpu, CPU_SET */
/* Keeps the calling thread, and the threads and processes it starts later, on the CPU it is
 * on now. */
static inline void wl_pin_to_this_cpu(void)
{
	cpu_set_t set;
	int cpu = sched_getcpu();

	CPU_ZERO(&set);
	CPU_SET(cpu < 0 ? 0 : cpu, &set);
	if (sched_setaffinity(0, sizeof set, &set) != 0) {
		perror("sched_setaffinity");
		exit(7);
	}
}

/* Makes the calling thread SCHED_FIFO: on a CPU shared with SCHED_OTHER threads, a thread it
 * wakes does not run before it blocks or exits. Needs CAP_SYS_NICE. */
static inline void wl_become_fifo(void)
{
	struct sched_param sp = { .sched_priority = 1 };

	if (sched_setscheduler(0, SCHED_FIFO, &sp) != 0) {
		perror("sched_setscheduler(SCHED_FIFO)");
		exit(7);
	}
}
#endif /* _GNU_SOURCE */

/* PATH becomes the file NAME in the directory of this executable. */
static inline void wl_sibling(char *path, size_t size, const char *name)
{
	ssize_t n = readlink("/proc/self/exe", path, size - 1);
	char *slash;

	if (n <= 0)
		exit(4);
	path[n] = 0;
	slash = strrchr(path, '/');
	if (!slash || (size_t)(slash + 1 - path) + strlen(name) + 1 > size)
		exit(4);
	strcpy(slash + 1, name);
}

/* "-n COUNT -m MILLISECONDS" */
static inline void wl_parse_args(int argc, char **argv, long *count, long *ms)
{
	int i;

	for (i = 1; i + 1 < argc; i += 2) {
		if (argv[i][0] == '-' && argv[i][1] == 'n')
			*count = atol(argv[i + 1]);
		else if (argv[i][0] == '-' && argv[i][1] == 'm')
			*ms = atol(argv[i + 1]);
	}
}

static volatile sig_atomic_t wl_stop;

static inline void wl_on_stop(int sig)
{
	(void)sig;
	wl_stop = 1;
}

/* main() of a workload that sleeps COUNT times for MS milliseconds in `sleep_for` (which
 * returns the time it blocked) and is woken by a timer in `waker`, the interrupt context its
 * truth line names: "[hardirq]" (an hrtimer) or "[softirq]" (the timer wheel). Inlined: no
 * frame of its own between main and `sleep_for`. */
static inline __attribute__((always_inline)) int wl_timer_sleeps_main(int argc, char **argv,
								  uint64_t (*sleep_for)(long ms),
								  const char *name, const char *waker)
{
	long count = 20, ms = 20, blocks = 0, i;
	uint64_t blocked = 0, ns, shortest = UINT64_MAX, longest = 0, *spans = NULL;

	wl_parse_args(argc, argv, &count, &ms);
	/* -l: each nap's [start, end] (CLOCK_MONOTONIC, around the call), printed at the end; and
	 * SIGUSR1 ends the naps early (the one it interrupts is cut short, and counted). */
	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "-l") != 0)
			continue;
		if (!(spans = calloc(2 * (size_t)count, sizeof *spans)))
			exit(3);
		signal(SIGUSR1, wl_on_stop);
	}
	for (i = 0; i < count && !wl_stop; i++) {
		long before = wl_blocks_so_far();
		uint64_t t0 = wl_now_ns();

		ns = sleep_for(ms);
		blocks += wl_blocks_so_far() - before;
		if (spans) {
			spans[2 * i] = t0;
			spans[2 * i + 1] = wl_now_ns();
		}
		blocked += ns;
		if (ns < shortest)
			shortest = ns;
		if (ns > longest)
			longest = ns;
	}
	count = i;
	wl_print_truth(wl_gettid(), name, blocked, blocks, 0, waker);
	/* The extremes, for bounds on single blocks. */
	printf("naps shortest_ns=%llu longest_ns=%llu\n", (unsigned long long)shortest, (unsigned long long)longest);
	for (i = 0; spans && i < count; i++)
		printf("nap start_ns=%llu end_ns=%llu\n", (unsigned long long)spans[2 * i],
		       (unsigned long long)spans[2 * i + 1]);
	fflush(stdout);
	free(spans);
	return 0;
}

#endif /* WL_COMMON_H */
