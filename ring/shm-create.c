/* SPDX-License-Identifier: MIT */
/* shm-create.c - create and initialise the shared mapping (collector side). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cyg-lock.h"
#include "cyg-shm.h"

int cyg_shm_create(uint64_t size, uint32_t flags, uint64_t ring_bytes, uint32_t max_depth,
		   int *fd_out, struct cyg_ctl **ctl_out)
{
	struct cyg_ctl *ctl;
	/* Inherited by the program (no CLOEXEC): exec'd images map it again. */
	int fd = memfd_create("cygprof", MFD_ALLOW_SEALING);

	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)size) < 0)
		goto err;
	/* The program can reach the fd: it must not be able to shrink the
	 * file under the collector's mapping (SIGBUS) or grow it. */
	if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0)
		goto err;
	/* Sparse: pages exist only once a writer touches them. */
	ctl = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
	if (ctl == MAP_FAILED)
		goto err;
	ctl->magic = CYG_SHM_MAGIC;
	ctl->version = CYG_SHM_VERSION;
	ctl->size = size;
	ctl->flags = flags;
	ctl->ring_words = cyg_ring_words(ring_bytes);
	ctl->collector_pid = (uint32_t)getpid();
	ctl->max_depth = max_depth && max_depth <= CYG_DEPTH_MAX ? max_depth : CYG_DEPTH_MAX;
	ctl->alloc_off = CYG_AREA_OFF;
	ssize_t nl = readlink("/proc/self/ns/mnt", ctl->mnt_ns, sizeof ctl->mnt_ns - 1);
	ctl->mnt_ns[nl > 0 ? nl : 0] = 0;
	cyg_lock_init(&ctl->lock);
	cyg_lock_init(&ctl->alive);
	/* Held until this thread exits: a writer waiting on it learns that
	 * the collector died from EOWNERDEAD, not from a timeout.  The
	 * collector never takes ctl->lock. */
	cyg_lock(&ctl->alive, NULL, NULL);
	*fd_out = fd;
	*ctl_out = ctl;
	return 0;
err:
	{
		int e = -errno;
		close(fd);
		return e;
	}
}
