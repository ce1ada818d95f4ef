/* SPDX-License-Identifier: MIT */
/* out-kind.h - the kinds of file cygprof writes, and the first bytes that
 * mark each kind: the writers (export/, cli/) start their files with the
 * mark, and the output-file safety of cli/output.c replaces a file only
 * when it carries the mark of the kind being written (or with --force). */
#ifndef CYGPROF_OUT_KIND_H
#define CYGPROF_OUT_KIND_H

enum out_kind {
	OUT_CAPTURE,   /* a cygprof capture (record -o) */
	OUT_GMON,      /* a gmon.out file: starts with "gmon" */
	OUT_SVG,       /* an SVG drawing: starts with '<?xml version="1.0"' */
	OUT_CHROME,    /* a Chrome trace: starts with OUT_MAGIC_CHROME */
	OUT_CALLGRIND, /* a callgrind file: OUT_MAGIC_CALLGRIND */
	OUT_PPROF,     /* a gzip'd pprof profile: OUT_MAGIC_PPROF (gzip header
			* with no time and the name cygprof-profile.pb) */
	OUT_HTML,      /* cygprof's HTML report: OUT_MAGIC_HTML */
	OUT_PERFETTO,  /* a Perfetto protobuf trace: OUT_MAGIC_PERFETTO */
	OUT_TEXT,      /* folded stacks: no mark, recognised by their lines
			* ("STACK COUNT", cli/output.c probe_folded()) */
};

/* How each marked kind starts, so that a later run may replace it. */
#define OUT_MAGIC_CHROME "{\"traceEvents\":"
#define OUT_MAGIC_CALLGRIND "# callgrind format\n"
#define OUT_MAGIC_PPROF "\x1f\x8b\x08\x08\0\0\0\0\0\x03" "cygprof-profile.pb"
/* Perfetto (export/perfetto.c): the first packet, on sequence 1: timestamp
 * 0 on BOOTTIME, INCREMENTAL_STATE_CLEARED and a ClockSnapshot of clock 64
 * (incremental) at 0 and BOOTTIME at 0. */
#define OUT_MAGIC_PERFETTO                                                             \
	"\x0a\x19\x40\x00\xd0\x03\x06\x50\x01\x68\x01\x32\x0e\x0a\x06\x08\x40\x10\x00" \
	"\x18\x01\x0a\x04\x08\x06\x10\x00"
#define OUT_MAGIC_HTML "<!DOCTYPE html>\n<!-- cygprof report -->"

#endif
