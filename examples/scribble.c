/* SPDX-License-Identifier: MIT */
/*
 * scribble.c - a hostile program: it finds cygprof's shared mapping (its
 * /proc/self/maps shows /memfd:cygprof) and writes into it.
 *
 * Usage: scribble MODE [SEED]
 *
 * main starts 2 threads that call work() 50 times each and joins them,
 * calls work() 100 times itself, prints "scribble: work=200 mapping=found"
 * (or "mapping=none" when it does not run under cygprof), waits 100 ms (the
 * collector has then seen every thread), damages the mapping as MODE says
 * and ends with the raw exit_group(3) system call: no code of the runtime
 * runs after the damage, so the program itself neither crashes nor hangs.
 * The damage is done by functions that are not instrumented.
 *
 * MODE:
 *   random SEED   every byte of the used part of the mapping, [0, alloc_off),
 *                 control page included, replaced by random bytes
 *   sprinkle SEED 256 words replaced by random values (random bits, offsets
 *                 and gids inside the mapping, small numbers, 0, all ones)
 *                 at random places of the control page, the thread and
 *                 process records and the first nodes of every tree
 *   threads       the thread list made a cycle
 *   ring          ring_off and head of every thread far out of range
 *                 (meaningful with --timeline)
 *   gids          timeline words naming gids out of range or of another
 *                 thread; the root's first child out of range
 *   events SEED   random words published in main's ring (with --timeline or
 *                 --memory): events and memory records of every kind
 *   parents       a parent cycle between main's and work's nodes; work's
 *                 child list loops back to main, its sibling to itself
 *   maps          maps_off/maps_len past the end of the mapping, cmd_len huge
 *   exe           the executable name and the thread names without a NUL
 *   stack         main thread's depth, stack_off, stack_cap, sites_off and
 *                 sites_n out of range
 *   procs         the process list made a cycle
 *   lock          the runtime's lock left held by a thread that never ends
 *                 (pid 1)
 *   words SEED    200,000 words at random places of the window of the
 *                 mapping the process has mapped (used or not yet), each
 *                 random bits, an offset or gids inside the mapping, a
 *                 small number, 0 or all ones; then, unlike the other
 *                 modes, the program goes on: work() 300 times from three
 *                 call sites, two new threads calling it 50 times each,
 *                 and exit(3) (the runtime's exit paths run).  The runtime
 *                 must bring it to that end (or end with itself disabled
 *                 and a message), never hang or crash
 *   none          no damage (control)
 *
 * Expected counts when the damage spares the trees (modes threads, maps,
 * exe, procs, lock, none):
 *   main 1, worker 2, work 200
 * Arcs: main -> work 100, worker -> work 100.
 * Exit status 3 in every mode.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "../ring/cyg-shm.h"

#if defined(__clang__)
#define COUNTED __attribute__((noinline, used))
#else
#define COUNTED __attribute__((noinline, noipa))
#endif
#define HOSTILE __attribute__((no_instrument_function, noinline))

static volatile unsigned long sink;
static unsigned long n_work;
static char *base;
static uint64_t size;
static uint64_t window; /* what /proc/self/maps shows mapped */
static uint64_t rng = 88172645463325252ULL;

COUNTED static void work(void)
{
	unsigned long i;

	__atomic_fetch_add(&n_work, 1, __ATOMIC_RELAXED);
	for (i = 0; i < 100; i++)
		sink += i;
}

COUNTED static void *worker(void *arg)
{
	int i;

	(void)arg;
	for (i = 0; i < 50; i++)
		work();
	return NULL;
}

HOSTILE static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* The mapping: where /proc/self/maps shows it, its size from its control page. */
HOSTILE static int find_mapping(void)
{
	char line[512];
	FILE *f = fopen("/proc/self/maps", "re");
	unsigned long long a, b;

	if (!f)
		return -1;
	while (fgets(line, sizeof line, f)) {
		if (!strstr(line, "/memfd:cygprof") || sscanf(line, "%llx-%llx", &a, &b) != 2)
			continue;
		base = (char *)(uintptr_t)a;
		size = window = b - a;
		break;
	}
	fclose(f);
	/* The runtime maps a window of the mapping that grows as it
	 * allocates (everything below alloc_off is mapped): "past the end"
	 * means past the whole mapping's, the collector's bound. */
	if (base && size >= sizeof(struct cyg_ctl))
		size = ((struct cyg_ctl *)(void *)base)->size;
	return base ? 0 : -1;
}

#define AT(off) ((void *)(base + (off)))

HOSTILE static struct cyg_ctl *ctl(void)
{
	return (struct cyg_ctl *)base;
}

HOSTILE static struct cyg_thread *thread_at(uint64_t off)
{
	return off && off < size ? AT(off) : NULL;
}

/* This thread's writer (main's). */
HOSTILE static struct cyg_thread *main_thread(void)
{
	uint32_t tid = (uint32_t)syscall(SYS_gettid);
	struct cyg_thread *t;
	uint64_t off;

	for (off = ctl()->threads_off; (t = thread_at(off)); off = t->next)
		if (t->tid == tid)
			return t;
	return NULL;
}

HOSTILE static struct cyg_proc *main_proc(void)
{
	uint32_t pid = (uint32_t)getpid();
	uint64_t off;

	for (off = ctl()->procs_off; off && off < size;) {
		struct cyg_proc *p = AT(off);
		if (p->pid == pid)
			return p;
		off = p->next;
	}
	return NULL;
}

HOSTILE static struct cyg_node *node(uint32_t gid)
{
	return (uint64_t)gid * CYG_NODE_SIZE < size ? CYG_NODE(base, gid) : NULL;
}

HOSTILE static void scribble_random(void)
{
	uint64_t end = ctl()->alloc_off, i;

	if (end > size)
		end = size;
	for (i = 0; i + 8 <= end; i += 8) {
		uint64_t v = rnd();
		memcpy(base + i, &v, 8);
	}
}

/* A word at a random place of [from, from + len) gets a random value. */
HOSTILE static void sprinkle_in(uint64_t from, uint64_t len)
{
	uint64_t at, v;

	if (from >= size || len < 8)
		return;
	if (len > size - from)
		len = size - from;
	at = from + (rnd() % (len / 8)) * 8;
	switch (rnd() % 6) {
	case 0: v = rnd(); break;
	case 1: v = rnd() % size; break;
	case 2: v = (rnd() % (size / 64)) | (rnd() % (size / 64)) << 32; break;
	case 3: v = rnd() % 16; break;
	case 4: v = 0; break;
	default: v = ~0ULL; break;
	}
	memcpy(base + at, &v, 8);
}

/* 256 words, in what the collector reads: the control page, the thread
 * and process records, the first nodes of every thread's tree. */
HOSTILE static void scribble_sprinkle(void)
{
	uint64_t threads[16], procs[16], off;
	uint32_t roots[16];
	unsigned nt = 0, np = 0, i;
	struct cyg_thread *t;

	for (off = ctl()->threads_off; nt < 16 && (t = thread_at(off)); off = t->next) {
		roots[nt] = t->root;
		threads[nt++] = off;
	}
	for (off = ctl()->procs_off; np < 16 && off && off < size;
	     off = ((struct cyg_proc *)AT(off))->next)
		procs[np++] = off;
	for (i = 0; i < 256; i++) {
		unsigned k = (unsigned)(rnd() % 4);
		if (k == 0)
			sprinkle_in(0, CYG_NULL_OFF);
		else if (k == 1 && nt)
			sprinkle_in(threads[rnd() % nt], sizeof(struct cyg_thread));
		else if (k == 2 && np)
			sprinkle_in(procs[rnd() % np], sizeof(struct cyg_proc));
		else if (nt)
			sprinkle_in((uint64_t)roots[rnd() % nt] * CYG_NODE_SIZE, 16 * CYG_NODE_SIZE);
	}
}

/* 200,000 words anywhere in the mapped window, the part not allocated yet
 * included (the runtime takes fresh memory from there as zeroes). */
HOSTILE static void scribble_words(void)
{
	uint64_t span = window < size ? window : size;

	if (span < 8)
		return;
	for (unsigned i = 0; i < 200000; i++)
		sprinkle_in(0, span);
}

/* After the damage the program goes on, through the runtime. */
COUNTED static void site_a(void)
{
	for (int i = 0; i < 100; i++)
		work();
}

COUNTED static void site_b(void)
{
	for (int i = 0; i < 100; i++)
		work();
}

HOSTILE static void scribble_threads(void)
{
	uint64_t head = ctl()->threads_off, off;
	struct cyg_thread *t, *last = NULL;

	for (off = head; (t = thread_at(off)); off = t->next)
		last = t;
	if (last)
		last->next = head; /* the oldest points back at the newest */
}

HOSTILE static void scribble_ring(void)
{
	struct cyg_thread *t;
	uint64_t off;

	for (off = ctl()->threads_off; (t = thread_at(off));) {
		off = t->next;
		t->ring_off = 1ULL << 62;
		__atomic_store_n(&t->head, (1ULL << 61) + 12345, __ATOMIC_RELEASE);
	}
}

HOSTILE static void scribble_gids(void)
{
	struct cyg_thread *t = main_thread(), *o;
	uint64_t off;
	uint32_t other = 0;

	if (!t)
		return;
	for (off = ctl()->threads_off; (o = thread_at(off)); off = o->next)
		if (o != t)
			other = o->root + 1;
	struct cyg_node *root = node(t->root);
	if (root)
		root->first_child = 0x0fffffff;
	if (!t->ring_off || t->ring_off >= size)
		return;
	uint64_t *ring = AT(t->ring_off), mask = ctl()->ring_words - 1, h = t->head;
	const uint32_t bad[] = {0x0fffffff, 1, 0, CYG_GID_NULL, other, t->root - 1,
				(uint32_t)(size / CYG_NODE_SIZE)};
	for (unsigned i = 0; i < sizeof bad / sizeof bad[0]; i++)
		ring[h++ & mask] = (uint64_t)(i & 1) << 62 | (uint64_t)(bad[i] & 0x0fffffff) << 34 |
				   (rnd() & ((1ULL << 34) - 1));
	__atomic_store_n(&t->head, h, __ATOMIC_RELEASE);
}

/* Random words published in main's ring: events and memory records of
 * every kind, with random lengths, gids and times. */
HOSTILE static void scribble_events(void)
{
	struct cyg_thread *t = main_thread();

	if (!t || !t->ring_off || t->ring_off >= size)
		return;
	uint64_t *ring = AT(t->ring_off), mask = ctl()->ring_words - 1, h = t->head;
	uint64_t n = mask + 1 < 4096 ? (mask + 1) / 2 : 2048;
	for (uint64_t i = 0; i < n; i++) {
		uint64_t w = rnd();
		if (i % 3 == 1) /* a memory record header with a small length */
			w = 3ULL << 62 | (rnd() % 4) << 58 | (rnd() & ((1ULL << 58) - 1) & ~(0xffffULL << 41));
		ring[h++ & mask] = w;
	}
	__atomic_store_n(&t->head, h, __ATOMIC_RELEASE);
}

HOSTILE static void scribble_parents(void)
{
	struct cyg_thread *t = main_thread();
	struct cyg_node *root, *m, *w;

	if (!t || !(root = node(t->root)) || !(m = node(root->first_child)) ||
	    !(w = node(m->first_child)))
		return;
	m->parent = m->first_child;  /* main's parent is work ... */
	w->first_child = root->first_child; /* ... and work's child is main */
	w->next_sibling = m->first_child;   /* work is its own sibling */
}

HOSTILE static void scribble_maps(void)
{
	struct cyg_proc *p = main_proc();

	if (!p)
		return;
	p->maps_off = size - 16;
	__atomic_store_n(&p->maps_len, 4096, __ATOMIC_RELEASE);
	p->cmd_len = 1ULL << 40;
}

HOSTILE static void scribble_exe(void)
{
	struct cyg_proc *p = main_proc();
	struct cyg_thread *t;
	uint64_t off;

	if (p)
		memset(p->exe, 'A', sizeof p->exe);
	for (off = ctl()->threads_off; (t = thread_at(off)); off = t->next)
		memset(t->name, 'B', sizeof t->name);
}

HOSTILE static void scribble_stack(void)
{
	struct cyg_thread *t = main_thread();

	if (!t)
		return;
	t->depth = 0xfffffff0;
	t->stack_cap = 0xffffffff;
	t->stack_off = size - 64;
	t->sites_off = size - 8;
	t->sites_n = 0xffffffff;
}

HOSTILE static void scribble_procs(void)
{
	struct cyg_proc *p = main_proc();

	if (p)
		p->next = (uint64_t)((char *)p - base);
}

HOSTILE static void scribble_lock(void)
{
	/* glibc's robust mutex: __lock holds the owner's tid.  Pid 1 never
	 * dies, so the kernel never marks the owner dead: a locker waits. */
	int *lock = (int *)&ctl()->lock;
	lock[0] = 1; /* __lock */
	lock[2] = 1; /* __owner */
}

COUNTED int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "none";
	pthread_t th[2];
	int i;

	if (argc > 2)
		rng ^= strtoull(argv[2], NULL, 0) * 0x9E3779B97F4A7C15ULL;
	for (i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, worker, NULL);
	for (i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	for (i = 0; i < 100; i++)
		work();
	int found = find_mapping() == 0;
	printf("scribble: work=%lu mapping=%s\n", n_work, found ? "found" : "none");
	fflush(stdout);
	struct timespec ts = {0, 100000000};
	nanosleep(&ts, NULL);
	if (found) {
		if (!strcmp(mode, "random"))
			scribble_random();
		else if (!strcmp(mode, "sprinkle"))
			scribble_sprinkle();
		else if (!strcmp(mode, "threads"))
			scribble_threads();
		else if (!strcmp(mode, "ring"))
			scribble_ring();
		else if (!strcmp(mode, "gids"))
			scribble_gids();
		else if (!strcmp(mode, "events"))
			scribble_events();
		else if (!strcmp(mode, "parents"))
			scribble_parents();
		else if (!strcmp(mode, "maps"))
			scribble_maps();
		else if (!strcmp(mode, "exe"))
			scribble_exe();
		else if (!strcmp(mode, "stack"))
			scribble_stack();
		else if (!strcmp(mode, "procs"))
			scribble_procs();
		else if (!strcmp(mode, "lock"))
			scribble_lock();
	}
	if (!strcmp(mode, "words")) {
		if (found)
			scribble_words();
		site_a();
		site_b();
		for (i = 0; i < 100; i++)
			work();
		for (i = 0; i < 2; i++)
			pthread_create(&th[i], NULL, worker, NULL);
		for (i = 0; i < 2; i++)
			pthread_join(th[i], NULL);
		printf("scribble: after the damage work=%lu\n", n_work);
		fflush(stdout);
		exit(3);
	}
	syscall(SYS_exit_group, 3);
	return 3;
}
