/* Many short blocks of random lengths, as a database's threads see them: what time-weighted
 * sampling (perf offwake record --sample-period) must estimate without bias.
 *
 *   wl_short_blocks [-s SECONDS] [-n SLEEPERS] [-p PERIOD_US]
 *
 * For SECONDS (default 5):
 *   - SLEEPERS threads (default 2) each sleep 50 to 300 us at random, again and again, in
 *     wl_short_sleep (a clock_nanosleep issued inline, woken by the timer interrupt);
 *   - a relay: its writer sleeps 50 to 300 us the same way (in wl_short_sleep), then
 *     writes a byte to a pipe in wl_relay_write, which wakes wl_relay_reader, blocked in
 *     read() in wl_short_wait.
 * Every thread is SCHED_FIFO (needs CAP_SYS_NICE): no timer slack (a 50 us sleep is 50 us),
 * and other load does not keep a woken thread waiting on a run queue.
 *
 * Prints a truth line per thread (wl_common.h) once all have stopped: the time it measured
 * around its blocking calls and how many of them blocked. Then, per thread,
 *   off_cpu tid=T ns=N
 * the kernel's account of its time off the CPU over its loop: its elapsed time less its CPU
 * time (CLOCK_THREAD_CPUTIME_ID). The two bracket what an off-CPU recorder sees. Around a
 * call of 200 us, 10 to 30 us are spent on the CPU in the kernel on this kind of virtual
 * machine, most after the switch back in (bpftrace on sched_switch: a median 29 us from the
 * switch-in to the user's clock read), which the clock around the call counts and no recorder
 * should; while the kernel starts charging a woken thread CPU time when it is queued, before
 * it runs. A read that found its byte there did not block: it is not counted (wl_blocks_so_far).
 *
 * With -p, per thread,
 *   long_blocks tid=T period_us=P count=C ns=N
 * its blocks of P us or longer, as its clock measured them: a sampling recorder keeps each of
 * those once, where a shorter one is kept with probability length/P. A sleep asked for 300 us
 * lasts that long only while the host runs the VM's timer on time; these say how often it did
 * not.
 *
 * Last,
 *   cpu_not_charged ns=N
 * the machine's time (all CPUs) over the run that the kernel charges to no thread: stolen by
 * the hypervisor, or spent serving interrupts (/proc/stat's steal, irq and softirq). A thread
 * on a CPU the host took away is on the CPU to a switch-based recorder but not charged CPU
 * time, so the kernel's off-CPU account can exceed the recorder's by up to this much. */
#define _GNU_SOURCE
#include "wl_common.h"

#include <pthread.h>

static uint64_t deadline_ns;
static uint64_t long_ns; /* -p: blocks this long or longer are counted apart */
static int relay_pipe[2];

struct truth {
	int tid;
	uint64_t blocked_ns, off_cpu_ns, long_blocked_ns;
	long count, long_count;
	unsigned int seed;
	uint64_t start_ns, start_cpu_ns;
	int relay; /* the relay's writer */
};

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The kernel's account of the thread's off-CPU time is taken from here... */
static void start_timing(struct truth *t)
{
	t->start_ns = wl_now_ns();
	t->start_cpu_ns = thread_cpu_ns();
}

/* ... to here: the elapsed time less the CPU time. */
static void stop_timing(struct truth *t)
{
	uint64_t cpu = thread_cpu_ns() - t->start_cpu_ns;
	uint64_t elapsed = wl_now_ns() - t->start_ns;

	t->off_cpu_ns = elapsed > cpu ? elapsed - cpu : 0;
}

/* /proc/stat's irq, softirq and steal time of all CPUs, in ns; 0 if unreadable. */
static uint64_t not_charged_ns(void)
{
	unsigned long long user, nice, system, idle, iowait, irq, softirq, steal;
	FILE *f = fopen("/proc/stat", "r");
	int n = 0;

	if (f) {
		n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &user, &nice, &system, &idle,
			   &iowait, &irq, &softirq, &steal);
		fclose(f);
	}
	if (n != 8)
		return 0;
	return (irq + softirq + steal) * (1000000000ull / (uint64_t)sysconf(_SC_CLK_TCK));
}

static long random_us(unsigned int *seed)
{
	return 50 + (long)(rand_r(seed) % 251);
}

/* One sleep of US microseconds, the syscall issued here so that this is the user leaf; the
 * time blocked, counting blocks in *blocks. */
WL_NOINLINE uint64_t wl_short_sleep(long us, long *blocks)
{
	struct timespec ts = { 0, us * 1000L };
	long before = wl_blocks_so_far();
	uint64_t t0 = wl_now_ns();

	if (wl_syscall4(SYS_clock_nanosleep, CLOCK_MONOTONIC, 0, (long)&ts, 0) != 0)
		exit(2);
	return wl_blocked_since(t0, before, blocks);
}

WL_NOINLINE void wl_relay_write(void)
{
	char c = 1;

	if (wl_syscall4(SYS_write, relay_pipe[1], (long)&c, 1, 0) != 1)
		exit(2);
}

/* One read of the relay's byte (or of its end, *eof); the time blocked, or 0 if it was
 * already there, counting blocks in *blocks. */
WL_NOINLINE uint64_t wl_short_wait(int *eof, long *blocks)
{
	char c;
	long before = wl_blocks_so_far();
	uint64_t t0 = wl_now_ns();
	long r = wl_syscall4(SYS_read, relay_pipe[0], (long)&c, 1, 0);
	uint64_t ns = wl_blocked_since(t0, before, blocks);

	if (r == 0)
		*eof = 1;
	else if (r != 1)
		exit(2);
	return ns;
}

/* One call that blocked for `ns`, measured by the thread's clock (its blocks are in
 * t->count already). */
static void count_block(struct truth *t, uint64_t ns)
{
	t->blocked_ns += ns;
	if (long_ns && ns >= long_ns) {
		t->long_blocked_ns += ns;
		t->long_count++;
	}
}

/* A sleeper, or with t->relay the relay's writer, which writes a byte after each sleep and
 * closes the pipe at the end. */
static void *sleeper(void *arg)
{
	struct truth *t = arg;

	t->tid = wl_gettid();
	wl_prefault_stack();
	wl_become_fifo();
	start_timing(t);
	while (wl_now_ns() < deadline_ns) {
		count_block(t, wl_short_sleep(random_us(&t->seed), &t->count));
		if (t->relay)
			wl_relay_write();
	}
	stop_timing(t);
	if (t->relay)
		close(relay_pipe[1]);
	return NULL;
}

static void *relay_reader(void *arg)
{
	struct truth *t = arg;
	int eof = 0;

	t->tid = wl_gettid();
	wl_prefault_stack();
	wl_become_fifo();
	start_timing(t);
	/* The last read blocks until the writer closes the pipe: a block like the others. */
	while (!eof) {
		uint64_t ns = wl_short_wait(&eof, &t->count);

		if (ns)
			count_block(t, ns);
	}
	stop_timing(t);
	return NULL;
}

int main(int argc, char **argv)
{
	double seconds = 5;
	int sleepers = 2, opt, i;
	uint64_t not_charged;
	pthread_t threads[66];
	struct truth truths[66];

	long period_us = 0;

	while ((opt = getopt(argc, argv, "s:n:p:")) != -1) {
		if (opt == 's')
			seconds = atof(optarg);
		else if (opt == 'n')
			sleepers = atoi(optarg);
		else if (opt == 'p')
			period_us = atol(optarg);
		else
			return 1;
	}
	long_ns = (uint64_t)period_us * 1000ull;
	if (seconds <= 0 || sleepers < 0 || sleepers > 64 || period_us < 0) {
		fprintf(stderr, "usage: wl_short_blocks [-s SECONDS] [-n SLEEPERS (0-64)] [-p PERIOD_US]\n");
		return 1;
	}
	if (pipe(relay_pipe) != 0)
		return 3;
	memset(truths, 0, sizeof(truths));
	not_charged = not_charged_ns();
	deadline_ns = wl_now_ns() + (uint64_t)(seconds * 1e9);
	for (i = 0; i < sleepers + 2; i++) {
		void *(*fn)(void *) = i <= sleepers ? sleeper : relay_reader;

		truths[i].seed = (unsigned int)(wl_now_ns() ^ (uint64_t)i * 2654435761u);
		truths[i].relay = i == sleepers;
		if (pthread_create(&threads[i], NULL, fn, &truths[i]) != 0)
			return 3;
	}
	for (i = 0; i < sleepers + 2; i++)
		pthread_join(threads[i], NULL);
	{
		uint64_t end = not_charged_ns();

		not_charged = end > not_charged ? end - not_charged : 0;
	}
	for (i = 0; i < sleepers + 1; i++)
		wl_print_truth(truths[i].tid, "wl_short_sleep", truths[i].blocked_ns, truths[i].count, 0, "[hardirq]");
	wl_print_truth(truths[sleepers + 1].tid, "wl_short_wait", truths[sleepers + 1].blocked_ns,
		       truths[sleepers + 1].count, truths[sleepers].tid, "wl_relay_write");
	for (i = 0; i < sleepers + 2; i++)
		printf("off_cpu tid=%d ns=%llu\n", truths[i].tid, (unsigned long long)truths[i].off_cpu_ns);
	for (i = 0; long_ns && i < sleepers + 2; i++)
		printf("long_blocks tid=%d period_us=%ld count=%ld ns=%llu\n", truths[i].tid, period_us,
		       truths[i].long_count, (unsigned long long)truths[i].long_blocked_ns);
	printf("cpu_not_charged ns=%llu\n", (unsigned long long)not_charged);
	return 0;
}
