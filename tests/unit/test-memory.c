/* SPDX-License-Identifier: MIT */
/* test-memory.c - analysis/memory.c on hand-made event sequences: the merge
 * order, temporaries, cross-thread and untracked frees, realloc, leaks, the
 * peak and its stacks, heap over time, functions with recursion, callers and
 * callees, diff. */
#include <errno.h>
#include <stdlib.h>

#include "check.h"
#include "memory.h"

#define A(t, a, sz, st)                                                                            \
	{.ts_ns = (t), .addr = (a), .size = (sz), .stack = (st), .op = CYGPROF_MEM_ALLOC}
#define RA(t, a, sz, st)                                                                           \
	{.ts_ns = (t), .addr = (a), .size = (sz), .stack = (st), .op = CYGPROF_MEM_ALLOC,          \
	 .fn = CYGPROF_FN_REALLOC}
#define F(t, a) {.ts_ns = (t), .addr = (a), .op = CYGPROF_MEM_FREE, .fn = CYGPROF_FN_FREE}
#define RF(t, a) {.ts_ns = (t), .addr = (a), .op = CYGPROF_MEM_FREE, .fn = CYGPROF_FN_REALLOC}

struct src {
	const struct cygprof_mem_event *v;
	size_t n, i;
};

static int src_next(void *p, struct cygprof_mem_event *ev)
{
	struct src *s = p;

	if (s->i == s->n)
		return 0;
	*ev = s->v[s->i++];
	return 1;
}

static int run(struct memory *m, const struct cygprof_mem_event *t0, size_t n0,
	       const struct cygprof_mem_event *t1, size_t n1)
{
	struct src s0 = {t0, n0, 0}, s1 = {t1, n1, 0};
	void *srcs[] = {&s0, &s1};
	int err = memory_run(m, 2, src_next, srcs);

	return err ? err : memory_end(m);
}

static const struct memory_fn *fn(const struct memory *m, const char *name)
{
	long i = memory_find_fn(m, name);

	CHECK(i >= 0);
	return i >= 0 ? &m->fns[i] : NULL;
}

/* Scenario A: two threads (see the positions in the comments). */
static const struct cygprof_mem_event a_t0[] = {
	A(10, 0x100, 100, 1), /* 0 */
	F(20, 0x100),         /* 2  temporary */
	A(30, 0x200, 50, 2),  /* 3 */
	A(40, 0x300, 30, 3),  /* 4 */
	F(50, 0x200),         /* 5  not temporary: 0x300 came between */
	F(60, 0x999),         /* 7  untracked */
	A(70, 0x400, 10, 1),  /* 8 */
	RF(80, 0x300),        /* 9  realloc: free ... */
	RA(80, 0x500, 60, 3), /* 10 ... and alloc */
	F(110, 0x600),        /* 14 cross-thread (allocated by thread 1) */
	A(120, 0x900, 20, 4), /* 15 */
};
static const struct cygprof_mem_event a_t1[] = {
	A(15, 0x600, 200, 4),  /* 1 */
	A(50, 0x700, 5, 2),    /* 6  after thread 0's FREE at 50 */
	F(90, 0x400),          /* 11 cross-thread */
	F(95, 0x700),          /* 12 not temporary: a free came between */
	A(100, 0x800, 100, 5), /* 13 peak: 360 */
};

static void name_a(struct memory *m)
{
	static const char *const s1[] = {"malloc", "make_node", "main"};
	static const char *const s2[] = {"operator new(unsigned long)", "fib", "fib", "main"};
	static const char *const s3[] = {"realloc", "grow", "fib", "main"};
	static const char *const s4[] = {"cyg_hook", "worker_alloc", "worker"};
	static const char *const o4[] = {"/opt/lib/libcygprof-cyg.so", "/bin/prog", "/bin/prog"};
	static const char *const s5[] = {"malloc"};

	CHECK_EQ_INT(memory_set_frames(m, 1, s1, NULL, 3), 0);
	CHECK_EQ_INT(memory_set_frames(m, 2, s2, NULL, 4), 0);
	CHECK_EQ_INT(memory_set_frames(m, 3, s3, NULL, 4), 0);
	CHECK_EQ_INT(memory_set_frames(m, 4, s4, o4, 3), 0);
	CHECK_EQ_INT(memory_set_frames(m, 5, s5, NULL, 1), 0);
	CHECK_EQ_INT(memory_set_frames(m, 6, s5, NULL, 1), -ENOENT);
	CHECK_EQ_INT(memory_functions(m), 0);
}

static struct memory *scenario_a(uint32_t points, int diff, uint64_t t1, uint64_t t2)
{
	struct memory_opts o = {.duration_ns = 200, .points = points, .diff = diff,
				.diff_t1 = t1, .diff_t2 = t2};
	struct memory *m = memory_new(&o);

	CHECK(m != NULL);
	CHECK_EQ_INT(run(m, a_t0, sizeof(a_t0) / sizeof(a_t0[0]), a_t1,
			 sizeof(a_t1) / sizeof(a_t1[0])),
		     0);
	name_a(m);
	return m;
}

static void test_totals(void)
{
	struct memory *m = scenario_a(0, 0, 0, 0);
	const struct memory_totals *t = &m->t;

	CHECK_EQ_U64(t->events, 16);
	CHECK_EQ_U64(t->allocations, 9);
	CHECK_EQ_U64(t->allocated_bytes, 575);
	CHECK_EQ_U64(t->frees, 6);
	CHECK_EQ_U64(t->freed_bytes, 395);
	CHECK_EQ_U64(t->temporary_allocations, 1);
	CHECK_EQ_U64(t->temporary_bytes, 100);
	CHECK_EQ_U64(t->cross_thread_frees, 2);
	CHECK_EQ_U64(t->untracked_frees, 1);
	CHECK_EQ_U64(t->untracked_reallocs, 0);
	CHECK_EQ_U64(t->leaked_allocations, 3);
	CHECK_EQ_U64(t->leaked_bytes, 180);
	CHECK_EQ_U64(t->peak_bytes, 360);
	CHECK_EQ_U64(t->peak_blocks, 3);
	CHECK_EQ_U64(t->peak_pos, 13);
	CHECK_EQ_U64(t->peak_ts_ns, 100);
	CHECK_EQ_U64(m->npoints, 0);
	memory_free(m);
}

static void test_stacks(void)
{
	struct memory *m = scenario_a(0, 0, 0, 0);
	const struct memory_stack *s = m->stacks;
	uint32_t *ids;
	size_t n;

	CHECK_EQ_U64(m->nstacks, 6);
	CHECK_EQ_INT(memory_used_stacks(m, &ids, &n), 0);
	CHECK_EQ_U64(n, 5);
	CHECK_EQ_U64(ids[0], 1);
	CHECK_EQ_U64(ids[4], 5);
	free(ids);

	CHECK_EQ_U64(s[1].allocations, 2);
	CHECK_EQ_U64(s[1].bytes, 110);
	CHECK_EQ_U64(s[1].frees, 2);
	CHECK_EQ_U64(s[1].temporary, 1);
	CHECK_EQ_U64(s[1].temporary_bytes, 100);
	CHECK_EQ_U64(s[1].cross_thread_frees, 1);
	CHECK_EQ_U64(s[1].leaked_allocations, 0);
	CHECK_EQ_U64(s[2].allocations, 2);
	CHECK_EQ_U64(s[2].bytes, 55);
	CHECK_EQ_U64(s[2].frees, 2);
	CHECK_EQ_U64(s[2].temporary, 0);
	CHECK_EQ_U64(s[3].allocations, 2);
	CHECK_EQ_U64(s[3].bytes, 90);
	CHECK_EQ_U64(s[3].frees, 1);
	CHECK_EQ_U64(s[3].freed_bytes, 30);
	CHECK_EQ_U64(s[3].leaked_allocations, 1);
	CHECK_EQ_U64(s[3].leaked_bytes, 60);
	CHECK_EQ_U64(s[4].bytes, 220);
	CHECK_EQ_U64(s[4].cross_thread_frees, 1);
	CHECK_EQ_U64(s[4].leaked_bytes, 20);
	CHECK_EQ_U64(s[5].leaked_allocations, 1);
	CHECK_EQ_U64(s[5].leaked_bytes, 100);

	/* live at position 13: 0x600 (s4), 0x500 (s3), 0x800 (s5) */
	CHECK_EQ_U64(s[1].peak_bytes, 0);
	CHECK_EQ_U64(s[2].peak_bytes, 0);
	CHECK_EQ_U64(s[3].peak_blocks, 1);
	CHECK_EQ_U64(s[3].peak_bytes, 60);
	CHECK_EQ_U64(s[4].peak_blocks, 1);
	CHECK_EQ_U64(s[4].peak_bytes, 200);
	CHECK_EQ_U64(s[5].peak_blocks, 1);
	CHECK_EQ_U64(s[5].peak_bytes, 100);

	/* frames: allocator entry points and libcygprof frames skipped */
	CHECK_EQ_U64(s[1].nframes, 2);
	CHECK_EQ_STR(m->fns[s[1].fns[0]].name, "make_node");
	CHECK_EQ_U64(s[2].nframes, 3);
	CHECK_EQ_U64(s[4].nframes, 2);
	CHECK_EQ_STR(m->fns[s[4].fns[0]].name, "worker_alloc");
	CHECK_EQ_U64(s[5].nframes, 1);
	CHECK_EQ_STR(m->fns[s[5].fns[0]].name, "<unknown>");
	memory_free(m);
}

static void test_functions(void)
{
	struct memory *m = scenario_a(0, 0, 0, 0);
	const struct memory_fn *f;

	CHECK_EQ_INT(memory_find_fn(m, "cyg_hook"), -ENOENT);
	CHECK_EQ_INT(memory_find_fn(m, "malloc"), -ENOENT);
	f = fn(m, "make_node");
	CHECK_EQ_U64(f->self_allocations, 2);
	CHECK_EQ_U64(f->self_bytes, 110);
	CHECK_EQ_U64(f->total_bytes, 110);
	CHECK_EQ_U64(f->self_frees, 2);
	CHECK_EQ_U64(f->self_temporary, 1);
	CHECK_EQ_U64(f->total_temporary, 1);
	f = fn(m, "main");
	CHECK_EQ_U64(f->self_allocations, 0);
	CHECK_EQ_U64(f->self_bytes, 0);
	CHECK_EQ_U64(f->total_allocations, 6);
	CHECK_EQ_U64(f->total_bytes, 255);
	CHECK_EQ_U64(f->total_frees, 5);
	CHECK_EQ_U64(f->total_temporary, 1);
	CHECK_EQ_U64(f->total_leaked_allocations, 1);
	CHECK_EQ_U64(f->total_leaked_bytes, 60);
	f = fn(m, "fib"); /* recursion: each stack counted once */
	CHECK_EQ_U64(f->self_allocations, 2);
	CHECK_EQ_U64(f->self_bytes, 55);
	CHECK_EQ_U64(f->total_allocations, 4);
	CHECK_EQ_U64(f->total_bytes, 145);
	CHECK_EQ_U64(f->total_frees, 3);
	CHECK_EQ_U64(f->self_leaked_bytes, 0);
	CHECK_EQ_U64(f->total_leaked_bytes, 60);
	CHECK_EQ_U64(f->total_peak_bytes, 60);
	f = fn(m, "grow");
	CHECK_EQ_U64(f->self_bytes, 90);
	CHECK_EQ_U64(f->self_leaked_allocations, 1);
	CHECK_EQ_U64(f->self_leaked_bytes, 60);
	f = fn(m, "worker_alloc");
	CHECK_EQ_U64(f->self_bytes, 220);
	CHECK_EQ_U64(f->self_peak_bytes, 200);
	f = fn(m, "worker");
	CHECK_EQ_U64(f->self_bytes, 0);
	CHECK_EQ_U64(f->total_bytes, 220);
	CHECK_EQ_U64(f->total_leaked_bytes, 20);
	f = fn(m, "<unknown>");
	CHECK_EQ_U64(f->self_bytes, 100);
	CHECK_EQ_U64(f->self_leaked_bytes, 100);
	memory_free(m);
}

static void test_related(void)
{
	struct memory *m = scenario_a(0, 0, 0, 0);
	struct memory_rel *cr, *ce, self;
	size_t ncr, nce;

	CHECK_EQ_INT(memory_related(m, "fib", &cr, &ncr, &ce, &nce, &self), 0);
	CHECK_EQ_U64(self.stacks, 2);
	CHECK_EQ_U64(self.allocations, 4);
	CHECK_EQ_U64(self.bytes, 145);
	CHECK_EQ_U64(ncr, 1);
	CHECK_EQ_STR(m->fns[cr[0].fn].name, "main");
	CHECK_EQ_U64(cr[0].stacks, 2);
	CHECK_EQ_U64(cr[0].allocations, 4);
	CHECK_EQ_U64(cr[0].bytes, 145);
	CHECK_EQ_U64(cr[0].frees, 3);
	CHECK_EQ_U64(cr[0].leaked_bytes, 60);
	CHECK_EQ_U64(nce, 1);
	CHECK_EQ_STR(m->fns[ce[0].fn].name, "grow");
	CHECK_EQ_U64(ce[0].allocations, 2);
	CHECK_EQ_U64(ce[0].bytes, 90);
	free(cr);
	free(ce);

	CHECK_EQ_INT(memory_related(m, "main", &cr, &ncr, &ce, &nce, &self), 0);
	CHECK_EQ_U64(ncr, 0);
	CHECK_EQ_U64(nce, 2); /* make_node 110, fib 145 (once for s2) */
	CHECK_EQ_STR(m->fns[ce[0].fn].name, "fib");
	CHECK_EQ_U64(ce[0].bytes, 145);
	CHECK_EQ_STR(m->fns[ce[1].fn].name, "make_node");
	CHECK_EQ_U64(ce[1].bytes, 110);
	CHECK_EQ_U64(self.bytes, 255);
	free(cr);
	free(ce);

	/* a glob: worker and worker_alloc form one group */
	CHECK_EQ_INT(memory_related(m, "worker*", &cr, &ncr, &ce, &nce, &self), 0);
	CHECK_EQ_U64(ncr, 0);
	CHECK_EQ_U64(nce, 0);
	CHECK_EQ_U64(self.bytes, 220);
	free(cr);
	free(ce);

	CHECK_EQ_INT(memory_related(m, "nosuch", &cr, &ncr, &ce, &nce, &self), 0);
	CHECK_EQ_U64(self.fn, MEMORY_NONE);
	CHECK_EQ_U64(ncr + nce, 0);
	free(cr);
	free(ce);
	memory_free(m);
}

static void test_heap(void)
{
	struct memory *m = scenario_a(4, 0, 0, 0);

	CHECK_EQ_U64(m->npoints, 4);
	CHECK_EQ_U64(m->heap[0].ts_ns, 0);
	CHECK_EQ_U64(m->heap[0].live_bytes, 300);
	CHECK_EQ_U64(m->heap[1].ts_ns, 50);
	CHECK_EQ_U64(m->heap[1].live_bytes, 280); /* carried in from before 50 */
	CHECK_EQ_U64(m->heap[2].ts_ns, 100);
	CHECK_EQ_U64(m->heap[2].live_bytes, 360);
	CHECK_EQ_U64(m->heap[3].ts_ns, 150);
	CHECK_EQ_U64(m->heap[3].live_bytes, 180);
	memory_free(m);
}

static void test_diff(void)
{
	struct memory *m = scenario_a(0, 1, 45, 100);

	/* live after ts 100: 0x600 (t15), 0x500 (t80, s3), 0x800 (t100, s5) */
	CHECK_EQ_U64(m->t.diff_blocks, 2);
	CHECK_EQ_U64(m->t.diff_bytes, 160);
	CHECK_EQ_U64(m->stacks[3].diff_bytes, 60);
	CHECK_EQ_U64(m->stacks[5].diff_blocks, 1);
	CHECK_EQ_U64(m->stacks[5].diff_bytes, 100);
	CHECK_EQ_U64(m->stacks[4].diff_bytes, 0);
	memory_free(m);

	/* T2 after the last event: the leaks allocated after T1 */
	m = scenario_a(0, 1, 100, 1000);
	CHECK_EQ_U64(m->t.diff_blocks, 1);
	CHECK_EQ_U64(m->t.diff_bytes, 20);
	CHECK_EQ_U64(m->stacks[4].diff_bytes, 20);
	memory_free(m);
}

/* Scenario B: ties at equal times, an untracked realloc, address 0. */
static void test_ties(void)
{
	static const struct cygprof_mem_event t0[] = {
		A(5, 0x10, 10, 1), /* 0: thread 0 before thread 1 */
		A(7, 0x30, 1, 1),  /* 3: after thread 1's FREE at 7 */
		A(9, 0x20, 7, 1),  /* 5: 0x20 is live: untracked realloc */
	};
	static const struct cygprof_mem_event t1[] = {
		A(5, 0x20, 20, 2), /* 1: peak 30 */
		F(7, 0x10),        /* 2 */
		F(8, 0),           /* 4: free(NULL), ignored */
	};
	struct memory *m = memory_new(NULL);

	CHECK_EQ_INT(run(m, t0, 3, t1, 3), 0);
	CHECK_EQ_U64(m->t.events, 6);
	CHECK_EQ_U64(m->t.peak_bytes, 30);
	CHECK_EQ_U64(m->t.peak_pos, 1);
	CHECK_EQ_U64(m->t.cross_thread_frees, 1);
	CHECK_EQ_U64(m->t.untracked_frees, 0);
	CHECK_EQ_U64(m->t.untracked_reallocs, 1);
	CHECK_EQ_U64(m->t.allocations, 4);
	CHECK_EQ_U64(m->t.frees, 1);
	CHECK_EQ_U64(m->t.leaked_allocations, 2);
	CHECK_EQ_U64(m->t.leaked_bytes, 8);
	CHECK_EQ_U64(m->stacks[1].leaked_bytes, 8);
	CHECK_EQ_U64(m->stacks[2].leaked_bytes, 0);
	CHECK_EQ_U64(m->stacks[1].peak_bytes, 10);
	CHECK_EQ_U64(m->stacks[2].peak_bytes, 20);
	CHECK_EQ_INT(memory_event(m, 0, &t0[0]), -EINVAL);
	CHECK_EQ_INT(memory_functions(m), 0);
	CHECK_EQ_U64(fn(m, "<unknown>")->self_bytes, 38); /* stacks never named */
	memory_free(m);
}

/* Many blocks freed in a scrambled order: the live map's deletions. */
static void test_many(void)
{
	enum { N = 20000 };
	struct memory *m = memory_new(NULL);
	struct cygprof_mem_event ev;
	uint64_t i, x = 1;

	for (i = 0; i < N; i++) {
		struct cygprof_mem_event a = A(i, 0x1000 + i * 16, i % 7 + 1, (uint32_t)(i % 3));

		CHECK_EQ_INT(memory_event(m, 0, &a), 0);
	}
	for (i = 0; i < N; i++) {
		/* a permutation of 0..N-1: i -> i * 7919 mod N */
		x = i * 7919 % N;
		ev = (struct cygprof_mem_event)F(N + i, 0x1000 + x * 16);
		if (i % 2 == 0)
			CHECK_EQ_INT(memory_event(m, 1, &ev), 0);
	}
	CHECK_EQ_INT(memory_end(m), 0);
	CHECK_EQ_U64(m->t.untracked_frees, 0);
	CHECK_EQ_U64(m->t.frees, N / 2);
	CHECK_EQ_U64(m->t.cross_thread_frees, N / 2);
	CHECK_EQ_U64(m->t.leaked_allocations, N / 2);
	CHECK_EQ_U64(m->t.leaked_allocations, m->stacks[0].leaked_allocations +
						      m->stacks[1].leaked_allocations +
						      m->stacks[2].leaked_allocations);
	CHECK_EQ_U64(m->t.peak_pos, N - 1);
	memory_free(m);
}

static void test_skipped(void)
{
	CHECK(memory_frame_skipped("malloc", NULL));
	CHECK(memory_frame_skipped("posix_memalign", "/lib/libc.so.6"));
	CHECK(memory_frame_skipped("operator new[](unsigned long)", NULL));
	CHECK(memory_frame_skipped("operator delete(void*, unsigned long)", NULL));
	CHECK(memory_frame_skipped("anything", "/usr/lib/libcygprof-cyg.so"));
	CHECK(!memory_frame_skipped("malloc_wrapper", NULL));
	CHECK(!memory_frame_skipped("main", "/bin/prog"));
}

int main(void)
{
	RUN_TEST(test_totals);
	RUN_TEST(test_stacks);
	RUN_TEST(test_functions);
	RUN_TEST(test_related);
	RUN_TEST(test_heap);
	RUN_TEST(test_diff);
	RUN_TEST(test_ties);
	RUN_TEST(test_many);
	RUN_TEST(test_skipped);
	CHECK_DONE();
}
