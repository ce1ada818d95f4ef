/* SPDX-License-Identifier: MIT */
/* setup.c - the size of the shared mapping (--shm-size, or a share of a
 * finite address-space limit) and its creation with the recording's flags. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

#include "collector-private.h"

/* The finite address-space limit (RLIMIT_AS) in bytes, or 0. */
static uint64_t as_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_AS, &rl) || rl.rlim_cur == RLIM_INFINITY)
		return 0;
	return (uint64_t)rl.rlim_cur;
}

/* The size of the shared mapping: --shm-size, else CYG_SHM_DEFAULT_BYTES
 * (sparse: only what is used takes memory), but under a finite
 * address-space limit (ulimit -v, inherited by the program) a share of it
 * (CYG_SHM_AS_SHARE), so that the program keeps the rest for its own
 * threads and heap. */
int collector_shm_size(const struct collector_opts *o, uint64_t *size, char *err, size_t errlen)
{
	uint64_t lim = as_limit(), s;

	if (o->shm_bytes) {
		*size = o->shm_bytes;
		return 0;
	}
	*size = CYG_SHM_DEFAULT_BYTES;
	if (!lim)
		return 0;
	s = lim / CYG_SHM_AS_SHARE & ~(CYG_SHM_AS_ROUND - 1);
	if (s < CYG_SHM_AS_FLOOR) {
		snprintf(err, errlen,
			 "the address-space limit (ulimit -v) of %llu MB is too small for cygprof's "
			 "shared memory: raise it to at least %llu MB, or set --shm-size",
			 (unsigned long long)(lim >> 20), (unsigned long long)(CYG_SHM_AS_FLOOR * CYG_SHM_AS_SHARE >> 20));
		return -ENOMEM;
	}
	if (s < *size)
		*size = s;
	return 0;
}

int collector_map(struct collector *c, uint64_t size, int *memfd, char *err, size_t errlen)
{
	const struct collector_opts *o = c->o;
	uint32_t flags = (o->timeline ? CYG_F_TIMELINE : 0) | (o->drop ? CYG_F_DROP : 0) |
			 (o->memory ? CYG_F_MEMORY : 0) | (o->memdump ? CYG_F_MEMDUMP : 0) |
			 (o->time_sampled ? CYG_F_NOCLOCK : 0) | (collector_have_tsc() ? CYG_F_TSC : 0) |
			 /* frames carry no time under --time=sampled: no switches */
			 (o->cpu_hz ? CYG_F_CPUSAMPLE : 0) |
			 (o->cpu_hz && !o->time_sampled ? CYG_F_SWITCHES : 0);
	int rc;

	if (o->timeline && o->time_sampled) {
		snprintf(err, errlen, "a timeline needs times: not with --time=sampled");
		return -EINVAL;
	}
	c->size = size;
	rc = cyg_shm_create(c->size, flags, o->ring_bytes ? o->ring_bytes : CYG_RING_DEFAULT_BYTES,
			    o->record_depth,
			    memfd, &c->ctl);
	if (rc) {
		uint64_t lim = as_limit();
		if (lim)
			snprintf(err, errlen,
				 "cannot set up %llu MB of shared memory within the address-space "
				 "limit (ulimit -v) of %llu MB: %s (raise the limit or lower "
				 "--shm-size)",
				 (unsigned long long)(size >> 20), (unsigned long long)(lim >> 20),
				 strerror(-rc));
		else
			snprintf(err, errlen, "cannot set up shared memory: %s", strerror(-rc));
		return rc;
	}
	c->base = (char *)c->ctl;
	if (o->memdump) {
		/* the dumper thread's period: the counters interval in ms */
		uint64_t ms = (o->counters_ns ? o->counters_ns : CYGPROF_COUNTERS_DEFAULT_NS) / 1000000;
		c->ctl->memdump_ms = ms < 1 ? 1 : ms > UINT32_MAX ? UINT32_MAX : (uint32_t)ms;
	}
	if (o->cpu_hz) {
		/* the samples' signal as this libc numbers it (the program's
		 * is the same libc, or the runtime picks its own) */
		c->cpu_period_ns = 1000000000ULL / o->cpu_hz;
		c->ctl->cpu_period_ns = c->cpu_period_ns;
		c->ctl->cpu_signo = SIGRTMAX - CYG_CPU_SIG_FROM_MAX;
	}
	/* Read before the program exists: from here on, only our copies. */
	c->ring_words = c->ctl->ring_words;
	c->flags = c->ctl->flags;
	return 0;
}
