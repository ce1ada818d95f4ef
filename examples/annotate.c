/* SPDX-License-Identifier: MIT */
/*
 * annotate.c - the source annotation example (cygprof annotate).
 *
 * The lines the test looks at carry a marker comment (L_...); the test
 * finds their numbers by searching this file.  Expected per line:
 *   L_CALL_A1   calls 3 (main calls a(2) three times from this line)
 *   L_CALL_A2   calls 2 (main calls a(3) twice from this line)
 *   L_CALL_B1   calls 12 (a calls b once per unit of n: 3*2 + 2*3)
 *   L_CALL_B2   calls 5 (a calls b once more per call of a)
 *   L_CALL_G    calls 4 (main calls grab 4 times from this line)
 *   L_DEF_MAIN  entries 1, L_DEF_A entries 5, L_DEF_B entries 17,
 *   L_DEF_GRAB  entries 4
 *   L_MALLOC    with --memory: 4 allocations, 4 * GRAB_BYTES = 400 bytes, each
 *               freed at once (temporary)
 * Exit status 0. stdout: "annotate: a=5 b=17 grab=4".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__clang__)
#define COUNTED __attribute__((noinline, used))
#else
#define COUNTED __attribute__((noinline, noipa))
#endif

#define GRAB_BYTES 100

static unsigned n_a, n_b, n_g;
static volatile unsigned long sink;

COUNTED static void b(unsigned x) /* L_DEF_B */
{
	unsigned i;

	n_b++;
	for (i = 0; i < 100; i++)
		sink += x * i;
}

COUNTED static void a(unsigned n) /* L_DEF_A */
{
	unsigned i;

	n_a++;
	for (i = 0; i < n; i++)
		b(i); /* L_CALL_B1 */
	b(n); /* L_CALL_B2 */
}

COUNTED static void *grab(size_t n) /* L_DEF_GRAB */
{
	char *p = malloc(n); /* L_MALLOC */

	n_g++;
	if (p)
		memset(p, (int)sink, n);
	return p;
}

int main(void) /* L_DEF_MAIN */
{
	unsigned i;

	for (i = 0; i < 3; i++)
		a(2); /* L_CALL_A1 */
	for (i = 0; i < 2; i++)
		a(3); /* L_CALL_A2 */
	for (i = 0; i < 4; i++)
		free(grab(GRAB_BYTES)); /* L_CALL_G */
	printf("annotate: a=%u b=%u grab=%u\n", n_a, n_b, n_g);
	return 0;
}
