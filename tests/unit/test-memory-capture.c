/* SPDX-License-Identifier: MIT */
/* test-memory-capture.c - a synthetic capture written with the writer API
 * (process, threads, objects, symbols, stack stash, memory events), read by
 * memory_load() on a view and by 'cygprof memory' (argv[1]) end to end: figures, frame
 * naming (RA frames at addr - 1, hex names, skipped allocator and libcygprof
 * frames), DWARF source lines of this very test, JSON, error exits. */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "memory.h"
#include "view.h"

static char dir[PATH_MAX];
static const char *cygprof;

/* A function of this program: its stack frame gets a source line. */
__attribute__((noinline)) int srcline_probe(int x);
__attribute__((noinline)) int srcline_probe(int x)
{
	return x * 3 + 1;
}

static int first_bias(struct dl_phdr_info *info, size_t size, void *data)
{
	*(uint64_t *)data = info->dlpi_addr;
	return 1; /* the main program comes first */
}

#define A(t, a, sz, st)                                                                            \
	{.ts_ns = (t), .addr = (a), .size = (sz), .stack = (st), .op = CYGPROF_MEM_ALLOC}
#define RA(t, a, sz, st)                                                                           \
	{.ts_ns = (t), .addr = (a), .size = (sz), .stack = (st), .op = CYGPROF_MEM_ALLOC,          \
	 .fn = CYGPROF_FN_REALLOC}
#define F(t, a) {.ts_ns = (t), .addr = (a), .op = CYGPROF_MEM_FREE, .fn = CYGPROF_FN_FREE}
#define RF(t, a) {.ts_ns = (t), .addr = (a), .op = CYGPROF_MEM_FREE, .fn = CYGPROF_FN_REALLOC}

/* The events of test-memory.c's scenario A, stacks renumbered to the stash
 * below, plus one leaked block from srcline_probe (stack 14). */
static const struct cygprof_mem_event t0[] = {
	A(10, 0x100, 100, 3), F(20, 0x100),	  A(30, 0x200, 50, 6),	A(40, 0x300, 30, 8),
	F(50, 0x200),	      F(60, 0x999),	  A(70, 0x400, 10, 3),	RF(80, 0x300),
	RA(80, 0x500, 60, 8), F(110, 0x600),	  A(120, 0x900, 20, 11), A(130, 0xa00, 1, 14),
};
static const struct cygprof_mem_event t1[] = {
	A(15, 0x600, 200, 11), A(50, 0x700, 5, 6), F(90, 0x400), F(95, 0x700),
	A(100, 0x800, 100, 13),
};

/* what write_events() tells cygprof_capture_mem_threads() first (0: nothing) */
static uint32_t mem_may;

/* The capture of the events e0 (thread 0) and e1 (thread 1). */
static void write_events(const char *path, int memory, const struct cygprof_mem_event *e0,
			 size_t n0, const struct cygprof_mem_event *e1, size_t n1)
{
	static char exe[PATH_MAX];
	struct cygprof_capture *cap;
	struct cygprof_proc p = {.idx = 0, .pid = 100, .parent_idx = CYGPROF_NONE, .end_ns = 200,
				 .end_kind = CYGPROF_END_EXIT, .command = "prog", .exe = "/nonexistent/prog"};
	struct cygprof_thread th[2] = {
		{.idx = 0, .proc_idx = 0, .tid = 100, .end_ns = 200, .name = "prog"},
		{.idx = 1, .proc_idx = 0, .tid = 101, .end_ns = 200, .name = "worker"},
	};
	uint64_t probe = (uint64_t)(uintptr_t)&srcline_probe, bias = 0;
	struct cygprof_object objs[4] = {
		{.idx = 0, .start = 0x1000, .end = 0x2000, .path = "/nonexistent/prog"},
		{.idx = 1, .start = 0x9000, .end = 0x9100, .path = "/nonexistent/libc.so.6"},
		{.idx = 2, .start = 0xa000, .end = 0xa100, .path = "/opt/lib/libcygprof-cyg.so"},
		{.idx = 3, .start = probe, .end = probe + 0x100, .path = exe},
	};
	struct cygprof_symbol syms[] = {
		{.object_idx = 0, .addr = 0x1000, .size = 0x100, .name = "main"},
		{.object_idx = 0, .addr = 0x1100, .size = 0x100, .name = "fib"},
		{.object_idx = 0, .addr = 0x1200, .size = 0x100, .name = "grow"},
		{.object_idx = 0, .addr = 0x1300, .size = 0x100, .name = "make_node"},
		{.object_idx = 0, .addr = 0x1400, .size = 0x100, .name = "worker"},
		{.object_idx = 0, .addr = 0x1500, .size = 0x100, .name = "worker_alloc"},
		{.object_idx = 1, .addr = 0x9000, .size = 0x80, .name = "malloc"},
		{.object_idx = 1, .addr = 0x9080, .size = 0x80, .name = "operator new(unsigned long)"},
		{.object_idx = 2, .addr = 0xa000, .size = 0x100, .name = "cyg_hook"},
		{.object_idx = 3, .addr = probe, .size = 0x10, .name = "srcline_probe"},
	};
#define S(i, par, k, a) {.id = (i), .parent = (par), .kind = CYGPROF_FRAME_##k, .addr = (a)}
	const struct cygprof_stack_node stash[] = {
		S(1, 0, FN, 0x1000),  /* main */
		S(2, 1, FN, 0x1300),  /* make_node */
		S(3, 2, FN, 0x9000),  /* malloc: stack [malloc, make_node, main] */
		S(4, 1, RA, 0x1150),  /* fib */
		S(5, 4, RA, 0x1200),  /* fib (addr - 1), not grow */
		S(6, 5, FN, 0x9080),  /* operator new: [new, fib, fib, main] */
		S(7, 4, FN, 0x1200),  /* grow */
		S(8, 7, FN, 0x9000),  /* [malloc, grow, fib, main] */
		S(9, 0, FN, 0x1400),  /* worker */
		S(10, 9, RA, 0x1550), /* worker_alloc */
		S(11, 10, RA, 0xa010), /* libcygprof: [cyg_hook, worker_alloc, worker] */
		S(12, 0, RA, 0x5000), /* no symbol: 0x5000 */
		S(13, 12, FN, 0x9000), /* [malloc, 0x5000] */
		S(14, 0, FN, probe),  /* [srcline_probe] */
	};
	size_t i;

	if (!realpath("/proc/self/exe", exe))
		exe[0] = 0;
	dl_iterate_phdr(first_bias, &bias);
	objs[3].bias = bias;
	CHECK_EQ_INT(cygprof_capture_create(path, &cap), 0);
	CHECK_EQ_INT(cygprof_capture_begin(cap), 0);
	CHECK_EQ_INT(cygprof_capture_set_meta(cap, "mode", memory ? "profile+memory" : "profile"),
		     0);
	CHECK_EQ_INT(cygprof_capture_set_meta(cap, "duration_ns", "200"), 0);
	CHECK_EQ_INT(cygprof_capture_set_meta(cap, "command", "prog"), 0);
	CHECK_EQ_INT(cygprof_capture_put_proc(cap, &p), 0);
	for (i = 0; i < 2; i++)
		CHECK_EQ_INT(cygprof_capture_put_thread(cap, &th[i]), 0);
	for (i = 0; i < 4; i++)
		CHECK_EQ_INT(cygprof_capture_put_object(cap, &objs[i]), 0);
	for (i = 0; i < sizeof(syms) / sizeof(syms[0]); i++)
		CHECK_EQ_INT(cygprof_capture_put_symbol(cap, &syms[i]), 0);
	if (memory) {
		CHECK_EQ_INT(cygprof_capture_put_stacks(cap, stash, sizeof(stash) / sizeof(stash[0])),
			     0);
		if (mem_may)
			cygprof_capture_mem_threads(cap, mem_may);
		CHECK_EQ_INT(cygprof_capture_append_mem(cap, 0, e0, n0), 0);
		if (n1)
			CHECK_EQ_INT(cygprof_capture_append_mem(cap, 1, e1, n1), 0);
	}
	CHECK_EQ_INT(cygprof_capture_commit(cap), 0);
	CHECK_EQ_INT(cygprof_capture_close(cap), 0);
}

static void write_capture(const char *path, int memory)
{
	write_events(path, memory, t0, sizeof(t0) / sizeof(t0[0]), t1, sizeof(t1) / sizeof(t1[0]));
}

/* Schema 5 stores memory times in us while one thread has memory events,
 * in ns with more: two threads that free each other's blocks within one
 * microsecond (a free sorted before its allocation would be untracked and
 * the allocation leaked; a free before another thread's allocation would
 * lower the peak) read with the figures of their exact times.  One thread
 * alone reads its times rounded down to the us, in its own order; but in
 * ns when the writer was told more threads may have memory events
 * (cygprof_capture_mem_threads(): another thread's first events may reach
 * the writer after this one's block closed). */
static void test_same_us(void)
{
	static const struct cygprof_mem_event e0[] = {
		A(1000100, 0x100, 100, 3), F(1000400, 0x200), A(1000500, 0x300, 7, 3),
		F(1000900, 0x300),
	};
	static const struct cygprof_mem_event e1[] = {
		A(1000150, 0x200, 50, 11), F(1000200, 0x100), A(1000600, 0x400, 1000, 11),
		F(1000700, 0x400),
	};
	struct memory_opts o = { 0 };
	char path[PATH_MAX + 16];
	struct cygprof_capture *cap;
	struct memory *m = NULL;
	struct view *v = NULL;

	for (int one = 0; one < 3; one++) {
		snprintf(path, sizeof(path), "%s/same-us-%d.cap", dir, one);
		mem_may = one == 2 ? 2 : 0;
		write_events(path, 1, e0, 4, e1, one ? 0 : 4);
		mem_may = 0;
		if (cygprof_capture_open(path, &cap)) {
			CHECK_FAIL_("cannot open %s", path);
			return;
		}
		if (view_new(cap, NULL, &v) || memory_load(v, &o, &m)) {
			CHECK_FAIL_("memory_load(%s) failed", path);
			view_close(v);
			cygprof_capture_close(cap);
			return;
		}
		if (one) {
			/* 0x200 was never allocated by thread 0 */
			CHECK_EQ_U64(m->t.allocations, 2);
			CHECK_EQ_U64(m->t.frees, 1);
			CHECK_EQ_U64(m->t.untracked_frees, 1);
			CHECK_EQ_U64(m->t.leaked_bytes, 100);
			CHECK_EQ_U64(m->t.peak_bytes, 107);
			/* rounded, or exact when more threads may have events */
			CHECK_EQ_U64(m->t.first_ts_ns, one == 2 ? 1000100 : 1000000);
			CHECK_EQ_U64(m->t.last_ts_ns, one == 2 ? 1000900 : 1000000);
		} else {
			CHECK_EQ_U64(m->t.allocations, 4);
			CHECK_EQ_U64(m->t.frees, 4);
			CHECK_EQ_U64(m->t.untracked_frees, 0);
			CHECK_EQ_U64(m->t.cross_thread_frees, 2);
			CHECK_EQ_U64(m->t.temporary_allocations, 2);
			CHECK_EQ_U64(m->t.leaked_allocations, 0);
			/* 7 + 1000 live at 1000600 ns (in us order, frees first:
			 * 0x100 and 0x200 untracked, 157 more live) */
			CHECK_EQ_U64(m->t.peak_bytes, 1007);
			CHECK_EQ_U64(m->t.peak_pos, 5);
			CHECK_EQ_U64(m->t.first_ts_ns, 1000100);
		}
		memory_free(m);
		m = NULL;
		view_close(v);
		v = NULL;
		cygprof_capture_close(cap);
	}
}

static const struct memory_fn *fn(const struct memory *m, const char *name)
{
	long i = memory_find_fn(m, name);

	CHECK(i >= 0);
	return i >= 0 ? &m->fns[i] : NULL;
}

static void test_load(void)
{
	char path[PATH_MAX + 16];
	struct memory_opts o = {.points = 4, .diff = 1, .diff_t1 = 45, .diff_t2 = 100};
	struct cygprof_capture *cap;
	struct view_frame *fr;
	struct memory *m;
	struct view *v;
	size_t n;

	snprintf(path, sizeof(path), "%s/mem.cap", dir);
	write_capture(path, 1);
	if (cygprof_capture_open(path, &cap)) {
		CHECK_FAIL_("cannot open %s", path);
		return;
	}
	if (view_new(cap, NULL, &v) || memory_load(v, &o, &m)) {
		CHECK_FAIL_("memory_load(%s) failed", path);
		cygprof_capture_close(cap);
		return;
	}
	CHECK_EQ_U64(m->opts.duration_ns, 200);
	CHECK_EQ_U64(m->t.allocations, 10);
	CHECK_EQ_U64(m->t.allocated_bytes, 576);
	CHECK_EQ_U64(m->t.frees, 6);
	CHECK_EQ_U64(m->t.temporary_allocations, 1);
	CHECK_EQ_U64(m->t.cross_thread_frees, 2);
	CHECK_EQ_U64(m->t.untracked_frees, 1);
	CHECK_EQ_U64(m->t.leaked_allocations, 4);
	CHECK_EQ_U64(m->t.leaked_bytes, 181);
	CHECK_EQ_U64(m->t.peak_bytes, 360);
	CHECK_EQ_U64(m->t.peak_pos, 13);
	CHECK_EQ_U64(m->t.diff_bytes, 160);
	CHECK_EQ_U64(m->heap[2].live_bytes, 360);
	CHECK_EQ_U64(m->heap[3].live_bytes, 181);

	CHECK_EQ_U64(fn(m, "fib")->total_bytes, 145);
	CHECK_EQ_U64(fn(m, "fib")->self_bytes, 55);
	CHECK_EQ_U64(fn(m, "main")->total_bytes, 255);
	CHECK_EQ_U64(fn(m, "grow")->self_leaked_bytes, 60);
	CHECK_EQ_U64(fn(m, "worker_alloc")->self_bytes, 220);
	CHECK_EQ_U64(fn(m, "0x5000")->self_leaked_bytes, 100);
	CHECK_EQ_U64(fn(m, "srcline_probe")->self_leaked_bytes, 1);
	CHECK_EQ_INT(memory_find_fn(m, "cyg_hook"), -ENOENT);
	CHECK_EQ_INT(memory_find_fn(m, "malloc"), -ENOENT);

	CHECK_EQ_INT(view_stack(v, 6, VIEW_LINES, memory_frame_skipped, &fr, &n), 0);
	CHECK_EQ_U64(n, 3);
	if (n == 3) {
		CHECK_EQ_STR(fr[0].name, "fib");
		CHECK_EQ_STR(fr[1].name, "fib");
		CHECK_EQ_STR(fr[2].name, "main");
		CHECK(fr[0].file == NULL); /* the object does not exist */
	}
	free(fr);
	CHECK_EQ_INT(view_stack(v, 13, VIEW_LINES, memory_frame_skipped, &fr, &n), 0);
	CHECK_EQ_U64(n, 1);
	if (n == 1)
		CHECK_EQ_STR(fr[0].name, "0x5000");
	free(fr);
	CHECK_EQ_INT(view_stack(v, 14, VIEW_LINES, memory_frame_skipped, &fr, &n), 0);
	CHECK_EQ_U64(n, 1);
	if (n == 1) {
		CHECK_EQ_STR(fr[0].name, "srcline_probe");
		CHECK(fr[0].file && strstr(fr[0].file, "test-memory-capture.c"));
		CHECK(fr[0].line >= 20 && fr[0].line <= 30);
	}
	free(fr);
	memory_free(m);
	view_close(v);
	CHECK_EQ_INT(cygprof_capture_close(cap), 0);
}

/* Run cygprof with args; its stdout (owned) and exit status. */
static char *run_cygprof(const char *const *args, int *status)
{
	char cmd[8192], *out = NULL;
	size_t len = 0, cap = 0, i;
	FILE *f;
	int c;

	snprintf(cmd, sizeof(cmd), "'%s'", cygprof);
	for (i = 0; args[i]; i++) {
		strncat(cmd, " '", sizeof(cmd) - strlen(cmd) - 1);
		strncat(cmd, args[i], sizeof(cmd) - strlen(cmd) - 1);
		strncat(cmd, "'", sizeof(cmd) - strlen(cmd) - 1);
	}
	strncat(cmd, " 2>&1", sizeof(cmd) - strlen(cmd) - 1);
	f = popen(cmd, "r");
	if (!f)
		return NULL;
	while ((c = fgetc(f)) != EOF) {
		if (len + 2 > cap) {
			cap = cap ? cap * 2 : 4096;
			out = realloc(out, cap);
			if (!out)
				abort();
		}
		out[len++] = (char)c;
	}
	if (out)
		out[len] = 0;
	c = pclose(f);
	*status = WIFEXITED(c) ? WEXITSTATUS(c) : -1;
	return out ? out : strdup("");
}

#define CHECK_HAS(out, s)                                                                          \
	do {                                                                                       \
		if (!strstr((out), (s)))                                                           \
			CHECK_FAIL_("output lacks %s", s);                                         \
	} while (0)

static void test_cli(void)
{
	char path[PATH_MAX + 16], nomem[PATH_MAX + 16];
	char *out;
	int st;

	snprintf(path, sizeof(path), "%s/mem.cap", dir);
	snprintf(nomem, sizeof(nomem), "%s/nomem.cap", dir);
	{
		const char *args[] = {"memory", "--format=json", "--points", "4", "--sort=total",
				      path, NULL};

		out = run_cygprof(args, &st);
		CHECK_EQ_INT(st, 0);
		CHECK_HAS(out, "\"totals\": {\"allocations\": 10, \"frees\": 6, "
			       "\"allocated_bytes\": 576,");
		CHECK_HAS(out, "\"peak_bytes\": 360,");
		CHECK_HAS(out, "\"peak_position\": 13,");
		CHECK_HAS(out, "\"leaked_allocations\": 4, \"leaked_bytes\": 181,");
		CHECK_HAS(out, "\"temporary_allocations\": 1,");
		CHECK_HAS(out, "\"cross_thread_frees\": 2, \"untracked_frees\": 1,");
		/* --sort=total: main (255) first */
		CHECK_HAS(out, "\"functions\": [\n    {\"name\": \"main\", \"self_allocations\": 0, "
			       "\"self_bytes\": 0, \"total_allocations\": 6, \"total_bytes\": 255,");
		CHECK_HAS(out, "{\"name\": \"fib\", \"self_allocations\": 2, \"self_bytes\": 55, "
			       "\"total_allocations\": 4, \"total_bytes\": 145, \"self_frees\": 2, "
			       "\"total_frees\": 3, \"self_temporary\": 0, \"total_temporary\": 0, "
			       "\"self_leaked_allocations\": 0, \"self_leaked_bytes\": 0,");
		CHECK_HAS(out, "{\"ts_ns\": 50, \"live_bytes\": 280}");
		CHECK_HAS(out, "{\"ts_ns\": 150, \"live_bytes\": 181}");
		CHECK(!strstr(out, "cyg_hook"));
		free(out);
	}
	{
		const char *args[] = {"memory", "--format=json", "--leaks", "--top", "2", path, NULL};

		out = run_cygprof(args, &st);
		CHECK_EQ_INT(st, 0);
		CHECK_HAS(out, "\"stacks\": [\n    {\"kind\": \"leaks\", \"id\": 13, \"allocations\": 1, "
			       "\"bytes\": 100, \"frames\": [{\"name\": \"0x5000\", \"file\": null, "
			       "\"line\": null}]},\n    {\"kind\": \"leaks\", \"id\": 8, ");
		CHECK(!strstr(out, "\"id\": 11"));
		free(out);
	}
	{
		const char *args[] = {"memory", "--format=json", "--leaks", "--top", "0", path, NULL};

		out = run_cygprof(args, &st);
		CHECK_EQ_INT(st, 0);
		CHECK_HAS(out, "{\"name\": \"srcline_probe\", \"file\": \"");
		CHECK_HAS(out, "test-memory-capture.c\", \"line\": ");
		free(out);
	}
	{
		const char *args[] = {"memory", "--format=json", "--peak", "--diff", "45ns", "0.1us",
				      path, NULL};

		out = run_cygprof(args, &st);
		CHECK_EQ_INT(st, 0);
		CHECK_HAS(out, "{\"kind\": \"peak\", \"id\": 11, \"allocations\": 1, \"bytes\": 200,");
		CHECK_HAS(out, "\"diff_blocks\": 2, \"diff_bytes\": 160");
		CHECK_HAS(out, "{\"kind\": \"diff\", \"id\": 13, \"allocations\": 1, \"bytes\": 100,");
		free(out);
	}
	{
		const char *args[] = {"memory", "--format=json", "--function", "fib", path, NULL};

		out = run_cygprof(args, &st);
		CHECK_EQ_INT(st, 0);
		CHECK_HAS(out, "\"callers\": [\n    {\"name\": \"main\", \"stacks\": 2, "
			       "\"allocations\": 4, \"bytes\": 145,");
		CHECK_HAS(out, "\"callees\": [\n    {\"name\": \"grow\", \"stacks\": 1, "
			       "\"allocations\": 2, \"bytes\": 90,");
		free(out);
	}
	{
		const char *args[] = {"memory", path, NULL};

		out = run_cygprof(args, &st);
		CHECK_EQ_INT(st, 0);
		CHECK_HAS(out, "Functions (by self bytes, allocated in the function itself; then total bytes):");
		CHECK_HAS(out, "Heap over time");
		free(out);
	}
	{
		const char *args[] = {"memory", "--temporary", "--leaks", path, NULL};

		out = run_cygprof(args, &st);
		CHECK_EQ_INT(st, 0);
		CHECK_HAS(out, "Temporary allocations, by stack:\n\n100 bytes in 1 blocks");
		CHECK_HAS(out, "    srcline_probe (");
		free(out);
	}
	{
		const char *args[] = {"memory", nomem, NULL};

		write_capture(nomem, 0);
		out = run_cygprof(args, &st);
		CHECK_EQ_INT(st, 1);
		CHECK_HAS(out, "has no memory events (record with -i memory or --memory)");
		free(out);
	}
	{
		const char *args[] = {"memory", "--bogus", path, NULL};

		out = run_cygprof(args, &st);
		CHECK_EQ_INT(st, 2);
		CHECK_HAS(out, "unknown option '--bogus'");
		free(out);
	}
	{
		const char *args[] = {"memory", "--help", NULL};

		out = run_cygprof(args, &st);
		CHECK_EQ_INT(st, 0);
		CHECK_HAS(out, "usage: cygprof memory");
		free(out);
	}
}

int main(int argc, char **argv)
{
	char cmd[PATH_MAX + 16];
	const char *tmp = getenv("TMPDIR");

	snprintf(dir, sizeof(dir), "%s/cygprof-memtest-XXXXXX", tmp ? tmp : "/tmp");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	cygprof = argc > 1 ? argv[1] : NULL;
	RUN_TEST(test_load);
	RUN_TEST(test_same_us);
	if (cygprof)
		RUN_TEST(test_cli);
	else
		printf("ok %d - test_cli # SKIP no cygprof given\n", ++check_count);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (getenv("KEEP")) printf("# kept %s\n", dir); else if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
	CHECK_DONE();
}
