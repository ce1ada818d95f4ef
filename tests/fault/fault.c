/* SPDX-License-Identifier: MIT */
/* fault.c - libcygprof-fault.so, the tests' fault injector (as SQLite's
 * I/O-error tests do): preloaded into a cygprof command, it makes the Nth
 * write-side call on a file under one directory fail, and counts those
 * calls (the fault points).  Used by tests/fault/fault.py only; never
 * installed.
 *
 * Environment (read once, at load):
 *   CYGPROF_FAULT_DIR  the directory: only descriptors that refer to a file
 *                      under it (/proc/self/fd/N) are fault points, so the
 *                      traced program, standard output and error, sockets and
 *                      the shared-memory ring are never touched
 *   CYGPROF_FAULT      CALL:N:ERR, or CALL:N+:ERR for the Nth call and every
 *                      later one.  CALL is write, pwrite, pwrite64, writev,
 *                      pwritev, fsync, fdatasync, msync, mmap, ftruncate,
 *                      fallocate, or any (the Nth fault point whatever its
 *                      call); N from 1; ERR is ENOSPC or EIO.  Unset: count
 *                      only.
 *   CYGPROF_FAULT_LOG  a file (outside the directory) to which the process
 *                      appends "PID POINTS HIT" at exit: the fault points it
 *                      met and whether the fault was injected (0/1)
 * A malformed value is one line on stderr and exit 2, before main.
 *
 * The library removes itself from LD_PRELOAD at load, so nothing the
 * command starts (record's traced program) inherits it.  stdio writes
 * inside libc do not go through write(), so fdopen() of a descriptor under
 * the directory gets a FILE made with fopencookie() whose writes do (and
 * fileno() still gives its descriptor). */
#undef _FILE_OFFSET_BITS /* both the plain and the 64-bit names are defined here */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

enum call {
	C_WRITE,
	C_PWRITE,
	C_PWRITE64,
	C_WRITEV,
	C_PWRITEV,
	C_FSYNC,
	C_FDATASYNC,
	C_MSYNC,
	C_MMAP,
	C_FTRUNCATE,
	C_FALLOCATE,
	C_ANY,
	C_COUNT
};

static const char *const call_names[C_COUNT] = {
	"write", "pwrite", "pwrite64", "writev", "pwritev", "fsync", "fdatasync",
	"msync", "mmap", "ftruncate", "fallocate", "any",
};

static char dir[PATH_MAX];        /* CYGPROF_FAULT_DIR, with a final '/' */
static size_t dirlen;
static int target = -1;           /* the call counted for N; -1: count only */
static unsigned long nth;         /* fail the nth call of target */
static int persist;               /* ... and every later one */
static int fail_errno;
static char log_path[PATH_MAX];
static pid_t self_pid;
static unsigned long points;      /* fault points met (every call) */
static unsigned long seen;        /* calls of target met */
static int hit;                   /* the fault was injected */

/* Mappings of files under the directory, for msync. */
#define MAPS_MAX 256
static struct {
	void *addr;
	size_t len;
} maps[MAPS_MAX];

/* The real functions, looked up on first use. */
#define REAL(name) real_##name
#define DEF_REAL(ret, name, ...)                                                                   \
	static ret (*real_##name)(__VA_ARGS__);                                                    \
	static void need_##name(void)                                                              \
	{                                                                                          \
		if (!real_##name)                                                                  \
			*(void **)&real_##name = dlsym(RTLD_NEXT, #name);                          \
	}

DEF_REAL(ssize_t, write, int, const void *, size_t)
DEF_REAL(ssize_t, pwrite, int, const void *, size_t, off_t)
DEF_REAL(ssize_t, pwrite64, int, const void *, size_t, off64_t)
DEF_REAL(ssize_t, writev, int, const struct iovec *, int)
DEF_REAL(ssize_t, pwritev, int, const struct iovec *, int, off_t)
DEF_REAL(int, fsync, int)
DEF_REAL(int, fdatasync, int)
DEF_REAL(int, msync, void *, size_t, int)
DEF_REAL(void *, mmap, void *, size_t, int, int, int, off_t)
DEF_REAL(void *, mmap64, void *, size_t, int, int, int, off64_t)
DEF_REAL(int, munmap, void *, size_t)
DEF_REAL(int, ftruncate, int, off_t)
DEF_REAL(int, ftruncate64, int, off64_t)
DEF_REAL(int, fallocate, int, int, off_t, off_t)
DEF_REAL(int, fallocate64, int, int, off64_t, off64_t)
DEF_REAL(int, posix_fallocate, int, off_t, off_t)
DEF_REAL(FILE *, fdopen, int, const char *)
DEF_REAL(int, fileno, FILE *)

static void die(const char *what, const char *val)
{
	fprintf(stderr, "libcygprof-fault: bad %s '%s' (CYGPROF_FAULT=CALL:N[+]:ENOSPC|EIO, "
		"CYGPROF_FAULT_DIR=an existing directory)\n", what, val ? val : "");
	_exit(2);
}

/* Whether fd refers to a file under the directory. */
static int under_dir(int fd)
{
	char link[64], path[PATH_MAX];
	ssize_t n;
	int e = errno;

	if (!dirlen || fd < 0)
		return 0;
	snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
	n = readlink(link, path, sizeof path - 1);
	errno = e;
	if (n <= 0)
		return 0;
	path[n] = 0;
	return (size_t)n >= dirlen && !memcmp(path, dir, dirlen);
}

/* A fault point of call c: 1 when it must fail (errno set). */
static int fault(enum call c)
{
	unsigned long n;

	__atomic_add_fetch(&points, 1, __ATOMIC_RELAXED);
	if (target < 0 || (target != C_ANY && target != (int)c))
		return 0;
	n = __atomic_add_fetch(&seen, 1, __ATOMIC_RELAXED);
	if (n == nth || (persist && n > nth)) {
		__atomic_store_n(&hit, 1, __ATOMIC_RELAXED);
		errno = fail_errno;
		return 1;
	}
	return 0;
}

static int fd_fault(enum call c, int fd)
{
	return under_dir(fd) && fault(c);
}

static int map_find(const void *addr)
{
	for (int i = 0; i < MAPS_MAX; i++) {
		const char *a = maps[i].addr;
		if (a && (const char *)addr >= a && (const char *)addr < a + maps[i].len)
			return i;
	}
	return -1;
}

static void map_add(void *addr, size_t len)
{
	for (int i = 0; i < MAPS_MAX; i++) {
		void *none = NULL;
		if (__atomic_compare_exchange_n(&maps[i].addr, &none, addr, 0, __ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE)) {
			maps[i].len = len;
			return;
		}
	}
}

/* ---- the calls ---------------------------------------------------------- */

EXPORT ssize_t write(int fd, const void *buf, size_t n)
{
	need_write();
	if (fd_fault(C_WRITE, fd))
		return -1;
	return REAL(write)(fd, buf, n);
}

EXPORT ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
	need_pwrite();
	if (fd_fault(C_PWRITE, fd))
		return -1;
	return REAL(pwrite)(fd, buf, n, off);
}

EXPORT ssize_t pwrite64(int fd, const void *buf, size_t n, off64_t off)
{
	need_pwrite64();
	if (fd_fault(C_PWRITE64, fd))
		return -1;
	return REAL(pwrite64)(fd, buf, n, off);
}

EXPORT ssize_t writev(int fd, const struct iovec *iov, int n)
{
	need_writev();
	if (fd_fault(C_WRITEV, fd))
		return -1;
	return REAL(writev)(fd, iov, n);
}

EXPORT ssize_t pwritev(int fd, const struct iovec *iov, int n, off_t off)
{
	need_pwritev();
	if (fd_fault(C_PWRITEV, fd))
		return -1;
	return REAL(pwritev)(fd, iov, n, off);
}

EXPORT int fsync(int fd)
{
	need_fsync();
	if (fd_fault(C_FSYNC, fd))
		return -1;
	return REAL(fsync)(fd);
}

EXPORT int fdatasync(int fd)
{
	need_fdatasync();
	if (fd_fault(C_FDATASYNC, fd))
		return -1;
	return REAL(fdatasync)(fd);
}

EXPORT int msync(void *addr, size_t len, int flags)
{
	need_msync();
	if (map_find(addr) >= 0 && fault(C_MSYNC))
		return -1;
	return REAL(msync)(addr, len, flags);
}

EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	int mine = !(flags & MAP_ANONYMOUS) && under_dir(fd);
	void *p;

	need_mmap();
	if (mine && fault(C_MMAP))
		return MAP_FAILED;
	p = REAL(mmap)(addr, len, prot, flags, fd, off);
	if (mine && p != MAP_FAILED)
		map_add(p, len);
	return p;
}

EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off64_t off)
{
	int mine = !(flags & MAP_ANONYMOUS) && under_dir(fd);
	void *p;

	need_mmap64();
	if (mine && fault(C_MMAP))
		return MAP_FAILED;
	p = REAL(mmap64)(addr, len, prot, flags, fd, off);
	if (mine && p != MAP_FAILED)
		map_add(p, len);
	return p;
}

EXPORT int munmap(void *addr, size_t len)
{
	int i = map_find(addr);

	need_munmap();
	if (i >= 0)
		__atomic_store_n(&maps[i].addr, NULL, __ATOMIC_RELEASE);
	return REAL(munmap)(addr, len);
}

EXPORT int ftruncate(int fd, off_t len)
{
	need_ftruncate();
	if (fd_fault(C_FTRUNCATE, fd))
		return -1;
	return REAL(ftruncate)(fd, len);
}

EXPORT int ftruncate64(int fd, off64_t len)
{
	need_ftruncate64();
	if (fd_fault(C_FTRUNCATE, fd))
		return -1;
	return REAL(ftruncate64)(fd, len);
}

EXPORT int fallocate(int fd, int mode, off_t off, off_t len)
{
	need_fallocate();
	if (fd_fault(C_FALLOCATE, fd))
		return -1;
	return REAL(fallocate)(fd, mode, off, len);
}

EXPORT int fallocate64(int fd, int mode, off64_t off, off64_t len)
{
	need_fallocate64();
	if (fd_fault(C_FALLOCATE, fd))
		return -1;
	return REAL(fallocate64)(fd, mode, off, len);
}

EXPORT int posix_fallocate(int fd, off_t off, off_t len)
{
	need_posix_fallocate();
	if (fd_fault(C_FALLOCATE, fd))
		return errno;
	return REAL(posix_fallocate)(fd, off, len);
}

/* ---- stdio: a FILE whose writes go through write() ---------------------- */

#define FILES_MAX 64
static struct {
	FILE *f;
	int fd;
} files[FILES_MAX];

static ssize_t ck_read(void *c, char *buf, size_t n)
{
	return read((int)(intptr_t)c, buf, n);
}

static ssize_t ck_write(void *c, const char *buf, size_t n)
{
	size_t done = 0;

	while (done < n) {
		ssize_t w = write((int)(intptr_t)c, buf + done, n - done);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return done ? (ssize_t)done : -1;
		done += (size_t)w;
	}
	return (ssize_t)done;
}

static int ck_seek(void *c, off64_t *off, int whence)
{
	off64_t r = lseek64((int)(intptr_t)c, *off, whence);

	if (r < 0)
		return -1;
	*off = r;
	return 0;
}

static int ck_close(void *c)
{
	int fd = (int)(intptr_t)c;

	for (int i = 0; i < FILES_MAX; i++)
		if (files[i].f && files[i].fd == fd)
			files[i].f = NULL;
	return close(fd);
}

EXPORT FILE *fdopen(int fd, const char *mode)
{
	static const cookie_io_functions_t io = {ck_read, ck_write, ck_seek, ck_close};
	FILE *f;

	need_fdopen();
	if (!under_dir(fd))
		return REAL(fdopen)(fd, mode);
	f = fopencookie((void *)(intptr_t)fd, mode, io);
	if (!f)
		return NULL;
	for (int i = 0; i < FILES_MAX; i++)
		if (!files[i].f) {
			files[i].f = f;
			files[i].fd = fd;
			return f;
		}
	fclose(f);
	errno = EMFILE;
	return NULL;
}

EXPORT int fileno(FILE *f)
{
	need_fileno();
	for (int i = 0; i < FILES_MAX; i++)
		if (f && files[i].f == f)
			return files[i].fd;
	return REAL(fileno)(f);
}

/* ---- set-up -------------------------------------------------------------- */

/* Take this library out of LD_PRELOAD: what the command starts does not
 * inherit it. */
static void unpreload(void)
{
	const char *pl = getenv("LD_PRELOAD");
	Dl_info info;
	const char *me;
	char *out, *copy, *tok, *save = NULL;
	size_t n = 0;

	if (!pl || !dladdr((void *)unpreload, &info) || !info.dli_fname)
		return;
	me = strrchr(info.dli_fname, '/');
	me = me ? me + 1 : info.dli_fname;
	copy = strdup(pl);
	out = calloc(1, strlen(pl) + 1);
	if (!copy || !out) {
		free(copy);
		free(out);
		return;
	}
	for (tok = strtok_r(copy, ": ", &save); tok; tok = strtok_r(NULL, ": ", &save)) {
		const char *b = strrchr(tok, '/');
		if (!strcmp(b ? b + 1 : tok, me))
			continue;
		n += (size_t)sprintf(out + n, "%s%s", n ? ":" : "", tok);
	}
	if (n)
		setenv("LD_PRELOAD", out, 1);
	else
		unsetenv("LD_PRELOAD");
	free(copy);
	free(out);
}

__attribute__((constructor)) static void fault_init(void)
{
	const char *d = getenv("CYGPROF_FAULT_DIR"), *spec = getenv("CYGPROF_FAULT");
	const char *lg = getenv("CYGPROF_FAULT_LOG");
	char real[PATH_MAX];

	self_pid = getpid();
	unpreload();
	if (!d || !*d || !realpath(d, real) || strlen(real) + 2 > sizeof dir)
		die("CYGPROF_FAULT_DIR", d);
	snprintf(dir, sizeof dir, "%s/", strcmp(real, "/") ? real : "");
	dirlen = strlen(dir);
	if (lg && *lg)
		snprintf(log_path, sizeof log_path, "%s", lg);
	if (spec && *spec) {
		const char *colon = strchr(spec, ':'), *err;
		char *end;
		unsigned long n;
		int c;

		if (!colon || colon[1] < '0' || colon[1] > '9')
			die("CYGPROF_FAULT", spec);
		for (c = 0; c < C_COUNT; c++)
			if (strlen(call_names[c]) == (size_t)(colon - spec) &&
			    !memcmp(call_names[c], spec, (size_t)(colon - spec)))
				break;
		errno = 0;
		n = strtoul(colon + 1, &end, 10);
		if (c == C_COUNT || errno || !n)
			die("CYGPROF_FAULT", spec);
		persist = *end == '+';
		err = end + persist;
		if (!strcmp(err, ":ENOSPC"))
			fail_errno = ENOSPC;
		else if (!strcmp(err, ":EIO"))
			fail_errno = EIO;
		else
			die("CYGPROF_FAULT", spec);
		target = c;
		nth = n;
	}
}

__attribute__((destructor)) static void fault_fini(void)
{
	char line[96];
	int fd, len;

	if (!log_path[0] || getpid() != self_pid)
		return;
	len = snprintf(line, sizeof line, "%d %lu %d\n", (int)self_pid,
		       __atomic_load_n(&points, __ATOMIC_RELAXED), __atomic_load_n(&hit, __ATOMIC_RELAXED));
	fd = open(log_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	need_write();
	if (REAL(write)(fd, line, (size_t)len) < 0)
		(void)0; /* the test sees no line */
	close(fd);
}
