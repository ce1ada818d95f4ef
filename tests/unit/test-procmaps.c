/* SPDX-License-Identifier: MIT */
/* test-procmaps.c - unit tests of common/procmaps.h (the parser of
 * /proc/PID/maps) and common/readfile.h (whole small files). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "check.h"
#include "procmaps.h"
#include "readfile.h"

static void test_maps_parse(void)
{
	static const char sample[] =
		"55d0c0a00000-55d0c0a02000 r--p 00000000 fe:01 1234                       "
		"/usr/bin/prog\n"
		"55d0c0a02000-55d0c0a05000 r-xp 00002000 fe:01 1234                       "
		"/usr/bin/prog\n"
		"55d0c1000000-55d0c1021000 rw-p 00000000 00:00 0                          "
		"[heap]\n"
		"7f0000000000-7f0000001000 r-xp 00001000 08:02 99   /home/u/my dir/lib x.so\n"
		"7f0000002000-7f0000003000 rw-p 00000000 00:00 0 \n"
		"7ffd1e3f0000-7ffd1e3f2000 r-xp 00000000 00:00 0                          "
		"[vdso]\n"
		"ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  "
		"[vsyscall]\n"
		"7f0000004000-7f0000005000 r--p 00003000 08:02 100  /lib/deleted.so (deleted)\n"
		"7f0000006000-7f0000007000 r-xp 00000000 08:02 101  /lib/last.so"; /* no '\n' */
	struct procmaps m;

	CHECK_EQ_INT(procmaps_parse(sample, strlen(sample), &m), 0);
	CHECK_EQ_U64(m.n, 5);
	if (m.n != 5) {
		procmaps_release(&m);
		return;
	}
	CHECK_EQ_U64(m.v[0].start, 0x55d0c0a00000);
	CHECK_EQ_U64(m.v[0].end, 0x55d0c0a02000);
	CHECK_EQ_U64(m.v[0].offset, 0);
	CHECK_EQ_INT(m.v[0].exec, 0);
	CHECK_EQ_STR(m.v[0].path, "/usr/bin/prog");
	CHECK_EQ_U64(m.v[1].offset, 0x2000);
	CHECK_EQ_INT(m.v[1].exec, 1);
	CHECK_EQ_STR(m.v[2].path, "/home/u/my dir/lib x.so");
	CHECK_EQ_U64(m.v[2].start, 0x7f0000000000);
	CHECK_EQ_U64(m.v[2].offset, 0x1000);
	CHECK_EQ_INT(m.v[2].exec, 1);
	CHECK_EQ_INT(m.v[2].deleted, 0);
	CHECK_EQ_STR(m.v[3].path, "/lib/deleted.so");
	CHECK_EQ_INT(m.v[3].deleted, 1);
	CHECK_EQ_U64(m.v[3].offset, 0x3000);
	CHECK_EQ_STR(m.v[4].path, "/lib/last.so");
	CHECK_EQ_U64(m.v[4].end, 0x7f0000007000);
	procmaps_release(&m);
	CHECK_EQ_U64(m.n, 0);

	/* A read cut in the middle of a line: that line is dropped. */
	CHECK_EQ_INT(procmaps_parse(sample, 30, &m), 0);
	CHECK_EQ_U64(m.n, 0);
	procmaps_release(&m);
	CHECK_EQ_INT(procmaps_parse("", 0, &m), 0);
	CHECK_EQ_U64(m.n, 0);
	procmaps_release(&m);
	CHECK_EQ_INT(procmaps_parse("garbage\n\n  \nxyz-", 17, &m), 0);
	CHECK_EQ_U64(m.n, 0);
	procmaps_release(&m);
}

/* The kernel writes a newline of a path as "\012". */
static void test_maps_newline(void)
{
	static const char text[] =
		"7f0000000000-7f0000001000 r-xp 00000000 08:02 100  /tmp/na\\012me\x1bx\n"
		"7f0000001000-7f0000002000 r-xp 00000000 08:02 101  /tmp/a\\012\\012 (deleted)\n"
		"7f0000002000-7f0000003000 r-xp 00000000 08:02 102  /tmp/b\\01\n";
	struct procmaps m = {0};

	CHECK_EQ_INT(procmaps_parse(text, sizeof text - 1, &m), 0);
	CHECK_EQ_U64(m.n, 3);
	if (m.n == 3) {
		CHECK_EQ_STR(m.v[0].path, "/tmp/na\nme\x1bx");
		CHECK_EQ_STR(m.v[1].path, "/tmp/a\n\n");
		CHECK_EQ_INT(m.v[1].deleted, 1);
		CHECK_EQ_STR(m.v[2].path, "/tmp/b\\01");
	}
	procmaps_release(&m);
}

static void test_kernel_path(void)
{
	struct procmap live = {.path = "/lib/x.so"}, gone = {.path = "/lib/y.so", .deleted = 1};
	char buf[64];

	CHECK_EQ_STR(procmap_kernel_path(&live, buf, sizeof buf), "/lib/x.so");
	CHECK_EQ_STR(procmap_kernel_path(&gone, buf, sizeof buf), "/lib/y.so (deleted)");
}

/* This process's own maps name its executable, executable. */
static void test_read_self(void)
{
	struct procmaps m;
	char exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	size_t i, found = 0;

	CHECK(n > 0);
	if (n <= 0)
		return;
	exe[n] = 0;
	CHECK_EQ_INT(procmaps_read(getpid(), &m), 0);
	for (i = 0; i < m.n; i++)
		if (m.v[i].exec && !strcmp(m.v[i].path, exe) &&
		    m.v[i].start <= (uint64_t)(uintptr_t)test_read_self &&
		    (uint64_t)(uintptr_t)test_read_self < m.v[i].end)
			found++;
	CHECK_EQ_U64(found, 1);
	procmaps_release(&m);
	CHECK_EQ_INT(procmaps_read(-1, &m), -ENOENT);
}

static void test_read_file(void)
{
	char path[] = "/tmp/test-readfile-XXXXXX", *buf = NULL;
	size_t len = 0, i;
	int fd = mkstemp(path), bad = 0;
	char big[20000];

	CHECK(fd >= 0);
	if (fd < 0)
		return;
	for (i = 0; i < sizeof big; i++)
		big[i] = (char)('a' + i % 26);
	CHECK_EQ_INT(write(fd, big, sizeof big), (long)sizeof big);
	close(fd);
	CHECK_EQ_INT(read_file(path, &buf, &len), 0);
	CHECK_EQ_U64(len, sizeof big);
	if (buf) {
		bad = memcmp(buf, big, sizeof big) != 0;
		CHECK_EQ_INT(bad, 0);
		CHECK_EQ_INT(buf[len], 0);
	}
	free(buf);
	fd = open(path, O_WRONLY | O_TRUNC);
	close(fd);
	CHECK_EQ_INT(read_file(path, &buf, &len), 0);
	CHECK_EQ_U64(len, 0);
	CHECK_EQ_STR(buf, "");
	free(buf);
	unlink(path);
	CHECK_EQ_INT(read_file(path, &buf, &len), -ENOENT);
}

int main(void)
{
	RUN_TEST(test_maps_parse);
	RUN_TEST(test_maps_newline);
	RUN_TEST(test_kernel_path);
	RUN_TEST(test_read_self);
	RUN_TEST(test_read_file);
	CHECK_DONE();
}
