/* SPDX-License-Identifier: MIT */
/*
 * html-name.c - a function whose symbol is an HTML injection, for the
 * report's escaping (tests/html/html_report.py).
 *
 * main calls the function named `</script><script>alert(1)</script>` 7
 * times (the name is the symbol: an asm label, quoted for the assembler).
 * Exit status 0.
 */
#include <stdio.h>

#if defined(__clang__)
#define COUNTED __attribute__((noinline, used))
#else
#define COUNTED __attribute__((noinline, noipa))
#endif

static volatile unsigned long sink;

COUNTED void evil(void) __asm__("\"</script><script>alert(1)</script>\"");

COUNTED void evil(void)
{
	unsigned long i;

	for (i = 0; i < 1000; i++)
		sink += i;
}

int main(void)
{
	int i;

	for (i = 0; i < 7; i++)
		evil();
	printf("html-name: %lu\n", (unsigned long)sink);
	return 0;
}
