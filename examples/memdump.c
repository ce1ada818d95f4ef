/* SPDX-License-Identifier: MIT */
/*
 * memdump.c - the memory-dump API (<cygprof/memdump.h>) with two subsystems.
 *
 * Usage: memdump   (link: pkg-config --cflags --libs cygprof-memdump)
 *
 * "Cache" is reported by totals: main registers cache_dump() as a dumper,
 * which reports the cache's current size; the library's dumper thread calls
 * it every interval (10 ms by default).  The cache grows in 5 phases of
 * +64 KiB (cache_grow()), each held 60 ms, so every size is seen by several
 * rounds.  At the end main unregisters the dumper and reports the final
 * total once itself.
 *
 * "Nodes" is reported by deltas: node_new() adds sizeof(struct node) (64
 * bytes), node_free() subtracts it.  Each phase creates 200 nodes and
 * destroys 80 of them: 1000 created, 400 destroyed.
 *
 * Expected figures under `cygprof record --memdump` (one process):
 *   memdump/Cache  last value 327680 (5 * 65536); the values seen, in
 *                  order, are among 0, 65536, 131072, 196608, 262144, 327680
 *                  and never decrease
 *   memdump/Nodes  last value 38400 (600 * 64), never above 64000
 * Expected counts:
 *   main        1
 *   cache_grow  5
 *   node_new    1000
 *   node_free   400
 *   sleep_ms    5
 *   cache_dump  0 recorded without --memdump (no dumper thread); with it,
 *               one per round (about 30), on a thread of its own
 * Exit status 0. stdout: "memdump: cache=327680 nodes=38400".
 * Without cygprof it runs the same (every API call is a no-op).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cygprof/memdump.h>

#if defined(__clang__)
#define COUNTED __attribute__((noinline, used))
#else
#define COUNTED __attribute__((noinline, noipa))
#endif

#define PHASES 5
#define PHASE_BYTES (64 * 1024)
#define PHASE_MS 60
#define NODES_PER_PHASE 200
#define FREED_PER_PHASE 80

struct node {
	struct node *next;
	uint64_t payload[7];
};
_Static_assert(sizeof(struct node) == 64, "the figures above assume 64-byte nodes");

static char *cache[PHASES];
static uint64_t cache_bytes; /* read by the dumper thread */
static int64_t nodes_bytes;  /* our own sum, to print */

COUNTED static void cache_dump(void *data)
{
	(void)data;
	cygprof_memdump_report_byte_total("Cache", __atomic_load_n(&cache_bytes, __ATOMIC_ACQUIRE));
}

COUNTED static void cache_grow(int phase)
{
	cache[phase] = malloc(PHASE_BYTES);
	if (!cache[phase])
		exit(1);
	memset(cache[phase], phase + 1, PHASE_BYTES);
	__atomic_add_fetch(&cache_bytes, PHASE_BYTES, __ATOMIC_RELEASE);
}

COUNTED static struct node *node_new(struct node *next)
{
	struct node *n = malloc(sizeof *n);
	if (!n)
		exit(1);
	n->next = next;
	memset(n->payload, 0, sizeof n->payload);
	cygprof_memdump_report_byte_delta("Nodes", (int64_t)sizeof *n);
	nodes_bytes += (int64_t)sizeof *n;
	return n;
}

COUNTED static struct node *node_free(struct node *n)
{
	struct node *next = n->next;
	free(n);
	cygprof_memdump_report_byte_delta("Nodes", -(int64_t)sizeof *n);
	nodes_bytes -= (int64_t)sizeof *n;
	return next;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = {0, (long)ms * 1000000L};
	while (nanosleep(&ts, &ts))
		;
}

int main(void)
{
	struct node *list = NULL;

	if (cygprof_memdump_register(cache_dump, NULL))
		return 1;
	for (int phase = 0; phase < PHASES; phase++) {
		cache_grow(phase);
		for (int i = 0; i < NODES_PER_PHASE; i++)
			list = node_new(list);
		for (int i = 0; i < FREED_PER_PHASE; i++)
			list = node_free(list);
		sleep_ms(PHASE_MS);
	}
	if (cygprof_memdump_unregister(cache_dump, NULL))
		return 1;
	cygprof_memdump_report_byte_total("Cache", cache_bytes);
	printf("memdump: cache=%llu nodes=%lld\n", (unsigned long long)cache_bytes,
	       (long long)nodes_bytes);
	return 0;
}
