/* SPDX-License-Identifier: MIT */
/* cyg-attach.h - the runtime's entries for `cygprof record --attach PID`
 * (docs/attach.md, steps 5, 7 and 8).
 *
 * The collector loads libcygprof-cyg.so into a running program that was
 * built with -finstrument-functions but started without cygprof (dlopen
 * through ptrace), then calls these by name (dlsym); it reads
 * cygprof_attach_state through /proc/PID/mem.  Exported with C linkage
 * and default visibility; everything else of the runtime stays hidden.
 *
 * The order: cygprof_attach_fd() once, cygprof_attach_seed() once per
 * thread whose stack could be walked, then the GOT slots of the hooks are
 * pointed at the runtime.  At the end the slots are put back, then
 * cygprof_detach().  The runtime is never dlclose'd.
 */
#ifndef CYGPROF_CYG_ATTACH_H
#define CYGPROF_CYG_ATTACH_H

#ifdef __cplusplus
extern "C" {
#endif

#define CYGPROF_ATTACH_API __attribute__((visibility("default")))

/* Frames one cygprof_attach_seed() call takes at most. */
#define CYGPROF_ATTACH_SEED_MAX 256
/* Threads that can have a seed waiting at once. */
#define CYGPROF_ATTACH_SEED_THREADS 1024

/* cygprof_attach_state */
enum {
	CYGPROF_ATTACH_NEVER = 0,    /* the runtime never attached to a mapping */
	CYGPROF_ATTACH_ON = 1,       /* attached: by record (the environment) or by
				      * cygprof_attach_fd(); the process is profiled */
	CYGPROF_ATTACH_DETACHED = 2, /* cygprof_detach() ran: the hooks write nothing */
};

/* Map the collector's shared mapping (fd, the memfd `record` otherwise
 * names in CYGPROF_SHM_FD), register this process and turn the runtime on.
 * fd is closed (the mapping keeps the memfd alive).  Threads register on
 * their first hook, threads that end are seen by a pthread key destructor
 * and fork() by pthread_atfork(): nothing here needs the runtime to have
 * been preloaded.  After cygprof_detach() it attaches again, to this or
 * another collector's mapping: each thread gets a new writer at its next
 * hook (the earlier mapping stays mapped).  Attached by an earlier call
 * whose collector died without detaching (killed: the robust mutex it held
 * in its mapping was released by the kernel), it detaches for it first and
 * attaches to fd.  Returns 0, or a negative errno:
 * -EBUSY attached already (by record's environment, or by a collector
 * that lives) or attaching, -EBADF fd is not a mapping of
 * this runtime's protocol version, -ENOMEM it cannot be mapped. */
CYGPROF_ATTACH_API int cygprof_attach_fd(int fd);

/* cygprof_attach_fd() of path opened here (O_RDWR | O_CLOEXEC): the
 * descriptor never outlives the call, whatever happens to the caller.
 * Returns what cygprof_attach_fd() returns, or -errno of the open. */
CYGPROF_ATTACH_API int cygprof_attach_path(const char *path);

/* The attacher (process collector) died before it pointed the hooks:
 * undo the cygprof_attach_fd() it made, as cygprof_detach() would, so the
 * process runs on as after a detach (cygprof_attach_state 2) and the next
 * attach attaches as usual.  No hook reaches the runtime then, so the
 * other threads may run.  Nothing happens when the last attach was not
 * that collector's, failed, took over from a dead attacher (the hooks
 * point at the runtime already), or was detached.  Returns 0, or -EINVAL
 * when there was nothing to undo. */
CYGPROF_ATTACH_API int cygprof_attach_abort(int collector);

/* The instrumented functions on thread tid's stack at attach time (their
 * entry addresses, the this_fn the hooks see), outermost first, n <=
 * CYGPROF_ATTACH_SEED_MAX.  Copied; on tid's first hook they are pushed on
 * its shadow stack as calls entered at that moment (call site unknown), so
 * the exits that follow pair and call paths start at the thread's real
 * root.  Returns 0, or -EINVAL (not attached, bad arguments), -ENOSPC (too
 * many threads waiting for their first hook, or the mapping is full). */
CYGPROF_ATTACH_API int cygprof_attach_seed(int tid, const unsigned long *fns, unsigned n);

/* CYGPROF_ATTACH_* */
CYGPROF_ATTACH_API extern int cygprof_attach_state;

/* While attached by cygprof_attach_fd(): the pid of the collector (as the
 * mapping names it, 0 otherwise) and when the attach happened
 * (CLOCK_BOOTTIME ns, the clock of a process's start time in
 * /proc/PID/stat).  A later attacher reads both through /proc/PID/mem: when
 * that collector is gone (no such process, a zombie, or a process started
 * after the attach: its pid was reused), it attaches anyway, and
 * cygprof_attach_fd() checks again through the mapping's robust mutex. */
CYGPROF_ATTACH_API extern int cygprof_attach_collector;
CYGPROF_ATTACH_API extern unsigned long long cygprof_attach_boottime;

/* Stop recording: call after the GOT slots are put back, with the
 * process's other threads stopped.  Every writer of this process is
 * closed for the collector (state CUT at this moment: the collector
 * closes its open frames there, as for a process image replaced by exec;
 * nothing waits for the collector), the process's end is stamped, and
 * every hook that starts from now on returns without writing.  A hook a
 * thread was stopped inside (past its checks) finishes its one update when
 * the thread runs on: the collector takes its final look before it lets
 * the threads go.  Returns 0, or -EINVAL when not attached. */
CYGPROF_ATTACH_API int cygprof_detach(void);

#ifdef __cplusplus
}
#endif

#endif
