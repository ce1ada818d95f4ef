/* SPDX-License-Identifier: MIT */
/* drain.c - draining the timeline rings: words between the collector's tail
 * and the writer's head decoded into capture events (times restored, gids
 * mapped onto the capture tree, the time filter applied), memory records
 * handed to memory.c, drained rings of ended threads given back. */
#include <errno.h>
#include <stdlib.h>

#include "collector-private.h"

static int push_ev(struct cthread *ct, uint64_t ts_ns, uint32_t node, uint32_t kind)
{
	if (ct->nev == ct->capev) {
		size_t cap = ct->capev ? ct->capev * 2 : 4096;
		struct cygprof_event *v = realloc(ct->ev, cap * sizeof *v);
		if (!v)
			return -ENOMEM;
		ct->ev = v;
		ct->capev = cap;
	}
	/* Times never go back in the capture, whatever the ring said. */
	if (ts_ns < ct->last_ev_ns)
		ts_ns = ct->last_ev_ns;
	ct->last_ev_ns = ts_ns;
	ct->ev[ct->nev].ts_ns = ts_ns;
	ct->ev[ct->nev].node = node;
	ct->ev[ct->nev].kind = kind;
	ct->nev++;
	return 0;
}

/* One decoded event, after the node filters: apply the time filter (a call
 * shorter than min_ns is kept only if something inside it was kept). */
static void take_event(struct collector *c, struct cthread *ct, uint64_t ts, uint32_t node,
		       unsigned kind)
{
	uint64_t ns = tick_ns(c, ts);
	size_t i;

	if (!c->o->min_ns) {
		push_ev(ct, ns, node, kind);
		return;
	}
	if (kind == CYG_EV_ENTER) {
		if (ct->npend == ct->cappend) {
			size_t cap = ct->cappend ? ct->cappend * 2 : 64;
			struct pend *v = realloc(ct->pend, cap * sizeof *v);
			if (!v)
				return;
			ct->pend = v;
			ct->cappend = cap;
		}
		ct->pend[ct->npend].node = node;
		ct->pend[ct->npend].written = 0;
		ct->pend[ct->npend].ts = ns;
		ct->npend++;
		return;
	}
	if (!ct->npend) { /* an exit of a frame opened before (fork child) */
		push_ev(ct, ns, node, kind);
		return;
	}
	struct pend *top = &ct->pend[--ct->npend];
	if (!top->written && ns - top->ts < c->o->min_ns)
		return;
	for (i = 0; i <= ct->npend; i++) {
		if (!ct->pend[i].written) {
			push_ev(ct, ct->pend[i].ts, ct->pend[i].node, CYG_EV_ENTER);
			ct->pend[i].written = 1;
		}
	}
	push_ev(ct, ns, node, kind);
}

/* Drain one thread's ring; returns the number of words taken.  head comes
 * from the program: more unread words than the ring holds, or a head behind
 * our tail, is damage, and the ring is given up. */
static uint64_t drain_thread(struct collector *c, struct cthread *ct)
{
	struct cyg_thread *t = C_AT(c, ct->off);
	uint64_t off = ct->ring_off, head, tail = ct->tail, mask = c->ring_words - 1;

	if (ct->ring_bad && ACQ(t->state) == CYG_T_ACTIVE) {
		/* A ring given up: its writer would wait for room for ever
		 * (without --drop); what it writes is dropped unread. */
		__atomic_store_n(&t->tail, ACQ(t->head), __ATOMIC_RELEASE);
		return 0;
	}
	if (!off || ct->ring_done)
		return 0;
	uint32_t state = ACQ(t->state);
	const uint64_t *ring = C_AT(c, off);
	uint64_t drain_ts = collector_now(c);
	head = ACQ(t->head);
	if (head - tail > c->ring_words) {
		c->dmg.rings++;
		ct->ring_done = ct->ring_bad = 1;
		return 0;
	}
	if (RD(t->ring_off) != off) {
		/* its ring moved: nothing the runtime does (we keep ours) */
		c->dmg.rings++;
		ct->ring_done = ct->ring_bad = 1;
		return 0;
	}
	/* Leave the cache line the thread is still filling alone (reading it
	 * would take the line from under the writer), unless the thread has
	 * stopped writing or this is the last drain. */
	int cut = 0;
	if (head != ct->last_head && !c->final && state == CYG_T_ACTIVE &&
	    (head & ~7ULL) > tail) {
		ct->last_head = head;
		cut = (head & 7) != 0;
		head &= ~7ULL;
	} else {
		ct->last_head = head;
	}
	uint64_t taken = head - tail;
	if (ct->last_head == tail) /* nothing new: whatever comes next is later */
		ct->idle_lb = drain_ts > ct->cur_ts ? drain_ts : ct->cur_ts;
	for (; tail != head; tail++) {
		uint64_t w = RD(ring[tail & mask]);
		unsigned kind = cyg_ev_kind(w);
		if (kind == CYG_EV_EXT) {
			if (cyg_x_sub(w) == CYG_X_SYNC) {
				uint64_t ts = cyg_ev_sync_ts(w);
				if (ts >= ct->cur_ts && ts <= drain_ts)
					ct->cur_ts = ts;
				else
					c->dmg.events++;
				continue;
			}
			/* a record of several words: only once all of it is here */
			uint64_t len = collector_mem_len(w);
			if (len > c->ring_words || cyg_x_sub(w) > CYG_X_WAIT) {
				c->dmg.events++;
				continue;
			}
			if (len > head - tail) {
				if (cut)
					break; /* the rest is past the line left alone */
				/* A record is published whole: this one cannot be. */
				c->dmg.events++;
				continue;
			}
			/* this record and the memory records after it (at
			 * least this one: a record it does not take would be
			 * read again for ever) */
			uint64_t next = collector_mem_records(c, ct, ring, mask, tail, head);
			if (next == tail)
				c->dmg.events++;
			else
				tail = next - 1;
			continue;
		}
		restore_ts(ct, cyg_ev_delta(w));
		uint32_t gid = cyg_ev_gid(w), idx;
		if (ct->cache_gid[gid & 255] == gid) {
			idx = ct->cache_idx[gid & 255];
		} else {
			idx = cthread_resolve(c, ct, gid);
			ct->cache_gid[gid & 255] = gid;
			ct->cache_idx[gid & 255] = idx;
		}
		if (idx == GID_BAD)
			c->dmg.events++;
		else if (idx != GID_DROP)
			take_event(c, ct, ct->cur_ts, idx, kind);
	}
	ct->tail = tail;
	__atomic_store_n(&t->tail, tail, __ATOMIC_RELEASE);
	collector_mem_flush(c, ct);
	if (ct->nev) {
		collector_note_err(c, cygprof_capture_append_events(c->cap, ct->idx, ct->ev, ct->nev));
		ct->events += ct->nev;
		ct->nev = 0;
	}
	if (state == CYG_T_ENDED && tail == ACQ(t->head) && tail == ct->last_head) {
		/* Drained after the thread ended: its ring goes back to the
		 * pool, without the program's lock (see cyg-shm.h). */
		uint64_t ph = c->pool_head, pt = ACQ(c->ctl->pool_tail);
		ct->ring_done = 1;
		if (pt <= ph && ph - pt < CYG_RING_POOL) {
			c->ctl->ring_pool[ph % CYG_RING_POOL] = off;
			c->pool_head = ph + 1;
			__atomic_store_n(&c->ctl->pool_head, ph + 1, __ATOMIC_RELEASE);
		}
	}
	return taken;
}

/* Drain every ring; returns the largest number of words one ring had. */
uint64_t collector_drain_all(struct collector *c)
{
	uint64_t most = 0;
	size_t i;

	c->last_drain = collector_mono_ns();
	c->drain_ts = collector_now(c);
	collector_scan(c, c->final);
	for (i = 0; i < c->nthreads; i++) {
		uint64_t n = drain_thread(c, c->threads[i]);
		if (n > most)
			most = n;
	}
	return most;
}

/* Some ring is an eighth full or more: its writer may soon wait. */
static int rings_filling(struct collector *c)
{
	for (size_t i = 0; i < c->nthreads; i++) {
		const struct cthread *ct = c->threads[i];
		if (!ct->ring_off || ct->ring_done)
			continue;
		const struct cyg_thread *t = C_AT(c, ct->off);
		if (ACQ(t->head) - ct->tail >= c->ring_words / POLL_BUSY_SHARE)
			return 1;
	}
	return 0;
}

void collector_yield(struct collector *c)
{
	if (!c->in_checkpoint || c->final)
		return;
	/* Drain when a ring fills, or the last drain is long ago: draining
	 * at every yield made a checkpoint of a few ms of its own work wait
	 * for the rings' backlog, and become visible a tenth of a second
	 * later on a busy machine. */
	uint64_t since = collector_mono_ns() - c->last_drain;
	if (since < POLL_YIELD_DRAIN_NS || (since < POLL_YIELD_MAX_NS && !rings_filling(c)))
		return;
	uint64_t cpu0 = collector_cpu_ns();
	c->in_checkpoint = 0; /* not again from inside the drain */
	collector_drain_all(c);
	c->in_checkpoint = 1;
	/* the rings' work, not the checkpoint's (POLL_CHECKPOINT_CPU_SHARE) */
	c->yield_cpu_ns += collector_cpu_ns() - cpu0;
	/* the next drain after POLL_YIELD_DRAIN_NS more of the checkpoint's
	 * own work: counted from the drain's start, a drain longer than that
	 * (a busy program) made every yield drain again, and the checkpoint
	 * took a tenth of a second where its own work was a few ms */
	c->last_drain = collector_mono_ns();
}
