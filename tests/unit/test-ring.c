/* SPDX-License-Identifier: MIT */
/* test-ring.c - the runtime's hooks and rings, in-process.
 *
 * The runtime is linked into this test.  main() creates the shared mapping
 * as the collector does and re-executes itself with the mapping's fd in the
 * environment, so the runtime attaches at start-up exactly as in a traced
 * program.  The test then calls the hooks directly, from nested frames (the
 * runtime checks stack positions), and plays the collector: it drains the
 * rings concurrently and checks every event.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "cyg-lock.h"
#include "cyg-shm.h"

void __cyg_profile_func_enter(void *fn, void *site);
void __cyg_profile_func_exit(void *fn, void *site);
struct cyg_memdump *cyg__memdump_table(void);

static struct cyg_ctl *ctl;
static char *base;
extern char *cyg_base; /* the runtime's, linked into this test */

#define FN(i) ((void *)(uintptr_t)(0x400000 + 16 * (i)))
#define SITE ((void *)(uintptr_t)0x500000)

/* ---- event words -------------------------------------------------------- */

static void test_words(void)
{
	uint64_t w = cyg_ev_make(CYG_EV_EXIT, (1U << 28) - 1, CYG_EV_DELTA_MAX);
	CHECK_EQ_INT(cyg_ev_kind(w), CYG_EV_EXIT);
	CHECK_EQ_U64(cyg_ev_gid(w), (1U << 28) - 1);
	CHECK_EQ_U64(cyg_ev_delta(w), CYG_EV_DELTA_MAX);
	w = cyg_ev_make(CYG_EV_ENTER, 128, 0);
	CHECK_EQ_INT(cyg_ev_kind(w), CYG_EV_ENTER);
	CHECK_EQ_U64(cyg_ev_gid(w), 128);
	CHECK_EQ_U64(cyg_ev_delta(w), 0);
	w = cyg_ev_sync(0x123456789abcdefULL);
	CHECK_EQ_INT(cyg_ev_kind(w), CYG_EV_SYNC);
	CHECK_EQ_U64(cyg_ev_sync_ts(w), 0x123456789abcdefULL);
}

/* ---- a consumer, as the collector drains ------------------------------- */

struct consumer {
	struct cyg_thread *t;
	volatile int stop;
	uint64_t events, enters, exits, unwinds, bad_order, depth_err;
	uint64_t waits, wait_ticks; /* CYG_X_WAIT records */
	uint64_t last_ts;
	int64_t depth;
	uint32_t depth_fn[4096]; /* fn index per depth, from the node */
	uint64_t fn_err;
};

static struct cyg_node *node(uint32_t gid)
{
	return (struct cyg_node *)(base + (uint64_t)gid * CYG_NODE_SIZE);
}

static int drain(struct consumer *c)
{
	struct cyg_thread *t = c->t;
	uint64_t off = __atomic_load_n(&t->ring_off, __ATOMIC_ACQUIRE);
	uint64_t mask = ctl->ring_words - 1, head, tail;
	const uint64_t *ring;
	int n = 0;

	if (!off)
		return 0;
	ring = (const uint64_t *)(base + off);
	head = __atomic_load_n(&t->head, __ATOMIC_ACQUIRE);
	for (tail = t->tail; tail != head; tail++, n++) {
		uint64_t w = ring[tail & mask];
		if (cyg_ev_kind(w) == CYG_EV_EXT && cyg_x_sub(w) == CYG_X_WAIT) {
			/* a wait for us: its start (34 bits), then its length;
			 * published whole */
			uint64_t delta = (cyg_x_payload(w) - c->last_ts) & CYG_EV_DELTA_MAX;
			if (delta >= (1ULL << 33) || tail + 1 == head)
				c->bad_order++;
			else
				c->last_ts += delta;
			tail++;
			n++;
			c->waits++;
			c->wait_ticks += ring[tail & mask];
			c->last_ts += ring[tail & mask];
			continue;
		}
		if (cyg_ev_kind(w) == CYG_EV_SYNC) {
			if (cyg_ev_sync_ts(w) < c->last_ts)
				c->bad_order++;
			c->last_ts = cyg_ev_sync_ts(w);
			continue;
		}
		/* the low 34 bits of the time: restore the rest as the collector does */
		uint64_t delta = (cyg_ev_delta(w) - c->last_ts) & CYG_EV_DELTA_MAX;
		if (delta >= (1ULL << 33))
			c->bad_order++; /* one thread's events do not go back in time */
		else
			c->last_ts += delta;
		c->events++;
		uint32_t fn = (uint32_t)((node(cyg_ev_gid(w))->fn - 0x400000) / 16);
		if (cyg_ev_kind(w) == CYG_EV_ENTER) {
			c->enters++;
			c->depth++;
			if (c->depth > 0 && c->depth < 4096)
				c->depth_fn[c->depth] = fn;
		} else {
			if (cyg_ev_kind(w) == CYG_EV_EXIT)
				c->exits++;
			else
				c->unwinds++;
			if (c->depth <= 0)
				c->depth_err++;
			else if (c->depth < 4096 && c->depth_fn[c->depth] != fn)
				c->fn_err++;
			c->depth--;
		}
	}
	__atomic_store_n(&t->tail, tail, __ATOMIC_RELEASE);
	return n;
}

static void *consume(void *arg)
{
	struct consumer *c = arg;
	while (!c->stop) {
		if (!drain(c))
			usleep(50);
	}
	drain(c);
	return NULL;
}

static struct cyg_thread *self_thread(void)
{
	uint64_t off = __atomic_load_n(&ctl->threads_off, __ATOMIC_ACQUIRE);
	pid_t tid = gettid();
	for (; off; off = ((struct cyg_thread *)(base + off))->next) {
		struct cyg_thread *t = (struct cyg_thread *)(base + off);
		if (t->tid == (uint32_t)tid && t->state == CYG_T_ACTIVE)
			return t;
	}
	return NULL;
}

/* ---- call shapes made of real nested frames ----------------------------- */

static volatile int sink;

/* A chain: fn(depth) calls fn(depth+1) ... down to max, `fan` times at each level. */
__attribute__((noinline)) static void chain(int depth, int max, int fan)
{
	__cyg_profile_func_enter(FN(depth), SITE);
	if (depth < max)
		for (int i = 0; i < fan; i++)
			chain(depth + 1, max, fan);
	sink++;
	__cyg_profile_func_exit(FN(depth), SITE);
}

static uint64_t calls_of(struct cyg_thread *t, int fnidx)
{
	/* Walk the tree: sum of calls of nodes with this function. */
	uint32_t stack[4096];
	size_t n = 0;
	uint64_t sum = 0;
	stack[n++] = t->root;
	while (n) {
		struct cyg_node *nd = node(stack[--n]);
		if (nd->fn == (uint64_t)(uintptr_t)FN(fnidx))
			sum += nd->calls;
		for (uint32_t g = nd->first_child; g && n < 4096; g = node(g)->next_sibling)
			stack[n++] = g;
	}
	return sum;
}

/* 1,000,000+ events through a 64-word ring with a concurrent consumer:
 * every event arrives, in order, nothing is lost, and the writer waited. */
static void test_lossless_tiny_ring(void)
{
	chain(1, 1, 0); /* makes this thread's writer */
	struct consumer c;
	pthread_t th;
	memset(&c, 0, sizeof c);
	c.t = self_thread();
	CHECK(c.t != NULL);
	if (!c.t)
		return;
	c.last_ts = c.t->start_ts;
	/* events before the consumer starts: the first chain(1,1,0) = 2 */
	pthread_create(&th, NULL, consume, &c);
	for (int r = 0; r < 2000; r++)
		chain(1, 6, 2); /* 63 calls per round */
	c.stop = 1;
	pthread_join(th, NULL);
	CHECK_EQ_U64(c.events, 2 + 2000 * 63 * 2);
	CHECK_EQ_U64(c.enters, 1 + 2000 * 63);
	CHECK_EQ_U64(c.exits, 1 + 2000 * 63);
	CHECK_EQ_U64(c.unwinds, 0);
	CHECK_EQ_U64(c.depth_err, 0);
	CHECK_EQ_U64(c.fn_err, 0);
	CHECK_EQ_U64(c.bad_order, 0);
	CHECK_EQ_U64(c.t->lost, 0);
	CHECK(c.t->waits > 0);
	/* every wait is an event of its own, its length the one counted */
	CHECK_EQ_U64(c.waits, c.t->waits);
	CHECK_EQ_U64(c.wait_ticks, c.t->wait_ticks);
	CHECK_EQ_U64(calls_of(c.t, 1), 1 + 2000);
	CHECK_EQ_U64(calls_of(c.t, 6), 2000 * 32);
	printf("# tiny ring: %llu events, %llu waits\n", (unsigned long long)c.events,
	       (unsigned long long)c.t->waits);
}

/* Abandoned frames: exit of an outer function closes the inner ones. */
__attribute__((noinline)) static void inner_left_open(void)
{
	__cyg_profile_func_enter(FN(102), SITE);
	sink++; /* no exit: as if an exception passed through code without cleanups */
}

__attribute__((noinline)) static void outer(void)
{
	__cyg_profile_func_enter(FN(101), SITE);
	inner_left_open();
	__cyg_profile_func_exit(FN(101), SITE);
}

static void test_unbalanced(void)
{
	struct cyg_thread *t = self_thread();
	CHECK(t != NULL);
	if (!t)
		return;
	uint64_t unwound = t->unwound, unpaired = t->unpaired;
	uint32_t depth = t->depth;
	outer();
	CHECK_EQ_U64(t->unwound, unwound + 1);
	CHECK_EQ_U64(t->depth, depth);
	/* An exit with no matching entry is counted and ignored. */
	__cyg_profile_func_exit(FN(103), SITE);
	CHECK_EQ_U64(t->unpaired, unpaired + 1);
	CHECK_EQ_U64(t->depth, depth);
	/* Later calls are still placed right (under the root, not under 102). */
	chain(1, 1, 0);
	CHECK_EQ_U64(calls_of(t, 102), 1);
	CHECK_EQ_U64(calls_of(t, 101), 1);
}

/* Four threads at once, each with its own ring and consumer. */
static void *worker(void *arg)
{
	struct consumer *c = arg;
	pthread_t th;
	chain(1, 1, 0);
	c->t = self_thread();
	if (!c->t)
		return NULL;
	c->last_ts = c->t->start_ts;
	pthread_create(&th, NULL, consume, c);
	for (int r = 0; r < 500; r++)
		chain(1, 5, 3); /* 121 calls */
	c->stop = 1;
	pthread_join(th, NULL);
	return NULL;
}

static void test_threads(void)
{
	struct consumer c[4];
	pthread_t th[4];
	memset(c, 0, sizeof c);
	for (int i = 0; i < 4; i++)
		pthread_create(&th[i], NULL, worker, &c[i]);
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < 4; i++) {
		CHECK(c[i].t != NULL);
		CHECK_EQ_U64(c[i].events, 2 + 500 * 121 * 2);
		CHECK_EQ_U64(c[i].fn_err + c[i].depth_err + c[i].bad_order, 0);
		if (c[i].t) {
			CHECK_EQ_U64(c[i].t->lost, 0);
			CHECK_EQ_U64(calls_of(c[i].t, 5), 500 * 81);
			/* the thread ended: its writer was flushed and marked */
			CHECK_EQ_INT(c[i].t->state, CYG_T_ENDED);
			CHECK_EQ_U64(c[i].t->depth, 0);
		}
	}
	CHECK(c[0].t != c[1].t);
}

/* Without a consumer and with the drop flag, a full ring counts losses. */
static void test_drop(void)
{
	struct cyg_thread *t = self_thread();
	if (!t)
		return;
	uint64_t lost = t->lost, head = t->head, before = calls_of(t, 3);
	ctl->flags |= CYG_F_DROP;
	for (int r = 0; r < 100; r++)
		chain(1, 3, 1); /* 3 calls, 6 events */
	ctl->flags &= ~(uint32_t)CYG_F_DROP;
	/* The ring held whatever room was left; everything else was counted. */
	uint64_t written = t->head - head;
	CHECK(written <= ctl->ring_words);
	CHECK(t->lost - lost > 0);
	CHECK(written + (t->lost - lost) >= 600);
	CHECK_EQ_U64(calls_of(t, 3), before + 100); /* the tree still counts every call */
}

/* ---- the memdump API's table ------------------------------------------ */

static struct cyg_proc *proc_of(uint32_t pid)
{
	uint64_t off = __atomic_load_n(&ctl->procs_off, __ATOMIC_ACQUIRE);
	for (int n = 0; off && n < 1000; n++) {
		struct cyg_proc *p = (struct cyg_proc *)(base + off);
		if (p->pid == pid && p->state == CYG_P_RUNNING)
			return p;
		off = p->next;
	}
	return NULL;
}

/* No table without CYG_F_MEMDUMP; with it, one per process image, published
 * in its cyg_proc, the interval copied from ctl; a forked child gets its own. */
static void test_memdump_table(void)
{
	struct cyg_proc *p = proc_of((uint32_t)getpid());
	CHECK(p != NULL);
	if (!p)
		return;
	CHECK(cyg__memdump_table() == NULL);
	CHECK_EQ_U64(p->memdump_off, 0);
	ctl->memdump_ms = 25;
	ctl->flags |= CYG_F_MEMDUMP;
	struct cyg_memdump *md = cyg__memdump_table();
	CHECK(md != NULL);
	if (!md)
		return;
	CHECK_EQ_U64(__atomic_load_n(&p->memdump_off, __ATOMIC_ACQUIRE),
		     (uint64_t)((char *)md - base));
	CHECK_EQ_INT(md->nslots, CYG_MEMDUMP_SLOTS);
	CHECK_EQ_INT(md->interval_ms, 25);
	CHECK(md->slot[0].state == 0 && md->slot[CYG_MEMDUMP_SLOTS - 1].seq == 0);
	CHECK(cyg__memdump_table() == md);

	pid_t pid = fork();
	if (pid == 0) {
		struct cyg_memdump *cmd = cyg__memdump_table();
		struct cyg_proc *cp = proc_of((uint32_t)getpid());
		int ok = cmd && cmd != md && cp && cp != p &&
			 cp->memdump_off == (uint64_t)((char *)cmd - base) &&
			 cyg__memdump_table() == cmd;
		_exit(ok ? 0 : 1);
	}
	int st = -1;
	CHECK(pid > 0 && waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK(cyg__memdump_table() == md);
	ctl->flags &= ~(uint32_t)CYG_F_MEMDUMP;
	CHECK(cyg__memdump_table() == NULL);
}

/* CYG_F_NOCLOCK (record --time=sampled): the runtime's flags, switched
 * here as attach would have set them (no timeline with it). */
extern int cyg_noclock, cyg_timeline;

__attribute__((noinline)) static void two_sites(void)
{
	__cyg_profile_func_enter(FN(201), SITE);
	for (int i = 0; i < 3; i++) {
		__cyg_profile_func_enter(FN(202), SITE);
		sink++;
		__cyg_profile_func_exit(FN(202), SITE);
		/* the same callee from another call site */
		__cyg_profile_func_enter(FN(202), (void *)(uintptr_t)0x500010);
		sink++;
		__cyg_profile_func_exit(FN(202), (void *)(uintptr_t)0x500010);
	}
	__cyg_profile_func_exit(FN(201), SITE);
}

/* Sum of the ticks of the nodes with this function. */
static uint64_t ticks_of(struct cyg_thread *t, int fnidx)
{
	uint32_t stack[4096];
	size_t n = 0;
	uint64_t sum = 0;
	stack[n++] = t->root;
	while (n) {
		struct cyg_node *nd = node(stack[--n]);
		if (nd->fn == (uint64_t)(uintptr_t)FN(fnidx))
			sum += nd->ticks;
		for (uint32_t g = nd->first_child; g && n < 4096; g = node(g)->next_sibling)
			stack[n++] = g;
	}
	return sum;
}

/* ---- a wait for a full ring is the recording's ------------------------ */

#define HOLD_NS 20000000ULL /* how long the consumer keeps the ring full */

struct holder {
	struct consumer c;
	uint64_t waits0;
};

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Wait until the writer waits for room, keep the ring full for HOLD_NS
 * more (the wait under test), then drain as the collector would. */
static void *hold_then_consume(void *arg)
{
	struct holder *h = arg;

	while (__atomic_load_n(&h->c.t->waits, __ATOMIC_RELAXED) == h->waits0 && !h->c.stop)
		usleep(50);
	uint64_t t0 = mono_ns();
	while (mono_ns() - t0 < HOLD_NS)
		usleep(1000);
	return consume(&h->c);
}

/* 64 calls (128 events, twice the ring) inside FN(300). */
__attribute__((noinline)) static void held_outer(void)
{
	__cyg_profile_func_enter(FN(300), SITE);
	for (int i = 0; i < 64; i++)
		chain(301, 301, 0);
	__cyg_profile_func_exit(FN(300), SITE);
}

/* The writer waits at least HOLD_NS for room; that wait is counted in
 * wait_ticks and left out of the calls open during it: FN(300)'s time
 * is far less than the wait (without the skip it would hold all of it). */
static void test_wait_skipped(void)
{
	struct holder h;
	pthread_t th;

	memset(&h, 0, sizeof h);
	h.c.t = self_thread();
	CHECK(h.c.t != NULL);
	if (!h.c.t)
		return;
	h.c.last_ts = h.c.t->start_ts;
	h.waits0 = h.c.t->waits;
	uint64_t wait0 = h.c.t->wait_ticks, ticks0 = ticks_of(h.c.t, 300);
	pthread_create(&th, NULL, hold_then_consume, &h);
	held_outer();
	h.c.stop = 1;
	pthread_join(th, NULL);
	uint64_t waited = h.c.t->wait_ticks - wait0, outer = ticks_of(h.c.t, 300) - ticks0;
	CHECK(h.c.t->waits > h.waits0);
	CHECK(waited >= HOLD_NS); /* ticks are ns here: no CYG_F_TSC */
	CHECK(outer > 0);
	CHECK(outer < waited / 2);
	CHECK_EQ_U64(calls_of(h.c.t, 301), 64);
	printf("# held ring: waited %llu ns, FN(300) %llu ns\n", (unsigned long long)waited,
	       (unsigned long long)outer);
}

/* No clock: the calls, the call sites and the repairs of unbalanced
 * frames are counted as always, no node or call site gets a tick, and
 * nothing goes into the ring. */
static void test_noclock(void)
{
	struct cyg_thread *t = self_thread();
	if (!t)
		return;
	uint64_t head = t->head, unwound = t->unwound;
	uint32_t depth = t->depth, sites = t->sites_n;
	int timeline = cyg_timeline;

	cyg_timeline = 0;
	cyg_noclock = 1;
	for (int r = 0; r < 100; r++)
		chain(210, 214, 2); /* 31 calls, new nodes at first */
	two_sites();
	two_sites();
	outer(); /* 102 left open: closed by 101's exit */
	cyg_noclock = 0;
	cyg_timeline = timeline;

	CHECK_EQ_U64(calls_of(t, 210), 100);
	CHECK_EQ_U64(calls_of(t, 214), 100 * 16);
	CHECK_EQ_U64(calls_of(t, 201), 2);
	CHECK_EQ_U64(calls_of(t, 202), 12);
	CHECK_EQ_U64(t->unwound, unwound + 1);
	CHECK_EQ_U64(t->depth, depth);
	CHECK_EQ_U64(t->head, head);
	for (int f = 210; f <= 214; f++)
		CHECK_EQ_U64(ticks_of(t, f), 0);
	CHECK_EQ_U64(ticks_of(t, 201), 0);
	CHECK_EQ_U64(ticks_of(t, 202), 0);
	/* the second site of 202 got its own entry, with its calls and no time */
	CHECK_EQ_U64(t->sites_n, sites + 1);
	if (t->sites_n == sites + 1) {
		struct cyg_site *v = (struct cyg_site *)(base + t->sites_off);
		CHECK_EQ_U64(v[sites].calls, 6);
		CHECK_EQ_U64(v[sites].ticks, 0);
	}
	/* and with the clock back, times again (the ring is full since
	 * test_drop, and nobody drains it: drop) */
	ctl->flags |= CYG_F_DROP;
	chain(210, 211, 1);
	ctl->flags &= ~(uint32_t)CYG_F_DROP;
	CHECK(ticks_of(t, 210) > 0);
}

/* ---- CPU samples and switches (cyg-sample.c, cyg-switch.c) --------------- */

/* The node of fnidx that is a child of the thread's root (0: none). */
static struct cyg_node *top_node(struct cyg_thread *t, int fnidx)
{
	for (uint32_t g = node(t->root)->first_child; g; g = node(g)->next_sibling)
		if (node(g)->fn == (uint64_t)(uintptr_t)FN(fnidx))
			return node(g);
	return NULL;
}

static uint64_t cpu_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Nodes take slots of CYG_NODE_SLOT bytes (gids CYG_NODE_SLOT / 64 apart in
 * a chunk), each with its ext after it, zeroed. */
static void test_node_slots(void)
{
	struct cyg_thread *t = self_thread();
	if (!t)
		return;
	chain(320, 320, 0);
	chain(321, 321, 0);
	struct cyg_node *a = top_node(t, 320), *b = top_node(t, 321);
	CHECK(a && b);
	if (!a || !b)
		return;
	CHECK_EQ_U64((uint64_t)((char *)b - (char *)a), CYG_NODE_SLOT);
	CHECK_EQ_U64((uint64_t)((char *)CYG_NODE_EXT(a) - (char *)a), CYG_NODE_SIZE);
	CHECK_EQ_U64(CYG_NODE_EXT(b)->wait_ns + CYG_NODE_EXT(b)->blocked_ns, 0);
}

/* A frame that computes for 60 ms of CPU time gets the samples (5 kHz of
 * its user time: some 300; at least 100), the thread counts them; a chain
 * of tiny calls gets overhead samples.  (Linked into this test, the
 * runtime's code is the whole executable's: a sample in the test's own
 * loop counts as overhead too, so both kinds count here.) */
__attribute__((noinline)) static void spin_in(int fnidx, uint64_t ns)
{
	__cyg_profile_func_enter(FN(fnidx), SITE);
	uint64_t end = cpu_now() + ns;
	do
		for (int i = 0; i < 200000; i++) /* user time: samples count no other */
			sink++;
	while (cpu_now() < end);
	__cyg_profile_func_exit(FN(fnidx), SITE);
}

static void test_cpu_samples(void)
{
	struct cyg_thread *t = self_thread();
	if (!t)
		return;
	uint64_t taken = t->smp_samples;
	CHECK_EQ_U64(t->smp_method, CYG_SMP_PERF);
	spin_in(330, 60000000);
	struct cyg_node *n = top_node(t, 330);
	CHECK(n != NULL);
	if (!n)
		return;
	uint64_t got = (uint64_t)CYG_NODE_EXT(n)->samples + CYG_NODE_EXT(n)->ovh;
	printf("# 60 ms: %u samples, %u overhead\n", CYG_NODE_EXT(n)->samples, CYG_NODE_EXT(n)->ovh);
	CHECK(got >= 100);
	CHECK(got <= 600);
	CHECK(t->smp_samples - taken >= got);
	/* tiny calls: much of their time is in the hooks */
	uint64_t end = cpu_now() + 60000000;
	while (cpu_now() < end)
		for (int i = 0; i < 1000; i++)
			chain(331, 333, 1);
	uint64_t ovh = 0;
	for (int f = 331; f <= 333; f++) {
		struct cyg_node *x = top_node(t, 331);
		for (int d = 331; x && d < f; d++)
			x = node(x->first_child);
		if (x)
			ovh += CYG_NODE_EXT(x)->ovh;
	}
	printf("# tiny calls: %llu overhead samples\n", (unsigned long long)ovh);
	CHECK(ovh > 0);
}

/* Time off the CPU: a frame that sleeps 30 ms is blocked 30 ms (read at
 * the next exit, its own), its caller nothing; a frame that yields to a
 * thread spinning on the same CPU waits. */
static void *spinner(void *arg)
{
	volatile int *stop = arg;
	while (!*stop)
		sink++;
	return NULL;
}

__attribute__((noinline)) static void sleep_in(int fnidx, long ms)
{
	struct timespec ts = {0, ms * 1000000L};
	__cyg_profile_func_enter(FN(fnidx), SITE);
	nanosleep(&ts, NULL);
	__cyg_profile_func_exit(FN(fnidx), SITE);
}

__attribute__((noinline)) static void yield_in(int fnidx, int n)
{
	__cyg_profile_func_enter(FN(fnidx), SITE);
	for (int i = 0; i < n; i++)
		sched_yield();
	__cyg_profile_func_exit(FN(fnidx), SITE);
}

static void test_cpu_switches(void)
{
	struct cyg_thread *t = self_thread();
	if (!t)
		return;
	CHECK_EQ_U64(t->sw_on, 1);
	uint64_t records = t->sw_records;
	__cyg_profile_func_enter(FN(340), SITE);
	sleep_in(341, 30);
	__cyg_profile_func_exit(FN(340), SITE);
	struct cyg_node *outer = top_node(t, 340);
	CHECK(outer != NULL);
	if (!outer)
		return;
	struct cyg_node *in = node(outer->first_child);
	printf("# sleep 30 ms: blocked %llu ns, waiting %llu ns\n",
	       (unsigned long long)CYG_NODE_EXT(in)->blocked_ns,
	       (unsigned long long)CYG_NODE_EXT(in)->wait_ns);
	CHECK(CYG_NODE_EXT(in)->blocked_ns >= 29000000);
	CHECK(CYG_NODE_EXT(in)->blocked_ns < 1000000000);
	CHECK_EQ_U64(CYG_NODE_EXT(outer)->blocked_ns, 0);
	CHECK(t->sw_records >= records + 2);
	CHECK(t->sw_blocked_ns >= CYG_NODE_EXT(in)->blocked_ns);

	/* both on one CPU: each yield waits for the spinner's time slice */
	cpu_set_t all, one;
	int stop = 0;
	pthread_t th;
	if (sched_getaffinity(0, sizeof all, &all))
		return;
	CPU_ZERO(&one);
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &all)) {
			CPU_SET(c, &one);
			break;
		}
	sched_setaffinity(0, sizeof one, &one);
	pthread_create(&th, NULL, spinner, &stop);
	yield_in(342, 20);
	stop = 1;
	pthread_join(th, NULL);
	sched_setaffinity(0, sizeof all, &all);
	struct cyg_node *y = top_node(t, 342);
	CHECK(y != NULL);
	if (y) {
		printf("# 20 yields: waiting %llu ns\n", (unsigned long long)CYG_NODE_EXT(y)->wait_ns);
		CHECK(CYG_NODE_EXT(y)->wait_ns > 0);
	}
}

/* The program's view of the samples' signal: its own handler, a mask
 * that says it is blocked while the kernel never blocks it. */
static volatile int prog_handler_ran;
static void prog_handler(int sig)
{
	(void)sig;
	prog_handler_ran++;
}

static void test_cpu_signal(void)
{
	int s = ctl->cpu_signo;
	struct sigaction sa, old;
	sigset_t set, cur, kernel;

	memset(&sa, 0, sizeof sa);
	CHECK_EQ_INT(sigaction(s, NULL, &old), 0);
	CHECK(old.sa_handler == SIG_DFL);
	sa.sa_handler = prog_handler;
	CHECK_EQ_INT(sigaction(s, &sa, NULL), 0);
	CHECK_EQ_INT(sigaction(s, NULL, &old), 0);
	CHECK(old.sa_handler == prog_handler);
	raise(s);
	CHECK_EQ_INT(prog_handler_ran, 1);
	/* samples keep coming to the runtime meanwhile */
	struct cyg_thread *t = self_thread();
	uint64_t taken = t ? t->smp_samples : 0;
	spin_in(350, 10000000);
	CHECK(t && t->smp_samples > taken);
	CHECK_EQ_INT(prog_handler_ran, 1);
	sigemptyset(&set);
	sigaddset(&set, s);
	CHECK_EQ_INT(sigprocmask(SIG_BLOCK, &set, NULL), 0);
	CHECK_EQ_INT(sigprocmask(SIG_BLOCK, NULL, &cur), 0);
	CHECK(sigismember(&cur, s));
	CHECK_EQ_INT((int)syscall(SYS_rt_sigprocmask, SIG_BLOCK, NULL, &kernel, 8), 0);
	CHECK(!sigismember(&kernel, s));
	CHECK_EQ_INT(pthread_sigmask(SIG_UNBLOCK, &set, NULL), 0);
	CHECK_EQ_INT(pthread_sigmask(SIG_BLOCK, NULL, &cur), 0);
	CHECK(!sigismember(&cur, s));
	sa.sa_handler = SIG_DFL;
	CHECK_EQ_INT(sigaction(s, &sa, NULL), 0);
}

int main(int argc, char **argv)
{
	if (!getenv(CYG_SHM_FD_ENV)) {
		int fd;
		char buf[16];
		if (cyg_shm_create(1ULL << 30, CYG_F_TIMELINE | CYG_F_CPUSAMPLE | CYG_F_SWITCHES,
				   64 * 8, 0, &fd, &ctl)) {
			perror("cyg_shm_create");
			return 1;
		}
		/* CPU samples at 5 kHz, as record --cpu-freq asks them */
		ctl->cpu_period_ns = 200000;
		ctl->cpu_signo = SIGRTMAX - CYG_CPU_SIG_FROM_MAX;
		snprintf(buf, sizeof buf, "%d", fd);
		setenv(CYG_SHM_FD_ENV, buf, 1);
		execv("/proc/self/exe", argv);
		perror("execv");
		return 1;
	}
	(void)argc;
	/* The runtime attached at start-up; the test reads the same mapping. */
	base = cyg_base;
	ctl = (struct cyg_ctl *)base;
	if (!base) {
		printf("not ok 1 - the runtime did not attach\n1..1\n");
		return 1;
	}
	/* The exec released 'alive' as the death of its holder: hold it
	 * again, as the collector does for its whole life. */
	cyg_lock(&ctl->alive, NULL, NULL);
	RUN_TEST(test_words);
	RUN_TEST(test_lossless_tiny_ring);
	RUN_TEST(test_wait_skipped);
	RUN_TEST(test_unbalanced);
	RUN_TEST(test_threads);
	RUN_TEST(test_drop);
	RUN_TEST(test_memdump_table);
	RUN_TEST(test_noclock);
	/* from here on nobody drains the ring (full since test_drop): drop */
	ctl->flags |= CYG_F_DROP;
	RUN_TEST(test_node_slots);
	RUN_TEST(test_cpu_samples);
	RUN_TEST(test_cpu_switches);
	RUN_TEST(test_cpu_signal);
	CHECK_DONE();
}
