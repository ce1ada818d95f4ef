/* SPDX-License-Identifier: MIT */
/*
 * html-chain.c - a call path that passes through a long single-child chain
 * before it branches, for the HTML report's flame graphs
 * (tests/html/html_report.py, html-flame).
 *
 * main calls run(), which calls s01(), which calls s02(), ... s12(), which
 * calls branch() once; branch() calls right() 100 times (in
 * libhtml-chain-lib.so: a second object), then left() 200 times, then the
 * function whose symbol is a long C++ template name (LONG below) 50 times.
 * Only left, right and LONG do work: every frame from main to s12 passes
 * its whole time on to the next one.
 *
 * Expected counts (one process, one thread):
 *   main, run, s01 .. s12, branch   1 each
 *   right                         100
 *   left                          200
 *   LONG                           50
 * Exit status 0.
 */
#include <stdio.h>

#if defined(__clang__)
#define COUNTED __attribute__((noinline, used))
#else
#define COUNTED __attribute__((noinline, noipa))
#endif

void right(void);

static volatile unsigned long sink;

/* LONG: a name as long as the C++ templates that overflowed the summary */
COUNTED void longname(void) __asm__(
	"\"Pipeline<std::map<std::__cxx11::basic_string<char, std::char_traits<char>, "
	"std::allocator<char> >, std::vector<std::pair<unsigned long, double>, "
	"std::allocator<std::pair<unsigned long, double> > >, std::less<std::__cxx11::"
	"basic_string<char, std::char_traits<char>, std::allocator<char> > > > >::run(unsigned "
	"long, std::function<void (double)> const&)\"");

COUNTED void longname(void)
{
	unsigned long i;

	for (i = 0; i < 150000; i++)
		sink += i;
}

COUNTED void left(void)
{
	unsigned long i;

	for (i = 0; i < 150000; i++)
		sink += i;
}

COUNTED void branch(void)
{
	int i;

	for (i = 0; i < 100; i++)
		right();
	for (i = 0; i < 200; i++)
		left();
	for (i = 0; i < 50; i++)
		longname();
}

#define STEP(name, next) \
	COUNTED void name(void); \
	COUNTED void name(void) { next(); sink++; }
STEP(s12, branch)
STEP(s11, s12)
STEP(s10, s11)
STEP(s09, s10)
STEP(s08, s09)
STEP(s07, s08)
STEP(s06, s07)
STEP(s05, s06)
STEP(s04, s05)
STEP(s03, s04)
STEP(s02, s03)
STEP(s01, s02)
STEP(run, s01)

int main(void)
{
	run();
	printf("html-chain: %lu\n", (unsigned long)sink);
	return 0;
}
