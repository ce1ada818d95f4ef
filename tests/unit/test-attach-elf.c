/* SPDX-License-Identifier: MIT */
/* test-attach-elf.c - attach_inspect()/attach_check() on running programs,
 * checked against readelf -rW and nm -D (docs/attach.md, steps 1 and 2).
 *
 * Usage: test-attach-elf LONGRUN   (example-longrun-O2: instrumented)
 * Starts LONGRUN and /bin/sleep, inspects both, kills both. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "attach-elf.h"
#include "check.h"

static const char *longrun;
static char tmpdir[] = "/tmp/cygprof-attach-XXXXXX";

static void msleep(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts))
		;
}

static pid_t spawn(char *const argv[])
{
	pid_t pid = fork();

	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);
		dup2(null, 1);
		execv(argv[0], argv);
		_exit(127);
	}
	return pid;
}

static void reap(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/* The first hex field of the first line of `cmd` containing `word`
 * (and `also`, when given); 0 when none. */
static uint64_t grep_hex(const char *cmd, const char *word, const char *also, char *type,
			 size_t tn)
{
	char line[1024];
	uint64_t v = 0;
	FILE *f = popen(cmd, "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof line, f)) {
		unsigned long long x;
		char ty[64] = "";
		if (!strstr(line, word) || (also && !strstr(line, also)))
			continue;
		if (sscanf(line, "%llx %*s %63s", &x, ty) >= 1 && !v) {
			v = x;
			if (type)
				snprintf(type, tn, "%s", ty);
		}
	}
	pclose(f);
	return v;
}

/* The start of the offset-0 mapping of path in pid. */
static uint64_t map_start(pid_t pid, const char *path)
{
	char p[64], line[4096];
	uint64_t v = 0;
	FILE *f;

	snprintf(p, sizeof p, "/proc/%d/maps", (int)pid);
	f = fopen(p, "r");
	while (f && fgets(line, sizeof line, f)) {
		unsigned long long lo, off;
		line[strcspn(line, "\n")] = 0;
		if (sscanf(line, "%llx-%*x %*s %llx", &lo, &off) == 2 && off == 0 &&
		    strstr(line, path) && !strcmp(line + strlen(line) - strlen(path), path)) {
			v = lo;
			break;
		}
	}
	if (f)
		fclose(f);
	return v;
}

static uint64_t read_word(pid_t pid, uint64_t addr)
{
	char p[64];
	uint64_t v = 0;
	int fd;

	snprintf(p, sizeof p, "/proc/%d/mem", (int)pid);
	fd = open(p, O_RDONLY);
	if (fd >= 0) {
		if (pread(fd, &v, sizeof v, (off_t)addr) != sizeof v)
			v = 0;
		close(fd);
	}
	return v;
}

static void test_instrumented(void)
{
	char pidfile[128], cmd[PATH_MAX * 2], ty[64], err[512];
	struct attach_target t;
	int i;

	snprintf(pidfile, sizeof pidfile, "%s/pid", tmpdir);
	char *argv[] = {(char *)longrun, pidfile, "200", "200", NULL};
	pid_t pid = spawn(argv);
	for (i = 0; i < 500 && access(pidfile, F_OK); i++)
		msleep(10);
	msleep(300); /* a few rounds: both hooks called, both slots bound */

	CHECK_EQ_INT(attach_inspect(pid, &t, err, sizeof err), 0);
	if (err[0] && t.dlopen_addr == 0)
		printf("# %s\n", err);
	char real[PATH_MAX];
	CHECK_EQ_STR(t.exe, realpath(longrun, real));
	CHECK_EQ_U64(t.exe_base, map_start(pid, t.exe)); /* PIE: PT_LOAD at vaddr 0 */
	CHECK_EQ_INT(t.profiled, 0);

	snprintf(cmd, sizeof cmd, "readelf -rW '%s'", t.exe);
	uint64_t off = grep_hex(cmd, "__cyg_profile_func_enter", NULL, ty, sizeof ty);
	CHECK(off != 0);
	CHECK_EQ_U64(t.got_enter, t.exe_base + off);
	CHECK_EQ_STR(ty, t.got_enter_type == 7 ? "R_X86_64_JUMP_SLOT" : "R_X86_64_GLOB_DAT");
	off = grep_hex(cmd, "__cyg_profile_func_exit", NULL, ty, sizeof ty);
	CHECK(off != 0);
	CHECK_EQ_U64(t.got_exit, t.exe_base + off);
	CHECK_EQ_STR(ty, t.got_exit_type == 7 ? "R_X86_64_JUMP_SLOT" : "R_X86_64_GLOB_DAT");

	snprintf(cmd, sizeof cmd, "nm -D '%s'", t.libc);
	uint64_t dl = grep_hex(cmd, " dlopen@@", NULL, NULL, 0);
	CHECK(dl != 0);
	CHECK_EQ_U64(t.dlopen_addr, t.libc_base + dl);
	CHECK_EQ_U64(t.libc_base, map_start(pid, t.libc));
	CHECK_EQ_U64(t.dlsym_addr, t.libc_base + grep_hex(cmd, " dlsym@@", NULL, NULL, 0));
	/* The bound slots hold glibc's empty hooks today. */
	uint64_t en = grep_hex(cmd, " __cyg_profile_func_enter", NULL, NULL, 0);
	uint64_t ex = grep_hex(cmd, " __cyg_profile_func_exit", NULL, NULL, 0);
	CHECK_EQ_U64(read_word(pid, t.got_enter), t.libc_base + en);
	CHECK_EQ_U64(read_word(pid, t.got_exit), t.libc_base + ex);

	err[0] = 0;
	CHECK_EQ_INT(attach_check(pid, &t, err, sizeof err), 0);
	CHECK_EQ_STR(err, "");
	reap(pid);
	unlink(pidfile);
	/* gone: one line */
	CHECK_EQ_INT(attach_check(pid, &t, err, sizeof err), -1);
	CHECK(strstr(err, "no process") != NULL);
}

/* State letter of a thread from /proc/PID/task/TID/stat. */
static char task_state(pid_t pid, pid_t tid)
{
	char p[96], line[512], *c;
	FILE *f;

	snprintf(p, sizeof p, "/proc/%d/task/%d/stat", (int)pid, (int)tid);
	f = fopen(p, "r");
	if (!f)
		return 0;
	c = fgets(line, sizeof line, f) ? strrchr(line, ')') : NULL;
	fclose(f);
	return c && c[1] ? c[2] : 0;
}

static void test_stop_all(void)
{
	static struct attach_threads a;
	char pidfile[128], err[512];
	int i, st;

	snprintf(pidfile, sizeof pidfile, "%s/pid2", tmpdir);
	char *argv[] = {(char *)longrun, pidfile, "5", "200", NULL};
	pid_t pid = spawn(argv);
	for (i = 0; i < 500 && access(pidfile, F_OK); i++)
		msleep(10);
	CHECK_EQ_INT(attach_stop_all(pid, &a, err, sizeof err), 0);
	CHECK_EQ_U64(a.n, 1);
	CHECK_EQ_INT(task_state(pid, pid), 't'); /* tracing stop */
	msleep(200);
	CHECK_EQ_INT(task_state(pid, pid), 't');
	attach_resume_all(&a);
	CHECK_EQ_U64(a.n, 0);
	/* runs on to its normal end */
	CHECK_EQ_INT(waitpid(pid, &st, 0), pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	unlink(pidfile);
}

static void test_uninstrumented(void)
{
	char err[512];
	struct attach_target t;
	char *argv[] = {"/bin/sleep", "30", NULL};
	pid_t pid = spawn(argv);
	int i;

	/* until exec'd: the exe link names sleep */
	for (i = 0; i < 500; i++) {
		char p[64], l[PATH_MAX];
		ssize_t n;
		snprintf(p, sizeof p, "/proc/%d/exe", (int)pid);
		n = readlink(p, l, sizeof l - 1);
		if (n > 0 && (l[n] = 0, strstr(l, "sleep")) && map_start(pid, "/libc.so.6"))
			break;
		msleep(10);
	}
	CHECK_EQ_INT(attach_inspect(pid, &t, err, sizeof err), 0);
	CHECK_EQ_U64(t.got_enter, 0);
	CHECK_EQ_U64(t.got_exit, 0);
	CHECK(t.dlopen_addr != 0);
	CHECK_EQ_INT(attach_check(pid, &t, err, sizeof err), -1);
	CHECK(strstr(err, "was not built with -finstrument-functions") != NULL);
	CHECK(strchr(err, '\n') == NULL);
	reap(pid);
}

static int has_cap_sys_ptrace(void)
{
	char line[256];
	int yes = 0;
	FILE *f = fopen("/proc/self/status", "r");

	while (f && fgets(line, sizeof line, f)) {
		unsigned long long cap;
		if (sscanf(line, "CapEff: %llx", &cap) == 1)
			yes = !!(cap & (1ULL << 19));
	}
	if (f)
		fclose(f);
	return yes;
}

static void test_scope(void)
{
	char path[128], err[512];
	FILE *f;

	snprintf(path, sizeof path, "%s/scope", tmpdir);
	f = fopen(path, "w");
	fputs("3\n", f);
	fclose(f);
	CHECK_EQ_INT(attach_allowed(getpid(), path, err, sizeof err), -1);
	CHECK(strstr(err, "ptrace is not allowed") != NULL);
	f = fopen(path, "w");
	fputs("0\n", f);
	fclose(f);
	CHECK_EQ_INT(attach_allowed(getpid(), path, err, sizeof err), 0);
	/* 1 and 2 allow only with CAP_SYS_PTRACE, 1 also our descendants */
	int cap = has_cap_sys_ptrace();
	char *const sl[] = {"/bin/sleep", "30", NULL};
	pid_t child = spawn(sl);
	f = fopen(path, "w");
	fputs("1\n", f);
	fclose(f);
	CHECK_EQ_INT(attach_allowed(child, path, err, sizeof err), 0);
	CHECK_EQ_INT(attach_allowed(1, path, err, sizeof err), cap ? 0 : -1);
	f = fopen(path, "w");
	fputs("2\n", f);
	fclose(f);
	CHECK_EQ_INT(attach_allowed(child, path, err, sizeof err), cap ? 0 : -1);
	if (!cap)
		CHECK(strstr(err, "run as root") != NULL);
	kill(child, SIGKILL);
	reap(child);
	snprintf(path, sizeof path, "%s/absent", tmpdir);
	CHECK_EQ_INT(attach_allowed(getpid(), path, err, sizeof err), 0);
	snprintf(path, sizeof path, "%s/scope", tmpdir);
	unlink(path);
}

/* Which stopped thread runs the injected calls (attach-inject.c). */
static void test_rank(void)
{
	struct user_regs_struct r;

	memset(&r, 0, sizeof r);
	r.orig_rax = 230; /* clock_nanosleep, interrupted: restarts */
	r.rax = (unsigned long long)-516;
	CHECK_EQ_INT(attach_thread_rank(&r, 0), 4);
	r.orig_rax = 7; /* poll */
	r.rax = (unsigned long long)-514;
	CHECK_EQ_INT(attach_thread_rank(&r, 0), 3);
	r.orig_rax = 202; /* futex: maybe a lock dlopen needs */
	r.rax = (unsigned long long)-512;
	CHECK_EQ_INT(attach_thread_rank(&r, 0), 1);
	r.orig_rax = (unsigned long long)-1; /* running */
	CHECK_EQ_INT(attach_thread_rank(&r, 1), 2);
	CHECK_EQ_INT(attach_thread_rank(&r, 0), 0); /* inside a library */
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: test-attach-elf LONGRUN\n");
		return 2;
	}
	longrun = argv[1];
	if (!mkdtemp(tmpdir))
		return 1;
	RUN_TEST(test_instrumented);
	RUN_TEST(test_stop_all);
	RUN_TEST(test_uninstrumented);
	RUN_TEST(test_scope);
	RUN_TEST(test_rank);
	rmdir(tmpdir);
	CHECK_DONE();
}
