/* SPDX-License-Identifier: MIT */
/* multi-hot.c - with multi-cold.c, the focused annotation test: work() is
 * most of the run (its loop line L_LOOP); the 60 filler lines below it have
 * no figure and are left out of the default annotation. */
#if defined(__clang__)
#define COUNTED __attribute__((noinline, used))
#else
#define COUNTED __attribute__((noinline, noipa))
#endif
void cold(void);
volatile unsigned long sink;

COUNTED static void step(unsigned long i)
{
	sink += i ^ (sink >> 3);
}

COUNTED static void work(void)
{
	for (unsigned long i = 0; i < 200000; i++)
		step(i); /* L_LOOP */
}

/* filler line 1: no code, no figure */
/* filler line 2: no code, no figure */
/* filler line 3: no code, no figure */
/* filler line 4: no code, no figure */
/* filler line 5: no code, no figure */
/* filler line 6: no code, no figure */
/* filler line 7: no code, no figure */
/* filler line 8: no code, no figure */
/* filler line 9: no code, no figure */
/* filler line 10: no code, no figure */
/* filler line 11: no code, no figure */
/* filler line 12: no code, no figure */
/* filler line 13: no code, no figure */
/* filler line 14: no code, no figure */
/* filler line 15: no code, no figure */
/* filler line 16: no code, no figure */
/* filler line 17: no code, no figure */
/* filler line 18: no code, no figure */
/* filler line 19: no code, no figure */
/* filler line 20: no code, no figure */
/* filler line 21: no code, no figure */
/* filler line 22: no code, no figure */
/* filler line 23: no code, no figure */
/* filler line 24: no code, no figure */
/* filler line 25: no code, no figure */
/* filler line 26: no code, no figure */
/* filler line 27: no code, no figure */
/* filler line 28: no code, no figure */
/* filler line 29: no code, no figure */
/* filler line 30: no code, no figure */
/* filler line 31: no code, no figure */
/* filler line 32: no code, no figure */
/* filler line 33: no code, no figure */
/* filler line 34: no code, no figure */
/* filler line 35: no code, no figure */
/* filler line 36: no code, no figure */
/* filler line 37: no code, no figure */
/* filler line 38: no code, no figure */
/* filler line 39: no code, no figure */
/* filler line 40: no code, no figure */
/* filler line 41: no code, no figure */
/* filler line 42: no code, no figure */
/* filler line 43: no code, no figure */
/* filler line 44: no code, no figure */
/* filler line 45: no code, no figure */
/* filler line 46: no code, no figure */
/* filler line 47: no code, no figure */
/* filler line 48: no code, no figure */
/* filler line 49: no code, no figure */
/* filler line 50: no code, no figure */
/* filler line 51: no code, no figure */
/* filler line 52: no code, no figure */
/* filler line 53: no code, no figure */
/* filler line 54: no code, no figure */
/* filler line 55: no code, no figure */
/* filler line 56: no code, no figure */
/* filler line 57: no code, no figure */
/* filler line 58: no code, no figure */
/* filler line 59: no code, no figure */
/* filler line 60: no code, no figure */

int main(void)
{
	work(); /* L_WORK */
	cold(); /* L_COLD */
	return 0;
}
