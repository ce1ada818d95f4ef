/* SPDX-License-Identifier: MIT */
/* attach-inject.c - load the runtime into a stopped process and point its
 * hooks at it, and the way back (docs/attach.md, steps 4, 6, 7 and 8):
 * function calls injected with ptrace on one stopped thread, the threads'
 * open instrumented frames found by walking their stacks, the GOT slots
 * written through /proc/PID/mem. */
#include "config.h"

#define _GNU_SOURCE
#include <cpuid.h>
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "attach-elf.h"
#include "symbols.h"

/* The calls' frame starts this far below the thread's stack pointer: the
 * x86-64 red zone, which the interrupted code may be using. */
#define INJECT_RED_ZONE 128
/* The frame's room for strings, one seed list, and pass_fds()'s
 * structures, past the strings. */
#define INJECT_DATA_SEEDS (ATTACH_SEED_MAX * 8)
#define INJECT_DATA_PASS 512
/* An injected call that has not returned after this long is given up:
 * the thread finishes it on its own, after the attacher let it go. */
#define INJECT_CALL_NS 20000000000ULL
/* How many more times the threads are stopped when none is at a good
 * place for the calls (2 ms apart). */
#define INJECT_TRIES 20
/* Bytes of a function searched for its call to the enter hook. */
#define FN_SCAN 512
/* Bytes above the stack pointer searched for a return address into the
 * program when the thread stopped inside a library. */
#define STACK_SCAN 4096

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

int attach_mem_read(struct attach_session *s, uint64_t addr, void *buf, size_t n)
{
	return pread(s->memfd, buf, n, (off_t)addr) == (ssize_t)n ? 0 : -1;
}

int attach_mem_write(struct attach_session *s, uint64_t addr, const void *buf, size_t n)
{
	return pwrite(s->memfd, buf, n, (off_t)addr) == (ssize_t)n ? 0 : -1;
}

/* ---- choosing the thread that runs the calls ----------------------------- */

#define ERESTARTSYS_ 512
#define ERESTARTNOINTR_ 513
#define ERESTARTNOHAND_ 514
#define ERESTART_RESTARTBLOCK_ 516

static int in_exe_text(const struct attach_session *s, uint64_t a)
{
	size_t i;

	for (i = 0; i < s->ntext; i++)
		if (a >= s->text[i][0] && a < s->text[i][1])
			return 1;
	return 0;
}

/* How good a place thread regs r is to run dlopen from (higher is
 * better): asleep in a restartable syscall (nothing of the program's is
 * half done there, and the sleep goes on afterwards), in another
 * syscall but a futex (which may be a lock dlopen wants), running the
 * program's own code (not inside the C library, which may hold a lock). */
int attach_thread_rank(const struct user_regs_struct *r, int rip_in_exe)
{
	long nr = (long)r->orig_rax, rv = (long)r->rax;
	int restartable = rv == -ERESTARTSYS_ || rv == -ERESTARTNOINTR_ ||
			  rv == -ERESTARTNOHAND_ || rv == -ERESTART_RESTARTBLOCK_;

	if (nr >= 0 && restartable && (nr == 35 /* nanosleep */ || nr == 230 /* clock_nanosleep */))
		return 4;
	if (nr >= 0 && restartable && nr != 202 /* futex */)
		return 3;
	if (nr < 0 && rip_in_exe)
		return 2;
	if (nr >= 0 && restartable)
		return 1;
	return 0;
}

/* Bytes of stack a thread needs below its stack pointer for the calls:
 * their frame (the xsave area, a seed list) and dlopen's own. */
#define INJECT_STACK (64 << 10)

/* Whether the stack pointer sp of process pid has INJECT_STACK bytes of its
 * mapping below it.  The main thread's [stack] grows when the thread
 * faults below it, but not for our writes through /proc/PID/mem (the
 * frame): half as much is enough there.  Unknown: yes. */
static int stack_room(pid_t pid, uint64_t sp)
{
	char p[64], line[512];
	int ok = 1;
	FILE *f;

	snprintf(p, sizeof p, "/proc/%d/maps", (int)pid);
	f = fopen(p, "re");
	if (!f)
		return 1;
	while (fgets(line, sizeof line, f)) {
		unsigned long long lo, hi;
		if (sscanf(line, "%llx-%llx", &lo, &hi) != 2 || sp <= lo || sp > hi)
			continue;
		ok = sp - lo >= (strstr(line, "[stack]") ? INJECT_STACK / 2 : INJECT_STACK);
		break;
	}
	fclose(f);
	return ok;
}

static int pick_thread(struct attach_session *s, int *rankp)
{
	int best = -1, rank = -2;
	size_t i;

	for (i = 0; i < s->th.n; i++) {
		struct user_regs_struct r;
		if (ptrace(PTRACE_GETREGS, s->th.tid[i], 0, &r) < 0)
			continue;
		int k = attach_thread_rank(&r, in_exe_text(s, r.rip));
		/* a thread on a small stack only when no other can */
		if (!stack_room(s->th.pid, r.rsp))
			k = -1;
		if (k > rank) {
			rank = k;
			best = (int)i;
		}
	}
	if (rankp)
		*rankp = rank;
	return best < 0 ? -1 : s->th.tid[best];
}

/* ---- calls in the target: the trampoline ------------------------------
 *
 * Each call runs on the chosen thread through a few instructions of ours
 * (below), written into the tail of an executable page where nothing of
 * the program lies (attach-elf.c, tramp_room()).  Before the first call the
 * thread's registers are stored in a frame on its own stack, below its red
 * zone; the trampoline saves its vector state there (xsave), then calls
 * the function named in the frame's descriptor, then makes a getpid system
 * call, the marker: the attacher, which resumed the thread with
 * PTRACE_SYSCALL, stops it there and reads the result, then either starts
 * the next call (rip back to the trampoline) or lets the thread go.  Past
 * the marker the trampoline calls the descriptor's undo function when one
 * is set, restores the vector state and every register from the frame, and
 * returns to where the thread was stopped.
 *
 * So whenever the attacher dies (SIGKILL), the kernel detaches the threads
 * and each is runnable: stopped ones resume where they were, and the
 * calling thread, mid-call or at the marker, finishes that call and comes
 * back through the same restoring path the attacher uses when it lives.  A
 * thread stopped in a system call to be restarted is first written as the
 * restart itself (rip on the syscall instruction, rax its number), which
 * is what the kernel would have done on resuming it. */

/* The descriptor, in the frame (offsets the trampoline uses). */
#define D_FN 0        /* the function called */
#define D_ARG 8       /* its six arguments */
#define D_UNDO 56     /* called past the marker when not 0 (the attacher died) */
#define D_UNDO_ARG 64 /* its argument */
#define D_GPR 72      /* where the registers are, for the pops */
#define D_XS 80       /* the xsave area */
#define D_RES 88      /* the call's rax */
#define D_XSAVE 96    /* 1: xsave, 0: fxsave */
#define D_SIZE 104
/* The registers as the trampoline pops them, the eflags last, then rip. */
#define GPR_N 16

/* The trampoline: position-independent, entered with rsp at the 64-byte
 * aligned xsave area and rbx at the descriptor (callee-saved: it survives
 * the call).  tramp_first saves the vector state and calls, tramp_next
 * only calls (the state is saved already); the call returns to the marker,
 * a getpid system call whose entry the attacher stops at.  A signal during
 * any of it finds the stack below the frame free. */
__asm__(".pushsection .rodata.cygprof_tramp,\"a\"\n"
	".balign 64\n"
	".hidden cygprof_tramp_first\n"
	".hidden cygprof_tramp_next\n"
	".hidden cygprof_tramp_marker\n"
	".hidden cygprof_tramp_end\n"
	"cygprof_tramp_first:\n"
	"	cmpq $0, 96(%rbx)\n"
	"	je 1f\n"
	"	movl $-1, %eax\n"
	"	movl $-1, %edx\n"
	"	xsave64 (%rsp)\n"
	"	jmp cygprof_tramp_next\n"
	"1:	fxsave64 (%rsp)\n"
	"cygprof_tramp_next:\n"
	"	leaq -64(%rsp), %rsp\n"
	"	movq 8(%rbx), %rdi\n"
	"	movq 16(%rbx), %rsi\n"
	"	movq 24(%rbx), %rdx\n"
	"	movq 32(%rbx), %rcx\n"
	"	movq 40(%rbx), %r8\n"
	"	movq 48(%rbx), %r9\n"
	"	xorl %eax, %eax\n"
	"	call *(%rbx)\n"
	"	movq %rax, 88(%rbx)\n"
	"	movl $39, %eax\n" /* getpid */
	"	syscall\n"
	"cygprof_tramp_marker:\n"
	"	movq 56(%rbx), %r11\n"
	"	testq %r11, %r11\n"
	"	je 2f\n"
	"	movq 64(%rbx), %rdi\n"
	"	call *%r11\n"
	"2:	movq 80(%rbx), %rsp\n"
	"	cmpq $0, 96(%rbx)\n"
	"	je 3f\n"
	"	movl $-1, %eax\n"
	"	movl $-1, %edx\n"
	"	xrstor64 (%rsp)\n"
	"	jmp 4f\n"
	"3:	fxrstor64 (%rsp)\n"
	"4:	movq 72(%rbx), %rsp\n"
	"	popq %r15\n"
	"	popq %r14\n"
	"	popq %r13\n"
	"	popq %r12\n"
	"	popq %r11\n"
	"	popq %r10\n"
	"	popq %r9\n"
	"	popq %r8\n"
	"	popq %rdi\n"
	"	popq %rsi\n"
	"	popq %rbp\n"
	"	popq %rbx\n"
	"	popq %rdx\n"
	"	popq %rcx\n"
	"	popq %rax\n"
	"	popfq\n"
	/* rip sits just below the red zone: pop it, then skip the red zone */
	"	ret $128\n"
	"cygprof_tramp_end:\n"
	".popsection\n");
extern const unsigned char cygprof_tramp_first[], cygprof_tramp_next[], cygprof_tramp_marker[],
	cygprof_tramp_end[];

#define TRAMP_OFF(sym) ((uint64_t)(sym - cygprof_tramp_first))

static int save_regs(struct attach_session *s, char *err, size_t errlen)
{
	struct iovec io = {s->xstate, sizeof s->xstate};

	if (ptrace(PTRACE_GETREGS, s->tid, 0, &s->saved) < 0)
		return attach_fail(err, errlen, "attach: cannot read the registers of thread %d: %s",
			    (int)s->tid, strerror(errno));
	s->xstate_len = 0;
	if (ptrace(PTRACE_GETREGSET, s->tid, (void *)(long)NT_X86_XSTATE, &io) == 0)
		s->xstate_len = io.iov_len;
	else if (ptrace(PTRACE_GETFPREGS, s->tid, 0, &s->fp) < 0)
		return attach_fail(err, errlen, "attach: cannot read the registers of thread %d: %s",
			    (int)s->tid, strerror(errno));
	s->have_regs = 1;
	return 0;
}

/* Put the saved registers back through ptrace: only for a call that
 * faulted (the thread stopped with the fault's signal, which the detach
 * then drops). */
static void restore_regs(struct attach_session *s)
{
	if (!s->have_regs)
		return;
	ptrace(PTRACE_SETREGS, s->tid, 0, &s->saved);
	if (s->xstate_len) {
		struct iovec io = {s->xstate, s->xstate_len};
		ptrace(PTRACE_SETREGSET, s->tid, (void *)(long)NT_X86_XSTATE, &io);
	} else {
		ptrace(PTRACE_SETFPREGS, s->tid, 0, &s->fp);
	}
	s->have_regs = 0;
	s->entered = 0;
}

/* The size of the vector state the trampoline saves, and how. */
static size_t xsave_size(int *xsave)
{
	unsigned a, b, c, d;

	*xsave = 0;
	if (__get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 27)) && /* OSXSAVE */
	    __get_cpuid_count(0xd, 0, &a, &b, &c, &d) && b >= 576) {
		*xsave = 1;
		return b;
	}
	return 512;
}

/* The frame of the calls on the chosen thread's stack, the trampoline in
 * place, the thread set to leave through it.  Nothing of the thread
 * changes here but memory below its red zone and its ptrace options. */
static int frame_setup(struct attach_session *s, size_t data_len, char *err, size_t errlen)
{
	const struct user_regs_struct *r = &s->saved;
	uint64_t gpr[GPR_N + 1], desc[D_SIZE / 8], rip = r->rip, rax = r->rax;
	size_t xs_len;
	long rv = (long)r->rax;
	static unsigned char zero[65536];

	if (!s->t->tramp_addr)
		return attach_fail(err, errlen, "attach: no room for the call trampoline in the "
				   "executable pages of process %d", (int)s->t->pid);
	/* a system call to be restarted: the restart itself (what the kernel
	 * does when it resumes the thread without a signal to deliver) */
	if ((long)r->orig_rax >= 0 &&
	    (rv == -ERESTARTSYS_ || rv == -ERESTARTNOINTR_ || rv == -ERESTARTNOHAND_ ||
	     rv == -ERESTART_RESTARTBLOCK_)) {
		rip -= 2;
		rax = rv == -ERESTART_RESTARTBLOCK_ ? 219 /* restart_syscall */ : r->orig_rax;
	}
	const uint64_t v[GPR_N + 1] = {r->r15, r->r14, r->r13, r->r12, r->r11, r->r10,
				       r->r9, r->r8, r->rdi, r->rsi, r->rbp, r->rbx,
				       r->rdx, r->rcx, rax, r->eflags, rip};
	memcpy(gpr, v, sizeof gpr);
	xs_len = (xsave_size(&s->xsave) + 63) & ~(size_t)63;
	s->gpr = r->rsp - INJECT_RED_ZONE - 8 - GPR_N * 8;
	s->desc = s->gpr - D_SIZE;
	s->data = (s->desc - data_len) & ~63ULL;
	s->xs = (s->data - xs_len) & ~63ULL;
	if (s->desc - s->xs > sizeof zero)
		return attach_fail(err, errlen, "attach: the call frame is too big");
	memset(desc, 0, sizeof desc);
	desc[D_GPR / 8] = s->gpr;
	desc[D_XS / 8] = s->xs;
	desc[D_XSAVE / 8] = (uint64_t)s->xsave;
	/* the xsave header must be zero for xrstor; the data area starts clean */
	if (attach_mem_write(s, s->xs, zero, s->desc - s->xs) < 0 ||
	    attach_mem_write(s, s->desc, desc, sizeof desc) < 0 ||
	    attach_mem_write(s, s->gpr, gpr, sizeof gpr) < 0)
		return attach_fail(err, errlen, "attach: cannot write the stack of thread %d",
				   (int)s->tid);
	/* the trampoline: the same bytes every attach */
	size_t tn = (size_t)TRAMP_OFF(cygprof_tramp_end);
	unsigned char have[ATTACH_TRAMP_ROOM];
	_Static_assert(ATTACH_TRAMP_ROOM >= 192, "trampoline room");
	if (tn > sizeof have)
		return attach_fail(err, errlen, "attach: the call trampoline is too big");
	if (attach_mem_read(s, s->t->tramp_addr, have, tn) < 0 ||
	    (memcmp(have, cygprof_tramp_first, tn) &&
	     attach_mem_write(s, s->t->tramp_addr, cygprof_tramp_first, tn) < 0))
		return attach_fail(err, errlen, "attach: cannot write the call trampoline into "
				   "process %d", (int)s->t->pid);
	/* the marker is a system call stop; no PTRACE_O_EXITKILL: the
	 * process must outlive us */
	if (ptrace(PTRACE_SETOPTIONS, s->tid, 0,
		   (void *)(long)(PTRACE_O_TRACECLONE | PTRACE_O_TRACESYSGOOD)) < 0)
		return attach_fail(err, errlen, "attach: cannot trace thread %d: %s", (int)s->tid,
				   strerror(errno));
	s->entered = 0;
	s->at_marker = 0;
	return 0;
}

/* Set the undo function the trampoline calls should we die (0: none). */
static int set_undo(struct attach_session *s, uint64_t fn, uint64_t arg)
{
	uint64_t u[2] = {fn, arg};

	return attach_mem_write(s, s->desc + D_UNDO, u, sizeof u);
}

/* A fault of the call itself (not a signal sent to the program). */
static int call_fault(struct attach_session *s, int sig)
{
	siginfo_t si;

	if (sig != SIGSEGV && sig != SIGBUS && sig != SIGILL && sig != SIGFPE)
		return 0;
	if (ptrace(PTRACE_GETSIGINFO, s->tid, 0, &si) < 0)
		return 1;
	return si.si_code > 0; /* from the kernel, not kill() */
}

/* Call fn(a0, ..., a5) on the chosen thread through the trampoline; *ret is
 * its rax.  Returns 0 with the thread stopped at the marker, or -1 with
 * err: the thread then either runs the call still (not returned in time:
 * it finishes on its own once let go), or is back where it was. */
static int call(struct attach_session *s, const char *what, uint64_t fn, const uint64_t *a,
		uint64_t *ret, char *err, size_t errlen)
{
	struct user_regs_struct r;
	uint64_t d[7] = {fn, a[0], a[1], a[2], a[3], a[4], a[5]};
	uint64_t start = mono_ns(), marker = s->t->tramp_addr + TRAMP_OFF(cygprof_tramp_marker);
	int st;

	if (s->stuck)
		return attach_fail(err, errlen, "attach: no %s in process %d: a call is still "
				   "running", what, (int)s->th.pid);
	/* the descriptor first: the registers below make it the next call */
	if (attach_mem_write(s, s->desc + D_FN, d, sizeof d) < 0)
		return attach_fail(err, errlen, "attach: cannot write the stack of thread %d",
				   (int)s->tid);
	if (s->entered) {
		if (ptrace(PTRACE_GETREGS, s->tid, 0, &r) < 0)
			return attach_fail(err, errlen, "attach: lost thread %d", (int)s->tid);
	} else {
		r = s->saved;
	}
	r.rip = s->t->tramp_addr +
		(s->entered ? TRAMP_OFF(cygprof_tramp_next) : TRAMP_OFF(cygprof_tramp_first));
	r.rsp = s->xs;
	r.rbx = s->desc;
	r.orig_rax = (unsigned long long)-1; /* no restart, no system call at the marker */
	r.eflags &= ~((1ULL << 8) | (1ULL << 10)); /* TF, DF: the ABI's flags */
	if (ptrace(PTRACE_SETREGS, s->tid, 0, &r) < 0)
		return attach_fail(err, errlen, "attach: cannot run %s in process %d: %s", what,
			    (int)s->th.pid, strerror(errno));
	/* from here on the thread leaves through the trampoline */
	s->entered = 1;
	s->at_marker = 0;
	if (ptrace(PTRACE_SYSCALL, s->tid, 0, 0) < 0)
		return attach_fail(err, errlen, "attach: cannot run %s in process %d: %s", what,
			    (int)s->th.pid, strerror(errno));
	for (;;) {
		pid_t w = waitpid(s->tid, &st, __WALL | WNOHANG);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return attach_fail(err, errlen, "attach: lost thread %d during %s: %s",
				    (int)s->tid, what, strerror(errno));
		if (w == 0) {
			if (mono_ns() - start > INJECT_CALL_NS) {
				/* stopped where it is; let go, it finishes the
				 * call and restores itself */
				ptrace(PTRACE_INTERRUPT, s->tid, 0, 0);
				while (waitpid(s->tid, &st, __WALL) < 0 && errno == EINTR)
					;
				s->stuck = 1;
				return attach_fail(err, errlen,
					    "attach: %s did not return in process %d (a lock held "
					    "by a stopped thread?)",
					    what, (int)s->th.pid);
			}
			struct timespec ts = {0, 50000};
			nanosleep(&ts, NULL);
			continue;
		}
		if (WIFEXITED(st) || WIFSIGNALED(st)) {
			s->gone = 1;
			return attach_fail(err, errlen, "attach: process %d ended during %s", (int)s->th.pid,
				    what);
		}
		if (!WIFSTOPPED(st))
			continue;
		int sig = WSTOPSIG(st);
		if (sig == (SIGTRAP | 0x80)) {
			/* a system call of the call's, or the marker's entry */
			struct user_regs_struct q;
			if (ptrace(PTRACE_GETREGS, s->tid, 0, &q) == 0 && q.rip == marker &&
			    q.orig_rax == 39 && (long)q.rax == -ENOSYS) {
				s->at_marker = 1;
				if (attach_mem_read(s, s->desc + D_RES, ret, sizeof *ret) < 0)
					return attach_fail(err, errlen, "attach: cannot read the "
						    "stack of thread %d", (int)s->tid);
				return 0;
			}
			ptrace(PTRACE_SYSCALL, s->tid, 0, 0);
			continue;
		}
		if (st >> 16 || sig == SIGTRAP || sig == SIGSTOP) {
			/* a ptrace event stop (clone, interrupt), a trap: go on */
			ptrace(PTRACE_SYSCALL, s->tid, 0, 0);
			continue;
		}
		if (call_fault(s, sig)) {
			/* the call crashed: the thread goes back to where it
			 * was, the fault dropped at the detach */
			struct user_regs_struct q;
			memset(&q, 0, sizeof q);
			ptrace(PTRACE_GETREGS, s->tid, 0, &q);
			restore_regs(s);
			return attach_fail(err, errlen, "attach: %s crashed in process %d (at %#llx)", what,
				    (int)s->th.pid, (unsigned long long)q.rip);
		}
		/* another signal for the thread: let its handler run on top */
		ptrace(PTRACE_SYSCALL, s->tid, 0, (void *)(long)sig);
	}
}

static int call0(struct attach_session *s, const char *what, uint64_t fn, uint64_t a0,
		 uint64_t a1, uint64_t a2, uint64_t *ret, char *err, size_t errlen)
{
	uint64_t a[6] = {a0, a1, a2, 0, 0, 0};
	return call(s, what, fn, a, ret, err, errlen);
}

/* A string of the target's, for a message. */
static void read_str(struct attach_session *s, uint64_t addr, char *buf, size_t n)
{
	size_t i;

	buf[0] = 0;
	if (!addr || n < 2)
		return;
	for (i = 0; i + 1 < n; i++)
		if (attach_mem_read(s, addr + i, buf + i, 1) < 0 || !buf[i])
			break;
	buf[i] = 0;
}

/* ---- the program's text and its functions ----------------------------- */

static int load_exe(struct attach_session *s, char *err, size_t errlen)
{
	char p[64], kp[PATH_MAX + 16];
	struct procmaps maps;
	size_t i;
	int rc;

	rc = procmaps_read(s->t->pid, &maps);
	if (rc)
		return attach_fail(err, errlen, "attach: cannot read /proc/%d/maps: %s",
				   (int)s->t->pid, strerror(-rc));
	s->ntext = 0;
	for (i = 0; i < maps.n; i++) {
		const struct procmap *m = &maps.v[i];

		if (m->exec && !strcmp(procmap_kernel_path(m, kp, sizeof kp), s->t->exe) &&
		    s->ntext < sizeof s->text / sizeof s->text[0]) {
			s->text[s->ntext][0] = m->start;
			s->text[s->ntext][1] = m->end;
			s->ntext++;
		}
	}
	procmaps_release(&maps);
	snprintf(p, sizeof p, "/proc/%d/exe", (int)s->t->pid);
	if (sym_elf_open(p, &s->elf) < 0)
		s->elf = NULL; /* no seeds: the runtime's recovery does */
	return 0;
}

/* Where function fn calls the hook whose GOT slot is slot (directly
 * through the GOT with -fno-plt, or through its PLT entry), from the
 * start of the function: the address after the first such call within
 * [fn, fn + len), or 0. */
static uint64_t hook_call_after(struct attach_session *s, uint64_t fn, uint64_t len, uint64_t slot,
				uint64_t from)
{
	unsigned char b[FN_SCAN + 8];
	uint64_t i;

	if (len > FN_SCAN)
		len = FN_SCAN;
	if (from > fn + len || attach_mem_read(s, fn, b, (size_t)len + 8) < 0)
		return 0;
	for (i = from - fn; i + 6 <= len + 8 && i < len; i++) {
		if (b[i] == 0xff && b[i + 1] == 0x15) { /* call *disp32(%rip) */
			int32_t d;
			memcpy(&d, b + i + 2, 4);
			if (fn + i + 6 + (uint64_t)(int64_t)d == slot)
				return fn + i + 6;
		}
		if (b[i] == 0xe8) { /* call rel32: a PLT entry jumping through slot? */
			int32_t d;
			unsigned char p[16];
			memcpy(&d, b + i + 1, 4);
			uint64_t tgt = fn + i + 5 + (uint64_t)(int64_t)d, k = 0;
			if (attach_mem_read(s, tgt, p, sizeof p) < 0)
				continue;
			if (p[0] == 0xf3 && p[1] == 0x0f && p[2] == 0x1e && p[3] == 0xfa)
				k = 4; /* endbr64 */
			if (p[k] == 0xf2)
				k++; /* bnd */
			if (p[k] == 0xff && p[k + 1] == 0x25) {
				memcpy(&d, p + k + 2, 4);
				if (tgt + k + 6 + (uint64_t)(int64_t)d == slot)
					return fn + i + 5;
			}
		}
	}
	return 0;
}

/* The instrumented function of the program containing code address a
 * (a return address: a - 1 is inside the call), or 0. */
static uint64_t fn_of(struct attach_session *s, uint64_t a, uint64_t *size)
{
	uint64_t start = 0, sz = 0;

	if (!s->elf || !in_exe_text(s, a - 1))
		return 0;
	if (!sym_elf_lookup(s->elf, a - 1 - s->t->exe_base, &start, &sz) || !sz)
		return 0;
	start += s->t->exe_base;
	if (!hook_call_after(s, start, sz, s->t->got_enter, start))
		return 0;
	*size = sz;
	return start;
}

/* Looks like a return address: in the program's text, after a call. */
static int after_call(struct attach_session *s, uint64_t a)
{
	unsigned char b[7];

	if (!in_exe_text(s, a) || attach_mem_read(s, a - 7, b, sizeof b) < 0)
		return 0;
	return b[2] == 0xe8 || (b[1] == 0xff && (b[2] & 0x38) == 0x10) ||
	       (b[4] == 0xff && (b[5] & 0x38) == 0x10) || (b[5] == 0xff && (b[6] & 0x38) == 0x10);
}

/* The instrumented functions open on thread tid's stack, outermost first
 * (docs/attach.md step 7).  Returns how many (0: none found). */
size_t attach_walk(struct attach_session *s, const struct user_regs_struct *r, uint64_t *fns,
		   size_t max)
{
	uint64_t inner[ATTACH_SEED_MAX], fp = r->rbp, floor = r->rsp, sz;
	size_t n = 0, i;

	if (max > ATTACH_SEED_MAX)
		max = ATTACH_SEED_MAX;
	if (in_exe_text(s, r->rip)) {
		/* stopped in the program's code: in its function once the
		 * enter hook returned, and until the exit hook is called */
		uint64_t f = fn_of(s, r->rip + 1, &sz);
		if (!f)
			return 0;
		uint64_t e = hook_call_after(s, f, sz, s->t->got_enter, f);
		uint64_t x = hook_call_after(s, f, sz, s->t->got_exit, f);
		if (!e || (x && r->rip >= x - 6))
			return 0; /* past its exit hook: where rbp is, is unknown */
		if (r->rip >= e) {
			inner[n++] = f;
		} else {
			/* not entered yet: its callers are open.  In the usual
			 * prologue (endbr64, push %rbp, mov %rsp,%rbp) rbp is
			 * the caller's frame until the push (the return address
			 * at rsp, or above the pushed rbp), f's own after it. */
			unsigned char pb[8];
			uint64_t k = 0, ra;
			if (attach_mem_read(s, f, pb, sizeof pb) < 0)
				return 0;
			if (pb[0] == 0xf3 && pb[1] == 0x0f && pb[2] == 0x1e && pb[3] == 0xfa)
				k = 4;
			if (pb[k] != 0x55 || pb[k + 1] != 0x48 || pb[k + 2] != 0x89 ||
			    pb[k + 3] != 0xe5)
				return 0;
			if (r->rip <= f + k + 1) {
				floor = r->rsp + (r->rip == f + k + 1 ? 8 : 0);
				if (attach_mem_read(s, floor, &ra, sizeof ra) < 0)
					return 0;
				uint64_t g = fn_of(s, ra, &sz);
				if (g)
					inner[n++] = g;
			} else if (r->rip < f + k + 4) {
				return 0; /* inside the mov: cannot be */
			}
		}
	} else {
		/* in a library: the innermost return address into the program,
		 * above the stack pointer (the library keeps no frame pointer) */
		uint64_t a;
		for (a = r->rsp; a < r->rsp + STACK_SCAN; a += 8) {
			uint64_t v;
			if (attach_mem_read(s, a, &v, sizeof v) < 0)
				return 0;
			if (after_call(s, v))
				break;
		}
		if (a >= r->rsp + STACK_SCAN)
			return 0;
		uint64_t ra, f;
		attach_mem_read(s, a, &ra, sizeof ra);
		/* an uninstrumented function of the program (a helper that
		 * sleeps) is passed over */
		f = fn_of(s, ra, &sz);
		/* returning from its exit hook: it is over */
		if (f && hook_call_after(s, f, sz, s->t->got_exit, ra - 6 > f ? ra - 6 : f) != ra)
			inner[n++] = f;
		floor = a;
	}
	/* the frame-pointer chain, from the innermost program frame */
	while (n < max && fp > floor && !(fp & 7) && fp - floor < (64ULL << 20)) {
		uint64_t fr[2], f;
		if (attach_mem_read(s, fp, fr, sizeof fr) < 0)
			break;
		if (!in_exe_text(s, fr[1] - 1))
			break; /* main's caller, a thread's start in the C library */
		f = fn_of(s, fr[1], &sz);
		if (f)
			inner[n++] = f;
		floor = fp;
		fp = fr[0];
	}
	for (i = 0; i < n; i++)
		fns[i] = inner[n - 1 - i];
	return n;
}

/* ---- descriptors for a process of another user ---------------------- */

/* The frame's data area (attach_begin()): the strings, one seed list at a
 * time, pass_fds()'s structures, the runtime's path last. */
struct inject_str {
	char fdpath[64];
	char names[8][32];
};
#define DATA_SEEDS sizeof(struct inject_str)
#define DATA_PASS (DATA_SEEDS + INJECT_DATA_SEEDS)
#define DATA_RUNTIME (DATA_PASS + INJECT_DATA_PASS)

/* The target could not open /proc/COLLECTOR/fd/N: it may not look into a
 * process of another user (cygprof run as root, the program as someone
 * else).  It connects instead to an abstract unix socket of ours (a random
 * name; we accept only a peer whose SO_PEERCRED pid is the target) and
 * receives the memfd and the runtime's file (rt_fd) with SCM_RIGHTS, so it
 * needs no access to our files or to our process.  *tfd, *trt: the
 * descriptors in the target.  Returns 0, or -1 with err. */
static int pass_fds(struct attach_session *s, int shm_fd, int rt_fd, int *tfd, int *trt,
		    char *err, size_t errlen)
{
	const struct attach_target *t = s->t;
	struct pass {
		struct sockaddr_un sun;
		struct msghdr msg;
		struct iovec iov;
		char byte;
		union {
			struct cmsghdr h;
			char buf[CMSG_SPACE(2 * sizeof(int))];
		} c;
	} m;
	uint64_t base = s->data + DATA_PASS, ret, a[6] = {0};
	int lfd = -1, conn = -1, sfd = -1, rc = -1;
	socklen_t len;

	_Static_assert(sizeof(struct pass) <= INJECT_DATA_PASS, "frame data layout");
	if (!t->socket_addr || !t->connect_addr || !t->recvmsg_addr || !t->close_addr)
		return attach_fail(err, errlen, "attach: process %d cannot open cygprof's shared "
				   "memory, and %s has no socket calls", (int)t->pid, t->libc);
	memset(&m, 0, sizeof m);
	m.sun.sun_family = AF_UNIX;
	snprintf(m.sun.sun_path + 1, sizeof m.sun.sun_path - 1, "cygprof-attach-%d-%llx",
		 (int)getpid(), (unsigned long long)mono_ns());
	len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(m.sun.sun_path + 1));
	lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&m.sun, len) < 0 || listen(lfd, 4) < 0) {
		attach_fail(err, errlen, "attach: cannot make a socket for process %d: %s", (int)t->pid,
			    strerror(errno));
		goto out;
	}
	/* the target's addresses of its own structures */
	m.msg.msg_iov = (struct iovec *)(uintptr_t)(base + offsetof(struct pass, iov));
	m.msg.msg_iovlen = 1;
	m.msg.msg_control = (void *)(uintptr_t)(base + offsetof(struct pass, c));
	m.msg.msg_controllen = sizeof m.c;
	m.iov.iov_base = (void *)(uintptr_t)(base + offsetof(struct pass, byte));
	m.iov.iov_len = 1;
	if (attach_mem_write(s, base, &m, sizeof m) < 0) {
		attach_fail(err, errlen, "attach: cannot write into process %d", (int)t->pid);
		goto out;
	}
	if (call0(s, "socket", t->socket_addr, AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, &ret, err,
		  errlen) < 0)
		goto out;
	if ((int)ret < 0) {
		attach_fail(err, errlen, "attach: process %d cannot make a socket", (int)t->pid);
		goto out;
	}
	sfd = (int)ret;
	/* should we die from here, the thread closes it */
	set_undo(s, t->close_addr, (uint64_t)sfd);
	if (call0(s, "connect", t->connect_addr, (uint64_t)sfd, base + offsetof(struct pass, sun),
		  len, &ret, err, errlen) < 0)
		goto out;
	if ((int)ret < 0) {
		attach_fail(err, errlen, "attach: process %d cannot connect to cygprof's socket "
			    "(another network namespace?)", (int)t->pid);
		goto out;
	}
	/* the connection waits in the backlog: only the target's is taken */
	for (;;) {
		struct ucred cr;
		socklen_t cl = sizeof cr;
		conn = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (conn < 0) {
			attach_fail(err, errlen, "attach: process %d did not connect to cygprof's socket",
				    (int)t->pid);
			goto out;
		}
		if (getsockopt(conn, SOL_SOCKET, SO_PEERCRED, &cr, &cl) == 0 && cr.pid == t->pid)
			break;
		close(conn);
	}
	{
		struct msghdr mh;
		struct iovec io = {.iov_base = &m.byte, .iov_len = 1};
		union {
			struct cmsghdr h;
			char buf[CMSG_SPACE(2 * sizeof(int))];
		} cb;
		int fds[2] = {shm_fd, rt_fd};
		memset(&mh, 0, sizeof mh);
		memset(&cb, 0, sizeof cb);
		mh.msg_iov = &io;
		mh.msg_iovlen = 1;
		mh.msg_control = cb.buf;
		mh.msg_controllen = sizeof cb.buf;
		struct cmsghdr *h = CMSG_FIRSTHDR(&mh);
		h->cmsg_level = SOL_SOCKET;
		h->cmsg_type = SCM_RIGHTS;
		h->cmsg_len = CMSG_LEN(sizeof fds);
		memcpy(CMSG_DATA(h), fds, sizeof fds);
		if (sendmsg(conn, &mh, MSG_NOSIGNAL) != 1) {
			attach_fail(err, errlen, "attach: cannot send to process %d: %s", (int)t->pid,
				    strerror(errno));
			goto out;
		}
	}
	a[0] = (uint64_t)sfd, a[1] = base + offsetof(struct pass, msg), a[2] = MSG_CMSG_CLOEXEC;
	if (call(s, "recvmsg", t->recvmsg_addr, a, &ret, err, errlen) < 0)
		goto out;
	if (ret != 1 || attach_mem_read(s, base + offsetof(struct pass, c), &m.c, sizeof m.c) < 0 ||
	    m.c.h.cmsg_level != SOL_SOCKET || m.c.h.cmsg_type != SCM_RIGHTS ||
	    m.c.h.cmsg_len != CMSG_LEN(2 * sizeof(int))) {
		attach_fail(err, errlen, "attach: process %d did not receive cygprof's shared memory",
			    (int)t->pid);
		goto out;
	}
	int got[2];
	memcpy(got, CMSG_DATA(&m.c.h), sizeof got);
	*tfd = got[0];
	*trt = got[1];
	rc = 0;
out:
	if (sfd >= 0 && !s->gone) {
		char e2[8];
		if (call0(s, "close", t->close_addr, (uint64_t)sfd, 0, 0, &ret, e2, sizeof e2) == 0)
			set_undo(s, 0, 0);
	}
	if (conn >= 0)
		close(conn);
	if (lfd >= 0)
		close(lfd);
	return rc;
}

/* The runtime's file for pass_fds(): where the target sees it (its root). */
static int open_runtime(const struct attach_session *s)
{
	char p[PATH_MAX + 32];
	int fd;

	snprintf(p, sizeof p, "/proc/%d/root%s", (int)s->t->pid, s->runtime);
	fd = open(p, O_RDONLY | O_CLOEXEC);
	return fd >= 0 ? fd : open(s->runtime, O_RDONLY | O_CLOEXEC);
}

/* ---- the session ------------------------------------------------------- */

static void cleanup(struct attach_session *s)
{
	if (s->memfd >= 0)
		close(s->memfd);
	s->memfd = -1;
	if (s->elf)
		sym_elf_close(s->elf);
	s->elf = NULL;
}

/* Stop everything and open the memory; the calling thread chosen. */
static int stop(struct attach_session *s, char *err, size_t errlen)
{
	char p[64];

	if (attach_stop_all(s->t->pid, &s->th, err, errlen) < 0)
		return -1;
	snprintf(p, sizeof p, "/proc/%d/mem", (int)s->t->pid);
	s->memfd = open(p, O_RDWR | O_CLOEXEC);
	if (s->memfd < 0) {
		attach_resume_all(&s->th);
		return attach_fail(err, errlen, "attach: cannot open %s: %s", p, strerror(errno));
	}
	return 0;
}

static int lookup(struct attach_session *s, uint64_t name, const char *what, uint64_t *addr,
		  char *err, size_t errlen)
{
	char buf[128];

	if (call0(s, "dlsym", s->t->dlsym_addr, s->handle, name, 0, addr, err, errlen) < 0)
		return -1;
	if (!*addr) {
		snprintf(buf, sizeof buf, "%s", what);
		return attach_fail(err, errlen, "attach: the runtime %s has no %s", s->runtime, buf);
	}
	return 0;
}

/* Let every thread go: the calling thread, stopped at the trampoline's
 * marker (or in a call that did not return), leaves through it. */
static void release(struct attach_session *s)
{
	s->run_ns = mono_ns();
	attach_resume_all(&s->th);
}

/* The descriptors by the socket (pass_fds()), once: *tfd the mapping's and
 * *trt the runtime's, in the target. */
static int by_socket(struct attach_session *s, int shm_fd, int *tfd, int *trt, char *err,
		     size_t errlen)
{
	int rt, rc;

	if (*tfd >= 0)
		return 0;
	rt = open_runtime(s);
	if (rt < 0)
		return attach_fail(err, errlen, "attach: cannot open %s: %s", s->runtime,
				   strerror(errno));
	rc = pass_fds(s, shm_fd, rt, tfd, trt, err, errlen);
	close(rt);
	/* should we die before it is attached, the thread closes it */
	if (!rc)
		set_undo(s, s->t->close_addr, (uint64_t)*tfd);
	return rc;
}

/* Close descriptor *fd of the target (and forget it). */
static void target_close(struct attach_session *s, int *fd)
{
	char e2[8];
	uint64_t ret;

	if (*fd >= 0 && s->t->close_addr && !s->gone &&
	    call0(s, "close", s->t->close_addr, (uint64_t)*fd, 0, 0, &ret, e2, sizeof e2) == 0)
		*fd = -1;
}

int attach_begin(struct attach_session *s, struct attach_target *t, const char *runtime,
		 pid_t collector, int shm_fd, char *err, size_t errlen)
{
	static const char *const names[8] = {"cygprof_attach_fd", "cygprof_attach_seed",
					     "cygprof_detach", "__cyg_profile_func_enter",
					     "__cyg_profile_func_exit", "cygprof_attach_state",
					     "cygprof_attach_path", "cygprof_attach_abort"};
	struct inject_str str;
	uint64_t ret, *seeds = NULL;
	size_t *nseeds = NULL, i, rtlen;
	int rc = -1, attached = 0, tfd = -1, trt = -1, r;

	memset(s, 0, sizeof *s);
	s->t = t;
	s->memfd = -1;
	/* a runtime loaded before is loaded again from where it is mapped */
	snprintf(s->runtime, sizeof s->runtime, "%s", t->reattach ? t->runtime : runtime);
	if (load_exe(s, err, errlen) < 0) {
		cleanup(s);
		return -1;
	}
	/* no thread asleep or in the program's own code (all inside the C
	 * library, which may hold a lock dlopen needs): let it run a little
	 * and look again, a few times */
	for (int tries = 0;; tries++) {
		int rank;
		if (stop(s, err, errlen) < 0) {
			cleanup(s);
			return -1;
		}
		s->tid = pick_thread(s, &rank);
		if (rank >= 2 || tries == INJECT_TRIES)
			break;
		close(s->memfd);
		s->memfd = -1;
		attach_resume_all(&s->th);
		struct timespec ts = {0, 2000000};
		nanosleep(&ts, NULL);
	}
	/* the open frames of every thread, before any call changes one */
	seeds = calloc(s->th.n, ATTACH_SEED_MAX * sizeof *seeds);
	nseeds = calloc(s->th.n, sizeof *nseeds);
	if (!seeds || !nseeds) {
		attach_fail(err, errlen, "attach: out of memory");
		goto out;
	}
	for (i = 0; i < s->th.n; i++) {
		struct user_regs_struct ur;
		if (ptrace(PTRACE_GETREGS, s->th.tid[i], 0, &ur) == 0)
			nseeds[i] = attach_walk(s, &ur, seeds + i * ATTACH_SEED_MAX,
						ATTACH_SEED_MAX);
	}
	if (s->tid <= 0 || save_regs(s, err, errlen) < 0) {
		if (s->tid <= 0)
			attach_fail(err, errlen, "attach: no thread of process %d can be used", (int)t->pid);
		goto out;
	}
	/* the frame of the calls, its strings */
	rtlen = strlen(s->runtime) + 1;
	if (frame_setup(s, DATA_RUNTIME + (rtlen < 32 ? 32 : rtlen), err, errlen) < 0)
		goto out;
	memset(&str, 0, sizeof str);
	snprintf(str.fdpath, sizeof str.fdpath, "/proc/%d/fd/%d", (int)collector, shm_fd);
	for (i = 0; i < 8; i++)
		snprintf(str.names[i], sizeof str.names[i], "%s", names[i]);
	if (attach_mem_write(s, s->data, &str, sizeof str) < 0 ||
	    attach_mem_write(s, s->data + DATA_RUNTIME, s->runtime, rtlen) < 0) {
		attach_fail(err, errlen, "attach: cannot write into process %d", (int)t->pid);
		goto out;
	}
#define AT_DATA(off) (s->data + (uint64_t)(off))
#define NAME(k) AT_DATA(offsetof(struct inject_str, names) + (k) * sizeof str.names[0])
	/* 1. the runtime, by its path; a process that may not read it (another
	 * user's) gets it by the socket, with the mapping.  Loaded, it does
	 * nothing until attached. */
	if (call0(s, "dlopen", t->dlopen_addr, AT_DATA(DATA_RUNTIME), RTLD_NOW, 0, &ret, err,
		  errlen) < 0)
		goto out;
	s->handle = ret;
	if (!s->handle) {
		char why[256] = "";
		if (t->dlerror_addr &&
		    call0(s, "dlerror", t->dlerror_addr, 0, 0, 0, &ret, err, errlen) == 0)
			read_str(s, ret, why, sizeof why);
		if (strstr(why, "Permission denied") && t->socket_addr) {
			char fdp[32];
			if (by_socket(s, shm_fd, &tfd, &trt, err, errlen) < 0)
				goto out;
			snprintf(fdp, sizeof fdp, "/proc/self/fd/%d", trt);
			if (attach_mem_write(s, AT_DATA(DATA_RUNTIME), fdp, strlen(fdp) + 1) < 0) {
				attach_fail(err, errlen, "attach: cannot write into process %d",
					    (int)t->pid);
				goto out;
			}
			if (call0(s, "dlopen", t->dlopen_addr, AT_DATA(DATA_RUNTIME), RTLD_NOW, 0,
				  &ret, err, errlen) < 0)
				goto out;
			s->handle = ret;
			if (!s->handle && t->dlerror_addr &&
			    call0(s, "dlerror", t->dlerror_addr, 0, 0, 0, &ret, err, errlen) == 0)
				read_str(s, ret, why, sizeof why);
		}
		if (!s->handle) {
			attach_fail(err, errlen, "attach: process %d cannot load %s%s%s",
				    (int)t->pid, s->runtime, why[0] ? ": " : "", why);
			goto out;
		}
	}
	target_close(s, &trt); /* loaded: the mapping keeps the file */
	/* 2. its entries */
	if (lookup(s, NAME(0), names[0], &s->fn_attach_fd, err, errlen) < 0 ||
	    lookup(s, NAME(1), names[1], &s->fn_seed, err, errlen) < 0 ||
	    lookup(s, NAME(2), names[2], &s->fn_detach, err, errlen) < 0 ||
	    lookup(s, NAME(3), names[3], &s->fn_enter, err, errlen) < 0 ||
	    lookup(s, NAME(4), names[4], &s->fn_exit, err, errlen) < 0)
		goto out;
	/* the data symbol, and the entries a runtime before them lacks */
	if (call0(s, "dlsym", t->dlsym_addr, s->handle, NAME(5), 0, &s->state_addr, err, errlen) <
		    0 ||
	    call0(s, "dlsym", t->dlsym_addr, s->handle, NAME(6), 0, &s->fn_attach_path, err,
		  errlen) < 0 ||
	    call0(s, "dlsym", t->dlsym_addr, s->handle, NAME(7), 0, &s->fn_abort, err, errlen) < 0)
		goto out;
	/* 3. attached to the collector's mapping.  Should we die from here
	 * until the hooks are pointed, the thread undoes it on its way out
	 * (docs/attach.md, "When the attacher dies"). */
	if (s->fn_abort && set_undo(s, s->fn_abort, (uint64_t)getpid()) < 0) {
		attach_fail(err, errlen, "attach: cannot write the stack of thread %d",
			    (int)s->tid);
		goto out;
	}
	uint64_t fdpath = AT_DATA(offsetof(struct inject_str, fdpath));
	r = 1; /* not called yet */
	if (tfd < 0 && s->fn_attach_path) {
		/* opened and taken inside one call: no descriptor left over */
		if (call0(s, names[6], s->fn_attach_path, fdpath, 0, 0, &ret, err, errlen) < 0)
			goto out;
		r = (int)ret;
		if (r == -EACCES || r == -EPERM || r == -ENOENT) {
			/* it may not look into our process: by the socket */
			if (by_socket(s, shm_fd, &tfd, &trt, err, errlen) < 0)
				goto out;
			target_close(s, &trt);
			r = 1;
		}
	}
	if (r == 1) {
		if (tfd < 0) {
			/* a runtime without cygprof_attach_path */
			if (!t->open_addr) {
				attach_fail(err, errlen, "attach: no open in %s of process %d",
					    t->libc, (int)t->pid);
				goto out;
			}
			if (call0(s, "open", t->open_addr, fdpath, O_RDWR | O_CLOEXEC, 0, &ret, err,
				  errlen) < 0)
				goto out;
			tfd = (int)ret;
			if (tfd < 0 && by_socket(s, shm_fd, &tfd, &trt, err, errlen) < 0)
				goto out;
			target_close(s, &trt);
		}
		/* the runtime closes tfd when it takes it: from here on its
		 * number may be the program's again, only the runtime's undo */
		if (set_undo(s, s->fn_abort, s->fn_abort ? (uint64_t)getpid() : 0) < 0) {
			attach_fail(err, errlen, "attach: cannot write the stack of thread %d",
				    (int)s->tid);
			goto out;
		}
		if (call0(s, names[0], s->fn_attach_fd, (uint64_t)tfd, 0, 0, &ret, err, errlen) < 0)
			goto out;
		r = (int)ret;
		if (!r)
			tfd = -1; /* the runtime took it (and closed it) */
	}
	if (r < 0) {
		int e = -r;
		if (e == EBUSY)
			attach_fail(err, errlen, "attach: process %d is already being profiled by cygprof",
			     (int)t->pid);
		else if (e == EALREADY)
			attach_fail(err, errlen,
			     "attach: process %d was attached before, and its runtime cannot be "
			     "attached again",
			     (int)t->pid);
		else
			attach_fail(err, errlen, "attach: the runtime in process %d refused: %s",
			     (int)t->pid, strerror(e));
		goto out;
	}
	attached = 1;
	/* the open frames: one list at a time through the frame */
	for (i = 0; i < s->th.n; i++) {
		if (!nseeds[i])
			continue;
		if (attach_mem_write(s, AT_DATA(DATA_SEEDS), seeds + i * ATTACH_SEED_MAX,
				     nseeds[i] * sizeof *seeds) < 0)
			break;
		if (call0(s, names[1], s->fn_seed, (uint64_t)s->th.tid[i], AT_DATA(DATA_SEEDS),
			  nseeds[i], &ret, err, errlen) < 0)
			goto out;
		s->seeded++;
		s->seed_frames += nseeds[i];
	}
	/* 4. the hooks: the runtime's from now on, in the executable and in
	 * the instrumented libraries.  From the first slot on, the runtime
	 * stays attached should we die (the hooks drop everything once they
	 * see the collector gone; the next attach takes the process over). */
	if (set_undo(s, 0, 0) < 0) {
		attach_fail(err, errlen, "attach: cannot write the stack of thread %d",
			    (int)s->tid);
		goto out;
	}
	s->nslots = 0;
	if (t->got_enter && t->got_exit) {
		s->slot[s->nslots++] = t->got_enter;
		s->slot[s->nslots++] = t->got_exit;
	}
	for (i = 0; i < t->nlibs; i++) {
		s->slot[s->nslots++] = t->lib_enter[i];
		s->slot[s->nslots++] = t->lib_exit[i];
	}
	for (i = 0; i < s->nslots; i++) {
		if (attach_mem_read(s, s->slot[i], &s->old[i], 8) < 0)
			break;
		/* pointed at the runtime by an attacher that died without
		 * putting them back: at the detach, libc's empty hooks */
		if (s->old[i] == (i & 1 ? s->fn_exit : s->fn_enter) && t->libc_hook[i & 1])
			s->old[i] = t->libc_hook[i & 1];
	}
	size_t done = 0;
	if (i == s->nslots)
		for (; done < s->nslots; done++)
			if (attach_mem_write(s, s->slot[done], done & 1 ? &s->fn_exit : &s->fn_enter,
					     8) < 0)
				break;
	if (i < s->nslots || done < s->nslots) {
		int e = errno;
		while (done-- > 0)
			attach_mem_write(s, s->slot[done], &s->old[done], 8);
		attach_fail(err, errlen, "attach: cannot write the hooks' slots in process %d: %s",
		     (int)t->pid, strerror(e));
		goto out;
	}
	s->patched = 1;
	rc = 0;
out:
	if (rc < 0 && attached && !s->gone && !s->stuck) {
		char e2[8];
		if (call0(s, names[2], s->fn_detach, 0, 0, 0, &ret, e2, sizeof e2) == 0)
			set_undo(s, 0, 0);
	}
	if (rc < 0)
		target_close(s, &tfd); /* the runtime did not take the mapping */
	target_close(s, &trt);
	release(s);
	cleanup(s);
	free(seeds);
	free(nseeds);
	return rc;
#undef AT_DATA
#undef NAME
}

int attach_end(struct attach_session *s, char *err, size_t errlen)
{
	uint64_t ret;
	int rc = 0;

	if (!s->patched)
		return 0;
	s->gone = 0;
	s->stuck = 0;
	uint64_t t0 = mono_ns();
	if (stop(s, err, errlen) < 0) {
		s->gone = 1;
		return -1;
	}
	/* the threads stopped one after the other: the middle of it */
	s->stop_ns = t0 + (mono_ns() - t0) / 2;
	for (size_t i = 0; i < s->nslots; i++)
		if (attach_mem_write(s, s->slot[i], &s->old[i], 8) < 0)
			rc = attach_fail(err, errlen,
				  "attach: cannot write the hooks' slots back in process %d",
				  (int)s->t->pid);
	s->patched = 0;
	s->tid = pick_thread(s, NULL);
	if (s->tid > 0 && save_regs(s, err, errlen) == 0 && frame_setup(s, 64, err, errlen) == 0) {
		/* should we die, the runtime stays attached with the hooks put
		 * back: the next attach takes it over */
		if (call0(s, "cygprof_detach", s->fn_detach, 0, 0, 0, &ret, err, errlen) < 0)
			rc = -1;
	} else if (!rc) {
		rc = s->tid > 0 ? -1
				: attach_fail(err, errlen, "attach: no thread of process %d can be "
					      "used to detach", (int)s->t->pid);
	}
	attach_resume_all(&s->th);
	cleanup(s);
	return rc;
}
