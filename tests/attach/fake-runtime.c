/* SPDX-License-Identifier: MIT */
/* fake-runtime.c - a stand-in for libcygprof-cyg.so that exports the names
 * of the attach interface (/work/notes/attach-iface.md, docs/attach.md) and
 * logs what the injector asks of it, to test the injection before (and
 * apart from) the real runtime: record --attach with CYGPROF_RUNTIME
 * pointing here.  The log is /tmp/cygprof-fakert-PID.log (PID: the
 * process attached to):
 *   attach_fd SIZE MAGIC      the mapping's size and first 8 bytes (hex)
 *   seed TID N FN...          each seed, outermost first (hex addresses)
 *   detach ENTERS EXITS       the hook calls seen while attached
 * Nothing it logs goes into the capture: that stays empty. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

EXPORT int cygprof_attach_fd(int fd);
EXPORT int cygprof_attach_seed(int tid, const unsigned long *fns, unsigned n);
EXPORT int cygprof_detach(void);
EXPORT void __cyg_profile_func_enter(void *fn, void *site);
EXPORT void __cyg_profile_func_exit(void *fn, void *site);

EXPORT int cygprof_attach_state;
static unsigned long enters, exits;
static int attached;

static void logf_(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void logf_(const char *fmt, ...)
{
	char path[64], line[4096];
	va_list ap;
	int fd, n;

	snprintf(path, sizeof path, "/tmp/cygprof-fakert-%d.log", (int)getpid());
	va_start(ap, fmt);
	n = vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	(void)!write(fd, line, n < (int)sizeof line ? (size_t)n : sizeof line - 1);
	close(fd);
}

EXPORT int cygprof_attach_fd(int fd)
{
	struct stat st;
	unsigned long long magic = 0;

	if (cygprof_attach_state == 1)
		return -EBUSY;
	if (fstat(fd, &st) < 0)
		return -errno;
	void *m = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED)
		return -errno;
	memcpy(&magic, m, sizeof magic);
	munmap(m, 4096);
	close(fd);
	logf_("attach_fd %lld %llx\n", (long long)st.st_size, magic);
	attached = 1;
	cygprof_attach_state = 1;
	return 0;
}

EXPORT int cygprof_attach_seed(int tid, const unsigned long *fns, unsigned n)
{
	char line[256 * 20 + 64];
	size_t len;
	unsigned i;

	if (n > 256)
		return -EINVAL;
	len = (size_t)snprintf(line, sizeof line, "seed %d %u", tid, n);
	for (i = 0; i < n; i++)
		len += (size_t)snprintf(line + len, sizeof line - len, " %lx", fns[i]);
	logf_("%s\n", line);
	return 0;
}

EXPORT int cygprof_detach(void)
{
	logf_("detach %lu %lu\n", __atomic_load_n(&enters, __ATOMIC_RELAXED),
	      __atomic_load_n(&exits, __ATOMIC_RELAXED));
	attached = 0;
	cygprof_attach_state = 2;
	return 0;
}

EXPORT void __cyg_profile_func_enter(void *fn, void *site)
{
	(void)fn;
	(void)site;
	if (attached)
		__atomic_add_fetch(&enters, 1, __ATOMIC_RELAXED);
}

EXPORT void __cyg_profile_func_exit(void *fn, void *site)
{
	(void)fn;
	(void)site;
	if (attached)
		__atomic_add_fetch(&exits, 1, __ATOMIC_RELAXED);
}
