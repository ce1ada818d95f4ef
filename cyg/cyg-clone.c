/* SPDX-License-Identifier: MIT */
/* cyg-clone.c - clone(): the children that pthread_create() and fork() do
 * not make, and the threads that share a TLS because of them.
 *
 * The clone() wrapper starts each child in clone_start(), which gives it a
 * writer (and a process image of its own without CLONE_THREAD) before the
 * caller's function runs, and ends that writer when the function returns.
 * A CLONE_VM child without CLONE_SETTLS runs on its parent's TLS, where
 * cyg_tls cannot tell the two apart: both then find their writers by tid,
 * in the table here.  Runs inside the traced program, on cold paths only.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdarg.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cyg-cold.h"

/* ---- threads that share their TLS (raw clone() without CLONE_SETTLS) ---- */

/* A child made by clone(CLONE_VM) without a TLS of its own runs on the
 * TLS of the thread that made it: cyg_tls cannot tell them apart.  From
 * then on that TLS holds no writer (t NULL), so every hook of both takes
 * the cold path, which finds the caller's writer by tid in this table.
 * Entries are only added (tid published last); lookups take no lock. */
#define SHARED_MAX 256
static struct shared {
	uint32_t tid;
	uint64_t off;         /* its writer, 0 until its first hook */
	uint64_t proc_off;    /* its process image */
	uint32_t flags;
} shared_tab[SHARED_MAX];
static uint32_t shared_n;
static int shared_on;
static int shared_busy; /* a spin lock for adding entries */

void cyg__shared_reset(void)
{
	shared_on = 0;
	shared_n = 0;
}

static struct shared *shared_find(uint32_t tid)
{
	uint32_t n = __atomic_load_n(&shared_n, __ATOMIC_ACQUIRE);

	for (uint32_t i = 0; i < n; i++)
		if (__atomic_load_n(&shared_tab[i].tid, __ATOMIC_ACQUIRE) == tid)
			return &shared_tab[i];
	return NULL;
}

/* Add (or update) the entry of tid; returns it, or NULL when full. */
static struct shared *shared_add(uint32_t tid, uint64_t off, uint64_t proc_off, uint32_t flags)
{
	struct shared *e;

	while (__atomic_exchange_n(&shared_busy, 1, __ATOMIC_ACQUIRE))
		sched_yield();
	e = shared_find(tid);
	if (!e && shared_n < SHARED_MAX) {
		e = &shared_tab[shared_n];
		e->tid = 0;
		__atomic_store_n(&shared_n, shared_n + 1, __ATOMIC_RELEASE);
	}
	if (e) {
		e->off = off;
		e->proc_off = proc_off;
		e->flags = flags;
		__atomic_store_n(&e->tid, tid, __ATOMIC_RELEASE);
		__atomic_store_n(&shared_on, 1, __ATOMIC_RELEASE);
	}
	__atomic_store_n(&shared_busy, 0, __ATOMIC_RELEASE);
	return e;
}

static void shared_del(uint32_t tid)
{
	struct shared *e = shared_find(tid);
	if (e)
		__atomic_store_n(&e->tid, 0, __ATOMIC_RELEASE);
}

/* The writer of the calling thread when it shares its TLS, made at its
 * first hook; NULL when it does not (or none can be made). */
struct cyg_thread *cyg__shared_writer(int make)
{
	if (!__atomic_load_n(&shared_on, __ATOMIC_ACQUIRE))
		return NULL;
	struct shared *e = shared_find((uint32_t)syscall(SYS_gettid));
	if (!e)
		return NULL;
	uint64_t off = __atomic_load_n(&e->off, __ATOMIC_ACQUIRE);
	if (!off && make) {
		struct cyg_thread *t = cyg__thread_alloc(e->flags, cyg_now(), e->proc_off);
		if (!t)
			return NULL;
		off = OFF(t);
		__atomic_store_n(&e->off, off, __ATOMIC_RELEASE);
	}
	return off ? AT(off) : NULL;
}

/* A thread whose TLS is shared with a clone() child ends: its writer, and
 * its entry in the table (its tid may be reused). */
void cyg__shared_end(void)
{
	struct cyg_thread *w = cyg__shared_writer(0);

	if (w)
		cyg__writer_end(w, cyg_now());
	shared_del((uint32_t)syscall(SYS_gettid));
}

/* ---- clone(): children that pthread_create and fork do not make ---------- */

/* What the child needs to start: passed through a slot (a CLONE_VM child
 * may start after the wrapper returned, so not on the wrapper's stack). */
struct clone_start {
	int (*fn)(void *);
	void *arg;
	int flags;
	int used;
	uint64_t proc_off; /* the process image of the caller */
};
static struct clone_start clone_slots[64];

static struct clone_start *clone_slot(void)
{
	for (unsigned i = 0; i < sizeof clone_slots / sizeof clone_slots[0]; i++)
		if (!__atomic_exchange_n(&clone_slots[i].used, 1, __ATOMIC_ACQUIRE))
			return &clone_slots[i];
	return NULL;
}

/* The child's first code, before the caller's function: give it a writer
 * of its own.  Never instrumented (NOINSTR), touches no TLS but cyg_tls. */
static int clone_start(void *p)
{
	struct clone_start *cs = p;
	int (*fn)(void *) = cs->fn;
	void *arg = cs->arg;
	int flags = cs->flags;
	uint64_t proc_off = cs->proc_off;
	uint64_t now = cyg_now();
	struct cyg_thread *t = NULL;

	if (flags & CLONE_VM)
		__atomic_store_n(&cs->used, 0, __ATOMIC_RELEASE); /* shared: give it back */
	if (!(flags & CLONE_THREAD)) {
		/* a process of its own */
		uint64_t off = cyg__register_proc(proc_off, now);
		if (off)
			proc_off = off;
		if (!(flags & CLONE_VM)) {
			cyg_proc_off = proc_off; /* its own copy of everything */
			cyg__shared_reset();
		}
	}
	if (!(flags & CLONE_VM) || (flags & CLONE_SETTLS)) {
		/* TLS of its own: a copy of the caller's, or whatever the
		 * caller made; its writer is made at its first hook.  A
		 * process of its own has no copy of the perf mapping, and
		 * its copy of the caller's sampler descriptor goes. */
		if (!(flags & CLONE_VM))
			cyg__smp_fork_child(!(flags & CLONE_FILES));
		memset(&cyg_tls, 0, sizeof cyg_tls);
		cyg_tls.swh = &cyg_sw_zero;
		t = cyg__thread_alloc(CYG_TF_CLONED | (flags & CLONE_THREAD ? 0 : CYG_TF_FORKED),
				      now, proc_off);
		if (t) {
			cyg__tls_use(t);
			cyg__smp_thread_start(t);
		}
	} else {
		/* TLS shared with the caller (which went shared in the wrapper) */
		t = cyg__thread_alloc(CYG_TF_CLONED | (flags & CLONE_THREAD ? 0 : CYG_TF_FORKED),
				      now, proc_off);
		shared_add((uint32_t)syscall(SYS_gettid), t ? OFF(t) : 0, proc_off,
			   CYG_TF_CLONED);
	}
	int r = fn(arg);
	/* The child ends when this returns: close its writer now. */
	if (t) {
		uint64_t end = cyg_now();
		char name[16];
		cyg__smp_thread_end(t);
		/* its name now (cyg__thread_end() says why) */
		if (prctl(PR_GET_NAME, name, 0, 0, 0) == 0) {
			name[sizeof name - 1] = 0;
			memcpy(t->name, name, sizeof name);
		}
		cyg__writer_end(t, end);
		if (!(flags & CLONE_THREAD)) {
			struct cyg_proc *pr = AT(proc_off);
			pr->end_ts = end;
		}
	}
	if ((flags & CLONE_VM) && !(flags & CLONE_SETTLS))
		shared_del((uint32_t)syscall(SYS_gettid)); /* its tid may be reused */
	else
		cyg_tls.t = NULL; /* its own TLS: nothing more to record */
	return r;
}

EXPORT int clone(int (*fn)(void *), void *stack, int flags, void *arg, ...);
int clone(int (*fn)(void *), void *stack, int flags, void *arg, ...)
{
	static int (*real)(int (*)(void *), void *, int, void *, ...);
	struct clone_start *cs = NULL;
	struct cyg_thread *t = cyg_tls.t;
	va_list ap;
	pid_t *ptid;
	void *tls;
	pid_t *ctid;
	int shared_now = 0, r;

	va_start(ap, arg);
	ptid = va_arg(ap, pid_t *);
	tls = va_arg(ap, void *);
	ctid = va_arg(ap, pid_t *);
	va_end(ap);
	if (!real)
		real = (int (*)(int (*)(void *), void *, int, void *, ...))cyg_next_sym("clone");
	if (cyg_state > 0 && fn)
		cs = clone_slot();
	if (!cs)
		return real(fn, stack, flags, arg, ptid, tls, ctid);
	cs->fn = fn;
	cs->arg = arg;
	cs->flags = flags;
	cs->proc_off = cyg_proc_off;
	if ((flags & CLONE_VM) && !(flags & CLONE_SETTLS) && !t && !cyg__shared_writer(0))
		t = cyg__thread_init(); /* this thread's writer, before it is shared */
	if ((flags & CLONE_VM) && !(flags & CLONE_SETTLS) && t) {
		/* The child will run on this thread's TLS: from now on both
		 * find their writers by tid. */
		shared_add((uint32_t)syscall(SYS_gettid), OFF(t), t->proc_off, t->flags);
		cyg_tls.t = NULL;
		cyg_tls.stk = NULL;
		cyg_tls.ring = NULL;
		shared_now = 1;
	}
	r = real(clone_start, stack, flags, cs, ptid, tls, ctid);
	if (!(flags & CLONE_VM) || r < 0)
		__atomic_store_n(&cs->used, 0, __ATOMIC_RELEASE);
	if (shared_now && ((flags & CLONE_VFORK) || r < 0)) {
		/* The child has exec'd or exited (or never ran): the TLS is
		 * this thread's alone again. */
		shared_del((uint32_t)syscall(SYS_gettid));
		cyg__tls_use(t);
	}
	return r;
}
