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
 * Each CPU's event counts a thread only while it runs on that CPU, so a
 * sample reads only that CPU's part.  Two more members of the same group,
 * sampled at every event with their records redirected into the same ring,
 * read the group too: a software context-switch event, what that CPU holds
 * of a thread when the thread leaves it, and the tracepoint
 * sched:sched_process_exec (its id from tracefs), the count at an exec,
 * where rr starts again from 0.  PERF_SAMPLE_ID tells the three kinds of
 * samples apart.  sampling.c hands them to rr_ticks_settle() and
 * rr_ticks_total() in time order: a sample's ticks are its CPU's value
 * plus the other CPUs' last ones, less the count at the thread's last exec.
 * One counter per CPU serves all three, so they always agree.  The
 * context-switch event runs in the kernel: root or perf_event_paranoid <= 1.
 * PERF_RECORD_EXIT (the switch-out event asks for them) forgets a thread,
 * whose tid may come back.
 *
 * The events start at the program's exec (enable_on_exec), inside the exec
 * system call, a little before its exec read: a sample in between (a loaded
 * machine makes the exec long) is in no image yet, and counts 0, where rr
 * starts.
 *
 * CYGPROF_RR_TICKS_SOFTWARE=1 (tests) puts the thread's task-clock in place
 * of rr's counter, so the whole path runs on machines without a PMU;
 * CYGPROF_RR_TICKS_FORCE_MISSING=WHY takes the missing-counter path;
 * CYGPROF_TRACEFS=DIR is where tracefs is mounted.
 *
 * Where the counter is missing (a virtual machine without a virtual PMU, a
 * CPU rr does not count on, an older kernel) one warning line says why and
 * the samples are recorded without ticks (RR_TICKS_NONE). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "collector-private.h"
#include "rr-ticks.h"

/* The events per CPU, all in the sampling event's group: the counter, the
 * switch-out reads, the exec reads. */
enum { FD_TICKS, FD_CS, FD_EX, FD_N };

struct rr_ticks {
	char meta[448];              /* the meta "rr_ticks" written */
	struct perf_event_attr attr; /* the counter's */
	struct perf_event_attr cs;   /* the switch-out reads */
	struct perf_event_attr ex;   /* the exec reads (type 0: none) */
	int *fd[5];                  /* per CPU (FD_*), -1 when not open */
	int nfd;
	int warned;
	struct rr_ticks_cpu cpu;
	struct hmap inst;            /* counter id + 1 -> CPU + 1 */
	struct hmap csid;            /* switch-out reads' id + 1 -> RR_REC_SWITCH, exec's: _EXEC */
	struct hmap last;            /* (tid << 20 | CPU) + 1 -> value + 1 when it left (0: none) */
	struct hmap base;            /* tid + 1 -> its count at its last exec + 1 (0: none) */
	uint32_t root;               /* the program's pid: counting starts at its exec */
	int root_execd;              /* its exec read came */
};

int perf_sample_parse(const void *body, size_t len, int read_group, struct perf_sample_rec *out)
{
	const char *b = body;
	size_t at = 24;

	/* ip; pid, tid; time; [id;] period */
	if (len < (read_group ? 48u : 40u))
		return -1;
	out->ip = perf_u64(b);
	out->pid = perf_u32(b + 8);
	out->tid = perf_u32(b + 12);
	out->time = perf_u64(b + 16);
	out->id = 0;
	if (read_group) {
		out->id = perf_u64(b + at);
		at += 8;
	}
	out->period = perf_u64(b + at);
	at += 8;
	out->ticks = RR_TICKS_NONE;
	out->leader_id = out->ticks_id = 0;
	if (read_group) {
		/* { nr; {value, id}[nr] } (PERF_FORMAT_GROUP | PERF_FORMAT_ID:
		 * no times or lost counts) */
		uint64_t n = perf_u64(b + at);
		at += 8;
		if (n > (len - at) / 16)
			return -1;
		if (n >= 1)
			out->leader_id = perf_u64(b + at + 8);
		if (n >= 2) {
			out->ticks = perf_u64(b + at + 16);
			out->ticks_id = perf_u64(b + at + 24);
		}
		at += 16 * (size_t)n;
	}
	/* nr; ips[nr] */
	if (len - at < 8)
		return -1;
	out->nr = perf_u64(b + at);
	at += 8;
	if (out->nr > (len - at) / 8)
		return -1;
	out->chain = b + at;
	out->after = out->chain + 8 * (size_t)out->nr;
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

/* Whether the reading event l opens in lfd's group and sends its records
 * into lfd's ring: 0 or an errno. */
static int probe_reads(const struct perf_event_attr *l, long lfd, pid_t pid)
{
	struct perf_event_attr s = *l;
	long sfd = perf_open(&s, pid, 0, (int)lfd);
	long page = sysconf(_SC_PAGESIZE);
	size_t sz = 2 * (size_t)(page > 0 ? page : 4096);
	void *m;
	int e;

	if (sfd < 0)
		return errno;
	/* redirecting needs the target's ring */
	m = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_SHARED, (int)lfd, 0);
	if (m == MAP_FAILED)
		e = errno;
	else
		e = ioctl((int)sfd, PERF_EVENT_IOC_SET_OUTPUT, (int)lfd) ? errno : 0;
	/* a redirected event holds the ring: close it first */
	close((int)sfd);
	if (m != MAP_FAILED)
		munmap(m, sz);
	return e;
}

/* Whether the counter opens next to leader; -1 with why. */
static int probe(struct rr_ticks *r, const struct perf_event_attr *leader, pid_t pid,
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
	if (cfd < 0) {
		close((int)lfd);
		snprintf(why, n, "rr's counter (%s, raw 0x%llx) cannot join the sampling event: %s",
			 r->cpu.name, (unsigned long long)r->cpu.config, strerror(e));
		return -1;
	}
	/* the switch-out reads: a software event in the kernel */
	e = probe_reads(&r->cs, lfd, pid);
	if (!e && r->ex.type && probe_reads(&r->ex, lfd, pid))
		r->ex.type = 0; /* no exec reads: rr_ticks_setup() says so */
	close((int)cfd);
	close((int)lfd);
	if (e) {
		if (e == EACCES || e == EPERM)
			snprintf(why, n,
				 "reading the counter when a thread leaves a CPU needs root or "
				 "kernel.perf_event_paranoid<=1 (each CPU counts a thread apart)");
		else
			snprintf(why, n, "the switch-out reads of rr's counter: %s", strerror(e));
		return -1;
	}
	return 0;
}

/* The id of tracepoint name ("sched/sched_process_exec") from tracefs
 * (CYGPROF_TRACEFS first, for tests), 0 when it cannot be read. */
static uint64_t tracepoint_id(const char *name)
{
	const char *dirs[] = {getenv("CYGPROF_TRACEFS"), "/sys/kernel/tracing",
			      "/sys/kernel/debug/tracing"};
	char path[512];

	for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
		unsigned long long id;
		FILE *f;
		int ok;

		if (!dirs[i] || !*dirs[i])
			continue;
		snprintf(path, sizeof path, "%s/events/%s/id", dirs[i], name);
		if (!(f = fopen(path, "r")))
			continue;
		ok = fscanf(f, "%llu", &id) == 1;
		fclose(f);
		if (ok && id)
			return id;
	}
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
	uint64_t exec_id;

	if (!c->o->rr_ticks)
		return NULL;
	r = calloc(1, sizeof *r);
	if (nconf <= 0)
		nconf = 1;
	for (int k = 0; r && k < FD_N; k++) {
		if (!(r->fd[k] = malloc((size_t)nconf * sizeof *r->fd[k]))) {
			rr_ticks_free(r);
			r = NULL;
			break;
		}
		for (long i = 0; i < nconf; i++)
			r->fd[k][i] = -1;
	}
	if (!r) {
		snprintf(why, sizeof why, "out of memory");
		goto off;
	}
	r->nfd = (int)nconf;
	r->root = (uint32_t)pid;
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
	leader->sample_type |= PERF_SAMPLE_READ | PERF_SAMPLE_ID;
	leader->read_format = PERF_FORMAT_GROUP | PERF_FORMAT_ID;
	/* Each CPU's event counts a thread only while it runs there: its
	 * count is the sum over CPUs.  A member sampled at every context
	 * switch reads the group as a thread leaves a CPU (into the same ring,
	 * same layout): what that CPU holds of it until it comes back. */
	memset(&r->cs, 0, sizeof r->cs);
	r->cs.size = sizeof r->cs;
	r->cs.type = PERF_TYPE_SOFTWARE;
	r->cs.config = PERF_COUNT_SW_CONTEXT_SWITCHES;
	r->cs.sample_period = 1;
	/* the layout of the samples up to the call chain (what follows it,
	 * the user registers and stack sampling.c may ask for, these reads
	 * need not carry: they are taken apart before it is read) */
	r->cs.sample_type = leader->sample_type &
			    ~(uint64_t)(PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER);
	r->cs.read_format = leader->read_format;
	r->cs.inherit = 1;
	r->cs.exclude_hv = 1;
	r->cs.exclude_callchain_kernel = 1;
	r->cs.exclude_callchain_user = 1;
	r->cs.sample_id_all = leader->sample_id_all;
	r->cs.use_clockid = leader->use_clockid;
	r->cs.clockid = leader->clockid;
	r->cs.task = 1; /* PERF_RECORD_EXIT: a tid that ends may come back */
	/* rr counts from each exec: a read there too, by the tracepoint
	 * sched:sched_process_exec where tracefs shows its id */
	exec_id = tracepoint_id("sched/sched_process_exec");
	if (exec_id) {
		r->ex = r->cs;
		r->ex.task = 0;
		r->ex.type = PERF_TYPE_TRACEPOINT;
		r->ex.config = exec_id;
	}
	if (probe(r, leader, pid, why, sizeof why)) {
		leader->sample_type &= ~(uint64_t)(PERF_SAMPLE_READ | PERF_SAMPLE_ID);
		leader->read_format = 0;
		goto off;
	}
	snprintf(r->meta, sizeof r->meta, "counted: %s, raw 0x%llx%s", r->cpu.name,
		 (unsigned long long)r->cpu.config,
		 r->ex.type ? "" : "; execs not seen (no tracefs)");
	if (!r->ex.type)
		fprintf(stderr, "cygprof: warning: rr ticks: execs not seen (tracefs, with the id of "
				"sched:sched_process_exec, is not mounted at /sys/kernel/tracing): the "
				"ticks of a process that exec'd after it started count from its start, "
				"rr's from the exec\n");
	set_meta(c, r->meta);
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

/* Open the counter on cpu in group_fd's group and note its id; -1 with errno. */
static int member(struct rr_ticks *r, int group_fd, pid_t pid, int cpu)
{
	struct perf_event_attr a = r->attr;
	long fd = perf_open(&a, pid, cpu, group_fd);
	uint64_t id;

	if (fd < 0)
		return -1;
	if (ioctl((int)fd, PERF_EVENT_IOC_ID, &id) ||
	    hmap_put(&r->inst, id + 1, (uint64_t)cpu + 1)) {
		close((int)fd);
		errno = ENOMEM;
		return -1;
	}
	return (int)fd;
}

/* The reading event l (kind RR_REC_*) in leader_fd's group on cpu, its
 * records into leader_fd's ring; its fd, or -1 with errno. */
static int reads(struct rr_ticks *r, const struct perf_event_attr *l, int kind, int leader_fd,
		 pid_t pid, int cpu)
{
	struct perf_event_attr a = *l;
	uint64_t id;
	long fd = perf_open(&a, pid, cpu, leader_fd);

	if (fd < 0)
		return -1;
	if (ioctl((int)fd, PERF_EVENT_IOC_ID, &id) || hmap_put(&r->csid, id + 1, (uint64_t)kind) ||
	    ioctl((int)fd, PERF_EVENT_IOC_SET_OUTPUT, leader_fd)) {
		int e = errno;
		close((int)fd);
		errno = e;
		return -1;
	}
	return (int)fd;
}

void rr_ticks_member(struct rr_ticks *r, int leader_fd, pid_t pid, int cpu)
{
	if (cpu < 0 || cpu >= r->nfd)
		return;
	/* in this order: the group reads list the counter second */
	r->fd[FD_TICKS][cpu] = member(r, leader_fd, pid, cpu);
	if (r->fd[FD_TICKS][cpu] >= 0 &&
	    (r->fd[FD_CS][cpu] = reads(r, &r->cs, RR_REC_SWITCH, leader_fd, pid, cpu)) >= 0 &&
	    (!r->ex.type ||
	     (r->fd[FD_EX][cpu] = reads(r, &r->ex, RR_REC_EXEC, leader_fd, pid, cpu)) >= 0))
		return;
	if (!r->warned++)
		fprintf(stderr,
			"cygprof: warning: rr ticks on CPU %d: rr's counter: %s; samples there "
			"have no ticks, and threads that ran there may count too few\n",
			cpu, strerror(errno));
}

int rr_ticks_classify(const struct rr_ticks *r, const struct perf_sample_rec *ps,
		      uint32_t *inst)
{
	uint64_t v;

	*inst = ps->ticks_id && hmap_get(&r->inst, ps->ticks_id + 1, &v) ? (uint32_t)(v - 1)
									    : UINT32_MAX;
	return ps->id && hmap_get(&r->csid, ps->id + 1, &v) ? (int)v : RR_REC_SAMPLE;
}

static uint64_t last_key(uint32_t tid, uint32_t inst)
{
	return ((uint64_t)tid << 20 | inst) + 1;
}

/* value on CPU inst plus the thread's last values on the other CPUs. */
static uint64_t sum(struct rr_ticks *r, uint32_t tid, uint32_t inst, uint64_t value)
{
	uint64_t t = value, v;

	for (int i = 0; i < r->nfd; i++)
		if ((uint32_t)i != inst && hmap_get(&r->last, last_key(tid, (uint32_t)i), &v) && v)
			t += v - 1;
	return t;
}

void rr_ticks_settle(struct rr_ticks *r, int what, uint32_t tid, uint32_t inst, uint64_t value)
{
	if (what == RR_REC_EXIT) {
		/* the tid may come back as a new thread, counting from 0 */
		for (int i = 0; i < r->nfd; i++)
			(void)hmap_put(&r->last, last_key(tid, (uint32_t)i), 0);
		(void)hmap_put(&r->base, (uint64_t)tid + 1, 0);
		return;
	}
	if (inst == UINT32_MAX || (int)inst >= r->nfd || value == RR_TICKS_NONE)
		return;
	if (what == RR_REC_SWITCH)
		(void)hmap_put(&r->last, last_key(tid, inst), value + 1);
	else if (what == RR_REC_EXEC) { /* rr counts from here */
		(void)hmap_put(&r->base, (uint64_t)tid + 1, sum(r, tid, inst, value) + 1);
		r->root_execd |= tid == r->root;
	}
}

uint64_t rr_ticks_total(struct rr_ticks *r, uint32_t tid, uint32_t inst, uint64_t value)
{
	uint64_t t, b;

	if (value == RR_TICKS_NONE || inst == UINT32_MAX)
		return RR_TICKS_NONE;
	/* inside the program's first exec, before its read (seen only where
	 * exec reads are) */
	if (r->ex.type && tid == r->root && !r->root_execd)
		return 0;
	t = sum(r, tid, inst, value);
	if (hmap_get(&r->base, (uint64_t)tid + 1, &b) && b)
		t = t >= b - 1 ? t - (b - 1) : 0;
	return t;
}

void rr_ticks_final(struct rr_ticks *r, struct collector *c, uint64_t lost)
{
	char meta[sizeof r->meta + 96];

	if (!r || !lost)
		return;
	fprintf(stderr, "cygprof: warning: rr ticks: %llu perf records lost: the ticks of samples "
			"after a loss may be wrong\n",
		(unsigned long long)lost);
	snprintf(meta, sizeof meta, "%s; %llu perf records lost: ticks may be wrong", r->meta,
		 (unsigned long long)lost);
	set_meta(c, meta);
}

void rr_ticks_free(struct rr_ticks *r)
{
	if (!r)
		return;
	for (int k = FD_N; k-- > 0;) {
		for (int i = 0; r->fd[k] && i < r->nfd; i++)
			if (r->fd[k][i] >= 0)
				close(r->fd[k][i]);
		free(r->fd[k]);
	}
	hmap_release(&r->inst);
	hmap_release(&r->csid);
	hmap_release(&r->last);
	hmap_release(&r->base);
	free(r);
}
