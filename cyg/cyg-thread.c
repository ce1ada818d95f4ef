/* SPDX-License-Identifier: MIT */
/* cyg-thread.c - the runtime's cold paths: attaching to the collector's
 * mapping, per-thread writers, process images (fork, exec, exit), recovery of
 * unbalanced enter/exit, and the full-ring wait.
 *
 * Runs inside the traced program.  Nothing here is on the per-call path
 * except through a rare branch; syscalls and the shared cold-path lock are
 * fine here, malloc is not (the runtime takes its memory from the mapping).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cyg-attach.h"
#include "cyg-lock.h"
#include "cyg-private.h"

__thread struct cyg_tls cyg_tls TLS_IE;
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
/* no writer could be made in the mapping of this attach (cyg_gen): don't retry */
static __thread unsigned thread_failed TLS_IE;
static unsigned cyg_gen = 1; /* one more at each attach after a detach */
static char *cyg_end;        /* the end of the mapping at cyg_base */
static __thread uint64_t fork_cfa TLS_IE; /* stack position of fork()'s caller */
static uint64_t cyg_proc_off; /* this process image's record */
static pthread_key_t cyg_key;

#define OFF(p) ((uint64_t)((char *)(p) - cyg_base))
#define AT(off) ((void *)(cyg_base + (off)))

/* ---- the shared cold-path lock and allocator --------------------------- */

/* Take the lock, unless this very thread holds it already: a signal
 * handler interrupted it inside a cold path (ring/cyg-lock.h).  Returns 0
 * or -1. */
static int lock(void)
{
	return cyg_lock(&cyg_ctl->lock, &cyg_tls.in_lock, NULL) < 0 ? -1 : 0;
}

static void unlock(void)
{
	cyg_unlock(&cyg_ctl->lock, &cyg_tls.in_lock);
}

/* Bump-allocate from the mapping, without the lock (a compare-and-swap of
 * the bump pointer): a signal handler that interrupted a cold path holding
 * the lock can still allocate.  Returns 0 when full. */
static uint64_t area_alloc(uint64_t size)
{
	uint64_t cur = __atomic_load_n(&cyg_ctl->alloc_off, __ATOMIC_RELAXED), off;

	size = (size + 63) & ~63ULL;
	do {
		off = (cur + 63) & ~63ULL;
		if (off + size > cyg_ctl->size || off + size < off) {
			__atomic_add_fetch(&cyg_ctl->oom, 1, __ATOMIC_RELAXED);
			return 0;
		}
	} while (!__atomic_compare_exchange_n(&cyg_ctl->alloc_off, &cur, off + size, 1,
					      __ATOMIC_RELAXED, __ATOMIC_RELAXED));
	return off;
}


/* Take a block from a free list (lock held); the first word links the list. */
static uint64_t list_pop(uint64_t *head)
{
	uint64_t off = *head;
	if (off)
		*head = *(uint64_t *)AT(off);
	return off;
}

static void list_push(uint64_t *head, uint64_t off)
{
	*(uint64_t *)AT(off) = *head;
	*head = off;
}

/* A ring the collector drained after its thread ended (lock held). */
static uint64_t pool_pop(void)
{
	uint64_t tail = cyg_ctl->pool_tail;

	if (tail == __atomic_load_n(&cyg_ctl->pool_head, __ATOMIC_ACQUIRE))
		return 0;
	uint64_t off = cyg_ctl->ring_pool[tail % CYG_RING_POOL];
	__atomic_store_n(&cyg_ctl->pool_tail, tail + 1, __ATOMIC_RELEASE);
	return off;
}

/* A shadow stack goes back to the free list with its capacity (lock held). */
static void stack_free(uint64_t off, uint32_t cap)
{
	((uint64_t *)AT(off))[1] = cap;
	list_push(&cyg_ctl->free_stacks, off);
}

/* ---- small syscall-only helpers ---------------------------------------- */

/* Read a whole /proc file into dst (at most cap bytes); returns its length. */
static uint64_t read_file(const char *path, char *dst, uint64_t cap)
{
	uint64_t len = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return 0;
	while (len < cap) {
		ssize_t n = read(fd, dst + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (uint64_t)n;
	}
	close(fd);
	return len;
}


static void snapshot_maps(struct cyg_proc *p)
{
	uint64_t off, len;

	off = area_alloc(CYG_MAPS_MAX);
	if (!off)
		return;
	len = read_file("/proc/self/maps", AT(off), CYG_MAPS_MAX);
	p->maps_off = off;
	__atomic_store_n(&p->primed, 0, __ATOMIC_RELEASE); /* new objects to open */
	__atomic_store_n(&p->maps_len, len, __ATOMIC_RELEASE);
}

/* The newest record of a live image with this pid, lock held. */
static struct cyg_proc *find_proc(uint32_t pid)
{
	uint64_t off;

	for (off = __atomic_load_n(&cyg_ctl->procs_off, __ATOMIC_ACQUIRE); off;) {
		struct cyg_proc *p = AT(off);
		if (p->pid == pid && p->state != CYG_P_EXEC)
			return p;
		off = p->next;
	}
	return NULL;
}

/* Register this process image.  parent_off: the image that forked us, or
 * 0 to look it up (exec'd image or the program the collector started).
 * Returns its record's offset, 0 when it could not be made. */
static uint64_t register_proc(uint64_t parent_off, uint64_t now)
{
	struct cyg_proc *p, *old;
	uint64_t off, cmd;
	uint32_t pid = (uint32_t)getpid();

	if (lock())
		return 0;
	off = area_alloc(sizeof *p);
	cmd = area_alloc(CYG_CMD_MAX);
	if (!off) {
		unlock();
		return 0;
	}
	p = AT(off);
	p->pid = pid;
	p->ppid = (uint32_t)getppid();
	p->start_ts = now;
	if (!parent_off) {
		old = find_proc(pid);
		if (old && old->state == CYG_P_RUNNING) {
			/* Our previous image exec'd us: it ends here, and its
			 * threads' open frames close now (the collector does it). */
			uint64_t toff;
			old->state = CYG_P_EXEC;
			old->end_ts = now;
			for (toff = cyg_ctl->threads_off; toff;) {
				struct cyg_thread *t = AT(toff);
				if (t->proc_off == OFF(old) && t->state == CYG_T_ACTIVE) {
					t->end_ts = now;
					__atomic_store_n(&t->state, CYG_T_CUT, __ATOMIC_RELEASE);
				}
				toff = t->next;
			}
			parent_off = OFF(old);
		} else {
			old = find_proc(p->ppid);
			parent_off = old ? OFF(old) : 0;
		}
	}
	p->parent_off = parent_off;
	p->seq = cyg_ctl->nprocs++;
	unlock();

	ssize_t n = readlink("/proc/self/exe", p->exe, sizeof p->exe - 1);
	p->exe[n > 0 ? n : 0] = 0;
	char ns[64];
	n = readlink("/proc/self/ns/mnt", ns, sizeof ns - 1);
	if (n > 0 && cyg_ctl->mnt_ns[0]) {
		ns[n] = 0;
		p->foreign = strcmp(ns, cyg_ctl->mnt_ns) != 0;
	}
	if (cmd) {
		p->cmd_len = read_file("/proc/self/cmdline", AT(cmd), CYG_CMD_MAX);
		p->cmd_off = cmd;
	}
	snapshot_maps(p);

	if (lock())
		return 0;
	p->next = cyg_ctl->procs_off;
	__atomic_store_n(&cyg_ctl->procs_off, off, __ATOMIC_RELEASE);
	unlock();
	return off;
}

/* ---- per-thread writers ------------------------------------------------ */

/* Allocate a tree node for thread t (no lock: the thread owns its chunk). */
static struct cyg_node *node_alloc(struct cyg_thread *t)
{
	if (UNLIKELY(t->chunk_next + CYG_NODE_SIZE > t->chunk_end)) {
		uint64_t size = t->chunk_size ? t->chunk_size * 2 : CYG_CHUNK_MIN;
		uint64_t off;
		if (size > CYG_CHUNK_MAX)
			size = CYG_CHUNK_MAX;
		off = area_alloc(size);
		if (!off)
			return NULL;
		t->chunk_size = size;
		t->chunk_next = off;
		t->chunk_end = off + size;
	}
	struct cyg_node *n = AT(t->chunk_next);
	t->chunk_next += CYG_NODE_SIZE;
	return n;
}

/* ---- calls from other call sites --------------------------------------- */

static size_t site_slot(uint32_t node, uint64_t site, uint32_t mask)
{
	uint64_t h = (site ^ ((uint64_t)node << 29)) * 0x9E3779B97F4A7C15ULL;
	return (size_t)(h >> 40) & mask;
}

static void sidx_put(uint32_t *ix, uint32_t mask, const struct cyg_site *v, uint32_t i)
{
	size_t j = site_slot(v[i].node, v[i].site, mask);
	while (ix[j])
		j = (j + 1) & mask;
	ix[j] = i + 1;
}

uint32_t cyg__other_site(struct cyg_thread *t, struct cyg_node *c, uint64_t site)
{
	uint32_t node = cyg_gid(c);
	struct cyg_site *v;
	uint32_t *ix;
	size_t j;

	if (!c->site) { /* a node copied at fork has none yet */
		c->site = site;
		return 0;
	}
	if (t->sites_off) {
		v = AT(t->sites_off);
		ix = AT(t->sidx_off);
		for (j = site_slot(node, site, t->sidx_mask); ix[j]; j = (j + 1) & t->sidx_mask) {
			struct cyg_site *s = &v[ix[j] - 1];
			if (s->node == node && s->site == site) {
				s->calls++;
				return ix[j];
			}
		}
	}
	/* A new (node, site): append it, growing the index past half full. */
	int saved = errno;
	if (!t->sites_off || (t->sites_n + 1) * 2 > t->sidx_mask + 1) {
		uint32_t slots = t->sites_off ? (t->sidx_mask + 1) * 2 : 256;
		uint64_t sites = t->sites_off, idx;
		if (!sites)
			sites = area_alloc((uint64_t)CYG_SITES_MAX * sizeof(struct cyg_site));
		idx = area_alloc((uint64_t)slots * sizeof(uint32_t));
		if (!sites || !idx) {
			errno = saved;
			return 0; /* the mapping is full: counted at the node's first site */
		}
		t->sites_off = sites;
		v = AT(sites);
		ix = AT(idx);
		for (uint32_t i = 0; i < t->sites_n; i++)
			sidx_put(ix, slots - 1, v, i);
		t->sidx_off = idx;
		t->sidx_mask = slots - 1;
	}
	errno = saved;
	if (t->sites_n >= CYG_SITES_MAX)
		return 0;
	v = AT(t->sites_off);
	uint32_t i = t->sites_n;
	v[i].node = node;
	v[i].site = site;
	v[i].calls = 1;
	v[i].ticks = 0;
	__atomic_store_n(&t->sites_n, i + 1, __ATOMIC_RELEASE);
	sidx_put(AT(t->sidx_off), t->sidx_mask, v, i);
	return i + 1;
}

void cyg__enter_site(struct cyg_thread *t, struct cyg_node *c, uint64_t site, uint32_t d,
		     uint64_t now)
{
	struct cyg_frame *stk = cyg_tls.stk;

	stk[d].site = cyg__other_site(t, c, site);
	t->depth = d;
	if (cyg_timeline)
		cyg_ring_put(t, CYG_EV_ENTER, stk[d].node, now);
	t->busy = 0;
}

void cyg__site_ticks(struct cyg_thread *t, const struct cyg_frame *f, uint64_t ticks)
{
	struct cyg_site *v = AT(t->sites_off);
	v[f->site - 1].ticks += ticks;
}

/* ---- the child table: (parent, fn) -> child, open addressing ------------ */

static size_t kid_slot(uint32_t parent, uint64_t fn, uint32_t mask)
{
	uint64_t h = (fn ^ ((uint64_t)parent << 32 | parent)) * 0x9E3779B97F4A7C15ULL;
	return (size_t)(h >> 40) & mask;
}

static struct cyg_node *kid_find(struct cyg_thread *t, uint32_t parent, uint64_t fn)
{
	if (!t->kids_off)
		return NULL;
	struct cyg_kid *k = AT(t->kids_off);
	for (size_t i = kid_slot(parent, fn, t->kids_mask);; i = (i + 1) & t->kids_mask) {
		if (!k[i].child)
			return NULL;
		if (k[i].parent == parent && k[i].fn == fn)
			return CYG_NODE(cyg_base, k[i].child);
	}
}

static void kid_put(struct cyg_kid *k, uint32_t mask, uint32_t parent, uint64_t fn, uint32_t child)
{
	size_t i = kid_slot(parent, fn, mask);
	while (k[i].child)
		i = (i + 1) & mask;
	k[i].fn = fn;
	k[i].parent = parent;
	k[i].child = child;
}

/* Record a new child; the table doubles past half full (the old one is
 * left in the mapping).  Without room the sibling lists still work. */
static void kid_add(struct cyg_thread *t, uint32_t parent, uint64_t fn, uint32_t child)
{
	if (!t->kids_off || (t->kids_n + 1) * 2 > t->kids_mask + 1) {
		uint32_t slots = t->kids_off ? (t->kids_mask + 1) * 2 : 1024;
		uint64_t off = area_alloc((uint64_t)slots * sizeof(struct cyg_kid));
		if (!off) {
			t->kids_partial = 1;
			return;
		}
		struct cyg_kid *nk = AT(off);
		if (t->kids_off) {
			struct cyg_kid *ok = AT(t->kids_off);
			for (uint32_t i = 0; i <= t->kids_mask; i++)
				if (ok[i].child)
					kid_put(nk, slots - 1, ok[i].parent, ok[i].fn, ok[i].child);
		}
		t->kids_off = off;
		t->kids_mask = slots - 1;
	}
	kid_put(AT(t->kids_off), t->kids_mask, parent, fn, child);
	t->kids_n++;
}

struct cyg_node *cyg__new_child(struct cyg_thread *t, struct cyg_node *p, uint64_t fn,
				uint64_t site)
{
	struct cyg_node *c = node_alloc(t);

	if (!c)
		return NULL;
	c->fn = fn;
	c->site = site;
	c->calls = 0;
	c->ticks = 0;
	c->parent = cyg_gid(p);
	c->first_child = 0;
	c->hint = CYG_GID_NULL;
	c->hint2 = CYG_GID_NULL;
	c->next_sibling = p->first_child;
	/* Publish fully built: the collector may follow the link any time. */
	__atomic_store_n(&p->first_child, cyg_gid(c), __ATOMIC_RELEASE);
	kid_add(t, cyg_gid(p), fn, cyg_gid(c));
	return c;
}

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

static void thread_dtor(void *arg);
static void seed_push(struct cyg_thread *t, uint64_t now);

/* A writer of an earlier attach (the runtime was detached, then attached
 * again to another mapping): the thread's TLS still names it, in the old
 * mapping, which stays mapped but is not written any more. */
static inline int stale(const struct cyg_thread *t)
{
	return (const char *)t < cyg_base || (const char *)t >= cyg_end;
}

/* Forget the writers of an earlier attach: this thread gets a new one at
 * its next hook. */
static void tls_forget(void)
{
	cyg_tls.t = NULL;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	cyg_tls.stk = NULL;
	cyg_tls.ring = NULL;
	memset(cyg_tls.save, 0, sizeof cyg_tls.save);
}
static int attached_late; /* cygprof_attach_fd() attached us, not the environment */

/* A new writer of this process image, on the thread list; the caller
 * makes it current (or not: a signal handlers' writer waits for one). */
static struct cyg_thread *thread_alloc(uint32_t flags, uint64_t now, uint64_t proc_off)
{
	struct cyg_thread *t;
	struct cyg_node *root;
	uint64_t off, stack, ring = 0;
	uint32_t cap = CYG_STACK_INIT;
	/* By the mapping's flag, not cyg_memory: a writer made before memory
	 * tracing started (a hook that came before libcygprof-mem.so
	 * registered) has what memory records need once it does. */
	int mem = !!(cyg_ctl->flags & CYG_F_MEMORY);

	/* What others gave back, under the lock; new memory without it (a
	 * signal handler's writer, when its thread holds the lock). */
	stack = 0;
	if (!lock()) {
		stack = list_pop(&cyg_ctl->free_stacks);
		if (stack)
			cap = (uint32_t)((uint64_t *)AT(stack))[1];
		if (cyg_timeline || mem)
			ring = pool_pop();
		unlock();
	}
	off = area_alloc(sizeof *t);
	if (!stack)
		stack = area_alloc((uint64_t)cap * sizeof(struct cyg_frame));
	if ((cyg_timeline || mem) && !ring)
		ring = area_alloc(cyg_ctl->ring_words * 8);
	uint64_t seen = mem ? area_alloc(CYG_SEEN_SLOTS * 8) : 0;
	if (!off || !stack || ((cyg_timeline || mem) && !ring) || (mem && !seen))
		return NULL;

	t = AT(off);
	memset(t, 0, sizeof *t);
	t->pid = (uint32_t)getpid();
	t->tid = (uint32_t)gettid();
	t->flags = flags;
	t->stack_off = stack;
	t->stack_cap = cap;
	t->lim = cap < cyg_max_depth ? cap : cyg_max_depth;
	t->ring_off = ring;
	t->seen_off = seen;
	t->proc_off = proc_off;
	t->start_ts = now;
	prctl(PR_GET_NAME, t->name, 0, 0, 0);
	root = node_alloc(t);
	if (!root)
		return NULL;
	memset(root, 0, sizeof *root);
	root->hint = CYG_GID_NULL;
	root->hint2 = CYG_GID_NULL;
	t->root = cyg_gid(root);

	struct cyg_frame *stk = AT(stack);
	stk[0].ts = now;
	stk[0].cfa = UINT64_MAX;
	stk[0].node = t->root;
	stk[0].site = 0;
	t->state = CYG_T_ACTIVE;

	/* On the list without the lock: a push by compare-and-swap. */
	t->seq = __atomic_fetch_add(&cyg_ctl->nthreads, 1, __ATOMIC_RELAXED);
	uint64_t head = __atomic_load_n(&cyg_ctl->threads_off, __ATOMIC_RELAXED);
	do
		t->next = head;
	while (!__atomic_compare_exchange_n(&cyg_ctl->threads_off, &head, off, 1, __ATOMIC_RELEASE,
					    __ATOMIC_RELAXED));
	return t;
}

/* Write through t from now on.  The triple changes t last: a signal
 * handler that interrupts the switch sees the writer it replaces. */
static void tls_use(struct cyg_thread *t)
{
	cyg_tls.stk = AT(t->stack_off);
	cyg_tls.ring = t->ring_off ? AT(t->ring_off) : NULL;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	cyg_tls.t = t;
}

static struct cyg_thread *thread_new(uint32_t flags, uint64_t now)
{
	struct cyg_thread *t = thread_alloc(flags, now, cyg_proc_off);

	if (!t)
		return NULL;
	tls_use(t);
	pthread_setspecific(cyg_key, t);
	if (UNLIKELY(__atomic_load_n(&nseeds, __ATOMIC_RELAXED)))
		seed_push(t, now); /* attached to a running program */
	return t;
}

/* ---- signal handlers that interrupt a hook ----------------------------- */

/* A hook holds its writer (busy) while a signal handler runs and calls
 * instrumented functions or allocates.  Those go to a writer of their
 * own: a thread record with the same tid, flagged CYG_TF_SIGNAL, made once
 * per thread and level and kept.  Its root frame has CFA 0, so every enter
 * at depth 0 takes the slow path, which marks frame 1 CYG_SITE_HOST: the
 * exit of that frame puts the interrupted writer back. */
static struct cyg_thread *sig_writer(struct cyg_thread *h)
{
	if (h->alt_off)
		return AT(h->alt_off);
	if (h->level + 1 > CYG_SIG_LEVELS)
		return NULL;
	int saved = errno;
	struct cyg_thread *a =
		thread_alloc(CYG_TF_SIGNAL | (h->flags & CYG_TF_CLONED), cyg_now(), h->proc_off);
	errno = saved;
	if (!a)
		return NULL;
	a->level = h->level + 1;
	a->host_off = OFF(h);
	((struct cyg_frame *)AT(a->stack_off))[0].cfa = 0;
	__atomic_store_n(&h->alt_off, OFF(a), __ATOMIC_RELEASE);
	return a;
}

struct cyg_thread *cyg__sig_enter(struct cyg_thread *t, unsigned *first)
{
	*first = 0;
	if (cyg_tls.t != t) { /* TLS shared with a clone() child: no switching */
		t->sig_lost++;
		return NULL;
	}
	while (t->busy) {
		struct cyg_thread *a = sig_writer(t);
		if (!a) {
			t->sig_lost++;
			if (*first)
				cyg__sig_leave(*first);
			return NULL;
		}
		struct cyg_tls_save *sv = &cyg_tls.save[a->level - 1];
		sv->t = cyg_tls.t;
		sv->stk = cyg_tls.stk;
		sv->ring = cyg_tls.ring;
		if (!*first)
			*first = a->level;
		tls_use(a);
		t = a;
	}
	return t;
}

void cyg__sig_leave(unsigned level)
{
	const struct cyg_tls_save *sv = &cyg_tls.save[level - 1];

	cyg_tls.stk = sv->stk;
	cyg_tls.ring = sv->ring;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	cyg_tls.t = sv->t;
}

/* The writer a signal handlers' writer nests in. */
static inline struct cyg_thread *host_of(const struct cyg_thread *t)
{
	return t->host_off ? AT(t->host_off) : NULL;
}

/* ---- threads that share their TLS (raw clone() without CLONE_SETTLS) ---- */

/* A child made by clone(CLONE_VM) without a TLS of its own runs on the
 * TLS of the thread that made it: cyg_tls cannot tell them apart.  From
 * then on that TLS holds no writer (t NULL), so every hook of both takes
 * the cold path, which finds the caller's writer by tid in this table.
 * Entries are only added (tid published last); lookups take no lock. */
#define SHARED_MAX 256
static struct shared {
	uint32_t tid;
	uint64_t off;         /* its writer, 0 until its first hook */
	uint64_t proc_off;    /* its process image */
	uint32_t flags;
} shared_tab[SHARED_MAX];
static uint32_t shared_n;
static int shared_on;
static int shared_busy; /* a spin lock for adding entries */

static void shared_reset(void)
{
	shared_on = 0;
	shared_n = 0;
}

static struct shared *shared_find(uint32_t tid)
{
	uint32_t n = __atomic_load_n(&shared_n, __ATOMIC_ACQUIRE);

	for (uint32_t i = 0; i < n; i++)
		if (__atomic_load_n(&shared_tab[i].tid, __ATOMIC_ACQUIRE) == tid)
			return &shared_tab[i];
	return NULL;
}

/* Add (or update) the entry of tid; returns it, or NULL when full. */
static struct shared *shared_add(uint32_t tid, uint64_t off, uint64_t proc_off, uint32_t flags)
{
	struct shared *e;

	while (__atomic_exchange_n(&shared_busy, 1, __ATOMIC_ACQUIRE))
		sched_yield();
	e = shared_find(tid);
	if (!e && shared_n < SHARED_MAX) {
		e = &shared_tab[shared_n];
		e->tid = 0;
		__atomic_store_n(&shared_n, shared_n + 1, __ATOMIC_RELEASE);
	}
	if (e) {
		e->off = off;
		e->proc_off = proc_off;
		e->flags = flags;
		__atomic_store_n(&e->tid, tid, __ATOMIC_RELEASE);
		__atomic_store_n(&shared_on, 1, __ATOMIC_RELEASE);
	}
	__atomic_store_n(&shared_busy, 0, __ATOMIC_RELEASE);
	return e;
}

static void shared_del(uint32_t tid)
{
	struct shared *e = shared_find(tid);
	if (e)
		__atomic_store_n(&e->tid, 0, __ATOMIC_RELEASE);
}

/* The writer of the calling thread when it shares its TLS, made at its
 * first hook; NULL when it does not (or none can be made). */
static struct cyg_thread *shared_writer(int make)
{
	if (!__atomic_load_n(&shared_on, __ATOMIC_ACQUIRE))
		return NULL;
	struct shared *e = shared_find((uint32_t)syscall(SYS_gettid));
	if (!e)
		return NULL;
	uint64_t off = __atomic_load_n(&e->off, __ATOMIC_ACQUIRE);
	if (!off && make) {
		struct cyg_thread *t = thread_alloc(e->flags, cyg_now(), e->proc_off);
		if (!t)
			return NULL;
		off = OFF(t);
		__atomic_store_n(&e->off, off, __ATOMIC_RELEASE);
	}
	return off ? AT(off) : NULL;
}

void cyg__exit_rare(uint64_t fn, uint64_t cfa)
{
	struct cyg_thread *t;

	if (CYG_DETACHED())
		return;
	t = shared_writer(0);
	/* Attached to a running program: a thread's first hook may well be
	 * an exit (of a call made before the attach).  It registers the
	 * thread, whose seeded frames (if any) that exit pairs with. */
	if (!t && attached_late && !cyg_tls.t)
		t = cyg__thread_init();
	if (!t || t->busy)
		return;
	t->busy = 1;
	cyg__exit_slow(t, fn, cyg_hook_now(), cfa);
}

static int attach(void);

struct cyg_thread *cyg__thread_init(void)
{
	struct cyg_thread *t;
	int saved = errno;

	if (cyg_state == 0)
		attach();
	if (cyg_state <= 0 || thread_failed == cyg_gen)
		return NULL;
	t = shared_writer(1);
	if (t) {
		errno = saved;
		return t; /* not made current: the TLS is shared */
	}
	t = thread_new(0, cyg_now());
	if (!t)
		thread_failed = cyg_gen; /* the mapping is full (counted in ctl->oom) */
	errno = saved;
	return t;
}

/* Make room for frame d: a shadow stack twice as big (or as big as
 * needed), the live frames copied over.  Returns 0, or -1 when the mapping
 * is full or d is past the depth limit. */
static int stack_reserve(struct cyg_thread *t, uint32_t d)
{
	uint64_t cap = t->stack_cap, off;

	if (d < t->stack_cap)
		return 0;
	if (d >= cyg_max_depth)
		return -1;
	while (cap <= d)
		cap *= 2;
	if (cap > cyg_max_depth)
		cap = cyg_max_depth;
	off = area_alloc(cap * sizeof(struct cyg_frame));
	if (!off)
		return -1;
	memcpy(AT(off), cyg_stk(t), ((uint64_t)t->depth + 1) * sizeof(struct cyg_frame));
	uint64_t old = t->stack_off;
	uint32_t oldcap = t->stack_cap;
	if (cyg_tls.t == t)
		cyg_tls.stk = AT(off);
	t->stack_cap = (uint32_t)cap;
	__atomic_store_n(&t->stack_off, off, __ATOMIC_RELEASE);
	t->lim = (uint32_t)cap < cyg_max_depth ? (uint32_t)cap : cyg_max_depth;
	int saved = errno;
	if (!lock()) {
		stack_free(old, oldcap);
		unlock();
	}
	errno = saved;
	return 0;
}

/* Close the frames above to_depth at time `when` (they were abandoned). */
void cyg__close_frames(struct cyg_thread *t, uint32_t to_depth, uint64_t when)
{
	struct cyg_frame *stk = cyg_stk(t);

	while (t->depth > to_depth) {
		struct cyg_frame *f = &stk[t->depth];
		struct cyg_node *n = CYG_NODE(cyg_base, f->node);
		if (!cyg_noclock && when > f->ts) {
			n->ticks += when - f->ts;
			if (f->site && f->site != CYG_SITE_HOST)
				cyg__site_ticks(t, f, when - f->ts);
		}
		t->unwound++;
		t->depth--;
		if (cyg_timeline)
			cyg_ring_put_w(t, cyg_ringbuf(t), CYG_EV_UNWIND, f->node, when);
	}
}

/* Frames abandoned before an enter of fn (called from site, at stack
 * position cfa): those below it on the stack.  A frame at the very same
 * position is the caller of a function inlined into it (same position, same
 * call site, another function) and lives; otherwise, right after a longjmp,
 * it is the dead frame of an earlier call from the same place. */
uint32_t cyg__unwind_dead(struct cyg_thread *t, uint64_t fn, uint64_t site, uint64_t cfa,
			  uint64_t now)
{
	struct cyg_frame *stk = cyg_stk(t);
	uint32_t d = t->depth;
	uint64_t when = t->leave_ts ? t->leave_ts : now;

	while (d > 0) {
		if (stk[d].cfa > cfa)
			break;
		if (stk[d].cfa == cfa) {
			const struct cyg_node *x = CYG_NODE(cyg_base, stk[d].node);
			if (!t->leave_ts || (x->site == site && x->fn != fn))
				break;
		}
		d--;
	}
	cyg__close_frames(t, d, when);
	t->leave_ts = 0;
	return d;
}

void cyg__exit_slow(struct cyg_thread *t, uint64_t fn, uint64_t now, uint64_t cfa)
{
	struct cyg_frame *stk;
	uint32_t d;

	if (CYG_DETACHED()) {
		t->busy = 0; /* the writer is closed (ovf diverts every hook here) */
		return;
	}
	if (UNLIKELY(stale(t))) {
		/* the first hook after an attach again: a new writer */
		t->busy = 0;
		tls_forget();
		t = cyg__thread_init();
		if (!t)
			return;
		t->busy = 1;
		now = cyg_hook_now(); /* not before its seeded frames' entry */
	}
again:
	stk = cyg_stk(t);
	if (t->ovf) {
		/* the overflowed call of a signal handler ends its writer's turn */
		if (!--t->ovf && t->level && !t->depth)
			cyg__sig_leave(t->level);
		goto out;
	}
	if (t->leave_ts) {
		/* A longjmp happened: frames strictly below the exiting
		 * function's are dead. */
		d = t->depth;
		while (d > 0 && stk[d].cfa < cfa)
			d--;
		cyg__close_frames(t, d, t->leave_ts);
		t->leave_ts = 0;
	}
	for (d = t->depth; d > 0; d--)
		if (CYG_NODE(cyg_base, stk[d].node)->fn == fn)
			break;
	if (!d) {
		struct cyg_thread *h = host_of(t);
		if (h && !h->busy) {
			/* A signal handler was left by a longjmp: this exit is
			 * the interrupted writer's, and the handler is over. */
			cyg__close_frames(t, 0, now);
			cyg__sig_leave(t->level);
			t->busy = 0;
			t = cyg_tls.t;
			t->busy = 1;
			goto again;
		}
		t->unpaired++;
		goto out;
	}
	/* Frames above the match were left without their exit (an exception
	 * through code without cleanups, or a longjmp we did not see). */
	cyg__close_frames(t, d, now);
	struct cyg_node *c = CYG_NODE(cyg_base, stk[d].node);
	if (!cyg_noclock) {
		c->ticks += now - stk[d].ts;
		if (stk[d].site && stk[d].site != CYG_SITE_HOST)
			cyg__site_ticks(t, &stk[d], now - stk[d].ts);
	}
	t->depth = d - 1;
	if (cyg_timeline)
		cyg_ring_put_w(t, cyg_ringbuf(t), CYG_EV_EXIT, stk[d].node, now);
	if (stk[d].site == CYG_SITE_HOST)
		cyg__sig_leave(t->level); /* the handler's call is over */
out:
	t->busy = 0;
}

/* The rare starts of an enter: no writer yet, re-entered from a signal
 * handler, or past the depth limit. */
void cyg__enter_rare(uint64_t fn, uint64_t site, uint64_t cfa)
{
	struct cyg_thread *t = cyg_tls.t;

	if (CYG_DETACHED())
		return;
	if (t && UNLIKELY(stale(t))) {
		tls_forget();
		t = NULL;
	}
	if (!t) {
		t = cyg__thread_init();
		if (!t)
			return;
	}
	if (t->busy) {
		/* a signal handler interrupted a hook: its own writer */
		unsigned first;
		t = cyg__sig_enter(t, &first);
		if (!t)
			return;
	}
	if (t->ovf) {
		t->ovf++;
		t->overflow++;
		return;
	}
	t->busy = 1;
	cyg__enter_slow(t, fn, site, cyg_hook_now(), cfa);
}

/* The whole enter, for every case the hot path does not take (busy held). */
void cyg__enter_slow(struct cyg_thread *t, uint64_t fn, uint64_t site, uint64_t now,
		     uint64_t cfa)
{
	struct cyg_frame *stk = cyg_stk(t);
	uint32_t d = t->depth, g;

	if (CYG_DETACHED()) {
		t->busy = 0;
		return;
	}
	if (stk[d].cfa < cfa || (stk[d].cfa == cfa && t->leave_ts))
		d = cyg__unwind_dead(t, fn, site, cfa, now);
	if (!d && t->level && !host_of(t)->busy) {
		/* A signal handler was left by a longjmp: this call is the
		 * interrupted writer's. */
		cyg__sig_leave(t->level);
		t->busy = 0;
		t = cyg_tls.t;
		t->busy = 1;
		cyg__enter_slow(t, fn, site, now, cfa);
		return;
	}
	if (d + 1 >= t->lim) {
		if (stack_reserve(t, d + 1) || d + 1 >= t->lim)
			goto overflow;
		stk = cyg_stk(t);
	}
	struct cyg_node *p = CYG_NODE(cyg_base, stk[d].node), *c;
	c = kid_find(t, stk[d].node, fn);
	if (!c && (!t->kids_off || t->kids_partial)) { /* the table misses some: walk */
		for (g = p->first_child; g; g = c->next_sibling) {
			c = CYG_NODE(cyg_base, g);
			if (c->fn == fn)
				break;
		}
		if (!g)
			c = NULL;
	}
	if (!c) {
		c = cyg__new_child(t, p, fn, site);
		if (!c)
			goto overflow; /* the mapping is full */
	}
	if (p->hint != cyg_gid(c)) {
		p->hint2 = p->hint;
		p->hint = cyg_gid(c);
	}
	c->calls++;
	d++;
	stk[d].ts = now;
	stk[d].cfa = cfa;
	stk[d].node = cyg_gid(c);
	if (UNLIKELY(t->level) && d == 1)
		stk[d].site = CYG_SITE_HOST; /* its exit ends the handler's turn */
	else
		stk[d].site = c->site == site ? 0 : cyg__other_site(t, c, site);
	t->depth = d;
	if (cyg_timeline)
		cyg_ring_put_w(t, cyg_ringbuf(t), CYG_EV_ENTER, stk[d].node, now);
	t->busy = 0;
	return;
overflow:
	t->ovf++;
	t->overflow++;
	t->busy = 0;
}

/* ---- the timeline ring's rare cases ------------------------------------ */

uint64_t cyg__mono(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Wait up to ns nanoseconds for the collector to die: it holds ctl->alive
 * for its whole life, so getting the lock (EOWNERDEAD) means it is gone.
 * Returns 1 when it is (and marks it gone for every writer), else 0. */
static int collector_dead(long ns)
{
	struct timespec dl;
	int r;

	if (__atomic_load_n(&cyg_ctl->collector_gone, __ATOMIC_RELAXED))
		return 1;
	clock_gettime(CLOCK_MONOTONIC, &dl);
	dl.tv_nsec += ns;
	if (dl.tv_nsec >= 1000000000L) {
		dl.tv_sec++;
		dl.tv_nsec -= 1000000000L;
	}
	r = cyg_lock(&cyg_ctl->alive, NULL, &dl);
	if (r == -ETIMEDOUT || r == -EINTR)
		return 0;
	if (r >= 0) {
		cyg_unlock(&cyg_ctl->alive, NULL);
	} else if (r != -ENOTRECOVERABLE) {
		/* EDEADLK: its owner's tid is ours in another pid namespace;
		 * nothing to learn from the lock: just wait. */
		struct timespec ts = {0, ns};
		nanosleep(&ts, NULL);
		return 0;
	}
	__atomic_store_n(&cyg_ctl->collector_gone, 1, __ATOMIC_RELAXED);
	return 1;
}

/* Wait until `need` words are free.  Returns 0, or -1 to drop the event
 * (drop mode, unless `force`; or the collector is gone). */
static int ring_wait(struct cyg_thread *t, uint64_t need, int force)
{
	uint64_t size = cyg_ring_mask + 1;
	uint64_t t0, spins = 0;

	t->tail_seen = __atomic_load_n(&t->tail, __ATOMIC_ACQUIRE);
	if (t->head + need - t->tail_seen <= size)
		return 0;
	if ((!force && (cyg_ctl->flags & CYG_F_DROP)) ||
	    __atomic_load_n(&cyg_ctl->collector_gone, __ATOMIC_RELAXED))
		return -1;

	/* Lossless mode: wait for the collector as long as it lives (stopped,
	 * under a debugger, or slow), and measure the wait. */
	t0 = cyg_now();
	t->waits++;
	for (;;) {
		t->tail_seen = __atomic_load_n(&t->tail, __ATOMIC_ACQUIRE);
		if (t->head + need - t->tail_seen <= size)
			break;
		if (++spins < 100) {
			sched_yield();
			continue;
		}
		if (collector_dead(50000)) {
			t->wait_ticks += cyg_now() - t0;
			return -1;
		}
	}
	t->wait_ticks += cyg_now() - t0;
	return 0;
}

void cyg__ring_slow(struct cyg_thread *t, unsigned kind, uint32_t gid, uint64_t now)
{
	uint64_t h;
	int saved = errno; /* waiting may sleep: the program's errno stays */
	int waited;

	if (CYG_DETACHED())
		return;
	waited = ring_wait(t, 1, 0);

	errno = saved;
	if (waited < 0) {
		t->lost++;
		return;
	}
	h = t->head;
	cyg_ringbuf(t)[h & cyg_ring_mask] = cyg_ev_make(kind, gid, now & CYG_EV_DELTA_MAX);
	__atomic_store_n(&t->head, h + 1, __ATOMIC_RELEASE);
}

void cyg__ring_write(struct cyg_thread *t, uint64_t *w, unsigned n, uint64_t now)
{
	uint64_t h;
	unsigned i;

	if (now)
		w[0] |= now & CYG_EV_DELTA_MAX;
	h = t->head;
	/* Room by the tail last seen: no need to read the collector's line. */
	if (UNLIKELY(h + n - t->tail_seen > cyg_ring_mask + 1)) {
		int saved = errno;
		int waited = ring_wait(t, n, 1);
		errno = saved;
		if (waited < 0) {
			t->lost++;
			return;
		}
	}
	uint64_t *ring = cyg_ringbuf(t);
	for (i = 0; i < n; i++)
		ring[h++ & cyg_ring_mask] = w[i];
	__atomic_store_n(&t->head, h, __ATOMIC_RELEASE);
}

/* ---- thread and process ends ------------------------------------------- */

/* The thread leaves: close what is open, publish, give the stack back.
 * The ring goes back to the pool once the collector has drained it. */
/* One writer ends: close what is open, give its stack back, publish.
 * Through the writer's record only, never the TLS (it may be shared). */
static void writer_end(struct cyg_thread *w, uint64_t now)
{
	w->busy = 1;
	cyg__close_frames(w, 0, w->leave_ts ? w->leave_ts : now);
	w->end_ts = now;
	if (!lock()) {
		stack_free(w->stack_off, w->stack_cap);
		unlock();
	}
	__atomic_store_n(&w->state, CYG_T_ENDED, __ATOMIC_RELEASE);
}

static void thread_end(struct cyg_thread *t)
{
	uint64_t now = cyg_now();

	while (t->host_off) /* ended from inside a signal handler */
		t = host_of(t);
	/* The thread's writer, then those of its signal handlers. */
	for (struct cyg_thread *w = t; w; w = w->alt_off ? AT(w->alt_off) : NULL)
		writer_end(w, now);
	cyg_tls.t = NULL;
	cyg_tls.stk = NULL;
	cyg_tls.ring = NULL;
}

/* A thread whose TLS is shared with a clone() child ends: its writer, and
 * its entry in the table (its tid may be reused). */
static void shared_end(void)
{
	struct cyg_thread *w = shared_writer(0);

	if (w)
		writer_end(w, cyg_now());
	shared_del((uint32_t)syscall(SYS_gettid));
}

static void thread_dtor(void *arg)
{
	int saved = errno;
	struct cyg_thread *t = cyg_tls.t;

	if (__atomic_load_n(&cyg_state, __ATOMIC_RELAXED) <= 0)
		return; /* detached: the writer was closed then */
	if (t && stale(t)) {
		tls_forget(); /* closed at the detach of an earlier attach */
		t = NULL;
	}
	while (t && t->host_off)
		t = host_of(t);
	if (arg && t == arg)
		thread_end(arg);
	else if (arg && !t && shared_writer(0) == arg)
		shared_end();
	errno = saved;
}

/* A process in another mount namespace (a container) waits at its end,
 * briefly, until the collector has opened its files through /proc/PID/root:
 * from outside they cannot be found once it is gone. */
static void wait_primed(void)
{
	struct cyg_proc *p;

	if (cyg_state <= 0 || !cyg_proc_off)
		return;
	p = AT(cyg_proc_off);
	for (int i = 0; p->foreign && i < 2000; i++) {
		if (__atomic_load_n(&p->primed, __ATOMIC_ACQUIRE) ||
		    __atomic_load_n(&cyg_ctl->collector_gone, __ATOMIC_RELAXED))
			break;
		struct timespec ts = {0, 1000000};
		nanosleep(&ts, NULL);
	}
}

__attribute__((destructor)) static void cyg_fini(void)
{
	int saved = errno;

	if (cyg_state <= 0)
		return;
	if (cyg_tls.t && stale(cyg_tls.t))
		tls_forget();
	else if (cyg_tls.t)
		thread_end(cyg_tls.t);
	else
		shared_end();
	if (cyg_proc_off) {
		struct cyg_proc *p = AT(cyg_proc_off);
		p->end_ts = cyg_now();
	}
	wait_primed();
	errno = saved;
}

/* fork: the child is a process of its own with its own writer.  Its open
 * frames (those that called fork) are copied as call paths with no entries,
 * so their exits in the child pair up and the counts stay exact. */
static void atfork_child(void)
{
	struct cyg_thread *old = cyg_tls.t, *t;
	struct cyg_frame *ostk = cyg_tls.stk;
	uint64_t now = cyg_now();
	uint32_t d;

	if (cyg_state <= 0)
		return;
	if (old && stale(old)) {
		tls_forget();
		old = NULL;
	}
	cyg_proc_off = register_proc(cyg_proc_off, now);
	shared_reset();
	cyg_tls.t = NULL;
	t = thread_new(CYG_TF_FORKED, now);
	if (!t || !old)
		return;
	struct cyg_frame *stk = cyg_tls.stk;
	/* Frames at or below fork()'s caller were abandoned (a longjmp not yet
	 * noticed): the child does not inherit them. */
	uint32_t live = old->depth;
	while (fork_cfa && live > 0 && ostk[live].cfa < fork_cfa)
		live--;
	for (d = 1; d <= live && d + 1 < cyg_max_depth; d++) {
		if (stack_reserve(t, d))
			break;
		stk = cyg_tls.stk;
		struct cyg_node *on = CYG_NODE(cyg_base, ostk[d].node);
		struct cyg_node *p = CYG_NODE(cyg_base, stk[d - 1].node);
		struct cyg_node *c = cyg__new_child(t, p, on->fn, on->site);
		if (!c)
			break;
		stk[d].ts = now;
		stk[d].cfa = ostk[d].cfa;
		stk[d].node = cyg_gid(c);
		stk[d].site = 0;
		t->depth = d;
	}
	t->ovf = live == old->depth ? old->ovf : 0;
}

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
	static int key_made, atfork_made;
	struct stat st;
	void *m;

	if (fstat(fd, &st) < 0 || st.st_size < (off_t)CYG_AREA_OFF)
		return -EBADF;
	m = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED) {
		/* Not silently: this process is not recorded (e.g. it lowered
		 * its own ulimit -v below the mapping's size). */
		char msg[200];
		int e = errno, n = snprintf(msg, sizeof msg,
					    "cygprof: process %d is not recorded: cannot map %llu MiB "
					    "of shared memory (%s); record with a smaller --shm-size\n",
					    (int)getpid(), (unsigned long long)st.st_size >> 20,
					    strerror(e));
		if (n > 0)
			(void)!write(2, msg, (size_t)n < sizeof msg ? (size_t)n : sizeof msg - 1);
		return -ENOMEM;
	}
	struct cyg_ctl *c = m;
	if (c->magic != CYG_SHM_MAGIC || c->version != CYG_SHM_VERSION) {
		munmap(m, (size_t)st.st_size);
		return -EBADF;
	}
	if (!key_made) {
		if (pthread_key_create(&cyg_key, thread_dtor)) {
			munmap(m, (size_t)st.st_size);
			return -EAGAIN;
		}
		key_made = 1;
	}
	cyg_base = m;
	cyg_end = (char *)m + st.st_size;
	cyg_ctl = c;
	cyg_use_tsc = !!(c->flags & CYG_F_TSC);
	cyg_timeline = !!(c->flags & CYG_F_TIMELINE);
	/* a timeline needs times: the collector never asks for both */
	cyg_noclock = !!(c->flags & CYG_F_NOCLOCK) && !cyg_timeline;
	cyg_ring_mask = c->ring_words - 1;
	cyg_max_depth = c->max_depth;
	cyg_proc_off = register_proc(0, cyg_now());
	if (!atfork_made) {
		pthread_atfork(NULL, NULL, atfork_child);
		atfork_made = 1;
	}
	return 0;
}

/* Attach to the collector's mapping: from our constructor, or earlier from
 * the first hook or allocation (a .preinit_array function, another
 * library's constructor).  That early, the environment may not be readable
 * yet: then try again later, until our constructor has run. */
static int attach(void)
{
	const char *s;
	int fd;

	if (cyg_state != 0)
		return cyg_state > 0 ? 0 : -1;
	cyg_state = -2;
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
	mem_start();
	return 0;
}

/* ---- attaching to a running program (cyg-attach.h, docs/attach.md) ----- */


int cygprof_attach_state;

/* Attached again, to a smaller mapping than before: the exit hook reads
 * the node that the top frame of the stack its TLS names before it looks
 * at anything else, a gid of the earlier mapping that may lie past the end
 * of this one.  The earlier collector is done with those writers: their
 * top frame becomes the root, naming the null node. */
static void forget_writers(char *obase, uint64_t oproc)
{
	const struct cyg_ctl *oc = (const struct cyg_ctl *)(void *)obase;
	uint32_t pid = (uint32_t)getpid();

	for (uint64_t off = __atomic_load_n(&oc->threads_off, __ATOMIC_ACQUIRE); off;) {
		struct cyg_thread *t = (struct cyg_thread *)(void *)(obase + off);
		off = t->next;
		if (t->pid != pid || t->proc_off != oproc)
			continue;
		struct cyg_frame *stk = (struct cyg_frame *)(void *)(obase + t->stack_off);
		t->depth = 0;
		stk[0].node = CYG_GID_NULL;
	}
}

int cygprof_attach_fd(int fd)
{
	int saved = errno, prev = __atomic_load_n(&cyg_state, __ATOMIC_SEQ_CST), r;

	if (prev > 0 || prev == -2)
		return -EBUSY;
	if (fd < 0)
		return -EBADF;
	if (!__atomic_compare_exchange_n(&cyg_state, &prev, -2, 0, __ATOMIC_SEQ_CST,
					 __ATOMIC_SEQ_CST))
		return -EBUSY;
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
		shared_reset();
		cyg_gen++;
	}
	char *obase = cyg_base, *oend = cyg_end;
	uint64_t oproc = cyg_proc_off;
	r = map_fd(fd);
	if (r) {
		__atomic_store_n(&cyg_state, prev, __ATOMIC_SEQ_CST);
		errno = saved;
		return r;
	}
	if (prev == CYG_STATE_DETACHED && cyg_end - cyg_base < oend - obase)
		forget_writers(obase, oproc);
	close(fd); /* the mapping holds the memfd; an exec'd image would not use it */
	attached_late = 1;
	__atomic_store_n(&cygprof_attach_state, CYGPROF_ATTACH_ON, __ATOMIC_SEQ_CST);
	__atomic_store_n(&cyg_state, 1, __ATOMIC_SEQ_CST);
	mem_start();
	errno = saved;
	return 0;
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
	off = area_alloc((uint64_t)n * sizeof(uint64_t));
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

/* Writer t's first hook: the frames seeded for its tid go on its shadow
 * stack, as calls entered now from an unknown site.  Their stack position
 * is unknown: above every later frame (UINT64_MAX, as the root's), so no
 * later call takes them for abandoned; their exits find them by function. */
static void seed_push(struct cyg_thread *t, uint64_t now)
{
	uint32_t n = __atomic_load_n(&nseeds, __ATOMIC_ACQUIRE), i, k, d;
	struct seed *s = NULL;

	for (i = 0; i < n; i++) {
		uint32_t cur = t->tid;
		if (__atomic_load_n(&seeds[i].tid, __ATOMIC_ACQUIRE) == cur &&
		    __atomic_compare_exchange_n(&seeds[i].tid, &cur, SEED_TAKEN, 0,
						__ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
			s = &seeds[i];
			break;
		}
	}
	if (!s)
		return;
	const uint64_t *fns = AT(s->off);
	n = s->n;
	__atomic_store_n(&s->tid, 0, __ATOMIC_RELEASE);
	t->busy = 1;
	for (k = 0; k < n; k++) {
		d = t->depth;
		if (d + 1 >= t->lim && (stack_reserve(t, d + 1) || d + 1 >= t->lim))
			break;
		struct cyg_frame *stk = cyg_stk(t);
		struct cyg_node *p = CYG_NODE(cyg_base, stk[d].node);
		struct cyg_node *c = kid_find(t, stk[d].node, fns[k]);
		if (!c)
			c = cyg__new_child(t, p, fns[k], 0);
		if (!c)
			break;
		c->calls++;
		d++;
		stk[d].ts = now;
		stk[d].cfa = UINT64_MAX;
		stk[d].node = cyg_gid(c);
		stk[d].site = 0;
		t->depth = d;
		if (cyg_timeline)
			cyg_ring_put_w(t, cyg_ringbuf(t), CYG_EV_ENTER, stk[d].node, now);
	}
	t->busy = 0;
}

int cygprof_detach(void)
{
	int saved = errno, cur = 1;
	uint32_t pid = (uint32_t)getpid();
	uint64_t now, off;

	if (!__atomic_compare_exchange_n(&cyg_state, &cur, CYG_STATE_DETACHED, 0,
					 __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
		return -EINVAL;
	/* From here on every cold path of the hooks returns at once, and no
	 * thread gets a writer; the writers that exist are diverted there. */
	__atomic_store_n(&cygprof_attach_state, CYGPROF_ATTACH_DETACHED, __ATOMIC_SEQ_CST);
	now = cyg_now();
	for (off = __atomic_load_n(&cyg_ctl->threads_off, __ATOMIC_ACQUIRE); off;) {
		struct cyg_thread *t = AT(off);
		off = t->next;
		if (t->pid != pid || t->proc_off != cyg_proc_off)
			continue; /* another process's (a child forked meanwhile) */
		/* Sends every later hook to a cold path (enter and exit),
		 * which returns; never cleared.  After an attach again the
		 * cold path gives the thread a new writer instead. */
		t->ovf = UINT32_MAX / 2;
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
	errno = saved;
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
	attach();
	cyg_tls.guard = guard;
	errno = saved;
}

__attribute__((constructor(101))) static void cyg_init(void)
{
	int saved = errno;
	ctor_done = 1;
	attach();
	errno = saved;
}

/* ---- wrappers: where frames are left, and how processes end ------------- */

struct __jmp_buf_tag;
typedef void (*jmp_fn)(struct __jmp_buf_tag *, int) __attribute__((noreturn));
typedef void (*exit_fn)(int) __attribute__((noreturn));

static void *next_sym(const char *name)
{
	return dlsym(RTLD_NEXT, name);
}

static inline void mark_leave(void)
{
	struct cyg_thread *t = cyg_tls.t;
	uint64_t now = t ? cyg_now() : 0;

	/* The jump may leave signal handlers: then the writers they
	 * interrupted lose frames too, and their hooks never finish. */
	for (; t; t = host_of(t)) {
		t->leave_ts = now;
		t->busy = 0;
	}
}

#define JMP_WRAPPER(name)                                                                          \
	EXPORT __attribute__((noreturn)) void name(struct __jmp_buf_tag *env, int val);           \
	void name(struct __jmp_buf_tag *env, int val)                                              \
	{                                                                                          \
		static jmp_fn real;                                                                \
		mark_leave();                                                                      \
		if (!real)                                                                         \
			real = (jmp_fn)next_sym(#name);                                            \
		real(env, val);                                                                    \
	}

JMP_WRAPPER(longjmp)
JMP_WRAPPER(_longjmp)
JMP_WRAPPER(siglongjmp)
JMP_WRAPPER(__longjmp_chk)

EXPORT __attribute__((noreturn)) void exit(int status);
void exit(int status)
{
	static exit_fn real;
	mark_leave();
	if (cyg_state > 0 && cyg_proc_off) {
		struct cyg_proc *p = AT(cyg_proc_off);
		p->code = status & 0xff;
		p->exit_called = 1;
	}
	if (!real)
		real = (exit_fn)next_sym("exit");
	real(status);
}

EXPORT __attribute__((noreturn)) void _exit(int status);
void _exit(int status)
{
	static exit_fn real;
	if (cyg_state > 0 && cyg_proc_off) {
		struct cyg_proc *p = AT(cyg_proc_off);
		p->code = status & 0xff;
		p->exit_called = 1;
		p->end_ts = cyg_now();
		wait_primed();
	}
	if (!real)
		real = (exit_fn)next_sym("_exit");
	real(status);
}

/* A parent reaped a child: that is the only place its exit status shows. */
static void note_reaped(pid_t pid, int status)
{
	struct cyg_proc *p;

	if (cyg_state <= 0 || pid <= 0 || lock())
		return;
	p = find_proc((uint32_t)pid);
	if (p && (p->state == CYG_P_RUNNING || p->state == CYG_P_GONE)) {
		if (WIFEXITED(status)) {
			p->code = WEXITSTATUS(status);
			p->state = CYG_P_EXIT;
		} else if (WIFSIGNALED(status)) {
			p->code = WTERMSIG(status);
			p->state = CYG_P_SIGNAL;
		}
		if (!p->end_ts)
			p->end_ts = cyg_now();
	}
	unlock();
}

EXPORT pid_t waitpid(pid_t pid, int *wstatus, int options);
pid_t waitpid(pid_t pid, int *wstatus, int options)
{
	static pid_t (*real)(pid_t, int *, int);
	int st = 0;
	pid_t r;

	if (!real)
		real = (pid_t(*)(pid_t, int *, int))next_sym("waitpid");
	r = real(pid, &st, options);
	if (r > 0 && (WIFEXITED(st) || WIFSIGNALED(st)))
		note_reaped(r, st);
	if (r > 0 && wstatus)
		*wstatus = st;
	return r;
}

EXPORT pid_t wait(int *wstatus);
pid_t wait(int *wstatus)
{
	return waitpid(-1, wstatus, 0);
}

EXPORT pid_t wait4(pid_t pid, int *wstatus, int options, struct rusage *ru);
pid_t wait4(pid_t pid, int *wstatus, int options, struct rusage *ru)
{
	static pid_t (*real)(pid_t, int *, int, struct rusage *);
	int st = 0;
	pid_t r;

	if (!real)
		real = (pid_t(*)(pid_t, int *, int, struct rusage *))next_sym("wait4");
	r = real(pid, &st, options, ru);
	if (r > 0 && (WIFEXITED(st) || WIFSIGNALED(st)))
		note_reaped(r, st);
	if (r > 0 && wstatus)
		*wstatus = st;
	return r;
}

/* fork: remember where the caller's frame is, for the child's copy. */
EXPORT pid_t fork(void);
pid_t fork(void)
{
	static pid_t (*real)(void);
	pid_t r;

	if (!real)
		real = (pid_t(*)(void))next_sym("fork");
	fork_cfa = CYG_CFA();
	r = real();
	fork_cfa = 0;
	return r;
}

/* ---- clone(): children that pthread_create and fork do not make ---------- */

/* What the child needs to start: passed through a slot (a CLONE_VM child
 * may start after the wrapper returned, so not on the wrapper's stack). */
struct clone_start {
	int (*fn)(void *);
	void *arg;
	int flags;
	int used;
	uint64_t proc_off; /* the process image of the caller */
};
static struct clone_start clone_slots[64];

static struct clone_start *clone_slot(void)
{
	for (unsigned i = 0; i < sizeof clone_slots / sizeof clone_slots[0]; i++)
		if (!__atomic_exchange_n(&clone_slots[i].used, 1, __ATOMIC_ACQUIRE))
			return &clone_slots[i];
	return NULL;
}

/* The child's first code, before the caller's function: give it a writer
 * of its own.  Never instrumented (NOINSTR), touches no TLS but cyg_tls. */
static int clone_start(void *p)
{
	struct clone_start *cs = p;
	int (*fn)(void *) = cs->fn;
	void *arg = cs->arg;
	int flags = cs->flags;
	uint64_t proc_off = cs->proc_off;
	uint64_t now = cyg_now();
	struct cyg_thread *t = NULL;

	if (flags & CLONE_VM)
		__atomic_store_n(&cs->used, 0, __ATOMIC_RELEASE); /* shared: give it back */
	if (!(flags & CLONE_THREAD)) {
		/* a process of its own */
		uint64_t off = register_proc(proc_off, now);
		if (off)
			proc_off = off;
		if (!(flags & CLONE_VM)) {
			cyg_proc_off = proc_off; /* its own copy of everything */
			shared_reset();
		}
	}
	if (!(flags & CLONE_VM) || (flags & CLONE_SETTLS)) {
		/* TLS of its own: a copy of the caller's, or whatever the
		 * caller made; its writer is made at its first hook. */
		memset(&cyg_tls, 0, sizeof cyg_tls);
		t = thread_alloc(CYG_TF_CLONED | (flags & CLONE_THREAD ? 0 : CYG_TF_FORKED), now,
				 proc_off);
		if (t)
			tls_use(t);
	} else {
		/* TLS shared with the caller (which went shared in the wrapper) */
		t = thread_alloc(CYG_TF_CLONED | (flags & CLONE_THREAD ? 0 : CYG_TF_FORKED), now,
				 proc_off);
		shared_add((uint32_t)syscall(SYS_gettid), t ? OFF(t) : 0, proc_off,
			   CYG_TF_CLONED);
	}
	int r = fn(arg);
	/* The child ends when this returns: close its writer now. */
	if (t) {
		uint64_t end = cyg_now();
		writer_end(t, end);
		if (!(flags & CLONE_THREAD)) {
			struct cyg_proc *pr = AT(proc_off);
			pr->end_ts = end;
		}
	}
	if ((flags & CLONE_VM) && !(flags & CLONE_SETTLS))
		shared_del((uint32_t)syscall(SYS_gettid)); /* its tid may be reused */
	else
		cyg_tls.t = NULL; /* its own TLS: nothing more to record */
	return r;
}

EXPORT int clone(int (*fn)(void *), void *stack, int flags, void *arg, ...);
int clone(int (*fn)(void *), void *stack, int flags, void *arg, ...)
{
	static int (*real)(int (*)(void *), void *, int, void *, ...);
	struct clone_start *cs = NULL;
	struct cyg_thread *t = cyg_tls.t;
	va_list ap;
	pid_t *ptid;
	void *tls;
	pid_t *ctid;
	int shared_now = 0, r;

	va_start(ap, arg);
	ptid = va_arg(ap, pid_t *);
	tls = va_arg(ap, void *);
	ctid = va_arg(ap, pid_t *);
	va_end(ap);
	if (!real)
		real = (int (*)(int (*)(void *), void *, int, void *, ...))next_sym("clone");
	if (cyg_state > 0 && fn)
		cs = clone_slot();
	if (!cs)
		return real(fn, stack, flags, arg, ptid, tls, ctid);
	cs->fn = fn;
	cs->arg = arg;
	cs->flags = flags;
	cs->proc_off = cyg_proc_off;
	if ((flags & CLONE_VM) && !(flags & CLONE_SETTLS) && !t && !shared_writer(0))
		t = cyg__thread_init(); /* this thread's writer, before it is shared */
	if ((flags & CLONE_VM) && !(flags & CLONE_SETTLS) && t) {
		/* The child will run on this thread's TLS: from now on both
		 * find their writers by tid. */
		shared_add((uint32_t)syscall(SYS_gettid), OFF(t), t->proc_off, t->flags);
		cyg_tls.t = NULL;
		cyg_tls.stk = NULL;
		cyg_tls.ring = NULL;
		shared_now = 1;
	}
	r = real(clone_start, stack, flags, cs, ptid, tls, ctid);
	if (!(flags & CLONE_VM) || r < 0)
		__atomic_store_n(&cs->used, 0, __ATOMIC_RELEASE);
	if (shared_now && ((flags & CLONE_VFORK) || r < 0)) {
		/* The child has exec'd or exited (or never ran): the TLS is
		 * this thread's alone again. */
		shared_del((uint32_t)syscall(SYS_gettid));
		tls_use(t);
	}
	return r;
}

/* dlopen: new code appears; keep the maps the collector decodes with current. */
EXPORT void *dlopen(const char *file, int mode);
void *dlopen(const char *file, int mode)
{
	static void *(*real)(const char *, int);
	void *h;

	if (!real)
		real = (void *(*)(const char *, int))next_sym("dlopen");
	h = real(file, mode);
	if (h && cyg_state > 0 && cyg_proc_off) {
		int saved = errno;
		snapshot_maps(AT(cyg_proc_off));
		if (cyg_memory && cyg_callbacks->objs_changed)
			cyg_callbacks->objs_changed();
		errno = saved;
	}
	return h;
}

/* ---- the memdump API's table ------------------------------------------- */

/* This process image's struct cyg_memdump in the mapping, for
 * libcygprof-memdump (which finds this function with dlsym): allocated on
 * the first call of each image (a forked child registers an image of its
 * own, so it gets a new, empty table; the library copies its figures
 * over), published in cyg_proc.memdump_off with a release store.  NULL
 * when the mapping does not ask for it (no CYG_F_MEMDUMP), is absent or
 * full.  Lock-free: two threads asking at once may both allocate, one
 * table wins the compare-and-swap and both return it. */
EXPORT struct cyg_memdump *cyg__memdump_table(void);
struct cyg_memdump *cyg__memdump_table(void)
{
	int saved = errno;
	struct cyg_memdump *md = NULL;
	struct cyg_proc *p;
	uint64_t off, cur = 0;

	if (cyg_state == 0)
		cyg__attach_early();
	if (cyg_state <= 0 || !cyg_proc_off || !(cyg_ctl->flags & CYG_F_MEMDUMP))
		goto out;
	p = AT(cyg_proc_off);
	off = __atomic_load_n(&p->memdump_off, __ATOMIC_ACQUIRE);
	if (!off) {
		uint64_t mine = area_alloc(sizeof *md);
		if (!mine)
			goto out;
		md = AT(mine); /* fresh pages of the sparse mapping are zero */
		md->nslots = CYG_MEMDUMP_SLOTS;
		md->interval_ms = cyg_ctl->memdump_ms ? cyg_ctl->memdump_ms
						      : CYG_MEMDUMP_DEFAULT_MS;
		if (__atomic_compare_exchange_n(&p->memdump_off, &cur, mine, 0,
						__ATOMIC_RELEASE, __ATOMIC_ACQUIRE))
			off = mine;
		else
			off = cur; /* another thread's table won; ours stays unused */
	}
	md = AT(off);
out:
	errno = saved;
	return md;
}
