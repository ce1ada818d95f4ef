/* SPDX-License-Identifier: MIT */
/* cmd-annotate.c - cygprof annotate / cygprof-annotate: the source files of a
 * capture with, on each line, the calls made from it, the entries of the
 * function defined there, the time of those calls, the allocations made
 * from it and the perf samples that hit it (perf annotate /
 * callgrind_annotate style); or JSON. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
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
	char **sources;  /* the SOURCE arguments (after classify()) */
	size_t nsources;
	char **args;     /* the arguments after CAPTURE: SOURCE, FUNCTION, SOURCE:LINE */
	size_t nargs;
	struct section *secs; /* FUNCTION and SOURCE:LINE: what is shown */
	size_t nsecs;
	char **source_dirs;
	size_t nsource_dirs;
	char **map_old, **map_new;
	size_t nmaps;
	struct debuginfo *di;
};

/* One function (or, for a SOURCE:LINE in no function, the lines around
 * it) shown whole, hottest lines first. */
struct section {
	const struct annotate_func *fn; /* NULL: the lines lo..hi of file */
	const struct annotate_file *file;
	uint32_t lo, hi, line;          /* line: the one asked (SOURCE:LINE), or 0 */
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: cygprof-annotate [options] [CAPTURE] [SOURCE | FUNCTION | SOURCE:LINE...]\n"
		"       cygprof annotate [options] [CAPTURE] [SOURCE | FUNCTION | SOURCE:LINE...]\n"
		"\n"
		"The source files of a capture (CAPTURE defaults to " CYGPROF_DEFAULT_CAPTURE
		"; CAPTURE and\n"
		"the other arguments in any order: a capture is known by its content),\n"
		"hottest first, each hot line with: the instrumented calls made from it, the\n"
		"entries of the function defined there, the inclusive time of those calls,\n"
		"the self time of that function, the allocations made from it (record\n"
		"--memory) and the perf samples whose instruction is on it (record --sample,\n"
		"import-perf), with their percentage of all samples.  Lines come from the\n"
		"DWARF of the recorded objects or of their separate debug files.\n"
		"SOURCE arguments restrict the output to those files (by path suffix or\n"
		"basename); a FUNCTION (a name as report shows it, or a glob) shows that\n"
		"function's lines whole, its hottest lines first; SOURCE:LINE the function\n"
		"that holds that line.  An argument that matches nothing is an error.\n"
		"\n"
		"options:\n"
		"  --all                  every file with a figure, whole (default: files\n"
		"                         with at least --threshold percent of the calls,\n"
		"                         time or samples, or with allocations, hottest\n"
		"                         first, only their hot lines with --context lines\n"
		"                         around each)\n"
		"  --context N            lines shown around each hot line (default 3)\n"
		"  --threshold PCT        the default selection's threshold (default 1)\n"
		"  --hot N                lines marked '>' as the hottest (default 5): by self\n"
		"                         time (at the definition line of each function),\n"
		"                         by samples when the capture has perf samples;\n"
		"                         within a FUNCTION by the time of the calls made\n"
		"                         from each line and the function's self time\n"
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
				    (!source_like(arg) && access(arg, F_OK) && !o->nargs)))
			o->capture = arg;
		else
			push(&o->args, &o->nargs, argv[optind]);
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

/* Whether the SOURCE argument s names the file path (the capture's). */
static int source_matches(const char *s, const char *path)
{
	char buf[PATH_MAX], *norm;
	const char *base, *p;
	int ok;

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
	return suffix_match(path, base) && !strchr(s, '/');
}

static int source_selected(const struct annotate_cli *o, const char *path)
{
	size_t i;

	if (!o->nsources)
		return 1;
	for (i = 0; i < o->nsources; i++)
		if (source_matches(o->sources[i], path))
			return 1;
	return 0;
}

static int file_shown(const struct annotate_cli *o, const struct annotate *a,
		      const struct annotate_file *f)
{
	if (o->nsecs && !o->nsources)
		return 0; /* FUNCTION, SOURCE:LINE only: their sections */
	if (!source_selected(o, f->path))
		return 0;
	if (o->all || o->nsources)
		return 1;
	if (a->total_self_ns && (double)f->self_ns * 100.0 >= o->threshold * (double)a->total_self_ns)
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
	char c[32], e[32], t[32], n[32], b[32], s[32], d[32], x[32];

	col_u64(c, sizeof(c), 10, l ? l->calls : 0);
	col_u64(e, sizeof(e), 9, l ? l->entries : 0);
	if (l && l->total_ns)
		snprintf(t, sizeof(t), "%11s", fmt_dur(d, sizeof(d), l->total_ns));
	else
		snprintf(t, sizeof(t), "%11s", "");
	if (l && l->self_ns)
		snprintf(x, sizeof(x), "%11s", fmt_dur(d, sizeof(d), l->self_ns));
	else
		snprintf(x, sizeof(x), "%11s", "");
	col_u64(s, sizeof(s), 7, l ? l->samples : 0);
	printf("%c%s %s %s %s", hot ? '>' : ' ', c, e, t, x);
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
	printf("%c%10s %9s %11s %11s", ' ', "calls", "entries", "time", "self");
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
	       (a->total_self_ns && (double)l->self_ns * 100.0 >= t * (double)a->total_self_ns) ||
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

/* ---- FUNCTION, SOURCE:LINE --------------------------------------------------- */

/* What a section's lines are ranked by: the samples on them when any has
 * one, else the time of the calls made from each line plus the self time
 * of the function defined there (together, the function's time line by
 * line). */
static int sec_by_samples(const struct section *sec)
{
	const struct annotate_file *f = sec->file;

	for (size_t i = 0; i < f->nlines; i++)
		if (f->lines[i].line >= sec->lo && f->lines[i].line <= sec->hi && f->lines[i].samples)
			return 1;
	return 0;
}

static uint64_t sec_hotness(int by_samples, const struct annotate_line *l)
{
	return by_samples ? l->samples : l->total_ns + l->self_ns;
}

static int sec_by_samples_arg;

static int cmp_sec_line(const void *pa, const void *pb)
{
	const struct annotate_line *a = *(const struct annotate_line *const *)pa;
	const struct annotate_line *b = *(const struct annotate_line *const *)pb;
	uint64_t x = sec_hotness(sec_by_samples_arg, a), y = sec_hotness(sec_by_samples_arg, b);

	if (x != y)
		return x > y ? -1 : 1;
	return (a->line > b->line) - (a->line < b->line);
}

/* The lines of sec with a figure to rank by, hottest first.  Owned. */
static const struct annotate_line **sec_ranked(const struct section *sec, int by_samples,
					       size_t *n)
{
	const struct annotate_file *f = sec->file;
	const struct annotate_line **v = malloc((f->nlines ? f->nlines : 1) * sizeof(*v));
	size_t i;

	if (!v)
		cli_die(1, "out of memory");
	*n = 0;
	for (i = 0; i < f->nlines; i++) {
		const struct annotate_line *l = &f->lines[i];

		if (l->line >= sec->lo && l->line <= sec->hi && sec_hotness(by_samples, l))
			v[(*n)++] = l;
	}
	sec_by_samples_arg = by_samples;
	qsort(v, *n, sizeof(*v), cmp_sec_line);
	return v;
}

/* The text of the source lines lo..hi of path (NULL: not read), or NULL
 * when the source is not found.  Owned, with *found. */
static char **read_lines(const struct annotate_cli *o, const char *path, uint32_t lo, uint32_t hi,
			 char **found)
{
	char **v, *text = NULL;
	size_t cap = 0;
	ssize_t len;
	uint32_t lineno = 0;
	FILE *src = open_source(o, path, found);

	if (!src)
		return NULL;
	v = calloc((size_t)(hi - lo) + 1, sizeof(*v));
	if (!v)
		cli_die(1, "out of memory");
	while (lineno < hi && (len = getline(&text, &cap, src)) >= 0) {
		if (++lineno < lo)
			continue;
		if (len && text[len - 1] == '\n')
			text[--len] = 0;
		v[lineno - lo] = strdup(text);
		if (!v[lineno - lo])
			cli_die(1, "out of memory");
	}
	free(text);
	fclose(src);
	return v;
}

static const struct annotate_line *line_at(const struct annotate_file *f, uint32_t line)
{
	size_t lo = 0, hi = f->nlines;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (f->lines[mid].line < line)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < f->nlines && f->lines[lo].line == line ? &f->lines[lo] : NULL;
}

static void print_section(const struct annotate_cli *o, const struct annotate *a,
			  const struct section *sec)
{
	const struct annotate_file *f = sec->file;
	const struct annotate_line **ranked;
	char d[32], *found = NULL, **text;
	size_t nranked, nhot, i;
	uint64_t calls = 0, samples = 0, allocs = 0, bytes = 0;
	int by_samples = sec_by_samples(sec);

	ranked = sec_ranked(sec, by_samples, &nranked);
	nhot = nranked < o->hot ? nranked : o->hot;
	for (i = 0; i < f->nlines; i++) {
		const struct annotate_line *l = &f->lines[i];

		if (l->line < sec->lo || l->line > sec->hi)
			continue;
		calls += l->calls;
		samples += l->samples;
		allocs += l->allocations;
		bytes += l->alloc_bytes;
	}
	if (sec->fn) {
		printf("== %s  %s:%" PRIu32 "-%" PRIu32 "\n", text_esc(sec->fn->name),
		       text_esc(f->path), sec->lo, sec->hi);
		printf("   %" PRIu64 " call%s of it, self time %s; ", sec->fn->calls,
		       sec->fn->calls == 1 ? "" : "s", dur_word(d, sizeof(d), sec->fn->self_ns));
	} else {
		printf("== %s:%" PRIu32 "  (in no recorded function: lines %" PRIu32 "-%" PRIu32
		       ")\n   ", text_esc(f->path), sec->line, sec->lo, sec->hi);
	}
	printf("%" PRIu64 " calls from its lines", calls);
	if (a->memory)
		printf(", %" PRIu64 " allocations (%" PRIu64 " bytes)", allocs, bytes);
	if (a->sampled)
		printf(", %" PRIu64 " samples", samples);
	printf("\n");
	text = read_lines(o, f->path, sec->lo, sec->hi, &found);
	if (!text)
		printf("   (source not found: counts by line number; see --source-dir, --prefix-map)\n");
	else if (strcmp(found, f->path))
		printf("   (source read from %s)\n", text_esc(found));
	if (nhot) {
		printf("\n   hottest lines, by %s:\n", by_samples ? "samples"
			: "the time of the calls from the line and the self time at the definition");
		print_header(a);
		for (i = 0; i < nhot; i++) {
			const char *t = text ? text[ranked[i]->line - sec->lo] : NULL;

			print_cols(a, ranked[i], 1);
			printf(" %6" PRIu32 "%s%s\n", ranked[i]->line, t ? "  " : "", t ? t : "");
		}
	}
	printf("\n");
	print_header(a);
	for (uint32_t ln = sec->lo; ln <= sec->hi; ln++) {
		const struct annotate_line *l = line_at(f, ln);
		const char *t = text ? text[ln - sec->lo] : NULL;

		if ((!text || !t) && !l)
			continue; /* no source, or past its end: only the figures */
		print_cols(a, l, l && is_hot(ranked, nhot, l));
		printf(" %6" PRIu32 "%s%s\n", ln, t ? "  " : "", t ? t : "");
		if (ln == UINT32_MAX)
			break;
	}
	printf("\n");
	if (text)
		for (i = 0; i <= (size_t)(sec->hi - sec->lo); i++)
			free(text[i]);
	free(text);
	free(found);
	free(ranked);
}

static void add_sec(struct annotate_cli *o, const struct annotate_func *fn,
		    const struct annotate_file *file, uint32_t lo, uint32_t hi, uint32_t line)
{
	struct section *t;

	for (size_t i = 0; i < o->nsecs; i++)
		if (o->secs[i].file == file && o->secs[i].lo == lo && o->secs[i].hi == hi &&
		    o->secs[i].fn == fn)
			return;
	t = realloc(o->secs, (o->nsecs + 1) * sizeof(*t));
	if (!t)
		cli_die(1, "out of memory");
	o->secs = t;
	t[o->nsecs++] = (struct section){fn, file, lo, hi, line};
}

static const struct annotate_file *file_of(const struct annotate *a, const char *path)
{
	for (size_t i = 0; i < a->nfiles; i++)
		if (a->files[i].path == path)
			return &a->files[i];
	return NULL;
}

static void add_fn_sec(struct annotate_cli *o, const struct annotate *a,
		       const struct annotate_func *fn, uint32_t line)
{
	const struct annotate_file *f = file_of(a, fn->path);

	if (f)
		add_sec(o, fn, f, fn->first, fn->last, line);
}

/* SOURCE:LINE: *src (owned) and *line, or 0 when arg is not one. */
static int line_arg(const char *arg, char **src, uint32_t *line)
{
	const char *c = strrchr(arg, ':');
	unsigned long v;
	char *end;

	if (!c || c == arg || !c[1] || c[1] < '0' || c[1] > '9')
		return 0;
	errno = 0;
	v = strtoul(c + 1, &end, 10);
	if (*end || errno || !v || v > UINT32_MAX)
		return 0;
	*src = strndup(arg, (size_t)(c - arg));
	if (!*src)
		cli_die(1, "out of memory");
	*line = (uint32_t)v;
	return 1;
}

/* Each argument after CAPTURE: SOURCE:LINE, then a function's exact name,
 * then a SOURCE that names a file of the capture, then a glob on function
 * names; one that matches nothing is an error naming it. */
static void classify(struct annotate_cli *o, const struct annotate *a, const char *capture)
{
	for (size_t k = 0; k < o->nargs; k++) {
		const char *arg = o->args[k];
		size_t i, nfile = 0;
		uint32_t line;
		char *src;
		int matched = 0;

		if (line_arg(arg, &src, &line)) {
			for (i = 0; i < a->nfiles; i++) {
				const struct annotate_file *f = &a->files[i];
				int here = 0;

				if (!source_matches(src, f->path))
					continue;
				nfile++;
				for (size_t j = 0; j < a->nfuncs; j++)
					if (a->funcs[j].path == f->path && a->funcs[j].first <= line &&
					    line <= a->funcs[j].last) {
						add_sec(o, &a->funcs[j], f, a->funcs[j].first,
							a->funcs[j].last, line);
						here = 1;
					}
				if (!here && line_at(f, line)) {
					add_sec(o, NULL, f, line > o->context ? line - o->context : 1,
						line > UINT32_MAX - o->context ? UINT32_MAX
									       : line + o->context,
						line);
					here = 1;
				}
				matched |= here;
			}
			if (!nfile)
				cli_die(1, "annotate: %s: no source file of %s matches '%s'", arg,
					capture, src);
			if (!matched)
				cli_die(1, "annotate: %s: no recorded function holds line %" PRIu32
					" and the line has no figure", arg, line);
			free(src);
			continue;
		}
		for (i = 0; i < a->nfuncs; i++)
			if (!strcmp(a->funcs[i].name, arg)) {
				add_fn_sec(o, a, &a->funcs[i], 0);
				matched = 1;
			}
		if (matched)
			continue;
		for (i = 0; i < a->nfiles && !matched; i++)
			matched = source_matches(arg, a->files[i].path);
		if (matched) {
			push(&o->sources, &o->nsources, o->args[k]);
			continue;
		}
		if (strpbrk(arg, "*?["))
			for (i = 0; i < a->nfuncs; i++)
				if (!fnmatch(arg, a->funcs[i].name, 0)) {
					add_fn_sec(o, a, &a->funcs[i], 0);
					matched = 1;
				}
		if (matched)
			continue;
		if (source_like(arg) || strchr(arg, '/'))
			cli_die(1, "annotate: no source file of %s matches '%s'", capture, arg);
		cli_die(1, "annotate: '%s' is neither a function with source lines nor a source file "
			"of %s", arg, capture);
	}
}

/* What '>' ranks lines by: the samples on them when the capture has perf
 * samples (the time of the line's own instructions), else the self time
 * of the functions defined there: not the inclusive time of the calls
 * made from a line, which puts every hot line in main. */
static int hot_by_samples(const struct annotate *a)
{
	return a->total_samples != 0;
}

static uint64_t hotness(const struct annotate *a, const struct annotate_line *l)
{
	return hot_by_samples(a) ? l->samples : l->self_ns;
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
	if (a->self_ns != b->self_ns)
		return a->self_ns > b->self_ns ? -1 : 1;
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
		       "inclusive time of the calls from the line, self time of the function\n"
		       "defined there, %sthe perf samples whose instruction is on the line\n"
		       "and their percentage of all %" PRIu64 " samples;\n",
		       a->memory ? "allocations and bytes allocated from the line,\n" : "",
		       a->total_samples);
	else
		printf("Columns: calls made from the line, entries of the function defined there,\n"
		       "inclusive time of the calls from the line, self time of the function\n"
		       "defined there, %ssamples;\n",
		       a->memory ? "allocations and bytes allocated from the line,\n" : "");
	if (o->nsecs)
		printf("each function's lines whole, its %zu hottest first and marked '>': by the\n"
		       "time of the calls from a line and the self time at the definition line\n"
		       "(by samples when the function has any).\n\n", o->hot);
	else
		printf("'>' marks the %zu hottest lines by %s.\n\n", nhot,
		       hot_by_samples(a) ? "samples" : "self time");
	for (i = 0; i < o->nsecs; i++)
		print_section(o, a, &o->secs[i]);
	if (o->nsecs && !o->nsources)
		nshown = 0;
	else if (!nshown)
		printf("No source file %s (see --all, --threshold).\n\n",
		       a->nfiles ? "above the threshold" : "with line information");
	for (i = 0; i < nshown; i++)
		print_file_text(o, a, &a->files[order[i]], hot, nhot);
	free(order);
	free(hot);
}

/* ---- JSON -------------------------------------------------------------------- */

static void json_line(const struct annotate *a, const struct annotate_line *l, const char *sep,
		      const char *indent)
{
	printf("%s\n%s{\"line\": %" PRIu32 ", \"calls\": %" PRIu64 ", \"entries\": %" PRIu64
	       ", \"total_ns\": %" PRIu64 ", \"self_ns\": %" PRIu64 ", \"alloc_bytes\": %" PRIu64
	       ", \"allocations\": %" PRIu64 ", \"samples\": %" PRIu64,
	       sep, indent, l->line, l->calls, l->entries, l->total_ns, l->self_ns, l->alloc_bytes,
	       l->allocations, l->samples);
	if (a->sampled)
		printf(", \"sampled_ns\": %" PRIu64, l->sampled_ns);
	printf("}");
}

/* FUNCTION and SOURCE:LINE: each section with its lines (in line order)
 * and the hottest of them (line numbers, hottest first, up to --hot). */
static void json_sections(const struct annotate_cli *o, const struct annotate *a)
{
	printf(",\n \"functions\": [");
	for (size_t i = 0; i < o->nsecs; i++) {
		const struct section *sec = &o->secs[i];
		const struct annotate_file *f = sec->file;
		const struct annotate_line **ranked;
		size_t nranked, j, k = 0;
		int by_samples = sec_by_samples(sec);

		printf("%s\n  {\"name\": ", i ? "," : "");
		if (sec->fn)
			json_str(stdout, sec->fn->name);
		else
			printf("null");
		printf(", \"path\": ");
		json_str(stdout, f->path);
		printf(", \"first_line\": %" PRIu32 ", \"last_line\": %" PRIu32, sec->lo, sec->hi);
		if (sec->line)
			printf(", \"line\": %" PRIu32, sec->line);
		if (sec->fn)
			printf(", \"calls\": %" PRIu64 ", \"self_ns\": %" PRIu64, sec->fn->calls,
			       sec->fn->self_ns);
		printf(", \"ranked_by\": \"%s\", \"lines\": [", by_samples ? "samples" : "time");
		for (j = 0; j < f->nlines; j++)
			if (f->lines[j].line >= sec->lo && f->lines[j].line <= sec->hi)
				json_line(a, &f->lines[j], k++ ? "," : "", "    ");
		printf("%s], \"hottest\": [", k ? "\n  " : "");
		ranked = sec_ranked(sec, by_samples, &nranked);
		for (j = 0; j < nranked && j < o->hot; j++)
			printf("%s%" PRIu32, j ? ", " : "", ranked[j]->line);
		printf("]}");
		free(ranked);
	}
	printf("%s]", o->nsecs ? "\n " : "");
}

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
		for (j = 0; j < f->nlines; j++)
			json_line(a, &f->lines[j], j ? "," : "", "    ");
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
	printf(", \"self_ns\": %" PRIu64 "}", a->total_self_ns);
	if (o->nsecs)
		json_sections(o, a);
	printf(",\n ");
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
	classify(&o, a, file);
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
	free(o.args);
	free(o.secs);
	free(o.source_dirs);
	free(o.map_old);
	free(o.map_new);
	cli_finish(v);
	debuginfo_free(o.di);
	return 0;
}
