/* SPDX-License-Identifier: MIT */
/* view.c - cygprof top's view: the layout of a snapshot's lines (a header,
 * the functions merged or per thread, the heap stacks), within a screen's
 * height when on one, and what the keys change (see top.h). */
#define _GNU_SOURCE
#include "top.h"

#include <stdlib.h>

#include <string.h>

#include "format.h"
#include "textesc.h"

void top_render(const struct top_view *t, const struct top_snap *s, FILE *f, unsigned max_lines)
{
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
	/* the figures first, the program last, a long path shortened to its
	 * end: the width never cuts a figure */
	const char *prog = text_esc(t->prog), *tail;
	size_t plen = strlen(prog);

	tail = plen > 40 ? prog + plen - 37 : prog;
	while (*tail && ((unsigned char)*tail & 0xC0) == 0x80)
		tail++; /* not in the middle of a UTF-8 character */
	fprintf(f, "cygprof top%s%s: %.1f s  %zu thread%s%s  %.0f calls/s  %s%s\n",
		s->final ? (t->attach_pid ? " [detached]" : " [ended]") : "",
		t->paused ? " [paused]" : "", s->elapsed_ns / 1e9, s->nthr,
		s->nthr == 1 ? "" : "s", running, top_per_s(s->icalls, s->interval_ns),
		plen > 40 ? "..." : "", tail);
	used++;
	/* in the user's words, not the runtime's: a ring is a thread's
	 * buffer of events, and there are none without --memory */
	if (s->rings || s->ring_lost || s->ring_waits) {
		fprintf(f, "event buffers: %u thread%s traced, fullest %u%%, %llu events lost, "
			"%llu waits\n", s->rings, s->rings == 1 ? "" : "s", s->ring_fill_pct,
			(unsigned long long)s->ring_lost, (unsigned long long)s->ring_waits);
		used++;
	} else if (s->has_heap) {
		fprintf(f, "event buffers: no thread is being traced yet\n");
		used++;
	}
	if (t->screen && t->attach_pid) {
		fprintf(f, "attached to process %d: q detaches, it runs on\n", t->attach_pid);
		used++;
	} else if (t->screen) {
		fprintf(f, "program output: %s\n", text_esc(t->output_of));
		used++;
	}
	if (s->has_heap) {
		fprintf(f, "heap: %s live in %llu blocks, peak %s, %.0f allocations/s\n",
			fmt_bytes(b1, sizeof b1, s->heap.live_bytes, FMT_BYTES_IEC10),
			(unsigned long long)s->heap.live_blocks,
			fmt_bytes(b2, sizeof b2, s->heap.peak_bytes, FMT_BYTES_IEC10),
			top_per_s(s->iallocations, s->interval_ns));
		used++;
	}
	fprintf(f, "view: %s, sorted by ", t->interval ? "last interval" : "total");
	for (size_t i = 0; i < t->nsort; i++)
		fprintf(f, "%s%s", i ? "," : "", top_key_names[t->sort[i]]);
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
	top_thread_order(t, s, order);
	/* on a screen, a share of the lines for each thread */
	size_t per_block = t->limit;
	if (max_lines && t->threads && nblocks) {
		size_t share = avail / nblocks > 3 ? avail / nblocks - 3 : 1;
		if (!per_block || share < per_block)
			per_block = share;
	}
	for (size_t bi = 0; bi < nblocks; bi++) {
		size_t b = order[bi];
		const struct top_row *v = t->threads ? s->per : s->merged;
		size_t n = t->threads ? s->nper : s->nmerged;
		uint32_t tid = t->threads ? s->thr[b].tid : 0;
		uint64_t sum = 0;
		size_t shown = 0;
		if (max_lines && avail < 3 && t->threads && bi)
			break;
		if (t->threads) {
			fprintf(f, "thread %u %s (pid %u)%s\n", tid, text_esc(s->thr[b].name), s->thr[b].pid,
				s->thr[b].ended ? " ended" : "");
			used++;
			avail = avail ? avail - 1 : 0;
		}
		for (size_t i = 0; i < n; i++)
			if (v[i].tid == tid)
				sum += t->interval ? v[i].iself_ns : v[i].self_ns;
		fputs(hdr, f);
		used++;
		avail = avail ? avail - 1 : 0;
		for (size_t i = 0; i < n; i++) {
			const struct top_row *x = &v[i];
			if (x->tid != tid)
				continue;
			if (per_block && shown >= per_block)
				break;
			if (max_lines && !avail)
				break;
			uint64_t self = t->interval ? x->iself_ns : x->self_ns;
			fprintf(f, "%5.1f %14.3f %11llu %11.3f %12llu %11.3f  %s\n",
				sum ? 100.0 * self / sum : 0.0, x->iself_ns / 1e6,
				(unsigned long long)x->icalls, x->self_ns / 1e6,
				(unsigned long long)x->calls, x->total_ns / 1e6, text_esc(x->name));
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
			const struct top_stack *h = &s->hs[i];
			fprintf(f, "%12llu %7llu %12llu  ", (unsigned long long)h->live_bytes,
				(unsigned long long)h->live_blocks, (unsigned long long)h->allocations);
			if (!h->nframes)
				fputs("?", f);
			for (size_t j = 0; j < h->nframes; j++)
				fprintf(f, "%s%s", j ? " < " : "", text_esc(h->frames[j]));
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

/* s: the next key first, the others after it in their usual order. */
static void next_sort(struct top_view *v)
{
	enum top_key first = (v->sort[0] + 1) % TOP_NKEYS;
	size_t n = 0;

	v->sort[n++] = first;
	if (first != TOP_NAME)
		v->sort[n++] = first == TOP_CALLS ? TOP_SELF : TOP_CALLS;
	v->nsort = n;
}

enum top_action top_key_press(struct top_view *v, int ch)
{
	switch (ch) {
	case 'q':
	case 'Q':
	case 3: /* ^C */
		return TOP_QUIT;
	case 'p':
	case 'P':
	case ' ':
		v->paused = !v->paused;
		break;
	case 's':
		next_sort(v);
		break;
	case 't':
		v->threads = !v->threads;
		break;
	case 'd':
		v->interval = !v->interval;
		break;
	case 'h':
	case '?':
		v->help = !v->help;
		break;
	default:
		return TOP_NONE;
	}
	return TOP_REDRAW;
}
