/* SPDX-License-Identifier: MIT */
/* attach-elf.h - what record --attach needs to know about a running process
 * before touching it (docs/attach.md, steps 1 and 2). */
#ifndef CYGPROF_ATTACH_ELF_H
#define CYGPROF_ATTACH_ELF_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/user.h>

/* Most instrumented shared libraries whose slots are pointed too. */
#define ATTACH_MAX_LIBS 64

struct attach_target {
	pid_t pid;
	char exe[PATH_MAX];    /* readlink of /proc/PID/exe */
	uint64_t exe_base;     /* load bias of the executable (0 for ET_EXEC) */
	uint64_t got_enter;    /* run-time address of the GOT slot of */
	uint64_t got_exit;     /* __cyg_profile_func_enter/_exit, 0: none */
	int got_enter_type;    /* R_X86_64_JUMP_SLOT or R_X86_64_GLOB_DAT */
	int got_exit_type;
	size_t nlibs;          /* other objects mapped with both slots */
	uint64_t lib_enter[ATTACH_MAX_LIBS], lib_exit[ATTACH_MAX_LIBS];
	char libc[PATH_MAX];   /* path of the mapped libc, as in the maps */
	uint64_t libc_base;
	uint64_t dlopen_addr;  /* run-time address of dlopen in the target */
	uint64_t dlsym_addr;
	uint64_t open_addr, mmap_addr, munmap_addr, dlerror_addr, close_addr; /* 0: none */
	uint64_t socket_addr, connect_addr, recvmsg_addr; /* 0: none */
	uint64_t libc_hook[2]; /* libc's empty __cyg_profile_func_enter, _exit (0: none) */
	int profiled;          /* a cygprof runtime is mapped already */
	char runtime[PATH_MAX]; /* that runtime's path ("" when none) */
	uint64_t runtime_base; /* start of its offset-0 mapping */
	uint64_t state_addr;   /* its cygprof_attach_state (0: it has none) */
	uint64_t collector_addr; /* its cygprof_attach_collector, cygprof_attach_boottime */
	uint64_t boottime_addr;  /* (0: it has none) */
	int reattach;          /* that runtime is detached (state 2), or its attacher
				* died without detaching: attach it again */
	pid_t dead_attacher;   /* that attacher (0: none) */
	uint64_t tramp_addr;   /* room for the call trampoline (attach-inject.c): past
				* the end of an executable PT_LOAD's file bytes, inside
				* its last page, where nothing of the program lies (0: none) */
};

/* Bytes of an executable mapping's tail the trampoline needs. */
#define ATTACH_TRAMP_ROOM 256

/* Read the mapped runtime's cygprof_attach_state through /proc/PID/mem
 * (0 never attached, 1 attached, 2 detached).  Returns 0, or -1 when there
 * is no such runtime or variable, or it cannot be read. */
int attach_runtime_state(const struct attach_target *t, int32_t *state);

/* Whether process pid, which attached a runtime at boot_ns
 * (CLOCK_BOOTTIME ns, the runtime's cygprof_attach_boottime), is gone: no
 * such process, a zombie, or one started after that (its pid reused).
 * proc is "/proc" (tests name another tree). */
int attach_attacher_gone(const char *proc, pid_t pid, unsigned long long boot_ns);

/* Fill *t for process pid from /proc/PID/{exe,maps} and the ELF files.
 * Returns 0, or -1 with one line in err (no such process, not x86-64,
 * no libc mapped, no dlopen in it). A process without the hooks' slots is
 * not an error here: got_enter and got_exit stay 0. */
int attach_inspect(pid_t pid, struct attach_target *t, char *err, size_t errlen);

/* The refusals of docs/attach.md step 1 that need no ELF: ptrace_scope
 * (read from scope_path, normally /proc/sys/kernel/yama/ptrace_scope; a
 * missing file allows) and another tracer. Returns 0 or -1 with err. */
int attach_allowed(pid_t pid, const char *scope_path, char *err, size_t errlen);

/* All refusals, then attach_inspect: the one call record --attach makes.
 * Returns 0 or -1 with one line in err. */
int attach_check(pid_t pid, struct attach_target *t, char *err, size_t errlen);

/* The one-line error of an attach step into err (n bytes); returns -1. */
__attribute__((format(printf, 3, 4))) int attach_fail(char *err, size_t n, const char *fmt, ...);

/* Every thread of a process, seized and stopped (attach-ptrace.c). */
#define ATTACH_MAX_THREADS 4096
struct attach_threads {
	pid_t pid;
	size_t n;
	pid_t tid[ATTACH_MAX_THREADS];
};

/* PTRACE_SEIZE (with PTRACE_O_TRACECLONE) and PTRACE_INTERRUPT every
 * thread of pid, reading /proc/PID/task until no new one appears; each is
 * in a ptrace stop on return.  Returns 0, or -1 with one line in err and
 * nothing left seized. */
int attach_stop_all(pid_t pid, struct attach_threads *a, char *err, size_t errlen);

/* PTRACE_DETACH every thread of a: the process runs on. */
void attach_resume_all(struct attach_threads *a);

/* ---- loading the runtime and pointing the hooks (attach-inject.c) ---- */

/* Most frames handed to the runtime per thread (cygprof_attach_seed). */
#define ATTACH_SEED_MAX 256

struct sym_elf;

struct attach_session {
	struct attach_target *t;
	struct attach_threads th;
	char runtime[PATH_MAX]; /* the runtime loaded */
	int memfd;             /* /proc/PID/mem while stopped */
	pid_t tid;             /* the thread the calls run on */
	int have_regs, gone;   /* its registers saved; the process ended */
	struct user_regs_struct saved;
	struct user_fpregs_struct fp;
	unsigned char xstate[16384];
	size_t xstate_len;     /* 0: fp holds the FP state */
	uint64_t text[16][2];  /* the executable's text mappings */
	size_t ntext;
	struct sym_elf *elf;   /* its symbols (NULL: no seeds) */
	/* The calls' frame on the calling thread's stack, below its red zone
	 * (attach-inject.c, "the trampoline"): addresses in the target. */
	uint64_t gpr;          /* the thread's registers, popped last; its rip above */
	uint64_t desc;         /* the call descriptor the trampoline reads */
	uint64_t data;         /* strings and seed lists */
	uint64_t xs;           /* the xsave (fxsave) area, the trampoline's stack top */
	int xsave;             /* 1: xsave/xrstor; 0: fxsave/fxrstor */
	int entered;           /* the thread runs in the trampoline: it leaves through it */
	int at_marker;         /* stopped at the trampoline's marker (between calls) */
	int stuck;             /* a call did not return: no more calls this time */
	uint64_t handle;       /* dlopen's */
	uint64_t fn_attach_fd, fn_seed, fn_detach, fn_enter, fn_exit, state_addr;
	uint64_t fn_attach_path, fn_abort; /* 0: a runtime without them */
	uint64_t slot[2 + 2 * ATTACH_MAX_LIBS]; /* every slot pointed (exe, libs; enter, exit) */
	uint64_t old[2 + 2 * ATTACH_MAX_LIBS]; /* their values before */
	size_t nslots;
	int patched;           /* the slots point at the runtime */
	size_t seeded, seed_frames; /* threads seeded, frames in all */
	uint64_t run_ns, stop_ns; /* CLOCK_MONOTONIC: the threads resumed with the
				   * hooks pointed, and stopped to put them back */
};

/* Stop every thread of t->pid, load runtime there (dlopen), hand it the
 * collector's mapping (/proc/COLLECTOR/fd/SHM_FD), seed the threads' open
 * frames, point the hooks' GOT slots at it, and let the process run on.
 * Returns 0, or -1 with one line in err and the process as it was (but
 * for a runtime loaded and detached). */
int attach_begin(struct attach_session *s, struct attach_target *t, const char *runtime,
		 pid_t collector, int shm_fd, char *err, size_t errlen);

/* Stop every thread, put the slots back, call cygprof_detach(), resume.
 * Returns 0, or -1 with err (s->gone: the process has ended). */
int attach_end(struct attach_session *s, char *err, size_t errlen);

/* Read and write the stopped process's memory (through read-only pages too). */
int attach_mem_read(struct attach_session *s, uint64_t addr, void *buf, size_t n);
int attach_mem_write(struct attach_session *s, uint64_t addr, const void *buf, size_t n);

/* How good a thread stopped with registers r is for the injected calls:
 * 4 asleep (nanosleep), 3 in another restartable syscall but futex, 2
 * running the program's own code (rip_in_exe), 1 other restartable
 * syscall, 0 anything else. */
int attach_thread_rank(const struct user_regs_struct *r, int rip_in_exe);

/* The instrumented functions open on a stopped thread with registers r,
 * outermost first, into fns (at most max); returns how many. */
size_t attach_walk(struct attach_session *s, const struct user_regs_struct *r, uint64_t *fns,
		   size_t max);

#endif
