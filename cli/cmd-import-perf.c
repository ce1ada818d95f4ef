/* SPDX-License-Identifier: MIT */
/* cmd-import-perf.c - `cygprof import-perf`: add the samples of a separate
 * `perf record -k CLOCK_MONOTONIC -g` run, read from `perf script` on
 * standard input, to a capture of the same run.
 *
 * The whole input is parsed first (a bad line: one error naming it, exit 1,
 * nothing written); then the capture is reopened with
 * cygprof_capture_open_rw(), which writes a copy and renames it over the
 * capture at close, so that a failure never damages the capture. */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "cli.h"
#include "hmap.h"
#include "view.h"

#define CMD "import-perf"
/* The kernel's half of the address space (x86-64, arm64 and the like). */
#define KERNEL_ADDR 0xffff800000000000ull

static void usage(FILE *f)
{
	fprintf(f,
		"usage: cygprof import-perf [options] [FILE] < PERF-SCRIPT-OUTPUT\n"
		"\n"
		"Add to the capture FILE (default " CYGPROF_DEFAULT_CAPTURE ") the samples of a\n"
		"perf run made alongside its recording, read from the output of 'perf script'\n"
		"on standard input:\n"
		"\n"
		"  perf record -k CLOCK_MONOTONIC -g -o perf.data -- cygprof record -o FILE -- PROG\n"
		"  perf script -i perf.data | cygprof import-perf FILE\n"
		"\n"
		"Samples are placed on the capture's clock by its clock pairing and kept when\n"
		"they fall within the recording and belong to a recorded process; each is\n"
		"matched to the recorded thread by its thread id and time.  cpu-clock and\n"
		"task-clock samples weigh their period in ns; other events count samples.\n"
		"The capture is replaced only when everything was read and written.\n"
		"\n"
		"options:\n"
		"  -h, --help       this help\n");
}

/* ---- the capture's processes, threads and clock ------------------------------- */

struct target {
	const char *file;
	struct view *v;
	uint64_t mono0;    /* CLOCK_MONOTONIC ns at the capture's start */
	uint64_t duration; /* ns */
	const struct cygprof_proc *procs; /* the view's */
	size_t nprocs;
	const struct cygprof_thread *threads;
	size_t nthreads;
};

/* The value of "NAME=<decimal>" among the space-separated fields of s. */
static bool meta_field(const char *s, const char *name, uint64_t *out)
{
	size_t nl = strlen(name);
	const char *p = s;
	char *end;

	while (p && *p) {
		while (*p == ' ')
			p++;
		if (!strncmp(p, name, nl) && p[nl] == '=' && p[nl + 1] >= '0' && p[nl + 1] <= '9') {
			errno = 0;
			*out = strtoull(p + nl + 1, &end, 10);
			return !errno && (*end == ' ' || !*end);
		}
		p = strchr(p, ' ');
	}
	return false;
}

/* The capture's clock, end, processes and threads, through a view kept
 * open until the end (the copy renamed over the file leaves it reading the
 * old one). */
static void load_target(struct target *t, const char *file)
{
	struct cygprof_psample *ps;
	const char *v;
	uint64_t end;
	size_t i, n;
	bool imported = false;

	memset(t, 0, sizeof(*t));
	t->file = file;
	if (cli_probe_capture(file) != 1)
		cli_die(1, "%s: not a capture (or a symbolic link to one)", file);
	t->v = cli_open_view(file, NULL);
	v = view_meta_str(t->v, "clock_start");
	if (!v || !meta_field(v, "mono_ns", &t->mono0))
		cli_die(1, "%s: capture has no clock pairing; record it with this cygprof", file);
	/* the end: "duration_ns", else the pairing at the end, and the
	 * latest thread or process end */
	t->duration = view_duration_ns(t->v);
	v = view_meta_str(t->v, "clock_end");
	if (v && meta_field(v, "mono_ns", &end) && end >= t->mono0 && end - t->mono0 > t->duration)
		t->duration = end - t->mono0;
	cli_check(view_procs(t->v, &t->procs, &t->nprocs), file);
	cli_check(view_threads(t->v, &t->threads, &t->nthreads), file);
	for (i = 0; i < t->nprocs; i++)
		if (t->procs[i].end_ns > t->duration)
			t->duration = t->procs[i].end_ns;
	cli_check(cygprof_capture_get_psamples(view_capture(t->v), &ps, &n), file);
	for (i = 0; i < n && !imported; i++)
		imported = ps[i].flags & CYGPROF_SAMPLE_IMPORTED;
	free(ps);
	if (imported)
		cli_die(1, "%s: already holds imported perf samples", file);
}

/* A thread's interval holds t; a thread still running at the end (end_ns
 * 0) holds everything after its start. */
static bool holds(uint64_t start, uint64_t end, uint64_t t)
{
	return t >= start && (t <= end || !end);
}

/* The recorded process of a sample (pid 0: not given) and its thread
 * (CYGPROF_NONE: the process's thread was not recorded); false when it is
 * of no recorded process. */
static bool match(const struct target *t, uint32_t pid, uint32_t tid, uint64_t ts,
		  uint32_t *proc_idx, uint32_t *thread_idx, uint32_t *real_pid)
{
	size_t i;

	for (i = 0; i < t->nthreads; i++) {
		const struct cygprof_thread *th = &t->threads[i];
		const struct cygprof_proc *p;

		if (th->tid != tid || !holds(th->start_ns, th->end_ns, ts) ||
		    th->proc_idx >= t->nprocs)
			continue;
		p = &t->procs[th->proc_idx];
		if (pid && p->pid != pid)
			continue;
		*proc_idx = th->proc_idx;
		*thread_idx = th->idx;
		*real_pid = p->pid;
		return true;
	}
	/* a thread that never ran instrumented code: its process, if recorded */
	if (!pid)
		pid = tid; /* only the main thread's tid says the pid */
	for (i = 0; i < t->nprocs; i++) {
		if (t->procs[i].pid == pid && holds(t->procs[i].start_ns, t->procs[i].end_ns, ts)) {
			*proc_idx = t->procs[i].idx;
			*thread_idx = CYGPROF_NONE;
			*real_pid = pid;
			return true;
		}
	}
	return false;
}

/* ---- perf script's text ------------------------------------------------------- */

struct sample {
	uint64_t mono_ns;
	uint64_t period;
	uint32_t pid, tid; /* pid 0: not given */
	bool has_period, timed, kernel;
	size_t frame0, nframes; /* in the frame array */
	size_t line;
};

struct input {
	struct sample *s;
	size_t n, cap;
	uint64_t *frames;
	uint32_t *dso;     /* per frame: index into dsos, UINT32_MAX when not given */
	size_t nframes, cframes;
	char **dsos;       /* the object paths perf printed, each once */
	size_t ndsos;
};

static void __attribute__((noreturn)) bad_line(size_t line, const char *what)
{
	cli_die(1, "%s: standard input, line %zu: %s", CMD, line, what);
}

static bool all_digits(const char *s, size_t n)
{
	size_t i;

	if (!n)
		return false;
	for (i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return true;
}

static bool parse_u32(const char *s, size_t n, uint32_t *out)
{
	uint64_t v = 0;
	size_t i;

	if (!all_digits(s, n) || n > 10)
		return false;
	for (i = 0; i < n; i++)
		v = v * 10 + (uint64_t)(s[i] - '0');
	if (v > UINT32_MAX)
		return false;
	*out = (uint32_t)v;
	return true;
}

/* "SECONDS.FRACTION:" (1 to 9 fraction digits) as ns. */
static bool parse_time(const char *s, size_t n, uint64_t *ns)
{
	const char *dot = memchr(s, '.', n);
	uint64_t sec = 0, frac = 0;
	size_t i, nf;

	if (!dot || n < 3 || s[n - 1] != ':')
		return false;
	nf = (size_t)(s + n - 1 - (dot + 1));
	if (!all_digits(s, (size_t)(dot - s)) || (size_t)(dot - s) > 10 || !all_digits(dot + 1, nf) ||
	    nf > 9)
		return false;
	for (i = 0; s + i < dot; i++)
		sec = sec * 10 + (uint64_t)(s[i] - '0');
	for (i = 0; i < 9; i++)
		frac = frac * 10 + (i < nf ? (uint64_t)(dot[1 + i] - '0') : 0);
	*ns = sec * 1000000000ull + frac;
	return true;
}

static bool parse_hex(const char *s, size_t n, uint64_t *out)
{
	uint64_t v = 0;
	size_t i;

	if (n > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		s += 2;
		n -= 2;
	}
	if (!n || n > 16)
		return false;
	for (i = 0; i < n; i++) {
		char c = s[i];
		unsigned d = c >= '0' && c <= '9'   ? (unsigned)(c - '0')
			     : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10)
			     : c >= 'A' && c <= 'F' ? (unsigned)(c - 'A' + 10)
						    : 16u;

		if (d > 15)
			return false;
		v = v << 4 | d;
	}
	*out = v;
	return true;
}

/* Split a line into at most max whitespace-separated tokens. */
static size_t tokens(char *line, const char **tok, size_t *len, size_t max)
{
	size_t n = 0;
	char *p = line;

	while (*p && n < max) {
		while (*p == ' ' || *p == '\t')
			p++;
		if (!*p)
			break;
		tok[n] = p;
		while (*p && *p != ' ' && *p != '\t')
			p++;
		len[n] = (size_t)(p - tok[n]);
		n++;
	}
	return n;
}

/* The index of the object path in the "(DSO)" at the end of a frame
 * line, UINT32_MAX when there is none or it is perf's "[unknown]". */
static uint32_t frame_dso(struct input *in, const char *line)
{
	const char *e = strrchr(line, ')'), *b;
	size_t n, i;

	if (!e || e[1])
		return UINT32_MAX;
	for (b = e; b > line && b[-1] != '('; b--)
		;
	if (b == line || e == b || *b == '[')
		return UINT32_MAX;
	n = (size_t)(e - b);
	for (i = 0; i < in->ndsos; i++)
		if (strlen(in->dsos[i]) == n && !memcmp(in->dsos[i], b, n))
			return (uint32_t)i;
	if (!(in->ndsos & (in->ndsos + 1))) { /* 0, 1, 3, 7...: grow */
		char **d = realloc(in->dsos, (in->ndsos * 2 + 2) * sizeof(*d));
		if (!d)
			cli_die(1, "%s: out of memory", CMD);
		in->dsos = d;
	}
	if (!(in->dsos[in->ndsos] = strndup(b, n)))
		cli_die(1, "%s: out of memory", CMD);
	return (uint32_t)in->ndsos++;
}

static void add_frame(struct input *in, uint64_t addr, uint32_t dso)
{
	if (in->nframes == in->cframes) {
		size_t nc = in->cframes ? in->cframes * 2 : 1024;
		uint64_t *f = realloc(in->frames, nc * sizeof(*f));
		uint32_t *d = f ? realloc(in->dso, nc * sizeof(*d)) : NULL;

		if (!f || !d)
			cli_die(1, "%s: out of memory", CMD);
		in->frames = f;
		in->dso = d;
		in->cframes = nc;
	}
	in->dso[in->nframes] = dso;
	in->frames[in->nframes++] = addr;
}

/* A frame line: "ADDR SYMBOL+OFF (DSO)"; the address is what is kept.
 * Kernel frames (and the sample's kernel part) are dropped: the stack is
 * the user part. */
static void frame_line(struct input *in, struct sample *s, char *line, size_t lineno)
{
	const char *tok[2];
	size_t len[2];
	uint64_t addr;
	bool kernel;

	if (tokens(line, tok, len, 2) < 1 || !parse_hex(tok[0], len[0], &addr))
		bad_line(lineno, "call chain line without a hexadecimal address");
	kernel = addr >= KERNEL_ADDR || strstr(line, "([kernel.kallsyms])") ||
		 strstr(line, "([kernel") || strstr(line, "([guest.kernel");
	if (kernel) {
		if (!s->nframes)
			s->kernel = true;
		return;
	}
	add_frame(in, addr, frame_dso(in, line));
	s->nframes++;
}

/* A sample's header: COMM PID[/TID] [CPU] TIME: [PERIOD] EVENT: [IP SYM (DSO)].
 * COMM may hold spaces: the fields are found from the time backwards. */
static void header_line(struct input *in, struct sample *s, char *line, size_t lineno)
{
	enum { MAXTOK = 64 };
	const char *tok[MAXTOK];
	size_t len[MAXTOK], n, i, ti, pi;
	const char *slash, *ev;
	char evname[64];
	uint64_t ip;

	memset(s, 0, sizeof(*s));
	s->line = lineno;
	s->frame0 = in->nframes;
	n = tokens(line, tok, len, MAXTOK);
	for (ti = 1; ti < n; ti++)
		if (parse_time(tok[ti], len[ti], &s->mono_ns))
			break;
	if (ti >= n)
		bad_line(lineno, "not a sample header (no 'SECONDS.FRACTION:' time)");
	pi = ti - 1;
	if (len[pi] > 2 && tok[pi][0] == '[' && tok[pi][len[pi] - 1] == ']') {
		if (!all_digits(tok[pi] + 1, len[pi] - 2) || pi == 0)
			bad_line(lineno, "sample header: malformed [CPU] field");
		pi--;
	}
	if (pi == 0)
		bad_line(lineno, "sample header: no command before the thread id");
	slash = memchr(tok[pi], '/', len[pi]);
	if (slash) {
		if (!parse_u32(tok[pi], (size_t)(slash - tok[pi]), &s->pid) ||
		    !parse_u32(slash + 1, len[pi] - (size_t)(slash + 1 - tok[pi]), &s->tid) || !s->pid)
			bad_line(lineno, "sample header: malformed PID/TID field");
	} else if (!parse_u32(tok[pi], len[pi], &s->tid)) {
		bad_line(lineno, "sample header: malformed thread id");
	}
	i = ti + 1;
	if (i < n && all_digits(tok[i], len[i])) {
		errno = 0;
		s->period = strtoull(tok[i], NULL, 10);
		if (errno)
			bad_line(lineno, "sample header: period out of range");
		s->has_period = true;
		i++;
	}
	if (i >= n || tok[i][len[i] - 1] != ':')
		bad_line(lineno, "sample header: no 'EVENT:' after the time");
	ev = tok[i];
	{
		const char *colon = memchr(ev, ':', len[i]);
		size_t el = (size_t)(colon - ev);

		if (!el || el >= sizeof(evname))
			bad_line(lineno, "sample header: malformed event name");
		memcpy(evname, ev, el);
		evname[el] = 0;
	}
	s->timed = !strcmp(evname, "cpu-clock") || !strcmp(evname, "task-clock");
	/* without -g the sample's own address follows on the same line */
	if (++i < n && parse_hex(tok[i], len[i], &ip)) {
		if (ip >= KERNEL_ADDR || strstr(tok[i] + len[i], "([kernel")) {
			s->kernel = true;
		} else {
			add_frame(in, ip, frame_dso(in, line));
			s->nframes++;
		}
	}
}

static void read_input(struct input *in, FILE *f)
{
	char *line = NULL;
	size_t lcap = 0, lineno = 0, l;
	ssize_t r;
	struct sample *cur = NULL;

	memset(in, 0, sizeof(*in));
	while ((r = getline(&line, &lcap, f)) >= 0) {
		lineno++;
		l = (size_t)r;
		while (l && (line[l - 1] == '\n' || line[l - 1] == '\r'))
			line[--l] = 0;
		if (strlen(line) != l)
			bad_line(lineno, "NUL byte");
		if (!l || strspn(line, " \t") == l) {
			cur = NULL; /* the blank line after a sample */
			continue;
		}
		if (line[0] == '#' && !cur)
			continue; /* perf script --header */
		/* perf pads the command on the left with spaces and indents
		 * frames with a tab */
		if (line[0] == '\t' || (line[0] == ' ' && cur)) {
			if (!cur)
				bad_line(lineno, "call chain line outside a sample");
			frame_line(in, cur, line, lineno);
			continue;
		}
		if (cur)
			bad_line(lineno, "sample header without the blank line that ends the last sample");
		if (ARRAY_GROW(in->s, in->cap, in->n + 1))
			cli_die(1, "%s: out of memory", CMD);
		cur = &in->s[in->n++];
		header_line(in, cur, line, lineno);
	}
	if (ferror(f))
		cli_die(1, "%s: error reading standard input", CMD);
	free(line);
	if (!in->n)
		cli_die(1, "%s: standard input holds no samples (the output of 'perf script'?)", CMD);
}

/* ---- the stack stash ---------------------------------------------------------- */

/* Nodes made here, found again by (parent, proc_idx, kind, addr). */
struct stash {
	struct cygprof_stack_node *v;
	size_t n, cap;
	uint32_t first; /* id of v[0] */
	struct hindex index; /* of v, by (parent, proc_idx, kind, addr) */
};

static uint64_t node_hash(const struct cygprof_stack_node *k)
{
	return hash_pair((uint64_t)k->parent << 32 | k->proc_idx, k->addr ^ k->kind);
}

static int node_eq(const void *ctx, uint32_t i, const void *key)
{
	const struct cygprof_stack_node *v = &((const struct stash *)ctx)->v[i], *k = key;

	return v->parent == k->parent && v->proc_idx == k->proc_idx && v->kind == k->kind &&
	       v->addr == k->addr;
}

static uint64_t node_hash_at(const void *ctx, uint32_t i)
{
	return node_hash(&((const struct stash *)ctx)->v[i]);
}

static uint32_t stash_node(struct stash *st, uint32_t parent, uint32_t proc, uint32_t kind,
			   uint64_t addr)
{
	struct cygprof_stack_node k = {.parent = parent, .proc_idx = proc, .kind = kind,
				       .addr = addr}, *v;
	uint64_t h = node_hash(&k);
	long i = hindex_find(&st->index, h, node_eq, st, &k);

	if (i >= 0)
		return st->v[i].id;
	if (ARRAY_GROW(st->v, st->cap, st->n + 1) ||
	    hindex_add(&st->index, h, node_hash_at, st))
		cli_die(1, "%s: out of memory", CMD);
	if ((uint64_t)st->first + st->n > UINT32_MAX)
		cli_die(1, "%s: too many stack nodes", CMD);
	v = &st->v[st->n];
	v->id = st->first + (uint32_t)st->n;
	v->parent = parent;
	v->proc_idx = proc;
	v->kind = kind;
	v->addr = addr;
	st->n++;
	return v->id;
}

/* The stash id of a chain (frames innermost first), outermost frame the root. */
static uint32_t stash_chain(struct stash *st, uint32_t proc, const uint64_t *f, size_t n)
{
	uint32_t id = 0;
	size_t i;

	for (i = n; i-- > 0;)
		id = stash_node(st, id, proc, i ? CYGPROF_FRAME_RA : CYGPROF_FRAME_IP, f[i]);
	return id;
}

static int cmp_time(const void *a, const void *b)
{
	const struct cygprof_psample *x = a, *y = b;

	if (x->t_ns != y->t_ns)
		return x->t_ns < y->t_ns ? -1 : 1;
	return x->pad < y->pad ? -1 : x->pad > y->pad;
}

/* ---- addresses ---------------------------------------------------------------- */

static int same_path(const char *a, const char *b)
{
	const char *ba = strrchr(a, '/'), *bb = strrchr(b, '/');

	return !strcmp(a, b) || !strcmp(ba ? ba + 1 : a, bb ? bb + 1 : b);
}

/* Runtime addresses for the frames of a sample of process proc_idx.  perf
 * script prints user frames either at their runtime address or (perf 6.x
 * for addresses it resolved) relative to their object: an address outside
 * the recorded mapping of the object perf named is such an offset, moved by
 * the object's load bias. */
static void runtime_addrs(struct target *t, const struct input *in, uint32_t proc_idx,
			  size_t first, size_t n, uint64_t *out)
{
	const struct cygprof_object *objs;
	size_t nobjs = 0;

	if (view_objects(t->v, &objs, &nobjs))
		nobjs = 0;
	for (size_t i = 0; i < n; i++) {
		uint64_t a = in->frames[first + i];
		uint32_t d = in->dso[first + i];

		out[i] = a;
		if (d == UINT32_MAX)
			continue;
		for (size_t k = 0; k < nobjs; k++) {
			const struct cygprof_object *o = &objs[k];
			if (o->proc_idx != proc_idx || !o->path || !same_path(o->path, in->dsos[d]))
				continue;
			if ((a < o->start || a >= o->end) && a + o->bias >= o->start &&
			    a + o->bias < o->end)
				out[i] = a + o->bias;
			break;
		}
	}
}

/* ---- the command ------------------------------------------------------------ */

int cmd_import_perf(int argc, char **argv)
{
	static const struct option lopts[] = {
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct cygprof_stack_node *old;
	struct cygprof_psample *out;
	struct cygprof_capture *cap;
	struct stash st = { 0 };
	struct target t;
	struct input in;
	size_t nold, i, nout = 0, outside = 0, foreign = 0, nrt = 0;
	uint64_t *rt = NULL;
	const char *file;
	int c, rc;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":h", lopts, NULL)) != -1) {
		if (c == 'h') {
			usage(stdout);
			return 0;
		}
		cli_bad_option(CMD, c, argv);
	}
	file = cli_capture_arg(CMD, argc, argv);
	load_target(&t, file);
	read_input(&in, stdin);

	/* the nodes made here continue the capture's ids */
	rc = cygprof_capture_open_rw(file, &cap);
	cli_check(rc, file);
	rc = cygprof_capture_get_stacks(cap, &old, &nold);
	if (rc) {
		cygprof_capture_discard(cap);
		cli_check(rc, file);
	}
	free(old);
	st.first = (uint32_t)nold + 1;

	out = calloc(in.n, sizeof(*out));
	if (!out)
		cli_die(1, "%s: out of memory", CMD);
	for (i = 0; i < in.n; i++) {
		const struct sample *s = &in.s[i];
		struct cygprof_psample *o = &out[nout];
		uint32_t proc_idx, thread_idx, pid;

		if (s->mono_ns < t.mono0 || s->mono_ns - t.mono0 > t.duration) {
			outside++;
			continue;
		}
		o->t_ns = s->mono_ns - t.mono0;
		if (!match(&t, s->pid, s->tid, o->t_ns, &proc_idx, &thread_idx, &pid)) {
			foreign++;
			continue;
		}
		o->weight_ns = s->timed && s->has_period ? s->period : 0;
		o->rr_ticks = UINT64_MAX;
		o->thread_idx = thread_idx;
		o->pid = pid;
		o->tid = s->tid;
		if (s->nframes > nrt) {
			free(rt);
			nrt = s->nframes;
			if (!(rt = malloc(nrt * sizeof(*rt))))
				cli_die(1, "%s: out of memory", CMD);
		}
		runtime_addrs(&t, &in, proc_idx, s->frame0, s->nframes, rt);
		o->stack = s->nframes ? stash_chain(&st, proc_idx, rt, s->nframes) : 0;
		o->flags = CYGPROF_SAMPLE_IMPORTED | (s->kernel ? CYGPROF_SAMPLE_KERNEL : 0);
		o->pad = (uint32_t)nout; /* keeps equal times in input order */
		nout++;
	}
	qsort(out, nout, sizeof(*out), cmp_time);
	for (i = 0; i < nout; i++)
		out[i].pad = 0;

	rc = cygprof_capture_begin(cap);
	if (!rc)
		rc = cygprof_capture_put_stacks(cap, st.v, st.n);
	if (!rc)
		rc = cygprof_capture_append_psamples(cap, out, nout);
	if (!rc)
		rc = cygprof_capture_commit(cap);
	if (rc) {
		cygprof_capture_discard(cap);
		cli_check(rc, file);
	}
	cli_check(cygprof_capture_close(cap), file);
	printf("%s: imported %zu of %zu samples (%zu stack nodes); skipped %zu outside the "
	       "recording's time, %zu of processes it did not record\n",
	       file, nout, in.n, st.n, outside, foreign);
	if (fflush(stdout) || ferror(stdout))
		cli_die(1, "write error on standard output");
	free(out);
	free(st.v);
	hindex_release(&st.index);
	free(in.s);
	free(in.frames);
	free(in.dso);
	for (i = 0; i < in.ndsos; i++)
		free(in.dsos[i]);
	free(in.dsos);
	free(rt);
	view_close(t.v);
	return 0;
}
