/* SPDX-License-Identifier: MIT */
/* record.c - one recording from start to end: the capture, the mapping, the
 * program, the poll loop, the last drain and checkpoint, the result. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "collector-private.h"
#include "net-proto.h"

int collector_finish_run(struct collector *c, int (*meta)(struct collector *c, void *arg),
			 void *arg, struct collector_result *res)
{
	int rc = 0, e;

	/* the memdump tables outlive their processes: their last values */
	collector_counters_final(c);
	c->end_ts = collector_now(c);
	c->final = 1;
	collector_drain_all(c);
	collector_sampling_final(c);
	if (!c->werr) {
		rc = collector_checkpoint(c, 1);
		if (!rc)
			collector_snapshot(c, 1);
		/* the last interval (record --push), then what was sent; an
		 * interval that could not be made (no memory) is no reason to
		 * lose the capture */
		if (!rc)
			collector_push_interval(c, 1);
		if (!rc)
			rc = collector_push_meta(c);
		if (!rc && meta)
			rc = meta(c, arg);
		e = cygprof_capture_commit(c->cap);
		collector_note_err(c, rc ? rc : e);
		if (e)
			collector_write_failed(c, e);
		else if (!rc) {
			c->kept = 1;
			c->kept_ns = tick_ns(c, c->end_ts);
		}
		if (!rc)
			rc = e;
		/* Last, and only at the end: a capture without it was cut
		 * short.  In the transaction of the seal, so that no capture
		 * says "complete" without its seal. */
		if (!rc) {
			rc = cygprof_capture_begin(c->cap);
			if (!rc)
				rc = cygprof_capture_set_meta(c->cap, "complete", "1");
			e = rc ? 0 : cygprof_capture_seal(c->cap);
			collector_note_err(c, e);
			if (e)
				collector_write_failed(c, e);
			if (!rc)
				rc = e;
		}
	}
	if (c->werr) {
		/* what was committed stays, sealed, with why it ends there */
		char why[200];
		const char *text = c->werr == CYGPROF_E_FULL ? "no space left on device"
							     : cygprof_strerror(c->werr);

		snprintf(why, sizeof why, "%s at %.3f s", text, (double)c->werr_ns / 1e9);
		if (why[0] >= 'A' && why[0] <= 'Z')
			why[0] = (char)(why[0] - 'A' + 'a'); /* "input/output error" */
		res->write_err = c->werr;
		res->write_err_ns = c->werr_ns;
		res->kept = c->kept;
		res->kept_ns = c->kept_ns;
		res->events_kept_ns = c->o->timeline || c->o->memory ? c->events_kept_ns : 0;
		res->ended_stored = !c->o->send_to && !cygprof_capture_end_failed(c->cap, why);
		rc = c->werr;
	}
	if (!rc && c->err)
		rc = c->err;
	res->procs = (uint32_t)c->nprocs;
	res->threads = (uint32_t)c->nthreads;
	res->samples = collector_sampling_count(c);
	for (size_t i = 0; i < c->nthreads; i++) {
		struct cthread *ct = c->threads[i];
		res->cpu_samples += ct->cpu_samples;
		res->events += ct->events;
		res->lost += ct->lost;
		res->waits += ct->waits;
		res->calls += ct->calls;
		res->mem_events += ct->mem_events;
	}
	char *line = collector_damage_line(c);
	if (line)
		snprintf(res->damaged, sizeof res->damaged, "%s", line);
	free(line);
	return rc;
}

void collector_note_err(struct collector *c, int err)
{
	if (err && !c->err) {
		c->err = err;
		c->err_ns = tick_ns(c, collector_now(c));
	}
}

void collector_free(struct collector *c)
{
	size_t i;

	for (i = 0; i < c->nthreads; i++) {
		struct cthread *ct = c->threads[i];
		hmap_release(&ct->bykey);
		hmap_release(&ct->bygid);
		hmap_release(&ct->ext_at);
		free(ct->ext);
		free(ct->lat);
		free(ct->xwait);
		free(ct->nodes);
		free(ct->ev);
		free(ct->pend);
		free(ct->mev);
		free(ct->sc);
		hmap_release(&ct->shadow_ids);
		hmap_release(&ct->prefix_ids);
		free(ct);
	}
	free(c->threads);
	hmap_release(&c->thread_at);
	for (i = 0; i < c->nprocs; i++) {
		struct cproc *cp = c->procs[i];
		procmaps_release(&cp->maps);
		free(cp->ns);
		hmap_release(&cp->seen);
		free(cp->retry);
		free(cp->objidx);
		free(cp);
	}
	free(c->procs);
	hmap_release(&c->proc_at);
	for (i = 0; i < c->nelfs; i++) {
		sym_elf_close(c->elfs[i].elf);
		free(c->elfs[i].path);
	}
	free(c->elfs);
	for (i = 0; i < c->nobjs; i++)
		free(c->objs[i].path);
	free(c->objs);
	free(c->walk);
	free(c->mwalk);
	for (i = 0; i < 3; i++)
		free(c->scratch[i]);
	free(c->own_ns);
	collector_mem_release(c);
	collector_counters_release(c);
	collector_sampling_release(c);
	collector_snapshot_release(c);
	collector_push_release(c);
	debuginfo_free(c->dbg);
	if (c->base && c->base != MAP_FAILED)
		munmap(c->base, c->size);
}

int collector_record(const struct collector_opts *o, struct collector_result *res, char *err,
		     size_t errlen)
{
	struct collector c;
	struct netp_enc enc;
	int send_fd = o->send_fd;
	int memfd = -1, rc, status = 0, exec_errno = 0, *caller_fds = NULL;
	size_t ncaller = 0;
	pid_t pid;
	uint64_t size;

	memset(&c, 0, sizeof c);
	memset(&enc, 0, sizeof enc);
	memset(res, 0, sizeof *res);
	c.o = o;
	/* What the caller left open: the program inherits exactly that. */
	collector_list_fds(&caller_fds, &ncaller);
	rc = collector_shm_size(o, &size, err, errlen);
	if (rc) {
		free(caller_fds);
		return rc;
	}
	c.dbg = debuginfo_new();
	for (size_t i = 0; c.dbg && i < o->n_debug_dirs; i++)
		debuginfo_add_dir(c.dbg, o->debug_dirs[i]);
	if (c.dbg)
		debuginfo_add_env(c.dbg);
	c.filtering = o->n_only || o->n_except || o->max_depth;

	rc = collector_output_open(&c, &enc, &send_fd, err, errlen);
	if (rc) {
		debuginfo_free(c.dbg);
		free(caller_fds);
		return rc;
	}
	rc = collector_map(&c, size, &memfd, err, errlen);
	if (!rc) {
		rc = collector_counters_init(&c);
		if (rc)
			snprintf(err, errlen, "cannot set up the counters: %s", strerror(-rc));
	}
	if (rc)
		goto fail;
	collector_witness_start();
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	collector_forward_signals(&c);

	collector_clock_origin(&c);
	pid = collector_spawn(&c, memfd, caller_fds, ncaller, &exec_errno);
	if (pid < 0) {
		rc = -errno;
		snprintf(err, errlen, "cannot start '%s': %s", o->argv[0], strerror(errno));
		collector_forward_end(&c);
		goto fail;
	}
	c.main_pid = pid;
	close(memfd);
	memfd = -1;
	if (exec_errno) {
		waitpid(pid, &status, 0);
		collector_forward_end(&c);
		res->exec_errno = exec_errno;
		snprintf(err, errlen, "cannot run '%s': %s", o->argv[0], strerror(exec_errno));
		rc = -exec_errno;
		goto fail;
	}
	/* the program runs: from now on the capture is visible at its name
	 * (a collector killed later leaves what it committed there); a
	 * failure shows again at close, which publishes too */
	(void)cygprof_capture_publish(c.cap);
	/* Calibrate while the program starts (after the capture is visible:
	 * a recorder killed during calibration leaves it); nothing is
	 * converted before. */
	collector_calibrate(&c);

	status = collector_poll(&c, pid);
	collector_forward_end(&c);
	c.main_status = status;
	rc = collector_finish_run(&c, NULL, NULL, res);
	res->status = status;
	rc = collector_output_end(&c, &enc, rc, status, res, err, errlen);
	collector_free(&c);
	free(caller_fds);
	return rc;
fail:
	if (memfd >= 0)
		close(memfd);
	/* removes the new file (what was at the output's name stays), or
	 * tells the receiver to drop what it got */
	cygprof_capture_discard(c.cap);
	netp_enc_free(&enc);
	collector_free(&c);
	free(caller_fds);
	return rc ? rc : -EIO;
}
