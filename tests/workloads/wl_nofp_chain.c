/* Code without frame pointers (built -O2 -fomit-frame-pointer: tests/workloads/CMakeLists.txt)
 * that blocks through glibc's wrappers at the bottom of deep call chains, for the tests of
 * complete user stacks (tests/e2e/complete_stacks_test.cpp, issue 23). Four threads of one
 * process and a child process, each of whose blocks the workload times:
 *
 *   blocked    DEPTH frames of nofp_chain_a/b/c (default 80: more than 64), then COUNT rounds
 *              of read() on a pipe (nofp_read, woken by the writer process from nofp_write),
 *              sem_wait() (nofp_sem_wait, woken by the poker's sem_post() in nofp_post) and
 *              nanosleep() (nofp_nanosleep, woken by the timer);
 *   signalled  a chain 8 deep, then COUNT times read() on a pipe that never has data
 *              (nofp_idle_read), interrupted by SIGUSR2 from the poker (nofp_signal); the
 *              handler blocks in read() on another pipe (nofp_handler_read) until the poker
 *              writes it (nofp_handler_write). Its stack: read <- nofp_handler_read <-
 *              nofp_on_signal <- __restore_rt <- read <- nofp_idle_read <- ... <- start_thread;
 *   poker      a chain 16 deep, then each round: the blocked thread's sem_post, the signal, the
 *              handler's byte, each after a pause of MS milliseconds (nanosleep: nofp_pause);
 *   writer     a child process, a chain 16 deep, then each round the blocked thread's byte,
 *              after a pause (nofp_pause);
 *   main       waits for the go signal (-g), starts the others, joins them, prints the truth.
 *
 * A waker waits until its wakee is done with the call it ended last (a count in shared memory)
 * and sleeps in the one it will end (/proc says which system call, and on what file
 * descriptor: wl_await_sleep) before its pause: every round is one block of the wakee's, of
 * at least MS milliseconds, whatever the load. It spins (sched_yield) for that, so that the
 * only blocks of each thread are the ones it times.
 *
 *   usage: wl_nofp_chain [-n COUNT] [-m MS] [-d DEPTH] [-g]
 *
 * Every function of the chains does work after its call, so that none is a tail call, and is
 * noipa, so that none is cloned or renamed (a .isra or .constprop clone); three names
 * alternate so that frames stay distinct. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "wl_common.h"

#define NOFP_FUNCTION __attribute__((noipa, used))

/* What a thread does at the bottom of its chain. */
struct nofp_job {
	uint64_t (*run)(const struct nofp_job *job);
	uint64_t seed;
};

static long g_count = 10, g_ms = 10, g_depth = 80;
static int g_pid;
static int g_data_pipe[2];	/* writer -> blocked */
static int g_idle_pipe[2];	/* never written: the signalled thread's idle read */
static int g_handler_pipe[2];	/* poker -> the signal handler */
static sem_t g_sem;		/* poker -> blocked */
static pthread_t g_signalled;
static _Atomic int g_blocked_tid, g_signalled_tid, g_poker_tid;

/* The blocked thread's calls done, in memory shared with the writer process. */
struct nofp_rounds {
	_Atomic long reads, sem_waits;
};
static struct nofp_rounds *g_rounds;

/* Work a frame does before and after its call: a few multiplications the result depends on. */
static inline uint64_t nofp_mix(uint64_t x, long depth)
{
	return (x ^ (uint64_t)depth) * 0x9e3779b97f4a7c15ull + 7;
}

uint64_t nofp_chain_b(long depth, const struct nofp_job *job);
uint64_t nofp_chain_c(long depth, const struct nofp_job *job);

NOFP_FUNCTION uint64_t nofp_chain_a(long depth, const struct nofp_job *job)
{
	uint64_t x = nofp_mix(job->seed, depth);

	x ^= depth > 0 ? nofp_chain_b(depth - 1, job) : job->run(job);
	return nofp_mix(x, depth);
}

NOFP_FUNCTION uint64_t nofp_chain_b(long depth, const struct nofp_job *job)
{
	uint64_t x = nofp_mix(job->seed + 1, depth);

	x += depth > 0 ? nofp_chain_c(depth - 1, job) : job->run(job);
	return nofp_mix(x, depth + 1);
}

NOFP_FUNCTION uint64_t nofp_chain_c(long depth, const struct nofp_job *job)
{
	uint64_t x = nofp_mix(job->seed + 2, depth);

	x -= depth > 0 ? nofp_chain_a(depth - 1, job) : job->run(job);
	return nofp_mix(x, depth + 2);
}

/* DEPTH frames of the chain, then the job. */
static uint64_t nofp_chain(long depth, uint64_t (*run)(const struct nofp_job *), uint64_t seed)
{
	struct nofp_job job = { run, seed };

	return nofp_chain_a(depth - 1, &job);
}

/* nanosleep() for MS milliseconds; returns the time blocked. */
NOFP_FUNCTION uint64_t nofp_pause(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	uint64_t t0 = wl_now_ns();

	if (nanosleep(&ts, NULL) != 0)
		exit(2);
	return wl_now_ns() - t0;
}

/* The blocked thread's three ways of blocking, each through glibc. */

NOFP_FUNCTION uint64_t nofp_read(int fd)
{
	char c;
	uint64_t t0 = wl_now_ns();

	if (read(fd, &c, 1) != 1)
		exit(2);
	return wl_now_ns() - t0;
}

NOFP_FUNCTION uint64_t nofp_sem_wait(sem_t *sem)
{
	uint64_t t0 = wl_now_ns();

	while (sem_wait(sem) != 0)
		if (errno != EINTR)
			exit(2);
	return wl_now_ns() - t0;
}

NOFP_FUNCTION uint64_t nofp_nanosleep(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	uint64_t t0 = wl_now_ns();

	if (nanosleep(&ts, NULL) != 0)
		exit(2);
	return wl_now_ns() - t0;
}

static uint64_t g_read_ns, g_sem_ns, g_sleep_ns;

static uint64_t blocked_job(const struct nofp_job *job)
{
	long i;

	for (i = 0; i < g_count; i++) {
		g_read_ns += nofp_read(g_data_pipe[0]);
		atomic_fetch_add(&g_rounds->reads, 1);
		g_sem_ns += nofp_sem_wait(&g_sem);
		atomic_fetch_add(&g_rounds->sem_waits, 1);
		g_sleep_ns += nofp_nanosleep(g_ms);
	}
	return job->seed;
}

static void *blocked_thread(void *arg)
{
	(void)arg;
	atomic_store(&g_blocked_tid, wl_gettid());
	return (void *)(uintptr_t)nofp_chain(g_depth, blocked_job, 1);
}

/* The signalled thread: its handler's span, for the idle read's truth. */
static volatile uint64_t g_handler_span_ns;
static uint64_t g_handler_ns, g_idle_ns;

NOFP_FUNCTION uint64_t nofp_handler_read(int fd)
{
	char c;
	uint64_t t0 = wl_now_ns();

	if (read(fd, &c, 1) != 1)
		_exit(2);
	return wl_now_ns() - t0;
}

NOFP_FUNCTION void nofp_on_signal(int sig)
{
	uint64_t t0 = wl_now_ns();

	(void)sig;
	g_handler_ns += nofp_handler_read(g_handler_pipe[0]);
	g_handler_span_ns = wl_now_ns() - t0;
}

/* read() that only a signal ends (EINTR: the handler has no SA_RESTART); returns the time
 * blocked, that is the call's time less the handler's. */
NOFP_FUNCTION uint64_t nofp_idle_read(int fd)
{
	char c;
	uint64_t t0, t1;

	g_handler_span_ns = 0;
	t0 = wl_now_ns();
	if (read(fd, &c, 1) != -1 || errno != EINTR)
		exit(2);
	t1 = wl_now_ns();
	return t1 - t0 - g_handler_span_ns;
}

static uint64_t signalled_job(const struct nofp_job *job)
{
	long i;

	for (i = 0; i < g_count; i++)
		g_idle_ns += nofp_idle_read(g_idle_pipe[0]);
	return job->seed;
}

static void *signalled_thread(void *arg)
{
	(void)arg;
	atomic_store(&g_signalled_tid, wl_gettid());
	return (void *)(uintptr_t)nofp_chain(8, signalled_job, 2);
}

/* The poker's wakeups, each through glibc. */

NOFP_FUNCTION void nofp_post(sem_t *sem)
{
	if (sem_post(sem) != 0)
		exit(3);
}

NOFP_FUNCTION void nofp_signal(pthread_t t)
{
	if (pthread_kill(t, SIGUSR2) != 0)
		exit(3);
}

NOFP_FUNCTION void nofp_handler_write(int fd)
{
	if (write(fd, "h", 1) != 1)
		exit(3);
}

static uint64_t g_poker_pause_ns;

static uint64_t poker_job(const struct nofp_job *job)
{
	int blocked = atomic_load(&g_blocked_tid), signalled = atomic_load(&g_signalled_tid);
	long i;

	/* The signalled thread's two reads alternate on two descriptors: /proc tells them apart. */
	for (i = 0; i < g_count; i++) {
		wl_await_count(&g_rounds->sem_waits, i);
		wl_await_sleep(g_pid, blocked, SYS_futex, -1);
		g_poker_pause_ns += nofp_pause(g_ms);
		nofp_post(&g_sem);
		wl_await_sleep(g_pid, signalled, SYS_read, g_idle_pipe[0]);
		g_poker_pause_ns += nofp_pause(g_ms);
		nofp_signal(g_signalled);
		wl_await_sleep(g_pid, signalled, SYS_read, g_handler_pipe[0]);
		g_poker_pause_ns += nofp_pause(g_ms);
		nofp_handler_write(g_handler_pipe[1]);
	}
	return job->seed;
}

static void *poker_thread(void *arg)
{
	(void)arg;
	atomic_store(&g_poker_tid, wl_gettid());
	return (void *)(uintptr_t)nofp_chain(16, poker_job, 3);
}

/* The writer, a child process: the blocked thread's byte on the pipe. */

NOFP_FUNCTION void nofp_write(int fd)
{
	if (write(fd, "w", 1) != 1)
		exit(3);
}

static uint64_t writer_job(const struct nofp_job *job)
{
	int blocked = atomic_load(&g_blocked_tid);
	uint64_t paused = 0;
	long i;

	for (i = 0; i < g_count; i++) {
		wl_await_count(&g_rounds->reads, i);
		wl_await_sleep(g_pid, blocked, SYS_read, g_data_pipe[0]);
		paused += nofp_pause(g_ms);
		nofp_write(g_data_pipe[1]);
	}
	wl_print_truth(wl_gettid(), "nofp_pause", paused, g_count, 0, "[hardirq]");
	return job->seed;
}

int main(int argc, char **argv)
{
	struct sigaction sa;
	pthread_t blocked, poker;
	pid_t writer;
	int opt, status, go = 0;

	while ((opt = getopt(argc, argv, "n:m:d:g")) != -1) {
		switch (opt) {
		case 'n': g_count = atol(optarg); break;
		case 'm': g_ms = atol(optarg); break;
		case 'd': g_depth = atol(optarg); break;
		case 'g': go = 1; break;
		default:
			fprintf(stderr, "usage: wl_nofp_chain [-n COUNT] [-m MS] [-d DEPTH] [-g]\n");
			return 1;
		}
	}
	if (g_depth < 1)
		return 1;
	if (go)
		wl_wait_for_go();
	g_pid = getpid();
	g_rounds = mmap(NULL, sizeof *g_rounds, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (g_rounds == MAP_FAILED)
		return 1;
	if (pipe(g_data_pipe) || pipe(g_idle_pipe) || pipe(g_handler_pipe) || sem_init(&g_sem, 0, 0))
		return 1;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = nofp_on_signal; /* no SA_RESTART: the idle read returns EINTR */
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGUSR2, &sa, NULL) != 0)
		return 1;
	if (pthread_create(&blocked, NULL, blocked_thread, NULL) ||
	    pthread_create(&g_signalled, NULL, signalled_thread, NULL))
		return 1;
	while (!atomic_load(&g_blocked_tid) || !atomic_load(&g_signalled_tid))
		sched_yield();
	if (pthread_create(&poker, NULL, poker_thread, NULL))
		return 1;
	/* The writer forks from a process whose other threads use no stdio or lock it shares. */
	writer = fork();
	if (writer < 0)
		return 1;
	if (writer == 0) {
		nofp_chain(16, writer_job, 4);
		fflush(stdout);
		_exit(0);
	}
	pthread_join(blocked, NULL);
	pthread_join(g_signalled, NULL);
	pthread_join(poker, NULL);
	if (waitpid(writer, &status, 0) != writer || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return 1;
	wl_print_truth(g_blocked_tid, "nofp_read", g_read_ns, g_count, writer, "nofp_write");
	wl_print_truth(g_blocked_tid, "nofp_sem_wait", g_sem_ns, g_count, g_poker_tid, "nofp_post");
	wl_print_truth(g_blocked_tid, "nofp_nanosleep", g_sleep_ns, g_count, 0, "[hardirq]");
	wl_print_truth(g_signalled_tid, "nofp_idle_read", g_idle_ns, g_count, g_poker_tid, "nofp_signal");
	wl_print_truth(g_signalled_tid, "nofp_handler_read", g_handler_ns, g_count, g_poker_tid,
		       "nofp_handler_write");
	wl_print_truth(g_poker_tid, "nofp_pause", g_poker_pause_ns, 3 * g_count, 0, "[hardirq]");
	printf("depth blocked=%ld\n", g_depth);
	return 0;
}
