/* SPDX-License-Identifier: MIT */
/* cyg-proc.c - process images: their records in the mapping, the snapshot
 * of /proc/self/maps the collector decodes addresses with, and the exit
 * status of a child its parent reaped.
 *
 * A process image is one program run by one pid: the program the collector
 * started, a forked child, the image an exec replaced (its record ends and
 * the new one succeeds it).  Records are pushed on the mapping's process
 * list under the cold-path lock; what the collector reads while the
 * program runs (the list head, the maps snapshot) is published with a
 * release store.  Runs inside the traced program, on cold paths only.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cyg-cold.h"

uint64_t cyg_proc_off;

/* Read a whole /proc file into dst (at most cap bytes); returns its length. */
static uint64_t read_file(const char *path, char *dst, uint64_t cap)
{
	uint64_t len = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return 0;
	while (len < cap) {
		ssize_t n = read(fd, dst + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (uint64_t)n;
	}
	close(fd);
	return len;
}

void cyg__snapshot_maps(struct cyg_proc *p)
{
	uint64_t off, len;

	off = cyg__area_alloc(CYG_MAPS_MAX);
	if (!off)
		return;
	len = read_file("/proc/self/maps", AT(off), CYG_MAPS_MAX);
	cyg__area_trim(off, CYG_MAPS_MAX, len);
	p->maps_off = off;
	__atomic_store_n(&p->primed, 0, __ATOMIC_RELEASE); /* new objects to open */
	__atomic_store_n(&p->maps_len, len, __ATOMIC_RELEASE);
}

/* The newest record of a live image with this pid, lock held. */
static struct cyg_proc *find_proc(uint32_t pid)
{
	uint64_t off;

	struct cyg_proc *p;
	uint64_t steps = cyg_walk_max(sizeof *p);
	for (off = __atomic_load_n(&cyg_ctl->procs_off, __ATOMIC_ACQUIRE);
	     steps-- && (p = cyg_rec_at(off, sizeof *p));) {
		if (p->pid == pid && p->state != CYG_P_EXEC)
			return p;
		off = p->next;
	}
	return NULL;
}

uint64_t cyg__register_proc(uint64_t parent_off, uint64_t now)
{
	struct cyg_proc *p, *old;
	uint64_t off, cmd;
	uint32_t pid = (uint32_t)getpid();

	if (cyg__lock())
		return 0;
	off = cyg__area_alloc(sizeof *p);
	cmd = cyg__area_alloc(CYG_CMD_MAX);
	/* the lists below hold what every process of the run registered */
	if (!off || cyg__cover_all()) {
		cyg__unlock();
		return 0;
	}
	p = AT(off);
	p->pid = pid;
	p->ppid = (uint32_t)getppid();
	p->start_ts = now;
	if (!parent_off) {
		old = find_proc(pid);
		if (old && old->state == CYG_P_RUNNING) {
			/* Our previous image exec'd us: it ends here, and its
			 * threads' open frames close now (the collector does it). */
			uint64_t toff, steps = cyg_walk_max(sizeof(struct cyg_thread));
			struct cyg_thread *t;
			old->state = CYG_P_EXEC;
			old->end_ts = now;
			for (toff = cyg_ctl->threads_off;
			     steps-- && (t = cyg_rec_at(toff, sizeof *t));) {
				if (t->proc_off == OFF(old) && t->state == CYG_T_ACTIVE) {
					t->end_ts = now;
					__atomic_store_n(&t->state, CYG_T_CUT, __ATOMIC_RELEASE);
				}
				toff = t->next;
			}
			parent_off = OFF(old);
		} else {
			old = find_proc(p->ppid);
			parent_off = old ? OFF(old) : 0;
		}
	}
	p->parent_off = parent_off;
	p->seq = cyg_ctl->nprocs++;
	cyg__unlock();

	ssize_t n = readlink("/proc/self/exe", p->exe, sizeof p->exe - 1);
	p->exe[n > 0 ? n : 0] = 0;
	char ns[64];
	n = readlink("/proc/self/ns/mnt", ns, sizeof ns - 1);
	if (n > 0 && cyg_ctl->mnt_ns[0]) {
		ns[n] = 0;
		p->foreign = strcmp(ns, cyg_ctl->mnt_ns) != 0;
	}
	if (cmd) {
		p->cmd_len = read_file("/proc/self/cmdline", AT(cmd), CYG_CMD_MAX);
		cyg__area_trim(cmd, CYG_CMD_MAX, p->cmd_len);
		p->cmd_off = cmd;
	}
	cyg__snapshot_maps(p);

	if (cyg__lock())
		return 0;
	p->next = cyg_ctl->procs_off;
	__atomic_store_n(&cyg_ctl->procs_off, off, __ATOMIC_RELEASE);
	cyg__unlock();
	return off;
}

/* A parent reaped a child: that is the only place its exit status shows. */
void cyg__proc_reaped(pid_t pid, int status)
{
	struct cyg_proc *p;

	if (cyg_state <= 0 || pid <= 0 || cyg__lock())
		return;
	p = find_proc((uint32_t)pid);
	if (p && (p->state == CYG_P_RUNNING || p->state == CYG_P_GONE)) {
		if (WIFEXITED(status)) {
			p->code = WEXITSTATUS(status);
			p->state = CYG_P_EXIT;
		} else if (WIFSIGNALED(status)) {
			p->code = WTERMSIG(status);
			p->state = CYG_P_SIGNAL;
		}
		if (!p->end_ts)
			p->end_ts = cyg_now();
	}
	cyg__unlock();
}
