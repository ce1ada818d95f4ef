/* SPDX-License-Identifier: MIT */
/* gmon-export.h - GNU gmon.out files (what `gprof PROG gmon.out` reads) from a
 * capture's exact call trees and its perf samples.
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
 *  - histogram (tag 0), 2 bytes per bin, from one of two sources:
 *    * a capture without perf samples: one record over [lowest, highest)
 *      function address of the executable, holding every function's exact
 *      self time as ticks of prof_rate Hz spread over the bins inside the
 *      function.  The rate is the highest of 1, 2, 5 x 10^k Hz (at most
 *      1 GHz) at which no 16-bit bin overflows; ticks are rounded so that
 *      each function is within one tick of its exact self time and the sum
 *      within half a tick (gmon_hist_build());
 *    * a capture with perf samples (record --sample, import-perf): one tick
 *      in the bin of the instruction of every sample whose innermost frame
 *      is in the executable (as glibc's profil() counts), over [lowest,
 *      highest) of the functions and those instructions, at the sampling
 *      rate: prof_rate = the rate record asked for (meta "sample_hz"), else
 *      1e9 / the mean weight_ns of the capture's samples (import-perf: so
 *      ticks / prof_rate is their sampled time), else GMON_DEFAULT_RATE
 *      when no sample has a weight.  A bin past 65535 ticks continues in
 *      further records over the same range, which gprof adds
 *      (gmon_hist_build_samples()).
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

/* A sampled instruction of an executable (file address) and its samples. */
struct gmon_pc {
	uint64_t pc;
	uint64_t count;
};

/* perf samples when there is no weight to take the rate from: perf
 * record's default frequency. */
#define GMON_DEFAULT_RATE 4000u

struct gmon_hist {
	uint64_t low_pc, high_pc; /* high_pc - low_pc = 2 * nbins */
	uint32_t nbins;
	uint32_t rate;            /* ticks per second; 0 when no time at all */
	uint16_t *bins;           /* the first record's (saturated at 65535) */
	uint64_t *counts;         /* NULL, or the whole count of each bin: as
				   * many records as the largest needs */
	uint64_t ticks;           /* sum of the bins (of counts when set) */
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
	/* perf samples (the capture has some when sampled is set) */
	int sampled;
	uint32_t sample_rate;  /* the histogram's rate: see above */
	struct gmon_pc *pcs;   /* the samples in the executable, sorted by pc, merged */
	size_t npcs;
	uint64_t samples, sampled_ns; /* theirs: count and sum of weight_ns */
};

/** Build the histogram of fns (sorted by addr, non-overlapping).
 * @param[out] h owned: gmon_hist_free().  n == 0 gives an empty histogram
 * (nbins 0).  Returns 0 or -ENOMEM. */
int gmon_hist_build(const struct gmon_fn *fns, size_t n, struct gmon_hist *h);
/** Build the histogram of perf samples: one tick per sample in the bin of
 * its pc, over the range of fns (sorted by addr) and pcs (sorted by pc), at
 * rate Hz.  @param[out] h owned: gmon_hist_free(); h->counts is set.
 * Nothing at all gives an empty histogram.  Returns 0, -ENOMEM or -E2BIG. */
int gmon_hist_build_samples(const struct gmon_fn *fns, size_t n, const struct gmon_pc *pcs,
			    size_t npcs, uint32_t rate, struct gmon_hist *h);
/** The histogram of an image: from its samples when the capture has any,
 * else from its functions' exact self times. */
int gmon_image_hist(const struct gmon_image *img, struct gmon_hist *h);
void gmon_hist_free(struct gmon_hist *h);

/** Write a gmon.out (header, the histogram when it has bins, the arcs) to f,
 * an open stream: the caller creates the file (cygprof creates a new one
 * and renames it into place, see cli_output_open()) and closes it.
 * Returns 0, or -EIO when a write failed. */
int gmon_write_file(FILE *f, const struct gmon_hist *h, const struct gmon_arc *arcs,
		    size_t narcs);

struct view;

/** Gather the executables of a view of a capture, ordered by their first
 * process (functions, self times and call sites from the view's trees, the
 * instructions of perf samples from its samples).  Executables without any
 * recorded function of their own still appear (nfns == 0).
 * @param[out] v owned: gmon_images_free(). */
int gmon_collect(struct view *view, struct gmon_image **v, size_t *n);
void gmon_images_free(struct gmon_image *v, size_t n);

/** The file name of image k of n: path for the first image, "path.PID"
 * (PID of the image's first process) for the others, "path.PID.K" when two
 * images share a pid.  @param[out] out owned: free(). */
int gmon_file_name(const char *path, const struct gmon_image *v, size_t k, char **out);

#endif
