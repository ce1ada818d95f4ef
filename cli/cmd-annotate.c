/* SPDX-License-Identifier: MIT */
/* cmd-annotate.c - cygprof annotate / cygprof-annotate: the source files of a
 * capture with, on each line, the calls made from it, the entries of the
 * function defined there, the time of those calls, the allocations made
 * from it and the perf samples that hit it (perf annotate /
 * callgrind_annotate style); or JSON. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "annotate.h"
#include "cli.h"
#include "debuginfo.h"
#include "format.h"
#include "json.h"
#include "srcline.h"
#include "view.h"
#include "textesc.h"

struct annotate_cli {
	struct cli_filter filt;
	int json;
	int all;
	double threshold; /* percent */
	size_t hot;
	unsigned context; /* lines around each hot line (--context) */
	const char *capture;
	char **sources;
	size_t nsources;
	char **source_dirs;
	size_t nsource_dirs;
	char **map_old, **map_new;
	size_t nmaps;
	struct debuginfo *di;
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: cygprof-annotate [options] [CAPTURE] [SOURCE...]\n"
		"       cygprof annotate [options] [CAPTURE] [SOURCE...]\n"
		"\n"
		"The source files of a capture (CAPTURE defaults to " CYGPROF_DEFAULT_CAPTURE
		"; CAPTURE and\n"
		"SOURCEs in any order: a capture is known by its content), hottest first, each\n"
		"hot line with: the instrumented calls made from it, the entries of the function\n"
		"defined there, the inclusive time of those calls, the allocations made from\n"
		"it (record --memory) and the perf samples whose instruction is on it\n"
		"(record --sample, import-perf), with their percentage of all samples.\n"
		"Lines come from the DWARF of the recorded objects or of their separate\n"
		"debug files.  SOURCE arguments restrict the output to those files (by path\n"
		"suffix or basename).\n"
		"\n"
		"options:\n"
		"  --all                  every file with a figure, whole (default: files\n"
		"                         with at least --threshold percent of the calls,\n"
		"                         time or samples, or with allocations, hottest\n"
		"                         first, only their hot lines with --context lines\n"
		"                         around each)\n"
		"  --context N            lines shown around each hot line (default 3)\n"
		"  --threshold PCT        the default selection's threshold (default 1)\n"
		"  --hot N                lines marked '>' as the hottest by time, by samples\n"
		"                         when the capture has no times (default 5)\n"
		"  --source-dir DIR       look for sources under DIR too, by the suffixes of\n"
		"                         their DWARF path (repeatable)\n"
		"  --prefix-map OLD=NEW   read sources whose path starts with OLD under NEW\n"
		"                         instead (repeatable)\n"
		CLI_TIME_HELP CLI_DEBUG_HELP
		CLI_FILTER_HELP
		"                         (the calls and times; allocations and samples\n"
		"                         are not filtered)\n"
		"  --format FMT           text (default) or json\n"
		"  -h, --help             this help\n");
}

static void push(char ***v, size_t *n, char *s)
{
	char **t = realloc(*v, (*n + 1) * sizeof(**v));

	if (!t)
		cli_die(1, "out of memory");
	t[(*n)++] = s;
	*v = t;
}

static int source_like(const char *s)
{
	static const char *const sfx[] = {".c", ".h", ".cc", ".cpp", ".cxx", ".hpp", ".hh",
					  ".hxx", ".C", ".S", ".s", ".inc", ".ipp", ".tcc"};
	const char *dot = strrchr(s, '.');
	size_t i;

	if (!dot || strchr(dot, '/'))
		return 0;
	for (i = 0; i < sizeof(sfx) / sizeof(sfx[0]); i++)
		if (!strcmp(dot, sfx[i]))
			return 1;
	return 0;
}

static void parse_opts(int argc, char **argv, struct annotate_cli *o)
{
	enum {
		O_ALL = 256, O_THRESHOLD, O_HOT, O_SOURCE_DIR, O_PREFIX_MAP, O_FORMAT, O_CONTEXT,
	};
	static const struct option lopts[] = {
		{"all", no_argument, NULL, O_ALL},
		{"threshold", required_argument, NULL, O_THRESHOLD},
		{"hot", required_argument, NULL, O_HOT},
		{"context", required_argument, NULL, O_CONTEXT},
		{"source-dir", required_argument, NULL, O_SOURCE_DIR},
		{"prefix-map", required_argument, NULL, O_PREFIX_MAP},
		CLI_DEBUG_OPTIONS,
		CLI_TIME_OPTIONS,
		CLI_FILTER_OPTIONS,
		{"format", required_argument, NULL, O_FORMAT},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct cli_getopt g = {.cmd = "annotate", .usage = usage, .shortopts = ":hF:N:D:",
			       .longopts = lopts};
	char *eq;
	int c;

	memset(o, 0, sizeof(*o));
	o->threshold = 1.0;
	o->hot = 5;
	o->context = 3;
	g.di = o->di = cli_debuginfo_new();
	g.filt = &o->filt;
	while ((c = cli_next_option(&g, argc, argv)) != -1) {
		switch (c) {
		case O_ALL:
			o->all = 1;
			break;
		case O_THRESHOLD:
			o->threshold = cli_parse_real("annotate", "--threshold", optarg, 0, 100);
			break;
		case O_HOT:
			o->hot = (size_t)cli_parse_uint("annotate", "--hot", optarg, 0, 1000000);
			break;
		case O_CONTEXT:
			o->context = (unsigned)cli_parse_uint("annotate", "--context", optarg, 0, 1000);
			break;
		case O_SOURCE_DIR:
			push(&o->source_dirs, &o->nsource_dirs, optarg);
			break;
		case O_PREFIX_MAP:
			eq = strchr(optarg, '=');
			if (!eq || eq == optarg)
				cli_die(2, "annotate: bad --prefix-map '%s' (OLD=NEW)", optarg);
			*eq = 0;
			push(&o->map_old, &o->nmaps, optarg);
			o->nmaps--;
			push(&o->map_new, &o->nmaps, eq + 1);
			break;
		case O_FORMAT:
			o->json = cli_format_json("annotate", optarg);
			break;
		}
	}
	/* CAPTURE and SOURCEs in any order: a capture is known by its content
	 * (cygprof_capture_probe()); a name that is neither, the first one
	 * when it does not look like a source, is the capture (its error is
	 * then the capture's) */
	for (; optind < argc; optind++) {
		const char *arg = argv[optind];

		if (!o->capture && (cygprof_capture_probe(arg) == 1 ||
				    (!source_like(arg) && access(arg, F_OK) && !o->nsources)))
			o->capture = arg;
		else
			push(&o->sources, &o->nsources, argv[optind]);
	}
	cli_debuginfo_env(o->di);
}

/* ---- selection ------------------------------------------------------------- */

static int suffix_match(const char *path, const char *sfx)
{
	size_t lp = strlen(path), ls = strlen(sfx);

	if (!ls || ls > lp || strcmp(path + lp - ls, sfx))
		return 0;
	return ls == lp || path[lp - ls - 1] == '/' || sfx[0] == '/';
}

static int source_selected(const struct annotate_cli *o, const char *path)
{
	char buf[PATH_MAX], *norm;
	const char *base, *p;
	size_t i;
	int ok;

	if (!o->nsources)
		return 1;
	for (i = 0; i < o->nsources; i++) {
		const char *s = o->sources[i];

		if (realpath(s, buf) && !strcmp(buf, path))
			return 1;
		norm = strdup(s);
		if (!norm)
			cli_die(1, "out of memory");
		srcline_normalize(norm);
		p = norm;
		while (!strncmp(p, "../", 3))
			p += 3;
		ok = suffix_match(path, p);
		free(norm);
		if (ok)
			return 1;
		base = strrchr(s, '/');
		base = base ? base + 1 : s;
		if (suffix_match(path, base) && !strchr(s, '/'))
			return 1;
	}
	return 0;
}

static int file_shown(const struct annotate_cli *o, const struct annotate *a,
		      const struct annotate_file *f)
{
	if (!source_selected(o, f->path))
		return 0;
	if (o->all || o->nsources)
		return 1;
	if (f->allocations || f->alloc_bytes)
		return 1;
	if (a->total_calls &&
	    (double)(f->calls + f->entries) * 100.0 >= o->threshold * (double)a->total_calls)
		return 1;
	if (a->total_ns && (double)f->max_ns * 100.0 >= o->threshold * (double)a->total_ns)
		return 1;
	if (a->total_samples &&
	    (double)f->samples * 100.0 >= o->threshold * (double)a->total_samples)
		return 1;
	return 0;
}

/* ---- sources --------------------------------------------------------------- */

/* A source is read only when it is a regular file: a FIFO or a device put
 * at a source path would block or never end (opened without blocking, then
 * switched back to blocking reads). */
static FILE *try_open(const char *p, char **found)
{
	struct stat st;
	FILE *f;
	int fd = open(p, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) ||
	    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) || !(f = fdopen(fd, "r"))) {
		close(fd);
		return NULL;
	}
	if (found)
		*found = strdup(p);
	return f;
}

static FILE *open_source(const struct annotate_cli *o, const char *path, char **found)
{
	char buf[PATH_MAX * 2];
	const char *p;
	int mapped = 0;
	FILE *f;
	size_t i;

	*found = NULL;
	/* a matching --prefix-map replaces the recorded location */
	for (i = 0; i < o->nmaps; i++) {
		size_t l = strlen(o->map_old[i]);

		if (strncmp(path, o->map_old[i], l) || (path[l] && path[l] != '/' &&
							o->map_old[i][l - 1] != '/'))
			continue;
		snprintf(buf, sizeof(buf), "%s%s", o->map_new[i], path + l);
		f = try_open(buf, found);
		if (f)
			return f;
		mapped = 1;
	}
	if (!mapped) {
		f = try_open(path, found);
		if (f)
			return f;
	}
	for (i = 0; i < o->nsource_dirs; i++) {
		for (p = path; p; p = strchr(p + 1, '/')) {
			const char *sfx = p[0] == '/' ? p + 1 : p;

			if (!*sfx)
				break;
			snprintf(buf, sizeof(buf), "%s/%s", o->source_dirs[i], sfx);
			f = try_open(buf, found);
			if (f)
				return f;
		}
	}
	return NULL;
}

/* ---- text -------------------------------------------------------------------- */

static void col_u64(char *buf, size_t len, int width, uint64_t v)
{
	if (v)
		snprintf(buf, len, "%*" PRIu64, width, v);
	else
		snprintf(buf, len, "%*s", width, "");
}

/* The share of the capture's samples, "" for none. */
static const char *fmt_share(char *buf, size_t len, int width, uint64_t n, uint64_t total)
{
	if (n && total)
		snprintf(buf, len, "%*.1f%%", width - 1, (double)n * 100.0 / (double)total);
	else
		snprintf(buf, len, "%*s", width, "");
	return buf;
}

static void print_cols(const struct annotate *a, const struct annotate_line *l, int hot)
{
	char c[32], e[32], t[32], n[32], b[32], s[32], d[32];

	col_u64(c, sizeof(c), 10, l ? l->calls : 0);
	col_u64(e, sizeof(e), 9, l ? l->entries : 0);
	if (l && l->total_ns)
		snprintf(t, sizeof(t), "%11s", fmt_dur(d, sizeof(d), l->total_ns));
	else
		snprintf(t, sizeof(t), "%11s", "");
	col_u64(s, sizeof(s), 7, l ? l->samples : 0);
	printf("%c%s %s %s", hot ? '>' : ' ', c, e, t);
	if (a->memory) {
		col_u64(n, sizeof(n), 7, l ? l->allocations : 0);
		col_u64(b, sizeof(b), 11, l ? l->alloc_bytes : 0);
		printf(" %s %s", n, b);
	}
	printf(" %s", s);
	if (a->sampled)
		printf(" %s", fmt_share(d, sizeof(d), 6, l ? l->samples : 0, a->total_samples));
}

static void print_header(const struct annotate *a)
{
	printf("%c%10s %9s %11s", ' ', "calls", "entries", "time");
	if (a->memory)
		printf(" %7s %11s", "allocs", "bytes");
	printf(" %7s", "samples");
	if (a->sampled)
		printf(" %6s", "%");
	printf(" %6s  source\n", "line");
}

/* A duration inside a sentence: fmt_dur() without its padding. */
static const char *dur_word(char *buf, size_t len, uint64_t ns)
{
	char *p = (char *)fmt_dur(buf, len, ns), *q;

	while (*p == ' ')
		p++;
	q = strstr(p, "  s");
	if (q)
		memmove(q, q + 1, strlen(q));
	return p;
}

/* "   N samples (P% of all, T sampled): f N, g N, ..." */
static void print_file_samples(const struct annotate *a, const struct annotate_file *f)
{
	char d[32], p[32];
	size_t i;

	if (!f->samples)
		return;
	printf("   %" PRIu64 " sample%s (%s of all, %s sampled):", f->samples,
	       f->samples == 1 ? "" : "s",
	       fmt_share(p, sizeof(p), 1, f->samples, a->total_samples),
	       dur_word(d, sizeof(d), f->sampled_ns));
	for (i = 0; i < f->nfns && i < 8; i++)
		printf("%s %s %" PRIu64, i ? "," : "", text_esc(f->fns[i].name), f->fns[i].samples);
	if (f->nfns > 8)
		printf(", %zu more", f->nfns - 8);
	printf("\n");
}

static int is_hot(const struct annotate_line **hot, size_t nhot, const struct annotate_line *l)
{
	size_t i;

	for (i = 0; i < nhot; i++)
		if (hot[i] == l)
			return 1;
	return 0;
}

/* Whether a line has a figure that matters: a hot line ('>'), or calls,
 * time, samples or allocations of at least --threshold percent of the
 * capture's. */
static int focus_line(const struct annotate_cli *o, const struct annotate *a,
		      const struct annotate_line *l, const struct annotate_line **hot, size_t nhot)
{
	double t = o->threshold;

	return is_hot(hot, nhot, l) ||
	       (a->total_calls && (double)(l->calls + l->entries) * 100.0 >= t * (double)a->total_calls) ||
	       (a->total_ns && (double)l->total_ns * 100.0 >= t * (double)a->total_ns) ||
	       (a->total_samples && (double)l->samples * 100.0 >= t * (double)a->total_samples) ||
	       (a->total_allocations &&
		(double)l->allocations * 100.0 >= t * (double)a->total_allocations);
}

/* Whether lineno is within --context lines of a focus line of f (k: the
 * index of the first of f's lines at or after lineno). */
static int near_focus(const struct annotate_cli *o, const struct annotate *a,
		      const struct annotate_file *f, size_t k, uint32_t lineno,
		      const struct annotate_line **hot, size_t nhot)
{
	for (size_t i = k; i < f->nlines && f->lines[i].line <= lineno + o->context; i++)
		if (focus_line(o, a, &f->lines[i], hot, nhot))
			return 1;
	for (size_t i = k; i-- > 0 && f->lines[i].line + o->context >= lineno;)
		if (focus_line(o, a, &f->lines[i], hot, nhot))
			return 1;
	return 0;
}

/* The width of the figures' columns (where "..." goes). */
static int cols_width(const struct annotate *a)
{
	return a->sampled ? 8 : 4;
}

static void print_file_text(const struct annotate_cli *o, const struct annotate *a,
			    const struct annotate_file *f, const struct annotate_line **hot,
			    size_t nhot)
{
	char d[32], *found = NULL, *text = NULL;
	size_t cap = 0, k = 0;
	ssize_t len;
	uint32_t lineno = 0;
	FILE *src;

	printf("== %s\n", text_esc(f->path));
	printf("   %" PRIu64 " calls from its lines, %" PRIu64 " function entries", f->calls,
	       f->entries);
	if (f->max_ns)
		printf(", hottest line %s", fmt_dur(d, sizeof(d), f->max_ns));
	if (a->memory)
		printf(", %" PRIu64 " allocations (%" PRIu64 " bytes)", f->allocations,
		       f->alloc_bytes);
	printf("\n");
	print_file_samples(a, f);
	src = open_source(o, f->path, &found);
	if (!src)
		printf("   (source not found: counts by line number; see --source-dir, --prefix-map)\n");
	else if (strcmp(found, f->path))
		printf("   (source read from %s)\n", text_esc(found));
	printf("\n");
	print_header(a);
	if (src) {
		uint32_t last = 0; /* the last line printed */

		while ((len = getline(&text, &cap, src)) >= 0) {
			const struct annotate_line *l = NULL;

			lineno++;
			while (k < f->nlines && f->lines[k].line < lineno)
				k++;
			if (k < f->nlines && f->lines[k].line == lineno)
				l = &f->lines[k];
			/* by default only the lines that matter and --context
			 * lines around each, "..." where lines are left out */
			if (!o->all && !near_focus(o, a, f, k, lineno, hot, nhot))
				continue;
			if (!o->all && last && lineno > last + 1)
				printf("%*s ...\n", cols_width(a), "");
			last = lineno;
			if (len && text[len - 1] == '\n')
				text[--len] = 0;
			print_cols(a, l, l && is_hot(hot, nhot, l));
			printf(" %6" PRIu32 "  %s\n", lineno, text);
		}
		fclose(src);
		free(text);
	}
	/* lines past the end of the source file read, or all without one */
	for (; k < f->nlines; k++) {
		if (f->lines[k].line <= lineno)
			continue;
		print_cols(a, &f->lines[k], is_hot(hot, nhot, &f->lines[k]));
		printf(" %6" PRIu32 "%s\n", f->lines[k].line, src ? "  <past the end of the file>" : "");
	}
	printf("\n");
	free(found);
}

/* What '>' ranks lines by: the time of the calls from them, or the samples
 * on them when the capture has no times (record --time=sampled). */
static int hot_by_samples(const struct annotate *a)
{
	return !a->total_ns && a->total_samples;
}

static uint64_t hotness(const struct annotate *a, const struct annotate_line *l)
{
	return hot_by_samples(a) ? l->samples : l->total_ns;
}

static const struct annotate_line **hot_lines(const struct annotate_cli *o,
					      const struct annotate *a, const int *shown,
					      size_t *nhot)
{
	const struct annotate_line **v = calloc(o->hot ? o->hot : 1, sizeof(*v));
	size_t i, j, n = 0;

	if (!v)
		cli_die(1, "out of memory");
	for (i = 0; i < a->nfiles; i++) {
		if (!shown[i])
			continue;
		for (j = 0; j < a->files[i].nlines; j++) {
			const struct annotate_line *l = &a->files[i].lines[j];
			size_t k;

			if (!hotness(a, l) || !o->hot)
				continue;
			if (n == o->hot && hotness(a, l) <= hotness(a, v[n - 1]))
				continue;
			k = n < o->hot ? n++ : n - 1;
			while (k > 0 && hotness(a, v[k - 1]) < hotness(a, l)) {
				v[k] = v[k - 1];
				k--;
			}
			v[k] = l;
		}
	}
	*nhot = n;
	return v;
}

static const struct annotate *sort_a;

static int cmp_hotness(const void *pa, const void *pb)
{
	const struct annotate_file *a = &sort_a->files[*(const size_t *)pa];
	const struct annotate_file *b = &sort_a->files[*(const size_t *)pb];

	if (a->samples != b->samples)
		return a->samples > b->samples ? -1 : 1;
	if (a->max_ns != b->max_ns)
		return a->max_ns > b->max_ns ? -1 : 1;
	if (a->calls + a->entries != b->calls + b->entries)
		return a->calls + a->entries > b->calls + b->entries ? -1 : 1;
	if (a->alloc_bytes != b->alloc_bytes)
		return a->alloc_bytes > b->alloc_bytes ? -1 : 1;
	return strcmp(a->path, b->path);
}

static void print_text(const struct annotate_cli *o, const struct annotate *a, const int *shown,
		       const char *command)
{
	const struct annotate_line **hot;
	size_t i, nhot, nshown = 0, *order;
	char d[32];

	hot = hot_lines(o, a, shown, &nhot);
	order = malloc((a->nfiles ? a->nfiles : 1) * sizeof(*order));
	if (!order)
		cli_die(1, "out of memory");
	for (i = 0; i < a->nfiles; i++)
		if (shown[i])
			order[nshown++] = i;
	sort_a = a;
	qsort(order, nshown, sizeof(*order), cmp_hotness);
	if (command)
		printf("Annotate: %s\n", text_esc(command));
	printf("Total: %" PRIu64 " calls, %s", a->total_calls, fmt_dur(d, sizeof(d), a->total_ns));
	if (a->memory)
		printf(", %" PRIu64 " allocations (%" PRIu64 " bytes)", a->total_allocations,
		       a->total_alloc_bytes);
	if (a->sampled)
		printf(", %" PRIu64 " sample%s (%s sampled)", a->total_samples,
		       a->total_samples == 1 ? "" : "s",
		       dur_word(d, sizeof(d), a->total_sampled_ns));
	printf("\n");
	if (a->unresolved_calls || a->unresolved_allocations)
		printf("Without a source line: %" PRIu64 " calls, %" PRIu64 " allocations\n",
		       a->unresolved_calls, a->unresolved_allocations);
	if (a->unresolved_samples) {
		char p[32];

		printf("Samples without a source line (code without debug information, such as\n"
		       "an uninstrumented libc): %" PRIu64 " (%s, %s sampled)\n",
		       a->unresolved_samples,
		       fmt_share(p, sizeof(p), 1, a->unresolved_samples, a->total_samples),
		       dur_word(d, sizeof(d), a->unresolved_sampled_ns));
	}
	if (a->overhead_samples) {
		char p[32];

		printf("Profiler overhead (samples in cygprof's runtime, on no line): %" PRIu64
		       " (%s, %s sampled)\n",
		       a->overhead_samples,
		       fmt_share(p, sizeof(p), 1, a->overhead_samples, a->total_samples),
		       dur_word(d, sizeof(d), a->overhead_sampled_ns));
	}
	if (a->sampled)
		printf("Columns: calls made from the line, entries of the function defined there,\n"
		       "inclusive time of the calls from the line, %sthe perf samples\n"
		       "whose instruction is on the line and their percentage of all %" PRIu64
		       " samples;\n'>' marks the %zu hottest lines by %s.\n\n",
		       a->memory ? "allocations and bytes allocated from the line,\n" : "",
		       a->total_samples, nhot, hot_by_samples(a) ? "samples" : "time");
	else
		printf("Columns: calls made from the line, entries of the function defined there,\n"
		       "inclusive time of the calls from the line, %ssamples;\n"
		       "'>' marks the %zu hottest lines by time.\n\n",
		       a->memory ? "allocations and bytes allocated from the line,\n" : "", nhot);
	if (!nshown)
		printf("No source file %s (see --all, --threshold).\n\n",
		       a->nfiles ? "above the threshold" : "with line information");
	for (i = 0; i < nshown; i++)
		print_file_text(o, a, &a->files[order[i]], hot, nhot);
	free(order);
	free(hot);
}

/* ---- JSON -------------------------------------------------------------------- */

static void print_json(struct view *v, const struct annotate_cli *o,
		       const struct annotate *a, const int *shown)
{
	size_t i, j;
	int first = 1;

	printf("{\"files\": [");
	for (i = 0; i < a->nfiles; i++) {
		const struct annotate_file *f = &a->files[i];
		char *found = NULL;
		FILE *src;

		if (!shown[i])
			continue;
		printf("%s\n  {\"path\": ", first ? "" : ",");
		first = 0;
		json_str(stdout, f->path);
		src = open_source(o, f->path, &found);
		printf(", \"source\": ");
		if (src) {
			json_str(stdout, found);
			fclose(src);
		} else {
			printf("null");
		}
		free(found);
		printf(", \"lines\": [");
		for (j = 0; j < f->nlines; j++) {
			const struct annotate_line *l = &f->lines[j];

			printf("%s\n    {\"line\": %" PRIu32 ", \"calls\": %" PRIu64
			       ", \"entries\": %" PRIu64 ", \"total_ns\": %" PRIu64
			       ", \"alloc_bytes\": %" PRIu64 ", \"allocations\": %" PRIu64
			       ", \"samples\": %" PRIu64,
			       j ? "," : "", l->line, l->calls, l->entries, l->total_ns,
			       l->alloc_bytes, l->allocations, l->samples);
			if (a->sampled)
				printf(", \"sampled_ns\": %" PRIu64, l->sampled_ns);
			printf("}");
		}
		printf("%s]", f->nlines ? "\n  " : "");
		if (a->sampled) {
			printf(", \"samples\": %" PRIu64 ", \"sampled_ns\": %" PRIu64
			       ", \"functions\": [",
			       f->samples, f->sampled_ns);
			for (j = 0; j < f->nfns; j++) {
				printf("%s{\"name\": ", j ? ", " : "");
				json_str(stdout, f->fns[j].name);
				printf(", \"samples\": %" PRIu64 ", \"sampled_ns\": %" PRIu64 "}",
				       f->fns[j].samples, f->fns[j].sampled_ns);
			}
			printf("]");
		}
		printf("}");
	}
	printf("%s],\n \"totals\": {\"calls\": %" PRIu64 ", \"total_ns\": %" PRIu64
	       ", \"allocations\": %" PRIu64 ", \"alloc_bytes\": %" PRIu64
	       ", \"unresolved_calls\": %" PRIu64 ", \"unresolved_allocations\": %" PRIu64
	       ", \"memory\": %s",
	       first ? "" : "\n", a->total_calls, a->total_ns, a->total_allocations,
	       a->total_alloc_bytes, a->unresolved_calls, a->unresolved_allocations,
	       a->memory ? "true" : "false");
	if (a->sampled)
		printf(", \"samples\": %" PRIu64 ", \"sampled_ns\": %" PRIu64
		       ", \"unresolved_samples\": %" PRIu64 ", \"unresolved_sampled_ns\": %" PRIu64
		       ", \"overhead\": {\"samples\": %" PRIu64 ", \"sampled_ns\": %" PRIu64 "}",
		       a->total_samples, a->total_sampled_ns, a->unresolved_samples,
		       a->unresolved_sampled_ns, a->overhead_samples, a->overhead_sampled_ns);
	printf("},\n ");
	cli_json_limits(v);
	printf("}\n");
}

/* ---- driver ---------------------------------------------------------------- */

int cmd_annotate(int argc, char **argv)
{
	struct annotate_cli o;
	struct annotate *a;
	struct view *v;
	const char *file;
	int *shown;
	size_t i;

	parse_opts(argc, argv, &o);
	file = o.capture ? o.capture : CYGPROF_DEFAULT_CAPTURE;
	v = cli_open_view(file, o.di);
	cli_filter_apply(&o.filt, v, "annotate", file);
	cli_check(annotate_load(v, &a), file);
	shown = calloc(a->nfiles ? a->nfiles : 1, sizeof(*shown));
	if (!shown)
		cli_die(1, "out of memory");
	for (i = 0; i < a->nfiles; i++)
		shown[i] = file_shown(&o, a, &a->files[i]);
	if (o.json)
		print_json(v, &o, a, shown);
	else
		print_text(&o, a, shown, view_meta_str(v, "command"));
	free(shown);
	annotate_free(a);
	free(o.sources);
	free(o.source_dirs);
	free(o.map_old);
	free(o.map_new);
	cli_finish(v);
	debuginfo_free(o.di);
	return 0;
}
