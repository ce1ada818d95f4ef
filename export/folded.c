/* SPDX-License-Identifier: MIT */
/* folded.c - cygprof export --format=folded: folded stacks for
 * flamegraph.pl, inferno and speedscope.
 *
 * One line "outermost;...;innermost VALUE" per stack with a non-zero
 * weight; ';' in a name becomes ':' and a line break a space, so every
 * line splits at its last space and its semicolons.  The weights:
 *   self      exact self time (ns) of each call path, the threads' trees
 *             merged by function name (analysis/profile.h), no thread frame;
 *   calls     calls of each call path, merged the same way;
 *   samples   perf samples (record --sample, import-perf) per stack: the
 *             samples' own frames, uninstrumented ones included, and
 *             "[kernel]" innermost for a sample that hit the kernel;
 *             cygprof's runtime frames left out, and a sample in the
 *             runtime (psamp_stack()) on the one line "[profiler overhead]";
 *   allocated, leaked, peak (--memory)
 *             bytes per allocation stack (analysis/memory.h), allocator
 *             frames left out.
 * The sums are the report's: self adds up to report's total self time,
 * calls to its calls, samples to the capture's samples, allocated to
 * `cygprof memory`'s allocated bytes.  Without --weight a capture recorded
 * with --time=sampled weighs by samples when it has some, else by calls. */
#include "export.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "hmap.h"
#include "memory.h"
#include "out-kind.h"
#include "pathtree.h"
#include "profile.h"
#include "psamples.h"
#include "view.h"

/* A frame's name as a folded line may hold it (owned: free()). */
static char *fold_name(const char *name)
{
	char *s = strdup(name && *name ? name : "?"), *p;

	if (!s)
		return NULL;
	for (p = s; *p; p++) {
		if (*p == ';')
			*p = ':';
		else if (*p == '\n' || *p == '\r')
			*p = ' ';
	}
	return s;
}

/* ---- call paths: the threads' trees merged into one (analysis/pathtree.h) -- */

static int write_paths(struct view *v, enum export_weight w, FILE *f)
{
	struct pathtree t = {0};
	struct profile *p = NULL;
	char **names = NULL;
	uint32_t *up = NULL;
	size_t i, maxdepth = 1;
	int err;

	if ((err = profile_load(v, NULL, 0, &p)))
		return err;
	if ((err = pathtree_build(&t, p)))
		goto out;
	err = -ENOMEM;
	if (!(names = calloc(p->nfns ? p->nfns : 1, sizeof(*names))))
		goto out;
	for (i = 0; i < p->nfns; i++)
		if (!(names[i] = fold_name(p->fns[i].name)))
			goto out;
	for (i = 1; i < t.len; i++)
		if (t.n[i].depth > maxdepth)
			maxdepth = t.n[i].depth;
	if (!(up = malloc(maxdepth * sizeof(*up))))
		goto out;
	for (i = 1; i < t.len; i++) {
		uint64_t x = w == EXPORT_W_CALLS ? t.n[i].calls : t.n[i].self_ns;
		size_t d = 0;
		uint32_t k;

		if (!x)
			continue;
		for (k = (uint32_t)i; k && d < maxdepth; k = t.n[k].parent)
			up[d++] = t.n[k].fn;
		while (d--) {
			fputs(names[up[d]], f);
			fputc(d ? ';' : ' ', f);
		}
		fprintf(f, "%" PRIu64 "\n", x);
		if (ferror(f)) {
			err = -EIO;
			goto out;
		}
	}
	err = 0;
out:
	if (names)
		for (i = 0; i < p->nfns; i++)
			free(names[i]);
	free(names);
	free(up);
	pathtree_release(&t);
	profile_free(p);
	return err;
}

/* ---- stacks as strings: samples and allocations ------------------------------ */

struct line {
	char *s;
	uint64_t w;
};

/* Folded lines merged by text, in the order they first came. */
struct lines {
	struct line *v;
	size_t n, cap;
	struct hindex index; /* of v, by text */
};

static int line_eq(const void *ctx, uint32_t i, const void *key)
{
	return !strcmp(((const struct lines *)ctx)->v[i].s, key);
}

static uint64_t line_hash_at(const void *ctx, uint32_t i)
{
	return hash_str(((const struct lines *)ctx)->v[i].s);
}

/* Add w to the line s (taken over: freed here when it is not new). */
static int lines_add(struct lines *l, char *s, uint64_t w)
{
	uint64_t h = hash_str(s);
	long i = hindex_find(&l->index, h, line_eq, l, s);

	if (i >= 0) {
		l->v[i].w += w;
		free(s);
		return 0;
	}
	if (ARRAY_GROW(l->v, l->cap, l->n + 1) ||
	    hindex_add(&l->index, h, line_hash_at, l)) {
		free(s);
		return -ENOMEM;
	}
	l->v[l->n++] = (struct line){.s = s, .w = w};
	return 0;
}

static int lines_write(struct lines *l, FILE *f)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		if (l->v[i].w)
			fprintf(f, "%s %" PRIu64 "\n", l->v[i].s, l->v[i].w);
	return ferror(f) ? -EIO : 0;
}

static void lines_free(struct lines *l)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		free(l->v[i].s);
	free(l->v);
	hindex_release(&l->index);
}

/* The folded text of frames given innermost first, plus a last frame
 * (may be NULL); "[unknown]" for none.  NULL when out of memory. */
static char *fold_frames(const char *const *names, size_t n, const char *last)
{
	char *buf = NULL, *s;
	size_t len = 0, i;
	FILE *m = open_memstream(&buf, &len);
	int bad = 0;

	if (!m)
		return NULL;
	for (i = n; i-- > 0 && !bad;) {
		if (!(s = fold_name(names[i]))) {
			bad = 1;
			break;
		}
		fputs(s, m);
		free(s);
		if (i)
			fputc(';', m);
	}
	if (!n)
		fputs("[unknown]", m);
	if (last)
		fprintf(m, ";%s", last);
	if (fclose(m) || bad) {
		free(buf);
		return NULL;
	}
	return buf;
}

static int write_samples(struct view *v, FILE *f)
{
	const struct cygprof_stack_node *stash;
	const struct cygprof_psample *s;
	struct lines l = {0};
	uint64_t *count = NULL;
	size_t n, nstash, i, j;
	int err;

	if ((err = view_psamples(v, &s, &n)) || (err = view_stash(v, &stash, &nstash)))
		return err;
	/* per stack id, user and kernel samples apart: [2 * id + kernel] */
	if (!(count = calloc(2 * (nstash + 1), sizeof(*count))))
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		uint32_t id = s[i].stack <= nstash ? s[i].stack : 0;

		count[2 * id + !!(s[i].flags & CYGPROF_SAMPLE_KERNEL)]++;
	}
	for (i = 0; i < 2 * (nstash + 1) && !err; i++) {
		struct view_frame *fr = NULL;
		const char **names = NULL;
		size_t nf = 0;
		char *line;

		if (!count[i])
			continue;
		int overhead;

		if ((err = psamp_stack(v, (uint32_t)(i / 2), 0, &fr, &nf, &overhead)))
			break;
		if (overhead) {
			/* the profiler's cost: charged to no function */
			free(fr);
			line = strdup("[profiler overhead]");
			err = line ? lines_add(&l, line, count[i]) : -ENOMEM;
			continue;
		}
		if (!(names = malloc((nf ? nf : 1) * sizeof(*names)))) {
			free(fr);
			err = -ENOMEM;
			break;
		}
		for (j = 0; j < nf; j++)
			names[j] = fr[j].name;
		line = fold_frames(names, nf, (i & 1) ? "[kernel]" : NULL);
		free(names);
		free(fr);
		err = line ? lines_add(&l, line, count[i]) : -ENOMEM;
	}
	free(count);
	if (!err)
		err = lines_write(&l, f);
	lines_free(&l);
	return err;
}

static int write_memory(struct view *v, enum export_weight w, FILE *f,
			struct export_progress *pg)
{
	struct memory_opts mo = {.progress = export_progress_mem, .progress_arg = pg};
	struct memory *m = NULL;
	struct lines l = {0};
	const char **names = NULL;
	size_t i, j, maxf = 1;
	int err;

	if ((err = memory_load(v, &mo, &m)))
		return err;
	for (i = 0; i < m->nstacks; i++)
		if (m->stacks[i].used && m->stacks[i].nframes > maxf)
			maxf = m->stacks[i].nframes;
	if (!(names = malloc(maxf * sizeof(*names))))
		err = -ENOMEM;
	for (i = 0; i < m->nstacks && !err; i++) {
		const struct memory_stack *s = &m->stacks[i];
		uint64_t x = w == EXPORT_W_ALLOCATED ? s->bytes
			     : w == EXPORT_W_LEAKED  ? s->leaked_bytes
						     : s->peak_bytes;
		char *line;

		if (!s->used || !x)
			continue;
		for (j = 0; j < s->nframes; j++)
			names[j] = m->fns[s->fns[j]].name;
		line = fold_frames(names, s->nframes, NULL);
		err = line ? lines_add(&l, line, x) : -ENOMEM;
	}
	free(names);
	memory_free(m);
	if (!err)
		err = lines_write(&l, f);
	lines_free(&l);
	return err;
}

/* ---- the weight ------------------------------------------------------------------ */

static int has_samples(struct view *v)
{
	const struct cygprof_psample *s;
	size_t n = 0;

	return !view_psamples(v, &s, &n) && n;
}

/* The progress of what the weight reads: the trees (at once: they are
 * small), the samples, or the memory events (memory_load()'s progress). */
static int done(struct export_progress *pg, int err)
{
	if (!err)
		export_progress_to(pg, pg->total);
	return err;
}

static int write_folded(struct view *v, const struct export_opts *o, FILE *f)
{
	int sampled = view_time_sampled(v);
	enum export_weight w = o->weight;
	struct export_progress pg;
	const struct cygprof_psample *ps;
	uint64_t nmem = 0;
	size_t nps = 0;

	if (w == EXPORT_W_DEFAULT)
		w = !sampled ? EXPORT_W_SELF : has_samples(v) ? EXPORT_W_SAMPLES : EXPORT_W_CALLS;
	switch (w) {
	case EXPORT_W_SELF:
		if (sampled) {
			o->error("%s has no times (recorded with --time=sampled): use --weight calls "
				 "or samples",
				 o->file);
			return EXPORT_E_LACKS;
		}
		/* fall through */
	case EXPORT_W_CALLS:
		export_progress_start(&pg, o, "calls", export_tree_calls(v));
		return done(&pg, write_paths(v, w, f));
	case EXPORT_W_SAMPLES:
		if (!has_samples(v)) {
			o->error("%s has no samples (record with --sample)", o->file);
			return EXPORT_E_LACKS;
		}
		view_psamples(v, &ps, &nps);
		export_progress_start(&pg, o, "samples", nps);
		return done(&pg, write_samples(v, f));
	case EXPORT_W_ALLOCATED:
	case EXPORT_W_LEAKED:
	case EXPORT_W_PEAK:
		if (!view_mode_has(v, "memory") && (view_mem_count(v, &nmem) || !nmem)) {
			o->error("%s has no allocations (record with --memory)", o->file);
			return EXPORT_E_LACKS;
		}
		export_progress_start(&pg, o, "events", view_mem_count(v, &nmem) ? 0 : nmem);
		return done(&pg, write_memory(v, w, f, &pg));
	default:
		return -EINVAL;
	}
}

const struct exporter export_folded = {
	.name = "folded",
	.summary = "folded stacks for flamegraph.pl, inferno and speedscope,\n"
		   "             weighed by --weight or --memory",
	.readers = "flamegraph.pl, inferno, speedscope",
	.out_kind = OUT_TEXT,
	.write = write_folded,
};
