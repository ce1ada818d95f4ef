/* SPDX-License-Identifier: MIT */
/* cyg-cold.h - what the files of the runtime's cold part share with each
 * other, and nobody else.
 *
 * The cold part is split by concern, one file each:
 *   cyg-alloc.c    the cold-path lock, the bump allocator, the free stacks
 *                  and the ring pool
 *   cyg-proc.c     process images: their records, the /proc/self/maps
 *                  snapshot, a reaped child's status
 *   cyg-writer.c   per-thread writers: made, made current, ended; the
 *                  writers of signal handlers that interrupt a hook
 *   cyg-clone.c    clone(): its children, and threads that share a TLS
 *   cyg-tree.c     the calling-context tree: nodes, the child table,
 *                  calls from other call sites
 *   cyg-stack.c    the hooks' slow paths: the shadow stack, its repair,
 *                  and the frames a writer starts with
 *   cyg-ring.c     the timeline ring's rare cases and the full-ring wait
 *   cyg-attach.c   attaching to the collector's mapping (environment or
 *                  cyg-attach.h), detaching, and the callbacks of preload/
 *   cyg-wrap.c     the interposed libc functions (longjmp, exit, wait,
 *                  fork, dlopen), the process's end and the fork child
 *   cyg-memdump.c  the memdump API's table
 *   cyg-calib.c    the hooks' own cost, measured at attach (overhead
 *                  compensation)
 *   cyg-sample.c   CPU-time samples: each thread's sampler, the signal
 *                  handler that charges the current node, the program's
 *                  action for the samples' signal, fork
 *   cyg-switch.c   off-CPU time: each thread's switch records, read at its
 *                  exits and charged to the frame open when it left the CPU
 * What the hooks (cyg-hooks.c) and preload/ call is in cyg-private.h; this
 * header adds the cold part's internal interface.  All of it is hidden
 * (the library is built -fvisibility=hidden): only the hooks, the attach
 * API, the libc wrappers and cyg__memdump_table() are exported.
 *
 * Runs inside the traced program: libc, libdl and pthread only, never
 * malloc (the runtime takes its memory from the mapping).  Every file
 * defines _GNU_SOURCE before its first #include (ring/cyg-lock.h needs it).
 */
#ifndef CYGPROF_CYG_COLD_H
#define CYGPROF_CYG_COLD_H

#include <dlfcn.h>
#include <stdint.h>
#include <sys/types.h>

#include "cyg-private.h"

/* A pointer into the mapping as an offset, and back. */
#define OFF(p) ((uint64_t)((char *)(p) - cyg_base))
#define AT(off) ((void *)(cyg_base + (off)))

/* ---- state of the attach (cyg-attach.c, cyg-proc.c) ------------------- */

extern char *cyg_end HIDDEN;           /* the end of the mapping at cyg_base */
extern unsigned cyg_gen HIDDEN;        /* one more at each attach after a detach */
extern int cyg_attached_late HIDDEN;   /* cygprof_attach_fd() attached us, not the environment */
extern uint64_t cyg_proc_off HIDDEN;   /* this process image's record */

/* Whether the collector of the mapping died: tries ctl->alive, which it
 * holds for its whole life, waiting up to ns nanoseconds (0: just looks).
 * 1 (and ctl->collector_gone set) when it is gone, else 0 (cyg-ring.c). */
HIDDEN int cyg__collector_dead(long ns) COLD;

/* Attach to the collector's mapping named by the environment, unless
 * tried already (cyg_state).  Returns 0 when attached, else -1. */
HIDDEN int cyg__attach(void);
/* Measure the hooks' cost on a scratch writer and store it in this
 * process image's record (cyg_proc.calib_*); nothing under
 * CYG_F_NOCLOCK.  Called once the state is attached (cyg-calib.c). */
HIDDEN void cyg__calibrate(void) COLD;
/* __cyg_profile_func_enter/exit themselves, whoever else defines those
 * names (cyg-hooks.c) */
HIDDEN void cyg__hook_enter(void *fn, void *site);
HIDDEN void cyg__hook_exit(void *fn, void *site);
/* The timeline ring the calibration wrote (the run's size, its pages
 * faulted in), for the first writer of this process image to take: its
 * offset once, then 0 (0 also in another process, a fork child). */
HIDDEN uint64_t cyg__spare_ring(void) COLD;

/* A writer of an earlier attach (the runtime was detached, then attached
 * again to another mapping): the thread's TLS still names it, in the old
 * mapping, which stays mapped but is not written any more. */
static inline int cyg_stale(const struct cyg_thread *t)
{
	return (const char *)t < cyg_base || (const char *)t >= cyg_end;
}

/* The writer a signal handlers' writer nests in (NULL: none, or a link
 * the program wrote out of the window; a walk up these links takes at
 * most CYG_SIG_LEVELS steps, as they might make a cycle). */
static inline struct cyg_thread *cyg_host_of(const struct cyg_thread *t)
{
	uint64_t off = t->host_off;
	return off && !(off & 63) && cyg_span_ok(off, sizeof *t) ? AT(off) : NULL;
}

/* A record of size bytes at off in one of the mapping's lists (threads,
 * processes), or NULL at the end of the list, or where the program wrote a
 * link out of the window (counted: ctl->rt_dropped).  A walk takes at most
 * cyg_walk_max() steps: a cycle the program made ends there. */
static inline void *cyg_rec_at(uint64_t off, uint64_t size)
{
	if (!off)
		return NULL;
	if ((off & 63) || off < CYG_NULL_OFF || !cyg_span_ok(off, size)) {
		__atomic_add_fetch(&cyg_ctl->rt_dropped, 1, __ATOMIC_RELAXED);
		return NULL;
	}
	return AT(off);
}

static inline uint64_t cyg_walk_max(uint64_t size)
{
	return (uint64_t)(__atomic_load_n(&cyg_end, __ATOMIC_RELAXED) - cyg_base) / size + 1;
}

/* The next definition of a libc function the runtime interposes. */
static inline void *cyg_next_sym(const char *name)
{
	return dlsym(RTLD_NEXT, name);
}

/* ---- the lock and the allocator (cyg-alloc.c) ------------------------- */

/* Take the cold-path lock, unless this very thread holds it already: a
 * signal handler interrupted it inside a cold path (ring/cyg-lock.h).
 * Returns 0 or -1. */
HIDDEN int cyg__lock(void);
HIDDEN void cyg__unlock(void);
/* Bump-allocate size bytes (64-aligned) from the mapping, without the
 * lock, and map that far (cyg__cover()).  Returns the offset, 0 when full
 * or when this process cannot map so far (counted in ctl->oom). */
HIDDEN uint64_t cyg__area_alloc(uint64_t size);
/* The allocation at off of size bytes used only `used`: give the rest back
 * when nothing was allocated after it (a maps snapshot, a command line). */
HIDDEN void cyg__area_trim(uint64_t off, uint64_t size, uint64_t used);

/* ---- this process's window of the mapping (cyg-alloc.c) --------------- */

/* The mapping is not mapped whole in the traced program: the program's
 * own address-space limit (RLIMIT_AS, which it may lower after it
 * started) counts every byte mapped, sparse or not.  [cyg_base, cyg_end)
 * is mapped, at the start of a free range of cyg_size bytes (where one
 * could be found), and grows in place with mremap() on the cold paths, to
 * cover what was allocated.  Everything a process reads lies below
 * ctl->alloc_off, so a walk of the shared lists first covers that. */
extern uint64_t cyg_size HIDDEN; /* the whole mapping's size (the memfd's) */
/* Map the window at least up to offset `end` (in place; nothing moves).
 * Returns 0, or -1 when it cannot: the address space after it is taken,
 * the limit, or this thread is growing it already (a signal handler). */
HIDDEN int cyg__cover(uint64_t end);
/* Cover everything allocated so far (before reading shared lists). */
HIDDEN int cyg__cover_all(void);
/* Map the first `win` bytes of fd's size bytes where the rest can follow
 * in place; returns the address or MAP_FAILED (errno set). */
HIDDEN void *cyg__map_window(int fd, uint64_t size, uint64_t win);
/* Fork handlers: no window grows across a fork (pthread_atfork). */
HIDDEN void cyg__grow_prepare(void);
HIDDEN void cyg__grow_release(void);
/* The first window of a mapping of `size` bytes, and each growth's
 * rounding: at least CYG_WIN_STEP, and an eighth more than needed. */
#define CYG_WIN_STEP (1ULL << 20)
/* What ended writers gave back, for a new one, under the lock (nothing
 * changes when it cannot be had): a shadow stack in *stack (0 if none;
 * its capacity in *cap) and, when want_ring, a ring the collector drained
 * in *ring (0 if none). */
HIDDEN void cyg__reuse(uint64_t *stack, uint32_t *cap, uint64_t *ring, int want_ring);
/* A shadow stack goes back to the free list with its capacity, under the
 * lock (lost when the lock cannot be had). */
HIDDEN void cyg__stack_give(uint64_t off, uint32_t cap);

/* ---- process images (cyg-proc.c) -------------------------------------- */

/* Register this process image.  parent_off: the image that forked us, or
 * 0 to look it up (exec'd image or the program the collector started).
 * Returns its record's offset, 0 when it could not be made. */
HIDDEN uint64_t cyg__register_proc(uint64_t parent_off, uint64_t now);
/* Take a new snapshot of /proc/self/maps for image p (new code appeared). */
HIDDEN void cyg__snapshot_maps(struct cyg_proc *p);
/* A parent reaped child pid (a status of waitpid()): its exit status. */
HIDDEN void cyg__proc_reaped(pid_t pid, int status);

/* ---- writers (cyg-writer.c) -------------------------------------------- */

/* Make, once per process, the pthread key whose destructor ends a
 * thread's writer.  Returns 0 or -1. */
HIDDEN int cyg__writer_key(void);
/* A new writer of process image proc_off, on the thread list; not made
 * current.  NULL when the mapping is full. */
/* A writer's fields, its tree's root and its stack's bottom frame, in the
 * area at off (zeroed first), active; not on the thread list.  NULL when
 * no node is left for the root. */
HIDDEN struct cyg_thread *cyg__writer_init(uint64_t off, uint64_t stack, uint32_t cap,
					   uint32_t lim, uint64_t ring, uint64_t proc_off,
					   uint64_t now);
HIDDEN struct cyg_thread *cyg__thread_alloc(uint32_t flags, uint64_t now, uint64_t proc_off);
/* A new writer of this process image, made the calling thread's. */
HIDDEN struct cyg_thread *cyg__thread_new(uint32_t flags, uint64_t now);
/* Write through t from now on. */
HIDDEN void cyg__tls_use(struct cyg_thread *t);
/* Forget the writers of an earlier attach: this thread gets a new one at
 * its next hook. */
HIDDEN void cyg__tls_forget(void);
/* One writer ends: close what is open, give its stack back, publish. */
HIDDEN void cyg__writer_end(struct cyg_thread *w, uint64_t now);
/* The calling thread's writer t ends, with those of its signal handlers. */
HIDDEN void cyg__thread_end(struct cyg_thread *t);

/* ---- clone() and shared TLS (cyg-clone.c) ------------------------------ */

/* The writer of the calling thread when it shares its TLS with a raw
 * clone() child, made at its first hook when `make`; NULL when it does
 * not share it (or none can be made). */
HIDDEN struct cyg_thread *cyg__shared_writer(int make);
/* A thread whose TLS is shared ends: its writer and its entry. */
HIDDEN void cyg__shared_end(void);
/* Forget every thread sharing a TLS (a new process, a new attach). */
HIDDEN void cyg__shared_reset(void);

/* ---- the tree (cyg-tree.c) --------------------------------------------- */

/* A tree node for writer t (no lock: the thread owns its chunk); NULL
 * when the mapping is full. */
HIDDEN struct cyg_node *cyg__node_alloc(struct cyg_thread *t);
/* The child of node `parent` for fn by the child table, or NULL: not
 * there, or not in the table (none yet, or t->kids_partial: the mapping
 * was full; the sibling list still has every child). */
HIDDEN struct cyg_node *cyg__kid_find(struct cyg_thread *t, uint32_t parent, uint64_t fn);

/* ---- frames a writer starts with (cyg-stack.c, cyg-attach.c) ----------- */

/* Writer t's first hook: the frames seeded for its tid by
 * cygprof_attach_seed() go on its shadow stack. */
HIDDEN void cyg__seed_push(struct cyg_thread *t, uint64_t now);
/* Take the seed of thread tid, if any: its functions (*n of them,
 * outermost first, in the mapping), the entry freed.  NULL when none. */
HIDDEN const uint64_t *cyg__seed_take(uint32_t tid, uint32_t *n);
/* A forked child's writer t (current) starts with the frames 1..odepth of
 * ostk (the parent's, as they were at fork(), oovf frames past the depth
 * limit) that were live when fork() was called from stack position
 * fork_cfa (0: unknown). */
HIDDEN void cyg__fork_frames(struct cyg_thread *t, const struct cyg_frame *ostk, uint32_t odepth,
			     uint32_t oovf, uint64_t fork_cfa, uint64_t now);
/* The forking thread's frames copied to private memory before fork (the
 * prepare handler, _Fork), dropped after it in both processes. */
HIDDEN void cyg__fork_snap_take(void);
HIDDEN void cyg__fork_snap_drop(void);

/* ---- CPU samples (cyg-sample.c) ------------------------------------------ */

#include <signal.h>

/* The samples' signal while the runtime's handler is installed, else 0. */
extern int cyg_smp_signo HIDDEN;
/* At attach (CYG_F_CPUSAMPLE): install the handler, find the runtime's
 * code.  Nothing when sampling is off or the handler is installed. */
HIDDEN void cyg__smp_init(void) COLD;
/* A detach: the handler goes, the program's action (or what was there
 * before the attach) comes back. */
HIDDEN void cyg__smp_uninstall(void) COLD;
/* The calling thread's new writer t (current): its sampler and switch
 * records (what it had before is stopped first). */
HIDDEN void cyg__smp_thread_start(struct cyg_thread *t) COLD;
/* The calling thread's writer t ends: its last switch records read, its
 * CPU time noted, its sampler stopped. */
HIDDEN void cyg__smp_thread_end(struct cyg_thread *t) COLD;
/* A detach, for writer t of a stopped thread of this process: its
 * sampler and switch records stopped through its TLS. */
HIDDEN void cyg__smp_detach(struct cyg_thread *t) COLD;
/* pthread_atfork handlers (prepare, parent) and the child's reset, which
 * cyg__atfork_child() calls first: the child has no copy of the perf
 * mapping and must not keep the parent thread's sampler. */
HIDDEN void cyg__smp_fork_prepare(void) COLD;
HIDDEN void cyg__smp_fork_parent(void) COLD;
HIDDEN void cyg__smp_fork_child(int own_fds) COLD; /* own_fds: not sharing the parent's */
/* A fork child: the copies of the samplers of the parent's other threads
 * (process image proc_off) are closed. */
HIDDEN void cyg__smp_fork_close_others(uint64_t proc_off) COLD;
/* The real sigaction and pthread_sigmask (the runtime's own calls must not
 * go through its wrappers).  Same returns as theirs. */
HIDDEN int cyg__real_sigaction(int sig, const struct sigaction *act, struct sigaction *old);
HIDDEN int cyg__real_sigmask(int how, const sigset_t *set, sigset_t *old);
/* The program's sigaction() for the samples' signal: remembered (act), the
 * one it set before returned (old); the kernel keeps the runtime's. */
HIDDEN int cyg__smp_sigaction(const struct sigaction *act, struct sigaction *old);

/* ---- switch records (cyg-switch.c) ---------------------------------------- */

/* CYG_F_SWITCHES and not CYG_F_NOCLOCK: threads track their switches. */
extern int cyg_sw_enabled HIDDEN;
/* At attach: whether to track, and the clock pair the conversion uses. */
HIDDEN void cyg__sw_init(void) COLD;
/* Open the calling thread's switch records for its writer t (current) and
 * point cyg_tls.swh at them; nothing when off or refused. */
HIDDEN void cyg__sw_open(struct cyg_thread *t) COLD;
/* Stop reading them (cyg_tls.swh to cyg_sw_zero) and unmap them. */
HIDDEN void cyg__sw_close(void) COLD;
/* Read writer t's new records and charge the intervals they close, when
 * they are the calling thread's own (its frames are where they were). */
HIDDEN void cyg__sw_catchup(struct cyg_thread *t) COLD;
/* Read t's new switch records and charge none of them: those of a wait for
 * the collector (cyg-ring.c), which the open frames' times leave out. */
HIDDEN void cyg__sw_discard(struct cyg_thread *t) COLD;
/* The process ends: every other thread of it that is off the CPU has its
 * pending interval charged up to now; every one's CPU time noted. */
HIDDEN void cyg__sw_process_end(void) COLD;
/* A detach, for writer t of a stopped thread whose TLS is tls: its
 * records unmapped, its exit hook pointed at cyg_sw_zero. */
HIDDEN void cyg__sw_detach(struct cyg_thread *t, struct cyg_tls *tls) COLD;

/* ---- process ends (cyg-wrap.c) ----------------------------------------- */

/* Find the real syscall() (the wrapper's): at the attach. */
HIDDEN void cyg__syscall_init(void) COLD;
/* The pthread_atfork() child handler: the child is a process of its own. */
HIDDEN void cyg__atfork_child(void);

#endif
