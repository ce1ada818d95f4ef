/* SPDX-License-Identifier: MIT */
/* progress.c - the progress line of export, replay and html (progress.h). */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "progress.h"

/* The progress that is on (cli_progress_clear_any()). */
static struct cli_progress *active;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A count as the line shows it: exact under 10000, else "19.5 M". */
static const char *count(char *buf, size_t len, uint64_t n)
{
	static const char units[] = "KMGTPE";
	double v = (double)n;
	int u = -1;

	if (n < 10000) {
		snprintf(buf, len, "%llu", (unsigned long long)n);
		return buf;
	}
	while (v >= 1000 && u < 5) {
		v /= 1000;
		u++;
	}
	snprintf(buf, len, "%.1f %c", v, units[u]);
	return buf;
}

void cli_progress_init(struct cli_progress *p, const char *label, const char *unit, int on)
{
	const char *d = getenv("CYGPROF_PROGRESS_DELAY_MS");
	uint64_t ms = CLI_PROGRESS_DELAY_MS;

	p->label = label;
	p->unit = unit;
	p->done = p->total = 0;
	p->shown = 0;
	p->on = on && isatty(STDERR_FILENO) && !cli_paged;
	/* checked by cli_check_env(): a bad value never gets here */
	if (d && *d && cli_scan_uint(d, 0, CLI_PROGRESS_DELAY_MAX_MS, &ms))
		ms = CLI_PROGRESS_DELAY_MS;
	p->delay_ns = ms * 1000000u;
	p->start_ns = p->last_ns = now_ns();
	if (p->on)
		active = p;
}

static void draw(struct cli_progress *p, uint64_t t)
{
	char a[32], b[32];
	uint64_t done = p->done < p->total ? p->done : p->total;

	fprintf(stderr, "\r%s: %3u%% (%s of %s %s), %.1f s\033[K", p->label,
		(unsigned)((double)done * 100 / (double)p->total), count(a, sizeof a, done),
		count(b, sizeof b, p->total), p->unit, (double)(t - p->start_ns) / 1e9);
	fflush(stderr);
	p->shown = 1;
	p->last_ns = t;
}

void cli_progress_set(struct cli_progress *p, const char *unit, uint64_t done, uint64_t total)
{
	uint64_t t;

	if (!p->on)
		return;
	if (unit)
		p->unit = unit;
	p->done = done;
	p->total = total;
	if (!total)
		return;
	t = now_ns();
	if (t - p->start_ns < p->delay_ns)
		return;
	if (p->shown && t - p->last_ns < (uint64_t)CLI_PROGRESS_EVERY_MS * 1000000u)
		return;
	draw(p, t);
}

void cli_progress_fn(uint64_t done, uint64_t total, void *arg)
{
	cli_progress_set(arg, NULL, done, total);
}

void cli_progress_unit_fn(const char *unit, uint64_t done, uint64_t total, void *arg)
{
	cli_progress_set(arg, unit, done, total);
}

void cli_progress_clear(struct cli_progress *p)
{
	if (p->on && p->shown) {
		fputs("\r\033[K", stderr);
		fflush(stderr);
		p->shown = 0; /* drawn again at the next call */
	}
}

void cli_progress_clear_any(void)
{
	if (active)
		cli_progress_clear(active);
}

void cli_progress_end(struct cli_progress *p)
{
	uint64_t t;
	char a[32];

	if (!p->on)
		return;
	t = now_ns();
	if (p->shown || t - p->start_ns >= p->delay_ns)
		fprintf(stderr, "\r%s: 100%% (%s %s), %.1f s, done.\033[K\n", p->label,
			count(a, sizeof a, p->total), p->unit, (double)(t - p->start_ns) / 1e9);
	fflush(stderr);
	p->on = 0;
	p->shown = 0;
	if (active == p)
		active = NULL;
}
