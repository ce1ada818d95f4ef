// SPDX-License-Identifier: MIT
/*
 * stl.cpp - a program whose calls are nearly all the STL's (std::vector,
 * std::sort), for the warning about system headers (tests/report,
 * report-sysheaders).
 *
 * main runs 20 rounds: fill() pushes 2000 pseudo-random ints into a
 * std::vector, std::sort sorts them.  Built twice: with the STL
 * instrumented (millions of calls of templates from /usr/include, all but
 * main's and fill's), and with -finstrument-functions-exclude-file-list=
 * /usr/include, whose only calls are main 1 and fill 20.
 */
#include <algorithm>
#include <vector>

__attribute__((noinline)) static void fill(std::vector<int> &v, unsigned seed)
{
	for (unsigned i = 0; i < 2000; i++) {
		seed = seed * 1103515245u + 12345u;
		v.push_back((int)(seed >> 8));
	}
}

int main()
{
	long sum = 0;

	for (unsigned r = 0; r < 20; r++) {
		std::vector<int> v;
		fill(v, r);
		std::sort(v.begin(), v.end());
		sum += v[v.size() / 2];
	}
	return sum == 42; // never: 0
}
