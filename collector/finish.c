/* SPDX-License-Identifier: MIT */
/* finish.c - the end of recording: close what was left open, fold each
 * thread's raw tree into the capture's tree, and store what decodes the
 * capture elsewhere (processes, maps, build-ids, function names). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "collector-private.h"

static uint64_t proc_end_ts(struct collector *c, const struct cyg_proc *p)
{
	return p && p->end_ts ? p->end_ts : c->end_ts;
}

/* Close the open frames of a thread that did not end by itself (killed,
 * crashed, exec'd, or still running when its process exited). */
static void close_open_frames(struct collector *c, struct cthread *ct, uint64_t end)
{
	struct cyg_thread *t = ct->t;
	struct cyg_frame *stk = C_AT(c, t->stack_off);
	uint32_t d;

	for (d = 1; d <= t->depth && d < t->stack_cap; d++) {
		struct cyg_node *n = C_AT(c, (uint64_t)stk[d].node * CYG_NODE_SIZE);
		if (end > stk[d].ts) {
			n->ticks += end - stk[d].ts;
			if (stk[d].site && stk[d].site <= t->sites_n) {
				struct cyg_site *s = C_AT(c, t->sites_off);
				s[stk[d].site - 1].ticks += end - stk[d].ts;
			}
		}
		t->unwound++;
	}
}

/* Walk the raw tree and add every node into the capture tree. */
static int fold_tree(struct collector *c, struct cthread *ct, uint64_t *raw_calls)
{
	uint32_t *stack = NULL;
	size_t n = 0, cap = 0;
	int err = 0;

	*raw_calls = 0;
	stack = malloc(64 * sizeof *stack);
	if (!stack)
		return -ENOMEM;
	cap = 64;
	stack[n++] = ct->t->root;
	while (n) {
		uint32_t gid = stack[--n], g;
		struct cyg_node *rn = C_AT(c, (uint64_t)gid * CYG_NODE_SIZE);
		uint32_t idx = cthread_resolve(c, ct, gid);

		*raw_calls += rn->calls;
		if (idx != GID_DROP) {
			ct->nodes[idx].calls += rn->calls;
			ct->nodes[idx].ticks += rn->ticks;
		}
		for (g = rn->first_child; g; g = ((struct cyg_node *)C_AT(c, (uint64_t)g * CYG_NODE_SIZE))->next_sibling) {
			if (n == cap) {
				uint32_t *v = realloc(stack, cap * 2 * sizeof *v);
				if (!v) {
					err = -ENOMEM;
					goto out;
				}
				stack = v;
				cap *= 2;
			}
			stack[n++] = g;
		}
	}
	/* The root's time: what its children took. */
	if (ct->n) {
		size_t i;
		ct->nodes[0].ticks = 0;
		for (i = 1; i < ct->n; i++)
			if (ct->nodes[i].parent == 0)
				ct->nodes[0].ticks += ct->nodes[i].ticks;
	}
out:
	free(stack);
	return err;
}

static int put_tree(struct collector *c, struct cthread *ct)
{
	struct cygprof_node *v = calloc(ct->n ? ct->n : 1, sizeof *v);
	size_t i;
	int err;

	if (!v)
		return -ENOMEM;
	for (i = 0; i < ct->n; i++) {
		v[i].parent = ct->nodes[i].parent == GID_DROP ? CYGPROF_NONE : ct->nodes[i].parent;
		v[i].fn = ct->nodes[i].fn;
		v[i].site = ct->nodes[i].site;
		v[i].calls = ct->nodes[i].calls;
		v[i].total_ns = ticks_to_ns(c, ct->nodes[i].ticks);
	}
	err = cygprof_capture_put_tree(c->cap, ct->idx, v, ct->n);
	free(v);
	return err;
}

/* Calls per call site: the thread's entries for sites other than a node's
 * first, and the rest at the first site. */
static int put_sites(struct collector *c, struct cthread *ct)
{
	struct cyg_thread *t = ct->t;
	const struct cyg_site *raw = t->sites_off ? C_AT(c, t->sites_off) : NULL;
	uint32_t nraw = t->sites_off ? t->sites_n : 0, i;
	struct cygprof_callsite *v;
	struct hmap at = {0};
	size_t n = 0, k;
	int err;

	v = calloc(ct->n + nraw + 1, sizeof *v);
	if (!v)
		return -ENOMEM;
	/* the first site of every node, with all its calls for now */
	for (k = 1; k < ct->n; k++) {
		v[n].node = (uint32_t)k;
		v[n].site = ct->nodes[k].site;
		v[n].calls = ct->nodes[k].calls;
		v[n].total_ns = ticks_to_ns(c, ct->nodes[k].ticks);
		hmap_put(&at, hash3(k, v[n].site, 0x5173), n + 1);
		n++;
	}
	/* the other sites move their share away from it */
	for (i = 0; i < nraw; i++) {
		uint32_t idx = cthread_resolve(c, ct, raw[i].node);
		uint64_t pos, ns = ticks_to_ns(c, raw[i].ticks);
		if (idx == GID_DROP || !idx)
			continue;
		uint64_t key1 = hash3(idx, ct->nodes[idx].site, 0x5173);
		if (!hmap_get(&at, key1, &pos))
			continue;
		struct cygprof_callsite *first = &v[pos - 1];
		uint64_t calls = raw[i].calls < first->calls ? raw[i].calls : first->calls;
		if (ns > first->total_ns)
			ns = first->total_ns;
		if (raw[i].site == first->site)
			continue;
		first->calls -= calls;
		first->total_ns -= ns;
		uint64_t key = hash3(idx, raw[i].site, 0x5173);
		if (hmap_get(&at, key, &pos)) {
			v[pos - 1].calls += calls;
			v[pos - 1].total_ns += ns;
			continue;
		}
		v[n].node = idx;
		v[n].site = raw[i].site;
		v[n].calls = calls;
		v[n].total_ns = ns;
		hmap_put(&at, key, n + 1);
		n++;
	}
	/* drop first sites left with nothing (all calls came from elsewhere) */
	size_t out = 0;
	for (k = 0; k < n; k++)
		if (v[k].calls || v[k].total_ns)
			v[out++] = v[k];
	err = cygprof_capture_put_sites(c->cap, ct->idx, v, out);
	hmap_release(&at);
	free(v);
	return err;
}

static char *join_cmdline(const char *buf, uint64_t len)
{
	char *s = malloc(len + 1);
	uint64_t i;

	if (!s)
		return NULL;
	for (i = 0; i < len; i++)
		s[i] = buf[i] ? buf[i] : ' ';
	while (len && s[len - 1] == ' ')
		len--;
	s[len] = 0;
	return s;
}

static char *join_argv(char *const *argv)
{
	size_t n = 1, i;
	char *s;

	for (i = 0; argv[i]; i++)
		n += strlen(argv[i]) + 1;
	s = malloc(n);
	if (!s)
		return NULL;
	s[0] = 0;
	for (i = 0; argv[i]; i++) {
		if (i)
			strcat(s, " ");
		strcat(s, argv[i]);
	}
	return s;
}

/* Store the symbol covering addr once; without one, a "0x..." name when
 * must_name (a function or a stack frame), nothing for a call site. */
static int put_symbol(struct collector *c, struct cproc *cp, const uint32_t *objidx,
		      struct hmap *seen, uint64_t addr, int must_name)
{
	uint64_t start = 0, size = 0, dummy;
	struct cygprof_map *m = NULL;
	struct cygprof_symbol s;
	char hex[32];
	int err;

	if (!addr || hmap_get(seen, addr, &dummy))
		return 0;
	hmap_put(seen, addr, 1);
	const char *raw = collector_fn_name(c, cp, addr, &start, &size, &m, NULL);
	if (!raw && !must_name)
		return 0;
	if (!raw) {
		start = addr;
		size = 1;
	}
	if (raw && start != addr && hmap_get(seen, start, &dummy))
		return 0;
	hmap_put(seen, start, 1);
	s.proc_idx = cp->idx;
	s.object_idx = m ? objidx[m - cp->maps.v] : CYGPROF_NONE;
	s.addr = start;
	s.size = size;
	if (raw) {
		s.name = cygprof_demangle(raw);
	} else {
		snprintf(hex, sizeof hex, "0x%llx", (unsigned long long)addr);
		s.name = strdup(hex);
	}
	if (!s.name)
		return -ENOMEM;
	err = cygprof_capture_put_symbol(c->cap, &s);
	free(s.name);
	return err;
}

/* Objects and the symbols of every address this process's trees and
 * memory stacks use. */
static int put_symbols(struct collector *c, struct cproc *cp, uint32_t *next_obj)
{
	struct hmap seen = {0};
	uint32_t *objidx = NULL;
	size_t i, k;
	int err = 0;

	if (!cp || !cp->maps.n)
		return 0;
	objidx = malloc(cp->maps.n * sizeof *objidx);
	if (!objidx)
		return -ENOMEM;
	for (i = 0; i < cp->maps.n; i++) {
		struct cygprof_map *m = &cp->maps.v[i];
		objidx[i] = CYGPROF_NONE;
		for (k = 0; k < i; k++)
			if (!strcmp(cp->maps.v[k].path, m->path)) {
				objidx[i] = objidx[k];
				break;
			}
		if (objidx[i] != CYGPROF_NONE || !m->exec)
			continue;
		struct cygprof_object o;
		memset(&o, 0, sizeof o);
		o.idx = (*next_obj)++;
		o.proc_idx = cp->idx;
		o.start = UINT64_MAX;
		for (k = 0; k < cp->maps.n; k++) {
			if (strcmp(cp->maps.v[k].path, m->path))
				continue;
			if (cp->maps.v[k].start < o.start)
				o.start = cp->maps.v[k].start;
			if (cp->maps.v[k].end > o.end)
				o.end = cp->maps.v[k].end;
		}
		o.path = m->path;
		uint64_t bias = 0;
		struct cygprof_elf *e = NULL;
		collector_fn_name(c, cp, m->start, NULL, NULL, NULL, &e);
		if (e) {
			cygprof_elf_bias(e, m, &bias);
			o.build_id_len = (uint32_t)cygprof_elf_build_id(e, o.build_id, sizeof o.build_id);
			if (o.build_id_len > sizeof o.build_id)
				o.build_id_len = sizeof o.build_id;
		}
		o.bias = bias;
		err = cygprof_capture_put_object(c->cap, &o);
		if (err)
			goto out;
		objidx[i] = o.idx;
		for (k = i + 1; k < cp->maps.n; k++)
			if (!strcmp(cp->maps.v[k].path, m->path))
				objidx[k] = o.idx;
	}

	for (i = 0; i < c->nthreads && !err; i++) {
		struct cthread *ct = c->threads[i];
		if (!ct || C_AT(c, ct->t->proc_off) != (void *)cp->p)
			continue;
		for (k = 1; k < ct->n && !err; k++) {
			err = put_symbol(c, cp, objidx, &seen, ct->nodes[k].fn, 1);
			if (!err)
				err = put_symbol(c, cp, objidx, &seen, ct->nodes[k].site, 0);
		}
	}
	/* The frames of memory stacks: functions, and return addresses (the
	 * call is the byte before). */
	for (i = 0; i < c->stash.n && !err; i++) {
		const struct cygprof_stack_node *nd = &c->stash.v[i];
		if (nd->proc_idx != cp->idx || !nd->addr)
			continue;
		err = put_symbol(c, cp, objidx, &seen,
				 nd->kind == CYGPROF_FRAME_RA ? nd->addr - 1 : nd->addr, 1);
	}
out:
	hmap_release(&seen);
	free(objidx);
	return err;
}

static int put_meta_u64(struct collector *c, const char *key, uint64_t v)
{
	char buf[32];
	snprintf(buf, sizeof buf, "%llu", (unsigned long long)v);
	return cygprof_capture_set_meta(c->cap, key, buf);
}

static int put_meta(struct collector *c, uint64_t lost)
{
	const struct cygprof_record_opts *o = c->o;
	struct utsname u;
	char buf[256];
	char *cmd = join_argv(o->argv);
	time_t now = time(NULL) - (time_t)(tick_ns(c, c->end_ts) / 1000000000ULL);
	struct tm tm;
	int err = 0;

	if (!cmd)
		return -ENOMEM;
	err = cygprof_capture_set_meta(c->cap, "command", cmd);
	free(cmd);
	snprintf(buf, sizeof buf, "profile%s%s", o->timeline ? "+timeline" : "",
		 o->memory ? "+memory" : "");
	if (!err)
		err = cygprof_capture_set_meta(c->cap, "mode", buf);
	gmtime_r(&now, &tm);
	strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
	if (!err)
		err = cygprof_capture_set_meta(c->cap, "start_time", buf);
	if (!err)
		err = put_meta_u64(c, "duration_ns", tick_ns(c, c->end_ts));
	if (!err)
		err = cygprof_capture_set_meta(c->cap, "clock",
					       (c->ctl->flags & CYG_F_TSC) ? "tsc" : "monotonic");
	if (!err)
		err = cygprof_capture_set_meta(c->cap, "filters", o->filters ? o->filters : "");
	if (!err)
		err = put_meta_u64(c, "lost_events", lost);
	if (!err)
		err = cygprof_capture_set_meta(c->cap, "drop_mode", o->drop ? "drop" : "block");
	if (!err && gethostname(buf, sizeof buf) == 0) {
		buf[sizeof buf - 1] = 0;
		err = cygprof_capture_set_meta(c->cap, "hostname", buf);
	}
	if (!err && uname(&u) == 0) {
		err = cygprof_capture_set_meta(c->cap, "kernel", u.release);
		if (!err)
			err = cygprof_capture_set_meta(c->cap, "machine", u.machine);
	}
	if (!err && c->ctl->oom)
		err = put_meta_u64(c, "shm_full", c->ctl->oom);
	/* Last: a capture without it was interrupted before its end. */
	if (!err)
		err = cygprof_capture_set_meta(c->cap, "complete", "1");
	return err;
}

int collector_finish(struct collector *c)
{
	uint64_t off, lost = 0;
	uint32_t next_obj = 0;
	size_t i;
	int err = 0, main_seen = 0;

	/* Threads: close, fold, store. */
	for (i = 0; i < c->nthreads && !err; i++) {
		struct cthread *ct = c->threads[i];
		if (!ct)
			continue;
		struct cyg_thread *t = ct->t;
		struct cyg_proc *p = t->proc_off ? C_AT(c, t->proc_off) : NULL;
		uint32_t state = __atomic_load_n(&t->state, __ATOMIC_ACQUIRE);
		uint64_t end = state == CYG_T_ENDED || state == CYG_T_CUT ? t->end_ts
									 : proc_end_ts(c, p);
		uint64_t raw_calls;

		if (state != CYG_T_ENDED)
			close_open_frames(c, ct, end);
		err = fold_tree(c, ct, &raw_calls);
		if (!err)
			err = put_tree(c, ct);
		if (!err)
			err = put_sites(c, ct);

		struct cygprof_thread th;
		memset(&th, 0, sizeof th);
		th.idx = ct->idx;
		th.proc_idx = p ? p->seq : CYGPROF_NONE;
		th.tid = t->tid;
		th.flags = (state == CYG_T_ENDED ? CYGPROF_THREAD_ENDED : CYGPROF_THREAD_CUT) |
			   (t->flags & (CYGPROF_THREAD_FORKED | CYGPROF_THREAD_SIGNAL | CYGPROF_THREAD_CLONED));
		th.start_ns = tick_ns(c, t->start_ts);
		th.end_ns = tick_ns(c, end);
		th.calls = raw_calls + t->overflow;
		ct->calls = th.calls;
		th.events = ct->events;
		th.lost = t->lost;
		th.waits = t->waits;
		th.wait_ns = ticks_to_ns(c, t->wait_ticks);
		th.unpaired = t->unpaired;
		th.unwound = t->unwound;
		memcpy(th.name, t->name, sizeof th.name);
		th.name[sizeof th.name - 1] = 0;
		lost += t->lost;
		if (!err)
			err = cygprof_capture_put_thread(c->cap, &th);
	}

	/* Processes, their objects and symbols. */
	for (off = c->ctl->procs_off; off && !err;) {
		struct cyg_proc *p = C_AT(c, off);
		struct cygprof_proc cp;
		memset(&cp, 0, sizeof cp);
		cp.idx = p->seq;
		cp.pid = p->pid;
		cp.ppid = p->ppid;
		cp.parent_idx = p->parent_off ? ((struct cyg_proc *)C_AT(c, p->parent_off))->seq
					      : CYGPROF_NONE;
		cp.start_ns = tick_ns(c, p->start_ts);
		cp.end_ns = tick_ns(c, proc_end_ts(c, p));
		switch (p->state) {
		case CYG_P_EXIT:
		case CYG_P_SIGNAL:
		case CYG_P_EXEC:
			cp.end_kind = p->state;
			cp.end_code = p->code;
			break;
		default:
			cp.end_kind = p->exit_called ? CYGPROF_END_EXIT : CYGPROF_END_UNKNOWN;
			cp.end_code = p->exit_called ? p->code : 0;
		}
		cp.command = p->cmd_off ? join_cmdline(C_AT(c, p->cmd_off), p->cmd_len) : strdup("");
		cp.exe = p->exe;
		if (p->pid == (uint32_t)c->main_pid)
			main_seen = 1;
		if (!cp.command)
			err = -ENOMEM;
		if (!err)
			err = cygprof_capture_put_proc(c->cap, &cp);
		free(cp.command);
		if (!err)
			err = put_symbols(c, collector_proc(c, off), &next_obj);
		off = p->next;
	}

	/* The program never loaded the runtime (not dynamically linked, or
	 * it cleared LD_PRELOAD): it still gets its process record. */
	if (!err && !main_seen && c->main_pid > 0) {
		struct cygprof_proc cp;
		memset(&cp, 0, sizeof cp);
		cp.idx = c->ctl->nprocs;
		cp.pid = (uint32_t)c->main_pid;
		cp.ppid = (uint32_t)getpid();
		cp.parent_idx = CYGPROF_NONE;
		cp.end_ns = tick_ns(c, c->end_ts);
		if (WIFEXITED(c->main_status)) {
			cp.end_kind = CYGPROF_END_EXIT;
			cp.end_code = WEXITSTATUS(c->main_status);
		} else if (WIFSIGNALED(c->main_status)) {
			cp.end_kind = CYGPROF_END_SIGNAL;
			cp.end_code = WTERMSIG(c->main_status);
		}
		cp.command = join_argv(c->o->argv);
		cp.exe = (char *)c->o->argv[0];
		err = cp.command ? cygprof_capture_put_proc(c->cap, &cp) : -ENOMEM;
		free(cp.command);
	}
	if (!err)
		err = put_meta(c, lost);
	return err;
}
