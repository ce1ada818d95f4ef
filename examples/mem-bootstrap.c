/* SPDX-License-Identifier: MIT */
/*
 * mem-bootstrap.c - allocations before main: the profiler must already be
 * tracing when the program's constructors run.
 *
 * Usage: mem-bootstrap   (no arguments; one thread)
 *
 *   preinit_alloc()  only when built with -DMEM_PREINIT: called from the
 *                    executable's .preinit_array, which the dynamic loader
 *                    runs before the constructors of every shared object (so
 *                    before the preloaded runtimes' own constructors):
 *                    malloc(45), kept.  Without MEM_PREINIT it is never
 *                    called (figures 0, stdout "preinit=0").
 *   early_alloc()    __attribute__((constructor)): malloc(123), kept.
 *   main             calls mid_alloc() (malloc(10)) and frees its block at
 *                    once, then late_free() frees the 45- and 123-byte
 *                    blocks (free(NULL) for the 45 without MEM_PREINIT: an
 *                    event with address 0, ignored).
 *
 * Expected per function (self = the caller of malloc):
 *   function       self_allocs self_bytes self_frees temporary leaked
 *   preinit_alloc       1          45         1          0        0
 *   early_alloc         1         123         1          0        0
 *   mid_alloc           1          10         1          1        0
 *   main, late_free: self 0 (main's total: 1 allocation, 10 bytes: the
 *   blocks allocated before main have no main on their stacks).
 * mid_alloc's block is temporary (freed right after its allocation); the two
 * early blocks are not (mid_alloc allocates in between).  Both readings of
 * "temporary" agree here (heaptrack's also resets on any free in between).
 * No stdio (snprintf + write).
 * Exit status 0.  stdout: "mem-bootstrap: preinit=45 early=123 mid=10 freed=3"
 * (without MEM_PREINIT: "preinit=0", and "freed=3" still: free(NULL) counts).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(__clang__)
#define COUNTED __attribute__((noinline, used))
#else
#define COUNTED __attribute__((noinline, noipa))
#endif

static char *preinit_block, *early_block;
static unsigned long n_preinit, n_early, n_mid, n_freed;

COUNTED static void preinit_alloc(int argc, char **argv, char **envp)
{
	(void)argc, (void)argv, (void)envp;
	preinit_block = malloc(45);
	if (!preinit_block)
		abort();
	memset(preinit_block, 1, 45);
	n_preinit = 45;
}

#ifdef MEM_PREINIT
__attribute__((section(".preinit_array"), used))
#else
__attribute__((used))
#endif
static void (*const preinit_entry)(int, char **, char **) = preinit_alloc;

COUNTED __attribute__((constructor)) static void early_alloc(void)
{
	early_block = malloc(123);
	if (!early_block)
		abort();
	memset(early_block, 2, 123);
	n_early = 123;
}

COUNTED static char *mid_alloc(void)
{
	char *p = malloc(10);

	if (!p)
		abort();
	memset(p, 3, 10);
	n_mid = 10;
	return p;
}

COUNTED static void late_free(void)
{
	free(preinit_block);
	free(early_block);
	n_freed += 2;
}

int main(void)
{
	char *p, buf[128];
	int len;

	p = mid_alloc();
	free(p);
	n_freed++;
	late_free();
	len = snprintf(buf, sizeof(buf), "mem-bootstrap: preinit=%lu early=%lu mid=%lu freed=%lu\n",
		       n_preinit, n_early, n_mid, n_freed);
	if (write(1, buf, (size_t)len) != len)
		return 1;
	return 0;
}
