/* SPDX-License-Identifier: MIT */
/* preload-private.h - malloc tracing inside the traced program (libcygprof-mem.so).
 *
 * Every allocation and free becomes a record in the calling thread's ring:
 * no lock, no allocation of our own (the runtime takes its memory from the
 * shared mapping), the real allocator called through pointers resolved with
 * dlsym(RTLD_NEXT).  Links only libc, libdl, pthread and libunwind. */
#ifndef CYGPROF_PRELOAD_PRIVATE_H
#define CYGPROF_PRELOAD_PRIVATE_H

#include <stddef.h>
#include <stdint.h>

#include "cyg-private.h"
#include "cygprof/cygprof-capture.h" /* enum cygprof_mem_fn (values only) */

struct real_alloc {
	void *(*malloc)(size_t);
	void *(*calloc)(size_t, size_t);
	void *(*realloc)(void *, size_t);
	void *(*reallocarray)(void *, size_t, size_t);
	void (*free)(void *);
	int (*posix_memalign)(void **, size_t, size_t);
	void *(*aligned_alloc)(size_t, size_t);
	void *(*memalign)(size_t, size_t);
	void *(*valloc)(size_t);
	void *(*pvalloc)(size_t);
};

extern struct real_alloc cyg_real HIDDEN;

/* Resolve the real allocator (idempotent). */
HIDDEN void cyg__mem_resolve(void);

/* The time of a memory event, ordered against the allocator's own memory
 * operations (they synchronise between threads): a free is stamped before
 * the real free starts and after every earlier load completed, the load
 * that received the pointer from another thread included (rdtscp, then
 * lfence); an allocation after the real one completed (lfence, rdtsc). */
NOINSTR static inline uint64_t cyg_free_now(void)
{
#if defined(__x86_64__) || defined(__i386__)
	if (LIKELY(cyg_use_tsc)) {
		unsigned aux;
		uint64_t t = __rdtscp(&aux); /* waits for every earlier load */
		__builtin_ia32_lfence();
		return t;
	}
#endif
	return cyg__mono();
}

NOINSTR static inline uint64_t cyg_alloc_now(void)
{
#if defined(__x86_64__) || defined(__i386__)
	if (LIKELY(cyg_use_tsc)) {
		__builtin_ia32_lfence();
		return __rdtsc();
	}
#endif
	return cyg__mono();
}

/* Record an allocation of `size` bytes at p (ra: return address into the
 * code that called the allocator), or a free of p stamped at `ts`. */
HIDDEN void cyg__mem_alloc(unsigned fn, void *p, size_t size, void *ra);
HIDDEN void cyg__mem_free(unsigned fn, void *p, uint64_t ts);
/* Whether a free of p at this moment should be recorded (p non-NULL,
 * tracing on, not inside the runtime). */
static inline int cyg_mem_tracing(void)
{
	if (UNLIKELY(!cyg_memory) && cyg_state == 0 && !cyg_tls.guard)
		cyg__attach_early();
	return cyg_memory && !cyg_tls.guard;
}

/* Unwinding (preload-stack.c): fill the stack word(s) for the current call
 * stack, defining it in the ring first if this thread has not yet. */
HIDDEN uint64_t cyg__stack_id(struct cyg_thread *t);
/* The return addresses between instrumented code (fn's object) and the
 * allocator, innermost first: just ra when the call came straight from
 * that object, else the library frames found by unwinding. */
HIDDEN unsigned cyg__lib_frames(uint64_t fn, uint64_t ra, uint64_t *out, unsigned max);
HIDDEN void cyg__stack_attach(void);

#endif
