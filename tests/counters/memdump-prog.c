/* SPDX-License-Identifier: MIT */
/*
 * memdump-prog.c - the program side of the memdump table written by hand,
 * for the collector's side of `record --memdump` (tests/counters/counters.py),
 * without the memdump library: finds the shared mapping, allocates a struct
 * cyg_memdump from its bump pointer, publishes it in its own process record.
 *
 * Slots: "Cache" (totals 1000, 2000, ... 10000, then 123456 just before
 * exit: only the collector's final read sees it), "Nodes" (deltas of +64,
 * ten times: 640), "Idle" (ready, never reported: no counter), and two
 * names the collector must refuse (a control byte; no NUL in the array).
 * Prints "memdump-prog: memdump_ms=N flags=F" ("mapping=none" without
 * cygprof).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../../ring/cyg-shm.h"

static char *base;

static void pause_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static int find_mapping(void)
{
	char line[512];
	FILE *f = fopen("/proc/self/maps", "re");
	unsigned long long a, b;

	if (!f)
		return -1;
	while (fgets(line, sizeof line, f))
		if (strstr(line, "/memfd:cygprof") && sscanf(line, "%llx-%llx", &a, &b) == 2) {
			base = (char *)(uintptr_t)a;
			break;
		}
	fclose(f);
	return base ? 0 : -1;
}

static void ready(struct cyg_memdump_slot *s, const char *name, size_t n)
{
	memcpy(s->name, name, n);
	__atomic_store_n(&s->state, 2, __ATOMIC_RELEASE);
}

static void report(struct cyg_memdump_slot *s, int64_t total, int64_t delta)
{
	if (delta)
		__atomic_fetch_add(&s->value, delta, __ATOMIC_RELAXED);
	else
		__atomic_store_n(&s->value, total, __ATOMIC_RELAXED);
	__atomic_fetch_add(&s->seq, 1, __ATOMIC_RELEASE);
}

int main(void)
{
	struct cyg_ctl *ctl;
	struct cyg_proc *p = NULL;
	struct cyg_memdump *md;
	uint64_t off, cur, size = (sizeof(*md) + 63) & ~63ull, po;
	char noterm[CYG_MEMDUMP_NAME];
	int i;

	if (find_mapping()) {
		printf("memdump-prog: mapping=none\n");
		return 0;
	}
	ctl = (struct cyg_ctl *)base;
	printf("memdump-prog: memdump_ms=%u flags=%u\n", ctl->memdump_ms, ctl->flags);
	fflush(stdout);
	cur = __atomic_load_n(&ctl->alloc_off, __ATOMIC_RELAXED);
	do {
		off = (cur + 63) & ~63ull;
		if (off + size > ctl->size)
			return 1;
	} while (!__atomic_compare_exchange_n(&ctl->alloc_off, &cur, off + size, 1, __ATOMIC_ACQ_REL,
					      __ATOMIC_RELAXED));
	md = (struct cyg_memdump *)(base + off);
	md->nslots = CYG_MEMDUMP_SLOTS;
	md->interval_ms = ctl->memdump_ms;
	ready(&md->slot[0], "Cache", 6);
	ready(&md->slot[1], "Nodes", 6);
	ready(&md->slot[2], "Idle", 5);
	ready(&md->slot[3], "bad\001name", 10);
	memset(noterm, 'A', sizeof noterm);
	ready(&md->slot[4], noterm, sizeof noterm);
	report(&md->slot[3], 1, 0);
	report(&md->slot[4], 1, 0);
	for (po = __atomic_load_n(&ctl->procs_off, __ATOMIC_ACQUIRE); po; po = p->next) {
		p = (struct cyg_proc *)(base + po);
		if (p->pid == (uint32_t)getpid())
			break;
	}
	if (!po)
		return 1;
	__atomic_store_n(&p->memdump_off, off, __ATOMIC_RELEASE);
	for (i = 1; i <= 10; i++) {
		report(&md->slot[0], i * 1000, 0);
		report(&md->slot[1], 0, 64);
		pause_ms(12);
	}
	report(&md->slot[0], 123456, 0);
	return 0;
}
