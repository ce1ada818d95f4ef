/* SPDX-License-Identifier: MIT */
/* preload-new.c - C++ operator new and delete, every variant, traced.
 *
 * Each wrapper calls the real operator (libstdc++'s, through dlsym) with
 * cyg_tls.guard set, so the malloc/free it calls is not traced a second
 * time, and records one NEW/DELETE event itself.  This file is built with
 * -fexceptions: when the real operator new throws std::bad_alloc, the
 * cleanup attribute still restores the guard as the exception passes. */
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

/* operator new(size_t [, align_val_t] [, const nothrow_t &]) */
#define NEW_WRAPPER(mangled, fnid, params, args)                                                   \
	EXPORT void *mangled params;                                                               \
	void *mangled params                                                                       \
	{                                                                                          \
		static void *(*real) params;                                                       \
		void *p;                                                                           \
		if (UNLIKELY(!real))                                                               \
			real = (void *(*) params)next(#mangled);                                   \
		if (UNLIKELY(!real))                                                               \
			abort(); /* called from C++ without libstdc++: cannot be */               \
		GUARDED(p = real args);                                                            \
		if (p && cyg_mem_tracing())                                                        \
			cyg__mem_alloc(fnid, p, n, __builtin_return_address(0));                   \
		return p;                                                                          \
	}

/* operator delete(void * [, size_t] [, align_val_t] [, const nothrow_t &]) */
#define DELETE_WRAPPER(mangled, fnid, params, args)                                                \
	EXPORT void mangled params;                                                                \
	void mangled params                                                                        \
	{                                                                                          \
		static void (*real) params;                                                        \
		if (!p)                                                                            \
			return;                                                                    \
		if (UNLIKELY(!real))                                                               \
			real = (void (*) params)next(#mangled);                                    \
		if (cyg_mem_tracing())                                                             \
			cyg__mem_free(fnid, p, cyg_free_now());                                     \
		if (UNLIKELY(!real)) {                                                             \
			free(p);                                                                   \
			return;                                                                    \
		}                                                                                  \
		GUARDED(real args);                                                                \
	}

#define N CYGPROF_FN_NEW
#define NA CYGPROF_FN_NEW_ARRAY
#define D CYGPROF_FN_DELETE
#define DA CYGPROF_FN_DELETE_ARRAY

NEW_WRAPPER(_Znwm, N, (size_t n), (n))
NEW_WRAPPER(_Znam, NA, (size_t n), (n))
NEW_WRAPPER(_ZnwmRKSt9nothrow_t, N, (size_t n, const void *nt), (n, nt))
NEW_WRAPPER(_ZnamRKSt9nothrow_t, NA, (size_t n, const void *nt), (n, nt))
NEW_WRAPPER(_ZnwmSt11align_val_t, N, (size_t n, size_t al), (n, al))
NEW_WRAPPER(_ZnamSt11align_val_t, NA, (size_t n, size_t al), (n, al))
NEW_WRAPPER(_ZnwmSt11align_val_tRKSt9nothrow_t, N, (size_t n, size_t al, const void *nt),
	    (n, al, nt))
NEW_WRAPPER(_ZnamSt11align_val_tRKSt9nothrow_t, NA, (size_t n, size_t al, const void *nt),
	    (n, al, nt))

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
