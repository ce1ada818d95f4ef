/* SPDX-License-Identifier: MIT */
/* preload-malloc.c - the C allocator's entry points, traced.
 *
 * Each wrapper calls the real function, then records the event in the
 * calling thread's ring (preload-private.h).  While dlsym() looks the real
 * functions up it may itself allocate: those requests are served from a
 * small static arena that free() and realloc() recognise.  Anything the
 * runtime does itself (thread set-up, unwinding) runs with cyg_tls.guard
 * set, so allocations made there are passed through untraced. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "preload-private.h"

/* Not declared by <stdlib.h> under _GNU_SOURCE in every libc. */
EXPORT void *memalign(size_t align, size_t n);
EXPORT void *pvalloc(size_t n);

struct real_alloc cyg_real;

static int resolving;
static _Alignas(64) char arena[64 * 1024];
static size_t arena_used;

static void *arena_alloc(size_t n)
{
	n = (n + 15) & ~(size_t)15;
	if (n > sizeof arena - arena_used)
		return NULL;
	void *p = arena + arena_used;
	arena_used += n;
	return p; /* static storage: already zero */
}

static int in_arena(const void *p)
{
	return (const char *)p >= arena && (const char *)p < arena + sizeof arena;
}

void cyg__mem_resolve(void)
{
	if (cyg_real.free)
		return;
	resolving = 1;
	cyg_real.calloc = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, "calloc");
	cyg_real.malloc = (void *(*)(size_t))dlsym(RTLD_NEXT, "malloc");
	cyg_real.realloc = (void *(*)(void *, size_t))dlsym(RTLD_NEXT, "realloc");
	cyg_real.reallocarray =
		(void *(*)(void *, size_t, size_t))dlsym(RTLD_NEXT, "reallocarray");
	cyg_real.posix_memalign =
		(int (*)(void **, size_t, size_t))dlsym(RTLD_NEXT, "posix_memalign");
	cyg_real.aligned_alloc = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, "aligned_alloc");
	cyg_real.memalign = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, "memalign");
	cyg_real.valloc = (void *(*)(size_t))dlsym(RTLD_NEXT, "valloc");
	cyg_real.pvalloc = (void *(*)(size_t))dlsym(RTLD_NEXT, "pvalloc");
	__atomic_store_n(&cyg_real.free, (void (*)(void *))dlsym(RTLD_NEXT, "free"),
			 __ATOMIC_RELEASE);
	resolving = 0;
}

/* Called by the runtime once the mapping is attached and asks for memory
 * tracing (through the callbacks registered below). */
static void mem_attach(void)
{
	cyg__mem_resolve();
	cyg__stack_attach();
}

static const struct cyg_callbacks mem_callbacks = {
	.mem_attach = mem_attach,
	.objs_changed = cyg__objs_refresh,
};

void cyg__mem_early(void)
{
	cyg__register(&mem_callbacks);
	if (cyg_state == 0)
		cyg__attach_early();
}

/* At load: the real allocator, and our callbacks with the runtime. */
__attribute__((constructor(101))) static void preload_init(void)
{
	int saved = errno;
	cyg__mem_resolve();
	cyg__register(&mem_callbacks);
	errno = saved;
}

/* ---- recording ---------------------------------------------------------- */

static struct cyg_thread *mem_thread(void)
{
	struct cyg_thread *t = cyg_tls.t;

	if (LIKELY(t))
		return t;
	cyg_tls.guard = 1; /* setting a thread up must not trace itself */
	t = cyg__thread_init();
	cyg_tls.guard = 0;
	return t;
}

void cyg__mem_alloc(unsigned fn, void *p, size_t size, void *ra)
{
	uint64_t now = cyg_alloc_now();
	struct cyg_thread *t = mem_thread();
	uint64_t w[4 + 16];
	unsigned n;

	unsigned sig = 0;

	if (!t)
		return;
	if (UNLIKELY(t->busy)) {
		/* a signal handler interrupted a hook: its own writer */
		t = cyg__sig_enter(t, &sig);
		if (!t)
			return;
	}
	t->busy = 1;
	uint32_t d = t->depth;
	w[1] = (uint64_t)(uintptr_t)p;
	w[2] = size;
	/* depth, stack and node are the mapping's: checked before use (the
	 * program may have written them; cyg-private.h) */
	if (d > 0 && !t->ovf && d < t->stack_cap &&
	    cyg_span_ok(t->stack_off, ((uint64_t)d + 1) * sizeof(struct cyg_frame))) {
		/* Instrumented code: the call path is the shadow stack's node;
		 * no unwinding.  The return address says where in (or below)
		 * that function the allocator was called. */
		w[3] = cyg_stk(t)[d].node;
		unsigned nra = cyg__lib_frames(cyg_node_at((uint32_t)w[3])->fn,
					       (uint64_t)(uintptr_t)ra, &w[4], 16);
		w[0] = cyg_x_make(CYG_X_ALLOC, cyg_x_mem(fn, 1, 0) | cyg_x_mem_nra(nra));
		n = 4 + nra;
	} else {
		w[0] = cyg_x_make(CYG_X_ALLOC, cyg_x_mem(fn, 0, 0));
		w[3] = cyg__stack_id(t);
		n = 4;
	}
	cyg__ring_write(t, w, n, now);
	t->mem_events++;
	t->busy = 0;
	if (UNLIKELY(sig))
		cyg__sig_leave(sig);
}

void cyg__mem_free(unsigned fn, void *p, uint64_t ts)
{
	struct cyg_thread *t = mem_thread();
	uint64_t w[2];

	unsigned sig = 0;

	if (!t)
		return;
	if (UNLIKELY(t->busy)) {
		t = cyg__sig_enter(t, &sig);
		if (!t)
			return;
	}
	t->busy = 1;
	w[0] = cyg_x_make(CYG_X_FREE, cyg_x_mem(fn, 0, 0));
	w[1] = (uint64_t)(uintptr_t)p;
	cyg__ring_write(t, w, 2, ts);
	t->mem_events++;
	t->busy = 0;
	if (UNLIKELY(sig))
		cyg__sig_leave(sig);
}

#define RA() __builtin_return_address(0)

/* ---- the entry points ---------------------------------------------------- */

EXPORT void *malloc(size_t n)
{
	if (UNLIKELY(!cyg_real.malloc)) {
		if (resolving)
			return arena_alloc(n);
		cyg__mem_resolve();
	}
	void *p = cyg_real.malloc(n);
	if (p && cyg_mem_tracing())
		cyg__mem_alloc(CYGPROF_FN_MALLOC, p, n, RA());
	return p;
}

EXPORT void *calloc(size_t n, size_t size)
{
	if (UNLIKELY(!cyg_real.calloc)) {
		if (resolving) {
			size_t total;
			if (__builtin_mul_overflow(n, size, &total))
				return NULL;
			return arena_alloc(total);
		}
		cyg__mem_resolve();
	}
	void *p = cyg_real.calloc(n, size);
	if (p && cyg_mem_tracing())
		cyg__mem_alloc(CYGPROF_FN_CALLOC, p, n * size, RA());
	return p;
}

EXPORT void free(void *p)
{
	if (!p || in_arena(p))
		return;
	if (UNLIKELY(!cyg_real.free))
		cyg__mem_resolve();
	if (cyg_mem_tracing())
		cyg__mem_free(CYGPROF_FN_FREE, p, cyg_free_now());
	cyg_real.free(p);
}

/* realloc is a free of the old block and an allocation of the new one. */
static void *do_realloc(unsigned fn, void *old, size_t n, void *(*real)(void *, size_t),
			void *ra)
{
	if (in_arena(old)) { /* a bootstrap block moves to the real heap */
		void *p = malloc(n);
		size_t room = (size_t)(arena + sizeof arena - (char *)old);
		if (p)
			memcpy(p, old, n < room ? n : room);
		return p;
	}
	int tracing = cyg_mem_tracing();
	uint64_t ts = tracing && old ? cyg_free_now() : 0;
	void *p = real(old, n);
	if (tracing) {
		if (old && (p || n == 0))
			cyg__mem_free(fn, old, ts);
		if (p)
			cyg__mem_alloc(fn, p, n, ra);
	}
	return p;
}

EXPORT void *realloc(void *old, size_t n)
{
	if (UNLIKELY(!cyg_real.realloc)) {
		if (resolving)
			return NULL;
		cyg__mem_resolve();
	}
	return do_realloc(CYGPROF_FN_REALLOC, old, n, cyg_real.realloc, RA());
}

EXPORT void *reallocarray(void *old, size_t n, size_t size)
{
	size_t total;

	if (UNLIKELY(!cyg_real.realloc))
		cyg__mem_resolve();
	if (__builtin_mul_overflow(n, size, &total)) {
		errno = ENOMEM;
		return NULL;
	}
	return do_realloc(CYGPROF_FN_REALLOCARRAY, old, total, cyg_real.realloc, RA());
}

EXPORT int posix_memalign(void **out, size_t align, size_t n)
{
	if (UNLIKELY(!cyg_real.posix_memalign))
		cyg__mem_resolve();
	int r = cyg_real.posix_memalign(out, align, n);
	if (r == 0 && cyg_mem_tracing())
		cyg__mem_alloc(CYGPROF_FN_POSIX_MEMALIGN, *out, n, RA());
	return r;
}

EXPORT void *aligned_alloc(size_t align, size_t n)
{
	if (UNLIKELY(!cyg_real.aligned_alloc))
		cyg__mem_resolve();
	void *p = cyg_real.aligned_alloc(align, n);
	if (p && cyg_mem_tracing())
		cyg__mem_alloc(CYGPROF_FN_ALIGNED_ALLOC, p, n, RA());
	return p;
}

EXPORT void *memalign(size_t align, size_t n)
{
	if (UNLIKELY(!cyg_real.memalign))
		cyg__mem_resolve();
	void *p = cyg_real.memalign(align, n);
	if (p && cyg_mem_tracing())
		cyg__mem_alloc(CYGPROF_FN_MEMALIGN, p, n, RA());
	return p;
}

EXPORT void *valloc(size_t n)
{
	if (UNLIKELY(!cyg_real.valloc))
		cyg__mem_resolve();
	void *p = cyg_real.valloc(n);
	if (p && cyg_mem_tracing())
		cyg__mem_alloc(CYGPROF_FN_VALLOC, p, n, RA());
	return p;
}

EXPORT void *pvalloc(size_t n)
{
	if (UNLIKELY(!cyg_real.pvalloc))
		cyg__mem_resolve();
	void *p = cyg_real.pvalloc(n);
	if (p && cyg_mem_tracing())
		cyg__mem_alloc(CYGPROF_FN_PVALLOC, p, n, RA());
	return p;
}
