/* SPDX-License-Identifier: MIT */
/* format.h - numbers as people read them: byte counts and durations, in
 * the forms cygprof's commands print (each form is a named style, so that
 * every output keeps its exact text).  Each writes into the caller's
 * buffer (32 bytes are enough for any of them) and returns it. */
#ifndef CYGPROF_FORMAT_H
#define CYGPROF_FORMAT_H

#include <stddef.h>
#include <stdint.h>

enum fmt_bytes_style {
	/* "512 B", "1.5 KiB", "2.0 MiB", ... "TiB": the largest unit of
	 * which there is at least one (memory, counters) */
	FMT_BYTES_IEC,
	/* "10239 B", "10.0 KiB", "10.0 MiB", "10.0 GiB": the largest unit of
	 * which there are at least ten (top) */
	FMT_BYTES_IEC10,
	/* "10239 bytes", "10.0 KB", "10.0 MB": the same with KB and MB
	 * meaning KiB and MiB (record's closing line) */
	FMT_BYTES_KB10,
	/* "1000", "4K", "16G": exact, with the largest of K, M, G, T, P, E
	 * (powers of 1024) that divides it, as the options read sizes back
	 * (cli_parse_size()) */
	FMT_BYTES_EXACT,
};

/* b bytes in style s. */
const char *fmt_bytes(char *buf, size_t len, uint64_t b, enum fmt_bytes_style s);

/* FMT_BYTES_IEC of a real number of bytes, negative too ("-1.5 KiB";
 * under 1 KiB "%.0f B"): a counter's value or a point of its scale. */
const char *fmt_bytes_real(char *buf, size_t len, double v);

/* A duration as uftrace prints it: "  1.234 us", "  5.678 ms", "  1.000  s"
 * (10 characters while under 1000 s). */
const char *fmt_dur(char *buf, size_t len, uint64_t ns);

#endif
