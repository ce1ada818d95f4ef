/* SPDX-License-Identifier: MIT */
/* export-run.c - one format of export/ written (cli_export()): to standard
 * output or a file made through cli_output_open(), or for a format of
 * several files (gmon) each of them, with the exporter's warnings, errors
 * and notes printed.  cygprof export and cygprof gprof --gmon-out. */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "export.h"
#include "progress.h"

static void vline(FILE *f, const char *prefix, const char *fmt, va_list ap)
{
	cli_progress_clear_any();
	fputs(prefix, f);
	vfprintf(f, fmt, ap);
	fputc('\n', f);
}

static void export_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vline(stderr, "cygprof: warning: ", fmt, ap);
	va_end(ap);
}

static void export_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vline(stderr, "cygprof: ", fmt, ap);
	va_end(ap);
}

static void export_info(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vline(stdout, "cygprof: ", fmt, ap);
	va_end(ap);
}

/* The files of a format of several (export.h), on cli_output_*(). */
struct files {
	struct export_files fs;
	const char *cmd;
	enum out_kind kind;
	int force;
	struct cli_output w;
};

static void files_check(const struct export_files *fs, const char *path)
{
	const struct files *x = fs->ctx;

	cli_output_check(x->cmd, path, x->kind, x->force, NULL);
}

static FILE *files_open(const struct export_files *fs, const char *path)
{
	struct files *x = fs->ctx;

	return cli_output_open(&x->w, x->cmd, path, x->kind, x->force);
}

static int files_close(const struct export_files *fs, int err)
{
	struct files *x = fs->ctx;

	if (err) {
		char *path = x->w.path; /* the abort frees its copy */

		x->w.path = NULL;
		cli_output_abort(&x->w);
		cli_die(1, "%s: %s: %s", x->cmd, path, cygprof_strerror(err));
	}
	cli_output_commit(&x->w);
	return 0;
}

void cli_export(struct view *v, const struct exporter *fmt, struct export_opts *o,
		const char *out, int force, const char *cmd)
{
	int err;

	o->warn = export_warn;
	o->error = export_error;
	o->info = export_info;
	if (fmt->write_files) {
		struct files x = {.cmd = cmd, .kind = fmt->out_kind, .force = force};

		x.fs = (struct export_files){files_check, files_open, files_close, &x};
		err = fmt->write_files(v, o, out ? out : fmt->default_out, &x.fs);
	} else {
		struct cli_output w;
		FILE *f = out ? cli_output_open(&w, cmd, out, fmt->out_kind, force) : stdout;

		err = fmt->write(v, o, f);
		if (err && ferror(f)) {
			/* the output failed, not the capture: name it and its
			 * errno (a full disk is ENOSPC, not the reader's EIO) */
			int e = errno;

			clearerr(f);
			if (fflush(f) == EOF)
				e = errno;
			if (out)
				cli_output_abort(&w);
			cli_die(1, "%s: %s: %s", cmd, out ? out : "standard output",
				strerror(e ? e : EIO));
		}
		if (out) {
			if (err)
				cli_output_abort(&w);
			else
				cli_output_commit(&w);
		}
	}
	if (err == EXPORT_E_LACKS)
		exit(1);
	cli_check(err, o->file);
}
