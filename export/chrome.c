/* SPDX-License-Identifier: MIT */
/* chrome.c - cygprof export --format=chrome: the Chrome Trace Event JSON
 * that Perfetto UI and chrome://tracing load.
 *
 * What it writes, in one object {"traceEvents":[...],"displayTimeUnit":"ns",
 * "otherData":{capture metadata}}:
 *   - "M" process_name and thread_name events for every process and thread;
 *   - the timeline (record --timeline) as complete "X" events, one per call
 *     (ts and dur in microseconds with three decimals: exact ns);
 *   - every counter (record --counters, --memdump) and each process's live
 *     heap (record --memory, derived by analysis/counters.h) as "C" events;
 *   - with --allocations, each allocation and free as a thread instant "i"
 *     event with its size and address.
 *
 * It streams: the events of a thread are walked with view_events() and
 * paired with a stack of the open calls (an "X" event is written when its
 * call returns, so they are not sorted: the format does not ask for it), so
 * memory grows with the call depth and the tree, never with the number of
 * events.  Calls still open at the end of a thread's events end at the
 * thread's end (else the capture's).
 *
 * The calls of a thread's signal handlers (CYGPROF_THREAD_SIGNAL) share its
 * tid but not its nesting: they get a track of their own, tid + 2^32. */
#define _GNU_SOURCE /* fputs_unlocked, fwrite_unlocked */
#include "export.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "counters.h"
#include "json.h"
#include "view.h"

/* ---- JSON: strings through json_str() of common/json.h, the one writer
 * of valid UTF-8 JSON strings --------------------------------------------- */

/* ns as microseconds with three decimals: exact. */
static void json_us(FILE *f, uint64_t ns)
{
	fprintf(f, "%" PRIu64 ".%03u", ns / 1000, (unsigned)(ns % 1000));
}

/* json_us() into p (at most 24 bytes), for the timeline's millions of
 * calls: returns the end. */
static char *put_us(char *p, uint64_t ns)
{
	char tmp[24];
	uint64_t us = ns / 1000;
	unsigned frac = (unsigned)(ns % 1000);
	size_t n = 0;

	do
		tmp[n++] = (char)('0' + us % 10);
	while (us /= 10);
	while (n)
		*p++ = tmp[--n];
	*p++ = '.';
	*p++ = (char)('0' + frac / 100);
	*p++ = (char)('0' + frac / 10 % 10);
	*p++ = (char)('0' + frac % 10);
	return p;
}

/* ---- what every event needs ------------------------------------------------ */

struct chrome {
	struct view *v;
	const struct export_opts *o;
	FILE *f;
	int first; /* no event written yet: no comma before the next */
	struct export_progress pg; /* timeline and memory events read */
};

static void ev_start(struct chrome *c)
{
	fputs(c->first ? "\n" : ",\n", c->f);
	c->first = 0;
}

/* The tid a thread's events carry. */
static uint64_t thread_tid(const struct cygprof_thread *t)
{
	return (t->flags & CYGPROF_THREAD_SIGNAL) ? ((uint64_t)1 << 32) + t->tid : t->tid;
}

static const char *base_name(const char *path)
{
	const char *s = path ? strrchr(path, '/') : NULL;

	return s ? s + 1 : path;
}

static int write_metadata(struct chrome *c)
{
	const struct cygprof_thread *threads;
	const struct cygprof_proc *procs;
	size_t nthreads, nprocs, i;
	char name[16];
	int err;

	if ((err = view_procs(c->v, &procs, &nprocs)) || (err = view_threads(c->v, &threads, &nthreads)))
		return err;
	for (i = 0; i < nprocs; i++) {
		const struct cygprof_proc *p = &procs[i];
		const char *n = base_name(p->exe && *p->exe ? p->exe : p->command);

		ev_start(c);
		fprintf(c->f, "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%u,\"args\":{\"name\":",
			p->pid);
		json_str(c->f, n && *n ? n : "?");
		fputs("}}", c->f);
		ev_start(c);
		fprintf(c->f,
			"{\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":%u,"
			"\"args\":{\"sort_index\":%u}}",
			p->pid, p->idx);
	}
	for (i = 0; i < nthreads; i++) {
		const struct cygprof_thread *t = &threads[i];
		char label[64];

		view_thread_name(t, name);
		if (t->flags & CYGPROF_THREAD_SIGNAL)
			snprintf(label, sizeof label, "%s (signal handlers)", *name ? name : "?");
		else
			snprintf(label, sizeof label, "%s", *name ? name : "?");
		ev_start(c);
		fprintf(c->f,
			"{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%u,\"tid\":%" PRIu64
			",\"args\":{\"name\":",
			view_thread_pid(c->v, t), thread_tid(t));
		json_str(c->f, label);
		fputs("}}", c->f);
		ev_start(c);
		fprintf(c->f,
			"{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":%u,\"tid\":%" PRIu64
			",\"args\":{\"sort_index\":%u}}",
			view_thread_pid(c->v, t), thread_tid(t), t->idx);
	}
	return 0;
}

/* ---- the timeline ------------------------------------------------------------ */

struct open_call {
	uint32_t node;
	uint64_t ts;
};

struct tl_thread {
	struct chrome *c;
	const struct view_tree *tree;
	char **names;   /* per function id: the JSON-quoted name, made on first use */
	size_t nnames;
	uint32_t pid;
	uint64_t tid;
	struct open_call *stack;
	size_t depth, cap;
	char head[96]; /* ',"cat":"function","ph":"X","pid":P,"tid":T,"ts":' */
	size_t nhead;
};

/* The quoted name of a node's function (NULL when out of memory). */
static const char *node_name(struct tl_thread *t, uint32_t node)
{
	uint32_t id = node < t->tree->n ? t->tree->fn[node] : VIEW_NONE;
	const struct view_fn *fn;
	char *buf = NULL;
	size_t len = 0;
	FILE *m;

	if (id == VIEW_NONE)
		return "\"?\"";
	if (id >= t->nnames) {
		size_t n = view_nfns(t->c->v) > id ? view_nfns(t->c->v) : (size_t)id + 1;
		char **nn = realloc(t->names, n * sizeof(*nn));

		if (!nn)
			return NULL;
		memset(nn + t->nnames, 0, (n - t->nnames) * sizeof(*nn));
		t->names = nn;
		t->nnames = n;
	}
	if (t->names[id])
		return t->names[id];
	fn = view_fn(t->c->v, id);
	if (!(m = open_memstream(&buf, &len)))
		return NULL;
	json_str(m, fn ? fn->name : "?");
	if (fclose(m)) {
		free(buf);
		return NULL;
	}
	return t->names[id] = buf;
}

/* With a time range, which of the window's edges a call with true times
 * [ts, end) crosses: NULL (none), "start", "end" or "both". */
static const char *crosses(const struct tl_thread *t, uint64_t ts, uint64_t end)
{
	const struct view_filter *f = view_get_filter(t->c->v);
	int s, e;

	if (!f || !f->has_range)
		return NULL;
	s = ts < f->t0;
	e = end >= f->t1;
	return s && e ? "both" : s ? "start" : e ? "end" : NULL;
}

/* mark: NULL, or args {key: mark} ("crosses": the window's edge a call with
 * its true times crosses; "clipped": "start" for a call whose entry is not
 * known, shown from the window's start) */
static int write_call(struct tl_thread *t, uint32_t node, uint64_t ts, uint64_t end, int unwound,
		      const char *key, const char *mark)
{
	struct chrome *c = t->c;
	const char *name = node_name(t, node);
	char buf[160], *p = buf;

	if (!name)
		return -ENOMEM;
	/* what stdio would format, in three writes: this is most of the file */
	fputs_unlocked(c->first ? "\n{\"name\":" : ",\n{\"name\":", c->f);
	c->first = 0;
	fputs_unlocked(name, c->f);
	memcpy(p, t->head, t->nhead);
	p = put_us(p + t->nhead, ts);
	memcpy(p, ",\"dur\":", 7);
	p = put_us(p + 7, end > ts ? end - ts : 0);
	fwrite_unlocked(buf, 1, (size_t)(p - buf), c->f);
	if (mark)
		fprintf(c->f, ",\"args\":{\"%s\":\"%s\"%s}}", key, mark,
			unwound ? ",\"unwound\":true" : "");
	else
		fputs_unlocked(unwound ? ",\"args\":{\"unwound\":true}}" : "}", c->f);
	return ferror(c->f) ? -EIO : 0;
}

static int on_events(const struct cygprof_event *ev, size_t n, void *data)
{
	struct tl_thread *t = data;
	size_t i;
	int err;

	export_progress_add(&t->c->pg, n);
	for (i = 0; i < n; i++) {
		const struct cygprof_event *e = &ev[i];
		size_t d;

		if (e->kind == CYGPROF_EV_ENTER) {
			if (ARRAY_GROW(t->stack, t->cap, t->depth + 1))
				return -ENOMEM;
			t->stack[t->depth].node = e->node;
			t->stack[t->depth].ts = e->ts_ns;
			t->depth++;
			continue;
		}
		/* an exit: close its call, and the calls above it left open
		 * (their exits were lost); an exit with no entry is ignored */
		for (d = t->depth; d > 0 && t->stack[d - 1].node != e->node; d--)
			;
		if (!d) {
			/* with a time range, a call entered before the window
			 * whose entry is not known (deeper than the open calls a
			 * capture stores): shown from the window's start */
			const struct view_filter *f = view_get_filter(t->c->v);

			if (f && f->has_range && e->ts_ns >= f->t0 &&
			    (err = write_call(t, e->node, f->t0, e->ts_ns,
					      e->kind == CYGPROF_EV_UNWIND, "clipped", "start")))
				return err;
			continue;
		}
		while (t->depth >= d) {
			struct open_call *oc = &t->stack[--t->depth];

			if ((err = write_call(t, oc->node, oc->ts, e->ts_ns,
					      e->kind == CYGPROF_EV_UNWIND, "crosses",
					      crosses(t, oc->ts, e->ts_ns))))
				return err;
		}
	}
	return 0;
}

static int write_timeline(struct chrome *c)
{
	const struct cygprof_thread *threads;
	size_t nthreads, i;
	uint64_t cap_end = view_duration_ns(c->v);
	struct tl_thread t;
	int err;

	if ((err = view_threads(c->v, &threads, &nthreads)))
		return err;
	struct view_limits lim;
	view_limits(c->v, &lim);
	int partial = lim.incomplete;
	memset(&t, 0, sizeof t);
	t.c = c;
	for (i = 0; i < nthreads && !err; i++) {
		const struct cygprof_thread *th = &threads[i];
		uint64_t end, base = c->pg.done;

		/* a thread without events, unless the capture was cut off:
		 * its record counts those before the last checkpoint, and the
		 * events committed after it may be all it has */
		if (!th->events && !partial)
			continue;
		if ((err = view_tree(c->v, th->idx, &t.tree)))
			break;
		t.pid = view_thread_pid(c->v, th);
		t.tid = thread_tid(th);
		t.nhead = (size_t)snprintf(t.head, sizeof t.head,
					   ",\"cat\":\"function\",\"ph\":\"X\",\"pid\":%u,"
					   "\"tid\":%" PRIu64 ",\"ts\":", t.pid, t.tid);
		t.depth = 0;
		if ((err = view_events(c->v, th->idx, on_events, &t)))
			break;
		/* the thread's stored events, whatever a filter passed on */
		export_progress_to(&c->pg, base + th->events);
		/* calls still open: they end with the thread (or the capture) */
		end = th->end_ns ? th->end_ns : cap_end;
		while (t.depth && !err) {
			struct open_call *oc = &t.stack[--t.depth];
			uint64_t e = end > oc->ts ? end : oc->ts;

			err = write_call(&t, oc->node, oc->ts, e, 0, "crosses", crosses(&t, oc->ts, e));
		}
	}
	for (i = 0; i < t.nnames; i++)
		free(t.names[i]);
	free(t.names);
	free(t.stack);
	return err;
}

/* ---- counters and the live heap ------------------------------------------------- */

static int write_counters(struct chrome *c)
{
	struct counter_set cs;
	int sys = 0, err;
	size_t i, j;

	if ((err = counters_load(c->v, 1, &cs)))
		return err;
	for (i = 0; i < cs.n; i++) {
		const struct counter_series *s = &cs.v[i];

		if (s->proc_idx == CYGPROF_NONE && s->n && !sys++) {
			/* the system's counters: a process of their own, pid 0 */
			ev_start(c);
			fputs("{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":0,"
			      "\"args\":{\"name\":\"system\"}}",
			      c->f);
		}
		for (j = 0; j < s->n; j++) {
			ev_start(c);
			fputs("{\"name\":", c->f);
			json_str(c->f, s->name);
			fprintf(c->f, ",\"cat\":\"counter\",\"ph\":\"C\",\"pid\":%u,\"ts\":", s->pid);
			json_us(c->f, s->s[j].t_ns);
			fprintf(c->f, ",\"args\":{\"%s\":%" PRIu64 "}}", counters_unit_name(s->unit),
				counter_value(&s->s[j]));
		}
		if (ferror(c->f)) {
			err = -EIO;
			break;
		}
	}
	counters_release(&cs);
	return err;
}

/* ---- waits for the collector ---------------------------------------------------------- */

/* Each interval a thread waited for cygprof's collector (its ring full) as
 * a slice of its own inside the call it interrupted, so that the time is
 * not taken for the program's (the hooks left it out of their figures). */
static int write_waits(struct chrome *c)
{
	const struct view_filter *r = view_get_filter(c->v);
	const struct cygprof_offcpu *w;
	size_t n, i;
	int err;

	if ((err = view_waits(c->v, &w, &n)))
		return err;
	for (i = 0; i < n; i++) {
		const struct cygprof_thread *t = view_thread(c->v, w[i].thread_idx);
		if (!t)
			continue;
		if (r && r->has_range && (w[i].end_ns < r->t0 || w[i].start_ns >= r->t1))
			continue;
		ev_start(c);
		fprintf(c->f, "{\"name\":\"" EXPORT_WAIT_NAME "\",\"cat\":\"cygprof\",\"ph\":\"X\","
			      "\"pid\":%u,\"tid\":%" PRIu64 ",\"ts\":",
			view_thread_pid(c->v, t), thread_tid(t));
		json_us(c->f, w[i].start_ns);
		fputs(",\"dur\":", c->f);
		json_us(c->f, w[i].end_ns - w[i].start_ns);
		fputc('}', c->f);
		if (ferror(c->f))
			return -EIO;
	}
	return 0;
}

/* ---- allocations ------------------------------------------------------------------- */

static const char *const mem_fn_names[CYGPROF_FN_COUNT] = {
	[CYGPROF_FN_MALLOC] = "malloc",
	[CYGPROF_FN_CALLOC] = "calloc",
	[CYGPROF_FN_REALLOC] = "realloc",
	[CYGPROF_FN_REALLOCARRAY] = "reallocarray",
	[CYGPROF_FN_POSIX_MEMALIGN] = "posix_memalign",
	[CYGPROF_FN_ALIGNED_ALLOC] = "aligned_alloc",
	[CYGPROF_FN_MEMALIGN] = "memalign",
	[CYGPROF_FN_VALLOC] = "valloc",
	[CYGPROF_FN_PVALLOC] = "pvalloc",
	[CYGPROF_FN_FREE] = "free",
	[CYGPROF_FN_NEW] = "operator new",
	[CYGPROF_FN_NEW_ARRAY] = "operator new[]",
	[CYGPROF_FN_DELETE] = "operator delete",
	[CYGPROF_FN_DELETE_ARRAY] = "operator delete[]",
};

/* Every allocation and free (not free(NULL) nor a failed allocation: no
 * address), a thread at a time through its cursor. */
static int write_allocations(struct chrome *c)
{
	const struct cygprof_thread *threads;
	size_t nthreads, i;
	uint64_t nread = 0;
	int err;

	if ((err = view_threads(c->v, &threads, &nthreads)))
		return err;
	for (i = 0; i < nthreads && !err; i++) {
		const struct cygprof_thread *t = &threads[i];
		uint32_t pid = view_thread_pid(c->v, t);
		struct cygprof_mem_cursor *cur;
		struct cygprof_mem_event ev;

		if ((err = view_mem_cursor(c->v, t->idx, &cur)))
			break;
		while ((err = cygprof_mem_cursor_next(cur, &ev)) == 1) {
			const char *fn = ev.fn < CYGPROF_FN_COUNT ? mem_fn_names[ev.fn] : "?";
			int alloc = ev.op == CYGPROF_MEM_ALLOC;

			if (!(++nread & 0xffff))
				export_progress_add(&c->pg, 0x10000);
			if (!ev.addr)
				continue;
			/* a free by realloc is named "realloc (free)" */
			ev_start(c);
			fprintf(c->f, "{\"name\":\"%s%s\",\"cat\":\"memory\",\"ph\":\"i\",\"s\":\"t\","
				      "\"pid\":%u,\"tid\":%" PRIu64 ",\"ts\":",
				fn, alloc || ev.fn == CYGPROF_FN_FREE || ev.fn == CYGPROF_FN_DELETE ||
					    ev.fn == CYGPROF_FN_DELETE_ARRAY ? "" : " (free)",
				pid, thread_tid(t));
			json_us(c->f, ev.ts_ns);
			if (alloc)
				fprintf(c->f,
					",\"args\":{\"size\":%" PRIu64 ",\"address\":\"0x%" PRIx64
					"\",\"stack\":%u}}",
					ev.size, ev.addr, ev.stack);
			else
				fprintf(c->f, ",\"args\":{\"address\":\"0x%" PRIx64 "\"}}", ev.addr);
			if (ferror(c->f)) {
				err = -EIO;
				break;
			}
		}
		cygprof_mem_cursor_close(cur);
		export_progress_add(&c->pg, nread & 0xffff);
		nread = 0;
	}
	return err;
}

/* ---- the whole file ------------------------------------------------------------------ */

static void write_other_data(struct chrome *c)
{
	static const char *const keys[] = {
		"command", "mode",    "start_time", "duration_ns", "clock", "time",
		"filters", "hostname", "kernel",    "machine",     "lost_events",
	};
	size_t i;

	fputs("\"otherData\":{\"exporter\":\"cygprof\"", c->f);
	for (i = 0; i < sizeof keys / sizeof keys[0]; i++) {
		const char *val = view_meta_str(c->v, keys[i]);

		if (!val)
			continue;
		fprintf(c->f, ",\"%s\":", keys[i]);
		json_str(c->f, val);
	}
	fputc('}', c->f);
}

static int write_chrome(struct view *v, const struct export_opts *o, FILE *f)
{
	struct chrome c = {.v = v, .o = o, .f = f, .first = 1};
	uint64_t nmem = 0, total = 0;
	int err, timeline = view_mode_has(v, "timeline");

	/* what it reads event by event: the timeline, the allocations */
	if (timeline)
		total = export_timeline_events(v);
	if (o->allocations && !view_mem_count(v, &nmem))
		total += nmem;
	export_progress_start(&c.pg, o, "events", total);
	fputs(OUT_MAGIC_CHROME "[", f);
	if ((err = write_metadata(&c)))
		return err;
	if (timeline) {
		if ((err = write_timeline(&c)) || (err = write_waits(&c)))
			return err;
	} else if (o->warn) {
		o->warn("%s has no timeline (record with --timeline): no calls written", o->file);
	}
	if ((err = write_counters(&c)))
		return err;
	if (o->allocations) {
		if (!view_mode_has(v, "memory") && (view_mem_count(v, &nmem) || !nmem)) {
			if (o->warn)
				o->warn("%s has no allocations (record with --memory)", o->file);
		} else if ((err = write_allocations(&c))) {
			return err;
		}
	}
	fputs("\n],\"displayTimeUnit\":\"ns\",", f);
	write_other_data(&c);
	fputs("}\n", f);
	return ferror(f) ? -EIO : 0;
}

const struct exporter export_chrome = {
	.name = "chrome",
	.summary = "Chrome trace JSON for Perfetto UI and chrome://tracing: the\n"
		   "             timeline, counters, the live heap (and --allocations)",
	.readers = "Perfetto UI, chrome://tracing",
	.out_kind = OUT_CHROME,
	.write = write_chrome,
	.binary = 0,
};
