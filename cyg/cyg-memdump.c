/* SPDX-License-Identifier: MIT */
/* cyg-memdump.c - the memdump API's table: the one entry of the runtime
 * that libcygprof-memdump (memdump/) calls.
 *
 * A program linked with libcygprof-memdump reports the bytes of its
 * subsystems; the library finds cyg__memdump_table() with
 * dlsym(RTLD_DEFAULT) and writes its figures into the table in the
 * mapping, where the collector reads them (docs/DESIGN.md, memdump/).
 * Runs inside the traced program; exported, never on the hooks' path.
 */
#define _GNU_SOURCE
#include <errno.h>

#include "cyg-cold.h"

/* This process image's struct cyg_memdump in the mapping, for
 * libcygprof-memdump (which finds this function with dlsym): allocated on
 * the first call of each image (a forked child registers an image of its
 * own, so it gets a new, empty table; the library copies its figures
 * over), published in cyg_proc.memdump_off with a release store.  NULL
 * when the mapping does not ask for it (no CYG_F_MEMDUMP), is absent or
 * full.  Lock-free: two threads asking at once may both allocate, one
 * table wins the compare-and-swap and both return it. */
EXPORT struct cyg_memdump *cyg__memdump_table(void);
struct cyg_memdump *cyg__memdump_table(void)
{
	int saved = errno;
	struct cyg_memdump *md = NULL;
	struct cyg_proc *p;
	uint64_t off, cur = 0;

	if (cyg_state == 0)
		cyg__attach_early();
	if (cyg_state <= 0 || !cyg_proc_off || !(cyg_ctl->flags & CYG_F_MEMDUMP))
		goto out;
	p = AT(cyg_proc_off);
	off = __atomic_load_n(&p->memdump_off, __ATOMIC_ACQUIRE);
	if (!off) {
		uint64_t mine = cyg__area_alloc(sizeof *md);
		if (!mine)
			goto out;
		md = AT(mine); /* fresh pages of the sparse mapping are zero */
		md->nslots = CYG_MEMDUMP_SLOTS;
		md->interval_ms = cyg_ctl->memdump_ms ? cyg_ctl->memdump_ms
						      : CYG_MEMDUMP_DEFAULT_MS;
		if (__atomic_compare_exchange_n(&p->memdump_off, &cur, mine, 0,
						__ATOMIC_RELEASE, __ATOMIC_ACQUIRE))
			off = mine;
		else
			off = cur; /* another thread's table won; ours stays unused */
	}
	md = AT(off);
out:
	errno = saved;
	return md;
}
