/* A program whose unwind rules are known: built with -O2 -fomit-frame-pointer (and once more
 * with only .debug_frame), so that each function below leaves one kind of rule in .eh_frame.
 * It runs too (each function does something), though the unwind tests only read the file. */
#include <alloca.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

volatile int sink;

/* Saves registers and keeps a frame on the stack: CFA = rsp + N, for several N. */
__attribute__((noinline)) int unwind_target_recurse(int n)
{
	char buf[64];

	memset(buf, n, sizeof buf);
	sink = buf[n & 63];
	if (n <= 0)
		return sink;
	return unwind_target_recurse(n - 1) + buf[(n * 7) & 63];
}

/* alloca makes gcc keep a frame pointer even with -fomit-frame-pointer: CFA = rbp + 16. */
__attribute__((noinline)) int unwind_target_alloca(int n)
{
	char *p = alloca((size_t)n + 16);

	memset(p, 1, (size_t)n + 16);
	sink = p[n];
	return unwind_target_recurse(p[0] + 2);
}

/* Realigns the stack through a register (DRAP, r10): CFA from r10, then a DWARF expression
 * through rbp. Neither is a rule a BPF walker follows. */
__attribute__((noinline, force_align_arg_pointer)) int unwind_target_realign(int n)
{
	char *p = alloca((size_t)n + 16);
	int v __attribute__((aligned(32))) = n;

	memset(p, 2, (size_t)n + 16);
	sink = p[n] + v;
	return unwind_target_recurse(v);
}

static void on_signal(int sig)
{
	sink = sig;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 8;

	signal(SIGUSR1, on_signal);
	raise(SIGUSR1); /* returns through glibc's __restore_rt, a signal frame */
	printf("%d %d %d\n", unwind_target_recurse(n), unwind_target_alloca(n), unwind_target_realign(n));
	return 0;
}
