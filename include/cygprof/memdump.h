/* SPDX-License-Identifier: MIT */
/* memdump.h - the memory-dump API: a program says how many bytes each of its
 * subsystems holds, and `cygprof record --memdump` records the figures over
 * time as the counters memdump/<subsystem>.
 *
 * Link with libcygprof-memdump (pkg-config cygprof-memdump).  Without
 * cygprof (the program runs on its own, or is recorded without --memdump)
 * every function is a no-op that costs a few nanoseconds:
 * cygprof_memdump_needs_report() returns 0 and no thread is started.
 *
 * Two ways to report, per subsystem (a name: see "Names" below):
 *  - totals: cygprof_memdump_report_byte_total() sets the figure, usually
 *    from a dumper (a callback the library's dumper thread calls every
 *    interval, all dumpers one after another in the same round, so a
 *    round is one consistent picture), or at any time;
 *  - deltas: cygprof_memdump_report_byte_delta() adds to the figure
 *    (+= sizeof(obj) in a constructor, -= in a destructor), an atomic add.
 * Mixing both on one subsystem is allowed: a total replaces the sum.
 * The figure is an unsigned 64-bit count (every total up to UINT64_MAX is
 * shown as it was reported); deltas are added modulo 2^64, so a figure
 * taken below zero (a -= reported before its +=) reads as a number close
 * to 2^64 until the += arrives.
 *
 * Names: 1 to 47 bytes of valid UTF-8 ("Größe" is fine), NUL-terminated,
 * holding no control character (U+0000 to U+001F, U+007F to U+009F: no
 * newline, no tab, no escape).  A report with any other name ("", "a\nb",
 * a 48-byte name, bytes that are not UTF-8, NULL) is refused: it returns
 * -1 with errno EINVAL and changes nothing, with or without cygprof.
 *
 * Return values: the report functions return 0 when the report was taken
 * (also without cygprof, where there is nothing to do), or -1 with errno
 * set: EINVAL for a refused name, ENOSPC for a new name when all 64
 * subsystems of the process exist.  errno is unchanged on success.
 * Callers written for the earlier void functions need no change.
 *
 * Thread safety: every function may be called from any thread at any time,
 * also from a dumper.  The report functions take no lock (atomic operations
 * only; a subsystem's first report claims one of 64 slots with a
 * compare-and-swap).  When all 64 subsystems of a process exist, reports of
 * a new name are refused (ENOSPC).  The register functions take a mutex internal to
 * the library, never held while dumpers run.
 *
 * fork: the child reports into a table of its own, which starts with the
 * parent's figures at the fork; its dumper thread (if dumpers are
 * registered) is started again in the child.  The dumper thread is detached
 * and blocks all signals; it ends with the process (or when it is the last
 * thread left).
 */
#ifndef CYGPROF_MEMDUMP_H
#define CYGPROF_MEMDUMP_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** A dumper: called on the library's dumper thread every interval with the
 * data it was registered with; it reports totals with
 * cygprof_memdump_report_byte_total(). */
typedef void (*cygprof_memdump_fn)(void *data);

/** Register a dumper (the pair fn, data; at most 64 pairs).  Under cygprof
 * the first registration starts the dumper thread, which calls every
 * registered dumper once per interval (record's --counters interval,
 * 10 ms by default).  Returns 0, or -1 when the list is full or fn is
 * NULL.  Registering a pair twice registers it once. */
int cygprof_memdump_register(cygprof_memdump_fn fn, void *data);

/** Remove the pair fn, data.  When it returns, the dumper is not running
 * and is never called again (called from a dumper, it returns at once and
 * the pair is not called again either).  Returns 0, or -1 when the pair
 * was not registered. */
int cygprof_memdump_unregister(cygprof_memdump_fn fn, void *data);

/** Set the byte total of subsystem.
 * @param subsystem its name (see "Names" above); borrowed for the call only
 * @param bytes the total, 0 to UINT64_MAX
 * @return 0, or -1 with errno EINVAL (a refused name) or ENOSPC (a new
 * name, all 64 subsystems taken) */
int cygprof_memdump_report_byte_total(const char *subsystem, uint64_t bytes);

/** Non-zero when subsystem has no report yet, or its last total is at
 * least one interval old: counting that is expensive can be skipped
 * otherwise.  Always 0 without cygprof, and for a name a report would
 * refuse (errno is left as it was). */
int cygprof_memdump_needs_report(const char *subsystem);

/** Add delta (negative: subtract) to the byte figure of subsystem.
 * @param subsystem its name (see "Names" above); borrowed for the call only
 * @param delta added modulo 2^64
 * @return 0, or -1 with errno EINVAL (a refused name) or ENOSPC (a new
 * name, all 64 subsystems taken) */
int cygprof_memdump_report_byte_delta(const char *subsystem, int64_t delta);

#ifdef __cplusplus
}
#endif
#endif
