/* SPDX-License-Identifier: MIT */
/* cmd-counters.c - `cygprof counters`: the counters of a capture over time,
 * as a table with a chart per line, JSON, CSV or an SVG drawing. */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "counters.h"
#include "instrument.h"
#include "format.h"
#include "json.h"
#include "view.h"
#include "textesc.h"

enum fmt { FMT_TEXT, FMT_JSON, FMT_CSV };

struct counters_opts {
	enum fmt fmt;
	int fmt_given;  /* --format: printed besides --plot */
	const char *plot;
	int force;
	unsigned width;
	const char *file;
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: cygprof counters [options] [FILE]\n"
		"\n"
		"The counters of a capture over time (FILE defaults to " CYGPROF_DEFAULT_CAPTURE "):\n"
		"what 'record -i counters' sampled (meminfo/*, the system's; statm/* and\n"
		"stat/cpu_time, each process's), what 'record -i memdump' read from the\n"
		"program's <cygprof/memdump.h> reports (memdump/*), and with 'record -i\n"
		"memory' each process's live heap (heap/live_bytes, heap/live_blocks: the\n"
		"maximum within each interval).  The text lists one counter per line with\n"
		"its minimum, maximum, last value and a chart over the whole capture.\n"
		"\n"
		"options:\n"
		"  --format FMT     text (default), json or csv\n"
		"  --plot FILE.svg  draw them instead (with --format, as well): one row for\n"
		"                   the system, one per process,\n"
		"                   counters of one unit on one axis, each line named at its end\n"
		"  -f, --force      --plot: also replace a file that is not an SVG drawing\n"
		"  --width N        text: columns of the chart (8 to 200, default 40)\n"
		"  -h, --help       this help\n");
}

static void parse_opts(int argc, char **argv, struct counters_opts *o)
{
	enum { O_FORMAT = 256, O_PLOT, O_WIDTH };
	static const struct option lopts[] = {
		{"format", required_argument, NULL, O_FORMAT},
		{"plot", required_argument, NULL, O_PLOT},
		{"force", no_argument, NULL, 'f'},
		{"width", required_argument, NULL, O_WIDTH},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int c;

	memset(o, 0, sizeof(*o));
	o->width = 40;
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":hf", lopts, NULL)) != -1) {
		switch (c) {
		case 'h':
			usage(stdout);
			exit(0);
		case 'f':
			o->force = 1;
			break;
		case O_FORMAT:
			o->fmt_given = 1;
			if (!strcmp(optarg, "text"))
				o->fmt = FMT_TEXT;
			else if (!strcmp(optarg, "json"))
				o->fmt = FMT_JSON;
			else if (!strcmp(optarg, "csv"))
				o->fmt = FMT_CSV;
			else
				cli_die(2, "counters: unknown format '%s' (text, json, csv)", optarg);
			break;
		case O_PLOT:
			if (!optarg[0])
				cli_die(2, "counters: --plot needs a file name");
			o->plot = optarg;
			break;
		case O_WIDTH:
			o->width = (unsigned)cli_parse_uint("counters", "--width", optarg, 8, 200);
			break;
		default:
			cli_bad_option("counters", c, argv);
		}
	}
	o->file = cli_capture_arg("counters", argc, argv);
}

/* ---- values as people read them -------------------------------------------- */

static void human(char *buf, size_t len, uint32_t unit, double v)
{
	double a = fabs(v);

	if (unit == CYGPROF_UNIT_BYTES) {
		fmt_bytes_real(buf, len, v);
	} else if (unit == CYGPROF_UNIT_NS) {
		if (a >= 1e9)
			snprintf(buf, len, "%.2f s", v / 1e9);
		else if (a >= 1e6)
			snprintf(buf, len, "%.1f ms", v / 1e6);
		else if (a >= 1e3)
			snprintf(buf, len, "%.1f us", v / 1e3);
		else
			snprintf(buf, len, "%.0f ns", v);
	} else {
		snprintf(buf, len, "%.0f", v);
	}
}

static void minmax(const struct counter_series *c, uint64_t *lo, uint64_t *hi)
{
	*lo = *hi = c->n ? counter_value(&c->s[0]) : 0;
	for (size_t i = 1; i < c->n; i++) {
		uint64_t v = counter_value(&c->s[i]);

		if (v < *lo)
			*lo = v;
		if (v > *hi)
			*hi = v;
	}
}

/* ---- text -------------------------------------------------------------------- */

/* One chart column per time slice of the capture: the largest sample in
 * it, scaled between the counter's minimum and maximum; ' ' where the
 * counter has no sample (a process not alive then). */
static void chart(const struct counter_series *c, uint64_t dur, unsigned width)
{
	static const char *const bars[] = {"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
	uint64_t lo, hi;
	size_t k = 0;

	minmax(c, &lo, &hi);
	for (unsigned col = 0; col < width; col++) {
		uint64_t end = dur ? (uint64_t)((double)dur * (col + 1) / width) : 0;
		int have = 0;
		uint64_t m = 0;

		for (; k < c->n && (c->s[k].t_ns <= end || col == width - 1); k++) {
			if (!have || counter_value(&c->s[k]) > m)
				m = counter_value(&c->s[k]);
			have = 1;
		}
		if (!have) {
			fputs(" ", stdout);
			continue;
		}
		fputs(bars[hi > lo ? (int)((double)(m - lo) * 7.0 / (double)(hi - lo) + 0.5) : 0],
		      stdout);
	}
}

static void print_text(struct view *v, const struct counter_set *cs, unsigned width)
{
	uint64_t dur = view_duration_ns(v);
	size_t i, nw = 7;
	char d[32];

	for (i = 0; i < cs->n; i++)
		if (strlen(text_esc(cs->v[i].name)) > nw)
			nw = strlen(text_esc(cs->v[i].name));
	human(d, sizeof d, CYGPROF_UNIT_NS, (double)dur);
	printf("%zu counters over %s; chart: the largest value in each 1/%u of the time\n\n",
	       cs->n, d, width);
	printf("%-*s %7s %7s %11s %11s %11s %-5s  chart\n", (int)nw, "counter", "pid", "samples",
	       "min", "max", "last", "unit");
	for (i = 0; i < cs->n; i++) {
		const struct counter_series *c = &cs->v[i];
		char lo[32], hi[32], last[32], pid[16];
		uint64_t a, b;

		minmax(c, &a, &b);
		human(lo, sizeof lo, c->unit, (double)a);
		human(hi, sizeof hi, c->unit, (double)b);
		human(last, sizeof last, c->unit, c->n ? (double)counter_value(&c->s[c->n - 1]) : 0);
		if (c->proc_idx == CYGPROF_NONE)
			snprintf(pid, sizeof pid, "-");
		else
			snprintf(pid, sizeof pid, "%u", c->pid);
		printf("%-*s %7s %7zu %11s %11s %11s %-5s  ", (int)nw, text_esc(c->name), pid, c->n, lo, hi,
		       last, counters_unit_name(c->unit));
		chart(c, dur, width);
		printf("\n");
	}
}

/* ---- JSON and CSV -------------------------------------------------------------- */

static void print_json(const struct counter_set *cs)
{
	printf("{\"counters\": [");
	for (size_t i = 0; i < cs->n; i++) {
		const struct counter_series *c = &cs->v[i];

		printf("%s\n  {\"name\": ", i ? "," : "");
		json_str(stdout, c->name);
		if (c->proc_idx == CYGPROF_NONE)
			printf(", \"pid\": null");
		else
			printf(", \"pid\": %u", c->pid);
		printf(", \"unit\": \"%s\", \"samples\": [", counters_unit_name(c->unit));
		for (size_t k = 0; k < c->n; k++)
			printf("%s[%" PRIu64 ", %" PRIu64 "]", k ? ", " : "", c->s[k].t_ns,
			       counter_value(&c->s[k]));
		printf("]}");
	}
	printf("%s]}\n", cs->n ? "\n" : "");
}

/* A name is written as is unless it holds a comma, a quote or a line break
 * (RFC 4180). */
static void csv_str(const char *s)
{
	if (!strpbrk(s, ",\"\r\n")) {
		fputs(s, stdout);
		return;
	}
	putchar('"');
	for (; *s; s++) {
		if (*s == '"')
			putchar('"');
		putchar(*s);
	}
	putchar('"');
}

static void print_csv(const struct counter_set *cs)
{
	printf("name,pid,unit,t_ns,value\n");
	for (size_t i = 0; i < cs->n; i++) {
		const struct counter_series *c = &cs->v[i];
		char pid[16] = "";

		if (c->proc_idx != CYGPROF_NONE)
			snprintf(pid, sizeof pid, "%u", c->pid);
		for (size_t k = 0; k < c->n; k++) {
			csv_str(c->name);
			printf(",%s,%s,%" PRIu64 ",%" PRIu64 "\n", pid, counters_unit_name(c->unit),
			       c->s[k].t_ns, counter_value(&c->s[k]));
		}
	}
}

/* ---- SVG ----------------------------------------------------------------------- */

#define SVG_W 1000      /* drawing width */
#define SVG_LEFT 90     /* y-axis labels */
#define SVG_RIGHT 230   /* line names */
#define SVG_PANEL_H 150 /* one unit of one owner */
#define SVG_GAP 46      /* title and x-axis labels of a panel */

static const char *const palette[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e",
				      "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"};

static void xml_str(FILE *f, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '<':
			fputs("&lt;", f);
			break;
		case '>':
			fputs("&gt;", f);
			break;
		case '&':
			fputs("&amp;", f);
			break;
		case '"':
			fputs("&quot;", f);
			break;
		default:
			if ((unsigned char)*s >= 0x20)
				fputc(*s, f);
		}
	}
}

/* A round step for about n ticks over [0, span]. */
static double nice_step(double span, int n)
{
	double raw = span / n, p = pow(10, floor(log10(raw > 0 ? raw : 1))), m = raw / p;

	return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
}

struct label {
	double y;
	const char *name;
	const char *color;
};

static int by_y(const void *a, const void *b)
{
	const struct label *x = a, *y = b;

	return x->y < y->y ? -1 : x->y > y->y;
}

/* One panel: the series idx[0..n) of one owner and one unit. */
/* Where v is on an axis from lo to hi, 0 to 1 (log: by decades, a value
 * at or below lo, such as 0, at the bottom). */
static double svg_frac(double v, double lo, double hi, int logy)
{
	if (!logy)
		return (v - lo) / (hi - lo);
	if (v <= lo)
		return 0;
	return (log10(v) - log10(lo)) / (log10(hi) - log10(lo));
}

static void svg_panel(FILE *f, const struct counter_set *cs, const size_t *idx,
		      size_t n, double top, const char *title, uint64_t dur)
{
	double pw = SVG_W - SVG_LEFT - SVG_RIGHT, y0 = top + 24, ph = SVG_PANEL_H - 30;
	uint32_t unit = cs->v[idx[0]].unit;
	double lo = 0, hi = 0; /* the axis starts at 0: no value is below */
	double small = 0;      /* the smallest of the series' maxima above 0 */
	uint64_t a, b;
	struct label *lab = calloc(n, sizeof(*lab));
	double step, t, xs;
	int logy;
	char buf[32];

	for (size_t i = 0; i < n; i++) {
		minmax(&cs->v[idx[i]], &a, &b);
		if ((double)b > hi)
			hi = (double)b;
		if (b && (!small || (double)b < small))
			small = (double)b;
	}
	/* series more than two decades apart (a 16 GiB statm/size beside a
	 * 16 MiB heap): a log scale, so that none is flattened to the axis */
	logy = small > 0 && hi / small > 100;
	if (logy) {
		lo = pow(10, floor(log10(small)) - 1);
		hi = pow(10, ceil(log10(hi)));
		step = 10;
	} else {
		if (hi == lo)
			hi = lo + 1;
		step = nice_step(hi - lo, 4);
		hi = ceil(hi / step) * step;
	}
	fprintf(f, "<g class=\"panel\"%s>\n<text x=\"%d\" y=\"%.0f\" font-weight=\"bold\">",
		logy ? " data-scale=\"log\"" : "", SVG_LEFT, top + 14);
	xml_str(f, title);
	fprintf(f, " (%s%s)</text>\n", counters_unit_name(unit), logy ? ", log scale" : "");
	fprintf(f, "<rect x=\"%d\" y=\"%.0f\" width=\"%.0f\" height=\"%.0f\" fill=\"none\" "
		   "stroke=\"#999\"/>\n", SVG_LEFT, y0, pw, ph);
	for (double yv = lo; yv <= hi * (logy ? 1.01 : 1) + (logy ? 0 : step / 2);
	     yv = logy ? yv * step : yv + step) {
		double y = y0 + ph - svg_frac(yv, lo, hi, logy) * ph;

		human(buf, sizeof buf, unit, yv);
		fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\" stroke=\"#eee\"/>"
			   "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\" font-size=\"11\">%s</text>\n",
			SVG_LEFT, y, SVG_LEFT + pw, y, SVG_LEFT - 6, y + 4, buf);
	}
	xs = nice_step((double)(dur ? dur : 1), 6);
	for (t = 0; t <= (double)dur; t += xs) {
		double x = SVG_LEFT + t / (double)(dur ? dur : 1) * pw;

		human(buf, sizeof buf, CYGPROF_UNIT_NS, t);
		fprintf(f, "<text x=\"%.1f\" y=\"%.0f\" text-anchor=\"middle\" font-size=\"11\">%s"
			   "</text>\n", x, y0 + ph + 14, buf);
	}
	for (size_t i = 0; i < n; i++) {
		const struct counter_series *c = &cs->v[idx[i]];
		const char *color = palette[i % (sizeof palette / sizeof palette[0])];
		double x = SVG_LEFT, y = y0 + ph;

		fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" points=\"", color);
		for (size_t k = 0; k < c->n; k++) {
			x = SVG_LEFT + (double)c->s[k].t_ns / (double)(dur ? dur : 1) * pw;
			y = y0 + ph - svg_frac((double)counter_value(&c->s[k]), lo, hi, logy) * ph;
			fprintf(f, "%s%.1f,%.1f", k ? " " : "", x > SVG_LEFT + pw ? SVG_LEFT + pw : x, y);
		}
		fprintf(f, "\"><title>");
		xml_str(f, c->name);
		fprintf(f, "</title></polyline>\n");
		lab[i].y = y;
		lab[i].name = c->name;
		lab[i].color = color;
	}
	/* each line named at its end, the names pushed apart to stay readable */
	qsort(lab, n, sizeof(*lab), by_y);
	for (size_t i = 1; i < n; i++)
		if (lab[i].y < lab[i - 1].y + 12)
			lab[i].y = lab[i - 1].y + 12;
	for (size_t i = 0; i < n; i++) {
		fprintf(f, "<text class=\"label\" x=\"%.0f\" y=\"%.1f\" font-size=\"11\" fill=\"%s\">",
			SVG_LEFT + pw + 6, lab[i].y + 4, lab[i].color);
		xml_str(f, lab[i].name);
		fprintf(f, "</text>\n");
	}
	fprintf(f, "</g>\n");
	free(lab);
}

static void owner_title(struct view *v, uint32_t proc, char *buf, size_t len)
{
	const struct cygprof_proc *p = view_proc(v, proc);
	const char *exe = p && p->exe ? strrchr(p->exe, '/') : NULL;

	if (proc == CYGPROF_NONE)
		snprintf(buf, len, "system");
	else if (p)
		snprintf(buf, len, "pid %u %s", p->pid, exe ? exe + 1 : p->exe ? p->exe : "");
	else
		snprintf(buf, len, "process %u", proc);
}

static int write_svg(FILE *f, struct view *v, const struct counter_set *cs)
{
	static const uint32_t units[] = {CYGPROF_UNIT_BYTES, CYGPROF_UNIT_NS, CYGPROF_UNIT_COUNT};
	uint64_t dur = view_duration_ns(v);
	size_t *idx = malloc((cs->n ? cs->n : 1) * sizeof(*idx));
	size_t i, j, panels = 0, rows = 0;
	double top = 0;
	char title[300];

	if (!idx)
		return -1;
	/* count the panels first for the height */
	for (i = 0; i < cs->n; i = j) {
		for (j = i; j < cs->n && cs->v[j].proc_idx == cs->v[i].proc_idx; j++)
			;
		rows++;
		for (size_t u = 0; u < 3; u++)
			for (size_t k = i; k < j; k++)
				if (cs->v[k].unit == units[u]) {
					panels++;
					break;
				}
	}
	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		   "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%zu\" "
		   "font-family=\"sans-serif\" font-size=\"12\">\n"
		   "<title>cygprof counters</title>\n<rect width=\"100%%\" height=\"100%%\" "
		   "fill=\"white\"/>\n",
		SVG_W, panels * (SVG_PANEL_H + SVG_GAP) + rows * 10 + 10);
	for (i = 0; i < cs->n; i = j) {
		uint32_t owner = cs->v[i].proc_idx;

		for (j = i; j < cs->n && cs->v[j].proc_idx == owner; j++)
			;
		owner_title(v, owner, title, sizeof title);
		fprintf(f, "<g class=\"row\" data-owner=\"");
		xml_str(f, title);
		fprintf(f, "\">\n");
		for (size_t u = 0; u < 3; u++) {
			size_t n = 0;

			for (size_t k = i; k < j; k++)
				if (cs->v[k].unit == units[u])
					idx[n++] = k;
			if (!n)
				continue;
			svg_panel(f, cs, idx, n, top, title, dur);
			top += SVG_PANEL_H + SVG_GAP;
		}
		fprintf(f, "</g>\n");
		top += 10;
	}
	fprintf(f, "</svg>\n");
	free(idx);
	return ferror(f) ? -1 : 0;
}

static void plot(struct view *v, const struct counter_set *cs, const char *path, int force)
{
	struct cli_output w;
	FILE *f = cli_output_open(&w, "counters", path, OUT_SVG, force);

	if (write_svg(f, v, cs)) {
		int e = errno; /* the failed write's */

		cli_output_abort(&w);
		cli_die(1, "counters: %s: %s", path, strerror(e ? e : EIO));
	}
	cli_output_commit(&w);
}

int cmd_counters(int argc, char **argv)
{
	struct counters_opts o;
	struct counter_set cs;
	struct view *v;

	parse_opts(argc, argv, &o);
	v = cli_open_view(o.file, NULL);
	/* counters, memdump reports, or a heap to derive from memory events */
	if (!instrument_present(v, "counters") && !instrument_present(v, "memdump") &&
	    !instrument_present(v, "memory"))
		cli_need(v, o.file, "counters", "counters");
	cli_check(counters_load(v, 1, &cs), o.file);
	if (o.plot)
		plot(v, &cs, o.plot, o.force);
	/* --plot writes only the plot, unless a --format is asked for too */
	if (o.plot && !o.fmt_given)
		;
	else if (o.fmt == FMT_JSON)
		print_json(&cs);
	else if (o.fmt == FMT_CSV)
		print_csv(&cs);
	else
		print_text(v, &cs, o.width);
	counters_release(&cs);
	return cli_finish(v);
}
