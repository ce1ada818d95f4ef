/* SPDX-License-Identifier: MIT */
/* cpu.c - the runtime's CPU samples and off-CPU time summed by function
 * (cpu.h). */
#include "cpu.h"
#include "view.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static void add(struct cpu_cost *to, uint64_t s, uint64_t o, uint64_t w, uint64_t b)
{
	to->samples += s;
	to->overhead += o;
	to->wait_ns += w;
	to->blocked_ns += b;
}

int cpu_sum_load(struct view *v, const struct profile *p, struct cpu_sum **out)
{
	struct cpu_sum *s = calloc(1, sizeof *s);
	int err = 0;

	*out = NULL;
	if (!s)
		return -ENOMEM;
	s->nfns = p->nfns;
	s->fn = calloc(p->nfns ? p->nfns : 1, sizeof *s->fn);
	if (!s->fn) {
		free(s);
		return -ENOMEM;
	}
	for (size_t ti = 0; ti < p->nthreads && !err; ti++) {
		const struct profile_thread *th = &p->threads[ti];
		const struct view_cpu *c;

		if ((err = view_cpu(v, th->info.idx, &c)) || !c->present)
			continue;
		s->present = 1;
		s->taken += c->thread.samples;
		s->unplaced += c->thread.unplaced;
		if (c->period_ns > s->period_ns)
			s->period_ns = c->period_ns;
		if (c->thread.method)
			s->methods |= 1u << c->thread.method;
		s->switches |= !!(c->thread.flags & CYGPROF_CPU_SWITCHES);
		/* the view's tree and the profile's thread are the same nodes */
		size_t n = c->n < th->n ? c->n : th->n;
		for (size_t j = 0; j < n; j++) {
			uint32_t f = th->nodes[j].fn;
			struct cpu_cost *to = f == PROFILE_NONE || f >= s->nfns ? &s->root : &s->fn[f];
			add(to, c->samples[j], c->overhead[j], c->wait_ns[j], c->blocked_ns[j]);
			add(&s->total, c->samples[j], c->overhead[j], c->wait_ns[j], c->blocked_ns[j]);
		}
	}
	if (err) {
		cpu_sum_free(s);
		return err;
	}
	*out = s;
	return 0;
}

void cpu_sum_free(struct cpu_sum *s)
{
	if (!s)
		return;
	free(s->fn);
	free(s);
}

const char *cpu_sampler(struct view *v)
{
	const char *s = view_meta_str(v, "cpu_sampler");

	if (s && (!strcmp(s, "perf") || !strcmp(s, "timer") || !strcmp(s, "perf+timer")))
		return s;
	return "off";
}

uint64_t cpu_period_ns(struct view *v)
{
	const char *s = view_meta_str(v, "cpu_period_ns");
	char *end;
	unsigned long long x;

	if (!s || !*s || !strcmp(cpu_sampler(v), "off"))
		return 0;
	x = strtoull(s, &end, 10);
	return *end ? 0 : (uint64_t)x;
}

int cpu_time_model(struct view *v, struct timemodel_stats *sum, size_t *modelled)
{
	const struct cygprof_thread *th;
	size_t n, i;
	int err;

	memset(sum, 0, sizeof *sum);
	*modelled = 0;
	if ((err = view_threads(v, &th, &n)))
		return err;
	for (i = 0; i < n; i++) {
		const struct view_tree *t;

		if ((err = view_tree(v, th[i].idx, &t)))
			return err;
		if (!t->modelled)
			continue;
		++*modelled;
		sum->wait_ns += t->model.wait_ns;
		sum->blocked_ns += t->model.blocked_ns;
		sum->corrected += t->model.corrected;
		sum->sampled_nodes += t->model.sampled_nodes;
	}
	return 0;
}

int cpu_times_sampled(struct view *v)
{
	return view_time_sampled(v) && cpu_period_ns(v) > 0;
}
