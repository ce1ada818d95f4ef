// SPDX-License-Identifier: MIT
/*
 * exceptions.cpp - C++ exceptions thrown through instrumented frames, and
 * demangled names of methods, namespace functions and overloads.
 *
 * Usage: exceptions [K]   (K defaults to 5)
 *
 * main calls catcher(i) K times (i = 0..K-1). catcher (depth 1) calls
 * mid(i) (depth 2), which calls thrower(i) (depth 3), which throws a Boom.
 * catcher catches it and then calls after_catch(). A profiler that missed the
 * unwinding would see after_catch() as a callee of thrower or mid.
 * Then main calls ns::Klass::method(int) 4 times on one object; each call
 * calls ns::helper(int) once. Finally main calls ns::helper(double) once.
 * No standard-library templates or inline library wrappers (atoi is one
 * with clang) are used, so nothing else is instrumented.
 *
 * Names are plain demangled names as c++filt prints them, without return
 * types; main is extern "C"-like and stays "main".
 *
 * Expected counts (one process, one thread):
 *   main                      1
 *   catcher(int)              K
 *   mid(int)                  K
 *   thrower(int)              K
 *   after_catch()             K
 *   ns::Klass::method(int)    4
 *   ns::helper(int)           4
 *   ns::helper(double)        1
 * Expected arcs, and no others:
 *   main                   -> catcher(int)             K
 *   catcher(int)           -> mid(int)                 K
 *   mid(int)               -> thrower(int)             K
 *   catcher(int)           -> after_catch()            K
 *   main                   -> ns::Klass::method(int)   4
 *   ns::Klass::method(int) -> ns::helper(int)          4
 *   main                   -> ns::helper(double)       1
 * Exit status 0. stdout: "exceptions: caught=K after=K method=4 sum=<S>".
 */
#include <cstdio>
#include <cstdlib>

#if defined(__clang__)
#define COUNTED __attribute__((noinline, used))
#else
#define COUNTED __attribute__((noinline, noipa))
#endif

struct Boom {
	int code;
};

static unsigned n_caught, n_after;
static volatile unsigned long sink;

COUNTED void thrower(int i)
{
	Boom b = {i};
	throw b;
}

COUNTED int mid(int i)
{
	thrower(i);
	return (int)sink; /* not reached */
}

COUNTED void after_catch()
{
	n_after++;
	for (unsigned long j = 0; j < 500; j++)
		sink += j;
}

COUNTED int catcher(int i)
{
	int code = -1;

	try {
		mid(i);
	} catch (const Boom &b) {
		code = b.code;
		n_caught++;
	}
	after_catch();
	return code;
}

namespace ns
{
class Klass
{
      public:
	int base;
	int method(int x);
};

COUNTED int helper(int x)
{
	return x * 2;
}

COUNTED double helper(double x)
{
	return x / 2;
}

COUNTED int Klass::method(int x)
{
	return base + helper(x);
}
} // namespace ns

int main(int argc, char **argv)
{
	int k = 5, sum = 0;
	ns::Klass obj = {10};
	unsigned n_method = 0;

	if (argc > 1)
		k = (int)std::strtol(argv[1], nullptr, 10);
	for (int i = 0; i < k; i++)
		if (catcher(i) == i)
			sum += i;
	for (int i = 0; i < 4; i++, n_method++)
		sum += obj.method(i);
	sum += (int)ns::helper(8.0);
	std::printf("exceptions: caught=%u after=%u method=%u sum=%d\n", n_caught, n_after,
		    n_method, sum);
	return n_caught == (unsigned)k ? 0 : 1;
}
