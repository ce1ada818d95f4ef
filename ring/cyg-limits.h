/* SPDX-License-Identifier: MIT */
/* cyg-limits.h - the defaults and limits of the shared mapping that the
 * runtime, the collector and `cygprof record` must agree on: defined here
 * once, used everywhere by name.  Part of the protocol (cyg-shm.h includes
 * it); libc types only. */
#ifndef CYGPROF_CYG_LIMITS_H
#define CYGPROF_CYG_LIMITS_H

#include <stdint.h>

/* ---- the mapping (--shm-size) ---------------------------------------- */
#define CYG_SHM_MIN_BYTES (64ULL << 20) /* smallest --shm-size */
#define CYG_SHM_MAX_BYTES (16ULL << 30) /* largest: node gids are 28 bits of
					 * 64-byte nodes (cyg-shm.h) */
#define CYG_SHM_DEFAULT_BYTES CYG_SHM_MAX_BYTES /* sparse: only what is used
						 * takes memory */
/* Under a finite address-space limit (ulimit -v, inherited by the program)
 * the default is 1/CYG_SHM_AS_SHARE of it, rounded down to CYG_SHM_AS_ROUND,
 * so the program keeps the rest; under CYG_SHM_AS_FLOOR, `record` asks for a
 * larger limit or --shm-size. */
#define CYG_SHM_AS_SHARE 8
#define CYG_SHM_AS_ROUND (1ULL << 20)
#define CYG_SHM_AS_FLOOR (16ULL << 20)

/* ---- the per-thread timeline ring (--ring-size) ---------------------- */
#define CYG_RING_DEFAULT_BYTES (4ULL << 20)
#define CYG_RING_MIN_WORDS 16                        /* 8-byte words */
#define CYG_RING_MIN_BYTES (CYG_RING_MIN_WORDS * 8ULL) /* smallest --ring-size */
#define CYG_RING_MAX_BYTES (1ULL << 30)               /* largest --ring-size */
#define CYG_RING_SHM_SHARE 4 /* a ring takes at most a quarter of the mapping */

/* The ring's size in words for a --ring-size of `bytes`: rounded up to a
 * power of two, at least CYG_RING_MIN_WORDS. */
static inline uint64_t cyg_ring_words(uint64_t bytes)
{
	uint64_t words = bytes / 8, p2 = CYG_RING_MIN_WORDS;

	while (p2 < words)
		p2 <<= 1;
	return p2;
}

/* ---- call paths (--max-depth, --depth) -------------------------------- */
#define CYG_DEPTH_MAX (1U << 24) /* deepest call path recorded; deeper calls are
				  * counted in cyg_thread.overflow */
#define CYG_STACK_INIT 4096      /* shadow-stack frames a thread starts with */

/* ---- what the runtime allocates from the mapping --------------------- */
#define CYG_CHUNK_MIN (16ULL << 10) /* a thread's first chunk of nodes (its root's) */
#define CYG_CHUNK_MAX (4ULL << 20)  /* chunks double up to this size */
#define CYG_SITES_MAX (1U << 20)    /* call-site entries per thread (sparse) */
#define CYG_MAPS_MAX (4ULL << 20)   /* a process's /proc/self/maps snapshot, at most */
#define CYG_CMD_MAX (64ULL << 10)   /* its command line, at most */

/* ---- CPU-time samples and off-CPU time (record --cpu-freq) ------------ */
/* Samples per second of each thread's CPU time by default: the period is
 * 1e9 / this many ns.  1 kHz costs some 4-8% of a busy thread's CPU time on
 * the 2-core VM the project measures on (bench/bench.py's cpu section);
 * twice the rate costs twice as much. */
#define CYG_CPU_HZ_DEFAULT 1000
#define CYG_CPU_HZ_MAX 20000      /* largest --cpu-freq */
/* The samples' signal: SIGRTMAX minus this, a real-time signal programs
 * rarely use (SIGRTMIN and the first few above it are glibc's and the
 * common libraries'). */
#define CYG_CPU_SIG_FROM_MAX 2
/* Each thread's switch records: a control page and this many data pages,
 * mapped read-only (the kernel overwrites what was not read: 24 bytes a
 * record, some 170 switches between two exits of the thread). */
#define CYG_SW_DATA_PAGES 2
/* The samplers' descriptors are moved out of the program's way, to at
 * least this number (or half of RLIMIT_NOFILE when that is lower). */
#define CYG_SMP_FD_MIN 1000

/* ---- the memdump API (--memdump) ------------------------------------- */
#define CYG_MEMDUMP_DEFAULT_MS 10 /* dumper period when ctl->memdump_ms is 0 */

#endif
