/* memloop.c - a tight loop of malloc/free pairs from 4 call paths
 * (bench/memstream.py: the memory stream's size against heaptrack's).
 *
 * Usage: memloop [n]   (default n = 4,000,000 pairs)
 * Pair i is malloc(16 * (1 + i % 4)) then free from path_<i % 4>(): four
 * (size, stack) pairs, one address reused by the allocator every time.
 */
#include <stdlib.h>

#define NOIPA __attribute__((noipa))

void *volatile sink;

NOIPA static void path_0(void) { sink = malloc(16); free(sink); }
NOIPA static void path_1(void) { sink = malloc(32); free(sink); }
NOIPA static void path_2(void) { sink = malloc(48); free(sink); }
NOIPA static void path_3(void) { sink = malloc(64); free(sink); }

int main(int argc, char **argv)
{
	unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 10) : 4000000;

	for (unsigned long i = 0; i < n; i++) {
		switch (i % 4) {
		case 0: path_0(); break;
		case 1: path_1(); break;
		case 2: path_2(); break;
		default: path_3(); break;
		}
	}
	return 0;
}
