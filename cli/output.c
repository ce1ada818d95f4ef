/* SPDX-License-Identifier: MIT */
/* output.c - the files cygprof commands write: what may be replaced at the
 * target path, and writing through a new temporary file renamed onto it.
 *
 * No symbolic link is ever followed and no existing file is ever opened for
 * writing: the data goes into a file created exclusively (mkostemp) in the
 * target's directory, and rename(2) puts that file in place of whatever
 * directory entry is there.  A link planted at the target is replaced, its
 * target untouched; a FIFO is never opened (it would block).  Before that,
 * cli_output_check() refuses to replace what is not an earlier output of
 * the same kind (see cli.h). */
#include "config.h"

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "cli.h"

/* Open an existing file to look at its first bytes: never follows a link,
 * never blocks (a FIFO put there meanwhile), only a regular file. */
static int open_peek(const char *path)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	return fd;
}

/* Whether the first len bytes of the file hold needle (len small). */
/* A regular file that is a cygprof capture (a damaged or truncated one
 * too, by its magic near the start); never follows a link or blocks. */
int cli_probe_capture(const char *path)
{
	return cygprof_capture_probe(path);
}

/* Whether the file starts with magic (len bytes). */
static int probe_magic(const char *path, const char *magic, size_t len)
{
	char b[64]; /* the longest mark, OUT_MAGIC_HTML, is 38 bytes */
	ssize_t n;
	int fd;

	if (len > sizeof b)
		return 0;
	fd = open_peek(path);
	if (fd == -EINVAL)
		return 0;
	if (fd < 0)
		return fd;
	n = pread(fd, b, len, 0);
	close(fd);
	return n == (ssize_t)len && !memcmp(b, magic, len);
}

/* Whether the file reads as folded stacks, as cygprof writes them (no mark
 * of their own: "frame;frame;... COUNT" lines): every whole line of its
 * first 64 KiB is a non-empty stack, one space and a decimal count.  An
 * empty file holds nothing to lose and is replaced too. */
static int probe_folded(const char *path)
{
	static char b[65536];
	ssize_t n;
	size_t i, start = 0, lines = 0;
	int fd = open_peek(path);

	if (fd == -EINVAL)
		return 0;
	if (fd < 0)
		return fd;
	n = pread(fd, b, sizeof b, 0);
	close(fd);
	if (n < 0)
		return 0;
	if (n == 0)
		return 1;
	for (i = 0; i < (size_t)n; i++) {
		size_t j;

		if (b[i] != '\n')
			continue;
		/* b[start..i) is one line: STACK ' ' DIGITS */
		for (j = i; j > start && b[j - 1] >= '0' && b[j - 1] <= '9'; j--)
			;
		if (j == i || j < start + 2 || b[j - 1] != ' ')
			return 0;
		lines++;
		start = i + 1;
	}
	/* a last line without its newline only when the whole file was read */
	if (start < (size_t)n && (size_t)n < sizeof b)
		return 0;
	return lines > 0;
}

static int probe_kind(const char *path, enum out_kind kind)
{
	switch (kind) {
	case OUT_CAPTURE:
		return cli_probe_capture(path);
	case OUT_GMON:
		return probe_magic(path, "gmon", 4);
	case OUT_CHROME:
		return probe_magic(path, OUT_MAGIC_CHROME, sizeof(OUT_MAGIC_CHROME) - 1);
	case OUT_CALLGRIND:
		return probe_magic(path, OUT_MAGIC_CALLGRIND, sizeof(OUT_MAGIC_CALLGRIND) - 1);
	case OUT_PPROF:
		return probe_magic(path, OUT_MAGIC_PPROF, sizeof(OUT_MAGIC_PPROF) - 1);
	case OUT_PERFETTO:
		return probe_magic(path, OUT_MAGIC_PERFETTO, sizeof(OUT_MAGIC_PERFETTO) - 1);
	case OUT_HTML:
		return probe_magic(path, OUT_MAGIC_HTML, sizeof(OUT_MAGIC_HTML) - 1);
	case OUT_TEXT:
		return probe_folded(path);
	default:
		/* what cygprof writes as SVG starts so */
		return probe_magic(path, "<?xml version=\"1.0\"", 19);
	}
}

static const char *const kind_what[] = {
	[OUT_CAPTURE] = "a cygprof capture",
	[OUT_GMON] = "a gmon.out file",
	[OUT_SVG] = "an SVG file",
	[OUT_CHROME] = "a Chrome trace written by cygprof",
	[OUT_CALLGRIND] = "a callgrind file",
	[OUT_PPROF] = "a pprof profile written by cygprof",
	[OUT_HTML] = "an HTML report written by cygprof",
	[OUT_PERFETTO] = "a Perfetto trace written by cygprof",
	[OUT_TEXT] = "folded stacks",
};

/* The policy: 0 nothing there, 1 an output of kind (or -f and a regular file
 * or link): replace it; -1 refused, with the reason in why. */
static int check(const char *path, enum out_kind kind, int force, const struct stat *avoid,
		 char *why, size_t len)
{
	struct stat st;
	int r;

	if (lstat(path, &st)) {
		if (errno == ENOENT)
			return 0;
		snprintf(why, len, "%s", strerror(errno));
		return -1;
	}
	if (avoid && st.st_dev == avoid->st_dev && st.st_ino == avoid->st_ino) {
		snprintf(why, len, "is the program being recorded; not replaced, even with -f "
			 "(a mistake?)");
		return -1;
	}
	if (S_ISDIR(st.st_mode)) {
		snprintf(why, len, "is a directory; not replaced");
		return -1;
	}
	if (S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ||
	    S_ISSOCK(st.st_mode)) {
		snprintf(why, len, "is a %s; not replaced, even with -f",
			 S_ISFIFO(st.st_mode) ? "FIFO" : S_ISSOCK(st.st_mode) ? "socket"
			 : S_ISCHR(st.st_mode) ? "character device" : "block device");
		return -1;
	}
	if (S_ISLNK(st.st_mode)) {
		if (force)
			return 1; /* the link itself is replaced; it is never followed */
		snprintf(why, len, "is a symbolic link; not followed, not replaced (-f replaces "
			 "the link itself)");
		return -1;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(why, len, "is not a regular file; not replaced");
		return -1;
	}
	if (force)
		return 1;
	r = probe_kind(path, kind);
	if (r == 1)
		return 1;
	if (r < 0)
		snprintf(why, len, "%s", strerror(-r));
	else
		snprintf(why, len, "exists and is not %s; not replaced (-f replaces it)",
			 kind_what[kind]);
	return -1;
}

int cli_output_check(const char *cmd, const char *path, enum out_kind kind, int force,
		     const struct stat *avoid)
{
	char why[256];
	int r = check(path, kind, force, avoid, why, sizeof(why));

	if (r < 0)
		cli_die(1, "%s: %s: %s", cmd, path, why);
	return r;
}

/* ---- the temporary files of outputs being written ------------------------
 *
 * An output killed by SIGINT, SIGTERM or SIGHUP before its rename leaves no
 * hidden .cygprof-XXXXXX file: the handler unlinks the temporary files of
 * the outputs still open (unlink is async-signal-safe), then dies of the
 * signal as it would have.  A signal that was ignored when the first output
 * opened (nohup) stays ignored. */
#define PENDING_MAX 8
static char *volatile pending[PENDING_MAX];

static void pending_cleanup(int sig)
{
	for (size_t i = 0; i < PENDING_MAX; i++) {
		char *t = pending[i];
		if (t)
			unlink(t);
	}
	signal(sig, SIG_DFL);
	raise(sig);
}

static void pending_handlers(void)
{
	static int done;
	static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};

	if (done)
		return;
	done = 1;
	for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++) {
		struct sigaction sa, old;

		if (sigaction(sigs[i], NULL, &old) || old.sa_handler != SIG_DFL)
			continue; /* ignored, or handled by the command */
		memset(&sa, 0, sizeof sa);
		sa.sa_handler = pending_cleanup;
		sigemptyset(&sa.sa_mask);
		sigaction(sigs[i], &sa, NULL);
	}
}

static void pending_set(char *tmp, char *was)
{
	for (size_t i = 0; i < PENDING_MAX; i++)
		if (pending[i] == was) {
			pending[i] = tmp;
			return;
		}
}

FILE *cli_output_open(struct cli_output *o, const char *cmd, const char *path,
		      enum out_kind kind, int force)
{
	const char *slash;
	size_t dl;
	int fd;

	memset(o, 0, sizeof(*o));
	o->cmd = cmd;
	o->kind = kind;
	o->force = force;
	o->existed = cli_output_check(cmd, path, kind, force, NULL);
	slash = strrchr(path, '/');
	dl = slash ? (size_t)(slash - path) + 1 : 0;
	o->path = strdup(path);
	o->tmp = malloc(dl + sizeof(".cygprof-XXXXXX"));
	if (!o->path || !o->tmp)
		cli_die(1, "out of memory");
	memcpy(o->tmp, path, dl);
	memcpy(o->tmp + dl, ".cygprof-XXXXXX", sizeof(".cygprof-XXXXXX"));
	/* the temporary file exists only once it is registered for removal:
	 * a signal between its creation and its registration waits */
	pending_handlers();
	{
		sigset_t block, old;
		int e;

		sigemptyset(&block);
		sigaddset(&block, SIGINT);
		sigaddset(&block, SIGTERM);
		sigaddset(&block, SIGHUP);
		sigprocmask(SIG_BLOCK, &block, &old);
		fd = mkostemp(o->tmp, O_CLOEXEC);
		e = errno;
		if (fd >= 0)
			pending_set(o->tmp, NULL);
		sigprocmask(SIG_SETMASK, &old, NULL);
		if (fd < 0) {
			free(o->tmp);
			o->tmp = NULL;
			cli_die(1, "%s: %s: %s", cmd, path, strerror(e));
		}
	}
	o->f = fdopen(fd, "wb");
	if (!o->f) {
		close(fd);
		cli_output_abort(o);
		cli_die(1, "out of memory");
	}
	return o->f;
}

void cli_output_abort(struct cli_output *o)
{
	if (o->f)
		fclose(o->f);
	o->f = NULL;
	if (o->tmp) {
		pending_set(NULL, o->tmp);
		unlink(o->tmp);
	}
	free(o->tmp);
	free(o->path);
	o->tmp = o->path = NULL;
}

/* Put tmp in place of path: without replacing anything when nothing was
 * there at the check (something that appeared since is checked again). */
static int place(struct cli_output *o, char *why, size_t len)
{
	int r;

	if (o->existed) {
		r = check(o->path, o->kind, o->force, NULL, why, len);
		if (r < 0)
			return -1;
		if (!rename(o->tmp, o->path))
			return 0;
		snprintf(why, len, "%s", strerror(errno));
		return -1;
	}
	if (!renameat2(AT_FDCWD, o->tmp, AT_FDCWD, o->path, RENAME_NOREPLACE))
		return 0;
	if (errno == EEXIST) {
		o->existed = 1;
		return place(o, why, len);
	}
	if (errno != EINVAL && errno != ENOSYS) {
		snprintf(why, len, "%s", strerror(errno));
		return -1;
	}
	/* a file system without RENAME_NOREPLACE: a hard link never replaces */
	if (!link(o->tmp, o->path)) {
		unlink(o->tmp);
		return 0;
	}
	if (errno == EEXIST) {
		o->existed = 1;
		return place(o, why, len);
	}
	if (!rename(o->tmp, o->path)) /* nor hard links (vfat): checked just before */
		return 0;
	snprintf(why, len, "%s", strerror(errno));
	return -1;
}

void cli_output_commit(struct cli_output *o)
{
	char why[256] = "";
	mode_t mask = umask(0);
	int fd = fileno(o->f), err = 0;

	umask(mask);
	errno = 0;
	/* mkostemp made it 0600: give it the mode a new file would have */
	if (fflush(o->f) || ferror(o->f) || fchmod(fd, 0666 & ~mask) || fsync(fd))
		err = errno ? errno : EIO;
	if (fclose(o->f) && !err)
		err = errno ? errno : EIO;
	o->f = NULL;
	if (err)
		snprintf(why, sizeof(why), "%s", strerror(err));
	else if (!place(o, why, sizeof(why))) {
		pending_set(NULL, o->tmp);
		free(o->tmp);
		free(o->path);
		o->tmp = o->path = NULL;
		return;
	}
	{
		char *path = o->path;

		o->path = NULL;
		cli_output_abort(o);
		cli_die(1, "%s: %s: %s", o->cmd, path, why);
	}
}

/* ---- one writer per capture path ------------------------------------------
 *
 * The lock is an abstract unix socket named after the path's directory
 * (device and inode) and a hash of its last component: binding it is
 * atomic, it creates no file, and it is gone when its holder exits, however
 * it ends.  The socket is close-on-exec: the traced program does not hold
 * it. */
void cli_output_lock(const char *cmd, const char *path)
{
	const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
	char dir[4096];
	struct sockaddr_un sa;
	struct stat st;
	uint64_t h = 1469598103934665603ULL;
	socklen_t len;
	int fd, n;

	if (slash) {
		size_t dl = slash == path ? 1 : (size_t)(slash - path);
		if (dl >= sizeof dir)
			return; /* no lock rather than a wrong one */
		memcpy(dir, path, dl);
		dir[dl] = 0;
	} else {
		strcpy(dir, ".");
	}
	if (stat(dir, &st))
		return; /* the output's own check says what is wrong */
	for (const char *c = base; *c; c++)
		h = (h ^ (unsigned char)*c) * 1099511628211ULL;
	memset(&sa, 0, sizeof sa);
	sa.sun_family = AF_UNIX;
	n = snprintf(sa.sun_path + 1, sizeof sa.sun_path - 1, "cygprof-output/%llx/%llx/%016llx",
		     (unsigned long long)st.st_dev, (unsigned long long)st.st_ino,
		     (unsigned long long)h);
	len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return;
	if (bind(fd, (struct sockaddr *)&sa, len) == 0)
		return; /* held until this process exits */
	if (errno == EADDRINUSE)
		cli_die(1, "%s: %s: another cygprof is writing it; not started", cmd, path);
	close(fd);
}

const char *cli_size_refusal(char *buf, size_t len, const char *cmd, const char *file,
			     const char *what, uint64_t est_bytes, const char *count,
			     const char *past, const char *fix)
{
	snprintf(buf, len, "%s: %s: %s of about %.1f GB (%s), past %s: %s, or give -f to write "
		 "it anyway", cmd, file, what, (double)est_bytes / 1e9, count, past, fix);
	return buf;
}
