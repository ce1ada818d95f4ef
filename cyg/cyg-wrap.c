/* SPDX-License-Identifier: MIT */
/* cyg-wrap.c - the libc functions the runtime interposes, where frames are
 * left without their exits and where processes begin and end: the longjmp
 * family, exit, _exit, waitpid, wait, wait4, fork (with its child
 * handler), dlopen, and the library's destructor.
 *
 * Each wrapper finds the real function with dlsym(RTLD_NEXT) on its first
 * call.  They interpose only when the runtime is preloaded: loaded by
 * `record --attach` they are never called, and the runtime works without
 * them (clone() is wrapped in cyg-clone.c).  Runs inside the traced
 * program; the program's errno is kept.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cyg-cold.h"

static __thread uint64_t fork_cfa TLS_IE; /* stack position of fork()'s caller */

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

	if (cyg_state <= 0)
		return;
	if (old && cyg_stale(old)) {
		cyg__tls_forget();
		old = NULL;
	}
	cyg_proc_off = cyg__register_proc(cyg_proc_off, now);
	cyg__shared_reset();
	cyg_tls.t = NULL;
	t = cyg__thread_new(CYG_TF_FORKED, now);
	if (!t || !old)
		return;
	cyg__fork_frames(t, old, ostk, fork_cfa, now);
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
	for (; t; t = cyg_host_of(t)) {
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
