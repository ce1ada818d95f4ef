/* SPDX-License-Identifier: MIT */
/* memdump.c - libcygprof-memdump: the memory-dump API
 * (include/cygprof/memdump.h).
 *
 * Under `cygprof record --memdump` the preloaded runtime exports
 * cyg__memdump_table(): this process image's struct cyg_memdump in the
 * shared mapping (ring/cyg-shm.h), which the collector samples.  The first
 * call of any function here looks it up once with dlsym; without it (no
 * cygprof, or recorded without --memdump) the table pointer is NULL and
 * every report returns after one load and one compare.
 *
 * The report path takes no lock.  A subsystem is a slot of the table,
 * found by name: a small write-once cache maps the name's pointer (string
 * literals, usually) to the slot, checked against the slot's name, and a
 * miss compares the ready slots in order, then claims the first free one
 * (compare-and-swap of its state 0 -> 1, name, state 2 with release).
 * Slots are claimed in order and never freed, so two threads claiming one
 * name meet at the same slot.  Names are checked (ring/cyg-name.h) before
 * they reach a slot, on the no-cygprof path too, so that a program sees a
 * refused name whether or not it is recorded; a cache hit needs no check,
 * as the slot's name it equals passed it.
 *
 * Dumpers: a list under reg_lock.  The dumper thread (detached, all signals
 * blocked) starts with the first registration under cygprof; each round it
 * holds call_lock, copies the list and calls every dumper still registered.
 * unregister() takes call_lock once after removing the pair, so it returns
 * only when no round is calling it.
 *
 * Links only libc, libdl and pthread: it is loaded into other people's
 * programs.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cyg-name.h"
#include "cyg-shm.h"
#include "cygprof/memdump.h"

#define EXPORT __attribute__((visibility("default")))
#define UNLIKELY(x) __builtin_expect(!!(x), 0)

#define UNRESOLVED ((struct cyg_memdump *)(uintptr_t)1)
#define CACHE_SLOTS 256 /* name pointer -> slot, write-once entries */
#define CACHE_PROBE 8
#define DUMPERS_MAX 64
#define CLAIM_SPINS 100000 /* a slot stuck in state 1 (its claimer died) is skipped */

/* The table: UNRESOLVED until looked up, NULL without cygprof. */
static struct cyg_memdump *g_md = UNRESOLVED;

static struct {
	const char *key; /* NULL free, BUSY being written, else the name pointer */
	uint32_t slot;
} g_cache[CACHE_SLOTS];
#define BUSY ((const char *)(uintptr_t)1)

static uint64_t g_dropped; /* reports of a new name with every slot taken */

static struct {
	cygprof_memdump_fn fn;
	void *data;
} g_dumpers[DUMPERS_MAX];
static unsigned g_ndumpers;
static int g_thread;        /* the dumper thread runs (in this process) */
static pthread_t g_thread_id;
static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t call_lock = PTHREAD_MUTEX_INITIALIZER;

/* The parent's slots at fork, for the child's new table. */
static struct cyg_memdump_slot g_fork_slots[CYG_MEMDUMP_SLOTS];
static int g_fork_have;

static void atfork_register(void);
static void thread_start_locked(struct cyg_memdump *md);

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* Ask the runtime for this process image's table (NULL: none). */
static struct cyg_memdump *lookup(void)
{
	struct cyg_memdump *(*fn)(void);
	struct cyg_memdump *md;

	*(void **)&fn = dlsym(RTLD_DEFAULT, "cyg__memdump_table");
	md = fn ? fn() : NULL;
	if (md && (md->nslots != CYG_MEMDUMP_SLOTS))
		md = NULL; /* another layout: a runtime of another build */
	return md;
}

/* The first call: look the table up, and under cygprof follow forks.  Our
 * fork handlers are registered here, after the runtime's (it registers its
 * own when it attaches, at the latest inside lookup()): in a child, the
 * runtime's handler registers the new process image before ours asks for
 * its table. */
__attribute__((cold, noinline)) static struct cyg_memdump *resolve(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	int saved = errno;
	struct cyg_memdump *md = lookup();

	if (md)
		pthread_once(&once, atfork_register);
	__atomic_store_n(&g_md, md, __ATOMIC_RELEASE);
	errno = saved;
	return md;
}

static inline struct cyg_memdump *table(void)
{
	struct cyg_memdump *md = __atomic_load_n(&g_md, __ATOMIC_ACQUIRE);

	if (UNLIKELY(md == UNRESOLVED))
		md = resolve();
	return md;
}

/* name equals the slot's name, terminator included (a longer name, never
 * stored, equals none). */
static inline int name_eq(const char *name, const char *slot)
{
	for (unsigned i = 0; i < CYG_MEMDUMP_NAME; i++) {
		if (name[i] != slot[i])
			return 0;
		if (!name[i])
			return 1;
	}
	return 0;
}

static inline unsigned cache_hash(const char *name)
{
	uint64_t h = (uint64_t)(uintptr_t)name * 0x9e3779b97f4a7c15ULL;
	return (unsigned)(h >> 56) % CACHE_SLOTS;
}

static void cache_put(const char *name, uint32_t slot)
{
	unsigned h = cache_hash(name);

	for (unsigned i = 0; i < CACHE_PROBE; i++) {
		unsigned e = (h + i) % CACHE_SLOTS;
		const char *k = NULL;
		if (__atomic_load_n(&g_cache[e].key, __ATOMIC_RELAXED) == NULL &&
		    __atomic_compare_exchange_n(&g_cache[e].key, &k, BUSY, 0, __ATOMIC_ACQUIRE,
						__ATOMIC_RELAXED)) {
			g_cache[e].slot = slot;
			__atomic_store_n(&g_cache[e].key, name, __ATOMIC_RELEASE);
			return;
		}
	}
	/* full around there: later lookups of this pointer compare slots */
}

/* Claim the first free slot, or find name's slot among the ready ones
 * (name passed cyg_name_ok()).  Returns the slot index, or -1 (every slot
 * taken). */
__attribute__((noinline)) static int slot_find(struct cyg_memdump *md, const char *name)
{
	for (unsigned i = 0; i < CYG_MEMDUMP_SLOTS; i++) {
		struct cyg_memdump_slot *s = &md->slot[i];
		uint32_t st = __atomic_load_n(&s->state, __ATOMIC_ACQUIRE);
		if (st == 0) {
			uint32_t zero = 0;
			if (__atomic_compare_exchange_n(&s->state, &zero, 1, 0, __ATOMIC_ACQUIRE,
							__ATOMIC_ACQUIRE)) {
				size_t n = strlen(name); /* < CYG_MEMDUMP_NAME */
				memcpy(s->name, name, n + 1);
				__atomic_store_n(&s->state, 2, __ATOMIC_RELEASE);
				return (int)i;
			}
			st = zero;
		}
		for (unsigned spin = 0; st == 1 && spin < CLAIM_SPINS; spin++) {
			if (spin > 64)
				sched_yield();
			st = __atomic_load_n(&s->state, __ATOMIC_ACQUIRE);
		}
		if (st == 2 && name_eq(name, s->name))
			return (int)i;
	}
	__atomic_add_fetch(&g_dropped, 1, __ATOMIC_RELAXED);
	return -1;
}

/* name's slot, claimed if new: 0, or -1 with errno EINVAL (a name the
 * protocol does not carry) or ENOSPC (every slot taken). */
static inline int slot_of(struct cyg_memdump *md, const char *name,
			  struct cyg_memdump_slot **out)
{
	unsigned h = cache_hash(name);

	for (unsigned i = 0; i < CACHE_PROBE; i++) {
		unsigned e = (h + i) % CACHE_SLOTS;
		const char *k = __atomic_load_n(&g_cache[e].key, __ATOMIC_ACQUIRE);
		if (k == name) {
			struct cyg_memdump_slot *s = &md->slot[g_cache[e].slot];
			/* the same pointer may hold another name now (a buffer) */
			if (name_eq(name, s->name)) {
				*out = s;
				return 0;
			}
			break;
		}
		if (!k)
			break;
	}
	if (UNLIKELY(!cyg_name_ok(name, CYG_MEMDUMP_NAME))) {
		errno = EINVAL;
		return -1;
	}
	int i = slot_find(md, name);
	if (i < 0) {
		errno = ENOSPC;
		return -1;
	}
	cache_put(name, (uint32_t)i);
	*out = &md->slot[i];
	return 0;
}

/* The slot a report goes to: 0 with *s NULL (no cygprof: nothing to do),
 * 0 with *s, or -1 with errno set. */
static inline int report_slot(const char *subsystem, struct cyg_memdump_slot **s)
{
	struct cyg_memdump *md = table();

	*s = NULL;
	if (UNLIKELY(!subsystem)) {
		errno = EINVAL;
		return -1;
	}
	if (!md) {
		if (UNLIKELY(!cyg_name_ok(subsystem, CYG_MEMDUMP_NAME))) {
			errno = EINVAL;
			return -1;
		}
		return 0;
	}
	return slot_of(md, subsystem, s);
}

EXPORT int cygprof_memdump_report_byte_total(const char *subsystem, uint64_t bytes)
{
	struct cyg_memdump_slot *s;

	if (report_slot(subsystem, &s))
		return -1;
	if (!s)
		return 0;
	/* the slot holds the figure's 64 bits; readers take them as unsigned */
	__atomic_store_n(&s->value, (int64_t)bytes, __ATOMIC_RELAXED);
	__atomic_store_n(&s->last_ns, now_ns(), __ATOMIC_RELAXED);
	__atomic_add_fetch(&s->seq, 1, __ATOMIC_RELEASE);
	return 0;
}

EXPORT int cygprof_memdump_report_byte_delta(const char *subsystem, int64_t delta)
{
	struct cyg_memdump_slot *s;

	if (report_slot(subsystem, &s))
		return -1;
	if (!s)
		return 0;
	/* two's complement: the unsigned figure plus delta, modulo 2^64 */
	__atomic_add_fetch(&s->value, delta, __ATOMIC_RELAXED);
	__atomic_add_fetch(&s->seq, 1, __ATOMIC_RELEASE);
	return 0;
}

EXPORT int cygprof_memdump_needs_report(const char *subsystem)
{
	struct cyg_memdump *md = table();
	struct cyg_memdump_slot *s;
	int saved = errno;

	if (!md || !subsystem || slot_of(md, subsystem, &s)) {
		errno = saved;
		return 0;
	}
	if (!__atomic_load_n(&s->seq, __ATOMIC_ACQUIRE))
		return 1;
	uint64_t last = __atomic_load_n(&s->last_ns, __ATOMIC_RELAXED);
	uint64_t iv = (uint64_t)(md->interval_ms ? md->interval_ms : 10) * 1000000ULL;
	return now_ns() - last >= iv;
}

/* ---- dumpers ------------------------------------------------------------ */

static int dumper_index(cygprof_memdump_fn fn, void *data)
{
	for (unsigned i = 0; i < g_ndumpers; i++)
		if (g_dumpers[i].fn == fn && g_dumpers[i].data == data)
			return (int)i;
	return -1;
}

/* Still alone with the main thread gone (it called pthread_exit): the
 * process would live on for us.  /proc/self/stat's field 20. */
static int last_thread(void)
{
	char buf[1024];
	int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	char *p = strrchr(buf, ')'); /* the command may hold spaces */
	if (!p)
		return 0;
	/* fields after ")": 3 state ... 20 num_threads */
	for (int field = 2; field < 20 && p; field++)
		p = strchr(p + 1, ' ');
	return p && atol(p + 1) == 1;
}

static void round_run(void)
{
	struct {
		cygprof_memdump_fn fn;
		void *data;
	} copy[DUMPERS_MAX];
	unsigned n;

	pthread_mutex_lock(&call_lock);
	pthread_mutex_lock(&reg_lock);
	n = g_ndumpers;
	memcpy(copy, g_dumpers, n * sizeof copy[0]);
	pthread_mutex_unlock(&reg_lock);
	for (unsigned i = 0; i < n; i++) {
		/* a dumper of this round may have unregistered another one */
		pthread_mutex_lock(&reg_lock);
		int still = dumper_index(copy[i].fn, copy[i].data) >= 0;
		pthread_mutex_unlock(&reg_lock);
		if (still)
			copy[i].fn(copy[i].data);
	}
	pthread_mutex_unlock(&call_lock);
}

static void *dumper_main(void *arg)
{
	struct cyg_memdump *md = arg;
	uint64_t iv = (uint64_t)(md->interval_ms ? md->interval_ms : 10) * 1000000ULL;
	struct timespec next;

	clock_gettime(CLOCK_MONOTONIC, &next);
	for (;;) {
		round_run();
		if (last_thread())
			return NULL;
		uint64_t ns = (uint64_t)next.tv_nsec + iv;
		next.tv_sec += (time_t)(ns / 1000000000ULL);
		next.tv_nsec = (long)(ns % 1000000000ULL);
		/* behind by more than a period (stopped, or slow dumpers): skip */
		struct timespec now;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec > next.tv_sec + 1)
			next = now;
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL) == EINTR)
			;
	}
	return NULL;
}

/* Start the dumper thread (reg_lock held), signals blocked in it. */
static void thread_start_locked(struct cyg_memdump *md)
{
	pthread_attr_t attr;
	sigset_t all, old;

	if (g_thread || !md || !g_ndumpers)
		return;
	if (pthread_attr_init(&attr))
		return;
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	if (!pthread_create(&g_thread_id, &attr, dumper_main, md))
		g_thread = 1;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
}

EXPORT int cygprof_memdump_register(cygprof_memdump_fn fn, void *data)
{
	struct cyg_memdump *md;
	int saved = errno, rc = 0;

	if (!fn)
		return -1;
	md = table();
	pthread_mutex_lock(&reg_lock);
	if (dumper_index(fn, data) < 0) {
		if (g_ndumpers == DUMPERS_MAX) {
			rc = -1;
		} else {
			g_dumpers[g_ndumpers].fn = fn;
			g_dumpers[g_ndumpers].data = data;
			g_ndumpers++;
		}
	}
	if (!rc)
		thread_start_locked(md);
	pthread_mutex_unlock(&reg_lock);
	errno = saved;
	return rc;
}

EXPORT int cygprof_memdump_unregister(cygprof_memdump_fn fn, void *data)
{
	int i, on_dumper;

	pthread_mutex_lock(&reg_lock);
	i = dumper_index(fn, data);
	if (i >= 0) {
		g_dumpers[i] = g_dumpers[--g_ndumpers]; /* the order of calls may change */
	}
	on_dumper = g_thread && pthread_equal(pthread_self(), g_thread_id);
	pthread_mutex_unlock(&reg_lock);
	if (i < 0)
		return -1;
	if (!on_dumper) {
		/* wait for a round that may be calling it */
		pthread_mutex_lock(&call_lock);
		pthread_mutex_unlock(&call_lock);
	}
	return 0;
}

/* ---- fork --------------------------------------------------------------- */

/* Before fork: no registration half done, and the figures as they are. */
static void atfork_prepare(void)
{
	struct cyg_memdump *md = __atomic_load_n(&g_md, __ATOMIC_ACQUIRE);

	pthread_mutex_lock(&reg_lock);
	g_fork_have = 0;
	if (!md || md == UNRESOLVED)
		return;
	for (unsigned i = 0; i < CYG_MEMDUMP_SLOTS; i++) {
		struct cyg_memdump_slot *s = &md->slot[i], *d = &g_fork_slots[i];
		d->state = __atomic_load_n(&s->state, __ATOMIC_ACQUIRE);
		if (d->state != 2)
			continue;
		memcpy(d->name, s->name, sizeof d->name);
		d->name[CYG_MEMDUMP_NAME - 1] = 0;
		d->value = __atomic_load_n(&s->value, __ATOMIC_RELAXED);
		d->last_ns = __atomic_load_n(&s->last_ns, __ATOMIC_RELAXED);
		d->seq = __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE);
	}
	g_fork_have = 1;
}

static void atfork_parent(void)
{
	pthread_mutex_unlock(&reg_lock);
}

/* The child is a process image of its own: its own table (the runtime
 * registered it just before), starting with the parent's figures in the
 * same slots (the name cache stays right), and its own dumper thread. */
static void atfork_child(void)
{
	int saved = errno;
	struct cyg_memdump *md;

	pthread_mutex_init(&reg_lock, NULL);
	pthread_mutex_init(&call_lock, NULL); /* a round of the parent's thread may hold it */
	g_thread = 0;
	md = lookup();
	if (md && g_fork_have) {
		for (unsigned i = 0; i < CYG_MEMDUMP_SLOTS; i++) {
			struct cyg_memdump_slot *s = &md->slot[i], *f = &g_fork_slots[i];
			if (f->state != 2)
				break; /* slots are claimed in order */
			uint32_t zero = 0;
			if (!__atomic_compare_exchange_n(&s->state, &zero, 1, 0, __ATOMIC_ACQUIRE,
							 __ATOMIC_RELAXED))
				break;
			memcpy(s->name, f->name, sizeof s->name);
			s->value = f->value;
			s->last_ns = f->last_ns;
			__atomic_store_n(&s->seq, f->seq, __ATOMIC_RELAXED);
			__atomic_store_n(&s->state, 2, __ATOMIC_RELEASE);
		}
	}
	__atomic_store_n(&g_md, md, __ATOMIC_RELEASE);
	thread_start_locked(md);
	errno = saved;
}

static void atfork_register(void)
{
	pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}
