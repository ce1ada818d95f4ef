/* SPDX-License-Identifier: MIT */
/* preload-new.c - C++ operator new and delete, every variant, traced.
 *
 * Each wrapper allocates from the real malloc (posix_memalign for the
 * aligned forms) and frees with the real free, as libstdc++'s operators do,
 * and records one NEW/DELETE event itself.  Only when that fails does it
 * call the real operator (through dlsym) for new_handler, bad_alloc and
 * nothrow, with cyg_tls.guard set so that its malloc is not traced a second
 * time.  This file is built with -fexceptions: when the real operator new
 * throws std::bad_alloc, the cleanup attribute still restores the guard as
 * the exception passes. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>

#include "preload-private.h"

static void guard_restore(int *saved)
{
	cyg_tls.guard = *saved;
}

#define GUARDED(stmt)                                                                              \
	do {                                                                                       \
		int saved_ __attribute__((cleanup(guard_restore))) = cyg_tls.guard;                \
		cyg_tls.guard = 1;                                                                 \
		stmt;                                                                              \
	} while (0)

static void *next(const char *name)
{
	return dlsym(RTLD_NEXT, name);
}

/* The common case of operator new straight from the real allocator, as
 * libstdc++'s own does, so no guard is held while the program allocates (a
 * signal handler that allocates then is traced too).  NULL: let the real
 * operator deal with it (new_handler, bad_alloc, nothrow), guarded. */
static void *new_plain(size_t n)
{
	if (UNLIKELY(!cyg_real.malloc))
		cyg__mem_resolve();
	return cyg_real.malloc(n ? n : 1);
}

static void *new_aligned(size_t n, size_t al)
{
	void *p = NULL;

	if (UNLIKELY(!cyg_real.posix_memalign))
		cyg__mem_resolve();
	if (cyg_real.posix_memalign(&p, al, n ? n : 1))
		return NULL; /* an alignment posix_memalign refuses: the real one decides */
	return p;
}

/* operator new(size_t [, align_val_t] [, const nothrow_t &]) */
#define NEW_WRAPPER(mangled, fnid, params, args, fast)                                             \
	EXPORT void *mangled params;                                                               \
	void *mangled params                                                                       \
	{                                                                                          \
		static void *(*real) params;                                                       \
		void *p = fast;                                                                    \
		if (UNLIKELY(!p)) {                                                                \
			if (UNLIKELY(!real))                                                       \
				real = (void *(*) params)next(#mangled);                           \
			if (UNLIKELY(!real))                                                       \
				abort(); /* called from C++ without libstdc++: cannot be */       \
			GUARDED(p = real args);                                                    \
		}                                                                                  \
		if (p && cyg_mem_tracing())                                                        \
			cyg__mem_alloc(fnid, p, n, __builtin_return_address(0));                   \
		return p;                                                                          \
	}

/* operator delete(void * [, size_t] [, align_val_t] [, const nothrow_t &]):
 * libstdc++'s calls free(), so does this one. */
#define DELETE_WRAPPER(mangled, fnid, params, args)                                                \
	EXPORT void mangled params;                                                                \
	void mangled params                                                                        \
	{                                                                                          \
		if (!p)                                                                            \
			return;                                                                    \
		if (UNLIKELY(!cyg_real.free))                                                      \
			cyg__mem_resolve();                                                        \
		if (cyg_mem_tracing())                                                             \
			cyg__mem_free(fnid, p, cyg_free_now());                                     \
		cyg_real.free(p);                                                                  \
	}

#define N CYGPROF_FN_NEW
#define NA CYGPROF_FN_NEW_ARRAY
#define D CYGPROF_FN_DELETE
#define DA CYGPROF_FN_DELETE_ARRAY

NEW_WRAPPER(_Znwm, N, (size_t n), (n), new_plain(n))
NEW_WRAPPER(_Znam, NA, (size_t n), (n), new_plain(n))
NEW_WRAPPER(_ZnwmRKSt9nothrow_t, N, (size_t n, const void *nt), (n, nt), new_plain(n))
NEW_WRAPPER(_ZnamRKSt9nothrow_t, NA, (size_t n, const void *nt), (n, nt), new_plain(n))
NEW_WRAPPER(_ZnwmSt11align_val_t, N, (size_t n, size_t al), (n, al), new_aligned(n, al))
NEW_WRAPPER(_ZnamSt11align_val_t, NA, (size_t n, size_t al), (n, al), new_aligned(n, al))
NEW_WRAPPER(_ZnwmSt11align_val_tRKSt9nothrow_t, N, (size_t n, size_t al, const void *nt),
	    (n, al, nt), new_aligned(n, al))
NEW_WRAPPER(_ZnamSt11align_val_tRKSt9nothrow_t, NA, (size_t n, size_t al, const void *nt),
	    (n, al, nt), new_aligned(n, al))

DELETE_WRAPPER(_ZdlPv, D, (void *p), (p))
DELETE_WRAPPER(_ZdaPv, DA, (void *p), (p))
DELETE_WRAPPER(_ZdlPvm, D, (void *p, size_t n), (p, n))
DELETE_WRAPPER(_ZdaPvm, DA, (void *p, size_t n), (p, n))
DELETE_WRAPPER(_ZdlPvRKSt9nothrow_t, D, (void *p, const void *nt), (p, nt))
DELETE_WRAPPER(_ZdaPvRKSt9nothrow_t, DA, (void *p, const void *nt), (p, nt))
DELETE_WRAPPER(_ZdlPvSt11align_val_t, D, (void *p, size_t al), (p, al))
DELETE_WRAPPER(_ZdaPvSt11align_val_t, DA, (void *p, size_t al), (p, al))
DELETE_WRAPPER(_ZdlPvmSt11align_val_t, D, (void *p, size_t n, size_t al), (p, n, al))
DELETE_WRAPPER(_ZdaPvmSt11align_val_t, DA, (void *p, size_t n, size_t al), (p, n, al))
DELETE_WRAPPER(_ZdlPvSt11align_val_tRKSt9nothrow_t, D, (void *p, size_t al, const void *nt),
	       (p, al, nt))
DELETE_WRAPPER(_ZdaPvSt11align_val_tRKSt9nothrow_t, DA, (void *p, size_t al, const void *nt),
	       (p, al, nt))
