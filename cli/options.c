/* SPDX-License-Identifier: MIT */
/* options.c - the command line: the option loop every command shares
 * (cli_next_option(): help, the debug-file and filter options, the errors),
 * and the numbers users pass, strictly parsed (decimal digits only: no
 * sign, no spaces, no hex, no nan or inf) and range-checked, or a one-line
 * usage error naming the option (exit 2). */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "format.h"
#include "textesc.h"

int cli_next_option(struct cli_getopt *g, int argc, char **argv)
{
	int c;

	if (!g->started) {
		opterr = 0; /* one error line: ours */
		optind = 1;
		g->started = 1;
	}
	for (;;) {
		c = getopt_long(argc, argv, g->shortopts, g->longopts, NULL);
		switch (c) {
		case 'h':
			g->usage(stdout);
			exit(0);
		case ':':
		case '?':
			cli_bad_option(g->cmd, c, argv);
		case CLI_O_DEBUG_DIR:
		case CLI_O_SYMFS:
			if (!g->di)
				return c;
			cli_debug_option(g->di, g->cmd, c, optarg);
			continue;
		case CLI_O_RAW_TIMES:
		case CLI_O_TIMES:
			cli_time_option(g->cmd, c);
			continue;
		case CLI_O_FILTER:
		case CLI_O_NOTRACE:
		case CLI_O_DEPTH:
		case CLI_O_TIME_RANGE:
			if (!g->filt)
				return c;
			cli_filter_option(g->filt, g->cmd, c, optarg);
			continue;
		default:
			return c;
		}
	}
}

int cli_raw_times;
int cli_times = VIEW_TIMES_MODEL;

void cli_time_option(const char *cmd, int c)
{
	static const char *const names[] = {[VIEW_TIMES_MODEL] = "model",
					    [VIEW_TIMES_HOOKS] = "hooks",
					    [VIEW_TIMES_SAMPLES] = "samples",
					    [VIEW_TIMES_WALL] = "wall"};

	if (c == CLI_O_RAW_TIMES || (c == CLI_O_TIMES && !strcmp(optarg, "raw"))) {
		cli_raw_times = 1;
		return;
	}
	if (c != CLI_O_TIMES)
		return;
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (!strcmp(optarg, names[i])) {
			cli_times = (int)i;
			cli_raw_times = 0;
			return;
		}
	cli_die(2, "%s: --times: '%s' is not one of model, wall, hooks, samples, raw", cmd, optarg);
}

/* The digits of s: how many leading decimal digits it has. */
static size_t digits(const char *s)
{
	size_t n = 0;

	while (s[n] >= '0' && s[n] <= '9')
		n++;
	return n;
}

/* A strict unsigned decimal integer at the start of s; *end after it.
 * -1 when s does not start with a digit or the value does not fit. */
static int scan_u64(const char *s, const char **end, uint64_t *v)
{
	size_t n = digits(s), i;
	uint64_t x = 0;

	if (!n)
		return -1;
	for (i = 0; i < n; i++) {
		unsigned d = (unsigned)(s[i] - '0');

		if (x > (UINT64_MAX - d) / 10)
			return -1;
		x = x * 10 + d;
	}
	*end = s + n;
	*v = x;
	return 0;
}

/* A strict non-negative decimal number at the start of s (digits, an
 * optional fraction, an optional exponent), finite; *end after it. */
static int scan_real(const char *s, const char **end, double *v)
{
	size_t n = digits(s), f = 0;
	const char *p = s + n;
	char buf[128];
	double x;

	if (*p == '.') {
		f = digits(p + 1);
		p += 1 + f;
	}
	if (!n && !f)
		return -1;
	if (*p == 'e' || *p == 'E') {
		const char *q = p + 1;

		if (*q == '+' || *q == '-')
			q++;
		if (!digits(q))
			return -1;
		p = q + digits(q);
	}
	if ((size_t)(p - s) >= sizeof(buf))
		return -1;
	memcpy(buf, s, (size_t)(p - s));
	buf[p - s] = 0;
	errno = 0;
	x = strtod(buf, NULL);
	if (errno == ERANGE && x != 0)
		return -1; /* overflow; an underflow is just 0 */
	if (!isfinite(x))
		return -1;
	*end = p;
	*v = x;
	return 0;
}

int cli_scan_uint(const char *s, uint64_t min, uint64_t max, uint64_t *v)
{
	const char *end;

	if (scan_u64(s, &end, v) || *end || *v < min || *v > max)
		return -1;
	return 0;
}

uint64_t cli_parse_uint(const char *cmd, const char *opt, const char *s, uint64_t min,
			uint64_t max)
{
	const char *end;
	uint64_t v;

	if (scan_u64(s, &end, &v) || *end || v < min || v > max)
		cli_die(2, "%s: bad %s value '%s' (an integer from %llu to %llu)", cmd, opt, s,
			(unsigned long long)min, (unsigned long long)max);
	return v;
}

uint64_t cli_parse_size(const char *cmd, const char *opt, const char *s, uint64_t min,
			uint64_t max)
{
	const char *end;
	uint64_t v;
	int shift = 0;
	char a[32], b[32];

	if (scan_u64(s, &end, &v))
		goto bad;
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	}
	if (*end == 'b' || *end == 'B')
		end++;
	if (*end || (shift && v > (UINT64_MAX >> shift)))
		goto bad;
	v <<= shift;
	if (v < min || v > max)
		goto bad;
	return v;
bad:
	cli_die(2, "%s: bad %s value '%s' (a size from %s to %s bytes, with an optional K, M or "
		"G suffix)", cmd, opt, s, fmt_bytes(a, sizeof(a), min, FMT_BYTES_EXACT),
		fmt_bytes(b, sizeof(b), max, FMT_BYTES_EXACT));
}

uint64_t cli_parse_duration(const char *cmd, const char *opt, const char *s, const char *bare,
			    uint64_t max_ns)
{
	static const struct {
		const char *unit;
		double ns;
	} units[] = {{"ns", 1}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}};
	const char *end, *unit;
	double v, mul = 0, r;
	size_t i;

	if (scan_real(s, &end, &v))
		goto bad;
	unit = *end ? end : bare;
	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (!strcmp(unit, units[i].unit))
			mul = units[i].ns;
	if (!mul)
		goto bad;
	r = v * mul + 0.5;
	/* max_ns itself is in range: compared before the rounding's half */
	if (!isfinite(r) || r - 0.5 > (double)max_ns)
		goto bad;
	return (uint64_t)r;
bad:
	cli_die(2, "%s: bad %s value '%s' (a duration from 0 to %.0f s: a number with ns, us, "
		"ms or s, %s when none is given)", cmd, opt, s, (double)max_ns / 1e9, bare);
}

double cli_parse_real(const char *cmd, const char *opt, const char *s, double min, double max)
{
	const char *end;
	double v;

	if (scan_real(s, &end, &v) || *end || v < min || v > max)
		cli_die(2, "%s: bad %s value '%s' (a number from %g to %g)", cmd, opt, s, min, max);
	return v;
}

/* ---- filters after the fact ------------------------------------------------ */

/* The filters given to a view by cli_filter_apply(), for cli_filter_warn() */
static struct cli_filter *applied;
static struct view *applied_v;
static const char *applied_cmd;

static void add_pattern(const char **v, size_t *n, const char *p, const char *cmd,
			const char *opt)
{
	if (*n == CLI_FILTER_MAX)
		cli_die(2, "%s: more than %d %s patterns", cmd, CLI_FILTER_MAX, opt);
	v[(*n)++] = p;
}

void cli_filter_option(struct cli_filter *f, const char *cmd, int c, const char *arg)
{
	char *comma, *end;

	f->any = 1;
	switch (c) {
	case CLI_O_FILTER:
		add_pattern(f->filter, &f->vf.nfilter, arg, cmd, "-F");
		f->vf.filter = f->filter;
		break;
	case CLI_O_NOTRACE:
		add_pattern(f->notrace, &f->vf.nnotrace, arg, cmd, "-N");
		f->vf.notrace = f->notrace;
		break;
	case CLI_O_DEPTH:
		f->vf.depth = (uint32_t)cli_parse_uint(cmd, "--depth", arg, 1, UINT32_MAX);
		break;
	default: /* CLI_O_TIME_RANGE */
		comma = strchr(arg, ',');
		if (!comma)
			cli_die(2, "%s: --time-range takes START,END (e.g. 1s,2.5s), not '%s'", cmd, arg);
		end = strdup(arg);
		if (!end)
			cli_die(1, "out of memory");
		end[comma - arg] = 0;
		f->vf.t0 = *end ? cli_parse_duration(cmd, "--time-range", end, "s", UINT64_MAX / 2) : 0;
		f->vf.t1 = comma[1] ? cli_parse_duration(cmd, "--time-range", comma + 1, "s",
							UINT64_MAX / 2)
				    : UINT64_MAX;
		free(end);
		if (f->vf.t1 <= f->vf.t0)
			cli_die(2, "%s: --time-range: END must be after START", cmd);
		f->vf.has_range = 1;
		break;
	}
}

void cli_filter_apply(struct cli_filter *f, struct view *v, const char *cmd, const char *file)
{
	if (!f->any)
		return;
	if (f->vf.has_range && !f->range_any && !view_mode_has(v, "timeline"))
		cli_die(1, "%s: %s has no timeline: --time-range needs one (record with --timeline)",
			cmd, file ? file : CYGPROF_DEFAULT_CAPTURE);
	cli_check(view_set_filter(v, &f->vf), file);
	if (f->vf.nfilter || f->vf.nnotrace) {
		applied = f;
		applied_v = v;
		applied_cmd = cmd;
	}
}

/* Mark the patterns (hit[i]) that name matches; 1 when none is left. */
static int mark_hits(const char *const *pats, size_t n, unsigned char *hit, const char *name,
		     size_t *left)
{
	for (size_t i = 0; i < n; i++)
		if (!hit[i] && view_name_matches(&pats[i], 1, name)) {
			hit[i] = 1;
			--*left;
		}
	return !*left;
}

/* The filters of the view cli_filter_apply() was given, checked against
 * every function of the capture: a pattern that names none (a typo, or
 * perf's -F for a frequency) would silently leave an empty profile. */
void cli_filter_warn(struct view *v)
{
	struct cli_filter *f = applied;
	unsigned char hit[2][CLI_FILTER_MAX] = {{0}};
	const struct cygprof_stack_node *stash;
	const struct cygprof_thread *th;
	size_t nth, nstash, left, i, k;

	if (!f || v != applied_v)
		return;
	applied = NULL;
	left = f->vf.nfilter + f->vf.nnotrace;
	/* the trees name every function they hold (view_tree()), kept or not */
	if (!view_threads(v, &th, &nth))
		for (i = 0; i < nth; i++) {
			const struct view_tree *t;
			(void)view_tree(v, (uint32_t)i, &t);
		}
	for (i = 0; i < view_nfns(v) && left; i++) {
		const struct view_fn *fn = view_fn(v, (uint32_t)i);
		if (!fn)
			continue;
		mark_hits(f->filter, f->vf.nfilter, hit[0], fn->name, &left);
		mark_hits(f->notrace, f->vf.nnotrace, hit[1], fn->name, &left);
	}
	/* memory events name functions by their stacks only */
	if (left && !view_stash(v, &stash, &nstash))
		for (i = 1; i <= nstash && left; i++) {
			struct view_frame *fr;
			size_t nf;
			if (view_stack(v, (uint32_t)i, 0, NULL, &fr, &nf))
				continue;
			for (k = 0; k < nf && left; k++) {
				mark_hits(f->filter, f->vf.nfilter, hit[0], fr[k].name, &left);
				mark_hits(f->notrace, f->vf.nnotrace, hit[1], fr[k].name, &left);
			}
			free(fr);
		}
	for (i = 0; i < f->vf.nfilter; i++)
		if (!hit[0][i])
			cli_warn("warning: %s: -F '%s' matched no function of the capture",
				 applied_cmd, text_esc(f->filter[i]));
	for (i = 0; i < f->vf.nnotrace; i++)
		if (!hit[1][i])
			cli_warn("warning: %s: -N '%s' matched no function of the capture",
				 applied_cmd, text_esc(f->notrace[i]));
}
