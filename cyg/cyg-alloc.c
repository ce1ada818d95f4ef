/* SPDX-License-Identifier: MIT */
/* cyg-alloc.c - the runtime's memory and its one lock: the cold-path lock,
 * the bump allocator of the shared mapping, the free list of shadow stacks
 * and the pool of rings the collector drained.
 *
 * The runtime never calls malloc: every node, stack, ring and record comes
 * from the mapping, bump-allocated and never freed, except the shadow
 * stacks and rings of ended writers, which new writers take again.  The
 * bump pointer moves by compare-and-swap (a signal handler that interrupted
 * a cold path holding the lock can still allocate); the free list and the
 * pool's tail are under the lock (docs/DESIGN.md, HACKING.md "Single
 * writer").  Runs inside the traced program, on cold paths only.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "cyg-lock.h"
#include "cyg-cold.h"

/* The lock lies in the mapping: the program can leave it looking held by
 * a thread that does not exist, whom nobody will wake.  Each wait ends
 * after CYG_LOCK_WAIT_S (every caller copes with not getting the lock);
 * one that finds its owner gone for good makes the lock broken for this
 * process (counted in rt_dropped): later ones fail at once. */
#define CYG_LOCK_WAIT_S 1
static int lock_broken;

int cyg__lock(void)
{
	struct timespec dl;

	if (UNLIKELY(__atomic_load_n(&lock_broken, __ATOMIC_RELAXED)))
		return -1;
	int saved = errno;
	clock_gettime(CLOCK_MONOTONIC, &dl);
	dl.tv_sec += CYG_LOCK_WAIT_S;
	int r = cyg_lock(&cyg_ctl->lock, &cyg_tls.in_lock, &dl);
	if (r == -ETIMEDOUT) {
		int owner = __atomic_load_n(&cyg_ctl->lock.__data.__owner, __ATOMIC_RELAXED);
		if ((owner & 0x3fffffff) <= 0 || (kill(owner & 0x3fffffff, 0) && errno == ESRCH)) {
			__atomic_store_n(&lock_broken, 1, __ATOMIC_RELAXED);
			__atomic_add_fetch(&cyg_ctl->rt_dropped, 1, __ATOMIC_RELAXED);
		}
	}
	errno = saved;
	return r < 0 ? -1 : 0;
}

void cyg__unlock(void)
{
	cyg_unlock(&cyg_ctl->lock, &cyg_tls.in_lock);
}

uint64_t cyg__area_alloc(uint64_t size)
{
	uint64_t cur = __atomic_load_n(&cyg_ctl->alloc_off, __ATOMIC_RELAXED), off;

	size = (size + 63) & ~63ULL;
	do {
		off = (cur + 63) & ~63ULL;
		if (off + size > cyg_size || off + size < off) {
			__atomic_add_fetch(&cyg_ctl->oom, 1, __ATOMIC_RELAXED);
			return 0;
		}
	} while (!__atomic_compare_exchange_n(&cyg_ctl->alloc_off, &cur, off + size, 1,
					      __ATOMIC_RELAXED, __ATOMIC_RELAXED));
	if (cyg__cover(off + size) < 0) {
		/* allocated in the mapping, but this process cannot reach it */
		__atomic_add_fetch(&cyg_ctl->oom, 1, __ATOMIC_RELAXED);
		return 0;
	}
	return off;
}

void cyg__area_trim(uint64_t off, uint64_t size, uint64_t used)
{
	uint64_t end = off + ((size + 63) & ~63ULL);

	__atomic_compare_exchange_n(&cyg_ctl->alloc_off, &end, off + ((used + 63) & ~63ULL), 0,
				    __ATOMIC_RELAXED, __ATOMIC_RELAXED);
}

/* ---- the window ---------------------------------------------------------- */

uint64_t cyg_size;
/* The thread growing the window (its cyg_tls address), or 0. */
static uintptr_t growing;

static uint64_t win_round(uint64_t need)
{
	uint64_t want = need + need / 8;

	want = (want + CYG_WIN_STEP - 1) & ~(CYG_WIN_STEP - 1);
	return want < cyg_size ? want : cyg_size;
}

int cyg__cover(uint64_t end)
{
	uintptr_t me = (uintptr_t)&cyg_tls, none;

	if (LIKELY(cyg_base + end <= __atomic_load_n(&cyg_end, __ATOMIC_ACQUIRE)))
		return 0;
	if (end > cyg_size)
		return -1;
	for (;;) {
		none = 0;
		if (__atomic_compare_exchange_n(&growing, &none, me, 0, __ATOMIC_ACQUIRE,
						__ATOMIC_RELAXED))
			break;
		if (none == me)
			return -1; /* a signal handler interrupted our own growth */
		sched_yield();
		if (cyg_base + end <= __atomic_load_n(&cyg_end, __ATOMIC_ACQUIRE))
			return 0;
	}
	/* Only the holder of `growing` changes the window, and a fork waits
	 * for it (cyg__grow_prepare), so cyg_end is the mapping's true end:
	 * mremap() without MREMAP_MAYMOVE grows it in place or fails (the
	 * addresses after it are taken, or RLIMIT_AS), never moves it. */
	char *cur = cyg_end;
	int r = 0;
	if (cyg_base + end > cur) {
		uint64_t have = (uint64_t)(cur - cyg_base), want = win_round(end);
		if (mremap(cyg_base, have, want, 0) == MAP_FAILED) {
			r = -1;
		} else {
			__atomic_store_n(&cyg_end, cyg_base + want, __ATOMIC_RELEASE);
			__atomic_store_n(&cyg_lim, cyg_base + want - CYG_NODE_SIZE,
					 __ATOMIC_RELEASE);
		}
	}
	__atomic_store_n(&growing, 0, __ATOMIC_RELEASE);
	return r;
}

int cyg__cover_all(void)
{
	return cyg__cover(__atomic_load_n(&cyg_ctl->alloc_off, __ATOMIC_ACQUIRE));
}

void cyg__grow_prepare(void)
{
	uintptr_t me = (uintptr_t)&cyg_tls, none;

	for (;;) {
		none = 0;
		if (__atomic_compare_exchange_n(&growing, &none, me, 0, __ATOMIC_ACQUIRE,
						__ATOMIC_RELAXED) ||
		    none == me)
			return;
		sched_yield();
	}
}

void cyg__grow_release(void)
{
	__atomic_store_n(&growing, 0, __ATOMIC_RELEASE);
}

/* Where the window goes.  A range of the whole size is reserved once to
 * find room (PROT_NONE, nothing committed), the window mapped over its
 * start and the rest given back: later mappings of the program come
 * from the other end of that room (the kernel fills address space from
 * the top down), so the window can grow as far as the collector's mapping
 * goes before the program has mapped as much.  On x86-64 the reservation
 * is first asked for far below where the kernel puts mappings (32 TiB,
 * plus a random part: not a fixed address), else wherever the kernel
 * likes.  Under an address-space limit that leaves no room for the
 * reservation, the window alone is mapped, at the same hint. */
void *cyg__map_window(int fd, uint64_t size, uint64_t win)
{
	const int prot = PROT_READ | PROT_WRITE;
	char *hint = NULL, *p;
	void *m;

#if defined(__x86_64__)
	uint64_t rnd = cyg__mono() ^ (uint64_t)(uintptr_t)&rnd ^ ((uint64_t)getpid() << 20);
	rnd = (rnd * 0x9e3779b97f4a7c15ULL) >> 50; /* 14 bits: a GiB step in 16 TiB */
	hint = (char *)(uintptr_t)((32ULL << 40) + (rnd << 30)); /* 32..48 TiB */
#endif
	p = mmap(hint, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED && hint)
		p = mmap(NULL, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return mmap(hint, win, prot, MAP_SHARED, fd, 0);
	m = mmap(p, win, prot, MAP_SHARED | MAP_FIXED, fd, 0);
	if (m == MAP_FAILED) {
		int e = errno;
		munmap(p, size);
		errno = e;
		return MAP_FAILED;
	}
	if (size > win)
		munmap(p + win, size - win);
	return m;
}

/* Take a block from a free list (lock held); the first word links the list. */
static uint64_t list_pop(uint64_t *head)
{
	uint64_t off = *head;
	if (off)
		*head = *(uint64_t *)AT(off);
	return off;
}

static void list_push(uint64_t *head, uint64_t off)
{
	*(uint64_t *)AT(off) = *head;
	*head = off;
}

/* A ring the collector drained after its thread ended (lock held). */
static uint64_t pool_pop(void)
{
	uint64_t tail = cyg_ctl->pool_tail;

	if (tail == __atomic_load_n(&cyg_ctl->pool_head, __ATOMIC_ACQUIRE))
		return 0;
	uint64_t off = cyg_ctl->ring_pool[tail % CYG_RING_POOL];
	__atomic_store_n(&cyg_ctl->pool_tail, tail + 1, __ATOMIC_RELEASE);
	return off;
}

void cyg__reuse(uint64_t *stack, uint32_t *cap, uint64_t *ring, int want_ring)
{
	if (cyg__lock())
		return;
	/* the lists hold what other processes gave back, anywhere below
	 * alloc_off */
	if (cyg__cover_all()) {
		cyg__unlock();
		return;
	}
	/* what the lists give is the mapping's: a stack or ring out of the
	 * window ends its list (counted), and the caller takes new memory */
	uint64_t s = cyg_ctl->free_stacks;
	if (s && ((s & 63) || s < CYG_NULL_OFF || !cyg_span_ok(s, 16))) {
		cyg_ctl->free_stacks = 0;
		__atomic_add_fetch(&cyg_ctl->rt_dropped, 1, __ATOMIC_RELAXED);
	}
	*stack = list_pop(&cyg_ctl->free_stacks);
	if (*stack) {
		uint64_t c = ((uint64_t *)AT(*stack))[1];
		if (c >= 2 && c <= (cyg_max_depth > CYG_STACK_INIT ? cyg_max_depth : CYG_STACK_INIT) &&
		    cyg_span_ok(*stack, c * sizeof(struct cyg_frame))) {
			*cap = (uint32_t)c;
		} else {
			*stack = 0;
			cyg_ctl->free_stacks = 0;
			__atomic_add_fetch(&cyg_ctl->rt_dropped, 1, __ATOMIC_RELAXED);
		}
	}
	if (want_ring) {
		*ring = pool_pop();
		if (*ring && ((*ring & 63) || *ring < CYG_NULL_OFF ||
			      !cyg_span_ok(*ring, (cyg_ring_mask + 1) * 8))) {
			*ring = 0;
			__atomic_add_fetch(&cyg_ctl->rt_dropped, 1, __ATOMIC_RELAXED);
		}
	}
	cyg__unlock();
}

/* The second word of a free stack keeps its capacity. */
void cyg__stack_give(uint64_t off, uint32_t cap)
{
	if (cyg__lock())
		return;
	((uint64_t *)AT(off))[1] = cap;
	list_push(&cyg_ctl->free_stacks, off);
	cyg__unlock();
}
