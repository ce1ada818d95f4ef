/* SPDX-License-Identifier: MIT */
/* cmd-memory.c - cygprof memory: heap analysis of a capture recorded with
 * --memory: totals, functions, heap over time, the stacks behind leaks, the
 * peak, temporaries or growth, callers and callees of a function; or JSON. */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "debuginfo.h"
#include "diff.h"
#include "diff-print.h"
#include "memory.h"
#include "format.h"
#include "json.h"
#include "view.h"
#include "textesc.h"

enum sort_key { SORT_TOTAL, SORT_SELF, SORT_ALLOCS, SORT_TEMP, SORT_LEAKED, SORT_NAME };
enum stack_kind { K_LEAKS, K_PEAK, K_TEMP, K_DIFF, K_COUNT };

static const char *const kind_names[K_COUNT] = {"leaks", "peak", "temporary", "diff"};

struct memory_cli {
	struct cli_filter filt;
	int json;
	enum sort_key sort;
	int sort_given;    /* --sort: also --diff's order (default: total) */
	const char *function;
	uint32_t points;
	size_t top;
	int top_given;
	int kinds[K_COUNT];
	uint64_t t1, t2;
	const char *file;
	const char *old, *new; /* --diff OLD NEW: two captures compared */
	struct debuginfo *di;
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: cygprof memory [options] [FILE]\n"
		"\n"
		"Heap analysis of a capture recorded with 'cygprof record --memory'\n"
		"(FILE defaults to " CYGPROF_DEFAULT_CAPTURE "): totals, allocations per function,\n"
		"and the heap over time.\n"
		"\n"
		"options:\n"
		"  --leaks                the stacks of the blocks never freed\n"
		"  --peak                 the stacks of the blocks live at the peak\n"
		"  --temporary            the stacks of temporary allocations\n"
		"  --diff T1 T2           the stacks of blocks live at T2 allocated after T1\n"
		"                         (times from the capture start; units s, ms, us, ns;\n"
		"                         default s)\n"
		"  --diff OLD NEW         compare two captures (no FILE then): per function\n"
		"                         and allocation stack (matched by function names,\n"
		"                         a function repeated in adjacent frames once)\n"
		"                         the allocated bytes, allocations, leaked and peak\n"
		"                         bytes of OLD and NEW, largest change first (two\n"
		"                         captures: OLD is an existing file, or does not\n"
		"                         start with a digit or '.' and NEW is an existing\n"
		"                         file or OLD holds a '/')\n"
		"  --top N                stacks (and text function lines) shown, 0 for all\n"
		"                         (default 20)\n"
		"  --function NAME        callers and callees of NAME (exact name or glob)\n"
		CLI_FILTER_HELP
		"                         (on allocation stacks: -F keeps the allocations made\n"
		"                         under a matching function, -N takes frames out, -D\n"
		"                         keeps the D outermost frames; --time-range keeps the\n"
		"                         allocations made in it, and needs no timeline)\n"
		"  --sort KEY             function order: self (default: the bytes each\n"
		"                         allocated itself, then total), total, allocations,\n"
		"                         temporary, leaked, name\n"
		"  --points N             heap-over-time points (default 50)\n"
		"  --format FMT           text (default) or json\n"
		CLI_DEBUG_HELP
		"  -h, --help             this help\n");
}

/* Whether --diff OLD NEW names two captures rather than two times: OLD is
 * an existing file, or OLD does not start like a number and either NEW is
 * an existing file or OLD holds a '/'.  So every T1 T2 keeps its meaning
 * (a bad one is still reported as a bad time) and a missing capture beside
 * an existing one is reported as missing. */
static int diff_names_capture(const char *old, const char *new)
{
	struct stat st;

	if (!lstat(old, &st))
		return 1;
	if ((old[0] >= '0' && old[0] <= '9') || old[0] == '.')
		return 0;
	return !lstat(new, &st) || strchr(old, '/');
}

/* --diff times: up to about 31 years, well inside the 64-bit ns of a capture */
#define DIFF_MAX_NS (1000000000ULL * 1000000000ULL)

static void parse_opts(int argc, char **argv, struct memory_cli *o)
{
	enum {
		O_LEAKS = 256, O_PEAK, O_TEMP, O_DIFF, O_TOP, O_SORT, O_POINTS, O_FORMAT,
	};
	static const struct option lopts[] = {
		{"leaks", no_argument, NULL, O_LEAKS},
		{"peak", no_argument, NULL, O_PEAK},
		{"temporary", no_argument, NULL, O_TEMP},
		{"diff", required_argument, NULL, O_DIFF},
		{"top", required_argument, NULL, O_TOP},
		{"function", required_argument, NULL, 0x4300},
		CLI_FILTER_OPTIONS,
		{"sort", required_argument, NULL, O_SORT},
		{"points", required_argument, NULL, O_POINTS},
		{"format", required_argument, NULL, O_FORMAT},
		CLI_DEBUG_OPTIONS,
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	static const char *const sorts[] = {"total", "self", "allocations", "temporary", "leaked",
					    "name"};
	struct cli_getopt g = {.cmd = "memory", .usage = usage, .shortopts = ":hF:N:D:",
			       .longopts = lopts};
	size_t i;
	int c;

	memset(o, 0, sizeof(*o));
	/* the functions that allocate first: by total bytes the table opened
	 * on main and every caller above the allocations at 99-100% */
	o->sort = SORT_SELF;
	o->points = 50;
	o->top = 20;
	g.di = o->di = cli_debuginfo_new();
	g.filt = &o->filt;
	while ((c = cli_next_option(&g, argc, argv)) != -1) {
		switch (c) {
		case 0x4300:
			o->function = optarg;
			break;
		case O_LEAKS:
			o->kinds[K_LEAKS] = 1;
			break;
		case O_PEAK:
			o->kinds[K_PEAK] = 1;
			break;
		case O_TEMP:
			o->kinds[K_TEMP] = 1;
			break;
		case O_DIFF:
			if (optind >= argc)
				cli_die(2, "memory: option '--diff' needs two times T1 T2 or two captures OLD NEW (see 'cygprof memory --help')");
			if (diff_names_capture(optarg, argv[optind])) {
				o->old = optarg;
				o->new = argv[optind++];
				break;
			}
			o->t1 = cli_parse_duration("memory", "--diff T1", optarg, "s", DIFF_MAX_NS);
			o->t2 = cli_parse_duration("memory", "--diff T2", argv[optind], "s",
						   DIFF_MAX_NS);
			optind++;
			if (o->t2 < o->t1)
				cli_die(2, "memory: --diff T1 T2 needs T1 <= T2");
			o->kinds[K_DIFF] = 1;
			break;
		case O_TOP:
			o->top = (size_t)cli_parse_uint("memory", "--top", optarg, 0, SIZE_MAX);
			o->top_given = 1;
			break;
		case O_POINTS:
			o->points = (uint32_t)cli_parse_uint("memory", "--points", optarg, 0, 100000);
			break;
		case O_SORT:
			for (i = 0; i < sizeof(sorts) / sizeof(sorts[0]); i++)
				if (!strcmp(optarg, sorts[i]))
					break;
			if (i == sizeof(sorts) / sizeof(sorts[0]))
				cli_die(2, "memory: unknown sort key '%s' (total, self, allocations, temporary, leaked, name)",
					optarg);
			o->sort = (enum sort_key)i;
			o->sort_given = 1;
			break;
		case O_FORMAT:
			o->json = cli_format_json("memory", optarg);
			break;
		}
	}
	if (o->old) {
		if (optind < argc)
			cli_die(2, "memory: --diff OLD NEW takes no other capture ('%s')", argv[optind]);
		for (i = 0; i < K_COUNT; i++)
			if (o->kinds[i])
				cli_die(2, "memory: --diff OLD NEW compares captures; --%s does not apply",
					kind_names[i]);
		if (o->function)
			cli_die(2, "memory: --diff OLD NEW compares captures; --function does not apply");
		if (o->filt.any)
			cli_die(2, "memory: --diff OLD NEW compares captures; the filters do not apply");
		return;
	}
	o->file = cli_capture_arg("memory", argc, argv);
}

/* ---- sorting --------------------------------------------------------------- */

static const struct memory *sort_m;
static enum sort_key sort_by;

static int cmp_u64_desc(uint64_t a, uint64_t b)
{
	return a < b ? 1 : a > b ? -1 : 0;
}

static int cmp_fn(const void *pa, const void *pb)
{
	const struct memory_fn *a = &sort_m->fns[*(const uint32_t *)pa];
	const struct memory_fn *b = &sort_m->fns[*(const uint32_t *)pb];
	int c = 0;

	switch (sort_by) {
	case SORT_TOTAL:
		break;
	case SORT_SELF:
		c = cmp_u64_desc(a->self_bytes, b->self_bytes);
		break;
	case SORT_ALLOCS:
		c = cmp_u64_desc(a->total_allocations, b->total_allocations);
		break;
	case SORT_TEMP:
		c = cmp_u64_desc(a->total_temporary, b->total_temporary);
		break;
	case SORT_LEAKED:
		c = cmp_u64_desc(a->total_leaked_bytes, b->total_leaked_bytes);
		break;
	case SORT_NAME:
		return strcmp(a->name, b->name);
	}
	if (!c)
		c = cmp_u64_desc(a->total_bytes, b->total_bytes);
	if (!c)
		c = cmp_u64_desc(a->total_allocations, b->total_allocations);
	return c ? c : strcmp(a->name, b->name);
}

static uint32_t *sorted_fns(const struct memory *m, enum sort_key key, size_t *n)
{
	uint32_t *v = malloc((m->nfns ? m->nfns : 1) * sizeof(*v));
	size_t i, k = 0;

	if (!v)
		cli_die(1, "out of memory");
	for (i = 0; i < m->nfns; i++)
		if (m->fns[i].total_allocations)
			v[k++] = (uint32_t)i;
	sort_m = m;
	sort_by = key;
	qsort(v, k, sizeof(*v), cmp_fn);
	*n = k;
	return v;
}

/* The figures of a stack for a kind: blocks and bytes. */
static void kind_figures(const struct memory_stack *s, enum stack_kind k, uint64_t *blocks,
			 uint64_t *bytes)
{
	switch (k) {
	case K_LEAKS:
		*blocks = s->leaked_allocations;
		*bytes = s->leaked_bytes;
		break;
	case K_PEAK:
		*blocks = s->peak_blocks;
		*bytes = s->peak_bytes;
		break;
	case K_TEMP:
		*blocks = s->temporary;
		*bytes = s->temporary_bytes;
		break;
	default:
		*blocks = s->diff_blocks;
		*bytes = s->diff_bytes;
		break;
	}
}

static enum stack_kind sort_kind;

static int cmp_stack(const void *pa, const void *pb)
{
	const struct memory_stack *a = &sort_m->stacks[*(const uint32_t *)pa];
	const struct memory_stack *b = &sort_m->stacks[*(const uint32_t *)pb];
	uint64_t na, ba, nb, bb;
	int c;

	kind_figures(a, sort_kind, &na, &ba);
	kind_figures(b, sort_kind, &nb, &bb);
	c = cmp_u64_desc(ba, bb);
	if (!c)
		c = cmp_u64_desc(na, nb);
	return c ? c : (a->id > b->id) - (a->id < b->id);
}

/* Stacks with a non-zero count for kind, largest bytes first, at most top. */
static uint32_t *sorted_stacks(const struct memory *m, enum stack_kind k, size_t top, size_t *n)
{
	uint32_t *v = malloc((m->nstacks ? m->nstacks : 1) * sizeof(*v));
	size_t i, j = 0;

	if (!v)
		cli_die(1, "out of memory");
	for (i = 0; i < m->nstacks; i++) {
		uint64_t blocks, bytes;

		if (!m->stacks[i].used)
			continue;
		kind_figures(&m->stacks[i], k, &blocks, &bytes);
		if (blocks)
			v[j++] = (uint32_t)i;
	}
	sort_m = m;
	sort_kind = k;
	qsort(v, j, sizeof(*v), cmp_stack);
	*n = top && j > top ? top : j;
	return v;
}

/* Stacks whose frames read the same (names, files, lines) are shown as one:
 * they differ only in return addresses (an unrolled loop, two calls on a
 * line).  The frames of a group are those of its first stack. */
struct stack_group {
	char *key;
	struct view_frame *fr;
	size_t nf;
	uint32_t id; /* the first stack */
	uint64_t blocks, bytes, allocations;
};

static int cmp_group_key(const void *a, const void *b)
{
	return strcmp(((const struct stack_group *)a)->key, ((const struct stack_group *)b)->key);
}

static int cmp_group_bytes(const void *a, const void *b)
{
	const struct stack_group *x = a, *y = b;
	if (x->bytes != y->bytes)
		return x->bytes > y->bytes ? -1 : 1;
	if (x->blocks != y->blocks)
		return x->blocks > y->blocks ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

static char *frames_key(const struct view_frame *fr, size_t nf)
{
	size_t len = 1, j;
	char *key, *p;

	for (j = 0; j < nf; j++)
		len += strlen(fr[j].name) + (fr[j].file ? strlen(fr[j].file) : 0) + 16 +
		       (fr[j].inlined_in ? strlen(fr[j].inlined_in) + 1 : 0);
	key = p = malloc(len);
	if (!key)
		cli_die(1, "out of memory");
	*p = 0;
	for (j = 0; j < nf; j++)
		p += sprintf(p, "%s|%s|%u|%s;", fr[j].name, fr[j].file ? fr[j].file : "",
			     fr[j].line, fr[j].inlined_in ? fr[j].inlined_in : "");
	return key;
}

static void free_groups(struct stack_group *g, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		free(g[i].key);
		free(g[i].fr);
	}
	free(g);
}

static struct stack_group *group_stacks(struct view *v, const struct memory *m,
					enum stack_kind k, size_t top, size_t *ngroups)
{
	size_t n, i, out = 0;
	uint32_t *ids = sorted_stacks(m, k, 0, &n);
	struct stack_group *g = calloc(n ? n : 1, sizeof(*g));

	if (!g)
		cli_die(1, "out of memory");
	for (i = 0; i < n; i++) {
		const struct memory_stack *s = &m->stacks[ids[i]];
		int err = view_stack(v, s->id, VIEW_LINES, memory_frame_skipped, &g[i].fr, &g[i].nf);
		if (err)
			cli_die(1, "%s", cygprof_strerror(err));
		kind_figures(s, k, &g[i].blocks, &g[i].bytes);
		g[i].allocations = s->allocations;
		g[i].id = s->id;
		g[i].key = frames_key(g[i].fr, g[i].nf);
	}
	free(ids);
	qsort(g, n, sizeof(*g), cmp_group_key);
	for (i = 0; i < n; i++) {
		if (out && !strcmp(g[out - 1].key, g[i].key)) {
			struct stack_group *d = &g[out - 1];
			d->blocks += g[i].blocks;
			d->bytes += g[i].bytes;
			d->allocations += g[i].allocations;
			if (g[i].id < d->id) {
				struct view_frame *t = d->fr;
				size_t tn = d->nf;
				d->fr = g[i].fr;
				d->nf = g[i].nf;
				d->id = g[i].id;
				g[i].fr = t;
				g[i].nf = tn;
			}
			free(g[i].key);
			free(g[i].fr);
			continue;
		}
		g[out++] = g[i];
	}
	qsort(g, out, sizeof(*g), cmp_group_bytes);
	for (i = top && out > top ? top : out; i < out; i++) {
		free(g[i].key);
		free(g[i].fr);
	}
	*ngroups = top && out > top ? top : out;
	return g;
}

/* ---- text -------------------------------------------------------------------- */

static void print_totals(const struct memory *m, const char *command)
{
	const struct memory_totals *t = &m->t;
	char h[32], d[32];

	if (command)
		printf("Memory: %s\n\n", text_esc(command));
	printf("  allocations          %12" PRIu64 "   %" PRIu64 " bytes (%s)\n", t->allocations,
	       t->allocated_bytes, fmt_bytes(h, sizeof(h), t->allocated_bytes, FMT_BYTES_IEC));
	printf("  frees                %12" PRIu64 "   %" PRIu64 " bytes\n", t->frees,
	       t->freed_bytes);
	printf("  peak                 %12" PRIu64 " bytes (%s) in %" PRIu64 " blocks", t->peak_bytes,
	       fmt_bytes(h, sizeof(h), t->peak_bytes, FMT_BYTES_IEC), t->peak_blocks);
	if (t->peak_ts_ns != MEMORY_NO_TIME)
		printf(" at %s", fmt_dur(d, sizeof(d), t->peak_ts_ns));
	printf("\n");
	printf("  leaked               %12" PRIu64 " blocks, %" PRIu64 " bytes (%s)\n",
	       t->leaked_allocations, t->leaked_bytes,
	       fmt_bytes(h, sizeof(h), t->leaked_bytes, FMT_BYTES_IEC));
	printf("  temporary            %12" PRIu64 " allocations, %" PRIu64 " bytes\n",
	       t->temporary_allocations, t->temporary_bytes);
	printf("  cross-thread frees   %12" PRIu64 "\n", t->cross_thread_frees);
	printf("  untracked frees      %12" PRIu64 "\n", t->untracked_frees);
	if (t->untracked_reallocs)
		printf("  untracked reallocs   %12" PRIu64 "\n", t->untracked_reallocs);
	printf("\n");
}

static void print_functions(const struct memory *m, const struct memory_cli *o)
{
	uint32_t *v;
	size_t n, i, shown;

	v = sorted_fns(m, o->sort, &n);
	shown = o->top && n > o->top ? o->top : n;
	printf("Functions (by %s):\n\n",
	       (const char *[]){"total bytes, with their callees'",
				"self bytes, allocated in the function itself; then total bytes",
				"allocations", "temporary", "leaked bytes", "name"}[o->sort]);
	printf("%6s %6s %14s %14s %10s %10s %10s %12s  %s\n", "self%", "total%", "self bytes",
	       "total bytes", "allocs", "temporary", "leaks", "leaked bytes", "function");
	for (i = 0; i < shown; i++) {
		const struct memory_fn *f = &m->fns[v[i]];

		double all = (double)m->t.allocated_bytes;

		printf("%6.2f %6.2f %14" PRIu64 " %14" PRIu64 " %10" PRIu64 " %10" PRIu64
		       " %10" PRIu64 " %12" PRIu64 "  %s\n",
		       all > 0 ? 100.0 * (double)f->self_bytes / all : 0.0,
		       all > 0 ? 100.0 * (double)f->total_bytes / all : 0.0, f->self_bytes,
		       f->total_bytes, f->total_allocations, f->total_temporary,
		       f->total_leaked_allocations, f->total_leaked_bytes, text_esc(f->name));
	}
	if (shown < n)
		printf("  ... %zu more (--top 0 shows all)\n", n - shown);
	printf("\n");
	free(v);
}

static void print_heap(const struct memory *m)
{
	enum { ROWS = 8 };
	uint64_t max = 0;
	size_t i, r;
	char h[32], d[32];

	if (!m->npoints)
		return;
	for (i = 0; i < m->npoints; i++)
		if (m->heap[i].live_bytes > max)
			max = m->heap[i].live_bytes;
	printf("Heap over time (maximum live bytes per interval, peak %s):\n\n",
	       fmt_bytes(h, sizeof(h), max, FMT_BYTES_IEC));
	for (r = ROWS; r >= 1; r--) {
		printf("%12s |", r == ROWS ? fmt_bytes(h, sizeof(h), max, FMT_BYTES_IEC) : "");
		for (i = 0; i < m->npoints; i++) {
			/* filled when the point reaches this row's lower edge */
			uint64_t v = m->heap[i].live_bytes;

			putchar(max && v * ROWS > (uint64_t)(r - 1) * max ? '#' : ' ');
		}
		putchar('\n');
	}
	printf("%12s +", "0");
	for (i = 0; i < m->npoints; i++)
		putchar('-');
	printf("\n%14s%s\n\n", "", "time ->");
	printf("%14s %16s\n", "time", "live bytes");
	for (i = 0; i < m->npoints; i++)
		printf("%14s %16" PRIu64 "\n", fmt_dur(d, sizeof(d), m->heap[i].ts_ns),
		       m->heap[i].live_bytes);
	printf("\n");
}

static void print_stacks_text(struct view *v, const struct memory *m, const struct memory_cli *o,
			      enum stack_kind k)
{
	static const char *const titles[K_COUNT] = {
		"Leaked blocks", "Blocks live at the peak", "Temporary allocations",
		"Blocks live at T2 allocated after T1",
	};
	struct stack_group *g;
	size_t n, i, j;
	char d1[32], d2[32];

	g = group_stacks(v, m, k, o->top, &n);
	printf("%s", titles[k]);
	if (k == K_DIFF)
		printf(" (T1 %s, T2 %s)", fmt_dur(d1, sizeof(d1), o->t1),
		       fmt_dur(d2, sizeof(d2), o->t2));
	printf(", by stack:\n\n");
	if (!n)
		printf("  none\n\n");
	for (i = 0; i < n; i++) {
		const struct view_frame *fr = g[i].fr;
		size_t nf = g[i].nf;

		printf("%" PRIu64 " bytes in %" PRIu64 " blocks", g[i].bytes, g[i].blocks);
		if (k == K_TEMP)
			printf(" (of %" PRIu64 " allocations)", g[i].allocations);
		printf(":\n");
		if (!nf)
			printf("    <unknown>\n");
		for (j = 0; j < nf; j++) {
			if (fr[j].file)
				printf("    %s (%s:%u)", text_esc(fr[j].name), text_esc(fr[j].file), fr[j].line);
			else
				printf("    %s", text_esc(fr[j].name));
			if (fr[j].inlined_in)
				printf(", inlined in %s", text_esc(fr[j].inlined_in));
			printf("\n");
		}
		printf("\n");
	}
	free_groups(g, n);
}

static void print_rel_line(const struct memory *m, const struct memory_rel *r, const char *name)
{
	printf("%14" PRIu64 " %10" PRIu64 " %10" PRIu64 " %10" PRIu64 " %12" PRIu64 "  %s\n",
	       r->bytes, r->allocations, r->frees, r->temporary, r->leaked_bytes,
	       text_esc(name ? name : m->fns[r->fn].name));
}

static void print_related_text(const struct memory *m, const struct memory_cli *o,
			       const struct memory_rel *cr, size_t ncr,
			       const struct memory_rel *ce, size_t nce,
			       const struct memory_rel *self)
{
	size_t i;

	printf("Function %s:\n\n", text_esc(o->function));
	printf("%14s %10s %10s %10s %12s  %s\n", "bytes", "allocs", "frees", "temporary",
	       "leaked bytes", "function");
	print_rel_line(m, self, o->function);
	printf("\nCallers:\n");
	for (i = 0; i < ncr; i++)
		print_rel_line(m, &cr[i], NULL);
	if (!ncr)
		printf("  none\n");
	printf("\nCallees:\n");
	for (i = 0; i < nce; i++)
		print_rel_line(m, &ce[i], NULL);
	if (!nce)
		printf("  none\n");
	printf("\n");
}

/* ---- JSON ---------------------------------------------------------------------- */

static void json_totals(const struct memory *m, const struct memory_cli *o)
{
	const struct memory_totals *t = &m->t;

	printf("  \"totals\": {\"allocations\": %" PRIu64 ", \"frees\": %" PRIu64
	       ", \"allocated_bytes\": %" PRIu64 ", \"freed_bytes\": %" PRIu64
	       ", \"peak_bytes\": %" PRIu64 ", \"peak_blocks\": %" PRIu64,
	       t->allocations, t->frees, t->allocated_bytes, t->freed_bytes, t->peak_bytes,
	       t->peak_blocks);
	if (t->peak_pos != MEMORY_NO_TIME)
		printf(", \"peak_position\": %" PRIu64 ", \"peak_ts_ns\": %" PRIu64, t->peak_pos,
		       t->peak_ts_ns);
	else
		printf(", \"peak_position\": null, \"peak_ts_ns\": null");
	printf(", \"leaked_allocations\": %" PRIu64 ", \"leaked_bytes\": %" PRIu64
	       ", \"temporary_allocations\": %" PRIu64 ", \"temporary_bytes\": %" PRIu64
	       ", \"cross_thread_frees\": %" PRIu64 ", \"untracked_frees\": %" PRIu64
	       ", \"untracked_reallocs\": %" PRIu64 ", \"events\": %" PRIu64
	       ", \"duration_ns\": %" PRIu64,
	       t->leaked_allocations, t->leaked_bytes, t->temporary_allocations,
	       t->temporary_bytes, t->cross_thread_frees, t->untracked_frees,
	       t->untracked_reallocs, t->events, m->opts.duration_ns);
	if (o->kinds[K_DIFF])
		printf(", \"diff_t1_ns\": %" PRIu64 ", \"diff_t2_ns\": %" PRIu64
		       ", \"diff_blocks\": %" PRIu64 ", \"diff_bytes\": %" PRIu64,
		       o->t1, o->t2, t->diff_blocks, t->diff_bytes);
	printf("},\n");
}

static void json_functions(const struct memory *m, const struct memory_cli *o)
{
	uint32_t *v;
	size_t n, i;

	v = sorted_fns(m, o->sort, &n);
	printf("  \"functions\": [");
	for (i = 0; i < n; i++) {
		const struct memory_fn *f = &m->fns[v[i]];

		printf("%s\n    {\"name\": ", i ? "," : "");
		json_str(stdout, f->name);
		printf(", \"self_allocations\": %" PRIu64 ", \"self_bytes\": %" PRIu64
		       ", \"total_allocations\": %" PRIu64 ", \"total_bytes\": %" PRIu64
		       ", \"self_frees\": %" PRIu64 ", \"total_frees\": %" PRIu64
		       ", \"self_temporary\": %" PRIu64 ", \"total_temporary\": %" PRIu64
		       ", \"self_leaked_allocations\": %" PRIu64 ", \"self_leaked_bytes\": %" PRIu64
		       ", \"total_leaked_allocations\": %" PRIu64
		       ", \"total_leaked_bytes\": %" PRIu64 ", \"self_peak_bytes\": %" PRIu64
		       ", \"total_peak_bytes\": %" PRIu64 ", \"share\": %.6f}",
		       f->self_allocations, f->self_bytes, f->total_allocations, f->total_bytes,
		       f->self_frees, f->total_frees, f->self_temporary, f->total_temporary,
		       f->self_leaked_allocations, f->self_leaked_bytes, f->total_leaked_allocations,
		       f->total_leaked_bytes, f->self_peak_bytes, f->total_peak_bytes,
		       m->t.allocated_bytes ? (double)f->total_bytes / (double)m->t.allocated_bytes
					    : 0.0);
	}
	printf("%s]", n ? "\n  " : "");
	free(v);
}

static void json_heap(const struct memory *m)
{
	size_t i;

	printf("  \"heap\": [");
	for (i = 0; i < m->npoints; i++)
		printf("%s\n    {\"ts_ns\": %" PRIu64 ", \"live_bytes\": %" PRIu64 "}", i ? "," : "",
		       m->heap[i].ts_ns, m->heap[i].live_bytes);
	printf("%s]", m->npoints ? "\n  " : "");
}

static void json_stacks(struct view *v, const struct memory *m, const struct memory_cli *o)
{
	int k, any = 0;

	printf("  \"stacks\": [");
	for (k = 0; k < K_COUNT; k++) {
		struct stack_group *g;
		size_t n, i, j;

		if (!o->kinds[k])
			continue;
		g = group_stacks(v, m, (enum stack_kind)k, o->top, &n);
		for (i = 0; i < n; i++) {
			const struct view_frame *fr = g[i].fr;
			size_t nf = g[i].nf;

			printf("%s\n    {\"kind\": \"%s\", \"id\": %u, \"allocations\": %" PRIu64
			       ", \"bytes\": %" PRIu64 ", \"frames\": [",
			       any++ ? "," : "", kind_names[k], g[i].id, g[i].blocks, g[i].bytes);
			for (j = 0; j < nf; j++) {
				printf("%s{\"name\": ", j ? ", " : "");
				json_str(stdout, fr[j].name);
				if (fr[j].inlined_in) {
					printf(", \"inlined_in\": ");
					json_str(stdout, fr[j].inlined_in);
				}
				if (fr[j].file) {
					printf(", \"file\": ");
					json_str(stdout, fr[j].file);
					printf(", \"line\": %u}", fr[j].line);
				} else {
					printf(", \"file\": null, \"line\": null}");
				}
			}
			printf("]}");
		}
		free_groups(g, n);
	}
	printf("%s]", any ? "\n  " : "");
}

static void json_rel(const char *key, const struct memory *m, const struct memory_rel *r,
		     size_t n)
{
	size_t i;

	printf("  \"%s\": [", key);
	for (i = 0; i < n; i++) {
		printf("%s\n    {\"name\": ", i ? "," : "");
		json_str(stdout, m->fns[r[i].fn].name);
		printf(", \"stacks\": %" PRIu64 ", \"allocations\": %" PRIu64 ", \"bytes\": %" PRIu64
		       ", \"frees\": %" PRIu64 ", \"temporary\": %" PRIu64
		       ", \"leaked_allocations\": %" PRIu64 ", \"leaked_bytes\": %" PRIu64 "}",
		       r[i].stacks, r[i].allocations, r[i].bytes, r[i].frees, r[i].temporary,
		       r[i].leaked_allocations, r[i].leaked_bytes);
	}
	printf("%s]", n ? "\n  " : "");
}

/* ---- --diff OLD NEW: two captures compared ------------------------------------ */

/* The values compared, per function (its total figures, and self bytes) and
 * per stack (its own figures; self bytes = bytes). */
enum { MV_BYTES, MV_SELF, MV_ALLOCS, MV_LEAKED, MV_PEAK, MV_TEMP, MV_COUNT };
static const char *const mv_names[MV_COUNT] = {
	"bytes", "self_bytes", "allocations", "leaked_bytes", "peak_bytes", "temporary",
};

struct mem_side {
	const char *file;
	struct view *v;
	struct memory *m;
	struct diff_entry *fns, *stacks;
	size_t nfns, nstacks;
	char **strs;
	size_t nstrs;
};

static void mem_side_load(struct mem_side *s, struct debuginfo *di)
{
	struct memory_opts mo;
	uint32_t *ids;
	size_t i, n, k;
	int err;

	s->v = cli_open_view(s->file, di);
	cli_need(s->v, s->file, "memory", "memory events");
	memset(&mo, 0, sizeof(mo));
	err = memory_load(s->v, &mo, &s->m);
	cli_check(err, s->file);
	s->fns = calloc(s->m->nfns + 1, sizeof(*s->fns));
	if (!s->fns)
		cli_die(1, "out of memory");
	for (i = 0; i < s->m->nfns; i++) {
		const struct memory_fn *f = &s->m->fns[i];
		struct diff_entry *e;

		if (!f->total_allocations)
			continue;
		e = &s->fns[s->nfns++];
		e->key = e->name = f->name;
		e->v[MV_BYTES] = f->total_bytes;
		e->v[MV_SELF] = f->self_bytes;
		e->v[MV_ALLOCS] = f->total_allocations;
		e->v[MV_LEAKED] = f->total_leaked_bytes;
		e->v[MV_PEAK] = f->total_peak_bytes;
		e->v[MV_TEMP] = f->total_temporary;
	}
	diff_merge(s->fns, &s->nfns, MV_COUNT);
	err = memory_used_stacks(s->m, &ids, &n);
	cli_check(err, s->file);
	s->stacks = calloc(n + 1, sizeof(*s->stacks));
	s->strs = calloc(n + 1, sizeof(*s->strs));
	if (!s->stacks || !s->strs)
		cli_die(1, "out of memory");
	for (i = 0; i < n; i++) {
		const struct memory_stack *st = &s->m->stacks[ids[i]];
		struct diff_entry *e = &s->stacks[s->nstacks++];
		size_t len = 1;
		char *key;

		/* the functions from the outermost frame in, joined by ';', a
		 * function repeated in adjacent frames (direct recursion, or the
		 * doubled innermost frame some unwinds give at -O0) once */
		for (k = 0; k < st->nframes; k++)
			len += strlen(s->m->fns[st->fns[k]].name) + 1;
		key = s->strs[s->nstrs++] = malloc(len + sizeof("<unknown>"));
		if (!key)
			cli_die(1, "out of memory");
		key[0] = 0;
		for (k = st->nframes; k-- > 0;) {
			if (k + 1 < st->nframes && st->fns[k] == st->fns[k + 1])
				continue;
			if (key[0])
				strcat(key, ";");
			strcat(key, s->m->fns[st->fns[k]].name);
		}
		if (!st->nframes)
			strcpy(key, "<unknown>");
		e->key = e->name = key;
		e->v[MV_BYTES] = e->v[MV_SELF] = st->bytes;
		e->v[MV_ALLOCS] = st->allocations;
		e->v[MV_LEAKED] = st->leaked_bytes;
		e->v[MV_PEAK] = st->peak_bytes;
		e->v[MV_TEMP] = st->temporary;
	}
	free(ids);
	diff_merge(s->stacks, &s->nstacks, MV_COUNT);
}

static void mem_side_free(struct mem_side *s)
{
	size_t i;

	for (i = 0; i < s->nstrs; i++)
		free(s->strs[i]);
	free(s->strs);
	free(s->fns);
	free(s->stacks);
	memory_free(s->m);
}

static int mem_diff_sort(enum sort_key k)
{
	switch (k) {
	case SORT_SELF:
		return MV_SELF;
	case SORT_ALLOCS:
		return MV_ALLOCS;
	case SORT_TEMP:
		return MV_TEMP;
	case SORT_LEAKED:
		return MV_LEAKED;
	case SORT_NAME:
		return DIFF_BY_NAME;
	default:
		return MV_BYTES;
	}
}

/* Bytes (and for a function the change of its self bytes), allocations,
 * and the change of leaked and peak bytes. */
static const struct diff_col mem_cols[] = {
	{"", 14, MV_BYTES, DIFF_CELL_OLD, 0},     {" ", 14, MV_BYTES, DIFF_CELL_NEW, 0},
	{" ", 14, MV_BYTES, DIFF_CELL_CHANGE, 0}, {" ", 9, MV_BYTES, DIFF_CELL_REL, 0},
	{" ", 12, MV_SELF, DIFF_CELL_CHANGE, 0},  {" ", 10, MV_ALLOCS, DIFF_CELL_OLD, 0},
	{" ", 10, MV_ALLOCS, DIFF_CELL_NEW, 0},   {" ", 10, MV_ALLOCS, DIFF_CELL_CHANGE, 0},
	{" ", 14, MV_LEAKED, DIFF_CELL_CHANGE, 0}, {" ", 14, MV_PEAK, DIFF_CELL_CHANGE, 0},
};
#define MEM_COL_SELF 4 /* not shown for stacks */

/* A function: its name. */
static void fn_label(const struct diff_row *r, int json, void *arg)
{
	(void)arg;
	if (!json) {
		printf("%s", text_esc(diff_row_name(r)));
		return;
	}
	printf("\"name\": ");
	json_str(stdout, diff_row_name(r));
}

/* A stack: its functions from the outermost, joined by ';' in its name. */
static void stack_label(const struct diff_row *r, int json, void *arg)
{
	const char *p = diff_row_name(r), *semi;

	(void)arg;
	if (!json) {
		printf("%s", text_esc(p));
		return;
	}
	printf("\"stack\": [");
	for (;;) {
		char *part;

		semi = strchr(p, ';');
		part = strndup(p, semi ? (size_t)(semi - p) : strlen(p));
		if (!part)
			cli_die(1, "out of memory");
		json_str(stdout, part);
		free(part);
		if (!semi)
			break;
		printf(", ");
		p = semi + 1;
	}
	printf("]");
}

/* The rows of functions or stacks (cols: room for mem_cols). */
static struct diff_table mem_table(size_t top, int stacks, struct diff_col *cols)
{
	static const char *const stack_names[MV_COUNT] = {
		"bytes", NULL, "allocations", "leaked_bytes", "peak_bytes", "temporary",
	};
	size_t i, n = 0;

	for (i = 0; i < MV_COUNT + 4; i++)
		if (!stacks || i != MEM_COL_SELF)
			cols[n++] = mem_cols[i];
	return (struct diff_table){
		.cols = cols,
		.ncols = n,
		.names = stacks ? stack_names : mv_names,
		.nvalues = MV_COUNT,
		.label = stacks ? stack_label : fn_label,
		.top = top,
	};
}

static void mem_rows_text(const char *title, const struct diff_row *r, size_t n, size_t top,
			  int stacks)
{
	struct diff_col cols[MV_COUNT + 4];
	struct diff_table t = mem_table(top, stacks, cols);
	size_t shown;

	printf("%s:\n\n", title);
	printf("%14s %14s %14s %9s", "bytes old", "bytes new", "change", "%");
	if (!stacks)
		printf(" %12s", "self change");
	printf(" %10s %10s %10s %14s %14s  %s\n", "allocs old", "allocs new", "change",
	       "leaked change", "peak change", stacks ? "stack" : "function");
	shown = diff_print_rows(&t, r, n);
	if (shown < n)
		printf("  ... %zu more (--top 0 shows all)\n", n - shown);
	printf("\n");
}

static void mem_rows_json(const char *what, const struct diff_row *r, size_t n, size_t top,
			  int stacks)
{
	struct diff_col cols[MV_COUNT + 4];
	struct diff_table t = mem_table(top, stacks, cols);

	diff_print_json_rows(what, &t, r, n);
}

static void mem_json_side(const char *what, struct mem_side *s)
{
	const struct memory_totals *t = &s->m->t;

	diff_print_json_side(what, s->file, view_meta_str(s->v, "command"));
	printf(", \"allocations\": %" PRIu64 ", \"allocated_bytes\": %" PRIu64
	       ", \"leaked_bytes\": %" PRIu64 ", \"peak_bytes\": %" PRIu64 "},\n",
	       t->allocations, t->allocated_bytes, t->leaked_bytes, t->peak_bytes);
}

static int memory_diff_captures(struct memory_cli *o)
{
	struct mem_side old, new;
	struct diff_row *fr, *sr;
	size_t nfr, nsr, c[4];
	int by = mem_diff_sort(o->sort_given ? o->sort : SORT_TOTAL);

	memset(&old, 0, sizeof(old));
	memset(&new, 0, sizeof(new));
	old.file = o->old;
	new.file = o->new;
	mem_side_load(&old, o->di);
	mem_side_load(&new, o->di);
	if (diff_match(old.fns, old.nfns, new.fns, new.nfns, MV_COUNT, &fr, &nfr) ||
	    diff_match(old.stacks, old.nstacks, new.stacks, new.nstacks, MV_COUNT, &sr, &nsr))
		cli_die(1, "out of memory");
	diff_sort(fr, nfr, by);
	diff_sort(sr, nsr, by);
	diff_print_count(&(struct diff_table){0}, fr, nfr, c);
	if (o->json) {
		printf("{\n");
		mem_json_side("old", &old);
		mem_json_side("new", &new);
		diff_print_json_summary(c);
		mem_rows_json("functions", fr, nfr, 0, 0);
		printf(",\n");
		mem_rows_json("stacks", sr, nsr, o->top, 1);
		printf("\n}\n");
	} else {
		const struct memory_totals *a = &old.m->t, *b = &new.m->t;
		char h1[32], h2[32];

		printf("# cygprof memory --diff\n# OLD: %s\n# NEW: %s\n\n", old.file, new.file);
		printf("  allocations          %12" PRIu64 " -> %12" PRIu64 "\n", a->allocations,
		       b->allocations);
		printf("  allocated bytes      %12" PRIu64 " -> %12" PRIu64 "   (%s -> %s)\n",
		       a->allocated_bytes, b->allocated_bytes,
		       fmt_bytes(h1, sizeof(h1), a->allocated_bytes, FMT_BYTES_IEC),
		       fmt_bytes(h2, sizeof(h2), b->allocated_bytes, FMT_BYTES_IEC));
		printf("  peak bytes           %12" PRIu64 " -> %12" PRIu64 "\n", a->peak_bytes,
		       b->peak_bytes);
		printf("  leaked bytes         %12" PRIu64 " -> %12" PRIu64 "\n\n", a->leaked_bytes,
		       b->leaked_bytes);
		diff_print_counts("functions", c);
		printf("\n\n");
		mem_rows_text("Functions (total figures; self change: allocated in the function itself)",
			      fr, nfr, o->top, 0);
		mem_rows_text("Allocation stacks (outermost function first)", sr, nsr, o->top, 1);
	}
	free(fr);
	free(sr);
	mem_side_free(&old);
	mem_side_free(&new);
	view_close(old.v);
	cli_finish(new.v);
	debuginfo_free(o->di);
	return 0;
}

/* ---- driver ---------------------------------------------------------------- */

/* Progress on a terminal: a large capture takes seconds to read. */
static int progress_shown;

static void show_progress(uint64_t done, uint64_t total, void *arg)
{
	(void)arg;
	if (total) {
		fprintf(stderr, "\rcygprof: reading memory events: %3u%%",
			(unsigned)(done * 100 / total));
		progress_shown = 1;
	}
}

int cmd_memory(int argc, char **argv)
{
	struct memory_rel *cr = NULL, *ce = NULL, self;
	struct memory_opts mo;
	struct memory_cli o;
	struct memory *m;
	struct view *v;
	size_t ncr = 0, nce = 0;
	const char *command;
	int err, k, stacks = 0;

	parse_opts(argc, argv, &o);
	cli_debuginfo_env(o.di);
	if (o.old)
		return memory_diff_captures(&o);
	v = cli_open_view(o.file, o.di);
	cli_need(v, o.file, "memory", "memory events");
	o.filt.range_any = 1; /* memory events have their own times */
	cli_filter_apply(&o.filt, v, "memory", o.file);
	memset(&mo, 0, sizeof(mo));
	mo.points = o.points;
	mo.diff = o.kinds[K_DIFF];
	mo.diff_t1 = o.t1;
	mo.diff_t2 = o.t2;
	if (isatty(2) && !cli_paged)
		mo.progress = show_progress;
	err = memory_load(v, &mo, &m);
	if (progress_shown)
		fputs("\r\033[K", stderr); /* clear the progress line */
	cli_check(err, o.file);
	for (k = 0; k < K_COUNT; k++)
		stacks |= o.kinds[k];
	if (o.function) {
		err = memory_related(m, o.function, &cr, &ncr, &ce, &nce, &self);
		if (err)
			cli_die(1, "%s", cygprof_strerror(err));
		if (self.fn == MEMORY_NONE && !o.json)
			cli_warn("memory: no function matches '%s'", o.function);
	}

	if (o.json) {
		printf("{\n");
		json_totals(m, &o);
		json_functions(m, &o);
		printf(",\n");
		json_heap(m);
		if (stacks) {
			printf(",\n");
			json_stacks(v, m, &o);
		}
		if (o.function) {
			printf(",\n  \"function\": ");
			json_str(stdout, o.function);
			printf(",\n");
			json_rel("callers", m, cr, ncr);
			printf(",\n");
			json_rel("callees", m, ce, nce);
		}
		printf(",\n  ");
		cli_json_limits(v);
		printf("\n}\n");
	} else {
		command = view_meta_str(v, "command");
		print_totals(m, command);
		if (o.function)
			print_related_text(m, &o, cr, ncr, ce, nce, &self);
		for (k = 0; k < K_COUNT; k++)
			if (o.kinds[k])
				print_stacks_text(v, m, &o, (enum stack_kind)k);
		if (!stacks && !o.function) {
			print_functions(m, &o);
			print_heap(m);
		}
	}
	free(cr);
	free(ce);
	memory_free(m);
	cli_finish(v);
	debuginfo_free(o.di);
	return 0;
}
