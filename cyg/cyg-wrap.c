/* SPDX-License-Identifier: MIT */
/* cyg-wrap.c - the libc functions the runtime interposes, where frames are
 * left without their exits and where processes begin and end: the longjmp
 * family, exit, _exit, waitpid, wait, wait4, fork and _Fork (with the
 * child handler), syscall (a raw fork), dlopen, and the library's
 * destructor; and those that
 * would take the CPU samples' signal from the runtime: sigaction, signal,
 * sysv_signal, bsd_signal, sigprocmask and pthread_sigmask.
 *
 * Each wrapper finds the real function with dlsym(RTLD_NEXT) on its first
 * call.  They interpose only when the runtime is preloaded: loaded by
 * `record --attach` they are never called, and the runtime works without
 * them (clone() is wrapped in cyg-clone.c).  Runs inside the traced
 * program; the program's errno is kept.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cyg-cold.h"

static __thread uint64_t fork_cfa TLS_IE; /* stack position of fork()'s caller */

/* The forking thread's frames as they were at fork(), in private memory.
 * The child cannot read them from the mapping: that is shared, and the
 * parent goes on after fork() returns to it, leaving and entering frames,
 * before the child's handler runs (a server back in its event loop while
 * its child is still starting: the child then found the parent's new
 * path, not its own).  The child gets its copy of this page with the rest
 * of the process. */
static __thread struct fork_snap {
	struct cyg_frame *stk; /* frames 0..depth, or NULL */
	size_t len;            /* bytes mapped */
	uint32_t depth, ovf;
} fork_snap TLS_IE;

void cyg__fork_snap_take(void)
{
	struct cyg_thread *t = cyg_tls.t;
	int saved = errno;

	if (fork_snap.stk || cyg_state <= 0 || !t || cyg_stale(t))
		return;
	uint32_t depth = t->depth;
	if (!CYG_IN(cyg_tls.stk + depth))
		return;
	size_t n = ((size_t)depth + 1) * sizeof(struct cyg_frame);
	size_t len = (n + 4095) & ~(size_t)4095;
	void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m != MAP_FAILED) {
		memcpy(m, cyg_tls.stk, n);
		fork_snap = (struct fork_snap){m, len, depth, t->ovf};
	}
	errno = saved;
}

void cyg__fork_snap_drop(void)
{
	int saved = errno;

	if (fork_snap.stk)
		munmap(fork_snap.stk, fork_snap.len);
	fork_snap.stk = NULL;
	errno = saved;
}

/* ---- how processes end ------------------------------------------------- */

/* A process in another mount namespace (a container) waits at its end,
 * briefly, until the collector has opened its files through /proc/PID/root:
 * from outside they cannot be found once it is gone. */
static void wait_primed(void)
{
	struct cyg_proc *p;

	if (cyg_state <= 0 || !cyg_proc_off)
		return;
	p = AT(cyg_proc_off);
	for (int i = 0; p->foreign && i < 2000; i++) {
		if (__atomic_load_n(&p->primed, __ATOMIC_ACQUIRE) ||
		    __atomic_load_n(&cyg_ctl->collector_gone, __ATOMIC_RELAXED))
			break;
		struct timespec ts = {0, 1000000};
		nanosleep(&ts, NULL);
	}
}

__attribute__((destructor)) static void cyg_fini(void)
{
	int saved = errno;

	if (cyg_state <= 0)
		return;
	/* threads off the CPU right now (blocked for the whole run): their
	 * time since they left it is blocked time, not work */
	cyg__sw_process_end();
	if (cyg_tls.t && cyg_stale(cyg_tls.t))
		cyg__tls_forget();
	else if (cyg_tls.t)
		cyg__thread_end(cyg_tls.t);
	else
		cyg__shared_end();
	if (cyg_proc_off) {
		struct cyg_proc *p = AT(cyg_proc_off);
		p->end_ts = cyg_now();
	}
	wait_primed();
	errno = saved;
}

/* fork: the child is a process of its own with its own writer, which
 * starts with the frames that called fork. */
void cyg__atfork_child(void)
{
	struct cyg_thread *old = cyg_tls.t, *t;
	struct cyg_frame *ostk = cyg_tls.stk;
	uint64_t now = cyg_now();

	/* first: the parent thread's sampler and perf mapping are not ours */
	cyg__smp_fork_child(1);
	if (cyg_state <= 0)
		return;
	if (old && cyg_stale(old)) {
		cyg__tls_forget();
		old = NULL;
	}
	cyg__smp_fork_close_others(cyg_proc_off);
	cyg_proc_off = cyg__register_proc(cyg_proc_off, now);
	cyg__shared_reset();
	cyg_tls.t = NULL;
	t = cyg__thread_new(CYG_TF_FORKED, now);
	if (t && old && fork_snap.stk)
		cyg__fork_frames(t, fork_snap.stk, fork_snap.depth, fork_snap.ovf, fork_cfa, now);
	else if (t && old) /* no snapshot: the parent's frames as they are now
			    * (a depth the program wrote: none) */
		cyg__fork_frames(t, ostk, CYG_IN(ostk + old->depth) ? old->depth : 0, old->ovf,
				 fork_cfa, now);
	cyg__fork_snap_drop();
}

/* ---- the wrappers: where frames are left, and how processes end -------- */

struct __jmp_buf_tag;
typedef void (*jmp_fn)(struct __jmp_buf_tag *, int) __attribute__((noreturn));
typedef void (*exit_fn)(int) __attribute__((noreturn));

static inline void mark_leave(void)
{
	struct cyg_thread *t = cyg_tls.t;
	uint64_t now = t ? cyg_now() : 0;

	/* The jump may leave signal handlers: then the writers they
	 * interrupted lose frames too, and their hooks never finish. */
	for (int i = 0; t && i <= CYG_SIG_LEVELS; i++, t = cyg_host_of(t)) {
		t->leave_ts = now;
		t->busy = 0;
	}
}

#define JMP_WRAPPER(name)                                                                          \
	EXPORT __attribute__((noreturn)) void name(struct __jmp_buf_tag *env, int val);           \
	void name(struct __jmp_buf_tag *env, int val)                                              \
	{                                                                                          \
		static jmp_fn real;                                                                \
		mark_leave();                                                                      \
		if (!real)                                                                         \
			real = (jmp_fn)cyg_next_sym(#name);                                        \
		real(env, val);                                                                    \
	}

JMP_WRAPPER(longjmp)
JMP_WRAPPER(_longjmp)
JMP_WRAPPER(siglongjmp)
JMP_WRAPPER(__longjmp_chk)

EXPORT __attribute__((noreturn)) void exit(int status);
void exit(int status)
{
	static exit_fn real;
	mark_leave();
	if (cyg_state > 0 && cyg_proc_off) {
		struct cyg_proc *p = AT(cyg_proc_off);
		p->code = status & 0xff;
		p->exit_called = 1;
	}
	if (!real)
		real = (exit_fn)cyg_next_sym("exit");
	real(status);
}

EXPORT __attribute__((noreturn)) void _exit(int status);
void _exit(int status)
{
	static exit_fn real;
	if (cyg_state > 0 && cyg_proc_off) {
		struct cyg_proc *p = AT(cyg_proc_off);
		int saved = errno;
		/* no destructor runs: the off-CPU time of every thread now */
		cyg__sw_process_end();
		struct cyg_thread *t = cyg_tls.t;
		for (int i = 0; t && !cyg_stale(t) && t->host_off && i < CYG_SIG_LEVELS; i++)
			t = cyg_host_of(t);
		/* not in a vfork child, which shares its parent's memory and
		 * TLS: the writer, its sampler and its mapping are the
		 * parent's */
		if (t && !cyg_stale(t) && t->pid == (uint32_t)getpid())
			cyg__smp_thread_end(t);
		errno = saved;
		p->code = status & 0xff;
		p->exit_called = 1;
		p->end_ts = cyg_now();
		wait_primed();
	}
	if (!real)
		real = (exit_fn)cyg_next_sym("_exit");
	real(status);
}

EXPORT pid_t waitpid(pid_t pid, int *wstatus, int options);
pid_t waitpid(pid_t pid, int *wstatus, int options)
{
	static pid_t (*real)(pid_t, int *, int);
	int st = 0;
	pid_t r;

	if (!real)
		real = (pid_t(*)(pid_t, int *, int))cyg_next_sym("waitpid");
	r = real(pid, &st, options);
	if (r > 0 && (WIFEXITED(st) || WIFSIGNALED(st)))
		cyg__proc_reaped(r, st);
	if (r > 0 && wstatus)
		*wstatus = st;
	return r;
}

EXPORT pid_t wait(int *wstatus);
pid_t wait(int *wstatus)
{
	return waitpid(-1, wstatus, 0);
}

EXPORT pid_t wait4(pid_t pid, int *wstatus, int options, struct rusage *ru);
pid_t wait4(pid_t pid, int *wstatus, int options, struct rusage *ru)
{
	static pid_t (*real)(pid_t, int *, int, struct rusage *);
	int st = 0;
	pid_t r;

	if (!real)
		real = (pid_t(*)(pid_t, int *, int, struct rusage *))cyg_next_sym("wait4");
	r = real(pid, &st, options, ru);
	if (r > 0 && (WIFEXITED(st) || WIFSIGNALED(st)))
		cyg__proc_reaped(r, st);
	if (r > 0 && wstatus)
		*wstatus = st;
	return r;
}

/* fork: remember where the caller's frame is, for the child's copy. */
EXPORT pid_t fork(void);
pid_t fork(void)
{
	static pid_t (*real)(void);
	pid_t r;

	if (!real)
		real = (pid_t(*)(void))cyg_next_sym("fork");
	fork_cfa = CYG_CFA();
	r = real();
	fork_cfa = 0;
	return r;
}

/* _Fork (glibc 2.34): a fork without the atfork handlers, so the child's
 * reset is done here, before anything else runs in it. */
EXPORT pid_t _Fork(void);
pid_t _Fork(void)
{
	static pid_t (*real)(void);
	pid_t r;

	if (!real)
		real = (pid_t(*)(void))cyg_next_sym("_Fork");
	if (!real) {
		errno = ENOSYS;
		return -1;
	}
	fork_cfa = CYG_CFA();
	cyg__fork_snap_take();
	r = real();
	if (r == 0) {
		int saved = errno;
		cyg__atfork_child();
		errno = saved;
	}
	cyg__fork_snap_drop();
	fork_cfa = 0;
	return r;
}

/* syscall(): a fork made by the raw system call (SYS_fork, or SYS_clone or
 * SYS_clone3 without CLONE_VM) runs no atfork handler; its child would
 * keep reading the parent's switch records, which it has no copy of
 * (VM_DONTCOPY), at its next exit hook.  So the calling thread stops
 * reading them around it, as the fork handlers do; the child keeps its
 * parent's writer (as before: the runtime does not follow such a fork)
 * without them. */
struct cyg_clone_args { uint64_t flags; }; /* the first field of struct clone_args */

/* The clone flags of system call n with first argument a0 when it makes a
 * process of its own (a copy of this one), else -1. */
static long forklike(long n, long a0)
{
#ifdef SYS_fork
	if (n == SYS_fork)
		return 0;
#endif
#ifdef SYS_clone
	if (n == SYS_clone)
		return a0 & CLONE_VM ? -1 : a0 & 0x7fffffff;
#endif
#ifdef SYS_clone3
	if (n == SYS_clone3 && a0) {
		uint64_t fl = ((const struct cyg_clone_args *)(uintptr_t)a0)->flags;
		return fl & CLONE_VM ? -1 : (long)(fl & 0x7fffffff);
	}
#endif
	(void)a0;
	return -1;
}

typedef long (*syscall_fn)(long, ...);
static syscall_fn real_syscall;

/* Found at the attach, before any thread is registered: the runtime's own
 * syscall() calls (gettid, perf_event_open) come here too, from cold paths
 * that had better not take the loader's lock. */
void cyg__syscall_init(void)
{
	int saved = errno;

	if (!__atomic_load_n(&real_syscall, __ATOMIC_RELAXED))
		__atomic_store_n(&real_syscall, (syscall_fn)cyg_next_sym("syscall"),
				 __ATOMIC_RELAXED);
	errno = saved;
}

EXPORT long syscall(long n, ...);
long syscall(long n, ...)
{
	syscall_fn real = __atomic_load_n(&real_syscall, __ATOMIC_RELAXED);
	long a[6], r;
	va_list ap;

	va_start(ap, n);
	for (int i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	if (!real) {
		real = (syscall_fn)cyg_next_sym("syscall");
		__atomic_store_n(&real_syscall, real, __ATOMIC_RELAXED);
	}
	if (!real) {
		errno = ENOSYS;
		return -1;
	}
	long fl = forklike(n, a[0]);
	if (fl < 0)
		return real(n, a[0], a[1], a[2], a[3], a[4], a[5]);
	cyg__smp_fork_prepare();
	r = real(n, a[0], a[1], a[2], a[3], a[4], a[5]);
	int saved = errno;
	if (r == 0)
		cyg__smp_fork_child(!(fl & CLONE_FILES));
	else
		cyg__smp_fork_parent();
	errno = saved;
	return r;
}

/* dlopen: new code appears; keep the maps the collector decodes with current. */
EXPORT void *dlopen(const char *file, int mode);
void *dlopen(const char *file, int mode)
{
	static void *(*real)(const char *, int);
	void *h;

	if (!real)
		real = (void *(*)(const char *, int))cyg_next_sym("dlopen");
	h = real(file, mode);
	if (h && cyg_state > 0 && cyg_proc_off) {
		int saved = errno;
		cyg__snapshot_maps(AT(cyg_proc_off));
		if (cyg_memory && cyg_callbacks->objs_changed)
			cyg_callbacks->objs_changed();
		errno = saved;
	}
	return h;
}

/* ---- the CPU samples' signal (cyg-sample.c) ------------------------------ */

/* While the runtime samples (cyg_smp_signo set), the program's action for
 * that signal is remembered and called for a signal that is not a sample;
 * the kernel keeps the runtime's handler.  Every other signal goes through
 * untouched.  sigwait, sigtimedwait and signalfd are left alone: the
 * signal is never blocked (below), so it is never pending for them. */
EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old);
int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	int s = __atomic_load_n(&cyg_smp_signo, __ATOMIC_ACQUIRE);

	if (!s || sig != s)
		return cyg__real_sigaction(sig, act, old);
	return cyg__smp_sigaction(act, old);
}

/* signal() and its variants on the samples' signal: the same, with their
 * flags (bsd_signal and signal: restart, not reset; sysv_signal: reset,
 * no mask). */
static sighandler_t set_handler(int sig, sighandler_t h, int flags)
{
	struct sigaction a, old;

	if (sig <= 0 || sig >= NSIG || h == SIG_ERR) {
		errno = EINVAL;
		return SIG_ERR;
	}
	memset(&a, 0, sizeof a);
	a.sa_handler = h;
	a.sa_flags = flags;
	sigemptyset(&a.sa_mask);
	if (!(flags & SA_NODEFER))
		sigaddset(&a.sa_mask, sig);
	if (sigaction(sig, &a, &old))
		return SIG_ERR;
	return old.sa_handler;
}

typedef sighandler_t (*signal_fn)(int, sighandler_t);

#define SIGNAL_WRAPPER(name, flags)                                                                \
	EXPORT sighandler_t name(int sig, sighandler_t h);                                         \
	sighandler_t name(int sig, sighandler_t h)                                                 \
	{                                                                                          \
		static signal_fn real;                                                             \
		int s = __atomic_load_n(&cyg_smp_signo, __ATOMIC_ACQUIRE);                         \
		if (s && sig == s)                                                                 \
			return set_handler(sig, h, flags);                                         \
		if (!real)                                                                         \
			real = (signal_fn)cyg_next_sym(#name);                                     \
		if (!real)                                                                         \
			return set_handler(sig, h, flags);                                         \
		return real(sig, h);                                                               \
	}

SIGNAL_WRAPPER(signal, SA_RESTART)
SIGNAL_WRAPPER(bsd_signal, SA_RESTART)
SIGNAL_WRAPPER(sysv_signal, SA_RESETHAND | SA_NODEFER)

/* Whether the program has the samples' signal blocked, as far as it knows
 * (the kernel never has it blocked): what the masks it reads back say. */
static __thread int prog_blocked TLS_IE;

/* set without the samples' signal in *copy (returned), for the kernel. */
static const sigset_t *without_ours(int how, const sigset_t *set, sigset_t *copy, int s)
{
	if (!set || !sigismember(set, s))
		return set;
	*copy = *set;
	if (how == SIG_BLOCK || how == SIG_SETMASK)
		sigdelset(copy, s);
	return copy;
}

static int mask_call(int how, const sigset_t *set, sigset_t *old, int pthread)
{
	int s = __atomic_load_n(&cyg_smp_signo, __ATOMIC_ACQUIRE), r;
	int was = prog_blocked;
	sigset_t copy;

	if (!s) {
		if (pthread)
			return cyg__real_sigmask(how, set, old);
		r = cyg__real_sigmask(how, set, old);
		if (r) {
			errno = r;
			return -1;
		}
		return 0;
	}
	r = cyg__real_sigmask(how, without_ours(how, set, &copy, s), old);
	if (!r && set) {
		if (how == SIG_SETMASK)
			prog_blocked = sigismember(set, s);
		else if (how == SIG_BLOCK && sigismember(set, s))
			prog_blocked = 1;
		else if (how == SIG_UNBLOCK && sigismember(set, s))
			prog_blocked = 0;
	}
	if (!r && old) {
		if (was)
			sigaddset(old, s);
		else
			sigdelset(old, s);
	}
	if (r && !pthread) {
		errno = r;
		return -1;
	}
	return r;
}

EXPORT int pthread_sigmask(int how, const sigset_t *set, sigset_t *old);
int pthread_sigmask(int how, const sigset_t *set, sigset_t *old)
{
	return mask_call(how, set, old, 1);
}

EXPORT int sigprocmask(int how, const sigset_t *set, sigset_t *old);
int sigprocmask(int how, const sigset_t *set, sigset_t *old)
{
	return mask_call(how, set, old, 0);
}
