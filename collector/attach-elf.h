/* SPDX-License-Identifier: MIT */
/* attach-elf.h - what record --attach needs to know about a running process
 * before touching it (docs/attach.md, steps 1 and 2). */
#ifndef CYGPROF_ATTACH_ELF_H
#define CYGPROF_ATTACH_ELF_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct attach_target {
	pid_t pid;
	char exe[PATH_MAX];    /* readlink of /proc/PID/exe */
	uint64_t exe_base;     /* load bias of the executable (0 for ET_EXEC) */
	uint64_t got_enter;    /* run-time address of the GOT slot of */
	uint64_t got_exit;     /* __cyg_profile_func_enter/_exit, 0: none */
	int got_enter_type;    /* R_X86_64_JUMP_SLOT or R_X86_64_GLOB_DAT */
	int got_exit_type;
	char libc[PATH_MAX];   /* path of the mapped libc, as in the maps */
	uint64_t libc_base;
	uint64_t dlopen_addr;  /* run-time address of dlopen in the target */
	uint64_t dlsym_addr;
	int profiled;          /* a cygprof runtime is mapped already */
};

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

#endif
