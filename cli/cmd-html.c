/* SPDX-License-Identifier: MIT */
/* cmd-html.c - cygprof html: one self-contained HTML file showing a whole
 * capture (flame graphs, flat profile, call graph, memory, counters,
 * samples, info) that opens offline in a browser.
 *
 * The page is html/report.css and html/report.js (embedded at build time,
 * html/embed.py) around one JSON object in a <script type="application/json">
 * block.  The data is per function, per call path and per allocation stack,
 * never per call, so the file's size does not grow with the calls; call
 * paths under HTML_CUT of the time are merged into "(other)". */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "report-latency.h"
#include "counters.h"
#include "cpu.h"
#include "debuginfo.h"
#include "instrument.h"
#include "json.h"
#include "textesc.h"
#include "memory.h"
#include "pathtree.h"
#include "profile.h"
#include "progress.h"
#include "psamples.h"
#include "view.h"

#include "report-assets.h"

#define CMD "html"
#define HTML_DEFAULT_OUT "report.html"
/* call paths below this share of the time are merged into "(other)" */
#define HTML_CUT 1e-4
/* at most this many call paths (the cut rises tenfold until it fits) */
#define HTML_MAX_PATHS 200000
/* at most this many allocation stacks (the heaviest; the rest summed) */
#define HTML_MAX_STACKS 20000
/* at most this many points per counter (each the maximum of its interval) */
#define HTML_MAX_POINTS 600
/* at most this many timeline calls (the longest: a call is never shorter
 * than its callees, so the kept set holds every kept call's callers) */
#define HTML_MAX_SLICES 200000
/* The largest page written without -f: Chromium takes about 3 s and 1 GB
 * per 100 MB of data to open a page, and cannot parse a data block past
 * 512 MB (V8's longest string) at all. */
#define HTML_MAX_PAGE ((uint64_t)256 << 20)

struct html_cli {
	const char *file, *out;
	int force, no_progress;
	uint64_t max_calls;
	struct debuginfo *di;
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: cygprof html [-o FILE] [-f] [CAPTURE]\n"
		"\n"
		"Write one self-contained HTML report of a capture (CAPTURE defaults to\n"
		CYGPROF_DEFAULT_CAPTURE "): where the wall time went beside the top functions,\n"
		"a flame graph of time (top-down or inverted, single-child chains folded,\n"
		"coloured by object or self share) that zooms on click and can be searched,\n"
		"with --memory the peak, the leaks and the memory flame graph first, the flat\n"
		"profile and the call graph as sortable tables, the memory call graph,\n"
		"counters and the live heap over time, perf samples beside the exact counts,\n"
		"and the capture's info.  The file needs no network: style, script and data\n"
		"are inline.\n"
		"\n"
		"options:\n"
		"  -o, --output FILE      the report (default " HTML_DEFAULT_OUT "; - for standard\n"
		"                         output); an existing file is replaced only when it\n"
		"                         is an earlier report\n"
		"  -f, --force            replace FILE whatever regular file it is; write a\n"
		"                         page past ~256 MB\n"
		"      --max-calls N      with --timeline: embed at most N calls, the longest\n"
		"                         (default 200000); a page past ~256 MB is refused\n"
		"                         (browsers open it slowly or not at all) unless -f\n"
		CLI_PROGRESS_HELP CLI_TIME_HELP CLI_DEBUG_HELP
		"  -h, --help             this help\n");
}

static void parse_opts(int argc, char **argv, struct html_cli *o)
{
	static const struct option lopts[] = {
		{"output", required_argument, NULL, 'o'},
		{"force", no_argument, NULL, 'f'},
		{"no-progress", no_argument, NULL, 0x4400},
		{"max-calls", required_argument, NULL, 0x4401},
		CLI_DEBUG_OPTIONS,
		CLI_TIME_OPTIONS,
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct cli_getopt g = {.cmd = CMD, .usage = usage, .shortopts = ":ho:f", .longopts = lopts};
	int c;

	memset(o, 0, sizeof(*o));
	o->out = HTML_DEFAULT_OUT;
	o->max_calls = HTML_MAX_SLICES;
	g.di = o->di = cli_debuginfo_new();
	while ((c = cli_next_option(&g, argc, argv)) != -1) {
		switch (c) {
		case 'o':
			if (!*optarg)
				cli_die(2, "%s: empty output file name", CMD);
			o->out = optarg;
			break;
		case 'f':
			o->force = 1;
			break;
		case 0x4400:
			o->no_progress = 1;
			break;
		case 0x4401: {
			char *end;
			unsigned long long n;

			errno = 0;
			n = strtoull(optarg, &end, 10);
			if (errno || end == optarg || *end || *optarg == '-' || !n || n > 100000000)
				cli_die(2, "%s: --max-calls: not a number from 1 to 100000000: %s", CMD,
					optarg);
			o->max_calls = n;
			break;
		}
		}
	}
	o->file = cli_capture_arg(CMD, argc, argv);
	cli_debuginfo_env(o->di);
}

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size);

	if (!p)
		cli_die(1, "out of memory");
	return p;
}

static void key_str(FILE *f, const char *key, const char *val)
{
	json_str(f, key);
	fputc(':', f);
	json_str(f, val);
}

/* ---- the merged call-path tree (analysis/pathtree.h) ------------------------ */

/* A node of the tree write_tree() makes (in its final order: no index). */
static uint32_t push(struct pathtree *o, uint32_t parent, uint32_t fn)
{
	long k = pathtree_push(o, parent, fn);

	if (k < 0)
		cli_die(1, "out of memory");
	return (uint32_t)k;
}

/* A capture without times (record --time=sampled) keeps every path. */
static int keep_node(const struct pathtree *t, const struct pathtree_node *nd, uint64_t limit)
{
	return !t->n[0].total_ns || (nd->total_ns >= limit && nd->total_ns);
}

/* Write the tree as {"fn":[..],"parent":[..],"calls":[..],"total":[..],
 * "self":[..],"cut":share,"merged":paths}: the paths of at least cut of the
 * root's time, each path under cut summed into one "(other)" child (fn -1)
 * of its kept parent. */
static void write_tree(FILE *f, const struct pathtree *t)
{
	/* other[] is indexed by the new indices: kept nodes and "(other)"s */
	uint32_t *idx = xcalloc(t->len, sizeof *idx), *other = xcalloc(2 * t->len, sizeof *other);
	double cut = HTML_CUT;
	uint64_t limit;
	size_t i, kept, merged;
	struct pathtree o;

	for (;;) {
		limit = (uint64_t)(cut * (double)t->n[0].total_ns);
		for (i = 1, kept = 1; i < t->len; i++)
			if (keep_node(t, &t->n[i], limit))
				kept++;
		if (kept <= HTML_MAX_PATHS || cut >= 0.1)
			break;
		cut *= 10;
	}
	/* new indices: kept nodes first in order (parents precede children),
	 * then one "(other)" per parent that lost children */
	memset(&o, 0, sizeof o);
	push(&o, PROFILE_NONE, PROFILE_NONE);
	o.n[0] = t->n[0];
	idx[0] = 1; /* index + 1: 0 for a dropped node */
	for (i = 1; i < t->len; i++) {
		const struct pathtree_node *nd = &t->n[i];
		uint32_t pp = idx[nd->parent];

		if (!pp)
			continue; /* under a dropped node: counted with it */
		if (keep_node(t, nd, limit)) {
			uint32_t k = push(&o, pp - 1, nd->fn);
			o.n[k] = *nd;
			o.n[k].parent = pp - 1;
			idx[i] = k + 1;
			continue;
		}
		if (!other[pp - 1])
			other[pp - 1] = push(&o, pp - 1, PROFILE_NONE) + 1;
		o.n[other[pp - 1] - 1].calls += nd->calls;
		o.n[other[pp - 1] - 1].total_ns += nd->total_ns;
		o.n[other[pp - 1] - 1].self_ns += nd->total_ns;
	}
	for (i = 1, merged = t->len - 1; i < t->len; i++)
		if (idx[i])
			merged--; /* the dropped paths, their subtrees included */
	fputs("{\"fn\":[", f);
	for (i = 0; i < o.len; i++)
		fprintf(f, "%s%ld", i ? "," : "", o.n[i].fn == PROFILE_NONE ? -1L : (long)o.n[i].fn);
	fputs("],\"parent\":[", f);
	for (i = 0; i < o.len; i++)
		fprintf(f, "%s%ld", i ? "," : "",
			o.n[i].parent == PROFILE_NONE ? -1L : (long)o.n[i].parent);
	fputs("],\"calls\":[", f);
	for (i = 0; i < o.len; i++)
		fprintf(f, "%s%" PRIu64, i ? "," : "", o.n[i].calls);
	fputs("],\"total\":[", f);
	for (i = 0; i < o.len; i++)
		fprintf(f, "%s%" PRIu64, i ? "," : "", o.n[i].total_ns);
	fputs("],\"self\":[", f);
	for (i = 0; i < o.len; i++)
		fprintf(f, "%s%" PRIu64, i ? "," : "", o.n[i].self_ns);
	fprintf(f, "],\"cut\":%g,\"paths\":%zu,\"merged\":%zu}", cut, t->len - 1, merged);
	pathtree_release(&o);
	free(idx);
	free(other);
}

/* ---- sections ----------------------------------------------------------------- */

static void write_info(FILE *f, struct view *v, const char *file)
{
	static const char *const keys[] = {
		"command", "start_time", "duration_ns", "mode", "clock", "time", "filters",
		"drop_mode", "hostname", "kernel", "machine", "tsc_hz", "instruments",
		"sample_event", "sample_hz", "sample_lost",
	};
	const struct cygprof_thread *th;
	const struct cygprof_proc *pr;
	struct view_limits l;
	size_t i, nth, npr;
	int first = 1;

	fputs("\"file\":", f);
	json_str(f, file);
	fputs(",\"meta\":{", f);
	for (i = 0; i < sizeof keys / sizeof keys[0]; i++) {
		const char *val = view_meta_str(v, keys[i]);
		if (!val)
			continue;
		if (!first)
			fputc(',', f);
		first = 0;
		key_str(f, keys[i], val);
	}
	/* where the times come from (cli_times_note()): the page says it */
	char note[256];
	const char *tn = cli_times_note(v, note, sizeof note);
	if (tn) {
		if (!first)
			fputc(',', f);
		key_str(f, "times_note", tn);
	}
	fprintf(f, "},\"duration_ns\":%" PRIu64 ",\"procs\":[", view_duration_ns(v));
	cli_check(view_procs(v, &pr, &npr), file);
	for (i = 0; i < npr; i++) {
		char eb[32];
		fprintf(f, "%s{\"pid\":%u,\"ppid\":%u,\"start_ns\":%" PRIu64 ",\"end_ns\":%" PRIu64 ",",
			i ? "," : "", pr[i].pid, pr[i].ppid, pr[i].start_ns, pr[i].end_ns);
		key_str(f, "end", view_proc_end(&pr[i], eb, sizeof eb));
		fputc(',', f);
		key_str(f, "command", pr[i].command ? pr[i].command : "");
		fputc(',', f);
		key_str(f, "exe", pr[i].exe ? pr[i].exe : "");
		fputc('}', f);
	}
	fputs("],\"threads\":[", f);
	cli_check(view_threads(v, &th, &nth), file);
	for (i = 0; i < nth; i++) {
		char nb[16];
		fprintf(f, "%s{\"pid\":%u,\"tid\":%u,\"calls\":%" PRIu64 ",\"start_ns\":%" PRIu64
			",\"end_ns\":%" PRIu64 ",\"lost\":%" PRIu64 ",\"unpaired\":%" PRIu64 ",",
			i ? "," : "", view_thread_pid(v, &th[i]), th[i].tid, th[i].calls,
			th[i].start_ns, th[i].end_ns, th[i].lost, th[i].unpaired);
		key_str(f, "name", view_thread_name(&th[i], nb));
		fputc(',', f);
		key_str(f, "note", view_thread_note(th[i].flags));
		fputc('}', f);
	}
	fputs("],", f);
	view_limits(v, &l);
	cli_limits_json(f, &l);
}

/* "objects":[basename..],"fn_obj":[object index or -1 per function]: the
 * file each function is in (the flame graphs colour by it).  A name found
 * in several objects (merged by name) takes the first one named. */
static void write_objects(FILE *f, struct view *v, const struct profile *p)
{
	int32_t *obj = xcalloc(p->nfns, sizeof *obj);
	const char **names = NULL;
	size_t i, k, n = 0, cap = 0;

	for (i = 0; i < p->nfns; i++)
		obj[i] = -1;
	for (i = 0; i < view_nfns(v); i++) {
		const struct view_fn *vf = view_fn(v, (uint32_t)i);
		const char *base;
		long fn;

		if (!vf || !vf->obj || !vf->obj->path)
			continue;
		fn = profile_find(p, vf->name);
		if (fn < 0 || obj[fn] >= 0)
			continue;
		base = strrchr(vf->obj->path, '/');
		base = base ? base + 1 : vf->obj->path;
		for (k = 0; k < n && strcmp(names[k], base); k++)
			;
		if (k == n) {
			if (n == cap) {
				cap = cap ? 2 * cap : 16;
				names = realloc(names, cap * sizeof *names);
				if (!names)
					cli_die(1, "out of memory");
			}
			names[n++] = base;
		}
		obj[fn] = (int32_t)k;
	}
	fputs("\"objects\":[", f);
	for (k = 0; k < n; k++) {
		if (k)
			fputc(',', f);
		json_str(f, names[k]);
	}
	fputs("],\"fn_obj\":[", f);
	for (i = 0; i < p->nfns; i++)
		fprintf(f, "%s%d", i ? "," : "", (int)obj[i]);
	fputc(']', f);
	free(names);
	free(obj);
}

/* "wall":{..}: what the duration beside the self-time total is made of,
 * so that the page can say why they differ: each thread's wall time
 * (summed), the time in instrumented functions (the total of the self
 * times the tables and flame graph share; blocked time is in it), waiting
 * for a CPU (taken out of it: timemodel.h), the hooks' cost taken out
 * (calls times the calibration's enter/exit pair: an estimate), and what is
 * left: outside instrumented code (start-up, exit, uninstrumented code). */
static void write_wall(FILE *f, struct view *v, const struct profile *p, const char *file)
{
	const struct cygprof_thread *th;
	struct view_overhead o;
	struct cpu_sum *cs = NULL;
	uint64_t threads = 0, in_fns = 0, calls = 0, dur = view_duration_ns(v);
	double pair = 0;
	size_t i, nth;

	cli_check(view_threads(v, &th, &nth), file);
	for (i = 0; i < nth; i++) {
		uint64_t end = th[i].end_ns ? th[i].end_ns : dur;

		threads += end > th[i].start_ns ? end - th[i].start_ns : 0;
		calls += th[i].calls;
	}
	for (i = 0; i < p->nthreads; i++)
		in_fns += p->threads[i].total_ns;
	view_overhead(v, &o);
	if (view_compensated(v) && !view_time_sampled(v))
		pair = o.in_ns + o.out_ns;
	cli_check(cpu_sum_load(v, p, &cs), file);
	fprintf(f, "\"wall\":{\"duration_ns\":%" PRIu64 ",\"threads\":%zu,\"threads_ns\":%" PRIu64
		",\"in_fns_ns\":%" PRIu64 ",\"self_ns\":%" PRIu64 ",\"calls\":%" PRIu64
		",\"hook_pair_ns\":%.3f,\"hooks_ns\":%" PRIu64 ",\"switches\":%s,\"wait_ns\":%" PRIu64
		",\"blocked_ns\":%" PRIu64 ",\"root_wait_ns\":%" PRIu64 ",\"root_blocked_ns\":%" PRIu64
		",\"sampled\":%s}",
		dur, nth, threads, in_fns, p->total_self_ns, calls, pair,
		(uint64_t)(pair * (double)calls + 0.5), cs->present && cs->switches ? "true" : "false",
		cs->total.wait_ns, cs->total.blocked_ns, cs->root.wait_ns, cs->root.blocked_ns,
		view_time_sampled(v) ? "true" : "false");
	cpu_sum_free(cs);
}

static void write_profile(FILE *f, const struct profile *p, const struct psamp *ps)
{
	size_t i;

	fprintf(f, "\"total_self_ns\":%" PRIu64 ",\"fns\":[", p->total_self_ns);
	/* [name, calls, self, total, recursive, spontaneous(, samples, sampled, offcpu)] */
	for (i = 0; i < p->nfns; i++) {
		const struct profile_fn *fn = &p->fns[i];
		fputs(i ? ",[" : "[", f);
		json_str(f, fn->name);
		fprintf(f, ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64, fn->calls,
			fn->self_ns, fn->total_ns, fn->rec_calls, fn->root_calls);
		if (ps)
			fprintf(f, ",%" PRIu64 ",%" PRIu64 ",%" PRIu64, ps->fn[i].samples,
				ps->fn[i].sample_ns, ps->fn[i].offcpu_ns);
		fputc(']', f);
	}
	/* [caller, callee, calls, self, children] */
	fputs("],\"arcs\":[", f);
	for (i = 0; i < p->narcs; i++) {
		const struct profile_arc *a = &p->arcs[i];
		fprintf(f, "%s[%u,%u,%" PRIu64 ",%" PRIu64 ",%" PRIu64 "]", i ? "," : "", a->caller,
			a->callee, a->calls, a->self_ns, a->children_ns);
	}
	fputs("],\"samples\":", f);
	if (!ps) {
		fputs("null", f);
		return;
	}
	fprintf(f, "{\"samples\":%" PRIu64 ",\"sampled_ns\":%" PRIu64 ",\"offcpu_n\":%" PRIu64
		",\"offcpu_ns\":%" PRIu64 ",\"kernel\":%" PRIu64 ",\"unplaced\":%" PRIu64
		",\"imported\":%" PRIu64 ",\"overhead\":{\"samples\":%" PRIu64
		",\"sampled_ns\":%" PRIu64 ",\"offcpu_n\":%" PRIu64 ",\"offcpu_ns\":%" PRIu64
		"},\"leaves\":[",
		ps->total.samples, ps->total.sample_ns, ps->total.offcpu_n, ps->total.offcpu_ns,
		ps->kernel_samples, ps->unplaced, ps->imported, ps->overhead.samples,
		ps->overhead.sample_ns, ps->overhead.offcpu_n, ps->overhead.offcpu_ns);
	/* [name, object, caller fn or -1, kernel, samples, sampled, offcpu] */
	for (i = 0; i < ps->nleaf && i < 1000; i++) {
		const struct psamp_leaf *lf = &ps->leaf[i];
		fputs(i ? ",[" : "[", f);
		json_str(f, lf->name);
		fputc(',', f);
		json_str(f, lf->object ? lf->object : "");
		fprintf(f, ",%ld,%d,%" PRIu64 ",%" PRIu64 ",%" PRIu64 "]",
			lf->caller == PROFILE_NONE ? -1L : (long)lf->caller, lf->kernel ? 1 : 0,
			lf->cost.samples, lf->cost.sample_ns, lf->cost.offcpu_ns);
	}
	fputs("]}", f);
}

static const struct memory *sort_m;

static int cmp_stack_bytes(const void *a, const void *b)
{
	const struct memory_stack *x = &sort_m->stacks[*(const uint32_t *)a];
	const struct memory_stack *y = &sort_m->stacks[*(const uint32_t *)b];

	if (x->bytes != y->bytes)
		return x->bytes > y->bytes ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

/* The progress of html's reading: the memory events, then the timeline's
 * events, as one count (memory_load() reports its own done and total). */
struct html_progress {
	struct cli_progress *pg;
	uint64_t base, total;
};

static void html_progress_fn(uint64_t done, uint64_t total, void *arg)
{
	struct html_progress *hp = arg;

	(void)total;
	cli_progress_set(hp->pg, NULL, hp->base + done, hp->total);
}

static void write_memory(FILE *f, struct view *v, const char *file, struct html_progress *hp)
{
	struct memory_opts mo;
	struct memory *m;
	uint32_t *ids;
	size_t n, i, j;
	uint64_t ob = 0, oa = 0, ol = 0, op = 0;

	memset(&mo, 0, sizeof mo);
	mo.progress = html_progress_fn; /* the memory events, a million at a time */
	mo.progress_arg = hp;
	cli_check(memory_load(v, &mo, &m), file);
	fprintf(f, "{\"allocations\":%" PRIu64 ",\"allocated_bytes\":%" PRIu64 ",\"frees\":%" PRIu64
		",\"freed_bytes\":%" PRIu64 ",\"peak_bytes\":%" PRIu64 ",\"peak_ns\":%" PRIu64
		",\"leaked_allocations\":%" PRIu64 ",\"leaked_bytes\":%" PRIu64
		",\"temporary\":%" PRIu64 ",\"fns\":[",
		m->t.allocations, m->t.allocated_bytes, m->t.frees, m->t.freed_bytes, m->t.peak_bytes,
		m->t.peak_ts_ns, m->t.leaked_allocations, m->t.leaked_bytes,
		m->t.temporary_allocations);
	/* [name, self allocs, self bytes, total allocs, total bytes, self leaked
	 * bytes, total leaked bytes, self temporary, total temporary, self peak
	 * bytes, total peak bytes] */
	for (i = 0; i < m->nfns; i++) {
		const struct memory_fn *fn = &m->fns[i];
		fputs(i ? ",[" : "[", f);
		json_str(f, fn->name);
		fprintf(f, ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64
			",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 "]",
			fn->self_allocations, fn->self_bytes, fn->total_allocations, fn->total_bytes,
			fn->self_leaked_bytes, fn->total_leaked_bytes, fn->self_temporary,
			fn->total_temporary, fn->self_peak_bytes, fn->total_peak_bytes);
	}
	/* [bytes, allocations, leaked bytes, leaked allocations, [fns outermost
	 * first], bytes live at the peak] */
	fputs("],\"stacks\":[", f);
	cli_check(memory_used_stacks(m, &ids, &n), file);
	sort_m = m;
	qsort(ids, n, sizeof *ids, cmp_stack_bytes);
	for (i = 0; i < n; i++) {
		const struct memory_stack *s = &m->stacks[ids[i]];
		if (i >= HTML_MAX_STACKS) {
			ob += s->bytes;
			oa += s->allocations;
			ol += s->leaked_bytes;
			op += s->peak_bytes;
			continue;
		}
		fprintf(f, "%s[%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",[", i ? "," : "",
			s->bytes, s->allocations, s->leaked_bytes, s->leaked_allocations);
		for (j = s->nframes; j-- > 0;)
			fprintf(f, "%s%u", j + 1 < s->nframes ? "," : "", s->fns[j]);
		fprintf(f, "],%" PRIu64 "]", s->peak_bytes);
	}
	fprintf(f, "],\"nstacks\":%zu,\"other\":[%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 "]}",
		n, ob, oa, ol, op);
	free(ids);
	memory_free(m);
}

static void write_counters(FILE *f, struct view *v, const char *file)
{
	struct counter_set cs;
	size_t i, j;

	cli_check(counters_load(v, 1, &cs), file);
	fputc('[', f);
	for (i = 0; i < cs.n; i++) {
		const struct counter_series *s = &cs.v[i];
		size_t step = (s->n + HTML_MAX_POINTS - 1) / HTML_MAX_POINTS;

		if (!step)
			step = 1;
		fputs(i ? ",{" : "{", f);
		key_str(f, "name", s->name);
		fprintf(f, ",\"pid\":%u,", s->pid);
		key_str(f, "unit", counters_unit_name(s->unit));
		/* each point the largest value of its step: a peak stays a peak */
		fputs(",\"t\":[", f);
		for (j = 0; j < s->n; j += step)
			fprintf(f, "%s%" PRIu64, j ? "," : "", s->s[j].t_ns);
		fputs("],\"v\":[", f);
		for (j = 0; j < s->n; j += step) {
			uint64_t mx = counter_value(&s->s[j]);
			size_t k;
			for (k = j + 1; k < j + step && k < s->n; k++)
				if (counter_value(&s->s[k]) > mx)
					mx = counter_value(&s->s[k]);
			fprintf(f, "%s%" PRIu64, j ? "," : "", mx);
		}
		fputs("]}", f);
	}
	fputc(']', f);
	counters_release(&cs);
}

/* ---- the timeline (record --timeline) ------------------------------------------ */

/* One call of the timeline. */
struct slice {
	uint64_t start, dur;
	uint32_t fn;     /* index into the profile's functions, PROFILE_NONE unknown */
	uint32_t thread; /* index into the threads written */
	uint32_t depth;
};

struct tl {
	struct view *v;
	const struct profile *p;
	const struct view_tree *tree;
	uint32_t *fnmap; /* per view function id + 1: profile index + 1, 0 unknown */
	size_t nfnmap;
	struct slice *heap; /* a min-heap by dur of the longest calls so far */
	size_t n, max;
	uint64_t seen;      /* calls seen */
	struct { uint32_t node; uint64_t ts; } *stack;
	size_t depth, cap;
	uint32_t thread;
	struct html_progress *hp; /* events read, counted on from hp->base */
};

static int slice_less(const struct slice *a, const struct slice *b)
{
	if (a->dur != b->dur)
		return a->dur < b->dur;
	return a->start > b->start; /* equal durations: the later goes first */
}

static void heap_down(struct slice *h, size_t n, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, m = i;
		struct slice t;

		if (l < n && slice_less(&h[l], &h[m]))
			m = l;
		if (l + 1 < n && slice_less(&h[l + 1], &h[m]))
			m = l + 1;
		if (m == i)
			return;
		t = h[i];
		h[i] = h[m];
		h[m] = t;
		i = m;
	}
}

static uint32_t tl_fn(struct tl *t, uint32_t node)
{
	uint32_t id = node < t->tree->n ? t->tree->fn[node] : VIEW_NONE;
	const struct view_fn *vf;
	long k;

	if (id == VIEW_NONE)
		return PROFILE_NONE;
	if (id >= t->nfnmap) {
		size_t n = view_nfns(t->v) > id ? view_nfns(t->v) : (size_t)id + 1;
		uint32_t *m = realloc(t->fnmap, n * sizeof *m);

		if (!m)
			cli_die(1, "out of memory");
		memset(m + t->nfnmap, 0, (n - t->nfnmap) * sizeof *m);
		t->fnmap = m;
		t->nfnmap = n;
	}
	if (!t->fnmap[id]) {
		vf = view_fn(t->v, id);
		k = vf ? profile_find(t->p, vf->name) : -1;
		t->fnmap[id] = k < 0 ? UINT32_MAX : (uint32_t)k + 1;
	}
	return t->fnmap[id] == UINT32_MAX ? PROFILE_NONE : t->fnmap[id] - 1;
}

static void tl_add(struct tl *t, uint32_t node, uint64_t ts, uint64_t end, uint32_t depth)
{
	struct slice s;

	s.start = ts;
	s.dur = end > ts ? end - ts : 0;
	s.thread = t->thread;
	s.depth = depth;
	t->seen++;
	if (t->n == t->max && !slice_less(&t->heap[0], &s))
		return;
	s.fn = tl_fn(t, node);
	if (t->n < t->max) {
		size_t i = t->n++;

		t->heap[i] = s; /* up */
		while (i && slice_less(&t->heap[i], &t->heap[(i - 1) / 2])) {
			struct slice x = t->heap[i];
			t->heap[i] = t->heap[(i - 1) / 2];
			t->heap[(i - 1) / 2] = x;
			i = (i - 1) / 2;
		}
		return;
	}
	t->heap[0] = s;
	heap_down(t->heap, t->n, 0);
}

static int tl_events(const struct cygprof_event *ev, size_t n, void *data)
{
	struct tl *t = data;
	size_t i, d;

	t->hp->base += n;
	cli_progress_set(t->hp->pg, NULL, t->hp->base, t->hp->total);
	for (i = 0; i < n; i++) {
		const struct cygprof_event *e = &ev[i];

		if (e->kind == CYGPROF_EV_ENTER) {
			if (t->depth == t->cap) {
				t->cap = t->cap ? 2 * t->cap : 64;
				t->stack = realloc(t->stack, t->cap * sizeof *t->stack);
				if (!t->stack)
					cli_die(1, "out of memory");
			}
			t->stack[t->depth].node = e->node;
			t->stack[t->depth].ts = e->ts_ns;
			t->depth++;
			continue;
		}
		/* an exit closes its call and the calls above it left open
		 * (their exits were lost); an exit with no entry is ignored */
		for (d = t->depth; d > 0 && t->stack[d - 1].node != e->node; d--)
			;
		while (d && t->depth >= d) {
			t->depth--;
			tl_add(t, t->stack[t->depth].node, t->stack[t->depth].ts, e->ts_ns,
			       (uint32_t)t->depth);
		}
	}
	return 0;
}

static int cmp_slice(const void *a, const void *b)
{
	const struct slice *x = a, *y = b;

	if (x->thread != y->thread)
		return x->thread < y->thread ? -1 : 1;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->depth < y->depth ? -1 : x->depth > y->depth;
}

/* {"threads":[thread index],"calls":N,"kept":N,"thread":[..],"depth":[..],
 * "fn":[..],"start":[..],"dur":[..]}: the longest max calls of
 * every thread with timeline events, in time order per thread. */
static void write_timeline(FILE *f, struct view *v, const struct profile *p, const char *file,
			   uint64_t max, struct html_progress *hp)
{
	const struct cygprof_thread *th;
	size_t nth, i, k, nt = 0;
	uint64_t cap_end = view_duration_ns(v);
	struct tl t;

	memset(&t, 0, sizeof t);
	t.v = v;
	t.p = p;
	t.max = (size_t)max;
	t.hp = hp;
	/* no more than the calls there are (events: an entry and an exit each) */
	for (i = 0, k = 0; !view_threads(v, &th, &nth) && i < nth; i++)
		k += th[i].events / 2 + 1;
	if (k < t.max)
		t.max = k;
	t.heap = xcalloc(t.max, sizeof *t.heap);
	cli_check(view_threads(v, &th, &nth), file);
	fputs("{\"threads\":[", f);
	for (i = 0; i < nth; i++) {
		uint64_t end;

		if (!th[i].events)
			continue;
		cli_check(view_tree(v, th[i].idx, &t.tree), file);
		t.depth = 0;
		t.thread = (uint32_t)i;
		cli_check(view_events(v, th[i].idx, tl_events, &t), file);
		/* calls still open end with the thread (or the capture) */
		end = th[i].end_ns ? th[i].end_ns : cap_end;
		while (t.depth) {
			t.depth--;
			tl_add(&t, t.stack[t.depth].node, t.stack[t.depth].ts,
			       end > t.stack[t.depth].ts ? end : t.stack[t.depth].ts, (uint32_t)t.depth);
		}
		fprintf(f, "%s%zu", nt++ ? "," : "", i);
	}
	qsort(t.heap, t.n, sizeof *t.heap, cmp_slice);
	fprintf(f, "],\"calls\":%" PRIu64 ",\"kept\":%zu,\"thread\":[", t.seen, t.n);
	for (k = 0; k < t.n; k++)
		fprintf(f, "%s%u", k ? "," : "", t.heap[k].thread);
	fputs("],\"depth\":[", f);
	for (k = 0; k < t.n; k++)
		fprintf(f, "%s%u", k ? "," : "", t.heap[k].depth);
	fputs("],\"fn\":[", f);
	for (k = 0; k < t.n; k++)
		fprintf(f, "%s%ld", k ? "," : "",
			t.heap[k].fn == PROFILE_NONE ? -1L : (long)t.heap[k].fn);
	fputs("],\"start\":[", f);
	for (k = 0; k < t.n; k++)
		fprintf(f, "%s%" PRIu64, k ? "," : "", t.heap[k].start);
	fputs("],\"dur\":[", f);
	for (k = 0; k < t.n; k++)
		fprintf(f, "%s%" PRIu64, k ? "," : "", t.heap[k].dur);
	fputs("],\"waits\":", f);
	report_waits_html(f, v, file);
	fputs("}", f);
	free(t.heap);
	free(t.stack);
	free(t.fnmap);
}

/* ---- the page ------------------------------------------------------------------- */

/* Copy the JSON text into the page: every '<' (only ever inside a string)
 * becomes \u003c, so that no name can close the script block. */
static void put_escaped(FILE *f, const char *s, size_t n)
{
	size_t i, start = 0;

	for (i = 0; i < n; i++)
		if (s[i] == '<') {
			fwrite(s + start, 1, i - start, f);
			fputs("\\u003c", f);
			start = i + 1;
		}
	fwrite(s + start, 1, n - start, f);
}

static void html_str(FILE *f, const char *s)
{
	for (; *s; s++)
		switch (*s) {
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '&': fputs("&amp;", f); break;
		case '"': fputs("&quot;", f); break;
		default: fputc(*s, f);
		}
}

/* Refuse, in one line (as export's viewer check), a page past what a browser
 * opens: the timeline's kept calls dominate it (the rest is per function and
 * per call path, bounded by HTML_MAX_PATHS and HTML_MAX_STACKS). */
static int digits(uint64_t x)
{
	int n = 1;

	while (x >= 10) {
		x /= 10;
		n++;
	}
	return n;
}

static void check_page_size(struct html_cli *o, struct view *v, uint64_t tl_calls)
{
	uint64_t kept = tl_calls < o->max_calls ? tl_calls : o->max_calls;
	const struct cygprof_thread *th;
	size_t nth = 1;
	/* a kept call's bytes: its thread, depth, function, start and duration
	 * as JSON numbers and their commas; the start as long as the run's
	 * duration, a few digits for the others (10 million calls of
	 * example-threads: 23 estimated, 19.6 written) */
	uint64_t per, est, max = HTML_MAX_PAGE;
	const char *env = getenv("CYGPROF_HTML_MAX_PAGE"); /* checked by cli_check_env() */
	char why[512], count[96], past[128];

	if (view_threads(v, &th, &nth))
		nth = 1;
	per = 5 + (uint64_t)digits(view_duration_ns(v)) + (uint64_t)digits(nth) + 2 + 4 + 4;
	est = kept * per;
	if (env && *env)
		max = strtoull(env, NULL, 10);
	if (est <= max)
		return;
	if (max == HTML_MAX_PAGE)
		snprintf(past, sizeof past, "the ~256 MB a browser opens (Chromium parses no data "
			 "past 512 MB)");
	else
		snprintf(past, sizeof past, "CYGPROF_HTML_MAX_PAGE (%" PRIu64 " bytes)", max);
	snprintf(count, sizeof count, "%" PRIu64 " timeline calls of --max-calls %" PRIu64, kept,
		 o->max_calls);
	cli_size_refusal(why, sizeof why, CMD, o->out, "a page", est,
			 count, past,
			 "lower --max-calls (the longest calls are kept)");
	view_close(v);
	debuginfo_free(o->di);
	cli_die(1, "%s", why);
}

int cmd_html(int argc, char **argv)
{
	struct html_cli o;
	struct cli_output w;
	struct profile *p;
	struct psamp *ps;
	struct view *v;
	struct pathtree t;
	struct cli_progress pg;
	const struct cygprof_thread *th;
	char *json = NULL;
	size_t jlen = 0, nth = 0, i;
	uint64_t calls = 0, nmem = 0, nev = 0;
	struct html_progress hp;
	FILE *j, *f;
	const char *file;
	int has_mem, has_cnt, has_tl = 0, to_stdout;

	parse_opts(argc, argv, &o);
	/* "-": standard output (a pipe to a browser or a server), no file */
	to_stdout = !strcmp(o.out, "-");
	if (!to_stdout)
		cli_output_check(CMD, o.out, OUT_HTML, o.force, NULL);
	/* not over the page itself when that goes to the terminal */
	cli_progress_init(&pg, CMD, "calls",
			  !o.no_progress && !(to_stdout && isatty(STDOUT_FILENO)));
	v = cli_open_view(o.file, o.di);
	file = o.file ? o.file : CYGPROF_DEFAULT_CAPTURE;
	has_mem = instrument_present(v, "memory");
	has_cnt = has_mem || instrument_present(v, "counters") || instrument_present(v, "memdump");
	/* what it reads: the memory events and the timeline's events when
	 * there are (one count: memory_load()'s progress, then the events),
	 * else the trees' calls (at once: they are small) */
	if (!view_threads(v, &th, &nth))
		for (i = 0; i < nth; i++) {
			calls += th[i].calls;
			nev += th[i].events;
			if (th[i].events)
				has_tl = 1;
		}
	if (has_mem && view_mem_count(v, &nmem))
		nmem = 0;
	if (has_tl && !o.force)
		check_page_size(&o, v, nev / 2);
	hp.pg = &pg;
	hp.base = 0;
	hp.total = nmem + nev;
	if (hp.total)
		cli_progress_set(&pg, "events", 0, hp.total);
	else
		cli_progress_set(&pg, "calls", 0, calls);
	cli_check(profile_load(v, NULL, 0, &p), file);
	cli_check(psamp_load(v, p, 1, &ps), file);
	if (!hp.total)
		cli_progress_set(&pg, NULL, calls, calls);

	j = open_memstream(&json, &jlen);
	if (!j)
		cli_die(1, "out of memory");
	fputs("{\"version\":", j);
	json_str(j, CYGPROF_VERSION);
	fputc(',', j);
	write_info(j, v, file);
	fputc(',', j);
	write_profile(j, p, ps);
	fputc(',', j);
	write_objects(j, v, p);
	fputc(',', j);
	write_wall(j, v, p, file);
	fputs(",\"latency\":", j);
	report_latency_html(j, v, p, file);
	fputs(",\"tree\":", j);
	if (pathtree_build(&t, p))
		cli_die(1, "out of memory");
	write_tree(j, &t);
	pathtree_release(&t);
	fputs(",\"memory\":", j);
	if (has_mem) {
		write_memory(j, v, file, &hp);
		hp.base = nmem;
	}
	else
		fputs("null", j);
	fputs(",\"timeline\":", j);
	if (has_tl)
		write_timeline(j, v, p, file, o.max_calls, &hp);
	else
		fputs("null", j);
	fputs(",\"counters\":", j);
	if (has_cnt)
		write_counters(j, v, file);
	else
		fputs("null", j);
	fputs("}", j);
	if (fclose(j) || !json)
		cli_die(1, "out of memory");
	psamp_free(ps);
	profile_free(p);

	f = to_stdout ? stdout : cli_output_open(&w, CMD, o.out, OUT_HTML, o.force);
	fputs(OUT_MAGIC_HTML "\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
	      "<meta name=\"generator\" content=\"cygprof ", f);
	html_str(f, CYGPROF_VERSION);
	fputs("\">\n<title>cygprof: ", f);
	html_str(f, text_esc(view_meta_str(v, "command") ? view_meta_str(v, "command") : file));
	fputs("</title>\n<style>\n", f);
	fputs(report_css, f);
	fputs("</style>\n<script>window.onerror = function (m, s, l) { var e = "
	      "document.getElementById('errors'); if (e) e.textContent += 'error: ' + m + "
	      "' (line ' + l + ')\\n'; };</script>\n", f);
	fputs("</head>\n<body>\n"
	      "<pre id=\"errors\"></pre>\n<div id=\"app\">Loading the report...</div>\n"
	      "<script id=\"data\" type=\"application/json\">", f);
	put_escaped(f, json, jlen);
	fputs("</script>\n<script>\n", f);
	fputs(report_js, f);
	fputs("</script>\n</body>\n</html>\n", f);
	free(json);
	if (ferror(f)) {
		int e = errno; /* the failed write's: nothing since sets it */

		if (!to_stdout)
			cli_output_abort(&w);
		cli_die(1, "%s: %s: %s", CMD, to_stdout ? "standard output" : o.out,
			strerror(e ? e : EIO));
	}
	if (!to_stdout)
		cli_output_commit(&w);
	cli_progress_end(&pg);
	debuginfo_free(o.di);
	return cli_finish(v);
}
