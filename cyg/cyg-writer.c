/* SPDX-License-Identifier: MIT */
/* cyg-writer.c - per-thread writers: made at a thread's first hook, made
 * current, ended when the thread ends; and the writers of signal handlers
 * that interrupt a hook.
 *
 * A writer (struct cyg_thread in the mapping) is what one thread writes
 * its tree, shadow stack and ring through; the hooks reach the current one
 * through initial-exec TLS (cyg_tls).  A thread ends through the pthread
 * key's destructor (or the process's end, cyg-wrap.c); a thread that
 * shares its TLS with a raw clone() child has its writer looked up by tid
 * instead (cyg-clone.c).  Runs inside the traced program, on cold paths
 * only.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "cyg-cold.h"

__thread struct cyg_tls cyg_tls TLS_IE;
/* no writer could be made in the mapping of this attach (cyg_gen): don't retry */
static __thread unsigned thread_failed TLS_IE;
static pthread_key_t cyg_key;

/* ---- a writer the program wrote over ---------------------------------- */

static int pow2(uint64_t n)
{
	return n && !(n & (n - 1));
}

/* A record of another writer named by t (its signal handlers' or its
 * host): in the window, where records are (64-aligned). */
static int link_ok(uint64_t off)
{
	return !off || (!(off & 63) && off >= CYG_NULL_OFF &&
			cyg_span_ok(off, sizeof(struct cyg_thread)));
}

int cyg__writer_ok(struct cyg_thread *t)
{
	const char *what = NULL;
	uint64_t cap = t->stack_cap;

	if (!cap || !cyg_span_ok(t->stack_off, cap * sizeof(struct cyg_frame)) ||
	    t->depth >= cap || t->lim > cap)
		what = "shadow stack";
	else if (t->chunk_next > t->chunk_end ||
		 !cyg_span_ok(t->chunk_next, t->chunk_end - t->chunk_next))
		what = "node chunk";
	else if (t->kids_off && (!pow2((uint64_t)t->kids_mask + 1) || t->kids_n > t->kids_mask ||
				 !cyg_span_ok(t->kids_off, ((uint64_t)t->kids_mask + 1) *
								   sizeof(struct cyg_kid))))
		what = "child table";
	else if (t->sites_off &&
		 (!pow2((uint64_t)t->sidx_mask + 1) || t->sites_n > CYG_SITES_MAX ||
		  t->sites_n > t->sidx_mask ||
		  !cyg_span_ok(t->sidx_off, ((uint64_t)t->sidx_mask + 1) * sizeof(uint32_t)) ||
		  !cyg_span_ok(t->sites_off, cyg_sites_cap(t) * sizeof(struct cyg_site))))
		what = "call-site table";
	else if (t->ring_off && !cyg_span_ok(t->ring_off, (cyg_ring_mask + 1) * 8))
		what = "ring";
	else if (!link_ok(t->alt_off) || !link_ok(t->host_off) || t->level > CYG_SIG_LEVELS ||
		 !t->level != !t->host_off)
		what = "signal handlers' writer";
	if (LIKELY(!what))
		return 1;
	cyg__writer_bad(t, what);
	return 0;
}

void cyg__writer_bad(struct cyg_thread *t, const char *what)
{
	static int said;
	int saved = errno;

	(void)t;
	__atomic_add_fetch(&cyg_ctl->rt_dropped, 1, __ATOMIC_RELAXED);
	/* nothing more through it: not the hooks (TLS), not a new writer */
	cyg__tls_forget();
	thread_failed = cyg_gen;
	if (!__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED)) {
		char msg[200];
		int n = snprintf(msg, sizeof msg,
				 "cygprof: process %d wrote into cygprof's shared memory (thread "
				 "%d's %s): that thread is no longer recorded\n",
				 (int)getpid(), (int)gettid(), what);
		if (n > 0)
			(void)!write(2, msg, (size_t)n < sizeof msg ? (size_t)n : sizeof msg - 1);
	}
	errno = saved;
}

/* ---- a thread's writer ------------------------------------------------ */

void cyg__tls_forget(void)
{
	cyg_tls.t = NULL;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	cyg_tls.stk = NULL;
	cyg_tls.ring = NULL;
	memset(cyg_tls.save, 0, sizeof cyg_tls.save);
}

struct cyg_thread *cyg__writer_init(uint64_t off, uint64_t stack, uint32_t cap, uint32_t lim,
				    uint64_t ring, uint64_t proc_off, uint64_t now)
{
	struct cyg_thread *t = AT(off);
	struct cyg_node *root;
	struct cyg_frame *stk = AT(stack);

	memset(t, 0, sizeof *t);
	t->pid = (uint32_t)getpid();
	t->tid = (uint32_t)gettid();
	t->stack_off = stack;
	t->stack_cap = cap;
	t->lim = lim;
	t->ring_off = ring;
	t->proc_off = proc_off;
	t->smp_fd = -1;
	root = cyg__node_alloc(t);
	if (!root)
		return NULL;
	memset(root, 0, sizeof *root); /* its ext is zeroed by cyg__node_alloc() */
	root->hint = CYG_GID_NULL;
	root->hint2 = CYG_GID_NULL;
	t->root = cyg_gid(root);
	stk[0].ts = now;
	stk[0].cfa = UINT64_MAX;
	stk[0].node = t->root;
	stk[0].site = 0;
	t->state = CYG_T_ACTIVE;
	return t;
}

/* A new writer of this process image, on the thread list; the caller
 * makes it current (or not: a signal handlers' writer waits for one). */
struct cyg_thread *cyg__thread_alloc(uint32_t flags, uint64_t now, uint64_t proc_off)
{
	struct cyg_thread *t;
	uint64_t off, stack = 0, ring = 0;
	uint32_t cap = CYG_STACK_INIT;
	/* By the mapping's flag, not cyg_memory: a writer made before memory
	 * tracing started (a hook that came before libcygprof-mem.so
	 * registered) has what memory records need once it does. */
	int mem = !!(cyg_ctl->flags & CYG_F_MEMORY);

	/* What others gave back, under the lock; new memory without it (a
	 * signal handler's writer, when its thread holds the lock). */
	if (cyg_timeline)
		ring = cyg__spare_ring(); /* the calibration's, faulted in */
	cyg__reuse(&stack, &cap, &ring, (cyg_timeline || mem) && !ring);
	off = cyg__area_alloc(sizeof *t);
	if (!stack)
		stack = cyg__area_alloc((uint64_t)cap * sizeof(struct cyg_frame));
	if ((cyg_timeline || mem) && !ring)
		ring = cyg__area_alloc(cyg_ctl->ring_words * 8);
	uint64_t seen = mem ? cyg__area_alloc(CYG_SEEN_SLOTS * 8) : 0;
	if (!off || !stack || ((cyg_timeline || mem) && !ring) || (mem && !seen))
		return NULL;

	t = cyg__writer_init(off, stack, cap, cap < cyg_max_depth ? cap : cyg_max_depth, ring,
			     proc_off, now);
	if (!t)
		return NULL;
	t->flags = flags;
	t->seen_off = seen;
	t->start_ts = now;
	prctl(PR_GET_NAME, t->name, 0, 0, 0);

	/* On the list without the lock: a push by compare-and-swap. */
	t->seq = __atomic_fetch_add(&cyg_ctl->nthreads, 1, __ATOMIC_RELAXED);
	uint64_t head = __atomic_load_n(&cyg_ctl->threads_off, __ATOMIC_RELAXED);
	do
		t->next = head;
	while (!__atomic_compare_exchange_n(&cyg_ctl->threads_off, &head, off, 1, __ATOMIC_RELEASE,
					    __ATOMIC_RELAXED));
	return t;
}

/* Write through t from now on.  The triple changes t last: a signal
 * handler that interrupts the switch sees the writer it replaces. */
void cyg__tls_use(struct cyg_thread *t)
{
	cyg_tls.stk = AT(t->stack_off);
	cyg_tls.ring = t->ring_off ? AT(t->ring_off) : NULL;
	if (!cyg_tls.swh)
		cyg_tls.swh = &cyg_sw_zero; /* the exit hook reads it */
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	cyg_tls.t = t;
}

struct cyg_thread *cyg__thread_new(uint32_t flags, uint64_t now)
{
	struct cyg_thread *t = cyg__thread_alloc(flags, now, cyg_proc_off);

	if (!t)
		return NULL;
	cyg__tls_use(t);
	pthread_setspecific(cyg_key, t);
	cyg__smp_thread_start(t); /* its CPU samples and switch records */
	cyg__seed_push(t, now); /* when attached to a running program */
	return t;
}

struct cyg_thread *cyg__thread_init(void)
{
	struct cyg_thread *t;
	int saved = errno;

	if (cyg_state == 0)
		cyg__attach();
	if (cyg_state <= 0 || thread_failed == cyg_gen)
		return NULL;
	t = cyg__shared_writer(1);
	if (t) {
		errno = saved;
		return t; /* not made current: the TLS is shared */
	}
	t = cyg__thread_new(0, cyg_now());
	if (!t)
		thread_failed = cyg_gen; /* the mapping is full (counted in ctl->oom) */
	errno = saved;
	return t;
}

/* ---- signal handlers that interrupt a hook ----------------------------- */

/* A hook holds its writer (busy) while a signal handler runs and calls
 * instrumented functions or allocates.  Those go to a writer of their
 * own: a thread record with the same tid, flagged CYG_TF_SIGNAL, made once
 * per thread and level and kept.  Its root frame has CFA 0, so every enter
 * at depth 0 takes the slow path, which marks frame 1 CYG_SITE_HOST: the
 * exit of that frame puts the interrupted writer back. */
static struct cyg_thread *sig_writer(struct cyg_thread *h)
{
	if (h->level + 1 > CYG_SIG_LEVELS)
		return NULL;
	if (h->alt_off) {
		/* the mapping's link: a record of the next level, or none */
		struct cyg_thread *a = link_ok(h->alt_off) ? AT(h->alt_off) : NULL;
		return a && a->level == h->level + 1 ? a : NULL;
	}
	int saved = errno;
	struct cyg_thread *a = cyg__thread_alloc(CYG_TF_SIGNAL | (h->flags & CYG_TF_CLONED),
						 cyg_now(), h->proc_off);
	errno = saved;
	if (!a)
		return NULL;
	a->level = h->level + 1;
	a->host_off = OFF(h);
	((struct cyg_frame *)AT(a->stack_off))[0].cfa = 0;
	__atomic_store_n(&h->alt_off, OFF(a), __ATOMIC_RELEASE);
	return a;
}

struct cyg_thread *cyg__sig_enter(struct cyg_thread *t, unsigned *first)
{
	*first = 0;
	if (cyg_tls.t != t) { /* TLS shared with a clone() child: no switching */
		t->sig_lost++;
		return NULL;
	}
	while (t->busy) {
		struct cyg_thread *a = sig_writer(t);
		if (!a) {
			t->sig_lost++;
			if (*first)
				cyg__sig_leave(*first);
			return NULL;
		}
		struct cyg_tls_save *sv = &cyg_tls.save[a->level - 1];
		sv->t = cyg_tls.t;
		sv->stk = cyg_tls.stk;
		sv->ring = cyg_tls.ring;
		sv->swh = cyg_tls.swh;
		if (!*first)
			*first = a->level;
		/* the switch records are the thread's writer's to read */
		cyg_tls.swh = &cyg_sw_zero;
		cyg__tls_use(a);
		t = a;
	}
	return t;
}

void cyg__sig_leave(unsigned level)
{
	if (level - 1 >= CYG_SIG_LEVELS)
		return; /* a level the program wrote: none of ours */
	const struct cyg_tls_save *sv = &cyg_tls.save[level - 1];

	cyg_tls.stk = sv->stk;
	cyg_tls.ring = sv->ring;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	cyg_tls.t = sv->t;
	if (sv->swh)
		cyg_tls.swh = sv->swh;
}

/* ---- thread ends ------------------------------------------------------- */

/* One writer ends: close what is open, give its stack back, publish.
 * Through the writer's record only, never the TLS (it may be shared).
 * The ring goes back to the pool once the collector has drained it. */
void cyg__writer_end(struct cyg_thread *w, uint64_t now)
{
	if (!cyg__writer_ok(w))
		return; /* dropped: nothing of it can be trusted to close */
	w->busy = 1;
	cyg_lat_flush(w);
	cyg__close_frames(w, 0, w->leave_ts ? w->leave_ts : now);
	w->end_ts = now;
	cyg__stack_give(w->stack_off, w->stack_cap);
	__atomic_store_n(&w->state, CYG_T_ENDED, __ATOMIC_RELEASE);
}

void cyg__thread_end(struct cyg_thread *t)
{
	uint64_t now = cyg_now();
	char name[16] = "";

	/* ended from inside a signal handler; at most CYG_SIG_LEVELS up (the
	 * links are the mapping's) */
	for (int i = 0; t->host_off && i < CYG_SIG_LEVELS; i++) {
		if (!link_ok(t->host_off)) {
			cyg__writer_bad(t, "signal handlers' writer");
			return;
		}
		t = cyg_host_of(t);
	}
	cyg__smp_thread_end(t); /* its last switch records, its sampler */
	/* Its name again: a thread names itself (pthread_setname_np,
	 * PR_SET_NAME) after its first call, and one that ends before the
	 * collector reads /proc/PID/task/TID/comm would keep the name it
	 * inherited.  Published with the writer's end (release). */
	int saved = errno;
	if (prctl(PR_GET_NAME, name, 0, 0, 0) == 0)
		name[sizeof name - 1] = 0;
	else
		name[0] = 0;
	errno = saved;
	/* The thread's writer, then those of its signal handlers. */
	struct cyg_thread *w = t;
	for (int i = 0; w && i <= CYG_SIG_LEVELS; i++) {
		if (name[0])
			memcpy(w->name, name, sizeof w->name);
		cyg__writer_end(w, now);
		w = w->alt_off && link_ok(w->alt_off) ? AT(w->alt_off) : NULL;
	}
	cyg_tls.t = NULL;
	cyg_tls.stk = NULL;
	cyg_tls.ring = NULL;
}

/* The pthread key's destructor: the thread ends (arg: its writer). */
static void thread_dtor(void *arg)
{
	int saved = errno;
	struct cyg_thread *t = cyg_tls.t;

	if (__atomic_load_n(&cyg_state, __ATOMIC_RELAXED) <= 0)
		return; /* detached: the writer was closed then */
	if (t && cyg_stale(t)) {
		cyg__tls_forget(); /* closed at the detach of an earlier attach */
		t = NULL;
	}
	for (int i = 0; t && t->host_off && i < CYG_SIG_LEVELS; i++)
		t = link_ok(t->host_off) ? cyg_host_of(t) : NULL;
	if (arg && t == arg)
		cyg__thread_end(arg);
	else if (arg && !t && cyg__shared_writer(0) == arg)
		cyg__shared_end();
	errno = saved;
}

int cyg__writer_key(void)
{
	static int key_made;

	if (!key_made) {
		if (pthread_key_create(&cyg_key, thread_dtor))
			return -1;
		key_made = 1;
	}
	return 0;
}
