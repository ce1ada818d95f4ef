/* SPDX-License-Identifier: MIT */
/* rr-ticks.c - rr's tick counter beside each perf sample (record --rr-ticks).
 *
 * rr (the record-and-replay debugger) measures progress in "ticks": the
 * retired conditional branches a thread executed in user space, counted by
 * a raw PMU event that depends on the CPU (its src/PerfCounters*.cc), from
 * the thread's creation or its last exec.  With --rr-ticks that counter
 * joins each CPU's sampling event as a group member (inherited into every
 * thread like the sampling event, so each thread counts its own branches
 * from its clone), and every sample reads the group (PERF_SAMPLE_READ,
 * PERF_FORMAT_GROUP): its second value is the thread's tick count at the
 * sample, which `cygprof samples --rr` turns into rr's `seek-ticks`.
 * Reading a group in the samples of inherited events needs Linux 6.12.
 *
 * Where the counter is missing (a virtual machine without a virtual PMU, a
 * CPU rr does not count on, an older kernel) one warning line says why and
 * the samples are recorded without ticks (RR_TICKS_NONE). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "collector-private.h"
#include "rr-ticks.h"

struct rr_ticks {
	struct perf_event_attr attr; /* the counter's */
	int *fd;                     /* one per CPU opened, -1 when not */
	int nfd;
	int warned;
	struct rr_ticks_cpu cpu;
};

static uint64_t get_u64(const char *p)
{
	uint64_t v;
	memcpy(&v, p, sizeof v);
	return v;
}

static uint32_t get_u32(const char *p)
{
	uint32_t v;
	memcpy(&v, p, sizeof v);
	return v;
}

int perf_sample_parse(const void *body, size_t len, int read_group, struct perf_sample_rec *out)
{
	const char *b = body;
	size_t at = 32;

	/* ip; pid, tid; time; period */
	if (len < 40)
		return -1;
	out->ip = get_u64(b);
	out->pid = get_u32(b + 8);
	out->tid = get_u32(b + 12);
	out->time = get_u64(b + 16);
	out->period = get_u64(b + 24);
	out->ticks = RR_TICKS_NONE;
	if (read_group) {
		/* { nr; values[nr] } (PERF_FORMAT_GROUP alone: no times, ids
		 * or lost counts) */
		uint64_t n = get_u64(b + at);
		at += 8;
		if (n > (len - at) / 8)
			return -1;
		if (n >= 2)
			out->ticks = get_u64(b + at + 8);
		at += 8 * (size_t)n;
	}
	/* nr; ips[nr] */
	if (len - at < 8)
		return -1;
	out->nr = get_u64(b + at);
	at += 8;
	if (out->nr > (len - at) / 8)
		return -1;
	out->chain = b + at;
	return 0;
}

/* ---- which counter: rr's table, by CPU model ------------------------------ */

struct model {
	uint32_t type; /* cpuid leaf 1 eax & 0xF0FF0: extended model, family, model */
	const char *name;
	uint64_t config; /* 0: rr counts no retired conditional branches there */
	int hybrid;      /* P-cores and E-cores count with different events */
};

/* rr's PerfCounters.cc table, Intel's family 6 models: BR_INST_RETIRED.
 * CONDITIONAL is umask 0x01 (0x11 from Ice Lake on; Lunar and Arrow Lake
 * add bit 32), event 0xc4, 0x51 the enable and USR bits; the Atom cores
 * count it as 0x7e. */
static const struct model intel[] = {
	{0x006F0, "Intel Merom", 0, 0},
	{0x10660, "Intel Merom", 0, 0},
	{0x10670, "Intel Penryn", 0, 0},
	{0x106D0, "Intel Penryn", 0, 0},
	{0x106A0, "Intel Nehalem", 0x5101c4, 0},
	{0x106E0, "Intel Nehalem", 0x5101c4, 0},
	{0x206E0, "Intel Nehalem", 0x5101c4, 0},
	{0x20650, "Intel Westmere", 0x5101c4, 0},
	{0x206C0, "Intel Westmere", 0x5101c4, 0},
	{0x206F0, "Intel Westmere", 0x5101c4, 0},
	{0x206A0, "Intel Sandy Bridge", 0x5101c4, 0},
	{0x206D0, "Intel Sandy Bridge", 0x5101c4, 0},
	{0x306E0, "Intel Sandy Bridge", 0x5101c4, 0},
	{0x306A0, "Intel Ivy Bridge", 0x5101c4, 0},
	{0x306C0, "Intel Haswell", 0x5101c4, 0},
	{0x306F0, "Intel Haswell", 0x5101c4, 0},
	{0x40650, "Intel Haswell", 0x5101c4, 0},
	{0x40660, "Intel Haswell", 0x5101c4, 0},
	{0x306D0, "Intel Broadwell", 0x5101c4, 0},
	{0x40670, "Intel Broadwell", 0x5101c4, 0},
	{0x406F0, "Intel Broadwell", 0x5101c4, 0},
	{0x50660, "Intel Broadwell", 0x5101c4, 0},
	{0x406E0, "Intel Skylake", 0x5101c4, 0},
	{0x50650, "Intel Skylake", 0x5101c4, 0},
	{0x506E0, "Intel Skylake", 0x5101c4, 0},
	{0x806E0, "Intel Kaby Lake", 0x5101c4, 0},
	{0x906E0, "Intel Kaby Lake", 0x5101c4, 0},
	{0xA0650, "Intel Comet Lake", 0x5101c4, 0},
	{0xA0660, "Intel Comet Lake", 0x5101c4, 0},
	{0x706E0, "Intel Ice Lake", 0x5111c4, 0},
	{0x606A0, "Intel Ice Lake", 0x5111c4, 0},
	{0x80660, "Intel Ice Lake", 0x5111c4, 0},
	{0x806C0, "Intel Tiger Lake", 0x5111c4, 0},
	{0x806D0, "Intel Tiger Lake", 0x5111c4, 0},
	{0xA0670, "Intel Rocket Lake", 0x5111c4, 0},
	{0x806F0, "Intel Sapphire Rapids", 0x5111c4, 0},
	{0xC06F0, "Intel Emerald Rapids", 0x5111c4, 0},
	{0xA06D0, "Intel Granite Rapids", 0x5111c4, 0},
	{0x90670, "Intel Alder Lake", 0x5111c4, 1},
	{0x906A0, "Intel Alder Lake", 0x5111c4, 1},
	{0xB0670, "Intel Raptor Lake", 0x5111c4, 1},
	{0xB06A0, "Intel Raptor Lake", 0x5111c4, 1},
	{0xB06F0, "Intel Raptor Lake", 0x5111c4, 1},
	{0xA06A0, "Intel Meteor Lake", 0x5111c4, 1},
	{0xB06D0, "Intel Lunar Lake", 0x100005111c4ULL, 1},
	{0xB0650, "Intel Arrow Lake", 0x100005111c4ULL, 1},
	{0xC0650, "Intel Arrow Lake", 0x100005111c4ULL, 1},
	{0xC0660, "Intel Arrow Lake", 0x100005111c4ULL, 1},
	{0x30670, "Intel Silvermont", 0x517ec4, 0},
	{0x406C0, "Intel Silvermont", 0x517ec4, 0},
	{0x50670, "Intel Silvermont", 0x517ec4, 0},
	{0x506F0, "Intel Goldmont", 0x517ec4, 0},
	{0x706A0, "Intel Goldmont", 0x517ec4, 0},
	{0x506C0, "Intel Goldmont", 0x517ec4, 0},
	{0x906C0, "Intel Tremont", 0x517ec4, 0},
	{0xB06E0, "Intel Gracemont", 0x517ec4, 0},
};

int rr_ticks_cpu_of(const char *vendor, uint32_t eax1, struct rr_ticks_cpu *out)
{
	uint32_t type = eax1 & 0xF0FF0, ext_family = (eax1 >> 20) & 0xff;

	out->name = NULL;
	out->config = 0;
	if (!memcmp(vendor, "GenuineIntel", 12)) {
		for (size_t i = 0; i < sizeof intel / sizeof intel[0]; i++) {
			if (intel[i].type != type)
				continue;
			out->name = intel[i].name;
			if (intel[i].hybrid) /* two events: cygprof opens one */
				return -1;
			out->config = intel[i].config;
			return out->config ? 0 : -1;
		}
		return -1;
	}
	if (!memcmp(vendor, "AuthenticAMD", 12) && ((eax1 >> 8) & 0xf) == 0xf) {
		/* RETIRED_CONDITIONAL_BRANCH_INSTRUCTIONS (0xd1) on every Zen */
		switch (ext_family) {
		case 0x6:
			out->name = "AMD Family 15h"; /* rr counts taken branches there */
			return -1;
		case 0x8:
			out->name = "AMD Zen (family 17h)";
			break;
		case 0xa:
			out->name = "AMD Zen 3/4 (family 19h)";
			break;
		case 0xb:
			out->name = "AMD Zen 5 (family 1Ah)";
			break;
		default:
			return -1;
		}
		out->config = 0x5100d1;
		return 0;
	}
	return -1;
}

/* This machine's counter; -1 with why. */
static int detect(struct rr_ticks_cpu *cpu, char *why, size_t n)
{
#if defined(__x86_64__) || defined(__i386__)
	unsigned a, b, c, d;
	char vendor[13];

	if (!__get_cpuid(0, &a, &b, &c, &d)) {
		snprintf(why, n, "this CPU has no cpuid leaf 0");
		return -1;
	}
	memcpy(vendor, &b, 4);
	memcpy(vendor + 4, &d, 4);
	memcpy(vendor + 8, &c, 4);
	vendor[12] = 0;
	if (!__get_cpuid(1, &a, &b, &c, &d)) {
		snprintf(why, n, "this CPU has no cpuid leaf 1");
		return -1;
	}
	if (rr_ticks_cpu_of(vendor, a, cpu)) {
		if (cpu->name)
			snprintf(why, n,
				 "rr counts no retired conditional branches on %s%s "
				 "(cpuid %s 0x%x)",
				 cpu->name, strstr(cpu->name, "Lake") ? ", a hybrid CPU," : "",
				 vendor, a & 0xF0FF0);
		else
			snprintf(why, n, "rr's table has no counter for this CPU (cpuid %s 0x%x)",
				 vendor, a & 0xF0FF0);
		return -1;
	}
	return 0;
#else
	(void)cpu;
	snprintf(why, n, "cygprof knows rr's counter on x86 (Intel, AMD) only");
	return -1;
#endif
}

static long perf_open(struct perf_event_attr *a, pid_t pid, int cpu, int group)
{
	return syscall(SYS_perf_event_open, a, pid, cpu, group, PERF_FLAG_FD_CLOEXEC);
}

/* Whether the counter opens next to leader; -1 with why. */
static int probe(const struct rr_ticks *r, const struct perf_event_attr *leader, pid_t pid,
		 char *why, size_t n)
{
	struct perf_event_attr a = r->attr, l = *leader;
	long cfd, lfd;
	int e;

	if (r->attr.type == PERF_TYPE_RAW && access("/sys/bus/event_source/devices/cpu", F_OK)) {
		snprintf(why, n,
			 "this machine has no hardware PMU for rr's counter (%s, raw 0x%llx): no "
			 "/sys/bus/event_source/devices/cpu (a virtual machine without a virtual "
			 "PMU?)",
			 r->cpu.name, (unsigned long long)r->cpu.config);
		return -1;
	}
	a.inherit = 0;
	cfd = perf_open(&a, pid, -1, -1);
	if (cfd < 0) {
		e = errno;
		snprintf(why, n, "perf_event_open of rr's counter (%s, raw 0x%llx): %s",
			 r->cpu.name, (unsigned long long)r->cpu.config, strerror(e));
		return -1;
	}
	close((int)cfd);
	lfd = perf_open(&l, pid, 0, -1);
	if (lfd < 0 && (errno == EACCES || errno == EPERM) && !l.exclude_kernel) {
		l.exclude_kernel = 1;
		lfd = perf_open(&l, pid, 0, -1);
	}
	if (lfd < 0) {
		e = errno;
		if (e == EINVAL)
			snprintf(why, n,
				 "this kernel cannot read counters in the samples of inherited "
				 "events (Linux 6.12 and later can)");
		else
			snprintf(why, n, "perf_event_open of the sampling group: %s", strerror(e));
		return -1;
	}
	a = r->attr;
	cfd = perf_open(&a, pid, 0, (int)lfd);
	e = errno;
	close((int)lfd);
	if (cfd < 0) {
		snprintf(why, n, "rr's counter (%s, raw 0x%llx) cannot join the sampling event: %s",
			 r->cpu.name, (unsigned long long)r->cpu.config, strerror(e));
		return -1;
	}
	close((int)cfd);
	return 0;
}

static void set_meta(struct collector *c, const char *v)
{
	if (c->cap)
		(void)cygprof_capture_set_meta(c->cap, "rr_ticks", v);
}

struct rr_ticks *rr_ticks_setup(struct collector *c, struct perf_event_attr *leader, pid_t pid)
{
	struct rr_ticks *r;
	char why[384], meta[448];
	long nconf = sysconf(_SC_NPROCESSORS_CONF);
	const char *force = getenv("CYGPROF_RR_TICKS_FORCE_MISSING");
	const char *soft = getenv("CYGPROF_RR_TICKS_SOFTWARE");

	if (!c->o->rr_ticks)
		return NULL;
	r = calloc(1, sizeof *r);
	if (nconf <= 0)
		nconf = 1;
	if (!r || !(r->fd = malloc((size_t)nconf * sizeof *r->fd))) {
		free(r);
		snprintf(why, sizeof why, "out of memory");
		goto off;
	}
	r->nfd = (int)nconf;
	for (int i = 0; i < r->nfd; i++)
		r->fd[i] = -1;
	if (force && *force) {
		/* the tests' missing-counter path on a machine that has it */
		snprintf(why, sizeof why, "%s", force);
		goto off;
	}
	memset(&r->attr, 0, sizeof r->attr);
	r->attr.size = sizeof r->attr;
	if (soft && !strcmp(soft, "1")) {
		/* the tests' stand-in where there is no PMU: the same group read
		 * with a software counter (the thread's task-clock, in ns) */
		r->cpu.name = "task-clock, a software stand-in for tests";
		r->cpu.config = PERF_COUNT_SW_TASK_CLOCK;
		r->attr.type = PERF_TYPE_SOFTWARE;
	} else {
		if (detect(&r->cpu, why, sizeof why))
			goto off;
		r->attr.type = PERF_TYPE_RAW;
	}
	r->attr.config = r->cpu.config;
	/* as rr counts: user space only, every thread from its clone */
	r->attr.exclude_kernel = 1;
	r->attr.exclude_hv = 1;
	r->attr.exclude_guest = 1;
	r->attr.inherit = 1;
	/* a group has one clock (else EINVAL) */
	r->attr.use_clockid = leader->use_clockid;
	r->attr.clockid = leader->clockid;
	/* the group reads through the leader's samples: leader first, then us */
	leader->sample_type |= PERF_SAMPLE_READ;
	leader->read_format = PERF_FORMAT_GROUP;
	if (probe(r, leader, pid, why, sizeof why)) {
		leader->sample_type &= ~(uint64_t)PERF_SAMPLE_READ;
		leader->read_format = 0;
		goto off;
	}
	snprintf(meta, sizeof meta, "counted: %s, raw 0x%llx", r->cpu.name,
		 (unsigned long long)r->cpu.config);
	set_meta(c, meta);
	return r;
off:
	fprintf(stderr, "cygprof: warning: no rr ticks: %s; the samples are recorded without "
			"them\n",
		why);
	snprintf(meta, sizeof meta, "missing: %s", why);
	set_meta(c, meta);
	rr_ticks_free(r);
	return NULL;
}

void rr_ticks_member(struct rr_ticks *r, int leader_fd, pid_t pid, int cpu)
{
	struct perf_event_attr a = r->attr;
	long fd;

	if (cpu < 0 || cpu >= r->nfd)
		return;
	fd = perf_open(&a, pid, cpu, leader_fd);
	if (fd >= 0) {
		r->fd[cpu] = (int)fd;
		return;
	}
	if (!r->warned++)
		fprintf(stderr,
			"cygprof: warning: no rr ticks on CPU %d: rr's counter: %s; its samples "
			"are recorded without them\n",
			cpu, strerror(errno));
}

void rr_ticks_free(struct rr_ticks *r)
{
	if (!r)
		return;
	for (int i = 0; r->fd && i < r->nfd; i++)
		if (r->fd[i] >= 0)
			close(r->fd[i]);
	free(r->fd);
	free(r);
}
