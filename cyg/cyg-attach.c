/* SPDX-License-Identifier: MIT */
/* cyg-attach.c - attaching the runtime to the collector's mapping, and
 * the entries of cyg-attach.h that attach it to a running program, seed
 * its threads' stacks and detach it; the settings taken from the mapping,
 * and the callbacks a library built on the runtime registers.
 *
 * Under `cygprof record` the mapping's fd is in the environment
 * (CYGPROF_SHM_FD): the constructor attaches, or the first hook or
 * allocation if it comes earlier.  Under `record --attach` the collector
 * loads the runtime into the running program and calls cygprof_attach_fd()
 * (docs/attach.md).  Either way map_fd() maps it, takes its settings and
 * registers the process image.  Runs inside the traced program, on cold
 * paths only.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cyg-attach.h"
#include "cyg-cold.h"

char *cyg_base;
struct cyg_ctl *cyg_ctl;
int cyg_use_tsc;
int cyg_timeline;
int cyg_noclock;
uint64_t cyg_ring_mask;
uint32_t cyg_max_depth = 2; /* until attached: every enter overflows harmlessly */
int cyg_memory;
const struct cyg_callbacks *cyg_callbacks;
static int mem_started; /* the callbacks' mem_attach ran, or runs */

int cyg_state;               /* 0 not tried, -2 attaching, 1 attached, -1 disabled */
static int ctor_done;         /* our constructor ran: a missing environment is final */
unsigned cyg_gen = 1;         /* one more at each attach after a detach */
char *cyg_end;                /* the end of the window mapped at cyg_base */
char *cyg_lim;                /* cyg_end - 64 (cyg-private.h) */
int cyg_attached_late;        /* cygprof_attach_fd() attached us, not the environment */

/* ---- attaching to the collector ---------------------------------------- */

/* The fd of the mapping from the initial environment, read from
 * /proc/self/environ: before libc sets `environ` (a .preinit_array
 * function), getenv() cannot see it yet.  Returns -1 when absent. */
static int environ_fd(void)
{
	static const char key[] = CYG_SHM_FD_ENV "=";
	char buf[4096 + sizeof key];
	size_t keep = 0;
	int fd = open("/proc/self/environ", O_RDONLY | O_CLOEXEC), found = -1;

	if (fd < 0)
		return -1;
	for (;;) {
		ssize_t n = read(fd, buf + keep, 4096);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		size_t len = keep + (size_t)n, i;
		for (i = 0; i + sizeof key <= len; i++) {
			if ((i == 0 || buf[i - 1] == 0) && !memcmp(buf + i, key, sizeof key - 1)) {
				size_t j = i + sizeof key - 1;
				int v = 0, digits = 0;
				while (j < len && buf[j] >= '0' && buf[j] <= '9') {
					v = v * 10 + (buf[j++] - '0');
					digits++;
				}
				if (digits && j < len) {
					found = v;
					goto out;
				}
			}
		}
		/* keep the tail: an entry may straddle two reads */
		keep = len < sizeof key + 12 ? len : sizeof key + 12;
		memmove(buf, buf + len - keep, keep);
	}
out:
	close(fd);
	return found;
}

/* Memory tracing starts once the mapping is attached, asks for it, and
 * libcygprof-mem.so registered its callbacks, whichever comes last (both
 * sides call this after publishing their part). */
static void mem_start(void)
{
	const struct cyg_callbacks *cb = __atomic_load_n(&cyg_callbacks, __ATOMIC_SEQ_CST);

	if (!cb || __atomic_load_n(&cyg_state, __ATOMIC_SEQ_CST) <= 0 ||
	    !(cyg_ctl->flags & CYG_F_MEMORY) ||
	    __atomic_exchange_n(&mem_started, 1, __ATOMIC_SEQ_CST))
		return;
	if (cb->mem_attach)
		cb->mem_attach();
	__atomic_store_n(&cyg_memory, 1, __ATOMIC_RELEASE);
}

/* Map the collector's mapping from fd and take its settings; the pthread
 * key and the fork handler are made once per process.  Returns 0 or a
 * negative errno; on failure nothing changed but what a caller undoes
 * (cyg_state). */
static int map_fd(int fd)
{
	static int atfork_made;
	struct stat st;
	uint64_t size, win;
	void *m;

	if (fstat(fd, &st) < 0 || st.st_size < (off_t)CYG_AREA_OFF)
		return -EBADF;
	size = (uint64_t)st.st_size;
	/* Only a window of it: the program's RLIMIT_AS counts what we map
	 * (cyg-cold.h); it grows as the run needs, in place. */
	win = CYG_WIN_STEP < size ? CYG_WIN_STEP : size;
	m = cyg__map_window(fd, size, win);
	if (m == MAP_FAILED) {
		/* Not silently: this process is not recorded (e.g. it lowered
		 * its own ulimit -v below what it maps already). */
		char msg[200];
		int e = errno, n = snprintf(msg, sizeof msg,
					    "cygprof: process %d is not recorded: cannot map "
					    "cygprof's shared memory (%s)\n",
					    (int)getpid(), strerror(e));
		if (n > 0)
			(void)!write(2, msg, (size_t)n < sizeof msg ? (size_t)n : sizeof msg - 1);
		return -ENOMEM;
	}
	struct cyg_ctl *c = m;
	if (c->magic != CYG_SHM_MAGIC || c->version != CYG_SHM_VERSION || c->size != size) {
		munmap(m, win);
		return -EBADF;
	}
	if (cyg__writer_key()) {
		munmap(m, win);
		return -EAGAIN;
	}
	if (!atfork_made) {
		/* before the child handler below: no window grows across fork */
		pthread_atfork(cyg__grow_prepare, cyg__grow_release, cyg__grow_release);
	}
	cyg__grow_prepare();
	cyg_base = m;
	cyg_size = size;
	__atomic_store_n(&cyg_end, (char *)m + win, __ATOMIC_RELEASE);
	__atomic_store_n(&cyg_lim, (char *)m + win - CYG_NODE_SIZE, __ATOMIC_RELEASE);
	cyg__grow_release();
	cyg_ctl = c;
	cyg_use_tsc = !!(c->flags & CYG_F_TSC);
	cyg_timeline = !!(c->flags & CYG_F_TIMELINE);
	/* a timeline needs times: the collector never asks for both */
	cyg_noclock = !!(c->flags & CYG_F_NOCLOCK) && !cyg_timeline;
	cyg_ring_mask = c->ring_words - 1;
	cyg_max_depth = c->max_depth;
	/* what other processes of the run allocated already */
	cyg__cover_all();
	cyg_proc_off = cyg__register_proc(0, cyg_now());
	cyg__sw_init();
	cyg__smp_init();
	if (!atfork_made) {
		pthread_atfork(NULL, NULL, cyg__atfork_child);
		pthread_atfork(cyg__fork_snap_take, cyg__fork_snap_drop, NULL);
		/* last: its prepare runs first, before any handler of the
		 * program registered earlier (their hooks, in the child, must
		 * not read the parent's switch records) */
		pthread_atfork(cyg__smp_fork_prepare, cyg__smp_fork_parent, NULL);
		atfork_made = 1;
	}
	return 0;
}

/* Attach to the collector's mapping: from our constructor, or earlier from
 * the first hook or allocation (a .preinit_array function, another
 * library's constructor).  That early, the environment may not be readable
 * yet: then try again later, until our constructor has run. */
int cyg__attach(void)
{
	const char *s;
	int fd;

	if (cyg_state != 0)
		return cyg_state > 0 ? 0 : -1;
	cyg_state = -2;
	cyg__syscall_init();
	s = getenv(CYG_SHM_FD_ENV);
	fd = s ? atoi(s) : environ_fd();
	if (fd < 0) {
		cyg_state = ctor_done ? -1 : 0;
		return -1;
	}
	cyg_state = -1;
	if (map_fd(fd))
		return -1;
	__atomic_store_n(&cygprof_attach_state, CYGPROF_ATTACH_ON, __ATOMIC_SEQ_CST);
	__atomic_store_n(&cyg_state, 1, __ATOMIC_SEQ_CST);
	cyg__calibrate();
	mem_start();
	return 0;
}

void cyg__register(const struct cyg_callbacks *cb)
{
	int saved = errno;

	__atomic_store_n(&cyg_callbacks, cb, __ATOMIC_SEQ_CST);
	mem_start();
	errno = saved;
}

void cyg__attach_early(void)
{
	int saved = errno, guard = cyg_tls.guard;

	cyg_tls.guard = 1; /* what attaching allocates is not traced */
	cyg__attach();
	cyg_tls.guard = guard;
	errno = saved;
}

__attribute__((constructor(101))) static void cyg_init(void)
{
	int saved = errno;
	ctor_done = 1;
	cyg__attach();
	errno = saved;
}

/* ---- attaching to a running program (cyg-attach.h, docs/attach.md) ----- */

int cygprof_attach_state;
int cygprof_attach_collector;
unsigned long long cygprof_attach_boottime;

/* Thread ids waiting for their first hook, with the frames to start their
 * shadow stacks with (CYGPROF_ATTACH_SEED_MAX function addresses, in the
 * mapping: no malloc).  An entry is claimed by a compare-and-swap of its
 * tid from 0, filled, then its tid published; the thread takes it at its
 * first hook (SEED_TAKEN while it reads it, then free again). */
#define SEED_CLAIMED UINT32_MAX
#define SEED_TAKEN (UINT32_MAX - 1)
static struct seed {
	uint32_t tid; /* 0 free, SEED_CLAIMED being filled, SEED_TAKEN used */
	uint32_t n;
	uint64_t off; /* uint64_t[n] in the mapping, outermost first */
} seeds[CYGPROF_ATTACH_SEED_THREADS];
static uint32_t nseeds; /* entries ever used (release-stored) */

/* Attached again, to a smaller mapping than before: the exit hook reads
 * the node that the top frame of the stack its TLS names before it looks
 * at anything else, a gid of the earlier mapping that may lie past the end
 * of this one.  The earlier collector is done with those writers: their
 * top frame becomes the root, naming the null node. */
static void forget_writers(char *obase, char *oend, uint64_t oproc)
{
	const struct cyg_ctl *oc = (const struct cyg_ctl *)(void *)obase;
	uint32_t pid = (uint32_t)getpid();

	uint64_t steps = (uint64_t)(oend - obase) / sizeof(struct cyg_thread) + 1;
	for (uint64_t off = __atomic_load_n(&oc->threads_off, __ATOMIC_ACQUIRE); off && steps--;) {
		/* past the earlier window: another process's writer, which
		 * this one never mapped (nor its list after it) */
		if (off + sizeof(struct cyg_thread) > (uint64_t)(oend - obase))
			break;
		struct cyg_thread *t = (struct cyg_thread *)(void *)(obase + off);
		off = t->next;
		if (t->pid != pid || t->proc_off != oproc)
			continue;
		struct cyg_frame *stk = (struct cyg_frame *)(void *)(obase + t->stack_off);
		t->depth = 0;
		stk[0].node = CYG_GID_NULL;
	}
}

static void detach_writers(void);

/* CLOCK_BOOTTIME in ns: comparable with a process's start time in
 * /proc/PID/stat, which the next attacher reads to tell our collector from
 * a process that got its pid after it died. */
static unsigned long long boot_ns(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_BOOTTIME, &ts))
		return 0;
	return (unsigned long long)ts.tv_sec * 1000000000ULL + (unsigned long long)ts.tv_nsec;
}

/* The last cygprof_attach_fd() attached a runtime that was off (never
 * attached, or detached), and nothing detached it since: what
 * cygprof_attach_abort() may undo. */
static int attach_undoable;

int cygprof_attach_fd(int fd)
{
	int saved = errno, prev = __atomic_load_n(&cyg_state, __ATOMIC_SEQ_CST), r;
	int took_over = 0;

	__atomic_store_n(&attach_undoable, 0, __ATOMIC_SEQ_CST);
	if (prev == -2)
		return -EBUSY;
	if (fd < 0)
		return -EBADF;
	if (prev > 0) {
		/* Attached by an earlier cygprof_attach_fd() whose collector
		 * died without detaching (SIGKILL): the hooks still reach us
		 * and drop everything (collector_gone).  Detach for it (its
		 * threads are stopped by the new attacher), then attach as
		 * after a detach.  A live collector, or one that started the
		 * program (the environment), keeps the process. */
		if (!cyg_attached_late || !cyg__collector_dead(0))
			return -EBUSY;
		if (!__atomic_compare_exchange_n(&cyg_state, &prev, -2, 0, __ATOMIC_SEQ_CST,
						 __ATOMIC_SEQ_CST))
			return -EBUSY;
		detach_writers();
		__atomic_store_n(&cygprof_attach_state, CYGPROF_ATTACH_DETACHED, __ATOMIC_SEQ_CST);
		__atomic_store_n(&cygprof_attach_collector, 0, __ATOMIC_SEQ_CST);
		prev = CYG_STATE_DETACHED;
		took_over = 1;
	} else if (!__atomic_compare_exchange_n(&cyg_state, &prev, -2, 0, __ATOMIC_SEQ_CST,
						__ATOMIC_SEQ_CST)) {
		return -EBUSY;
	}
	if (prev == CYG_STATE_DETACHED) {
		/* Attached again (no hook runs: the slots are the original
		 * ones).  What belongs to the earlier mapping is forgotten:
		 * seeds not taken, the tid table of shared TLS, the threads'
		 * failures; their writers are recognised as stale (outside
		 * the new mapping) at each thread's next hook.  The earlier
		 * mapping stays mapped: a TLS still points into it. */
		uint32_t n = __atomic_load_n(&nseeds, __ATOMIC_ACQUIRE);
		for (uint32_t i = 0; i < n; i++)
			__atomic_store_n(&seeds[i].tid, 0, __ATOMIC_RELEASE);
		__atomic_store_n(&nseeds, 0, __ATOMIC_RELEASE);
		cyg__shared_reset();
		cyg_gen++;
	}
	char *obase = cyg_base, *oend = cyg_end;
	uint64_t oproc = cyg_proc_off;
	cyg__syscall_init();
	r = map_fd(fd);
	if (r) {
		__atomic_store_n(&cyg_state, prev, __ATOMIC_SEQ_CST);
		errno = saved;
		return r;
	}
	/* The earlier writers' gids lie below the earlier window's end: the
	 * new window covers that far, unless the new mapping is smaller (or
	 * cannot be mapped so far), then their top frames are forgotten. */
	if (prev == CYG_STATE_DETACHED &&
	    ((uint64_t)(oend - obase) > cyg_size || cyg__cover((uint64_t)(oend - obase))))
		forget_writers(obase, oend, oproc);
	close(fd); /* the mapping holds the memfd; an exec'd image would not use it */
	cyg_attached_late = 1;
	cygprof_attach_boottime = boot_ns();
	__atomic_store_n(&cygprof_attach_collector, (int)cyg_ctl->collector_pid, __ATOMIC_SEQ_CST);
	__atomic_store_n(&cygprof_attach_state, CYGPROF_ATTACH_ON, __ATOMIC_SEQ_CST);
	__atomic_store_n(&cyg_state, 1, __ATOMIC_SEQ_CST);
	/* The first attach of this process calibrates its hooks; an attach
	 * after a detach does not: its threads' writers are the earlier
	 * mapping's, and calibrating through them in the injected call could
	 * outlast the attacher's wait (its capture says the measure did not
	 * complete) */
	static int calibrated;
	if (!calibrated) {
		calibrated = 1;
		cyg__calibrate();
	}
	mem_start();
	__atomic_store_n(&attach_undoable, !took_over, __ATOMIC_SEQ_CST);
	errno = saved;
	return 0;
}

int cygprof_attach_path(const char *path)
{
	int saved = errno, fd, r;

	if (!path)
		return -EINVAL;
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		r = -errno;
		errno = saved;
		return r;
	}
	r = cygprof_attach_fd(fd);
	if (r)
		close(fd); /* taken (and closed) only on success */
	errno = saved;
	return r;
}

int cygprof_attach_abort(int collector)
{
	/* Called by the attacher's trampoline on the thread that ran its
	 * calls, once that thread runs on without it (docs/attach.md, "When
	 * the attacher dies").  The hooks were never pointed at us in this
	 * attach: no other thread is inside the runtime, and none enters it,
	 * so the detach needs no stopped threads. */
	int one = 1;

	if (collector <= 0 ||
	    __atomic_load_n(&cygprof_attach_collector, __ATOMIC_SEQ_CST) != collector)
		return -EINVAL;
	if (!__atomic_compare_exchange_n(&attach_undoable, &one, 0, 0, __ATOMIC_SEQ_CST,
					 __ATOMIC_SEQ_CST))
		return -EINVAL;
	return cygprof_detach();
}

int cygprof_attach_seed(int tid, const unsigned long *fns, unsigned n)
{
	uint32_t i, cur;
	uint64_t off;

	if (__atomic_load_n(&cyg_state, __ATOMIC_SEQ_CST) <= 0)
		return -EINVAL;
	if (tid <= 0 || (uint32_t)tid >= SEED_TAKEN || (n && !fns) || n > CYGPROF_ATTACH_SEED_MAX)
		return -EINVAL;
	if (!n)
		return 0;
	off = cyg__area_alloc((uint64_t)n * sizeof(uint64_t));
	if (!off)
		return -ENOSPC;
	for (i = 0; i < n; i++)
		((uint64_t *)AT(off))[i] = fns[i];
	for (i = 0; i < CYGPROF_ATTACH_SEED_THREADS; i++) {
		cur = 0;
		if (__atomic_compare_exchange_n(&seeds[i].tid, &cur, SEED_CLAIMED, 0,
						__ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
			break;
	}
	if (i == CYGPROF_ATTACH_SEED_THREADS)
		return -ENOSPC;
	seeds[i].n = n;
	seeds[i].off = off;
	__atomic_store_n(&seeds[i].tid, (uint32_t)tid, __ATOMIC_RELEASE);
	for (cur = __atomic_load_n(&nseeds, __ATOMIC_RELAXED); cur < i + 1;)
		if (__atomic_compare_exchange_n(&nseeds, &cur, i + 1, 1, __ATOMIC_RELEASE,
						__ATOMIC_RELAXED))
			break;
	return 0;
}

const uint64_t *cyg__seed_take(uint32_t tid, uint32_t *n)
{
	uint32_t used = __atomic_load_n(&nseeds, __ATOMIC_ACQUIRE), i;
	struct seed *s = NULL;

	for (i = 0; i < used; i++) {
		uint32_t cur = tid;
		if (__atomic_load_n(&seeds[i].tid, __ATOMIC_ACQUIRE) == cur &&
		    __atomic_compare_exchange_n(&seeds[i].tid, &cur, SEED_TAKEN, 0,
						__ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
			s = &seeds[i];
			break;
		}
	}
	if (!s)
		return NULL;
	const uint64_t *fns = AT(s->off);
	*n = s->n;
	__atomic_store_n(&s->tid, 0, __ATOMIC_RELEASE);
	return fns;
}

/* Close every writer of this process for the collector of the current
 * mapping and stamp the process's end (cygprof_detach(), or an attach that
 * finds that collector dead).  Threads are stopped, or the collector is
 * gone: nothing here writes into a ring or waits for it. */
static void detach_writers(void)
{
	uint32_t pid = (uint32_t)getpid();
	uint64_t now = cyg_now(), off;

	cyg__cover_all(); /* the list holds other processes' writers too */

	struct cyg_thread *t;
	uint64_t steps = cyg_walk_max(sizeof *t);
	for (off = __atomic_load_n(&cyg_ctl->threads_off, __ATOMIC_ACQUIRE);
	     steps-- && (t = cyg_rec_at(off, sizeof *t));) {
		off = t->next;
		if (t->pid != pid || t->proc_off != cyg_proc_off)
			continue; /* another process's (a child forked meanwhile) */
		/* Sends every later hook to a cold path (enter and exit),
		 * which returns; never cleared.  After an attach again the
		 * cold path gives the thread a new writer instead. */
		t->ovf = UINT32_MAX / 2;
		/* its CPU samples and switch records stop (it is stopped) */
		cyg__smp_detach(t);
		if (__atomic_load_n(&t->state, __ATOMIC_ACQUIRE) == CYG_T_ACTIVE) {
			/* Its open frames end now: the collector closes them
			 * at end_ts in its own copy, so nothing here writes
			 * into a ring or waits for the collector. */
			t->end_ts = now;
			__atomic_store_n(&t->state, CYG_T_CUT, __ATOMIC_RELEASE);
		}
	}
	if (cyg_proc_off) {
		struct cyg_proc *p = AT(cyg_proc_off);
		p->end_ts = now;
	}
}

int cygprof_detach(void)
{
	int saved = errno, cur = 1;

	if (!__atomic_compare_exchange_n(&cyg_state, &cur, CYG_STATE_DETACHED, 0,
					 __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
		return -EINVAL;
	__atomic_store_n(&attach_undoable, 0, __ATOMIC_SEQ_CST);
	/* From here on every cold path of the hooks returns at once, and no
	 * thread gets a writer; the writers that exist are diverted there. */
	__atomic_store_n(&cygprof_attach_state, CYGPROF_ATTACH_DETACHED, __ATOMIC_SEQ_CST);
	__atomic_store_n(&cygprof_attach_collector, 0, __ATOMIC_SEQ_CST);
	detach_writers();
	cyg__smp_uninstall();
	errno = saved;
	return 0;
}
