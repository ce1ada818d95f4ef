/* SPDX-License-Identifier: MIT */
/* annotate.h - figures per source line of a capture (cygprof annotate).
 *
 * For each source line (file as DWARF names it, joined to the compilation
 * directory when relative and normalized):
 *   calls        instrumented calls made from the line: the call-site
 *                entries (get_sites) whose return address - 1 maps to it;
 *   total_ns     the inclusive time of those calls, recursion counted once:
 *                a site's time counts only when no outer frame on its
 *                path was called from the same line (analysis/inclusive.h);
 *   entries      entries of the functions defined there: the calls of the
 *                tree nodes of a function, at its DW_AT_decl_line (or the
 *                line of its entry address);
 *   self_ns      the self time of the functions defined there (their own
 *                code's time, their callees' left out), at the same line:
 *                what the default hottest lines are ranked by;
 *   allocations, alloc_bytes
 *                allocations made from the line (record --memory): the
 *                innermost return-address frame of each allocation's stack
 *                past the allocator's own frames, or the line of the
 *                function frame when there is none;
 *   samples, sampled_ns
 *                perf samples (record --sample, import-perf) whose
 *                innermost frame is on the line: the file:line of the
 *                sample's own instruction (CYGPROF_FRAME_IP), in inlined code
 *                the inlined function's line (view_stack() with VIEW_LINES),
 *                and the sum of their weight_ns.  Samples in code without
 *                line information (an uninstrumented libc) are on no line:
 *                they count in unresolved_samples only; samples in
 *                cygprof's runtime (psamp_stack()) are on no line either:
 *                they count in overhead_samples only.
 * Lines come from the objects' DWARF, located through debuginfo.h, read
 * through the view (view.h).
 *
 * Error convention: negative errno or CYGPROF_E_*; nothing here exits. */
#ifndef CYGPROF_ANNOTATE_H
#define CYGPROF_ANNOTATE_H

#include <stddef.h>
#include <stdint.h>

#include "cygprof/cygprof-capture.h"

struct annotate_line {
	uint32_t line;
	uint64_t calls, entries, total_ns, allocations, alloc_bytes, samples;
	uint64_t sampled_ns;
	uint64_t self_ns;
};

/* A function the samples hit in a file: the innermost frame's function
 * (the inlined one in inlined code). */
struct annotate_fn {
	char *name;
	uint64_t samples, sampled_ns;
};

struct annotate_file {
	char *path;
	struct annotate_line *lines; /* sorted by line, only non-zero ones */
	size_t nlines;
	/* sums over the lines (total_ns: the largest line's, times overlap) */
	uint64_t calls, entries, max_ns, allocations, alloc_bytes, samples, sampled_ns;
	uint64_t self_ns;
	struct annotate_fn *fns; /* most samples first (then by name); none: nfns 0 */
	size_t nfns;
};

/* An instrumented function entered in the capture, where it is defined:
 * its source range from DWARF (srcline_function_lines(): first is its
 * declaration line, last the last line of its own code in that file; first
 * == last when only the declaration is known).  Functions of one name, file
 * and line in several processes are one. */
struct annotate_func {
	char *name;              /* as report names it */
	const char *path;        /* its file's path (the annotate_file's) */
	uint32_t first, last;
	uint64_t calls, self_ns;
};

struct annotate {
	struct annotate_file *files; /* sorted by path */
	size_t nfiles;
	struct annotate_func *funcs; /* sorted by name, then path and line */
	size_t nfuncs;
	int memory;              /* the capture has memory events */
	uint64_t total_calls;    /* all recorded calls */
	uint64_t total_ns;       /* inclusive time of the threads' outermost calls */
	uint64_t total_self_ns;  /* the self time of every call (what self_ns shares) */
	uint64_t total_allocations, total_alloc_bytes;
	uint64_t unresolved_calls; /* calls whose site has no line */
	uint64_t unresolved_allocations;
	int sampled;             /* the capture has perf samples */
	uint64_t total_samples, total_sampled_ns; /* all of them */
	uint64_t unresolved_samples, unresolved_sampled_ns; /* on no line */
	uint64_t overhead_samples, overhead_sampled_ns; /* in cygprof's runtime */
};

struct view;

/** Compute the figures of every line of a view of a capture (the lines come
 * through the view's source-line reader and debug-file search).
 * @param[out] out owned: annotate_free(). */
int annotate_load(struct view *v, struct annotate **out);
void annotate_free(struct annotate *a);

#endif
