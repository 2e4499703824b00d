/* SPDX-License-Identifier: GPL-2.0 */
/* The kernel's types and constants that offwake's BPF programs use, written here instead of
 * a generated vmlinux.h: only the fields read, each struct marked preserve_access_index so
 * that libbpf relocates every access to the running kernel's layout (CO-RE). A field that
 * some kernels lack is read only behind bpf_core_field_exists(). Each compatibility shim says
 * which kernel it is for.
 *
 * The architecture comes from the build (-D__TARGET_ARCH_<arch>, cmake/BpfSkeleton.cmake):
 * only the saved user registers (struct pt_regs) differ between architectures here. */
#ifndef OFFWAKE_KERNEL_TYPES_BPF_H
#define OFFWAKE_KERNEL_TYPES_BPF_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

#include "offwake.h"

/* task_struct.flags (include/linux/sched.h). */
#define PF_IO_WORKER 0x00000010u   /* io_uring workers (Linux 5.12) */
#define PF_USER_WORKER 0x00004000u /* vhost and other user workers (Linux 6.4) */
#define PF_KTHREAD 0x00200000u
/* No user stack of their own to speak of: kernel threads, io_uring and other user workers. */
#define PF_NO_USER_STACK (PF_KTHREAD | PF_USER_WORKER | PF_IO_WORKER)

/* A kernel stack's size (THREAD_SIZE) without KASAN, on x86-64 and arm64. With KASAN it is
 * larger: frames beyond this are then not found, and their stacks not remembered
 * (kernel_memo.bpf.h), which costs time, not correctness. */
#define KERNEL_STACK_SIZE 16384u

/* preempt_count bits (include/linux/preempt.h; NMI_BITS is 4 in Linux 6.x). */
#define SOFTIRQ_OFFSET 0x00000100u
#define HARDIRQ_MASK 0x000f0000u
#define NMI_MASK 0x00f00000u

struct mm_struct; /* only compared, never read */

struct rq; /* only its address is taken (the CPU's preempt_count lies at a known distance) */

struct cfs_rq {
	struct rq *rq;
} __attribute__((preserve_access_index));

struct sched_entity {
	struct cfs_rq *cfs_rq;
	/* Linux 6.12 (EEVDF delayed dequeue): a task that slept may stay queued until it is
	 * picked or woken. Older kernels lack the field; read it behind bpf_core_field_exists(). */
	unsigned char sched_delayed;
} __attribute__((preserve_access_index));

/* Where a task that is not running left its kernel stack (its saved stack pointer), per
 * architecture: task_saved_sp() below. */
#if defined(__TARGET_ARCH_x86)
struct thread_struct {
	unsigned long sp;
} __attribute__((preserve_access_index));
#elif defined(__TARGET_ARCH_arm64)
struct cpu_context {
	unsigned long sp;
} __attribute__((preserve_access_index));
struct thread_struct {
	struct cpu_context cpu_context;
} __attribute__((preserve_access_index));
#endif

/* A task's cgroup in the default (v2) hierarchy, and that cgroup's id: its kernfs node's. */
struct kernfs_node {
	__u64 id;
} __attribute__((preserve_access_index));

struct cgroup {
	struct kernfs_node *kn;
} __attribute__((preserve_access_index));

struct css_set {
	struct cgroup *dfl_cgrp;
} __attribute__((preserve_access_index));

struct task_struct {
	void *stack; /* its kernel stack: THREAD_SIZE bytes from here */
	struct thread_struct thread;
	unsigned int flags;
	int on_cpu;
	int on_rq;
	int pid;
	int tgid;
	struct mm_struct *mm;
	__u64 start_time;
	__u64 self_exec_id;
	char comm[OFFWAKE_COMM_LEN];
	struct sched_entity se;
	void *rseq; /* the thread's registered struct rseq (user space), if any */
	struct css_set *cgroups;
} __attribute__((preserve_access_index));

/* t's cgroup v2 id, as bpf_get_current_cgroup_id() gives the current task's (the same three
 * loads), read from the task pointer the program has: no helper call. */
static __always_inline __u64 task_cgroup_id(struct task_struct *t)
{
	return t->cgroups->dfl_cgrp->kn->id;
}

/* Whether t registered an rseq area (glibc does for every thread since 2.35): then the kernel
 * runs rseq_update on t's every way back to user space after it was switched out. */
static __always_inline int task_has_rseq(struct task_struct *t)
{
	if (!bpf_core_field_exists(t->rseq))
		return 0;
	return t->rseq != 0;
}

/* The user registers a task entered the kernel with (bpf_task_pt_regs()), per architecture:
 * where the frame-pointer walk starts, and whether the task is inside a system call. */
#if defined(__TARGET_ARCH_x86)
struct pt_regs {
	unsigned long bp;
	unsigned long di;
	unsigned long orig_ax;
	unsigned long ip;
	unsigned long sp;
} __attribute__((preserve_access_index));

static __always_inline __u64 regs_ip(struct pt_regs *r) { return r->ip; }
static __always_inline __u64 regs_fp(struct pt_regs *r) { return r->bp; }
static __always_inline __u64 regs_sp(struct pt_regs *r) { return r->sp; }
/* The register that an unwind rule may hold a return address in (OFFWAKE_UNWIND_RA_RDI). */
static __always_inline __u64 regs_ra_reg(struct pt_regs *r) { return r->di; }
/* orig_ax is the system call number inside one, -1 in an exception or interrupt. */
static __always_inline int regs_in_syscall(struct pt_regs *r) { return (long)r->orig_ax >= 0; }
static __always_inline __u64 task_saved_sp(struct task_struct *t) { return t->thread.sp; }
#elif defined(__TARGET_ARCH_arm64)
/* Compiled, not yet run on an arm64 kernel. x29 is the frame pointer, and the frame record
 * {next x29, x30} has the same shape as x86's {next rbp, return address}. */
struct pt_regs {
	__u64 regs[31];
	__u64 sp;
	__u64 pc;
	int syscallno; /* NO_SYSCALL (-1) outside a system call */
} __attribute__((preserve_access_index));

static __always_inline __u64 regs_ip(struct pt_regs *r) { return r->pc; }
static __always_inline __u64 regs_fp(struct pt_regs *r) { return r->regs[29]; }
static __always_inline __u64 regs_sp(struct pt_regs *r) { return r->sp; }
static __always_inline __u64 regs_ra_reg(struct pt_regs *r) { return 0; } /* no such rule here */
static __always_inline int regs_in_syscall(struct pt_regs *r) { return r->syscallno >= 0; }
static __always_inline __u64 task_saved_sp(struct task_struct *t) { return t->thread.cpu_context.sp; }
#else
#error "offwake: no struct pt_regs for this __TARGET_ARCH (kernel_types.bpf.h)"
#endif

/* The context of an iter/task program. */
struct bpf_iter_meta;
struct bpf_iter__task {
	struct bpf_iter_meta *meta;
	struct task_struct *task;
} __attribute__((preserve_access_index));

/* Linux 6.18: the kfunc that runs a callback in a task's own context on its way back to user
 * space. Weak, so that the object still loads on older kernels, where deferred user stacks
 * are taken by the sys_exit program instead (the loader checks the kernel's BTF for it). */
struct bpf_task_work {
	__u64 opaque;
} __attribute__((aligned(8)));
/* Complete, not just declared: libbpf compares the kfunc's prototype with the kernel's, and a
 * declared-only struct does not match a defined one. Never accessed. */
struct bpf_map {
	__u32 id;
} __attribute__((preserve_access_index));
extern int bpf_task_work_schedule_resume_impl(struct task_struct *task, struct bpf_task_work *tw, void *map__map,
					      int (*callback)(struct bpf_map *map, void *key, void *value),
					      void *aux__prog) __ksym __weak;

/* Linux 6.2: a pointer of any kernel type from a number, read-only and untrusted. Its loads are
 * the JIT's guarded loads (an exception-table entry: a fault reads 0), with no helper call.
 * Weak, so that the object still loads without it; kernel_word() then falls back to a helper. */
extern void *bpf_rdonly_cast(const void *obj__ign, __u32 btf_id__k) __ksym __weak;

/* A kernel type whose first member is one word: what kernel_word() casts an address to. */
struct rb_node {
	unsigned long __rb_parent_color;
} __attribute__((preserve_access_index));

/* The word at kernel address `addr`, 0 if it cannot be read. A guarded load where the kernel
 * has bpf_rdonly_cast(): bpf_probe_read_kernel() is a helper call, which made preempt_count()
 * take twice as long (0.24 against 0.12 us with two clock reads around it, on pgbench,
 * 2026-12-04). The waking program reads preempt_count at every wakeup. */
static __always_inline __u64 kernel_word(__u64 addr)
{
	__u64 w = 0;

	if (bpf_rdonly_cast)
		return ((struct rb_node *)bpf_rdonly_cast((void *)addr, bpf_core_type_id_kernel(struct rb_node)))
			->__rb_parent_color;
	bpf_probe_read_kernel(&w, sizeof(w), (void *)addr);
	return w;
}

#endif /* OFFWAKE_KERNEL_TYPES_BPF_H */
