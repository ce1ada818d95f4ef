/* SPDX-License-Identifier: MIT */
/* readfile.h - the whole of a small file whose size is not known in
 * advance (/proc/PID/maps, mountinfo, cmdline), in one buffer.  Nothing
 * here prints or exits. */
#ifndef CYGPROF_READFILE_H
#define CYGPROF_READFILE_H

#include <stddef.h>

/* Read path to its end: 0 with *buf owned (free()), *len bytes followed
 * by a NUL (not counted), or -errno (nothing to free). */
int read_file(const char *path, char **buf, size_t *len);

#endif
