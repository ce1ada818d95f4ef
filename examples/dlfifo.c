/* SPDX-License-Identifier: MIT */
/*
 * dlfifo.c - a loaded library taken away from under the program: the file
 * it was loaded from becomes a FIFO, or is deleted, before the end.
 *
 * Usage: dlfifo LIB DIR MODE
 *
 * main copies LIB (built from dlfifo-lib.c) to DIR/libdlfifo-copy.so, loads
 * the copy with dlopen and calls its lib_entry(10) (10 calls of lib_leaf).
 * Then, as MODE says, it replaces the copy by a FIFO ("fifo...") or
 * deletes it ("delete..."), calls lib_entry(10) again, prints
 * "dlfifo: calls=20", waits 300 ms and exits 0.  The "-late" modes wait
 * 300 ms before taking the file away, so the collector has read the
 * library while it was there; the others take it away at once, and the
 * "-exit" modes also exit at once (the collector may then never see the
 * library while the process lives).  A collector that opens the FIFO to
 * read the library's symbols blocks forever (nobody writes into it).
 *
 * MODE: fifo, fifo-late, fifo-exit, delete, delete-late, delete-exit.
 *
 * Expected counts:
 *   main 1, lib_entry 2, lib_leaf 20
 * Arcs: main -> lib_entry 2, lib_entry -> lib_leaf 20.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#if defined(__clang__)
#define COUNTED __attribute__((noinline, used))
#else
#define COUNTED __attribute__((noinline, noipa))
#endif
#define PLAIN __attribute__((no_instrument_function))

PLAIN static void copy(const char *from, const char *to)
{
	char buf[65536];
	ssize_t n;
	int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0755);

	if (in < 0 || out < 0) {
		perror("dlfifo: copy");
		exit(1);
	}
	while ((n = read(in, buf, sizeof buf)) > 0)
		if (write(out, buf, (size_t)n) != n) {
			perror("dlfifo: write");
			exit(1);
		}
	close(in);
	close(out);
}

PLAIN static void pause_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
	nanosleep(&ts, NULL);
}

COUNTED int main(int argc, char **argv)
{
	char path[4096];
	int (*entry)(int);
	void *h;
	int calls;

	if (argc != 4) {
		fprintf(stderr, "usage: dlfifo LIB DIR (fifo|delete)[-late|-exit]\n");
		return 2;
	}
	snprintf(path, sizeof path, "%s/libdlfifo-copy.so", argv[2]);
	copy(argv[1], path);
	h = dlopen(path, RTLD_NOW);
	if (!h || !(*(void **)&entry = dlsym(h, "lib_entry"))) {
		fprintf(stderr, "dlfifo: %s\n", dlerror());
		return 1;
	}
	calls = entry(10);
	if (strstr(argv[3], "-late"))
		pause_ms(300);
	if (unlink(path) || (!strncmp(argv[3], "fifo", 4) && mkfifo(path, 0644))) {
		perror("dlfifo: replace");
		return 1;
	}
	calls += entry(10);
	printf("dlfifo: calls=%d\n", calls);
	fflush(stdout);
	if (!strstr(argv[3], "-exit"))
		pause_ms(300);
	return 0;
}
