/* hourlong.c - a run of any length at full rate, for bench/longrun.py.
 *
 * Usage: hourlong SECONDS
 *
 * Until SECONDS have passed (the clock is read every 4096 rounds), each
 * round walks one of 16 call paths 3..10 frames deep (instrumented calls:
 * the timeline) and, at its leaf, does malloc/free work: a temporary block
 * freed at once, and a slot of a 1024-entry pool replaced (so the heap
 * stays bounded: nothing leaks).  Sizes come from a fixed-seed xorshift,
 * 16..4096 bytes.  At the end every pool slot is freed, and it prints
 * "hourlong: rounds=N" (one round = one leaf call).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NOIPA __attribute__((noipa))
#define POOL 1024

static void *pool[POOL];
static unsigned long long rng_state = 0x9e3779b97f4a7c15ULL;
static unsigned long rounds;

NOIPA static unsigned long long rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

NOIPA static void leaf(unsigned long long r)
{
	size_t sz = 16 + (size_t)(r % 4081);
	char *t = malloc(sz);
	unsigned slot = (unsigned)(r >> 20) % POOL;

	if (t) {
		t[0] = (char)r;
		free(t);
	}
	free(pool[slot]);
	pool[slot] = malloc(16 + (size_t)((r >> 32) % 1024));
	rounds++;
}

NOIPA static void step(unsigned depth, unsigned path, unsigned long long r);

NOIPA static void a_(unsigned depth, unsigned path, unsigned long long r)
{
	step(depth - 1, path >> 1, r);
}

NOIPA static void b_(unsigned depth, unsigned path, unsigned long long r)
{
	step(depth - 1, path >> 1, r);
}

NOIPA static void step(unsigned depth, unsigned path, unsigned long long r)
{
	if (!depth)
		leaf(r);
	else if (path & 1)
		a_(depth, path, r);
	else
		b_(depth, path, r);
}

int main(int argc, char **argv)
{
	struct timespec t0, t;
	double secs = argc > 1 ? atof(argv[1]) : 10;
	unsigned i;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		for (i = 0; i < 4096; i++) {
			unsigned long long r = rng();
			unsigned path = (unsigned)(r >> 40) & 15;

			step(3 + path % 8, path, r);
		}
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) / 1e9 >= secs)
			break;
	}
	for (i = 0; i < POOL; i++)
		free(pool[i]);
	printf("hourlong: rounds=%lu\n", rounds);
	return 0;
}
