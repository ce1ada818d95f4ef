/* SPDX-License-Identifier: MIT */
/* capture-temp.c - the names of the files a capture is written to before
 * it is published (".NAME.PID-START.XXXXXX": the writer's pid and start
 * time), and the removal of those whose writer is gone.
 *
 * A writer killed before its publish (SIGKILL, or a crash) leaves its
 * temporary file behind.  The next writer of the same NAME in the same
 * directory removes it: the pid no longer names a process, or names a
 * zombie, or a process started at another time (the pid was reused).  A
 * file still write-locked (capture_writer_lock(): a live writer, in
 * another pid namespace too) is kept whatever its name says. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "capture-private.h"

/* Process pid's start time (clock ticks after boot, field 22 of
 * /proc/PID/stat) and whether it is a zombie.  Returns 0, -ENOENT when
 * there is no such process, another negative errno when it cannot be told. */
static int proc_start(pid_t pid, unsigned long long *start, int *zombie)
{
	char p[64], buf[1024], *q;
	ssize_t n;
	int fd;

	snprintf(p, sizeof p, "/proc/%d/stat", (int)pid);
	fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return -ENOENT; /* it went between the open and the read */
	buf[n] = 0;
	q = strrchr(buf, ')'); /* past the command, which may hold anything */
	if (!q || q[1] != ' ')
		return -EINVAL;
	q += 2;
	*zombie = *q == 'Z' || *q == 'X';
	for (int field = 3; field < 22; field++) {
		q = strchr(q, ' ');
		if (!q)
			return -EINVAL;
		q++;
	}
	return sscanf(q, "%llu", start) == 1 ? 0 : -EINVAL;
}

int capture_temp_tag(char *buf, size_t n)
{
	static pid_t pid;
	static unsigned long long start;
	pid_t self = getpid();
	int zombie;

	if (pid != self) {
		/* without /proc, 0: such a file is taken for its owner's
		 * while the pid lives */
		if (proc_start(self, &start, &zombie))
			start = 0;
		pid = self;
	}
	return snprintf(buf, n, "%d-%llu", (int)pid, start);
}

/* The writer named by tag ("PID-START") is gone. */
static int owner_gone(const char *tag)
{
	unsigned long long want, start;
	int pid, len = 0, zombie = 0, rc;

	if (sscanf(tag, "%d-%llu%n", &pid, &want, &len) != 2 || tag[len] || pid <= 0)
		return 0;
	if (kill(pid, 0) < 0 && errno == ESRCH)
		return 1;
	rc = proc_start(pid, &start, &zombie);
	if (rc == -ENOENT)
		return 1;
	if (rc)
		return 0; /* cannot be told: kept */
	return zombie || (want && start != want);
}

void capture_temp_clean(const char *path)
{
	const char *slash = strrchr(path, '/');
	const char *base = slash ? slash + 1 : path;
	size_t blen = strlen(base);
	char *dir;
	DIR *d;
	struct dirent *de;

	if (!blen)
		return;
	dir = slash ? strndup(path, (size_t)(slash - path) + 1) : strdup(".");
	if (!dir)
		return;
	d = opendir(dir);
	free(dir);
	if (!d)
		return;
	while ((de = readdir(d))) {
		const char *n = de->d_name, *tag, *dot;
		char tagbuf[64];

		/* ".NAME." then "PID-START" then ".XXXXXX" (six characters) */
		if (n[0] != '.' || strncmp(n + 1, base, blen) || n[1 + blen] != '.')
			continue;
		tag = n + blen + 2;
		dot = strrchr(tag, '.');
		if (!dot || strlen(dot + 1) != 6 || (size_t)(dot - tag) >= sizeof tagbuf)
			continue;
		memcpy(tagbuf, tag, (size_t)(dot - tag));
		tagbuf[dot - tag] = 0;
		if (!owner_gone(tagbuf))
			continue;
		int fd = openat(dirfd(d), n, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
		struct stat st;
		if (fd < 0)
			continue;
		/* a regular file of ours, not written by anyone now */
		if (!fstat(fd, &st) && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
		    !capture_writer_holds(fd))
			(void)unlinkat(dirfd(d), n, 0);
		close(fd);
	}
	closedir(d);
}
