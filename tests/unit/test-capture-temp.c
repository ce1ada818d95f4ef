/* SPDX-License-Identifier: MIT */
/* test-capture-temp.c - the names of a capture's temporary files and the
 * removal of those left by a writer that is gone (capture/capture-temp.c):
 * a dead pid, a zombie, a pid with another start time (reused) go; a live
 * writer's, a locked one, another capture's and other names stay. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "capture-private.h"
#include "../lib/check.h"

static char dir[] = "/tmp/cygprof-test-temp.XXXXXX";

static void touch(const char *name)
{
	char p[512];
	int fd;

	snprintf(p, sizeof p, "%s/%s", dir, name);
	fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	CHECK(fd >= 0);
	if (fd >= 0)
		close(fd);
}

static int exists(const char *name)
{
	char p[512];

	snprintf(p, sizeof p, "%s/%s", dir, name);
	return access(p, F_OK) == 0;
}

/* Our own start time, as capture_temp_tag() writes it. */
static unsigned long long my_start(void)
{
	char tag[64];
	unsigned long long start = 0;
	int pid;

	capture_temp_tag(tag, sizeof tag);
	CHECK_EQ_INT(sscanf(tag, "%d-%llu", &pid, &start), 2);
	CHECK_EQ_INT(pid, (int)getpid());
	return start;
}

/* A pid that names no process now: a child that ended and was reaped. */
static pid_t dead_pid(void)
{
	pid_t p = fork();

	if (!p)
		_exit(0);
	waitpid(p, NULL, 0);
	return p;
}

static void test_tag(void)
{
	char tag[64];
	int n = capture_temp_tag(tag, sizeof tag);

	CHECK(n > 2);
	CHECK(strchr(tag, '-') != NULL);
	CHECK(my_start() > 0);
}

static void test_clean(void)
{
	char path[512], name[256];
	unsigned long long start = my_start();
	pid_t dead = dead_pid(), zombie;
	int lfd;

	snprintf(path, sizeof path, "%s/x.data", dir);
	/* a writer that is gone */
	snprintf(name, sizeof name, ".x.data.%d-%llu.AbC123", (int)dead, start);
	touch(name);
	/* our own pid, our start: a live writer (this process) */
	snprintf(name, sizeof name, ".x.data.%d-%llu.live01", (int)getpid(), start);
	touch(name);
	/* our pid with another start time: a writer whose pid was reused */
	snprintf(name, sizeof name, ".x.data.%d-%llu.reuse1", (int)getpid(), start + 12345);
	touch(name);
	/* a zombie's: gone although its pid still answers kill(pid, 0) */
	zombie = fork();
	if (!zombie)
		_exit(0);
	for (int i = 0; i < 2000; i++) {
		char sp[64], buf[512];
		snprintf(sp, sizeof sp, "/proc/%d/stat", (int)zombie);
		FILE *f = fopen(sp, "re");
		size_t got = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
		if (f)
			fclose(f);
		buf[got] = 0;
		char *q = strrchr(buf, ')');
		if (q && q[1] == ' ' && q[2] == 'Z')
			break;
		usleep(1000);
	}
	snprintf(name, sizeof name, ".x.data.%d-%llu.zomb01", (int)zombie, start);
	touch(name);
	/* a gone writer's, but locked: a writer in another pid namespace */
	snprintf(name, sizeof name, ".x.data.%d-%llu.lockd1", (int)dead, start);
	touch(name);
	{
		char p[512];
		snprintf(p, sizeof p, "%s/%s", dir, name);
		lfd = open(p, O_RDWR | O_CLOEXEC);
		CHECK(lfd >= 0);
		CHECK_EQ_INT(capture_writer_lock(lfd), 0);
	}
	/* another capture's, and names that are not ours */
	snprintf(name, sizeof name, ".y.data.%d-%llu.AbC123", (int)dead, start);
	touch(name);
	snprintf(name, sizeof name, ".x.data.%d-%llu.toolong1", (int)dead, start);
	touch(name);
	touch(".x.data.AbC123");
	touch(".x.data.notapid.AbC123");

	capture_temp_clean(path);

	snprintf(name, sizeof name, ".x.data.%d-%llu.AbC123", (int)dead, start);
	CHECK(!exists(name));
	snprintf(name, sizeof name, ".x.data.%d-%llu.live01", (int)getpid(), start);
	CHECK(exists(name));
	snprintf(name, sizeof name, ".x.data.%d-%llu.reuse1", (int)getpid(), start + 12345);
	CHECK(!exists(name));
	snprintf(name, sizeof name, ".x.data.%d-%llu.zomb01", (int)zombie, start);
	CHECK(!exists(name));
	snprintf(name, sizeof name, ".x.data.%d-%llu.lockd1", (int)dead, start);
	CHECK(exists(name));
	snprintf(name, sizeof name, ".y.data.%d-%llu.AbC123", (int)dead, start);
	CHECK(exists(name));
	snprintf(name, sizeof name, ".x.data.%d-%llu.toolong1", (int)dead, start);
	CHECK(exists(name));
	CHECK(exists(".x.data.AbC123"));
	CHECK(exists(".x.data.notapid.AbC123"));
	waitpid(zombie, NULL, 0);
	close(lfd);

	/* the next writer of x.data removes them too, and names its own file
	 * after itself */
	char *tmp = NULL;
	int fd = -1;
	snprintf(name, sizeof name, ".x.data.%d-%llu.AbC123", (int)dead, start);
	touch(name);
	CHECK_EQ_INT(capture_make_temp(path, &tmp, &fd), 0);
	CHECK(!exists(name));
	if (tmp) {
		char want[128];
		snprintf(want, sizeof want, "/.x.data.%d-%llu.", (int)getpid(), start);
		CHECK(strstr(tmp, want) != NULL);
		unlink(tmp);
	}
	free(tmp);
	if (fd >= 0)
		close(fd);
}

static int rm_all(void)
{
	char cmd[600];

	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	return system(cmd);
}

int main(void)
{
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	RUN_TEST(test_tag);
	RUN_TEST(test_clean);
	(void)rm_all();
	CHECK_DONE();
}
