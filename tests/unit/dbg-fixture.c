// SPDX-License-Identifier: MIT
/* dbg-fixture.c - the program test-debuginfo reads but never runs, built
 * with and without -g, stripped, split with objcopy --only-keep-debug
 * (symbols/meson.build): a static function with an inlined call, and the
 * lines the test looks for marked by comments. */
static volatile int sink;

static inline __attribute__((always_inline)) int twice(int x)
{
	return x * 2 + sink; /* L_TWICE */
}

__attribute__((noinline)) static int fixture_static(int x) /* L_STATIC */
{
	sink += twice(x); /* L_CALL_TWICE */
	return sink;
}

__attribute__((noinline)) int fixture_global(int x);
__attribute__((noinline)) int fixture_global(int x)
{
	return fixture_static(x) + 1;
}

int main(int argc, char **argv)
{
	(void)argv;
	return fixture_global(argc);
}
