/* A stack the unwinder test takes a copy of itself, as perf_event does for --call-graph dwarf:
 * the registers at one point of self_dump_leaf, and the stack from there up. Built with -O2
 * -fomit-frame-pointer (as Debian builds), so that only the CFI of .eh_frame finds the callers:
 * self_dump_outer -> self_dump_middle (SELF_DUMP_DEPTH + 1 times) -> self_dump_leaf. */
#define _GNU_SOURCE
#include "self_dump.h"

#include <asm/perf_regs.h>
#include <pthread.h>
#include <string.h>

volatile int self_dump_sink;

/* Not instrumented by AddressSanitizer (make sanitize): the copy reads the redzones it puts
 * around other frames' variables, word by word rather than by memcpy, which it would check. */
__attribute__((noinline, no_sanitize_address)) void self_dump_leaf(struct self_dump *d)
{
	pthread_attr_t attr;
	void *low;
	size_t size, i;
	uintptr_t sp, top;
	const volatile uint64_t *from;

	/* Every register perf's x86-64 mask holds (but the segments), at one instruction: rax is
	 * stored before it is used for the ip. */
	__asm__ volatile("movq %%rax, 0(%0)\n\t"
			 "movq %%rbx, 8(%0)\n\t"
			 "movq %%rcx, 16(%0)\n\t"
			 "movq %%rdx, 24(%0)\n\t"
			 "movq %%rsi, 32(%0)\n\t"
			 "movq %%rdi, 40(%0)\n\t"
			 "movq %%rbp, 48(%0)\n\t"
			 "movq %%rsp, 56(%0)\n\t"
			 "movq %%r8, 128(%0)\n\t"
			 "movq %%r9, 136(%0)\n\t"
			 "movq %%r10, 144(%0)\n\t"
			 "movq %%r11, 152(%0)\n\t"
			 "movq %%r12, 160(%0)\n\t"
			 "movq %%r13, 168(%0)\n\t"
			 "movq %%r14, 176(%0)\n\t"
			 "movq %%r15, 184(%0)\n\t"
			 "leaq 0(%%rip), %%rax\n\t"
			 "movq %%rax, 64(%0)\n\t"
			 :
			 : "r"(d->regs)
			 : "rax", "memory");
	/* The copy from sp up to the stack's top, or as much as fits. */
	if (pthread_getattr_np(pthread_self(), &attr) != 0)
		return;
	pthread_attr_getstack(&attr, &low, &size);
	pthread_attr_destroy(&attr);
	sp = (uintptr_t)d->regs[PERF_REG_X86_SP];
	top = (uintptr_t)low + size;
	d->copied = (top - sp < sizeof d->stack ? top - sp : sizeof d->stack) & ~(size_t)7;
	from = (const volatile uint64_t *)sp;
	for (i = 0; i < d->copied / 8; i++) {
		uint64_t word = from[i];

		memcpy(d->stack + 8 * i, &word, 8);
	}
}

__attribute__((noinline)) int self_dump_middle(struct self_dump *d, int n)
{
	char pad[32];

	memset(pad, n, sizeof pad);
	if (n > 0)
		self_dump_sink += self_dump_middle(d, n - 1) + pad[n & 31];
	else
		self_dump_leaf(d);
	return pad[(n * 3) & 31];
}

__attribute__((noinline)) int self_dump_outer(struct self_dump *d)
{
	return self_dump_middle(d, SELF_DUMP_DEPTH) + 1;
}
