/* memrand.c - random allocations and frees from 64 call paths
 * (bench/memstream.py: the memory stream's size against heaptrack's).
 *
 * Usage: memrand [nops [seed]]   (default nops = 3,000,000)
 * Each operation picks a path p (0..63: the function path_<p>, reached
 * through a table) and a slot of a pool of 4096 blocks (a fixed-seed
 * xorshift): an empty slot gets malloc(16 * (1 + p % 8) + 8 * (r % 4))
 * from path p, a full one is freed by path p, and one operation in four is
 * a malloc/free pair of path p with nothing in between.  The pool is freed
 * at the end: nothing leaks.  Sizes come from a small set per path, as in
 * most programs, so a heap profiler's (size, stack) table stays small.
 */
#include <stdint.h>
#include <stdlib.h>

#define NOIPA __attribute__((noipa))
#define POOL 4096

static void *pool[POOL];
static uint64_t rng = 88172645463325252ull;
void *volatile sink;

static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

NOIPA static void op(unsigned p, uint64_t r)
{
	unsigned slot = (unsigned)(r >> 8) % POOL;
	size_t size = 16 * (1 + p % 8) + 8 * (r % 4);

	if ((r >> 40) % 4 == 0) {
		sink = malloc(size);
		free(sink);
	} else if (pool[slot]) {
		free(pool[slot]);
		pool[slot] = NULL;
	} else {
		pool[slot] = malloc(size);
	}
}

#define P(n) NOIPA static void path_##n(uint64_t r) { op(n, r); }
#define P8(a) P(a##0) P(a##1) P(a##2) P(a##3) P(a##4) P(a##5) P(a##6) P(a##7)
P8(1) P8(2) P8(3) P8(4) P8(5) P8(6) P8(7) P8(8)
#define R(a) path_##a##0, path_##a##1, path_##a##2, path_##a##3, path_##a##4, path_##a##5, \
	path_##a##6, path_##a##7
static void (*const paths[64])(uint64_t) = { R(1), R(2), R(3), R(4), R(5), R(6), R(7), R(8) };

int main(int argc, char **argv)
{
	unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 10) : 3000000;

	if (argc > 2)
		rng ^= strtoull(argv[2], NULL, 10);
	for (unsigned long i = 0; i < n; i++) {
		uint64_t r = next();

		paths[r >> 58](r);
	}
	for (unsigned i = 0; i < POOL; i++)
		free(pool[i]);
	return 0;
}
