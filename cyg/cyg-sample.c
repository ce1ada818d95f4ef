/* SPDX-License-Identifier: MIT */
/* cyg-sample.c - CPU-time samples taken inside the program
 * (CYG_F_CPUSAMPLE): a signal every cpu_period_ns of each thread's CPU
 * time, handled on that thread, charged to its current call-path node
 * with no stack walk (the shadow stack's top is where the thread is), or
 * to profiler overhead when the thread is inside a hook.
 *
 * The engines, chosen per thread at its registration:
 *  - perf: perf_event_open(PERF_COUNT_SW_TASK_CLOCK) on the thread itself,
 *    exclude_kernel, a signal on every overflow (O_ASYNC, F_SETSIG, and
 *    F_SETOWN_EX to this very thread).  exclude_kernel matters: an overflow
 *    taken in the kernel would leave the signal pending while the thread
 *    then sleeps in a system call, which epoll_wait, nanosleep or poll
 *    would return EINTR for; counted in user mode only, the signal is
 *    delivered at once, on the way back to user mode, and never pending
 *    while the thread sleeps.  The rate is exact (hrtimer-driven).
 *  - timer: where perf is refused (perf_event_paranoid 3, seccomp, no
 *    perf events), timer_create(CLOCK_THREAD_CPUTIME_ID, SIGEV_THREAD_ID)
 *    with the same signal.  The kernel checks CPU timers at the scheduler
 *    tick: at most HZ samples a second (250 on the VM the project measures
 *    on), and a sample may be taken in a system call and stay pending.
 *    CYGPROF_CPU_SAMPLER=timer forces it (for the tests).
 * Both descriptors are moved out of the program's way (at least
 * CYG_SMP_FD_MIN, or half of RLIMIT_NOFILE) and are close-on-exec.
 *
 * The signal is a real-time one (ctl->cpu_signo, SIGRTMAX -
 * CYG_CPU_SIG_FROM_MAX); its handler is the runtime's, SA_RESTART |
 * SA_ONSTACK | SA_SIGINFO, async-signal-safe (no libc call: loads, stores,
 * the ucontext), errno kept.  What the program asks of that signal
 * (sigaction, signal, its mask) goes through the wrappers of cyg-wrap.c:
 * its handler is remembered and called for a signal that is not a sample
 * (someone sent it), and the signal is never blocked.  A fork points the
 * switch records away in the parent (prepare handler) and gives the child
 * a sampler of its own; exec closes the descriptors (close-on-exec).
 *
 * Runs inside the traced program: the handler anywhere in it, the rest on
 * cold paths (thread registration and end, fork, attach).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <elf.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "cyg-cold.h"

int cyg_smp_signo;             /* the samples' signal while the handler is installed, 0 when not */
static uint64_t smp_period;     /* ns of CPU time */
static int smp_force_timer;     /* CYGPROF_CPU_SAMPLER=timer */
static uintptr_t text_lo, text_hi; /* the runtime's own code (its executable PT_LOAD) */
/* What the program asked for our signal (sigaction, signal): called for a
 * signal that is not a sample.  Written by the wrappers, read by the
 * handler; SIG_DFL until the program sets one. */
static struct sigaction prog_act;
static int prog_act_set;

/* ---- the runtime's own code -------------------------------------------- */

extern const char __ehdr_start[] HIDDEN; /* the ELF header of this object (the linker's) */

/* The executable segment of this object, from its own program headers in
 * memory: no loader lock (an attach runs while the program is stopped). */
static void find_text(void)
{
#if defined(__LP64__)
	const Elf64_Ehdr *eh = (const void *)__ehdr_start;
	const Elf64_Phdr *ph = (const void *)(__ehdr_start + eh->e_phoff);
#else
	const Elf32_Ehdr *eh = (const void *)__ehdr_start;
	const Elf32_Phdr *ph = (const void *)(__ehdr_start + eh->e_phoff);
#endif
	uintptr_t bias = 0, self = (uintptr_t)(void *)find_text;

	for (unsigned i = 0; i < eh->e_phnum; i++)
		if (ph[i].p_type == PT_LOAD && ph[i].p_offset == 0) {
			bias = (uintptr_t)__ehdr_start - (uintptr_t)ph[i].p_vaddr;
			break;
		}
	for (unsigned i = 0; i < eh->e_phnum; i++) {
		uintptr_t lo = bias + (uintptr_t)ph[i].p_vaddr, hi = lo + (uintptr_t)ph[i].p_memsz;
		if (ph[i].p_type == PT_LOAD && (ph[i].p_flags & PF_X) && lo <= self && self < hi) {
			text_lo = lo;
			text_hi = hi;
		}
	}
}

/* The instruction the signal interrupted. */
static uintptr_t interrupted_pc(const void *ucv)
{
	const ucontext_t *uc = ucv;
#if defined(__x86_64__)
	return (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
#elif defined(__i386__)
	return (uintptr_t)uc->uc_mcontext.gregs[REG_EIP];
#elif defined(__aarch64__)
	return (uintptr_t)uc->uc_mcontext.pc;
#else
	(void)uc;
	return 0;
#endif
}

/* ---- the handler ---------------------------------------------------------- */

static int is_sample(const siginfo_t *si)
{
	const struct cyg_tls_smp *s = &cyg_tls.smp;

	if (si->si_code == POLL_IN)
		return s->method == CYG_SMP_PERF && si->si_fd == s->fd;
	if (si->si_code == SI_TIMER)
		return s->method == CYG_SMP_TIMER && si->si_value.sival_int == s->tok;
	return 0;
}

/* A signal that is not a sample: the program's handler, if it set one. */
static void pass_on(int sig, siginfo_t *si, void *uc)
{
	struct sigaction a = prog_act;

	if (!prog_act_set)
		return;
	if (a.sa_flags & SA_SIGINFO) {
		if (a.sa_sigaction)
			a.sa_sigaction(sig, si, uc);
	} else if (a.sa_handler != SIG_DFL && a.sa_handler != SIG_IGN) {
		a.sa_handler(sig);
	}
}

/* Where a sample goes: the node of t's innermost recorded frame (past
 * max_depth: the deepest one recorded), if it lies in the mapping. */
static struct cyg_node_ext *current_ext(const struct cyg_thread *t)
{
	uint32_t d = __atomic_load_n(&t->depth, __ATOMIC_RELAXED);
	uint64_t soff = __atomic_load_n(&t->stack_off, __ATOMIC_ACQUIRE);
	uint64_t lim = (uint64_t)(__atomic_load_n(&cyg_end, __ATOMIC_ACQUIRE) - cyg_base);

	if (d >= t->stack_cap || !soff ||
	    !cyg_span_ok(soff, ((uint64_t)d + 1) * sizeof(struct cyg_frame)))
		return NULL;
	uint64_t g = ((const struct cyg_frame *)AT(soff))[d].node;
	if (g * CYG_NODE_SIZE < CYG_AREA_OFF || g * CYG_NODE_SIZE + CYG_NODE_SLOT > lim)
		return NULL;
	return CYG_NODE_EXT(CYG_NODE(cyg_base, g));
}

static void on_signal(int sig, siginfo_t *si, void *uc)
{
	int saved = errno;

	if (!is_sample(si)) {
		pass_on(sig, si, uc);
		errno = saved;
		return;
	}
	struct cyg_thread *t = cyg_tls.t;
	if (!t || cyg_state <= 0 || cyg_stale(t)) {
		if (cyg_state > 0 && cyg_proc_off)
			__atomic_add_fetch(&((struct cyg_proc *)AT(cyg_proc_off))->smp_unattrib, 1,
					   __ATOMIC_RELAXED);
		errno = saved;
		return;
	}
	t->smp_samples++;
	struct cyg_node_ext *x = current_ext(t);
	uintptr_t pc = interrupted_pc(uc);
	if (!x) {
		t->smp_nonode++;
	} else if (__atomic_load_n(&t->busy, __ATOMIC_RELAXED) || (pc >= text_lo && pc < text_hi)) {
		/* inside a hook (busy, or on its way in or out): the profiler's */
		x->ovh++;
		t->smp_ovh++;
	} else {
		x->samples++;
	}
	errno = saved;
}

/* ---- the program's action for our signal (cyg-wrap.c's wrappers) -------- */

static int (*real_sigaction_fn)(int, const struct sigaction *, struct sigaction *);
static int (*real_sigmask_fn)(int, const sigset_t *, sigset_t *);

int cyg__real_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	if (!real_sigaction_fn)
		real_sigaction_fn = (int (*)(int, const struct sigaction *, struct sigaction *))
			cyg_next_sym("sigaction");
	if (!real_sigaction_fn) {
		errno = ENOSYS;
		return -1;
	}
	return real_sigaction_fn(sig, act, old);
}

int cyg__real_sigmask(int how, const sigset_t *set, sigset_t *old)
{
	if (!real_sigmask_fn)
		real_sigmask_fn = (int (*)(int, const sigset_t *, sigset_t *))
			cyg_next_sym("pthread_sigmask");
	if (!real_sigmask_fn)
		return ENOSYS;
	return real_sigmask_fn(how, set, old);
}

int cyg__smp_sigaction(const struct sigaction *act, struct sigaction *old)
{
	struct sigaction prev = prog_act;

	if (!prog_act_set) {
		memset(&prev, 0, sizeof prev);
		prev.sa_handler = SIG_DFL;
	}
	if (act) {
		prog_act = *act;
		prog_act_set = 1;
	}
	if (old)
		*old = prev;
	return 0;
}

/* ---- installing the handler (attach) and putting things back (detach) ----- */

static struct sigaction before_install; /* the action the runtime replaced */

void cyg__smp_init(void)
{
	struct sigaction sa;
	const char *env = getenv("CYGPROF_CPU_SAMPLER");
	int sig = cyg_ctl->cpu_signo;

	if (!(cyg_ctl->flags & CYG_F_CPUSAMPLE) || !cyg_ctl->cpu_period_ns || cyg_smp_signo)
		return;
	if (sig < SIGRTMIN || sig > SIGRTMAX)
		sig = SIGRTMAX - CYG_CPU_SIG_FROM_MAX;
	smp_period = cyg_ctl->cpu_period_ns;
	smp_force_timer = env && !strcmp(env, "timer");
	find_text();
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_signal;
	sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
	sigemptyset(&sa.sa_mask);
	if (cyg__real_sigaction(sig, &sa, &before_install))
		return;
	/* what the program had set (an attach: long ago) is its action */
	if (before_install.sa_handler != SIG_DFL) {
		prog_act = before_install;
		prog_act_set = 1;
	}
	__atomic_store_n(&cyg_smp_signo, sig, __ATOMIC_RELEASE);
}

void cyg__smp_uninstall(void)
{
	int sig = cyg_smp_signo;

	if (!sig)
		return;
	__atomic_store_n(&cyg_smp_signo, 0, __ATOMIC_RELEASE);
	if (prog_act_set)
		cyg__real_sigaction(sig, &prog_act, NULL);
	else
		cyg__real_sigaction(sig, &before_install, NULL);
}

/* ---- one thread's sampler ------------------------------------------------- */

/* Move fd to a high number, out of the program's way (close-on-exec);
 * where that fails it stays where it is. */
static int move_high(int fd)
{
	struct rlimit rl;
	long lo = CYG_SMP_FD_MIN;

	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur != RLIM_INFINITY &&
	    (long)(rl.rlim_cur / 2) < lo)
		lo = (long)(rl.rlim_cur / 2);
	if (fd >= lo)
		return fd;
	int hi = fcntl(fd, F_DUPFD_CLOEXEC, (int)lo);
	if (hi < 0)
		return fd;
	close(fd);
	return hi;
}

static int open_perf(struct cyg_thread *t)
{
	struct perf_event_attr a;
	struct f_owner_ex own = {F_OWNER_TID, (pid_t)t->tid};
	int fd;

	memset(&a, 0, sizeof a);
	a.size = sizeof a;
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_TASK_CLOCK;
	a.sample_period = smp_period;
	a.wakeup_events = 1;
	a.exclude_kernel = 1; /* see the top comment: never pending in a syscall */
	a.exclude_hv = 1;
	fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return -1;
	/* moved before O_ASYNC: the signal names the descriptor it was set on */
	fd = move_high(fd);
	if (fcntl(fd, F_SETSIG, cyg_smp_signo) || fcntl(fd, F_SETOWN_EX, &own) ||
	    fcntl(fd, F_SETFL, O_ASYNC)) {
		close(fd);
		return -1;
	}
	cyg_tls.smp.fd = fd;
	t->smp_fd = fd;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	cyg_tls.smp.method = CYG_SMP_PERF;
	t->smp_method = CYG_SMP_PERF;
	return 0;
}

static int open_timer(struct cyg_thread *t)
{
	struct sigevent sev;
	struct itimerspec its;
	timer_t id;

	memset(&sev, 0, sizeof sev);
	sev.sigev_notify = SIGEV_THREAD_ID;
	sev.sigev_signo = cyg_smp_signo;
	sev._sigev_un._tid = (pid_t)t->tid;
	sev.sigev_value.sival_int = (int)t->tid;
	if (timer_create(CLOCK_THREAD_CPUTIME_ID, &sev, &id))
		return -1;
	cyg_tls.smp.tok = (int)t->tid;
	cyg_tls.smp.timer = (uint64_t)(uintptr_t)id;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	cyg_tls.smp.method = CYG_SMP_TIMER;
	t->smp_method = CYG_SMP_TIMER;
	t->smp_timer = (uint64_t)(uintptr_t)id;
	its.it_interval.tv_sec = (time_t)(smp_period / 1000000000u);
	its.it_interval.tv_nsec = (long)(smp_period % 1000000000u);
	its.it_value = its.it_interval;
	if (timer_settime(id, 0, &its, NULL)) {
		cyg_tls.smp.method = CYG_SMP_NONE;
		t->smp_method = CYG_SMP_NONE;
		timer_delete(id);
		return -1;
	}
	return 0;
}

/* Stop the calling thread's sampler (what its TLS names). */
static void smp_stop(void)
{
	struct cyg_tls_smp *s = &cyg_tls.smp;
	uint32_t m = s->method;

	s->method = CYG_SMP_NONE; /* a signal still on its way is not ours now */
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	if (m == CYG_SMP_PERF)
		close(s->fd);
	else if (m == CYG_SMP_TIMER)
		timer_delete((timer_t)(uintptr_t)s->timer);
}

static uint64_t own_cpu_ns(void);

/* The TLS blocks of this process's threads that have a writer.  A detach
 * reaches other threads' through their records in the shared mapping,
 * where the program may have written anything: a TLS address is followed
 * only when it is one of these (a thread past TLS_KNOWN keeps its sampler
 * until it ends). */
#define TLS_KNOWN 4096
static uint64_t tls_addrs[TLS_KNOWN];

static void tls_note(uint64_t a)
{
	for (unsigned i = 0; i < TLS_KNOWN; i++) {
		uint64_t none = 0;
		if (__atomic_load_n(&tls_addrs[i], __ATOMIC_RELAXED) == a)
			return;
		if (__atomic_compare_exchange_n(&tls_addrs[i], &none, a, 0, __ATOMIC_RELEASE,
						__ATOMIC_RELAXED))
			return;
	}
}

static void tls_forget(uint64_t a)
{
	for (unsigned i = 0; i < TLS_KNOWN; i++) {
		uint64_t p = a;
		if (__atomic_compare_exchange_n(&tls_addrs[i], &p, 0, 0, __ATOMIC_RELEASE,
						__ATOMIC_RELAXED))
			return;
	}
}

static int tls_known(uint64_t a)
{
	for (unsigned i = 0; a && i < TLS_KNOWN; i++)
		if (__atomic_load_n(&tls_addrs[i], __ATOMIC_ACQUIRE) == a)
			return 1;
	return 0;
}

void cyg__smp_thread_start(struct cyg_thread *t)
{
	int saved = errno;

	/* a thread that had a writer before (an attach again, a thread
	 * registered again after its end) stops what it had */
	smp_stop();
	cyg__sw_close();
	t->smp_fd = -1;
	t->tls_addr = (uint64_t)(uintptr_t)&cyg_tls;
	tls_note(t->tls_addr);
	if (cyg_smp_signo || cyg_sw_enabled)
		t->cpu0_ns = own_cpu_ns();
	if (cyg_smp_signo) {
		t->smp_period_ns = smp_period;
		if (smp_force_timer || open_perf(t))
			open_timer(t);
	}
	cyg__sw_open(t);
	errno = saved;
}

/* The thread's CPU time now. */
static uint64_t own_cpu_ns(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts))
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void cyg__smp_thread_end(struct cyg_thread *t)
{
	int saved = errno;

	if (t->tls_addr == (uint64_t)(uintptr_t)&cyg_tls) {
		t->smp_fd = -1; /* closed: a fork child must not close that number */
		cyg__sw_catchup(t);
		uint64_t now = own_cpu_ns();
		if ((t->smp_method || t->sw_on) && now > t->cpu0_ns)
			t->cpu_ns = now - t->cpu0_ns;
		smp_stop();
		cyg__sw_close();
		tls_forget(t->tls_addr);
	}
	errno = saved;
}

void cyg__smp_detach(struct cyg_thread *t)
{
	struct cyg_tls *tls = tls_known(t->tls_addr) ? (struct cyg_tls *)(uintptr_t)t->tls_addr
						     : NULL;

	/* every thread is stopped: what its TLS names is stopped for it */
	if (tls && tls->smp.method && tls->smp.method == t->smp_method) {
		uint32_t m = tls->smp.method;
		tls->smp.method = CYG_SMP_NONE;
		if (m == CYG_SMP_PERF)
			close(tls->smp.fd);
		else
			timer_delete((timer_t)(uintptr_t)tls->smp.timer);
	}
	cyg__sw_detach(t, tls);
}

/* ---- fork ------------------------------------------------------------------- */

/* The child gets no copy of the perf mapping: the forking thread stops
 * reading its records before the fork, so that no hook of a fork handler
 * reads them in the child. */
void cyg__smp_fork_prepare(void)
{
	cyg_tls.smp.sw_saved = cyg_tls.swh;
	cyg_tls.swh = &cyg_sw_zero;
}

void cyg__smp_fork_parent(void)
{
	if (cyg_tls.smp.sw_saved)
		cyg_tls.swh = cyg_tls.smp.sw_saved;
	cyg_tls.smp.sw_saved = NULL;
}

void cyg__smp_fork_close_others(uint64_t proc_off)
{
	uint32_t ppid = (uint32_t)getppid();
	char path[40], link[64];

	if (!proc_off || cyg__cover_all())
		return;
	const struct cyg_thread *t;
	uint64_t steps = cyg_walk_max(sizeof *t);
	for (uint64_t off = __atomic_load_n(&cyg_ctl->threads_off, __ATOMIC_ACQUIRE);
	     steps-- && (t = cyg_rec_at(off, sizeof *t));) {
		off = t->next;
		if (t->pid != ppid || t->proc_off != proc_off || t->smp_method != CYG_SMP_PERF ||
		    t->smp_fd < 0 || __atomic_load_n(&t->state, __ATOMIC_ACQUIRE) != CYG_T_ACTIVE)
			continue;
		/* still the perf event it was (the program's own descriptors
		 * are never touched) */
		/* "/proc/self/fd/N" without stdio: this is a fork child */
		char num[16];
		int k = 0, v = t->smp_fd;
		do
			num[k++] = (char)('0' + v % 10);
		while ((v /= 10) && k < (int)sizeof num);
		memcpy(path, "/proc/self/fd/", 14);
		for (int j = 0; j < k; j++)
			path[14 + j] = num[k - 1 - j];
		path[14 + k] = 0;
		ssize_t n = readlink(path, link, sizeof link - 1);
		if (n <= 0)
			continue;
		link[n] = 0;
		if (!strcmp(link, "anon_inode:[perf_event]"))
			close(t->smp_fd);
	}
}

void cyg__smp_fork_child(int own_fds)
{
	struct cyg_tls_smp *s = &cyg_tls.smp;

	cyg_tls.swh = &cyg_sw_zero;
	s->sw_saved = NULL;
	s->sw_map = NULL; /* not copied (VM_DONTCOPY): nothing to unmap */
	if (s->method == CYG_SMP_PERF && own_fds)
		close(s->fd); /* the child's copy of the parent thread's event */
	s->method = CYG_SMP_NONE; /* timers are not inherited */
}
