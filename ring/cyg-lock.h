/* SPDX-License-Identifier: MIT */
/* cyg-lock.h - the one way to take a mutex of the shared mapping.
 *
 * The mapping has two process-shared robust mutexes (struct cyg_ctl):
 *  - `lock`, the runtime's cold-path lock (free stacks, pool_tail, the
 *    process list).  Only the runtime takes it; the collector never does
 *    (the program could hold it forever: see "Trust" in cyg-shm.h).
 *  - `alive`, which the collector takes when it creates the mapping and
 *    holds as long as it lives.  A writer waiting for room in its ring
 *    tries it with a deadline: getting it means the collector is gone.
 *
 * Both are robust: a process that dies holding one (the program killed in
 * a cold path, the collector killed) leaves it to the next locker with
 * EOWNERDEAD, which makes it consistent here and goes on.  A thread that
 * holds the lock already (a signal handler that interrupted a cold path)
 * is refused, never deadlocked: with a `held` flag, cyg_lock() returns
 * -EBUSY, and every caller must cope with not getting the lock.
 *
 * Used inside the traced program: libc and pthread only, no allocation.
 * pthread_mutex_clocklock() needs _GNU_SOURCE before the first #include.
 */
#ifndef CYGPROF_CYG_LOCK_H
#define CYGPROF_CYG_LOCK_H

#ifndef _GNU_SOURCE
#error "cyg-lock.h needs _GNU_SOURCE defined before the first #include"
#endif

#include <errno.h>
#include <pthread.h>
#include <time.h>

/* Make m a robust process-shared mutex (the collector, creating the
 * mapping).  Returns 0 or an errno value. */
static inline int cyg_lock_init(pthread_mutex_t *m)
{
	pthread_mutexattr_t ma;
	int r;

	pthread_mutexattr_init(&ma);
	pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
	pthread_mutexattr_setrobust(&ma, PTHREAD_MUTEX_ROBUST);
	r = pthread_mutex_init(m, &ma);
	pthread_mutexattr_destroy(&ma);
	return r;
}

/* cyg_lock() got the mutex from an owner that died holding it. */
#define CYG_LOCK_OWNER_DIED 1

/* Take m.  held: this thread's "holds (or is taking) it" flag, or NULL; a
 * thread whose flag is set is refused.  deadline: give up at this
 * CLOCK_MONOTONIC time, or NULL to wait.  Returns 0 when taken,
 * CYG_LOCK_OWNER_DIED when taken from a dead owner (made consistent), or a
 * negative errno value: -EBUSY refused, -ETIMEDOUT, or what
 * pthread_mutex_lock() reports (-EDEADLK: its owner has our tid in another
 * pid namespace; -ENOTRECOVERABLE). */
static inline int cyg_lock(pthread_mutex_t *m, int *held, const struct timespec *deadline)
{
	int r;

	if (held) {
		if (*held)
			return -EBUSY;
		*held = 1;
	}
	r = deadline ? pthread_mutex_clocklock(m, CLOCK_MONOTONIC, deadline)
		     : pthread_mutex_lock(m);
	if (r == EOWNERDEAD) {
		pthread_mutex_consistent(m); /* its owner died mid-section */
		return CYG_LOCK_OWNER_DIED;
	}
	if (r && held)
		*held = 0;
	return -r;
}

/* Give back what cyg_lock() took (same held flag). */
static inline void cyg_unlock(pthread_mutex_t *m, int *held)
{
	pthread_mutex_unlock(m);
	if (held)
		*held = 0;
}

#endif
