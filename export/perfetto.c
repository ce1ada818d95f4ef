/* SPDX-License-Identifier: MIT */
/* perfetto.c - cygprof export --format=perfetto: Perfetto's own protobuf
 * trace (a Trace of TracePackets, protos/perfetto/trace/), which
 * ui.perfetto.dev and trace_processor_shell open, several times smaller
 * than the Chrome JSON of the same capture.
 *
 * What it writes (field numbers of Perfetto's published .proto files;
 * written by hand with pb.h):
 *   - packet sequence 1: a ClockSnapshot first (the fixed bytes
 *     OUT_MAGIC_PERFETTO, by which a later export recognises the file),
 *     then the TrackDescriptors: one per process (ProcessDescriptor pid,
 *     process_name), one per thread (ThreadDescriptor pid, tid,
 *     thread_name; its parent the process), one per counter (a
 *     CounterDescriptor; its parent the process, none for the system's);
 *     a thread's signal handlers (CYGPROF_THREAD_SIGNAL) share its tid but
 *     not its nesting: a plain track of their own under the process;
 *   - one sequence per thread with a timeline (record --timeline): each
 *     call is a TYPE_SLICE_BEGIN and a TYPE_SLICE_END TrackEvent.  Names
 *     are interned (InternedData event_names, iid = function id + 1, sent
 *     in the packet that first uses them; the sequence starts with
 *     SEQ_INCREMENTAL_STATE_CLEARED, its slice begins carry
 *     SEQ_NEEDS_INCREMENTAL_STATE, ends have no name); the track comes
 *     from the sequence's TracePacketDefaults (track_event_defaults
 *     .track_uuid);
 *   - one sequence per counter series (record --counters, --memdump, and
 *     each process's live heap with --memory): TYPE_COUNTER events.
 *
 * Times are delta-coded: every sequence starts with a ClockSnapshot that
 * declares clock 64 (sequence-scoped) incremental, 0 on it being 0 on
 * BOOTTIME (the trace clock), and TracePacketDefaults timestamp_clock_id
 * 64, so a packet's timestamp is the ns since the sequence's previous
 * packet.  Absolute times are the capture's (ns since its start), as in
 * the chrome export.  Calls still open at the end of a thread's events end
 * at the thread's end (else the capture's), as in chrome.c.
 *
 * It streams: packets are written as they are made, memory grows with the
 * call depth and the number of functions, never with the events. */
#include "export.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "counters.h"
#include "pb.h"
#include "view.h"

/* Field numbers (protos/perfetto/trace/...). */
enum {
	/* trace.proto: Trace */
	F_TRACE_PACKET = 1,
	/* trace_packet.proto: TracePacket */
	F_PKT_CLOCK_SNAPSHOT = 6,
	F_PKT_TIMESTAMP = 8,
	F_PKT_SEQ_ID = 10, /* trusted_packet_sequence_id */
	F_PKT_TRACK_EVENT = 11,
	F_PKT_INTERNED = 12,
	F_PKT_SEQ_FLAGS = 13,
	F_PKT_CLOCK_ID = 58, /* timestamp_clock_id */
	F_PKT_DEFAULTS = 59,
	F_PKT_TRACK_DESC = 60,
	/* clock_snapshot.proto: ClockSnapshot, Clock */
	F_CS_CLOCKS = 1,
	F_CLOCK_ID = 1,
	F_CLOCK_TS = 2,
	F_CLOCK_INCREMENTAL = 3,
	/* trace_packet_defaults.proto: TracePacketDefaults */
	F_DEF_TRACK_EVENT = 11,
	F_DEF_CLOCK_ID = 58,
	/* track_event.proto: TrackEventDefaults, TrackEvent */
	F_TED_TRACK_UUID = 11,
	F_TE_TYPE = 9,
	F_TE_NAME_IID = 10,
	F_TE_NAME = 23,
	F_TE_COUNTER_VALUE = 30,
	/* interned_data.proto: InternedData; track_event.proto: EventName */
	F_INT_EVENT_NAMES = 2,
	F_EN_IID = 1,
	F_EN_NAME = 2,
	/* track_descriptor.proto: TrackDescriptor */
	F_TD_UUID = 1,
	F_TD_NAME = 2,
	F_TD_PROCESS = 3,
	F_TD_THREAD = 4,
	F_TD_PARENT = 5,
	F_TD_COUNTER = 8,
	/* process_descriptor.proto, thread_descriptor.proto, counter_descriptor.proto */
	F_PD_PID = 1,
	F_PD_NAME = 6,
	F_THD_PID = 1,
	F_THD_TID = 2,
	F_THD_NAME = 5,
	F_CD_UNIT = 3,
};

enum { SEQ_INCREMENTAL_STATE_CLEARED = 1, SEQ_NEEDS_INCREMENTAL_STATE = 2 };
enum { TYPE_SLICE_BEGIN = 1, TYPE_SLICE_END = 2, TYPE_COUNTER = 4 };
enum { CLOCK_BOOTTIME = 6, CLOCK_INCREMENTAL = 64 };
enum { UNIT_TIME_NS = 1, UNIT_COUNT = 2, UNIT_SIZE_BYTES = 3 };

/* The track uuids: processes by pid, threads by index, counters by index. */
#define UUID_PROC(pid) (((uint64_t)1 << 56) | (pid))
#define UUID_THREAD(idx) (((uint64_t)2 << 56) | (idx))
#define UUID_COUNTER(i) (((uint64_t)3 << 56) | (i))

struct pf {
	struct view *v;
	const struct export_opts *o;
	FILE *f;
	struct pb out, pkt, m1, m2, m3; /* the framed packet, it, nested messages */
	uint32_t seq;      /* the sequence being written */
	uint64_t last_ts;  /* its last packet's time (ns) */
	uint64_t npackets; /* written */
	struct export_progress pg; /* timeline events read */
};

/* The packet made in pf->pkt, framed as a Trace's packet and written. */
static int put_packet(struct pf *p)
{
	p->out.n = 0;
	pb_msg(&p->out, F_TRACE_PACKET, &p->pkt);
	if (p->out.err)
		return p->out.err;
	if (fwrite(p->out.b, 1, p->out.n, p->f) != p->out.n)
		return -EIO;
	p->npackets++;
	return 0;
}

/* Start sequence seq: its incremental clock at 0, and its events on track
 * uuid (0: none). */
static int start_sequence(struct pf *p, uint32_t seq, uint64_t uuid)
{
	struct pb *pk = &p->pkt;

	p->seq = seq;
	p->last_ts = 0;
	pb_uint0(pk, F_PKT_TIMESTAMP, 0);
	pb_uint(pk, F_PKT_CLOCK_ID, CLOCK_BOOTTIME);
	pb_uint(pk, F_PKT_SEQ_ID, seq);
	pb_uint(pk, F_PKT_SEQ_FLAGS, SEQ_INCREMENTAL_STATE_CLEARED);
	pb_uint(&p->m2, F_CLOCK_ID, CLOCK_INCREMENTAL);
	pb_uint0(&p->m2, F_CLOCK_TS, 0);
	pb_uint(&p->m2, F_CLOCK_INCREMENTAL, 1);
	pb_msg(&p->m1, F_CS_CLOCKS, &p->m2);
	pb_uint(&p->m2, F_CLOCK_ID, CLOCK_BOOTTIME);
	pb_uint0(&p->m2, F_CLOCK_TS, 0);
	pb_msg(&p->m1, F_CS_CLOCKS, &p->m2);
	pb_msg(pk, F_PKT_CLOCK_SNAPSHOT, &p->m1);
	if (uuid) {
		pb_uint(&p->m1, F_DEF_CLOCK_ID, CLOCK_INCREMENTAL);
		pb_uint(&p->m2, F_TED_TRACK_UUID, uuid);
		pb_msg(&p->m1, F_DEF_TRACK_EVENT, &p->m2);
		pb_msg(pk, F_PKT_DEFAULTS, &p->m1);
	}
	return put_packet(p);
}

/* A packet's timestamp on the sequence's incremental clock: a time before
 * the previous packet's (which the capture's per-thread order rules out)
 * is written as the previous one's. */
static void put_ts(struct pf *p, uint64_t ts)
{
	pb_uint0(&p->pkt, F_PKT_TIMESTAMP, ts > p->last_ts ? ts - p->last_ts : 0);
	if (ts > p->last_ts)
		p->last_ts = ts;
	pb_uint(&p->pkt, F_PKT_SEQ_ID, p->seq);
}

/* ---- the tracks --------------------------------------------------------------- */

static const char *base_name(const char *path)
{
	const char *s = path ? strrchr(path, '/') : NULL;

	return s ? s + 1 : path;
}

static int put_track(struct pf *p)
{
	pb_uint(&p->pkt, F_PKT_SEQ_ID, 1);
	pb_msg(&p->pkt, F_PKT_TRACK_DESC, &p->m1);
	return put_packet(p);
}

static int write_tracks(struct pf *p, const struct counter_set *cs)
{
	const struct cygprof_thread *threads;
	const struct cygprof_proc *procs;
	size_t nthreads, nprocs, i;
	char name[16];
	int err;

	if ((err = view_procs(p->v, &procs, &nprocs)) ||
	    (err = view_threads(p->v, &threads, &nthreads)))
		return err;
	for (i = 0; i < nprocs; i++) {
		const struct cygprof_proc *pr = &procs[i];
		const char *n = base_name(pr->exe && *pr->exe ? pr->exe : pr->command);

		pb_uint(&p->m1, F_TD_UUID, UUID_PROC(pr->pid));
		pb_uint(&p->m2, F_PD_PID, pr->pid);
		pb_str(&p->m2, F_PD_NAME, n && *n ? n : "?");
		pb_msg(&p->m1, F_TD_PROCESS, &p->m2);
		if ((err = put_track(p)))
			return err;
	}
	for (i = 0; i < nthreads; i++) {
		const struct cygprof_thread *t = &threads[i];
		uint32_t pid = view_thread_pid(p->v, t);

		view_thread_name(t, name);
		pb_uint(&p->m1, F_TD_UUID, UUID_THREAD(t->idx));
		pb_uint(&p->m1, F_TD_PARENT, UUID_PROC(pid));
		if (t->flags & CYGPROF_THREAD_SIGNAL) {
			char label[64];

			snprintf(label, sizeof label, "%s %u (signal handlers)", *name ? name : "?",
				 (unsigned)t->tid);
			pb_str(&p->m1, F_TD_NAME, label);
		} else {
			pb_uint(&p->m2, F_THD_PID, pid);
			pb_uint(&p->m2, F_THD_TID, t->tid);
			pb_str(&p->m2, F_THD_NAME, *name ? name : "?");
			pb_msg(&p->m1, F_TD_THREAD, &p->m2);
		}
		if ((err = put_track(p)))
			return err;
	}
	for (i = 0; i < cs->n; i++) {
		const struct counter_series *s = &cs->v[i];
		const char *unit = counters_unit_name(s->unit);

		if (!s->n)
			continue;
		pb_uint(&p->m1, F_TD_UUID, UUID_COUNTER(i));
		pb_str(&p->m1, F_TD_NAME, s->name);
		if (s->proc_idx != CYGPROF_NONE)
			pb_uint(&p->m1, F_TD_PARENT, UUID_PROC(s->pid));
		pb_uint(&p->m2, F_CD_UNIT,
			!strcmp(unit, "bytes") ? UNIT_SIZE_BYTES :
			!strcmp(unit, "ns")    ? UNIT_TIME_NS : UNIT_COUNT);
		pb_msg(&p->m1, F_TD_COUNTER, &p->m2);
		if ((err = put_track(p)))
			return err;
	}
	return 0;
}

/* ---- the timeline ------------------------------------------------------------------ */

struct tl_thread {
	struct pf *p;
	const struct view_tree *tree;
	uint8_t *sent; /* per function id: its name was interned on this sequence */
	size_t nsent;
	uint32_t *stack; /* the open calls' nodes */
	size_t depth, cap;
	uint64_t nevents;
	/* the waits for the collector (view_waits()), the next one at wpos:
	 * those of this thread are slices of their own between its events */
	const struct cygprof_offcpu *w;
	size_t nw, wpos;
	uint32_t thread;
};

static int put_slice(struct tl_thread *t, int type, uint32_t node, uint64_t ts)
{
	struct pf *p = t->p;
	uint32_t id = node < t->tree->n ? t->tree->fn[node] : VIEW_NONE;

	put_ts(p, ts);
	pb_uint(&p->m1, F_TE_TYPE, (uint64_t)type);
	if (type == TYPE_SLICE_BEGIN) {
		const struct view_fn *fn = id != VIEW_NONE ? view_fn(p->v, id) : NULL;

		if (!fn) {
			pb_str(&p->m1, F_TE_NAME, "?");
		} else {
			if (id >= t->nsent) {
				size_t n = view_nfns(p->v) > id ? view_nfns(p->v) : (size_t)id + 1;
				uint8_t *ns = realloc(t->sent, n);

				if (!ns)
					return -ENOMEM;
				memset(ns + t->nsent, 0, n - t->nsent);
				t->sent = ns;
				t->nsent = n;
			}
			pb_uint(&p->m1, F_TE_NAME_IID, (uint64_t)id + 1);
			if (!t->sent[id]) {
				t->sent[id] = 1;
				pb_uint(&p->m3, F_EN_IID, (uint64_t)id + 1);
				pb_str(&p->m3, F_EN_NAME, fn->name ? fn->name : "?");
				pb_msg(&p->m2, F_INT_EVENT_NAMES, &p->m3);
				pb_msg(&p->pkt, F_PKT_INTERNED, &p->m2);
			}
		}
	}
	pb_msg(&p->pkt, F_PKT_TRACK_EVENT, &p->m1);
	/* a begin refers to the interned names; an end has no name */
	if (type == TYPE_SLICE_BEGIN)
		pb_uint(&p->pkt, F_PKT_SEQ_FLAGS, SEQ_NEEDS_INCREMENTAL_STATE);
	t->nevents++;
	return put_packet(p);
}

/* The thread's waits for the collector that start before ts, as slices
 * of their own (named, not interned): the call they interrupted holds
 * them, so the trace shows that time is not the program's. */
static int put_waits(struct tl_thread *t, uint64_t ts)
{
	struct pf *p = t->p;
	const struct view_filter *r = view_get_filter(p->v);
	int err;

	for (; t->wpos < t->nw && t->w[t->wpos].start_ns < ts; t->wpos++) {
		const struct cygprof_offcpu *w = &t->w[t->wpos];
		if (w->thread_idx != t->thread || w->start_ns < p->last_ts ||
		    (r && r->has_range && (w->end_ns < r->t0 || w->start_ns >= r->t1)))
			continue;
		put_ts(p, w->start_ns);
		pb_uint(&p->m1, F_TE_TYPE, TYPE_SLICE_BEGIN);
		pb_str(&p->m1, F_TE_NAME, EXPORT_WAIT_NAME);
		pb_msg(&p->pkt, F_PKT_TRACK_EVENT, &p->m1);
		if ((err = put_packet(p)))
			return err;
		put_ts(p, w->end_ns > ts ? ts : w->end_ns);
		pb_uint(&p->m1, F_TE_TYPE, TYPE_SLICE_END);
		pb_msg(&p->pkt, F_PKT_TRACK_EVENT, &p->m1);
		if ((err = put_packet(p)))
			return err;
	}
	return 0;
}

static int on_events(const struct cygprof_event *ev, size_t n, void *data)
{
	struct tl_thread *t = data;
	size_t i;
	int err;

	export_progress_add(&t->p->pg, n);
	for (i = 0; i < n; i++) {
		const struct cygprof_event *e = &ev[i];
		size_t d;

		if (t->wpos < t->nw && (err = put_waits(t, e->ts_ns)))
			return err;

		if (e->kind == CYGPROF_EV_ENTER) {
			if (ARRAY_GROW(t->stack, t->cap, t->depth + 1))
				return -ENOMEM;
			t->stack[t->depth++] = e->node;
			if ((err = put_slice(t, TYPE_SLICE_BEGIN, e->node, e->ts_ns)))
				return err;
			continue;
		}
		/* an exit: end its call, and the calls above it left open (their
		 * exits were lost); an exit with no entry is ignored */
		for (d = t->depth; d > 0 && t->stack[d - 1] != e->node; d--)
			;
		if (!d)
			continue;
		while (t->depth >= d) {
			t->depth--;
			if ((err = put_slice(t, TYPE_SLICE_END, t->stack[t->depth], e->ts_ns)))
				return err;
		}
	}
	return 0;
}

/* The one reader of a thread's events (view_events(): the view's filters
 * and time range applied), in order, to on_events(). */
static int read_thread_events(struct view *v, uint32_t thread, struct tl_thread *t)
{
	return view_events(v, thread, on_events, t);
}

static int write_timeline(struct pf *p, uint32_t *seq)
{
	const struct cygprof_thread *threads;
	size_t nthreads, i;
	uint64_t cap_end = view_duration_ns(p->v);
	struct tl_thread t;
	int err;

	if ((err = view_threads(p->v, &threads, &nthreads)))
		return err;
	struct view_limits lim;
	view_limits(p->v, &lim);
	int partial = lim.incomplete;
	memset(&t, 0, sizeof t);
	t.p = p;
	if ((err = view_waits(p->v, &t.w, &t.nw)))
		return err;
	for (i = 0; i < nthreads && !err; i++) {
		const struct cygprof_thread *th = &threads[i];
		uint64_t end, base = p->pg.done;

		/* a thread without events, unless the capture was cut off:
		 * its record counts those before the last checkpoint, and the
		 * events committed after it may be all it has */
		if (!th->events && !partial)
			continue;
		if ((err = view_tree(p->v, th->idx, &t.tree)))
			break;
		if ((err = start_sequence(p, (*seq)++, UUID_THREAD(th->idx))))
			break;
		if (t.nsent)
			memset(t.sent, 0, t.nsent); /* names interned again per sequence */
		t.depth = 0;
		t.wpos = 0;
		t.thread = th->idx;
		if ((err = read_thread_events(p->v, th->idx, &t)))
			break;
		/* the thread's stored events, whatever a filter passed on */
		export_progress_to(&p->pg, base + th->events);
		/* calls still open: they end with the thread (or the capture) */
		end = th->end_ns ? th->end_ns : cap_end;
		while (t.depth && !err) {
			t.depth--;
			err = put_slice(&t, TYPE_SLICE_END, t.stack[t.depth],
					end > p->last_ts ? end : p->last_ts);
		}
	}
	free(t.sent);
	free(t.stack);
	return err;
}

/* ---- counters and the live heap ------------------------------------------------------- */

static int write_counters(struct pf *p, const struct counter_set *cs, uint32_t *seq)
{
	size_t i, j;
	int err;

	for (i = 0; i < cs->n; i++) {
		const struct counter_series *s = &cs->v[i];

		if (!s->n)
			continue;
		if ((err = start_sequence(p, (*seq)++, UUID_COUNTER(i))))
			return err;
		for (j = 0; j < s->n; j++) {
			put_ts(p, s->s[j].t_ns);
			pb_uint(&p->m1, F_TE_TYPE, TYPE_COUNTER);
			pb_uint0(&p->m1, F_TE_COUNTER_VALUE, counter_value(&s->s[j]));
			pb_msg(&p->pkt, F_PKT_TRACK_EVENT, &p->m1);
			if ((err = put_packet(p)))
				return err;
		}
	}
	return 0;
}

/* ---- the whole file ------------------------------------------------------------------- */

static int write_perfetto(struct view *v, const struct export_opts *o, FILE *f)
{
	struct pf p = {.v = v, .o = o, .f = f};
	struct counter_set cs = {0};
	uint32_t seq = 2;
	int err;

	if (!view_mode_has(v, "timeline")) {
		if (o->error)
			o->error("%s has no timeline (record with --timeline): no Perfetto trace "
				 "written",
				 o->file);
		return EXPORT_E_LACKS;
	}
	export_progress_start(&p.pg, o, "events", export_timeline_events(v));
	if (fwrite(OUT_MAGIC_PERFETTO, 1, sizeof(OUT_MAGIC_PERFETTO) - 1, f) !=
	    sizeof(OUT_MAGIC_PERFETTO) - 1)
		return -EIO;
	if ((err = counters_load(v, 1, &cs)))
		return err;
	if (!(err = write_tracks(&p, &cs)) && !(err = write_timeline(&p, &seq)))
		err = write_counters(&p, &cs, &seq);
	counters_release(&cs);
	free(p.out.b);
	free(p.pkt.b);
	free(p.m1.b);
	free(p.m2.b);
	free(p.m3.b);
	if (!err && ferror(f))
		err = -EIO;
	return err;
}

const struct exporter export_perfetto = {
	.name = "perfetto",
	.summary = "Perfetto's protobuf trace for ui.perfetto.dev: the timeline\n"
		   "             as slices, counters and the live heap; several times\n"
		   "             smaller than chrome's JSON",
	.readers = "Perfetto UI, trace_processor_shell",
	.out_kind = OUT_PERFETTO,
	.write = write_perfetto,
	.binary = 1,
};
