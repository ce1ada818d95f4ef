/* SPDX-License-Identifier: MIT */
/* diff-prog.c - the program behind tests/diff/diff.py: run as "diff-prog old"
 * and "diff-prog new", its two runs differ by a known amount.
 *
 * Exact counts (per run):
 *   main           1 call
 *   work           old: 1000 calls; new: 2000 calls (called by main)
 *   steady         10 calls in both runs (called by main)
 *   only_old       3 calls, old run only
 *   only_new       4 calls, new run only
 *   alloc_some     1 call in both; it mallocs 64 bytes 100 times (old) or
 *                  200 times (new) and frees them all: 6400 or 12800 bytes
 *   alloc_steady   1 call in both; 5 blocks of 32 bytes, freed: 160 bytes
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOINLINE __attribute__((noinline))

static volatile unsigned long sink;

static NOINLINE void work(unsigned i)
{
	sink += i;
}

static NOINLINE void steady(unsigned i)
{
	sink ^= i;
}

static NOINLINE void only_old(void)
{
	sink++;
}

static NOINLINE void only_new(void)
{
	sink += 2;
}

static NOINLINE void alloc_some(unsigned n)
{
	void *p[200];
	unsigned i;

	for (i = 0; i < n; i++) {
		p[i] = malloc(64);
		if (p[i])
			memset(p[i], 1, 64);
	}
	for (i = 0; i < n; i++)
		free(p[i]);
}

static NOINLINE void alloc_steady(void)
{
	void *p[5];
	unsigned i;

	for (i = 0; i < 5; i++) {
		p[i] = malloc(32);
		if (p[i])
			memset(p[i], 2, 32);
	}
	for (i = 0; i < 5; i++)
		free(p[i]);
}

int main(int argc, char **argv)
{
	int new = argc > 1 && !strcmp(argv[1], "new");
	unsigned i;

	if (argc != 2 || (!new && strcmp(argv[1], "old"))) {
		fprintf(stderr, "usage: diff-prog old|new\n");
		return 2;
	}
	for (i = 0; i < (new ? 2000u : 1000u); i++)
		work(i);
	for (i = 0; i < 10; i++)
		steady(i);
	if (new)
		for (i = 0; i < 4; i++)
			only_new();
	else
		for (i = 0; i < 3; i++)
			only_old();
	alloc_some(new ? 200 : 100);
	alloc_steady();
	return (int)(sink & 0);
}
