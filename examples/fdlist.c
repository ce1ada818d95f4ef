/* SPDX-License-Identifier: MIT */
/*
 * fdlist.c - prints the file descriptors it was started with.
 *
 * Usage: fdlist
 *
 * main calls list_fds() once, which prints one line per open descriptor,
 * "fd N -> TARGET" (TARGET as readlink of /proc/self/fd/N gives it), in
 * increasing order, leaving out the descriptor of the directory it reads,
 * then "fdlist: shm_fd=V" with the value of CYGPROF_SHM_FD ("none" when
 * unset).  Under `cygprof record` a program must see only what the caller
 * of cygprof gave it (0, 1, 2 and anything else it left open), plus the
 * shared memory (/memfd:cygprof) under the number CYGPROF_SHM_FD names.
 *
 * Expected counts: main 1, list_fds 1.  Exit status 0.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#if defined(__clang__)
#define COUNTED __attribute__((noinline, used))
#else
#define COUNTED __attribute__((noinline, noipa))
#endif

/* not instrumented: qsort calls it a number of times that depends on libc */
__attribute__((no_instrument_function)) static int cmp_int(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

COUNTED static void list_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int fds[1024], n = 0, i;

	if (!d) {
		perror("/proc/self/fd");
		exit(1);
	}
	while ((e = readdir(d)) && n < 1024) {
		int fd = atoi(e->d_name);
		if (e->d_name[0] != '.' && fd != dirfd(d))
			fds[n++] = fd;
	}
	closedir(d);
	qsort(fds, (size_t)n, sizeof fds[0], cmp_int);
	for (i = 0; i < n; i++) {
		char link[64], target[4096];
		ssize_t len;
		snprintf(link, sizeof link, "/proc/self/fd/%d", fds[i]);
		len = readlink(link, target, sizeof target - 1);
		target[len > 0 ? len : 0] = 0;
		printf("fd %d -> %s\n", fds[i], target);
	}
}

COUNTED int main(void)
{
	const char *shm = getenv("CYGPROF_SHM_FD");

	list_fds();
	printf("fdlist: shm_fd=%s\n", shm ? shm : "none");
	return 0;
}
