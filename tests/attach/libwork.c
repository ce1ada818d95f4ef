/* SPDX-License-Identifier: MIT */
/* libwork.c - an instrumented shared library for uselib.c (attach-lib):
 * lib_work() calls lib_inner() 10 times. */
#include "libwork.h"

static volatile unsigned long sink;

__attribute__((noinline)) static void lib_inner(void)
{
	sink++;
}

void lib_work(void)
{
	int i;

	for (i = 0; i < 10; i++)
		lib_inner();
}
