/* SPDX-License-Identifier: MIT */
/*
 * bigfilter.c - a timeline past chrome://tracing's size of which -F keeps
 * a small part (tests/export, export-chrome-size-guard).
 *
 * main calls tick() 6,000,000 times (12,000,000 timeline events, a chrome
 * trace of about 0.6 GB), then getCommand() 1000 times, each calling
 * lookup() once.  Counts: main 1, tick 6000000, getCommand 1000,
 * lookup 1000; timeline events 2 * 6002001 = 12004002.
 */
#if defined(__clang__)
#define COUNTED __attribute__((noinline, used))
#else
#define COUNTED __attribute__((noinline, noipa))
#endif

static volatile unsigned long sink;

COUNTED static void tick(void)
{
	sink++;
}

COUNTED static void lookup(void)
{
	sink += 2;
}

COUNTED static void getCommand(void)
{
	lookup();
}

int main(void)
{
	unsigned long i;

	for (i = 0; i < 6000000; i++)
		tick();
	for (i = 0; i < 1000; i++)
		getCommand();
	return 0;
}
