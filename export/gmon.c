/* SPDX-License-Identifier: MIT */
/* gmon.c - cygprof export --format=gmon and cygprof gprof --gmon-out: GNU
 * gmon.out files for `gprof PROG gmon.out`, one per recorded executable
 * (gprof-export/gmon-export.h: what they hold).
 *
 * The files are out for the first executable and out.PID for the others
 * (gmon_file_name()), each asked of the caller (struct export_files): all
 * are checked before the first is written.  An executable of which no
 * function was recorded gets no file, and a line saying so; none at all is
 * an error. */
#include "export.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "gmon-export.h"
#include "out-kind.h"

/* Put the images with something recorded first (their number in *k),
 * saying which have nothing. */
static void recorded_first(const struct export_opts *o, struct gmon_image *v, size_t n,
			   size_t *k)
{
	size_t i;

	*k = 0;
	for (i = 0; i < n; i++) {
		if (v[i].nfns || v[i].narcs || v[i].npcs) {
			struct gmon_image t = v[*k];

			v[(*k)++] = v[i];
			v[i] = t;
		} else {
			o->error("no function of %s recorded (%zu process%s): no file written",
				 v[i].exe, v[i].nprocs, v[i].nprocs == 1 ? "" : "es");
		}
	}
}

/* Write image i's file; 0, or an error said already (EXPORT_E_LACKS). */
static int write_image(const struct export_opts *o, const char *out,
		       const struct export_files *fs, const struct gmon_image *v, size_t i)
{
	struct gmon_hist h;
	char *name = NULL, hist[96] = "";
	FILE *f;
	int err = gmon_file_name(out, v, i, &name);

	if (!err)
		err = gmon_image_hist(&v[i], &h);
	if (err) {
		o->error("%s: %s", name ? name : out, cygprof_strerror(err));
		free(name);
		return EXPORT_E_LACKS;
	}
	f = fs->open(fs, name);
	err = f ? gmon_write_file(f, &h, v[i].arcs, v[i].narcs) : EXPORT_E_LACKS;
	gmon_hist_free(&h);
	if (f)
		err = fs->close(fs, err);
	if (!err) {
		if (v[i].sampled)
			snprintf(hist, sizeof hist, "; histogram of %" PRIu64 " sample%s at %" PRIu32 " Hz",
				 v[i].samples, v[i].samples == 1 ? "" : "s", v[i].sample_rate);
		o->info("wrote %s for %s (%zu process%s%s)", name, v[i].exe, v[i].nprocs,
			v[i].nprocs == 1 ? "" : "es", hist);
	}
	free(name);
	return err;
}

static int write_gmon(struct view *view, const struct export_opts *o, const char *out,
		      const struct export_files *fs)
{
	struct gmon_image *v = NULL;
	struct export_progress pg;
	size_t n = 0, k, i;
	int err;

	/* the trees' calls, at once (they are small) */
	export_progress_start(&pg, o, "calls", export_tree_calls(view));
	if ((err = gmon_collect(view, &v, &n)))
		return err;
	export_progress_to(&pg, pg.total);
	recorded_first(o, v, n, &k);
	if (!k) {
		o->error("%s: no function of any executable recorded", o->file);
		err = EXPORT_E_LACKS;
	}
	/* every target is checked before any file is written */
	for (i = 0; i < k && !err; i++) {
		char *name = NULL;

		if (gmon_file_name(out, v, i, &name)) {
			o->error("out of memory");
			err = EXPORT_E_LACKS;
			break;
		}
		fs->check(fs, name);
		free(name);
	}
	for (i = 0; i < k && !err; i++)
		err = write_image(o, out, fs, v, i);
	gmon_images_free(v, n);
	return err;
}

const struct exporter export_gmon = {
	.name = "gmon",
	.summary = "gmon.out files for GNU gprof (as 'cygprof gprof --gmon-out FILE';\n"
		   "             FILE defaults to gmon.out)",
	.readers = "GNU gprof",
	.out_kind = OUT_GMON,
	.default_out = "gmon.out",
	.write_files = write_gmon,
};
