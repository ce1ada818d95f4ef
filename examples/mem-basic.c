/* SPDX-License-Identifier: MIT */
/*
 * mem-basic.c - every C allocation function, with exact figures per function.
 *
 * Usage: mem-basic   (no arguments; one thread)
 *
 * main calls, in this order (each function marked COUNTED, so neither inlined
 * nor cloned, and every allocation is followed by a store so that it is never
 * a tail call: the caller of malloc is always on the stack):
 *   make_list()         calls new_node() 50 times; new_node does malloc(24).
 *                       The 50 nodes stay in a list until free_list().
 *   leaker()            5 x malloc(77), never freed (kept in a global).
 *   use_calloc()        calloc(10, 12) = 120 bytes, freed by main at the end.
 *   aligned()           posix_memalign(64, 200), aligned_alloc(128, 256),
 *                       memalign(32, 100), valloc(300), pvalloc(1000):
 *                       5 blocks, 1856 bytes, freed by main at the end.
 *   grow()              realloc(NULL, 32), then realloc to 64, 128, ... 4096:
 *                       8 allocations (the first is malloc-like), 7 frees of
 *                       the old block (realloc = free old + allocate new),
 *                       32 * (2^8 - 1) = 8160 bytes.  The last block (4096)
 *                       is freed by release_zero() with realloc(p, 0): a free
 *                       only.  Each of the 7 realloc'd-away blocks is freed
 *                       right after its own allocation: 7 temporaries.
 *   use_reallocarray()  reallocarray(NULL, 5, 20) = 100 bytes (malloc-like),
 *                       then reallocarray(p, 10, 20) = 200 bytes (frees the
 *                       100-byte block: 1 temporary); freed by main.
 *   rec_alloc(4)        recursive, 4 levels; each level mallocs 16 bytes after
 *                       the recursive call: 4 allocations, 64 bytes.  A stack
 *                       holds rec_alloc up to 4 times, counted once: total ==
 *                       self == 4 allocations.  Freed by main.
 *   temp_work()         30 x (malloc(100), free): 30 allocations, 3000 bytes,
 *                       30 temporaries.
 *   peak_phase()        16 x malloc(65536) = 1 MiB held at once, then freed in
 *                       reverse order (the 16th block, freed right after its
 *                       allocation, is 1 temporary).  This is the peak.
 *   free_list()         frees the 50 nodes; then main frees the rest, and
 *                       release_zero() does realloc(grow's block, 0).
 * Frees are attributed to the allocating function.  No stdio (output with
 * snprintf + write), so libc allocates nothing on its own here.
 *
 * Expected per function ("self" = the function that called the allocator):
 *   function          self_allocs self_bytes self_frees temporary leaked(bytes)
 *   new_node               50        1200       50         0        0
 *   leaker                  5         385        0         0        5 (385)
 *   use_calloc              1         120        1         0        0
 *   aligned                 5        1856        5         0        0
 *   grow                    8        8160        8         7        0
 *   use_reallocarray        2         300        2         1        0
 *   rec_alloc               4          64        4         0        0
 *   temp_work              30        3000       30        30        0
 *   peak_phase             16     1048576       16         1        0
 *   main, make_list, free_list, release_zero: self 0
 * total_allocations / total_bytes / total_frees:
 *   make_list 50 / 1200 / 50,  rec_alloc 4 / 64 / 4,
 *   main      121 / 1063661 / 116 (everything), others == self.
 * Totals of the program's own functions: 121 allocations, 1063661 bytes,
 *   116 frees, 5 leaked (385 bytes), 39 temporaries, 0 cross-thread frees.
 * Peak: while peak_phase holds its 16 blocks, live = 1200 + 385 + 120 + 1856
 *   + 4096 + 200 + 64 + 1048576 = 1056497 bytes (peak_bytes).
 * Calls (cygprof report, instrumented build): main 1, make_list 1,
 *   new_node 50, leaker 1, use_calloc 1, aligned 1, grow 1,
 *   use_reallocarray 1, rec_alloc 4, temp_work 1, peak_phase 1, free_list 1,
 *   release_zero 1.
 * Exit status 0.  stdout:
 *   "mem-basic: allocs=121 bytes=1063661 frees=116 leaked=5 leaked_bytes=385"
 */
#define _GNU_SOURCE
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(__clang__)
#define COUNTED __attribute__((noinline, used))
#else
#define COUNTED __attribute__((noinline, noipa))
#endif

#define N_NODES 50
#define N_LEAKS 5
#define N_TEMP 30
#define N_PEAK 16
#define REC_DEPTH 4

struct node {
	struct node *next;
	unsigned long val;
	unsigned long pad;
}; /* 24 bytes */

/* The program's own counters (incremented next to each call). */
static unsigned long n_alloc, n_bytes, n_free;

static void *volatile sink; /* escapes blocks so -O2 keeps malloc/free pairs */
static void *leaks[N_LEAKS];
static void *rec_blocks[REC_DEPTH];
static unsigned rec_n;

COUNTED static struct node *new_node(unsigned long v)
{
	struct node *n = malloc(sizeof(*n));

	if (!n)
		abort();
	n->next = NULL;
	n->val = v;
	n->pad = 0;
	n_alloc++;
	n_bytes += sizeof(*n);
	return n;
}

COUNTED static struct node *make_list(void)
{
	struct node *head = NULL, *n;
	unsigned long i;

	for (i = 0; i < N_NODES; i++) {
		n = new_node(i);
		n->next = head;
		head = n;
	}
	return head;
}

COUNTED static void free_list(struct node *head)
{
	struct node *next;

	while (head) {
		next = head->next;
		free(head);
		n_free++;
		head = next;
	}
}

COUNTED static void leaker(void)
{
	int i;

	for (i = 0; i < N_LEAKS; i++) {
		leaks[i] = malloc(77); /* LEAK-SITE */
		memset(leaks[i], i, 77);
		n_alloc++;
		n_bytes += 77;
	}
}

COUNTED static void *use_calloc(void)
{
	void *p = calloc(10, 12);

	if (!p)
		abort();
	sink = p;
	n_alloc++;
	n_bytes += 120;
	return p;
}

COUNTED static void aligned(void *out[5])
{
	if (posix_memalign(&out[0], 64, 200))
		abort();
	out[1] = aligned_alloc(128, 256);
	out[2] = memalign(32, 100);
	out[3] = valloc(300);
	out[4] = pvalloc(1000);
	sink = out[4];
	n_alloc += 5;
	n_bytes += 200 + 256 + 100 + 300 + 1000;
}

COUNTED static char *grow(void)
{
	char *p = NULL, *q;
	size_t size;

	for (size = 32; size <= 4096; size *= 2) {
		q = realloc(p, size);
		if (!q)
			abort();
		if (p)
			n_free++;
		p = q;
		p[size - 1] = 1;
		n_alloc++;
		n_bytes += size;
	}
	return p;
}

COUNTED static void release_zero(char *p)
{
	/* glibc: realloc(p, 0) frees p and returns NULL */
	sink = realloc(p, 0);
	n_free++;
}

COUNTED static char *use_reallocarray(void)
{
	char *p = reallocarray(NULL, 5, 20), *q;

	if (!p)
		abort();
	p[99] = 1;
	q = reallocarray(p, 10, 20);
	if (!q)
		abort();
	q[199] = 2;
	n_alloc += 2;
	n_bytes += 300;
	n_free++;
	return q;
}

COUNTED static void rec_alloc(int depth)
{
	void *p;

	if (depth > 1)
		rec_alloc(depth - 1);
	p = malloc(16);
	rec_blocks[rec_n++] = p;
	n_alloc++;
	n_bytes += 16;
}

COUNTED static void temp_work(void)
{
	int i;
	char *p;

	for (i = 0; i < N_TEMP; i++) {
		p = malloc(100);
		if (!p)
			abort();
		p[0] = (char)i;
		sink = p;
		free(p);
		n_alloc++;
		n_bytes += 100;
		n_free++;
	}
}

COUNTED static void peak_phase(void)
{
	void *blocks[N_PEAK];
	int i;

	for (i = 0; i < N_PEAK; i++) {
		blocks[i] = malloc(65536);
		if (!blocks[i])
			abort();
		memset(blocks[i], i, 64);
		sink = blocks[i];
		n_alloc++;
		n_bytes += 65536;
	}
	for (i = N_PEAK - 1; i >= 0; i--) {
		free(blocks[i]);
		n_free++;
	}
}

int main(void)
{
	struct node *list;
	void *cal, *al[5];
	char *g, *ra, buf[160];
	unsigned i;
	int len;

	list = make_list();
	leaker();
	cal = use_calloc();
	aligned(al);
	g = grow();
	ra = use_reallocarray();
	rec_alloc(REC_DEPTH);
	temp_work();
	peak_phase();

	free_list(list);
	free(cal);
	n_free++;
	for (i = 0; i < 5; i++) {
		free(al[i]);
		n_free++;
	}
	release_zero(g);
	free(ra);
	n_free++;
	for (i = 0; i < rec_n; i++) {
		free(rec_blocks[i]);
		n_free++;
	}

	len = snprintf(buf, sizeof(buf),
		       "mem-basic: allocs=%lu bytes=%lu frees=%lu leaked=%lu leaked_bytes=%lu\n",
		       n_alloc, n_bytes, n_free, n_alloc - n_free, (unsigned long)N_LEAKS * 77);
	if (write(1, buf, (size_t)len) != len)
		return 1;
	return 0;
}
