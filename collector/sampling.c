/* SPDX-License-Identifier: MIT */
/* sampling.c - perf samples and off-CPU intervals (record --sample).
 *
 * One perf event per online CPU on the program (pid = the child, cpu = each
 * CPU, inherit = 1: every thread and child process it starts is sampled
 * into the ring of the CPU it runs on; an inherited event cannot be mapped
 * with cpu = -1).  The events are opened between the fork and the exec
 * (spawn.c holds the child back) and start at the exec (enable_on_exec).
 * Their clock is CLOCK_MONOTONIC, the clock of the collector's origin mono0.
 *
 * Each turn of the poll loop reads every ring: a SAMPLE becomes a
 * struct cygprof_psample whose call chain goes into the stack stash
 * (innermost frame CYGPROF_FRAME_IP, callers CYGPROF_FRAME_RA); a SWITCH
 * out of a thread opens an off-CPU interval that its next SWITCH in closes.
 * A second event per CPU, the software context-switches event sampled at
 * every switch (period 1) with the same user call chain, says where the
 * thread was when it left the CPU: the interval is charged to that stack
 * (where the kernel does not allow it, to the stack of the thread's last
 * sample before it).  A thread
 * preempted while runnable (SWITCH_OUT_PREEMPT) only waits for a CPU: no
 * interval (a busy machine would otherwise show computing as off CPU).  The rings of
 * different CPUs are not ordered with each other, so records wait in a
 * pending list, sorted by time, until they are older than
 * SAMPLING_SETTLE_NS (a record stamped just before a ring was read may
 * still be written into it after).
 *
 * Samples and intervals go to the capture's psamples and offcpu DBs each
 * turn, their stacks into the stash the memory instrument shares.
 * CYGPROF_SAMPLES_DUMP=PATH also writes them as JSON lines at the end (the
 * collector's own view, for debugging and tests). */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "collector-private.h"
#include "rr-ticks.h"

/* Data pages of each CPU's ring (a power of two), 256 KiB with 4 KiB pages:
 * at 100000 Hz with deep call chains a turn of the poll loop fits. */
#define SAMPLING_RING_PAGES 64
/* Records younger than this (from the last read) wait for the next turn. */
#define SAMPLING_SETTLE_NS 20000000ULL
/* How long a sample of a thread not registered yet waits for it. */
#define SAMPLING_THREAD_WAIT_NS 500000000ULL
/* Longest call chain kept (perf's own limit is perf_event_max_stack). */
#define SAMPLING_CHAIN_MAX 512
/* Bytes of the user stack copied with each sample (from the stack pointer
 * up), scanned for the caller that the frame-pointer chain skips. */
#define SAMPLING_STACK_BYTES 1024

enum { PEND_SAMPLE, PEND_OUT, PEND_PREEMPT, PEND_IN, PEND_CS, PEND_TICKS };

struct pend_rec {
	uint64_t t;      /* perf time (CLOCK_MONOTONIC ns) */
	uint64_t period; /* samples: ns of CPU time */
	uint64_t ticks;  /* samples, PEND_TICKS: rr ticks (rr-ticks.c), RR_TICKS_NONE */
	uint32_t inst;   /* samples, PEND_TICKS: the CPU whose counter read them */
	uint32_t rr;     /* PEND_TICKS: RR_REC_* */
	uint32_t pid, tid;
	uint32_t stack;  /* samples: stash id */
	uint32_t kind;   /* PEND_* */
	uint32_t kernel; /* samples: the IP was in the kernel */
	uint32_t seq;    /* order of reading: ties keep it */
};

struct sampling {
	int ncpu;
	int *fd;
	char **map;             /* each ring's mapping, page 0 the control page */
	int *csfd;              /* the context-switches event of each CPU, -1 when none */
	char **csmap;           /* its ring */
	size_t map_bytes;
	struct pend_rec *pend;
	size_t npend, cappend;
	uint32_t seq;
	struct cygprof_psample *s; /* settled samples not yet written (all of them
				    * when dumping) */
	size_t ns, caps, s_written;
	struct cygprof_offcpu *o;
	size_t no, capo, o_written;
	uint64_t last_t;        /* time of the last sample settled */
	struct hmap threads;    /* (pid << 32 | tid) + 1 -> 1 + index in c->threads */
	size_t threads_known;
	struct hmap procs;      /* pid + 1 -> 1 + index in c->procs */
	size_t procs_known;
	struct hmap out_at;     /* tid + 1 -> 1 + perf time it went off CPU (0: on CPU) */
	struct hmap last_stack; /* tid + 1 -> stack of its last sample */
	struct hmap cs_stack;   /* tid + 1 -> 1 + stack where it last left the CPU */
	uint64_t lost, samples, offcpu;
	uint64_t preempted_ns;  /* time runnable threads waited for a CPU (not off-CPU) */
	char *rec;              /* a record that wraps around its ring, copied out */
	size_t rec_cap;
	const char *dump;       /* CYGPROF_SAMPLES_DUMP */
	int regs_stack;         /* samples carry regs_user and stack_user */
	const char *event;
	uint64_t hz;            /* the rate asked of perf */
	int clock_event;        /* cpu-clock or task-clock: periods are ns */
	struct rr_ticks *rr;    /* record --rr-ticks (rr-ticks.c), NULL without */
};

static long perf_open(struct perf_event_attr *a, pid_t pid, int cpu)
{
	return syscall(SYS_perf_event_open, a, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

static int read_int_file(const char *path, int *v)
{
	FILE *f = fopen(path, "r");
	int ok;

	if (!f)
		return -1;
	ok = fscanf(f, "%d", v) == 1;
	fclose(f);
	return ok ? 0 : -1;
}

/* The one line saying why sampling is off and what to change. */
static void warn_off(const char *event, int err)
{
	int par = -1;

	read_int_file("/proc/sys/kernel/perf_event_paranoid", &par);
	if (err == EACCES || err == EPERM) {
		if (par > 2)
			fprintf(stderr,
				"cygprof: warning: sampling off: perf_event_paranoid is %d; run as root "
				"or set kernel.perf_event_paranoid<=2\n",
				par);
		else
			fprintf(stderr,
				"cygprof: warning: sampling off: perf_event_open: %s (perf_event_paranoid "
				"is %d; in a container, allow perf_event_open in its seccomp profile or "
				"give it CAP_PERFMON)\n",
				strerror(err), par);
	} else if (err == ENOENT || err == EOPNOTSUPP || err == ENODEV) {
		fprintf(stderr,
			"cygprof: warning: sampling off: this machine has no '%s' event (no PMU: a "
			"virtual machine?); use --sample-event=cpu-clock\n",
			event);
	} else if (err == ENOSYS) {
		fprintf(stderr, "cygprof: warning: sampling off: this kernel has no perf_event_open "
				"(CONFIG_PERF_EVENTS)\n");
	} else {
		fprintf(stderr, "cygprof: warning: sampling off: perf_event_open (%s): %s\n", event,
			strerror(err));
	}
}

/* The attributes of the event named name; -1 for a name we do not know. */
static int event_attr(const char *name, struct perf_event_attr *a)
{
	memset(a, 0, sizeof *a);
	a->size = sizeof *a;
	if (!name || !strcmp(name, "cpu-clock")) {
		a->type = PERF_TYPE_SOFTWARE;
		a->config = PERF_COUNT_SW_CPU_CLOCK;
	} else if (!strcmp(name, "task-clock")) {
		a->type = PERF_TYPE_SOFTWARE;
		a->config = PERF_COUNT_SW_TASK_CLOCK;
	} else if (!strcmp(name, "cycles")) {
		a->type = PERF_TYPE_HARDWARE;
		a->config = PERF_COUNT_HW_CPU_CYCLES;
	} else {
		return -1;
	}
	return 0;
}

static void close_all(struct sampling *s)
{
	for (int i = 0; i < s->ncpu; i++) {
		if (s->map && s->map[i] && s->map[i] != MAP_FAILED)
			munmap(s->map[i], s->map_bytes);
		if (s->fd && s->fd[i] >= 0)
			close(s->fd[i]);
		if (s->csmap && s->csmap[i])
			munmap(s->csmap[i], s->map_bytes);
		if (s->csfd && s->csfd[i] >= 0)
			close(s->csfd[i]);
	}
	free(s->map);
	free(s->fd);
	free(s->csmap);
	free(s->csfd);
	s->map = s->csmap = NULL;
	s->fd = s->csfd = NULL;
	s->ncpu = 0;
}

/* The context-switches event on each CPU where the sampling event is open:
 * a sample with the user call chain at every switch out.  It fires in the
 * kernel, so it needs kernel sampling allowed; without it (or on any
 * error) off-CPU intervals take the last sample's stack, silently. */
static void open_switch_events(struct sampling *s, const struct perf_event_attr *base, pid_t pid)
{
	struct perf_event_attr a = *base;

	if (base->exclude_kernel)
		return;
	s->csfd = malloc((size_t)s->ncpu * sizeof *s->csfd);
	s->csmap = calloc((size_t)s->ncpu, sizeof *s->csmap);
	if (!s->csfd || !s->csmap)
		return;
	for (int i = 0; i < s->ncpu; i++)
		s->csfd[i] = -1;
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_CONTEXT_SWITCHES;
	a.freq = 0;
	a.sample_period = 1;
	a.context_switch = 0;
	for (int i = 0; i < s->ncpu; i++) {
		if (s->fd[i] < 0)
			continue;
		long fd = perf_open(&a, pid, i);
		if (fd < 0)
			continue;
		void *m = mmap(NULL, s->map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, (int)fd, 0);
		if (m == MAP_FAILED) {
			close((int)fd);
			continue;
		}
		s->csfd[i] = (int)fd;
		s->csmap[i] = m;
	}
}

void collector_sampling_open(struct collector *c, pid_t pid)
{
	const struct collector_opts *o = c->o;
	struct perf_event_attr a;
	struct sampling *s;
	long page = sysconf(_SC_PAGESIZE);
	long nconf = sysconf(_SC_NPROCESSORS_CONF);
	const char *event = o->sample_event ? o->sample_event : "cpu-clock";
	int err = 0, opened = 0;

	if (!o->sample_hz)
		return;
	if (event_attr(event, &a)) {
		fprintf(stderr, "cygprof: warning: sampling off: unknown event '%s'\n", event);
		return;
	}
	if (page <= 0)
		page = 4096;
	if (nconf <= 0)
		nconf = 1;
	s = calloc(1, sizeof *s);
	if (!s || !(s->fd = malloc((size_t)nconf * sizeof *s->fd)) ||
	    !(s->map = calloc((size_t)nconf, sizeof *s->map))) {
		if (s)
			free(s->fd);
		free(s);
		fprintf(stderr, "cygprof: warning: sampling off: out of memory\n");
		return;
	}
	s->event = event;
	s->dump = getenv("CYGPROF_SAMPLES_DUMP");
	if (s->dump && !*s->dump)
		s->dump = NULL;
	s->ncpu = (int)nconf;
	for (int i = 0; i < s->ncpu; i++)
		s->fd[i] = -1;
	s->map_bytes = (size_t)(1 + SAMPLING_RING_PAGES) * (size_t)page;

	a.freq = 1;
	a.sample_freq = o->sample_hz;
	{
		/* above it perf_event_open says only EINVAL */
		int max;
		if (!read_int_file("/proc/sys/kernel/perf_event_max_sample_rate", &max) &&
		    max > 0 && a.sample_freq > (uint64_t)max) {
			fprintf(stderr,
				"cygprof: warning: sampling at %d Hz, not %u: "
				"kernel.perf_event_max_sample_rate is %d\n",
				max, o->sample_hz, max);
			a.sample_freq = (uint64_t)max;
		}
	}
	a.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
			PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_PERIOD;
#ifdef __x86_64__
	/* the stack pointer and the top of the user stack: see leaf_caller() */
	a.sample_type |= PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
	a.sample_regs_user = 1ULL << 7; /* PERF_REG_X86_SP */
	a.sample_stack_user = SAMPLING_STACK_BYTES;
#endif
	a.disabled = 1;
	a.enable_on_exec = 1;
	a.inherit = 1;
	/* Time in the kernel too where perf allows it (root, or paranoid <= 1):
	 * such a sample is charged to the user frames that made the system
	 * call (CYGPROF_SAMPLE_KERNEL); else only user time is sampled. */
	{
		int par = 2;
		read_int_file("/proc/sys/kernel/perf_event_paranoid", &par);
		a.exclude_kernel = !(geteuid() == 0 || par <= 1);
	}
	a.exclude_hv = 1;
	a.exclude_callchain_kernel = 1;
	a.sample_id_all = 1;
	a.context_switch = 1;
	a.use_clockid = 1;
	a.clockid = CLOCK_MONOTONIC;
	a.wakeup_events = 0;
	s->rr = rr_ticks_setup(c, &a, pid);

	{
		const char *f = getenv("CYGPROF_SAMPLE_FORCE_EPERM");
		if (f && !strcmp(f, "1"))
			err = EPERM; /* the tests' forbidden-perf path */
	}
	for (int i = 0; i < s->ncpu && !err; i++) {
		long fd = perf_open(&a, pid, i);
		if (fd < 0 && (errno == EACCES || errno == EPERM) && !a.exclude_kernel && !i) {
			a.exclude_kernel = 1; /* not allowed after all: user time only */
			fd = perf_open(&a, pid, i);
		}
		if (fd < 0) {
			/* a CPU that is not online: skip it */
			if (errno == ENODEV && i > 0)
				continue;
			err = errno;
			break;
		}
		s->fd[i] = (int)fd;
		s->map[i] = mmap(NULL, s->map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, (int)fd, 0);
		if (s->map[i] == MAP_FAILED) {
			err = errno;
			s->map[i] = NULL;
			break;
		}
		if (s->rr) /* after the mmap: the switch-out reads go to this ring */
			rr_ticks_member(s->rr, (int)fd, pid, i);
		opened++;
	}
	if (!err && !opened)
		err = ENODEV;
	if (err) {
		warn_off(event, err);
		close_all(s);
		rr_ticks_free(s->rr);
		free(s);
		return;
	}
	s->regs_stack = (a.sample_type & PERF_SAMPLE_STACK_USER) != 0;
	s->hz = a.sample_freq;
	s->clock_event = a.type == PERF_TYPE_SOFTWARE;
	open_switch_events(s, &a, pid);
	c->sampling = s;
}

/* 1 + the index in c->threads of the thread (pid, tid), or 0. */
static uint32_t thread_of(struct collector *c, struct sampling *s, uint32_t pid, uint32_t tid)
{
	uint64_t v;

	for (; s->threads_known < c->nthreads; s->threads_known++) {
		const struct cthread *ct = c->threads[s->threads_known];
		hmap_put(&s->threads, ((uint64_t)ct->pid << 32 | ct->tid) + 1,
			 s->threads_known + 1);
	}
	return hmap_get(&s->threads, ((uint64_t)pid << 32 | tid) + 1, &v) ? (uint32_t)v : 0;
}

static struct cproc *cproc_of(struct collector *c, struct sampling *s, uint32_t pid)
{
	uint64_t v;

	for (; s->procs_known < c->nprocs; s->procs_known++)
		hmap_put(&s->procs, (uint64_t)c->procs[s->procs_known]->pid + 1,
			 s->procs_known + 1);
	return hmap_get(&s->procs, (uint64_t)pid + 1, &v) ? c->procs[v - 1] : NULL;
}

/* The executable mapping of cp holding addr, or NULL. */
static const struct procmap *exec_map(const struct cproc *cp, uint64_t addr)
{
	for (size_t i = 0; i < cp->maps.n; i++)
		if (cp->maps.v[i].exec && addr >= cp->maps.v[i].start && addr < cp->maps.v[i].end)
			return &cp->maps.v[i];
	return NULL;
}

static int same_object(const struct procmap *a, const struct procmap *b)
{
	return a && b && a->path && b->path && !strcmp(a->path, b->path);
}

/* The caller that the frame-pointer chain skipped, or 0.  Code built
 * without frame pointers (libc) does not move %rbp, so when the sample's
 * IP is there, perf's chain goes from the IP straight to the return address
 * stored in the frame of the function that called into it: the function
 * that made the call is lost, and its time would be charged to its caller.
 * The copied user stack holds that return address: the first word above
 * the stack pointer that points into executable code of another object
 * than the IP's (frames of the IP's own object come first).  When that word
 * is the chain's next frame anyway, nothing was skipped.  The same
 * restores the instrumented caller of a sample in cygprof's hooks, which
 * set up no frame (cyg/meson.build keeps %rbp out of them, so the chain
 * goes on from that caller's own frame). */
static uint64_t leaf_caller(struct collector *c, struct cproc *cp, const uint64_t *frames,
			    size_t n, const char *stack, uint64_t size)
{
	const struct procmap *ipm, *next;

	if (!cp || n < 1 || !stack || size < 8)
		return 0;
	ipm = exec_map(cp, frames[0]);
	if (!ipm)
		return 0;
	next = n > 1 ? exec_map(cp, frames[1]) : NULL;
	if (next && same_object(ipm, next))
		return 0; /* the chain went through its own object: frames are kept */
	for (uint64_t k = 0; k + 8 <= size; k += 8) {
		uint64_t w = perf_u64(stack + k);
		const struct procmap *m = exec_map(cp, w);
		uint64_t start = 0;
		if (!m || same_object(m, ipm))
			continue;
		/* a function's entry is a pointer a register held (the hooks
		 * save their caller's registers), not a return address */
		if (collector_fn_name(c, cp, w, &start, NULL, NULL, NULL) && start == w)
			continue;
		return n > 1 && w == frames[1] ? 0 : w;
	}
	return 0;
}

static int pend_push(struct sampling *s, const struct pend_rec *r)
{
	if (ARRAY_GROW(s->pend, s->cappend, s->npend + 1))
		return -ENOMEM;
	s->pend[s->npend] = *r;
	s->pend[s->npend++].seq = s->seq++;
	return 0;
}

/* The stash id of a user call chain (innermost first, with PERF_CONTEXT_*
 * markers); a user ip when the chain has no user frame.  The innermost user
 * frame is the sample's own (CYGPROF_FRAME_IP): for a sample in the kernel,
 * where the system call was made. */
static uint32_t chain_stack(struct collector *c, struct sampling *s, uint32_t pid, uint64_t ip,
			    int kernel, const char *chain, uint64_t nr, const char *stack,
			    uint64_t stack_size)
{
	uint64_t frames[SAMPLING_CHAIN_MAX + 1];
	size_t n = 0;
	int user = 1;
	struct cproc *cp = cproc_of(c, s, pid);
	uint32_t proc = cp ? cp->idx : CYGPROF_NONE;

	for (uint64_t i = 0; i < nr && n < SAMPLING_CHAIN_MAX; i++) {
		uint64_t a = perf_u64(chain + 8 * i);
		if (a >= (uint64_t)PERF_CONTEXT_MAX) {
			user = a == (uint64_t)PERF_CONTEXT_USER;
			continue;
		}
		if (user && a)
			frames[n++] = a;
	}
	if (!n && ip && !kernel && ip < (uint64_t)PERF_CONTEXT_MAX)
		frames[n++] = ip;
	if (cp && stack) {
		collector_proc_maps(c, cp);
		uint64_t w = leaf_caller(c, cp, frames, n, stack, stack_size);
		if (w) {
			memmove(frames + 2, frames + 1, (n - 1) * sizeof *frames);
			frames[1] = w;
			n++;
		}
	}
	return stack_stash_chain(&c->stash, &c->err, proc, frames, n);
}

/* One record of a ring (header included, size checked). */
static void one_record(struct collector *c, struct sampling *s, const char *r, size_t size,
		       int cs)
{
	struct perf_event_header h;
	struct pend_rec p;
	const char *b = r + sizeof h, *end = r + size;

	memcpy(&h, r, sizeof h);
	memset(&p, 0, sizeof p);
	switch (h.type) {
	case PERF_RECORD_SAMPLE: {
		struct perf_sample_rec ps;
		if (perf_sample_parse(b, (size_t)(end - b), s->rr != NULL, &ps))
			return;
		p.pid = ps.pid;
		p.tid = ps.tid;
		p.t = ps.time;
		p.period = ps.period;
		p.ticks = ps.ticks;
		if (s->rr && (p.rr = (uint32_t)rr_ticks_classify(s->rr, &ps, &p.inst))) {
			p.kind = PEND_TICKS; /* a read at a switch or an exec: not a sample */
			break;
		}
		p.kind = cs ? PEND_CS : PEND_SAMPLE;
		p.kernel = (h.misc & PERF_RECORD_MISC_CPUMODE_MASK) == PERF_RECORD_MISC_KERNEL;
		/* then (x86-64) regs_user: abi, sp when abi != 0; stack_user:
		 * size, data[size], dyn_size when size != 0 */
		const char *q = ps.after, *stack = NULL;
		uint64_t stack_size = 0;
		if (s->regs_stack && end - q >= 8) {
			uint64_t abi = perf_u64(q);
			q += abi ? 16 : 8;
			if (end - q >= 16) {
				uint64_t sz = perf_u64(q);
				if (sz && sz <= (uint64_t)(end - q - 16)) {
					uint64_t dyn = perf_u64(q + 8 + sz);
					stack = q + 8;
					stack_size = dyn < sz ? dyn : sz;
				}
			}
		}
		p.stack = chain_stack(c, s, p.pid, ps.ip, p.kernel, ps.chain, ps.nr, stack,
				      stack_size);
		break;
	}
	case PERF_RECORD_SWITCH:
		/* sample_id: pid, tid; time */
		if (end - b < 16)
			return;
		p.pid = perf_u32(b);
		p.tid = perf_u32(b + 4);
		p.t = perf_u64(b + 8);
		p.kind = !(h.misc & PERF_RECORD_MISC_SWITCH_OUT)	       ? PEND_IN
			 : (h.misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT) ? PEND_PREEMPT
									   : PEND_OUT;
		break;
	case PERF_RECORD_EXIT:
		/* pid, ppid, tid, ptid, time; sample_id: pid, tid; time (only
		 * with --rr-ticks, which asks for them: a tid may come back) */
		if (!s->rr || end - b < 40)
			return;
		p.pid = perf_u32(b);
		p.tid = perf_u32(b + 8);
		p.t = perf_u64(b + 32);
		p.kind = PEND_TICKS;
		p.rr = RR_REC_EXIT;
		break;
	case PERF_RECORD_LOST: /* id, lost: the ring was full */
		if (end - b >= 16)
			s->lost += perf_u64(b + 8);
		return;
	case PERF_RECORD_LOST_SAMPLES: /* lost: samples the kernel could not take */
		if (end - b >= 8)
			s->lost += perf_u64(b);
		return;
	default:
		return;
	}
	if (pend_push(s, &p) && !c->err)
		c->err = -ENOMEM;
}

static void drain_ring(struct collector *c, struct sampling *s, char *map, int cs)
{
	struct perf_event_mmap_page *mp = (void *)map;
	uint64_t off = mp->data_offset, size = mp->data_size;
	uint64_t head, tail;
	const char *data;

	if (!size) { /* kernels before 4.1 */
		off = (uint64_t)sysconf(_SC_PAGESIZE);
		size = s->map_bytes - off;
	}
	data = map + off;
	head = __atomic_load_n(&mp->data_head, __ATOMIC_ACQUIRE);
	tail = mp->data_tail;
	while (head - tail >= sizeof(struct perf_event_header)) {
		struct perf_event_header h;
		uint64_t at = tail & (size - 1);
		const char *r;

		if (at + sizeof h <= size) {
			memcpy(&h, data + at, sizeof h);
		} else {
			size_t k = (size_t)(size - at);
			memcpy(&h, data + at, k);
			memcpy((char *)&h + k, data, sizeof h - k);
		}
		if (h.size < sizeof h || h.size > head - tail)
			break; /* cannot be: leave the rest */
		if (at + h.size <= size) {
			r = data + at;
		} else {
			/* wraps around the end of the ring: copy it out */
			if (s->rec_cap < h.size) {
				char *nr = realloc(s->rec, h.size);
				if (!nr)
					break;
				s->rec = nr;
				s->rec_cap = h.size;
			}
			size_t k = (size_t)(size - at);
			memcpy(s->rec, data + at, k);
			memcpy(s->rec + k, data, h.size - k);
			r = s->rec;
		}
		one_record(c, s, r, h.size, cs);
		tail += h.size;
	}
	__atomic_store_n(&mp->data_tail, tail, __ATOMIC_RELEASE);
}

static int pend_cmp(const void *x, const void *y)
{
	const struct pend_rec *a = x, *b = y;

	if (a->t != b->t)
		return a->t < b->t ? -1 : 1;
	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

static uint64_t rel_ns(const struct collector *c, uint64_t t)
{
	return t > c->mono0 ? t - c->mono0 : 0;
}

#define PREEMPTED_BIT (1ULL << 63)

/* A settled record, in time order. */
static void settle(struct collector *c, struct sampling *s, const struct pend_rec *p)
{
	uint64_t key = (uint64_t)p->tid + 1, v;
	uint32_t th = thread_of(c, s, p->pid, p->tid);
	uint32_t idx = th ? c->threads[th - 1]->idx : CYGPROF_NONE;

	switch (p->kind) {
	case PEND_SAMPLE: {
		if (ARRAY_GROW(s->s, s->caps, s->ns + 1))
			goto nomem;
		struct cygprof_psample *x = &s->s[s->ns++];
		memset(x, 0, sizeof *x);
		x->t_ns = rel_ns(c, p->t);
		if (x->t_ns < s->last_t)
			x->t_ns = s->last_t; /* never back: the capture refuses it */
		s->last_t = x->t_ns;
		/* a clock event's period is ns of CPU time; another's
		 * (cycles) is a count: at freq Hz, a sample stands for
		 * 1/freq s of CPU time on average */
		x->weight_ns = s->clock_event ? p->period : 1000000000ULL / (s->hz ? s->hz : 1);
		x->rr_ticks = s->rr ? rr_ticks_total(s->rr, p->tid, p->inst, p->ticks) : RR_TICKS_NONE;
		x->thread_idx = idx;
		x->pid = p->pid;
		x->tid = p->tid;
		x->stack = p->stack;
		x->flags = p->kernel ? CYGPROF_SAMPLE_KERNEL : 0;
		s->samples++;
		hmap_put(&s->last_stack, key, p->stack);
		break;
	}
	case PEND_TICKS:
		rr_ticks_settle(s->rr, (int)p->rr, p->tid, p->inst, p->ticks);
		break;
	case PEND_CS:
		hmap_put(&s->cs_stack, key, (uint64_t)p->stack + 1);
		break;
	case PEND_OUT:
		hmap_put(&s->out_at, key, p->t + 1);
		break;
	case PEND_PREEMPT:
		/* runnable, only waiting for a CPU: not off CPU by its own doing */
		hmap_put(&s->out_at, key, PREEMPTED_BIT | (p->t + 1));
		break;
	case PEND_IN:
		if (!hmap_get(&s->out_at, key, &v) || !v)
			break;
		hmap_put(&s->out_at, key, 0);
		/* where it left the CPU: this switch's context-switches sample
		 * (earlier than the switch in), else its last sample's */
		uint64_t cs_st = 0;
		if (hmap_get(&s->cs_stack, key, &cs_st) && cs_st)
			hmap_put(&s->cs_stack, key, 0);
		if (v & PREEMPTED_BIT) {
			v &= ~PREEMPTED_BIT;
			s->preempted_ns += p->t + 1 > v ? p->t + 1 - v : 0;
			break;
		}
		if (ARRAY_GROW(s->o, s->capo, s->no + 1))
			goto nomem;
		struct cygprof_offcpu *o = &s->o[s->no++];
		memset(o, 0, sizeof *o);
		o->start_ns = rel_ns(c, v - 1);
		o->end_ns = rel_ns(c, p->t);
		if (o->end_ns < o->start_ns)
			o->end_ns = o->start_ns;
		o->thread_idx = idx;
		o->tid = p->tid;
		if (cs_st)
			o->stack = (uint32_t)(cs_st - 1);
		else
			o->stack = hmap_get(&s->last_stack, key, &v) ? (uint32_t)v : 0;
		s->offcpu++;
		break;
	}
	return;
nomem:
	if (!c->err)
		c->err = -ENOMEM;
}

static int off_cmp(const void *x, const void *y)
{
	const struct cygprof_offcpu *a = x, *b = y;
	return a->start_ns < b->start_ns ? -1 : a->start_ns > b->start_ns;
}

/* The capture side: new stash nodes, then the samples and intervals settled
 * since the last call. */
static void sampling_write(struct collector *c, struct sampling *s)
{
	int err = stack_stash_store(&c->stash, c->cap);

	if (!err && s->ns > s->s_written)
		err = cygprof_capture_append_psamples(c->cap, s->s + s->s_written,
						      s->ns - s->s_written);
	if (!err && s->no > s->o_written) {
		qsort(s->o + s->o_written, s->no - s->o_written, sizeof *s->o, off_cmp);
		err = cygprof_capture_append_offcpu(c->cap, s->o + s->o_written,
						    s->no - s->o_written);
	}
	s->s_written = s->ns;
	s->o_written = s->no;
	collector_note_err(c, err);
	if (!s->dump) /* kept only for the dump */
		s->ns = s->s_written = s->no = s->o_written = 0;
}

/* Read every ring; settle what is older than before (all when before is
 * UINT64_MAX). */
static void drain(struct collector *c, struct sampling *s, uint64_t before)
{
	size_t k;

	for (int i = 0; i < s->ncpu; i++)
		if (s->map[i])
			drain_ring(c, s, s->map[i], 0);
	for (int i = 0; s->csmap && i < s->ncpu; i++)
		if (s->csmap[i])
			drain_ring(c, s, s->csmap[i], 1);
	if (!s->npend)
		return;
	qsort(s->pend, s->npend, sizeof *s->pend, pend_cmp);
	for (k = 0; k < s->npend && s->pend[k].t < before; k++) {
		/* a sample of a thread the runtime has not registered yet (it
		 * registers at its first call; a loaded machine delays the
		 * collector's seeing it) waits for it, up to
		 * SAMPLING_THREAD_WAIT_NS, so that it carries the thread's
		 * index; the rest wait behind it (appends keep time order) */
		const struct pend_rec *p = &s->pend[k];
		if (before != UINT64_MAX && p->kind == PEND_SAMPLE &&
		    p->t + SAMPLING_THREAD_WAIT_NS > before && !thread_of(c, s, p->pid, p->tid))
			break;
		settle(c, s, p);
	}
	memmove(s->pend, s->pend + k, (s->npend - k) * sizeof *s->pend);
	s->npend -= k;
	if (k)
		sampling_write(c, s);
}

void collector_sampling_drain(struct collector *c)
{
	struct sampling *s = c->sampling;
	uint64_t now;

	if (!s)
		return;
	now = collector_mono_ns();
	drain(c, s, now > SAMPLING_SETTLE_NS ? now - SAMPLING_SETTLE_NS : 0);
}

static void dump_json(struct collector *c, struct sampling *s)
{
	FILE *f = fopen(s->dump, "w");

	if (!f) {
		fprintf(stderr, "cygprof: warning: cannot write '%s': %s\n", s->dump,
			strerror(errno));
		return;
	}
	fprintf(f,
		"{\"type\":\"info\",\"event\":\"%s\",\"cpus\":%d,\"samples\":%llu,\"offcpu\":%llu,"
		"\"lost\":%llu,\"preempted_ns\":%llu}\n",
		s->event, s->ncpu, (unsigned long long)s->samples, (unsigned long long)s->offcpu,
		(unsigned long long)s->lost, (unsigned long long)s->preempted_ns);
	for (size_t i = 0; i < s->ns; i++) {
		const struct cygprof_psample *x = &s->s[i];
		fprintf(f,
			"{\"type\":\"sample\",\"t_ns\":%llu,\"weight_ns\":%llu,\"thread_idx\":",
			(unsigned long long)x->t_ns, (unsigned long long)x->weight_ns);
		if (x->thread_idx == CYGPROF_NONE)
			fputs("null", f);
		else
			fprintf(f, "%u", x->thread_idx);
		fprintf(f, ",\"pid\":%u,\"tid\":%u,\"flags\":%u,\"stack\":%u,\"frames\":[", x->pid,
			x->tid, x->flags, x->stack);
		/* innermost first: [kind, addr] */
		uint32_t id = x->stack;
		const struct cygprof_stack_node *nd;
		for (size_t d = 0; (nd = stack_stash_get(&c->stash, id)) && d < SAMPLING_CHAIN_MAX;
		     d++) {
			fprintf(f, "%s[%u,%llu]", d ? "," : "", nd->kind,
				(unsigned long long)nd->addr);
			id = nd->parent;
		}
		fputs("]}\n", f);
	}
	for (size_t i = 0; i < s->no; i++) {
		const struct cygprof_offcpu *o = &s->o[i];
		fprintf(f, "{\"type\":\"offcpu\",\"start_ns\":%llu,\"end_ns\":%llu,\"thread_idx\":",
			(unsigned long long)o->start_ns, (unsigned long long)o->end_ns);
		if (o->thread_idx == CYGPROF_NONE)
			fputs("null", f);
		else
			fprintf(f, "%u", o->thread_idx);
		fprintf(f, ",\"tid\":%u,\"stack\":%u}\n", o->tid, o->stack);
	}
	if (fclose(f))
		fprintf(stderr, "cygprof: warning: cannot write '%s': %s\n", s->dump,
			strerror(errno));
}

int collector_sampling_meta(struct collector *c)
{
	struct sampling *s = c->sampling;
	char buf[32];
	int err;

	err = cygprof_capture_set_meta(c->cap, "sample_event", s->event);
	snprintf(buf, sizeof buf, "%llu", (unsigned long long)s->hz);
	if (!err)
		err = cygprof_capture_set_meta(c->cap, "sample_hz", buf);
	snprintf(buf, sizeof buf, "%llu", (unsigned long long)s->lost);
	if (!err && s->lost)
		err = cygprof_capture_set_meta(c->cap, "sample_lost", buf);
	return err;
}

uint64_t collector_sampling_count(const struct collector *c)
{
	return c->sampling ? c->sampling->samples : 0;
}

void collector_sampling_final(struct collector *c)
{
	struct sampling *s = c->sampling;

	if (!s)
		return;
	drain(c, s, UINT64_MAX);
	rr_ticks_final(s->rr, c, s->lost);
	if (s->lost)
		fprintf(stderr, "cygprof: warning: %llu perf records lost (rings full)\n",
			(unsigned long long)s->lost);
	if (s->dump)
		dump_json(c, s);
}

void collector_sampling_release(struct collector *c)
{
	struct sampling *s = c->sampling;

	if (!s)
		return;
	close_all(s);
	rr_ticks_free(s->rr);
	free(s->pend);
	free(s->s);
	free(s->o);
	free(s->rec);
	hmap_release(&s->threads);
	hmap_release(&s->procs);
	hmap_release(&s->out_at);
	hmap_release(&s->last_stack);
	hmap_release(&s->cs_stack);
	free(s);
	c->sampling = NULL;
}
