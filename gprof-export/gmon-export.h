/* SPDX-License-Identifier: MIT */
/* gmon-export.h - GNU gmon.out files (what `gprof PROG gmon.out` reads) from a
 * capture's exact call trees.
 *
 * One file per recorded executable: every thread of every process whose
 * image is that executable (fork children, and exec'd images of the same
 * file) is summed.  All addresses written are those of the executable file
 * (the load bias of each process is removed), so gprof finds them in the
 * executable's symbol table whether it is PIE or not.
 *
 *  - arcs (tag 1): from_pc = the call site (the byte before the return
 *    address, inside the caller's call instruction), self_pc = the callee's
 *    entry, count = calls, for every call between two functions of the
 *    executable.  Calls from elsewhere (libc, a thread's start, another
 *    object) are left out: gprof shows those functions as <spontaneous>.
 *  - histogram (tag 0): one record over [lowest, highest) function address
 *    of the executable, 2 bytes per bin, holding every function's exact self
 *    time as ticks of prof_rate Hz spread over the bins inside the function.
 *    The rate is the highest of 1, 2, 5 x 10^k Hz (at most 1 GHz) at which no
 *    16-bit bin overflows; ticks are rounded so that each function is within
 *    one tick of its exact self time and the sum within half a tick.
 *
 * Error convention: negative errno or CYGPROF_E_*; nothing here prints or
 * exits.
 */
#ifndef CYGPROF_GMON_EXPORT_H
#define CYGPROF_GMON_EXPORT_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

#include "cygprof/cygprof-capture.h"

/* One function of an executable, in file (link-time) addresses. */
struct gmon_fn {
	uint64_t addr;
	uint64_t end;     /* one past its last byte; addr when unknown */
	uint64_t self_ns; /* exact self time */
};

struct gmon_arc {
	uint64_t from_pc; /* inside the caller */
	uint64_t self_pc; /* the callee's entry */
	uint64_t count;   /* split into several records above UINT32_MAX */
};

struct gmon_hist {
	uint64_t low_pc, high_pc; /* high_pc - low_pc = 2 * nbins */
	uint32_t nbins;
	uint32_t rate;            /* ticks per second; 0 when no time at all */
	uint16_t *bins;
	uint64_t ticks;           /* sum of the bins */
};

/* Everything recorded for one executable. */
struct gmon_image {
	char *exe;            /* path of the executable */
	uint32_t first_pid;   /* pid of its first process image */
	uint32_t first_proc;  /* capture index of that process */
	size_t nprocs;        /* process images summed */
	struct gmon_fn *fns;  /* sorted by addr, one per address */
	size_t nfns;
	struct gmon_arc *arcs; /* sorted by (from_pc, self_pc), merged */
	size_t narcs;
	uint64_t self_ns;     /* sum of the functions' self time */
};

/** Build the histogram of fns (sorted by addr, non-overlapping).
 * @param[out] h owned: gmon_hist_free().  n == 0 gives an empty histogram
 * (nbins 0).  Returns 0 or -ENOMEM. */
int gmon_hist_build(const struct gmon_fn *fns, size_t n, struct gmon_hist *h);
void gmon_hist_free(struct gmon_hist *h);

/** Write a gmon.out (header, the histogram when it has bins, the arcs) to f,
 * an open stream: the caller creates the file (cygprof creates a new one
 * and renames it into place, see cli_output_open()) and closes it.
 * Returns 0, or -EIO when a write failed. */
int gmon_write_file(FILE *f, const struct gmon_hist *h, const struct gmon_arc *arcs,
		    size_t narcs);

struct view;

/** Gather the executables of a view of a capture, ordered by their first
 * process (functions, self times and call sites from the view's trees).
 * Executables without any recorded function of their own still appear
 * (nfns == 0).  @param[out] v owned: gmon_images_free(). */
int gmon_collect(struct view *view, struct gmon_image **v, size_t *n);
void gmon_images_free(struct gmon_image *v, size_t n);

/** The file name of image k of n: path for the first image, "path.PID"
 * (PID of the image's first process) for the others, "path.PID.K" when two
 * images share a pid.  @param[out] out owned: free(). */
int gmon_file_name(const char *path, const struct gmon_image *v, size_t k, char **out);

#endif
