/* SPDX-License-Identifier: MIT */
/* procmaps.h - the file-backed mappings of a process, as its
 * /proc/PID/maps lists them: the one parser of that text, for the
 * collector's maps snapshots (symbols/), and record --attach's look at a
 * running process (collector/attach-*.c).  Nothing here prints or exits. */
#ifndef CYGPROF_PROCMAPS_H
#define CYGPROF_PROCMAPS_H

#include <stddef.h>
#include <stdint.h>

/* One file-backed mapping, as a line of /proc/PID/maps gives it. */
struct procmap {
	uint64_t start, end, offset;
	unsigned exec : 1;
	unsigned deleted : 1; /* the kernel said "(deleted)": unlinked since mapped */
	char *path; /* owned by the list, without the " (deleted)" mark */
};

struct procmaps {
	struct procmap *v;
	size_t n;
};

/** Parse the text of /proc/PID/maps (len bytes, no NUL needed); keeps
 * only mappings backed by a file (path starting with '/').  A path the
 * kernel marks " (deleted)" is kept without the mark, with deleted set;
 * trailing spaces and '\r' are not part of a path; a newline the kernel
 * wrote as "\012" is a newline again.  Lines that do not
 * parse are skipped.  Returns 0 or -errno (-EINVAL, -ENOMEM). */
int procmaps_parse(const char *text, size_t len, struct procmaps *out);

/** Read and parse /proc/PID/maps.  Returns 0 or -errno (-ENOENT: no such
 * process). */
int procmaps_read(int pid, struct procmaps *out);

void procmaps_release(struct procmaps *m);

/** The mapping's path as the kernel writes it (and readlink() of
 * /proc/PID/exe gives it): with " (deleted)" when deleted.  In buf when
 * it is marked (truncated to len), else the path itself. */
const char *procmap_kernel_path(const struct procmap *m, char *buf, size_t len);

#endif
