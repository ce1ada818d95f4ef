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
#include "cyg-lock.h"
#include "cyg-cold.h"

int cyg__lock(void)
{
	return cyg_lock(&cyg_ctl->lock, &cyg_tls.in_lock, NULL) < 0 ? -1 : 0;
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
		if (off + size > cyg_ctl->size || off + size < off) {
			__atomic_add_fetch(&cyg_ctl->oom, 1, __ATOMIC_RELAXED);
			return 0;
		}
	} while (!__atomic_compare_exchange_n(&cyg_ctl->alloc_off, &cur, off + size, 1,
					      __ATOMIC_RELAXED, __ATOMIC_RELAXED));
	return off;
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
	*stack = list_pop(&cyg_ctl->free_stacks);
	if (*stack)
		*cap = (uint32_t)((uint64_t *)AT(*stack))[1];
	if (want_ring)
		*ring = pool_pop();
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
