/* SPDX-License-Identifier: MIT */
/* preload-stack.c - stacks of allocations in code without instrumentation.
 *
 * libunwind's unw_backtrace (its fast path caches per-IP frame info per
 * thread) gives the return addresses; they are hashed (FNV-1a) into a
 * 64-bit stack id.  The frames travel to the collector only the first time
 * a thread uses a hash: a STACK record in its ring defines it, and a
 * per-thread table in the shared mapping remembers what was defined. */
#define _GNU_SOURCE
#define UNW_LOCAL_ONLY
#include <link.h>
#include <libunwind.h>
#include <string.h>

#include "preload-private.h"

#define MAX_FRAMES 64

static uintptr_t self_lo, self_hi; /* this library's code: frames to skip */

static int find_self(struct dl_phdr_info *info, size_t size, void *data)
{
	uintptr_t me = (uintptr_t)data;
	int i;

	(void)size;
	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
		if (me >= lo && me < hi) {
			self_lo = lo;
			self_hi = hi;
			return 1;
		}
	}
	return 0;
}

/* The code ranges of the loaded objects, to tell whether the allocator
 * was called from the instrumented function's own object or from a library
 * (rebuilt after dlopen into the other of two buffers). */
#define MAX_OBJS 256
struct objrange {
	uintptr_t lo, hi;
	int obj;
};
static struct objrange obj_buf[2][MAX_OBJS];
static struct objrange *obj_v = obj_buf[0];
static int obj_n, obj_cur;
static int obj_gen; /* bumped by cyg__objs_refresh: per-thread caches start over */
struct objscan {
	struct objrange *v;
	int n, idx;
};

static int scan_obj(struct dl_phdr_info *info, size_t size, void *data)
{
	struct objscan *s = data;
	int i;

	(void)size;
	for (i = 0; i < info->dlpi_phnum && s->n < MAX_OBJS; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		s->v[s->n].lo = info->dlpi_addr + ph->p_vaddr;
		s->v[s->n].hi = s->v[s->n].lo + ph->p_memsz;
		s->v[s->n].obj = s->idx;
		s->n++;
	}
	s->idx++;
	return 0;
}

void cyg__objs_refresh(void)
{
	int guard = cyg_tls.guard, next = !obj_cur;
	struct objscan s = {obj_buf[next], 0, 0};

	cyg_tls.guard = 1;
	dl_iterate_phdr(scan_obj, &s);
	cyg_tls.guard = guard;
	obj_cur = next;
	__atomic_store_n(&obj_n, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&obj_v, s.v, __ATOMIC_RELEASE);
	__atomic_store_n(&obj_n, s.n, __ATOMIC_RELEASE);
	__atomic_add_fetch(&obj_gen, 1, __ATOMIC_RELAXED);
}

static int obj_scan(uintptr_t ip)
{
	int n = __atomic_load_n(&obj_n, __ATOMIC_ACQUIRE), i;
	const struct objrange *v = __atomic_load_n(&obj_v, __ATOMIC_ACQUIRE);

	for (i = 0; i < n; i++)
		if (ip >= v[i].lo && ip < v[i].hi)
			return v[i].obj;
	return -1;
}

/* A per-thread cache of code addresses' objects (objects do not move). */
static __thread struct {
	uintptr_t ip;
	int obj;
} obj_cache[64] TLS_IE;
static __thread int obj_cache_gen TLS_IE;

static int obj_of(uintptr_t ip)
{
	size_t j = (ip >> 4 ^ ip >> 10) & 63;

	if (UNLIKELY(obj_cache_gen != __atomic_load_n(&obj_gen, __ATOMIC_RELAXED))) {
		memset(obj_cache, 0, sizeof obj_cache);
		obj_cache_gen = obj_gen;
	}
	if (LIKELY(obj_cache[j].ip == ip))
		return obj_cache[j].obj;
	obj_cache[j].obj = obj_scan(ip);
	obj_cache[j].ip = ip;
	return obj_cache[j].obj;
}

void cyg__stack_attach(void)
{
	int guard = cyg_tls.guard;

	cyg_tls.guard = 1;
	unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
	dl_iterate_phdr(find_self, (void *)(uintptr_t)&cyg__stack_attach);
	cyg_tls.guard = guard;
	cyg__objs_refresh();
}

unsigned cyg__lib_frames(uint64_t fn, uint64_t ra, uint64_t *out, unsigned max)
{
	int home = obj_of((uintptr_t)fn);
	void *frames[32];
	int n, s;
	unsigned k = 0;

	if (obj_of((uintptr_t)ra) == home) {
		out[0] = ra; /* called straight from instrumented code: no unwinding */
		return 1;
	}
	/* A library called the allocator: keep its frames, up to and with the
	 * first frame back in the instrumented code's object. */
	cyg_tls.guard = 1;
	n = unw_backtrace(frames, 32);
	cyg_tls.guard = 0;
	for (s = 0; s < n && (uintptr_t)frames[s] >= self_lo && (uintptr_t)frames[s] < self_hi; s++)
		;
	for (; s < n && k < max && frames[s]; s++) {
		out[k++] = (uint64_t)(uintptr_t)frames[s];
		if (obj_of((uintptr_t)frames[s]) == home)
			break; /* the call from instrumented code: its line */
	}
	if (!k)
		out[k++] = ra;
	return k;
}

uint64_t cyg__stack_id(struct cyg_thread *t)
{
	void *frames[MAX_FRAMES];
	uint64_t w[MAX_FRAMES + 2];
	int n, s, i;

	cyg_tls.guard = 1; /* the unwinder may allocate */
	n = unw_backtrace(frames, MAX_FRAMES);
	cyg_tls.guard = 0;
	for (s = 0; s < n && (uintptr_t)frames[s] >= self_lo && (uintptr_t)frames[s] < self_hi; s++)
		;
	while (n > s && !frames[n - 1])
		n--;

	uint64_t h = 14695981039346656037ULL;
	for (i = s; i < n; i++) {
		h ^= (uint64_t)(uintptr_t)frames[i];
		h *= 1099511628211ULL;
	}
	h ^= (uint64_t)(n - s);
	if (!h)
		h = 1;

	/* Defined by this thread already?  (Open addressing, a few probes.) */
	uint64_t *seen = (uint64_t *)(cyg_base + t->seen_off);
	size_t slot = (size_t)(h * 0x9E3779B97F4A7C15ULL >> 50) & (CYG_SEEN_SLOTS - 1);
	/* the table's offset is the mapping's: out of the window, every
	 * stack is defined again (the collector takes a definition twice) */
	int ok = t->seen_off && cyg_span_ok(t->seen_off, CYG_SEEN_SLOTS * 8);
	for (i = 0; ok && i < 8; i++) {
		size_t j = (slot + (size_t)i) & (CYG_SEEN_SLOTS - 1);
		if (seen[j] == h)
			return h;
		if (!seen[j]) {
			seen[j] = h;
			break;
		}
	}
	/* New (or the table is crowded there): define it in the ring first. */
	w[0] = cyg_x_make(CYG_X_STACK, (uint64_t)(n - s));
	w[1] = h;
	for (i = s; i < n; i++)
		w[2 + i - s] = (uint64_t)(uintptr_t)frames[i];
	cyg__ring_write(t, w, (unsigned)(n - s + 2), 0);
	return h;
}
