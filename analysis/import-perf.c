/* SPDX-License-Identifier: MIT */
/* import-perf.c - the samples of a `perf script` text added to a capture of
 * the same run (import-perf.h): the text read whole, the capture's clock,
 * processes and threads from its view, the samples placed on them and
 * their frames interned in the stack stash (capture/stack-stash.h), then
 * written through a copy of the capture renamed over it. */
#define _GNU_SOURCE
#include "import-perf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "stack-stash.h"
#include "view.h"

/* The kernel's half of the address space (x86-64, arm64 and the like). */
#define KERNEL_ADDR 0xffff800000000000ull

/* ---- perf script's text ------------------------------------------------------- */

static int bad_line(struct perf_script *in, size_t line, const char *what)
{
	in->err_line = line;
	in->err_what = what;
	return IMPORT_E_LINE;
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

/* The index of the object path in the "(DSO)" at the end of a frame line
 * (*dso), UINT32_MAX when there is none or it is perf's "[unknown]".
 * 0 or -ENOMEM. */
static int frame_dso(struct perf_script *in, const char *line, uint32_t *dso)
{
	const char *e = strrchr(line, ')'), *b;
	size_t n, i;

	*dso = UINT32_MAX;
	if (!e || e[1])
		return 0;
	for (b = e; b > line && b[-1] != '('; b--)
		;
	if (b == line || e == b || *b == '[')
		return 0;
	n = (size_t)(e - b);
	for (i = 0; i < in->ndsos; i++)
		if (strlen(in->dsos[i]) == n && !memcmp(in->dsos[i], b, n)) {
			*dso = (uint32_t)i;
			return 0;
		}
	if (!(in->ndsos & (in->ndsos + 1))) { /* 0, 1, 3, 7...: grow */
		char **d = realloc(in->dsos, (in->ndsos * 2 + 2) * sizeof(*d));
		if (!d)
			return -ENOMEM;
		in->dsos = d;
	}
	if (!(in->dsos[in->ndsos] = strndup(b, n)))
		return -ENOMEM;
	*dso = (uint32_t)in->ndsos++;
	return 0;
}

/* The user frame at addr of the line (its object named at its end) for the
 * sample s. */
static int add_frame(struct perf_script *in, struct perf_sample *s, const char *line,
		     uint64_t addr)
{
	uint32_t dso;
	int err = frame_dso(in, line, &dso);

	if (err)
		return err;
	if (in->nframes == in->cframes) {
		size_t nc = in->cframes ? in->cframes * 2 : 1024;
		uint64_t *f = realloc(in->frames, nc * sizeof(*f));
		uint32_t *d;

		if (!f)
			return -ENOMEM;
		in->frames = f;
		if (!(d = realloc(in->dso, nc * sizeof(*d))))
			return -ENOMEM;
		in->dso = d;
		in->cframes = nc;
	}
	in->dso[in->nframes] = dso;
	in->frames[in->nframes++] = addr;
	s->nframes++;
	return 0;
}

/* A frame line: "ADDR SYMBOL+OFF (DSO)"; the address is what is kept.
 * Kernel frames (and the sample's kernel part) are dropped: the stack is
 * the user part. */
static int frame_line(struct perf_script *in, struct perf_sample *s, char *line, size_t lineno)
{
	const char *tok[2];
	size_t len[2];
	uint64_t addr;
	bool kernel;

	if (tokens(line, tok, len, 2) < 1 || !parse_hex(tok[0], len[0], &addr))
		return bad_line(in, lineno, "call chain line without a hexadecimal address");
	kernel = addr >= KERNEL_ADDR || strstr(line, "([kernel.kallsyms])") ||
		 strstr(line, "([kernel") || strstr(line, "([guest.kernel");
	if (kernel) {
		if (!s->nframes)
			s->kernel = true;
		return 0;
	}
	return add_frame(in, s, line, addr);
}

/* A sample's header: COMM PID[/TID] [CPU] TIME: [PERIOD] EVENT: [IP SYM (DSO)].
 * COMM may hold spaces: the fields are found from the time backwards. */
static int header_line(struct perf_script *in, struct perf_sample *s, char *line, size_t lineno)
{
	enum { MAXTOK = 64 };
	const char *tok[MAXTOK];
	size_t len[MAXTOK], n, i, ti, pi;
	const char *slash, *ev, *colon;
	char evname[64];
	uint64_t ip;
	size_t el;

	memset(s, 0, sizeof(*s));
	s->line = lineno;
	s->frame0 = in->nframes;
	n = tokens(line, tok, len, MAXTOK);
	for (ti = 1; ti < n; ti++)
		if (parse_time(tok[ti], len[ti], &s->mono_ns))
			break;
	if (ti >= n)
		return bad_line(in, lineno, "not a sample header (no 'SECONDS.FRACTION:' time)");
	pi = ti - 1;
	if (len[pi] > 2 && tok[pi][0] == '[' && tok[pi][len[pi] - 1] == ']') {
		if (!all_digits(tok[pi] + 1, len[pi] - 2) || pi == 0)
			return bad_line(in, lineno, "sample header: malformed [CPU] field");
		pi--;
	}
	if (pi == 0)
		return bad_line(in, lineno, "sample header: no command before the thread id");
	slash = memchr(tok[pi], '/', len[pi]);
	if (slash) {
		if (!parse_u32(tok[pi], (size_t)(slash - tok[pi]), &s->pid) ||
		    !parse_u32(slash + 1, len[pi] - (size_t)(slash + 1 - tok[pi]), &s->tid) || !s->pid)
			return bad_line(in, lineno, "sample header: malformed PID/TID field");
	} else if (!parse_u32(tok[pi], len[pi], &s->tid)) {
		return bad_line(in, lineno, "sample header: malformed thread id");
	}
	i = ti + 1;
	if (i < n && all_digits(tok[i], len[i])) {
		errno = 0;
		s->period = strtoull(tok[i], NULL, 10);
		if (errno)
			return bad_line(in, lineno, "sample header: period out of range");
		s->has_period = true;
		i++;
	}
	if (i >= n || tok[i][len[i] - 1] != ':')
		return bad_line(in, lineno, "sample header: no 'EVENT:' after the time");
	ev = tok[i];
	colon = memchr(ev, ':', len[i]);
	el = (size_t)(colon - ev);
	if (!el || el >= sizeof(evname))
		return bad_line(in, lineno, "sample header: malformed event name");
	memcpy(evname, ev, el);
	evname[el] = 0;
	s->timed = !strcmp(evname, "cpu-clock") || !strcmp(evname, "task-clock");
	/* without -g the sample's own address follows on the same line */
	if (++i < n && parse_hex(tok[i], len[i], &ip)) {
		if (ip >= KERNEL_ADDR || strstr(tok[i] + len[i], "([kernel")) {
			s->kernel = true;
		} else {
			return add_frame(in, s, line, ip);
		}
	}
	return 0;
}

/* One line (without its end) of the text; *cur the sample being read. */
static int script_line(struct perf_script *in, char *line, size_t l, size_t lineno,
		       struct perf_sample **cur)
{
	if (strlen(line) != l)
		return bad_line(in, lineno, "NUL byte");
	if (!l || strspn(line, " \t") == l) {
		*cur = NULL; /* the blank line after a sample */
		return 0;
	}
	if (line[0] == '#' && !*cur)
		return 0; /* perf script --header */
	/* perf pads the command on the left with spaces and indents frames
	 * with a tab */
	if (line[0] == '\t' || (line[0] == ' ' && *cur)) {
		if (!*cur)
			return bad_line(in, lineno, "call chain line outside a sample");
		return frame_line(in, *cur, line, lineno);
	}
	if (*cur)
		return bad_line(in, lineno,
				"sample header without the blank line that ends the last sample");
	if (ARRAY_GROW(in->s, in->cap, in->n + 1))
		return -ENOMEM;
	*cur = &in->s[in->n++];
	return header_line(in, *cur, line, lineno);
}

int perf_script_read(FILE *f, struct perf_script *in)
{
	char *line = NULL;
	size_t lcap = 0, lineno = 0, l;
	ssize_t r;
	struct perf_sample *cur = NULL;
	int err = 0;

	memset(in, 0, sizeof(*in));
	while (!err && (r = getline(&line, &lcap, f)) >= 0) {
		lineno++;
		l = (size_t)r;
		while (l && (line[l - 1] == '\n' || line[l - 1] == '\r'))
			line[--l] = 0;
		err = script_line(in, line, l, lineno, &cur);
	}
	free(line);
	if (err)
		return err;
	if (ferror(f))
		return -EIO;
	return in->n ? 0 : IMPORT_E_NO_SAMPLES;
}

void perf_script_free(struct perf_script *s)
{
	size_t i;

	free(s->s);
	free(s->frames);
	free(s->dso);
	for (i = 0; i < s->ndsos; i++)
		free(s->dsos[i]);
	free(s->dsos);
	memset(s, 0, sizeof(*s));
}

/* ---- the capture's processes, threads and clock ------------------------------- */

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

int import_target_load(struct view *v, struct import_target *t)
{
	const struct cygprof_psample *ps;
	const struct cygprof_stack_node *stash;
	const char *m;
	uint64_t end;
	size_t i, n;
	int err;

	memset(t, 0, sizeof(*t));
	t->v = v;
	m = view_meta_str(v, "clock_start");
	if (!m || !meta_field(m, "mono_ns", &t->mono0))
		return IMPORT_E_NO_CLOCK;
	/* the end: "duration_ns", else the pairing at the end, and the
	 * latest thread or process end */
	t->duration = view_duration_ns(v);
	m = view_meta_str(v, "clock_end");
	if (m && meta_field(m, "mono_ns", &end) && end >= t->mono0 && end - t->mono0 > t->duration)
		t->duration = end - t->mono0;
	if ((err = view_procs(v, &t->procs, &t->nprocs)) ||
	    (err = view_threads(v, &t->threads, &t->nthreads)))
		return err;
	for (i = 0; i < t->nprocs; i++)
		if (t->procs[i].end_ns > t->duration)
			t->duration = t->procs[i].end_ns;
	if ((err = view_psamples(v, &ps, &n)))
		return err;
	for (i = 0; i < n; i++)
		if (ps[i].flags & CYGPROF_SAMPLE_IMPORTED)
			return IMPORT_E_IMPORTED;
	if ((err = view_stash(v, &stash, &n)))
		return err;
	t->nstacks = (uint32_t)n;
	return 0;
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
static bool match(const struct import_target *t, uint32_t pid, uint32_t tid, uint64_t ts,
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
 * the object's load bias (or, for an object at its link address, by its
 * start). */
static void runtime_addrs(const struct import_target *t, const struct perf_script *in,
			  uint32_t proc_idx, size_t first, size_t n, uint64_t *out)
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
			if (a >= o->start && a < o->end)
				break;
			/* an offset in the object: PIE (and libraries) have their
			 * first segment at 0, so runtime = offset + bias; an object
			 * loaded at its link address (non-PIE, bias 0) is mapped
			 * from its start at file offset 0, so runtime = offset +
			 * start */
			if (a + o->bias >= o->start && a + o->bias < o->end)
				out[i] = a + o->bias;
			else if (a + o->start < o->end)
				out[i] = a + o->start;
			break;
		}
	}
}

/* ---- the import --------------------------------------------------------------- */

struct import_perf {
	struct cygprof_capture *cap; /* reopened for writing */
	struct stack_stash st;       /* the new nodes */
	struct cygprof_psample *out; /* the samples placed, in time order */
	size_t nout;
};

int import_perf_open(const char *path, struct import_perf **out)
{
	struct import_perf *imp = calloc(1, sizeof(*imp));
	int err;

	*out = NULL;
	if (!imp)
		return -ENOMEM;
	err = cygprof_capture_open_rw(path, &imp->cap);
	if (err) {
		free(imp);
		return err;
	}
	*out = imp;
	return 0;
}

static int cmp_time(const void *a, const void *b)
{
	const struct cygprof_psample *x = a, *y = b;

	if (x->t_ns != y->t_ns)
		return x->t_ns < y->t_ns ? -1 : 1;
	return x->pad < y->pad ? -1 : x->pad > y->pad;
}

int import_perf_place(struct import_perf *imp, const struct import_target *t,
		      const struct perf_script *in, struct import_counts *c)
{
	uint64_t *rt = NULL;
	size_t i, nrt = 0;
	int err = 0;

	memset(c, 0, sizeof(*c));
	c->samples = in->n;
	/* the nodes made here continue the capture's ids */
	stack_stash_init(&imp->st, t->nstacks);
	imp->out = calloc(in->n ? in->n : 1, sizeof(*imp->out));
	if (!imp->out)
		return -ENOMEM;
	imp->nout = 0;
	for (i = 0; i < in->n && !err; i++) {
		const struct perf_sample *s = &in->s[i];
		struct cygprof_psample *o = &imp->out[imp->nout];
		uint32_t proc_idx, thread_idx, pid;

		if (s->mono_ns < t->mono0 || s->mono_ns - t->mono0 > t->duration) {
			c->outside++;
			continue;
		}
		o->t_ns = s->mono_ns - t->mono0;
		if (!match(t, s->pid, s->tid, o->t_ns, &proc_idx, &thread_idx, &pid)) {
			c->foreign++;
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
			if (!(rt = malloc(nrt * sizeof(*rt)))) {
				err = -ENOMEM;
				break;
			}
		}
		runtime_addrs(t, in, proc_idx, s->frame0, s->nframes, rt);
		o->stack = stack_stash_chain(&imp->st, &err, proc_idx, rt, s->nframes);
		o->flags = CYGPROF_SAMPLE_IMPORTED | (s->kernel ? CYGPROF_SAMPLE_KERNEL : 0);
		o->pad = (uint32_t)imp->nout; /* keeps equal times in input order */
		imp->nout++;
	}
	free(rt);
	if (err)
		return err;
	qsort(imp->out, imp->nout, sizeof(*imp->out), cmp_time);
	for (i = 0; i < imp->nout; i++)
		imp->out[i].pad = 0;
	c->imported = imp->nout;
	c->stack_nodes = imp->st.n;
	return 0;
}

static void import_free(struct import_perf *imp)
{
	stack_stash_release(&imp->st);
	free(imp->out);
	free(imp);
}

int import_perf_commit(struct import_perf *imp)
{
	int err = cygprof_capture_begin(imp->cap);

	if (!err)
		err = stack_stash_store(&imp->st, imp->cap);
	if (!err)
		err = cygprof_capture_append_psamples(imp->cap, imp->out, imp->nout);
	if (!err)
		err = cygprof_capture_commit(imp->cap);
	if (err)
		cygprof_capture_discard(imp->cap);
	else
		err = cygprof_capture_close(imp->cap);
	import_free(imp);
	return err;
}

void import_perf_discard(struct import_perf *imp)
{
	if (!imp)
		return;
	cygprof_capture_discard(imp->cap);
	import_free(imp);
}
