/* SPDX-License-Identifier: MIT */
/* cyg-switch.c - exact off-CPU time per call path (CYG_F_SWITCHES): each
 * thread's context switches, read by the thread itself, and each interval
 * off the CPU charged to the frame that was innermost when it began, as
 * waiting for a CPU (preempted, still runnable) or blocked.
 *
 * At registration a thread opens a perf "dummy" event on itself with
 * context_switch = 1 (PERF_RECORD_SWITCH records, 24 bytes each: the
 * header, then tid and CLOCK_MONOTONIC time) and maps it read-only: a
 * control page and CYG_SW_DATA_PAGES data pages that the kernel overwrites
 * once full (nothing ever waits; what was overwritten before it was read is
 * counted as lost).  No O_ASYNC: its wakeups never signal, so a signal
 * never interrupts the system call a thread blocks in.
 *
 * The exit hook compares the page's data_head (through cyg_tls.swh) with
 * t->sw_seen before it pops its frame; when it moved, cyg__sw_catchup()
 * reads the new records.  They all lie in the past, and every frame that
 * was open when an interval began is still open at the first exit after
 * it (every exit checks), so the innermost open frame whose entry time is
 * not after the interval's start is where the thread was when it left the
 * CPU: a binary search over the shadow stack (entry times grow with
 * depth).  An OUT record waits for its IN; the interval [out, in) goes to
 * that frame's node ext (wait_ns with the PREEMPT bit, else blocked_ns).
 *
 * At the process's end, a thread that is off the CPU right then (a
 * server's idle thread blocked for the whole run) has its pending
 * interval charged up to now by the thread that ends the process: its
 * stack cannot move while it is off the CPU.
 *
 * Runs inside the traced program, on cold paths only; never malloc.  The
 * perf mapping is the process's own: a fork child has no copy of it
 * (VM_DONTCOPY), which is why a fork points cyg_tls.swh away first
 * (cyg-sample.c's fork handlers).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/perf_event.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "cyg-cold.h"

const uint64_t cyg_sw_zero;
int cyg_sw_enabled;

/* The pair of clocks taken when the runtime attached: the rate of the
 * frames' ticks against CLOCK_MONOTONIC, which the records carry. */
static uint64_t sw_tick0, sw_mono0;

#define SW_REC_SIZE 24 /* header, u32 pid, u32 tid, u64 time */

static long page_size(void)
{
	static long ps;

	if (!ps)
		ps = sysconf(_SC_PAGESIZE);
	return ps;
}

void cyg__sw_init(void)
{
	cyg_sw_enabled = (cyg_ctl->flags & CYG_F_SWITCHES) && !cyg_noclock;
	sw_mono0 = cyg__mono();
	sw_tick0 = cyg_now();
}

/* The perf mappings this process made.  The walks at its end and at a
 * detach reach other threads' through their records in the shared
 * mapping, where the program may have written anything: a page address
 * is followed only when it is one of these.  A thread past SW_KNOWN keeps
 * its records for itself (its own hooks compare with cyg_tls.swh). */
#define SW_KNOWN 4096
static uint64_t sw_pages[SW_KNOWN];

static void sw_note(void *m)
{
	for (unsigned i = 0; i < SW_KNOWN; i++) {
		uint64_t none = 0;
		if (__atomic_compare_exchange_n(&sw_pages[i], &none, (uint64_t)(uintptr_t)m, 0,
						__ATOMIC_RELEASE, __ATOMIC_RELAXED))
			return;
	}
}

static void sw_forget(uint64_t page)
{
	for (unsigned i = 0; i < SW_KNOWN; i++) {
		uint64_t p = page;
		if (__atomic_compare_exchange_n(&sw_pages[i], &p, 0, 0, __ATOMIC_RELEASE,
						__ATOMIC_RELAXED))
			return;
	}
}

static int sw_known(uint64_t page)
{
	for (unsigned i = 0; i < SW_KNOWN; i++)
		if (__atomic_load_n(&sw_pages[i], __ATOMIC_ACQUIRE) == page)
			return 1;
	return 0;
}

static const uint64_t *head_of(const struct cyg_thread *t)
{
	const struct perf_event_mmap_page *pg = (const void *)(uintptr_t)t->sw_page;

	return (const uint64_t *)&pg->data_head;
}

void cyg__sw_open(struct cyg_thread *t)
{
	struct perf_event_attr a;
	long ps = page_size();
	size_t len = (size_t)(1 + CYG_SW_DATA_PAGES) * (size_t)ps;
	void *m;
	int fd;

	if (!cyg_sw_enabled)
		return;
	memset(&a, 0, sizeof a);
	a.size = sizeof a;
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_DUMMY;
	a.context_switch = 1;
	a.sample_id_all = 1;
	a.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
	a.use_clockid = 1;
	a.clockid = CLOCK_MONOTONIC;
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return;
	m = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
	/* the mapping keeps the event: no descriptor is left to the program */
	close(fd);
	if (m == MAP_FAILED)
		return; /* e.g. the locked-memory limit for perf buffers */
	const struct perf_event_mmap_page *pg = m;
	if (pg->data_offset != (uint64_t)ps || pg->data_size != (uint64_t)CYG_SW_DATA_PAGES * (uint64_t)ps) {
		munmap(m, len);
		return;
	}
	cyg_tls.smp.sw_map = m;
	sw_note(m);
	t->sw_page = (uint64_t)(uintptr_t)m;
	t->sw_seen = __atomic_load_n(&pg->data_head, __ATOMIC_ACQUIRE);
	t->sw_out_ns = 0;
	t->sw_on = 1;
	/* last: from here on the exit hook compares */
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	cyg_tls.swh = head_of(t);
}

void cyg__sw_close(void)
{
	void *m = cyg_tls.smp.sw_map;

	cyg_tls.swh = &cyg_sw_zero;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	cyg_tls.smp.sw_map = NULL;
	if (m) {
		sw_forget((uint64_t)(uintptr_t)m);
		munmap(m, (size_t)(1 + CYG_SW_DATA_PAGES) * (size_t)page_size());
	}
}

/* ---- charging an interval ------------------------------------------------ */

/* Frame times (ticks) from CLOCK_MONOTONIC ns: read both clocks now, and
 * scale the difference by the rate seen since the attach. */
struct sw_clock {
	uint64_t tick, mono;
	double ticks_per_ns;
};

static void sw_clock_now(struct sw_clock *k)
{
	uint64_t hz = __atomic_load_n(&cyg_ctl->tsc_per_sec, __ATOMIC_RELAXED);

	k->mono = cyg__mono();
	k->tick = cyg_now();
	k->ticks_per_ns = 1.0;
	if (!cyg_use_tsc)
		return;
	/* our own measure once it spans a millisecond; before, the
	 * collector's (it calibrates 10 ms after the start), or ours over
	 * what there is */
	if (k->mono > sw_mono0 + 1000000 || (!hz && k->mono > sw_mono0 + 10000))
		k->ticks_per_ns = (double)(k->tick - sw_tick0) / (double)(k->mono - sw_mono0);
	else if (hz)
		k->ticks_per_ns = (double)hz / 1e9;
}

static uint64_t sw_to_tick(const struct sw_clock *k, uint64_t mono)
{
	if (!cyg_use_tsc)
		return mono;
	if (mono >= k->mono)
		return k->tick;
	double back = (double)(k->mono - mono) * k->ticks_per_ns;
	return back >= (double)k->tick ? 0 : k->tick - (uint64_t)back;
}

/* The node of the innermost open frame of t entered at or before tick
 * `when` (frames' entry times grow with depth); the root when none. */
static struct cyg_node *frame_at(const struct cyg_thread *t, uint64_t when)
{
	const struct cyg_frame *stk = cyg_stk(t);
	uint32_t lo = 1, hi = t->depth, best = 0;

	if (hi >= t->stack_cap)
		hi = t->stack_cap - 1;
	/* the stack's place is the mapping's (the program may write it) */
	if (!t->stack_cap || !cyg_span_ok(t->stack_off, ((uint64_t)hi + 1) * sizeof *stk))
		return NULL;
	while (lo <= hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (stk[mid].ts <= when) {
			best = mid;
			lo = mid + 1;
		} else {
			hi = mid - 1;
		}
	}
	uint32_t g = stk[best].node;
	if ((uint64_t)g * CYG_NODE_SIZE + CYG_NODE_SLOT > (uint64_t)(cyg_end - cyg_base) ||
	    (uint64_t)g * CYG_NODE_SIZE < CYG_AREA_OFF)
		return NULL;
	return CYG_NODE(cyg_base, g);
}

static void charge(struct cyg_thread *t, const struct sw_clock *k, uint64_t out, uint64_t in,
		   int preempt)
{
	struct cyg_node *n;

	if (in <= out)
		return;
	n = frame_at(t, sw_to_tick(k, out));
	if (!n) {
		t->sw_unplaced_ns += in - out;
		return;
	}
	if (preempt) {
		CYG_NODE_EXT(n)->wait_ns += in - out;
		t->sw_wait_ns += in - out;
	} else {
		CYG_NODE_EXT(n)->blocked_ns += in - out;
		t->sw_blocked_ns += in - out;
	}
}

/* ---- reading the records ---------------------------------------------------- */

/* Copy len bytes at ring position pos of the data area (size bytes) out. */
static void ring_copy(void *dst, const char *data, uint64_t size, uint64_t pos, size_t len)
{
	uint64_t at = pos & (size - 1);
	size_t first = len;

	if (at + len > size)
		first = (size_t)(size - at);
	memcpy(dst, data + at, first);
	if (first < len)
		memcpy((char *)dst + first, data, len - first);
}

/* Read t's records from t->sw_seen to the page's head.  until_now: the
 * process ends and t is off the CPU: its pending OUT is charged up to now,
 * and that part is remembered (sw_cut_ns) so that t, should it run again
 * before the end, does not charge it twice.  discard: read them, charge
 * nothing (the intervals of a wait for the collector, which the open
 * frames' times already leave out). */
static void sw_read(struct cyg_thread *t, int until_now, int discard)
{
	const struct perf_event_mmap_page *pg = (const void *)(uintptr_t)t->sw_page;
	const char *data = (const char *)pg + pg->data_offset;
	uint64_t size = (uint64_t)CYG_SW_DATA_PAGES * (uint64_t)page_size();
	uint64_t head, pos = t->sw_seen;
	struct sw_clock k;

	sw_clock_now(&k);
	for (;;) {
		struct {
			struct perf_event_header h;
			uint32_t pid, tid;
			uint64_t time;
		} r;
		head = __atomic_load_n(&pg->data_head, __ATOMIC_ACQUIRE);
		if (head - pos > size) {
			/* overwritten before they were read: counted, never
			 * guessed (records are all SW_REC_SIZE bytes: on to
			 * the oldest one left) */
			uint64_t skip = head - pos - size;
			skip = (skip + SW_REC_SIZE - 1) / SW_REC_SIZE * SW_REC_SIZE;
			t->sw_lost += skip / SW_REC_SIZE;
			pos += skip;
			t->sw_out_ns = 0; /* its IN may be among them */
		}
		if (head - pos < sizeof(struct perf_event_header))
			break;
		ring_copy(&r.h, data, size, pos, sizeof r.h);
		if (r.h.size < sizeof r.h || (r.h.size & 7) || r.h.size > head - pos) {
			t->sw_lost++; /* not a record we know how to step over */
			t->sw_out_ns = 0;
			pos = head;
			break;
		}
		int sw = r.h.type == PERF_RECORD_SWITCH && r.h.size >= sizeof r;
		if (sw)
			ring_copy(&r, data, size, pos, sizeof r);
		/* written over while it was read (the thread was switched
		 * meanwhile, many times)?  Then the top of the loop skips */
		if (__atomic_load_n(&pg->data_head, __ATOMIC_ACQUIRE) - pos > size)
			continue;
		if (sw && r.tid == t->tid) {
			t->sw_records++;
			if (r.h.misc & PERF_RECORD_MISC_SWITCH_OUT) {
				t->sw_out_ns = r.time ? r.time : 1;
				t->sw_out_preempt = !!(r.h.misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT);
				t->sw_cut_ns = 0;
			} else if (t->sw_out_ns) {
				uint64_t out = t->sw_out_ns;
				if (t->sw_cut_ns > out)
					out = t->sw_cut_ns; /* charged up to there at the end */
				if (!discard)
					charge(t, &k, out, r.time, t->sw_out_preempt);
				t->sw_out_ns = 0;
				t->sw_cut_ns = 0;
			}
		}
		pos += r.h.size;
	}
	if (until_now && t->sw_out_ns) {
		uint64_t out = t->sw_cut_ns > t->sw_out_ns ? t->sw_cut_ns : t->sw_out_ns;
		charge(t, &k, out, k.mono, t->sw_out_preempt);
		t->sw_cut_ns = k.mono;
	}
	t->sw_seen = pos;
}

void cyg__sw_catchup(struct cyg_thread *t)
{
	/* only the records of the thread's own live mapping: not in a fork
	 * child before it made its own (cyg_tls.swh is pointed away), nor for
	 * a writer that is not this thread's (a signal handler's) */
	if (!t->sw_page || cyg_tls.swh != head_of(t))
		return;
	int saved = errno;
	sw_read(t, 0, 0);
	errno = saved;
}

void cyg__sw_discard(struct cyg_thread *t)
{
	if (!t->sw_page || cyg_tls.swh != head_of(t))
		return;
	int saved = errno;
	sw_read(t, 0, 1);
	errno = saved;
}

/* Whether thread t is off the CPU: its last record is an OUT of its own
 * (and it is not inside a hook, where its own reading may have stopped). */
static int off_cpu(const struct cyg_thread *t)
{
	const struct perf_event_mmap_page *pg = (const void *)(uintptr_t)t->sw_page;
	const char *data = (const char *)pg + pg->data_offset;
	uint64_t size = (uint64_t)CYG_SW_DATA_PAGES * (uint64_t)page_size();
	uint64_t head = __atomic_load_n(&pg->data_head, __ATOMIC_ACQUIRE);
	struct {
		struct perf_event_header h;
		uint32_t pid, tid;
		uint64_t time;
	} r;

	if (__atomic_load_n(&t->busy, __ATOMIC_RELAXED) || head - t->sw_seen < SW_REC_SIZE ||
	    head < SW_REC_SIZE)
		return 0;
	ring_copy(&r, data, size, head - SW_REC_SIZE, sizeof r);
	return r.h.type == PERF_RECORD_SWITCH && r.h.size == SW_REC_SIZE && r.tid == t->tid &&
	       (r.h.misc & PERF_RECORD_MISC_SWITCH_OUT);
}

/* The CPU time of thread tid of this process (the kernel's clock id of a
 * thread, as pthread_getcpuclockid() makes it), 0 when unknown. */
static uint64_t thread_cpu_ns(uint32_t tid)
{
	struct timespec ts;
	clockid_t id = (clockid_t)((~(unsigned)tid << 3) | 4 | 2); /* PERTHREAD | SCHED */

	if (clock_gettime(id, &ts))
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void cyg__sw_process_end(void)
{
	uint32_t pid = (uint32_t)getpid();
	int saved = errno;

	if (cyg_state <= 0 || cyg__cover_all())
		return;
	struct cyg_thread *t;
	uint64_t steps = cyg_walk_max(sizeof *t);
	for (uint64_t off = __atomic_load_n(&cyg_ctl->threads_off, __ATOMIC_ACQUIRE);
	     steps-- && (t = cyg_rec_at(off, sizeof *t));) {
		off = t->next;
		if (t->pid != pid || t->proc_off != cyg_proc_off || t->level ||
		    __atomic_load_n(&t->state, __ATOMIC_ACQUIRE) != CYG_T_ACTIVE)
			continue;
		if (t == cyg_tls.t || (uint64_t)(uintptr_t)&cyg_tls == t->tls_addr)
			continue; /* the calling thread: it ends itself */
		uint64_t cpu = t->cpu_ns ? 0 : thread_cpu_ns(t->tid);
		if (cpu > t->cpu0_ns && (t->smp_method || t->sw_on))
			t->cpu_ns = cpu - t->cpu0_ns;
		if (t->sw_page && sw_known(t->sw_page) && off_cpu(t))
			sw_read(t, 1, 0);
	}
	errno = saved;
}

void cyg__sw_detach(struct cyg_thread *t, struct cyg_tls *tls)
{
	if (!t->sw_page || !sw_known(t->sw_page))
		return;
	sw_forget(t->sw_page);
	/* the thread is stopped: its exit hook reads a 0 from now on, and
	 * its end has nothing to unmap */
	if (tls) {
		tls->swh = &cyg_sw_zero;
		if (tls->smp.sw_map == (void *)(uintptr_t)t->sw_page)
			tls->smp.sw_map = NULL;
	}
	munmap((void *)(uintptr_t)t->sw_page, (size_t)(1 + CYG_SW_DATA_PAGES) * (size_t)page_size());
	t->sw_page = 0;
}
