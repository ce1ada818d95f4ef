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
 * operations (they synchronise between threads).  rdtscp reads the clock
 * only once every earlier instruction has executed and every earlier load
 * is globally visible, and before any later store can be: a free is stamped
 * after the load that received the pointer (perhaps from another thread)
 * and before the real free publishes the block for reuse; an allocation
 * after the real call took the block (its locked operations done).
 *
 * That order matters only between threads.  While the caller is the only
 * writer the runtime has registered, no other thread can have handed it
 * the pointer or the block: program order is all there is, and a plain
 * rdtsc (a stamp a few instructions early is a small step back, which the
 * collector takes as no time passed) does.  rdtscp waited for the real
 * allocator's work to retire: a fifth of a malloc/free loop's run (bench/,
 * memloop).  A second thread's registration (a locked add) comes before
 * anything it hands over, and the count is read after the load that
 * received it (x86 keeps loads in order): the thread that receives it
 * sees the count and takes rdtscp.  An unregistered caller (its first
 * event) takes rdtscp too.  The count is the mapping's: a program that
 * writes it changes only how its stamps are ordered. */
NOINSTR static inline uint64_t cyg_mem_stamp(void)
{
#if defined(__x86_64__) || defined(__i386__)
	if (LIKELY(cyg_use_tsc)) {
		unsigned aux;

		if (LIKELY(cyg_tls.t) &&
		    __atomic_load_n(&cyg_ctl->nthreads, __ATOMIC_RELAXED) <= 1)
			return __rdtsc();
		return __rdtscp(&aux);
	}
#endif
	return cyg__mono();
}
#define cyg_free_now cyg_mem_stamp
#define cyg_alloc_now cyg_mem_stamp

/* Record an allocation of `size` bytes at p (ra: return address into the
 * code that called the allocator), or a free of p stamped at `ts`; fn is
 * the allocator function, CYGPROF_FN_* (cygprof-capture.h). */
HIDDEN void cyg__mem_alloc(unsigned fn, void *p, size_t size, void *ra);
HIDDEN void cyg__mem_free(unsigned fn, void *p, uint64_t ts);
/* An allocation before our constructor ran (in an earlier constructor):
 * register with the runtime, and attach it if nothing did yet. */
HIDDEN void cyg__mem_early(void) COLD;
/* Whether a free of p at this moment should be recorded (p non-NULL,
 * tracing on, not inside the runtime). */
static inline int cyg_mem_tracing(void)
{
	if (UNLIKELY(!cyg_memory) && (cyg_state == 0 || !cyg_callbacks) && !cyg_tls.guard)
		cyg__mem_early();
	if (UNLIKELY(cyg_tls.guard)) {
		/* Inside the runtime (thread set-up, an unwind, dl_iterate_phdr)
		 * or the real operator new after malloc failed: not traced,
		 * but counted, so a report can say so.  A signal handler that
		 * allocates in such a moment is counted here too. */
		if (cyg_memory && cyg_tls.t)
			cyg_tls.t->mem_nested++;
		return 0;
	}
	return cyg_memory;
}

/* Unwinding (preload-stack.c): fill the stack word(s) for the current call
 * stack, defining it in the ring first if this thread has not yet. */
HIDDEN uint64_t cyg__stack_id(struct cyg_thread *t);
/* The return addresses between instrumented code (fn's object) and the
 * allocator, innermost first: just ra when the call came straight from
 * that object, else the library frames found by unwinding. */
HIDDEN unsigned cyg__lib_frames(uint64_t fn, uint64_t ra, uint64_t *out, unsigned max);
HIDDEN void cyg__stack_attach(void);
/* The loaded objects changed (dlopen): rescan them. */
HIDDEN void cyg__objs_refresh(void);

#endif
