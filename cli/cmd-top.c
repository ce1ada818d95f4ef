/* SPDX-License-Identifier: MIT */
/* cmd-top.c - cygprof top: run a program under the collector and show, as
 * it runs, its hottest functions (self time, calls, total time) over the
 * last interval and in total, per thread on request, and with --memory its
 * live heap and the stacks that hold it.
 *
 * The collector calls back at every turn of its poll loop (keys, the
 * window's size) and with a snapshot every --delay (collector_opts.snapshot).
 * On a terminal the view takes the whole screen (the alternate screen, put
 * back at the end) and the program's output goes to a file (--output-of,
 * /dev/null by default); elsewhere each snapshot is printed as a plain
 * table.  --once: no live view, one snapshot at the end (text or JSON). */
#include "config.h"

#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "cli.h"
#include "attach-elf.h"
#include "collector.h"
#include "format.h"
#include "json.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: cygprof top [options] [--] PROG [ARGS...]\n"
		"       cygprof top --attach PID [--duration SEC] [options]\n\n"
		"Run PROG (built with -finstrument-functions) and show, refreshed as it runs, its\n"
		"hottest functions: self time and calls over the last interval and in total,\n"
		"and total time.  Exits with PROG's exit status, or 128+N when signal N ended\n"
		"it (q stops it with SIGTERM: 143).  With --attach, watch a running process\n"
		"built with -finstrument-functions instead (as 'record --attach'); q detaches\n"
		"and it runs on.\n\n"
		"options:\n"
		"      --attach PID       watch the running process PID instead of starting one\n"
		"                         (docs/attach.md); it runs on after q, --duration or\n"
		"                         Ctrl-C.  Not with --memory\n"
		"      --duration SEC     with --attach: detach after SEC (e.g. 500ms, 10s)\n"
		"  -d, --delay SECS       refresh every SECS seconds (default 1; 0.05 to 3600)\n"
		"  -s, --sort KEY[,KEY]   order by these keys: self, total, calls, name\n"
		"                         (default self,calls); numbers largest first\n"
		"      --view=interval|total  sort and share by the last interval (default)\n"
		"                         or by the whole run\n"
		"      --threads          one block per thread (tid and name)\n"
		"      --memory           also trace the malloc family (as 'record --memory')\n"
		"                         and show the live heap and the stacks holding it\n"
		"  -n, --limit N          show at most N functions (per thread with --threads)\n"
		"                         and N heap stacks (default 20, 0: all)\n"
		"  -O, --output-of FILE   PROG's standard output and error go to FILE (appended);\n"
		"                         on a terminal by default to /dev/null (they would\n"
		"                         garble the view), and its input is /dev/null\n"
		"      --once             no live view: run PROG to its end, then print one\n"
		"                         snapshot (PROG's output passes through)\n"
		"      --format=text|json text (default) or JSON: one object per snapshot, one\n"
		"                         a line (no full screen; with --once the last only)\n"
		"  -o, --output FILE      also keep the capture (as 'cygprof record -o' writes\n"
		"                         it); only an earlier capture there is replaced\n"
		"  -q, --quiet            no warning when no instrumented function was called\n"
		"  -h, --help             this help\n\n"
		"Keys on a terminal: q (or ^C) stop PROG (SIGTERM; twice: SIGKILL) and quit,\n"
		"p pause the display, s next sort key, t per thread or merged, d last interval\n"
		"or total, h or ? help.\n");
}

/* ---- what a snapshot holds ------------------------------------------------------ */

/* One function, of one thread (tid) or merged over the threads (tid 0). */
struct row {
	char *name;
	uint32_t tid;
	uint64_t calls, self_ns, total_ns;
	uint64_t icalls, iself_ns, itotal_ns; /* in the last interval */
};

struct thr {
	uint32_t pid, tid;
	char name[16];
	int ended;
};

struct hstack {
	uint32_t id;
	uint64_t live_bytes, live_blocks, allocations, bytes;
	char **frames;
	size_t nframes;
};

/* One snapshot as top keeps it. */
struct snap {
	struct row *merged, *per; /* per: one row per (thread, function) */
	size_t nmerged, nper;
	struct thr *thr;
	size_t nthr;
	uint64_t elapsed_ns, interval_ns;
	uint64_t calls, icalls;
	uint32_t rings, ring_fill_pct;
	uint64_t ring_lost, ring_waits;
	int has_heap;
	struct collector_heap heap;    /* stacks: NULL; see hs */
	uint64_t iallocations;
	struct hstack *hs;
	size_t nhs;
	int final;
};

enum key { K_SELF, K_TOTAL, K_CALLS, K_NAME, K_COUNT };
static const char *const key_names[K_COUNT] = {"self", "total", "calls", "name"};
#define SORT_MAX 4

struct top {
	int once, json, quiet, threads, memory;
	int interval_view; /* sort and share by the last interval */
	enum key sort[SORT_MAX];
	size_t nsort;
	size_t limit;
	uint64_t delay_ns;
	const char *prog;
	/* the terminal */
	int screen;        /* the full-screen view */
	int keys;          /* keys are read from key_fd */
	int key_fd;
	FILE *out;         /* where the view goes */
	const char *output_of; /* where PROG's output goes (screen) */
	int paused, quitting, help;
	int pid;
	int attach_pid;    /* --attach: the process watched (q detaches, never kills) */
	uint64_t duration_ns;
	struct attach_target *target;
	struct snap cur;
	int have;
	unsigned rows, cols;
};

static void free_rows(struct row *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i].name);
	free(v);
}

static void free_snap(struct snap *s)
{
	free_rows(s->merged, s->nmerged);
	free_rows(s->per, s->nper);
	free(s->thr);
	for (size_t i = 0; i < s->nhs; i++) {
		for (size_t j = 0; j < s->hs[i].nframes; j++)
			free(s->hs[i].frames[j]);
		free(s->hs[i].frames);
	}
	free(s->hs);
	memset(s, 0, sizeof *s);
}

static int by_key(const void *a, const void *b)
{
	const struct row *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	if (c)
		return c;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

/* The order of the view: t's sort keys on its figures (interval or total),
 * then name and thread. */
static const struct top *sort_top;

static uint64_t fig(const struct row *r, enum key k, int interval)
{
	switch (k) {
	case K_SELF:
		return interval ? r->iself_ns : r->self_ns;
	case K_TOTAL:
		return interval ? r->itotal_ns : r->total_ns;
	case K_CALLS:
		return interval ? r->icalls : r->calls;
	default:
		return 0;
	}
}

static int by_sort(const void *a, const void *b)
{
	const struct row *x = a, *y = b;
	const struct top *t = sort_top;

	for (size_t i = 0; i < t->nsort; i++) {
		enum key k = t->sort[i];
		if (k == K_NAME) {
			int c = strcmp(x->name, y->name);
			if (c)
				return c;
			continue;
		}
		uint64_t u = fig(x, k, t->interval_view), v = fig(y, k, t->interval_view);
		if (u != v)
			return u < v ? 1 : -1;
	}
	return by_key(a, b);
}

static void sort_rows(const struct top *t, struct row *v, size_t n)
{
	sort_top = t;
	qsort(v, n, sizeof *v, by_sort);
}

/* rows v (sorted by key) with the figures of the previous snapshot's rows p
 * (sorted by key) taken off: the last interval. */
static void take_interval(struct row *v, size_t n, const struct row *p, size_t np)
{
	for (size_t i = 0; i < n; i++) {
		const struct row *q = np ? bsearch(&v[i], p, np, sizeof *v, by_key) : NULL;
#define SUB(a, b) ((a) - (q && q->b <= (a) ? q->b : 0))
		v[i].icalls = SUB(v[i].calls, calls);
		v[i].iself_ns = SUB(v[i].self_ns, self_ns);
		v[i].itotal_ns = SUB(v[i].total_ns, total_ns);
#undef SUB
	}
}

/* Rows sorted by key, merged when two have the same (name, tid). */
static size_t merge_rows(struct row *v, size_t n)
{
	size_t k = 0;

	qsort(v, n, sizeof *v, by_key);
	for (size_t i = 0; i < n; i++) {
		if (k && !by_key(&v[k - 1], &v[i])) {
			v[k - 1].calls += v[i].calls;
			v[k - 1].self_ns += v[i].self_ns;
			v[k - 1].total_ns += v[i].total_ns;
			free(v[i].name);
			continue;
		}
		v[k++] = v[i];
	}
	return k;
}

/* ---- output --------------------------------------------------------------------- */

static double per_s(uint64_t v, uint64_t ns)
{
	return ns ? v * 1e9 / ns : 0;
}

/* The order of the thread blocks: by the sum of the first sort key's figure
 * over their functions (by name: by tid), live threads first; order[0] for
 * the merged view. */
static const struct snap *order_snap;
static const uint64_t *order_sum;

static int by_block(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;
	const struct thr *tx = &order_snap->thr[x], *ty = &order_snap->thr[y];

	if (tx->ended != ty->ended)
		return tx->ended - ty->ended;
	if (order_sum[x] != order_sum[y])
		return order_sum[x] < order_sum[y] ? 1 : -1;
	return tx->tid < ty->tid ? -1 : tx->tid > ty->tid;
}

static void thread_order(const struct top *t, size_t *order)
{
	const struct snap *s = &t->cur;

	order[0] = 0;
	if (!t->threads)
		return;
	uint64_t *sum = calloc(s->nthr + 1, sizeof *sum);
	for (size_t b = 0; b < s->nthr; b++) {
		order[b] = b;
		for (size_t i = 0; sum && i < s->nper; i++)
			if (s->per[i].tid == s->thr[b].tid && t->sort[0] != K_NAME)
				sum[b] += fig(&s->per[i], t->sort[0], t->interval_view);
	}
	if (sum) {
		order_snap = s;
		order_sum = sum;
		qsort(order, s->nthr, sizeof *order, by_block);
	}
	free(sum);
}

/* The lines of the view: a header, the functions (merged or per thread),
 * the heap.  max_lines: 0 for no limit (plain output). */
static void render(struct top *t, FILE *f, unsigned max_lines)
{
	struct snap *s = &t->cur;
	unsigned used = 0;
	char b1[32], b2[32];

#define LINE_OK() (!max_lines || used < max_lines)
	size_t live = 0;
	for (size_t i = 0; i < s->nthr; i++)
		live += !s->thr[i].ended;
	/* after a detach the threads' records are closed, but they run on */
	char running[40] = "";
	if (!(s->final && t->attach_pid))
		snprintf(running, sizeof running, " (%zu running)", live);
	/* the state first: a long program path is what the width cuts */
	fprintf(f, "cygprof top%s%s: %s  %.1f s  %zu thread%s%s  %.0f calls/s\n",
		s->final ? (t->attach_pid ? " [detached]" : " [ended]") : "",
		t->paused ? " [paused]" : "", t->prog, s->elapsed_ns / 1e9, s->nthr,
		s->nthr == 1 ? "" : "s", running, per_s(s->icalls, s->interval_ns));
	used++;
	if (s->rings || s->ring_lost || s->ring_waits)
		fprintf(f, "rings: %u, fullest %u%%, %llu lost, %llu waits\n", s->rings,
			s->ring_fill_pct, (unsigned long long)s->ring_lost,
			(unsigned long long)s->ring_waits);
	else
		fprintf(f, "rings: none open\n");
	used++;
	if (t->screen && t->attach_pid) {
		fprintf(f, "attached to process %d: q detaches, it runs on\n", t->attach_pid);
		used++;
	} else if (t->screen) {
		fprintf(f, "program output: %s\n", t->output_of);
		used++;
	}
	if (s->has_heap) {
		fprintf(f, "heap: %s live in %llu blocks, peak %s, %.0f allocations/s\n",
			fmt_bytes(b1, sizeof b1, s->heap.live_bytes, FMT_BYTES_IEC10),
			(unsigned long long)s->heap.live_blocks,
			fmt_bytes(b2, sizeof b2, s->heap.peak_bytes, FMT_BYTES_IEC10),
			per_s(s->iallocations, s->interval_ns));
		used++;
	}
	fprintf(f, "view: %s, sorted by ", t->interval_view ? "last interval" : "total");
	for (size_t i = 0; i < t->nsort; i++)
		fprintf(f, "%s%s", i ? "," : "", key_names[t->sort[i]]);
	fprintf(f, "%s\n\n", t->threads ? ", per thread" : "");
	used += 2;

	/* heap stacks take at most a third of a screen */
	size_t nhs = s->has_heap ? s->nhs : 0;
	if (t->limit && nhs > t->limit)
		nhs = t->limit;
	if (max_lines && nhs && nhs + 3 > max_lines / 3)
		nhs = max_lines / 3 > 3 ? max_lines / 3 - 3 : 0;
	unsigned heap_lines = s->has_heap ? (unsigned)nhs + 3 : 0;
	unsigned foot = t->screen ? (t->help ? 6 : 2) : 0;
	unsigned avail = max_lines > used + heap_lines + foot ? max_lines - used - heap_lines - foot
							      : 0;

	const char *hdr = "%self  last self ms  last calls     self ms        calls    total ms  function\n";
	size_t nblocks = t->threads ? s->nthr : 1, *order = calloc(nblocks + 1, sizeof *order);
	if (!order)
		return;
	thread_order(t, order);
	/* on a screen, a share of the lines for each thread */
	size_t per_block = t->limit;
	if (max_lines && t->threads && nblocks) {
		size_t share = avail / nblocks > 3 ? avail / nblocks - 3 : 1;
		if (!per_block || share < per_block)
			per_block = share;
	}
	for (size_t bi = 0; bi < nblocks; bi++) {
		size_t b = order[bi];
		const struct row *v = t->threads ? s->per : s->merged;
		size_t n = t->threads ? s->nper : s->nmerged;
		uint32_t tid = t->threads ? s->thr[b].tid : 0;
		uint64_t sum = 0;
		size_t shown = 0;
		if (max_lines && avail < 3 && t->threads && bi)
			break;
		if (t->threads) {
			fprintf(f, "thread %u %s (pid %u)%s\n", tid, s->thr[b].name, s->thr[b].pid,
				s->thr[b].ended ? " ended" : "");
			used++;
			avail = avail ? avail - 1 : 0;
		}
		for (size_t i = 0; i < n; i++)
			if (v[i].tid == tid)
				sum += t->interval_view ? v[i].iself_ns : v[i].self_ns;
		fputs(hdr, f);
		used++;
		avail = avail ? avail - 1 : 0;
		for (size_t i = 0; i < n; i++) {
			const struct row *x = &v[i];
			if (x->tid != tid)
				continue;
			if (per_block && shown >= per_block)
				break;
			if (max_lines && !avail)
				break;
			uint64_t self = t->interval_view ? x->iself_ns : x->self_ns;
			fprintf(f, "%5.1f %14.3f %11llu %11.3f %12llu %11.3f  %s\n",
				sum ? 100.0 * self / sum : 0.0, x->iself_ns / 1e6,
				(unsigned long long)x->icalls, x->self_ns / 1e6,
				(unsigned long long)x->calls, x->total_ns / 1e6, x->name);
			used++;
			shown++;
			avail = avail ? avail - 1 : 0;
		}
		if (t->threads && (!max_lines || avail)) {
			fputc('\n', f);
			used++;
			avail = avail ? avail - 1 : 0;
		}
	}
	free(order);
	if (s->has_heap) {
		fprintf(f, "\n  live bytes  blocks  allocations  stack (innermost first)\n");
		used += 2;
		for (size_t i = 0; i < nhs && LINE_OK(); i++) {
			const struct hstack *h = &s->hs[i];
			fprintf(f, "%12llu %7llu %12llu  ", (unsigned long long)h->live_bytes,
				(unsigned long long)h->live_blocks, (unsigned long long)h->allocations);
			if (!h->nframes)
				fputs("?", f);
			for (size_t j = 0; j < h->nframes; j++)
				fprintf(f, "%s%s", j ? " < " : "", h->frames[j]);
			fputc('\n', f);
			used++;
		}
	}
	if (t->screen) {
		if (max_lines)
			while (used + foot < max_lines) {
				fputc('\n', f);
				used++;
			}
		if (t->help)
			fputs("q  stop the program (SIGTERM; again: SIGKILL) and quit\n"
			      "p  pause the display (the program runs on)\n"
			      "s  next sort key (self, total, calls, name)\n"
			      "t  per thread or merged;  d  last interval or total\n",
			      f);
		fprintf(f, "\nq: quit  p: pause  s: sort  t: threads  d: interval/total  h: help");
	}
#undef LINE_OK
}

static void json_row(FILE *f, const struct row *x, int tid)
{
	fputs("{\"name\":", f);
	json_str(f, x->name);
	if (tid)
		fprintf(f, ",\"tid\":%u", x->tid);
	fprintf(f,
		",\"calls\":%llu,\"self_ns\":%llu,\"total_ns\":%llu,"
		"\"interval_calls\":%llu,\"interval_self_ns\":%llu,\"interval_total_ns\":%llu}",
		(unsigned long long)x->calls, (unsigned long long)x->self_ns,
		(unsigned long long)x->total_ns, (unsigned long long)x->icalls,
		(unsigned long long)x->iself_ns, (unsigned long long)x->itotal_ns);
}

/* One snapshot as one line of JSON; status: PROG's wait status (the last
 * one), or -1 (a live one). */
static void print_json(struct top *t, FILE *f, int status)
{
	struct snap *s = &t->cur;
	size_t shown = 0;

	fprintf(f, "{\"elapsed_ns\":%llu,\"interval_ns\":%llu,\"final\":%s,\"threads\":%zu,",
		(unsigned long long)s->elapsed_ns, (unsigned long long)s->interval_ns,
		status == -1 ? "false" : "true", s->nthr);
	if (status == -1)
		;
	else if (t->attach_pid)
		fprintf(f, "\"attached\":%d,", t->attach_pid);
	else if (WIFSIGNALED(status))
		fprintf(f, "\"signal\":%d,", WTERMSIG(status));
	else
		fprintf(f, "\"exit_status\":%d,", WEXITSTATUS(status));
	fprintf(f, "\"view\":\"%s\",\"sort\":[", t->interval_view ? "interval" : "total");
	for (size_t i = 0; i < t->nsort; i++)
		fprintf(f, "%s\"%s\"", i ? "," : "", key_names[t->sort[i]]);
	fprintf(f, "],\"calls\":%llu,\"interval_calls\":%llu,", (unsigned long long)s->calls,
		(unsigned long long)s->icalls);
	fprintf(f, "\"rings\":{\"count\":%u,\"fullest_pct\":%u,\"lost\":%llu,\"waits\":%llu},",
		s->rings, s->ring_fill_pct, (unsigned long long)s->ring_lost,
		(unsigned long long)s->ring_waits);
	fprintf(f, "\"functions\":[");
	for (size_t i = 0; i < s->nmerged && (!t->limit || i < t->limit); i++) {
		if (i)
			fputc(',', f);
		json_row(f, &s->merged[i], 0);
	}
	fprintf(f, "],\"per_thread\":[");
	for (size_t b = 0; b < s->nthr; b++) {
		fprintf(f, "%s{\"tid\":%u,\"pid\":%u,\"name\":", b ? "," : "", s->thr[b].tid,
			s->thr[b].pid);
		json_str(f, s->thr[b].name);
		fprintf(f, ",\"ended\":%s,\"functions\":[", s->thr[b].ended ? "true" : "false");
		shown = 0;
		for (size_t i = 0; i < s->nper; i++) {
			if (s->per[i].tid != s->thr[b].tid || (t->limit && shown >= t->limit))
				continue;
			if (shown++)
				fputc(',', f);
			json_row(f, &s->per[i], 1);
		}
		fputs("]}", f);
	}
	fputs("]", f);
	if (s->has_heap) {
		const struct collector_heap *h = &s->heap;
		fprintf(f,
			",\"memory\":{\"live_bytes\":%llu,\"live_blocks\":%llu,\"peak_bytes\":%llu,"
			"\"allocations\":%llu,\"frees\":%llu,\"allocated_bytes\":%llu,"
			"\"freed_bytes\":%llu,\"untracked_frees\":%llu,"
			"\"interval_allocations\":%llu,\"allocations_per_s\":%.3f,\"stacks\":[",
			(unsigned long long)h->live_bytes, (unsigned long long)h->live_blocks,
			(unsigned long long)h->peak_bytes, (unsigned long long)h->allocations,
			(unsigned long long)h->frees, (unsigned long long)h->allocated_bytes,
			(unsigned long long)h->freed_bytes, (unsigned long long)h->untracked_frees,
			(unsigned long long)s->iallocations, per_s(s->iallocations, s->interval_ns));
		for (size_t i = 0; i < s->nhs && (!t->limit || i < t->limit); i++) {
			const struct hstack *x = &s->hs[i];
			fprintf(f,
				"%s{\"id\":%u,\"live_bytes\":%llu,\"live_blocks\":%llu,"
				"\"allocations\":%llu,\"bytes\":%llu,\"frames\":[",
				i ? "," : "", x->id, (unsigned long long)x->live_bytes,
				(unsigned long long)x->live_blocks, (unsigned long long)x->allocations,
				(unsigned long long)x->bytes);
			for (size_t j = 0; j < x->nframes; j++) {
				if (j)
					fputc(',', f);
				json_str(f, x->frames[j]);
			}
			fputs("]}", f);
		}
		fputs("]}", f);
	}
	fputs("}\n", f);
}

/* ---- the terminal ------------------------------------------------------------- */

/* What is to be put back at exit: the terminal's mode, the screen, the
 * descriptors 0-2 (the program's output went elsewhere). */
static struct termios saved_tty;
static int tty_fd = -1, tty_changed, screen_on, saved_fd[3] = {-1, -1, -1};
static FILE *view_out; /* the view's stream on saved_fd[1] */
static volatile sig_atomic_t winched;

static void on_winch(int sig)
{
	(void)sig;
	winched = 1;
}

static void term_restore(void)
{
	if (view_out)
		fflush(view_out);
	if (screen_on && saved_fd[1] >= 0) {
		static const char leave[] = "\033[?25h\033[?1049l";
		ssize_t w = write(saved_fd[1], leave, sizeof leave - 1);
		(void)w;
		screen_on = 0;
	}
	if (tty_changed) {
		tcsetattr(tty_fd, TCSANOW, &saved_tty);
		tty_changed = 0;
	}
	for (int fd = 0; fd < 3; fd++)
		if (saved_fd[fd] >= 0) {
			dup2(saved_fd[fd], fd);
			if (fd == 1 && view_out) {
				fclose(view_out);
				view_out = NULL;
			} else {
				close(saved_fd[fd]);
			}
			saved_fd[fd] = -1;
		}
}

/* cbreak mode on fd (keys without Enter, no echo).  no_signals: ^C and ^Z
 * come as keys (the full screen: ^C quits as q does, ^Z would leave the
 * terminal in the view's mode). */
static int tty_keys(int fd, int no_signals)
{
	struct termios raw;

	if (tcgetattr(fd, &saved_tty))
		return 0;
	raw = saved_tty;
	raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
	if (no_signals)
		raw.c_lflag &= ~(tcflag_t)ISIG;
	raw.c_cc[VMIN] = 0;
	raw.c_cc[VTIME] = 0;
	tty_fd = fd;
	if (tcsetattr(fd, TCSANOW, &raw))
		return 0;
	tty_changed = 1;
	return 1;
}

/* PROG's output to t->output_of (and with in_too its input from
 * /dev/null): our own copies of 0-2 (close-on-exec: PROG does not get
 * them) for the view, the keys and the messages, put back at the end. */
static void redirect(struct top *t, int in_too)
{
	int out, in = -1;

	for (int fd = 0; fd < 3; fd++) {
		saved_fd[fd] = fcntl(fd, F_DUPFD_CLOEXEC, 3);
		if (saved_fd[fd] < 0)
			cli_die(1, "top: cannot keep the terminal: %s", strerror(errno));
	}
	atexit(term_restore);
	out = open(t->output_of, O_WRONLY | O_CREAT | O_APPEND | O_NOCTTY | O_CLOEXEC, 0666);
	if (out < 0)
		cli_die(1, "top: cannot open %s for the program's output: %s", t->output_of,
			strerror(errno));
	if (in_too && ((in = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0 || dup2(in, 0) < 0))
		cli_die(1, "top: cannot redirect the program's input: %s", strerror(errno));
	if (dup2(out, 1) < 0 || dup2(out, 2) < 0)
		cli_die(1, "top: cannot redirect the program's output: %s", strerror(errno));
	if (in >= 0)
		close(in);
	close(out);
	t->out = view_out = fdopen(saved_fd[1], "w");
	if (!t->out)
		cli_die(1, "top: %s", strerror(errno));
}

/* The full-screen view: PROG's output to the file, its input from
 * /dev/null; the keys; the alternate screen. */
static void screen_start(struct top *t)
{
	redirect(t, 1);
	t->key_fd = saved_fd[0];
	t->keys = tty_keys(t->key_fd, 1);
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_winch;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGWINCH, &sa, NULL);
	winched = 1;
	fputs("\033[?1049h\033[?25l", t->out);
	fflush(t->out);
	screen_on = 1;
}

static void screen_size(struct top *t)
{
	struct winsize ws;

	t->rows = 24;
	t->cols = 80;
	if (!ioctl(fileno(t->out), TIOCGWINSZ, &ws) && ws.ws_row && ws.ws_col) {
		t->rows = ws.ws_row;
		t->cols = ws.ws_col;
	}
}

/* The view, or the plain table: on the screen, drawn over the last one,
 * every line cut at the width. */
static void show(struct top *t)
{
	if (!t->have) {
		if (t->screen && winched) {
			winched = 0;
			screen_size(t);
			fprintf(t->out, "\033[2J\033[Hcygprof top: %s: waiting for the first snapshot",
				t->prog);
			fflush(t->out);
		}
		return;
	}
	if (t->json) {
		print_json(t, t->out, -1);
		fflush(t->out);
		return;
	}
	if (!t->screen) {
		render(t, t->out, 0);
		fputc('\n', t->out);
		fflush(t->out);
		return;
	}
	if (winched) {
		winched = 0;
		screen_size(t);
		fputs("\033[2J", t->out);
	}
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	if (!m)
		return;
	render(t, m, t->rows);
	fclose(m);
	fputs("\033[H", t->out);
	unsigned col = 0, row = 0;
	for (size_t i = 0; i < len && row < t->rows; i++) {
		if (buf[i] == '\n') {
			fputs("\033[K", t->out);
			if (++row < t->rows)
				fputs("\r\n", t->out);
			col = 0;
		} else if (col < t->cols) {
			fputc(buf[i], t->out);
			col++;
		}
	}
	fputs("\033[K\033[J", t->out);
	fflush(t->out);
	free(buf);
}

/* s: the next key first, the others after it in their usual order. */
static void next_sort(struct top *t)
{
	enum key first = (t->sort[0] + 1) % K_COUNT;
	size_t n = 0;

	t->sort[n++] = first;
	if (first != K_NAME)
		t->sort[n++] = first == K_CALLS ? K_SELF : K_CALLS;
	t->nsort = n;
}

/* The keys typed since the last turn. */
static void read_keys(struct top *t)
{
	struct pollfd pfd = {.fd = t->key_fd, .events = POLLIN};
	char buf[64];
	ssize_t n;
	int redraw = 0;

	while (poll(&pfd, 1, 0) > 0 && (n = read(t->key_fd, buf, sizeof buf)) > 0)
		for (ssize_t i = 0; i < n; i++) {
			switch (buf[i]) {
			case 'q':
			case 'Q':
			case 3: /* ^C */
				if (t->attach_pid)
					raise(SIGINT); /* the attach ends: detach, it runs on */
				else if (t->pid > 0)
					kill(t->pid, t->quitting ? SIGKILL : SIGTERM);
				t->quitting = 1;
				break;
			case 'p':
			case 'P':
			case ' ':
				t->paused = !t->paused;
				break;
			case 's':
				next_sort(t);
				break;
			case 't':
				t->threads = !t->threads;
				break;
			case 'd':
				t->interval_view = !t->interval_view;
				break;
			case 'h':
			case '?':
				t->help = !t->help;
				break;
			default:
				continue;
			}
			redraw = 1;
		}
	if (redraw && t->have) {
		sort_rows(t, t->cur.merged, t->cur.nmerged);
		sort_rows(t, t->cur.per, t->cur.nper);
		show(t);
	}
}

static void on_turn(void *arg, int pid)
{
	struct top *t = arg;

	t->pid = pid;
	if (t->keys)
		read_keys(t);
	if (winched && t->screen)
		show(t);
}

/* ---- the collector's snapshots --------------------------------------------- */

static int same_frames(const struct hstack *a, const struct hstack *b)
{
	if (a->nframes != b->nframes)
		return 0;
	for (size_t i = 0; i < a->nframes; i++)
		if (strcmp(a->frames[i], b->frames[i]))
			return 0;
	return 1;
}

static int by_live(const void *a, const void *b)
{
	const struct hstack *x = a, *y = b;

	if (x->live_bytes != y->live_bytes)
		return x->live_bytes < y->live_bytes ? 1 : -1;
	return x->id < y->id ? -1 : x->id > y->id;
}

/* Stacks that read the same (the same named frames) are shown as one. */
static void merge_stacks(struct snap *n)
{
	size_t k = 0;

	for (size_t i = 0; i < n->nhs; i++) {
		struct hstack *h = &n->hs[i];
		size_t j;
		for (j = 0; j < k && !same_frames(&n->hs[j], h); j++)
			;
		if (j == k) {
			n->hs[k++] = *h;
			continue;
		}
		n->hs[j].live_bytes += h->live_bytes;
		n->hs[j].live_blocks += h->live_blocks;
		n->hs[j].allocations += h->allocations;
		n->hs[j].bytes += h->bytes;
		if (h->id < n->hs[j].id)
			n->hs[j].id = h->id;
		for (size_t f = 0; f < h->nframes; f++)
			free(h->frames[f]);
		free(h->frames);
	}
	n->nhs = k;
	if (k)
		qsort(n->hs, k, sizeof *n->hs, by_live);
}

/* The collector's snapshot: per-thread rows and merged ones, the interval
 * against the previous snapshot, the heap; shown (live) or kept (--once). */
static void on_snapshot(void *arg, const struct collector_snapshot *s)
{
	struct top *t = arg;
	struct snap n;
	size_t k = 0;

	memset(&n, 0, sizeof n);
	t->pid = s->pid;
	n.final = s->final;
	n.elapsed_ns = s->elapsed_ns;
	n.interval_ns = s->elapsed_ns - (t->have && t->cur.elapsed_ns <= s->elapsed_ns
						 ? t->cur.elapsed_ns
						 : 0);
	n.per = calloc(s->nfns + 1, sizeof *n.per);
	n.merged = calloc(s->nfns + 1, sizeof *n.merged);
	n.thr = calloc(s->threads + 1, sizeof *n.thr);
	if (!n.per || !n.merged || !n.thr)
		goto fail;
	for (size_t i = 0; i < s->threads; i++) {
		n.thr[i].pid = s->thread[i].pid;
		n.thr[i].tid = s->thread[i].tid;
		n.thr[i].ended = s->thread[i].ended;
		snprintf(n.thr[i].name, sizeof n.thr[i].name, "%s",
			 s->thread[i].name ? s->thread[i].name : "");
	}
	n.nthr = s->threads;
	for (size_t i = 0; i < s->nfns; i++) {
		const struct collector_fn *f = &s->fns[i];
		n.per[i] = (struct row){.name = strdup(f->name ? f->name : "?"),
					.tid = f->tid,
					.calls = f->calls,
					.self_ns = f->self_ns,
					.total_ns = f->total_ns};
		n.merged[i] = n.per[i];
		n.merged[i].tid = 0;
		n.merged[i].name = n.per[i].name ? strdup(n.per[i].name) : NULL;
		n.nper = n.nmerged = i + 1;
		if (!n.per[i].name || !n.merged[i].name)
			goto fail;
	}
	n.nper = merge_rows(n.per, n.nper);
	n.nmerged = merge_rows(n.merged, n.nmerged);
	/* the previous rows are in the view's order: by key for the lookup */
	if (t->have) {
		qsort(t->cur.per, t->cur.nper, sizeof *t->cur.per, by_key);
		qsort(t->cur.merged, t->cur.nmerged, sizeof *t->cur.merged, by_key);
	}
	take_interval(n.per, n.nper, t->cur.per, t->have ? t->cur.nper : 0);
	take_interval(n.merged, n.nmerged, t->cur.merged, t->have ? t->cur.nmerged : 0);
	for (size_t i = 0; i < n.nmerged; i++) {
		n.calls += n.merged[i].calls;
		n.icalls += n.merged[i].icalls;
	}
	n.rings = s->rings;
	n.ring_fill_pct = s->ring_fill_pct;
	n.ring_lost = s->ring_lost;
	n.ring_waits = s->ring_waits;
	if (s->heap) {
		n.has_heap = 1;
		n.heap = *s->heap;
		n.heap.stacks = NULL;
		n.iallocations = n.heap.allocations -
				 (t->have && t->cur.heap.allocations <= n.heap.allocations
					  ? t->cur.heap.allocations
					  : 0);
		n.hs = calloc(s->heap->nstacks + 1, sizeof *n.hs);
		if (!n.hs)
			goto fail;
		for (k = 0; k < s->heap->nstacks; k++) {
			const struct collector_stack *x = &s->heap->stacks[k];
			struct hstack *h = &n.hs[k];
			*h = (struct hstack){x->id, x->live_bytes, x->live_blocks, x->allocations,
					     x->bytes, calloc(x->nframes + 1, sizeof(char *)), 0};
			n.nhs = k + 1;
			if (!h->frames)
				goto fail;
			for (size_t j = 0; j < x->nframes; j++) {
				h->frames[j] = strdup(x->frames[j]);
				if (!h->frames[j])
					goto fail;
				h->nframes = j + 1;
			}
		}
	}
	merge_stacks(&n);
	sort_rows(t, n.per, n.nper);
	sort_rows(t, n.merged, n.nmerged);
	free_snap(&t->cur);
	t->cur = n;
	t->have = 1;
	/* paused: the figures on the screen stay (keys redraw with the new ones) */
	if (!t->once && !s->final && !t->paused)
		show(t);
	return;
fail:
	free_snap(&n);
}

/* The temporary capture of a run without -o, and its directory. */
static void remove_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char path[4096];

	if (d) {
		while ((e = readdir(d)))
			if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
				snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
				unlink(path);
			}
		closedir(d);
	}
	rmdir(dir);
}

static void parse_sort(struct top *t, char *arg)
{
	char *save = NULL, *k;

	t->nsort = 0;
	for (k = strtok_r(arg, ",", &save); k; k = strtok_r(NULL, ",", &save)) {
		size_t i;
		for (i = 0; i < K_COUNT && strcmp(k, key_names[i]); i++)
			;
		if (i == K_COUNT)
			cli_die(2, "top: unknown sort key '%s' (self, total, calls, name)", k);
		if (t->nsort == SORT_MAX)
			cli_die(2, "top: at most %d sort keys", SORT_MAX);
		t->sort[t->nsort++] = (enum key)i;
	}
	if (!t->nsort)
		cli_die(2, "top: --sort needs a key (self, total, calls, name)");
}

/* Start the program under the collector and run it to its end; the one
 * place that fills in how it starts (--attach will set its field here). */
static int run_collector(struct top *t, struct collector_opts *o, struct collector_result *r,
			 char *err, size_t errlen)
{
	o->quiet = 1;
	o->snapshot = on_snapshot;
	o->snapshot_arg = t;
	o->snapshot_ns = t->once ? 0 : t->delay_ns;
	o->snapshot_stacks = t->limit;
	o->turn = t->once ? NULL : on_turn;
	o->memory = t->memory;
	if (t->memory)
		o->instruments = "calls,memory";
	if (t->attach_pid)
		return collector_attach(o, t->target, t->duration_ns, r, err, errlen);
	return collector_record(o, r, err, errlen);
}

int cmd_top(int argc, char **argv)
{
	enum { OPT_ONCE = 256, OPT_FORMAT, OPT_VIEW, OPT_THREADS, OPT_MEMORY, OPT_ATTACH,
	       OPT_DURATION };
	static const struct option opts[] = {
		{"once", no_argument, NULL, OPT_ONCE},
		{"format", required_argument, NULL, OPT_FORMAT},
		{"limit", required_argument, NULL, 'n'},
		{"output", required_argument, NULL, 'o'},
		{"output-of", required_argument, NULL, 'O'},
		{"delay", required_argument, NULL, 'd'},
		{"sort", required_argument, NULL, 's'},
		{"view", required_argument, NULL, OPT_VIEW},
		{"threads", no_argument, NULL, OPT_THREADS},
		{"memory", no_argument, NULL, OPT_MEMORY},
		{"attach", required_argument, NULL, OPT_ATTACH},
		{"duration", required_argument, NULL, OPT_DURATION},
		{"quiet", no_argument, NULL, 'q'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct top t = {.limit = 20, .interval_view = 1, .sort = {K_SELF, K_CALLS}, .nsort = 2,
			.delay_ns = 1000000000ULL, .key_fd = -1};
	struct collector_opts o;
	struct collector_result r;
	struct stat prog_st;
	char err[512], tmpdir[4096] = "", tmpcap[4200];
	int c, rc;

	memset(&o, 0, sizeof o);
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+:n:o:O:d:s:qh", opts, NULL)) != -1) {
		switch (c) {
		case OPT_ONCE:
			t.once = 1;
			break;
		case OPT_FORMAT:
			t.json = cli_format_json("top", optarg);
			break;
		case 'n':
			t.limit = (size_t)cli_parse_uint("top", "--limit", optarg, 0, 1000000000);
			break;
		case 'o':
			o.output = optarg;
			break;
		case 'O':
			if (!*optarg)
				cli_die(2, "top: --output-of needs a file name");
			t.output_of = optarg;
			break;
		case 'd':
			t.delay_ns = (uint64_t)(cli_parse_real("top", "--delay", optarg, 0.05, 3600) *
						1e9);
			break;
		case 's':
			parse_sort(&t, optarg);
			break;
		case OPT_VIEW:
			if (!strcmp(optarg, "interval"))
				t.interval_view = 1;
			else if (!strcmp(optarg, "total"))
				t.interval_view = 0;
			else
				cli_die(2, "top: unknown --view '%s' (interval, total)", optarg);
			break;
		case OPT_THREADS:
			t.threads = 1;
			break;
		case OPT_MEMORY:
			t.memory = 1;
			break;
		case OPT_ATTACH:
			t.attach_pid = (int)cli_parse_uint("top", "--attach", optarg, 1, INT_MAX);
			break;
		case OPT_DURATION:
			t.duration_ns = cli_parse_duration("top", "--duration", optarg, "s",
							   86400000000000ULL * 365);
			if (!t.duration_ns)
				cli_die(2, "top: bad --duration value '%s' (more than 0)", optarg);
			break;
		case 'q':
			t.quiet = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			cli_bad_option("top", c, argv);
		}
	}
	if (t.duration_ns && !t.attach_pid)
		cli_die(2, "top: --duration goes with --attach (a program started runs to its end)");
	if (t.attach_pid) {
		char exe[64];

		if (optind < argc)
			cli_die(2, "top: --attach PID takes no program");
		if (t.memory)
			cli_die(2, "top: --attach shows calls only: not with --memory");
		if (t.output_of)
			cli_die(2, "top: --output-of goes with a program top starts, not --attach");
		t.target = calloc(1, sizeof *t.target);
		if (!t.target)
			cli_die(1, "top: out of memory");
		if (attach_check(t.attach_pid, t.target, err, sizeof err) < 0)
			cli_die(1, "top: %s", err);
		snprintf(exe, sizeof exe, "/proc/%d/exe", t.attach_pid);
		if (stat(exe, &prog_st) < 0)
			cli_die(1, "top: attach: no process %d", t.attach_pid);
		t.prog = t.target->exe;
	} else {
		if (optind >= argc)
			cli_die(2, "top: no program given (usage: cygprof top [options] -- PROG "
				"[ARGS...])");
		o.argv = argv + optind;
		t.prog = o.argv[0];
		cli_check_program(o.argv[0], &prog_st);
	}
	if (o.output && !*o.output)
		cli_die(2, "top: --output needs a file name");
	if (o.output)
		cli_output_check("top", o.output, OUT_CAPTURE, 0, &prog_st);
	if (t.output_of) {
		struct stat st;
		if (!stat(t.output_of, &st) && (S_ISDIR(st.st_mode) ||
						(st.st_dev == prog_st.st_dev &&
						 st.st_ino == prog_st.st_ino)))
			cli_die(1, "top: %s: %s", t.output_of,
				S_ISDIR(st.st_mode) ? "is a directory"
						    : "is the program itself");
	}
	const char *rtname = t.memory ? "libcygprof-mem.so" : "libcygprof-cyg.so";
	char *rt = cli_find_runtime(rtname);
	if (!rt)
		cli_die(1, "cannot find the runtime %s next to this cygprof", rtname);
	o.runtime = rt;
	if (!o.output) {
		const char *td = getenv("TMPDIR");
		snprintf(tmpdir, sizeof tmpdir, "%s/cygprof-top.XXXXXX", td && *td ? td : "/tmp");
		if (!mkdtemp(tmpdir))
			cli_die(1, "top: cannot make a temporary directory in %s: %s",
				td && *td ? td : "/tmp", strerror(errno));
		snprintf(tmpcap, sizeof tmpcap, "%s/top.cyg", tmpdir);
		o.output = tmpcap;
	}

	t.out = stdout;
	if (!t.once && !t.json && isatty(STDOUT_FILENO)) {
		t.screen = 1;
		if (!t.output_of)
			t.output_of = "/dev/null";
		screen_start(&t);
	} else {
		if (t.output_of)
			redirect(&t, 0);
		if (!t.once && isatty(STDIN_FILENO)) {
			t.key_fd = STDIN_FILENO;
			t.keys = tty_keys(STDIN_FILENO, 0);
			if (t.keys)
				atexit(term_restore);
		}
	}
	rc = run_collector(&t, &o, &r, err, sizeof err);
	term_restore(); /* closes t.out, our copy of the standard output */
	t.out = stdout;
	t.screen = 0;
	free(rt);
	if (tmpdir[0])
		remove_dir(tmpdir);
	if (rc) {
		free_snap(&t.cur);
		if (r.exec_errno)
			cli_die(r.exec_errno == ENOENT ? 127 : 126, "%s", err);
		cli_die(1, "%s", err);
	}
	if (t.json)
		print_json(&t, stdout, r.status);
	else if (t.have) {
		/* the last snapshot (after a live view: on the normal screen) */
		render(&t, stdout, 0);
	}
	if (fflush(stdout))
		cli_die(1, "write error on standard output");
	if (r.damaged[0])
		cli_warn("warning: %s", r.damaged);
	if (!r.calls && !(t.memory && r.mem_events) && !t.quiet && !t.attach_pid)
		cli_warn("warning: no instrumented function was called: build %s with "
			 "-finstrument-functions",
			 o.argv[0]);
	free_snap(&t.cur);
	free(t.target);
	if (t.attach_pid)
		return 0; /* detached (or the process ended): it was never ours to wait for */
	if (WIFSIGNALED(r.status))
		return 128 + WTERMSIG(r.status);
	return WEXITSTATUS(r.status);
}
