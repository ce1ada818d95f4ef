/* SPDX-License-Identifier: MIT */
/* clock.c - the collector's clocks: the time origin taken before the program
 * starts, the runtime's tick (rdtsc or CLOCK_MONOTONIC ns) and its
 * calibration against CLOCK_MONOTONIC. */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <time.h>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

#include "collector-private.h"

uint64_t collector_mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t collector_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int collector_have_tsc(void)
{
#if defined(__x86_64__)
	char line[4096];
	int cst = 0, nst = 0;
	FILE *f = fopen("/proc/cpuinfo", "re");

	if (!f)
		return 0;
	while (fgets(line, sizeof line, f)) {
		if (strncmp(line, "flags", 5))
			continue;
		cst = strstr(line, " constant_tsc") != NULL;
		nst = strstr(line, " nonstop_tsc") != NULL;
		break;
	}
	fclose(f);
	return cst && nst;
#else
	return 0;
#endif
}

uint64_t collector_now(const struct collector *c)
{
#if defined(__x86_64__) || defined(__i386__)
	if (c->flags & CYG_F_TSC)
		return __rdtsc();
#endif
	return collector_mono_ns();
}

static uint64_t real_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void collector_clock_pair(const struct collector *c, struct clock_pair *p)
{
	uint64_t best = UINT64_MAX;

	for (int i = 0; i < 5; i++) {
		uint64_t m1 = collector_mono_ns(), r1 = real_ns(), t = collector_now(c);
		uint64_t r2 = real_ns(), m2 = collector_mono_ns();

		if (m2 - m1 < best) {
			best = m2 - m1;
			p->tick = t;
			p->mono_ns = m1 + (m2 - m1) / 2;
			p->real_ns = r1 + (r2 - r1) / 2;
		}
	}
}

/* The capture's time origin, taken before the program starts: the tick and
 * the two clocks read together (meta clock_start). */
void collector_clock_origin(struct collector *c)
{
	collector_clock_pair(c, &c->clk_start);
	c->mono0 = c->clk_start.mono_ns;
	c->tsc0 = c->clk_start.tick;
}

/* Ticks to ns against CLOCK_MONOTONIC, from the origin to at least
 * CLOCK_CALIBRATE_NS later (the program starts meanwhile; nothing is
 * converted before), and the fixed-point factor of ticks_to_ns(). */
void collector_calibrate(struct collector *c)
{
	c->ns_per_tick = 1.0;
	if (c->flags & CYG_F_TSC) {
		uint64_t left = c->mono0 + CLOCK_CALIBRATE_NS - collector_mono_ns();
		if ((int64_t)left > 0) {
			struct timespec ts = {0, (long)left};
			nanosleep(&ts, NULL);
		}
		uint64_t m1 = collector_mono_ns(), t1 = collector_now(c);
		c->ns_per_tick = (double)(m1 - c->mono0) / (double)(t1 - c->tsc0);
		c->ctl->tsc_per_sec = (uint64_t)(1e9 / c->ns_per_tick);
	}
	c->mult = (uint64_t)(c->ns_per_tick * 4294967296.0 + 0.5);
}

/* ticks summed over k calls, as ns per call to 1/1000 ns (as the capture
 * stores them: top and a report of the capture take out the same) */
static double per_call_ns(const struct collector *c, uint64_t ticks, uint32_t k)
{
	return (double)(uint64_t)((double)ticks_to_ns(c, ticks) * 1000 / k + 0.5) / 1000;
}

int collector_overhead(const struct collector *c, struct collector_overhead *o)
{
	memset(o, 0, sizeof *o);
	if (c->o->time_sampled)
		return 0;
	for (size_t i = 0; i < c->nprocs; i++) {
		const struct cyg_proc *p = C_AT(c, c->procs[i]->off);
		uint32_t k = ACQ(p->calib_calls), r = RD(p->calib_rounds), kept = RD(p->calib_kept);
		uint64_t in = RD(p->calib_in), full = RD(p->calib_full);
		uint64_t in_sd = RD(p->calib_in_sd), out_sd = RD(p->calib_out_sd);
		/* the mapping is the program's: a figure past 1 ms per call is
		 * not a measure of the hooks */
		if (!k || k > 1000000 || !r || r > 1000 || !kept || kept > r || in > full ||
		    ticks_to_ns(c, full) > (uint64_t)k * 1000000 ||
		    ticks_to_ns(c, in_sd) > (uint64_t)k * 1000000 ||
		    ticks_to_ns(c, out_sd) > (uint64_t)k * 1000000)
			continue;
		double ins = per_call_ns(c, in, k), outs = per_call_ns(c, full - in, k);
		if (!o->images++) {
			/* the first process image's figures are the capture's */
			o->in_ns = ins;
			o->out_ns = outs;
			o->in_sd_ns = per_call_ns(c, in_sd, k);
			o->out_sd_ns = per_call_ns(c, out_sd, k);
			o->calls = k;
			o->rounds = r;
			o->kept = kept;
			o->tries = RD(p->calib_tries);
			o->mode = RD(p->calib_mode);
			o->ring_bytes = RD(p->calib_ring_words) * 8;
			o->in_min = o->in_max = ins;
			o->out_min = o->out_max = outs;
		}
		o->in_min = ins < o->in_min ? ins : o->in_min;
		o->in_max = ins > o->in_max ? ins : o->in_max;
		o->out_min = outs < o->out_min ? outs : o->out_min;
		o->out_max = outs > o->out_max ? outs : o->out_max;
	}
	return o->images != 0;
}
