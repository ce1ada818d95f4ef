/* SPDX-License-Identifier: MIT */
/* capture-sink.h - where the collector's writer calls go: an LMDB capture
 * (the capture sink) or a network stream (the net sink, net-proto.h).
 * Every op mirrors the cygprof_capture_* call of the same name and returns
 * what it returns (0, or a negative errno / CYGPROF_E_*). */
#ifndef CYGPROF_CAPTURE_SINK_H
#define CYGPROF_CAPTURE_SINK_H

#include <stddef.h>
#include <stdint.h>

#include "cygprof/cygprof-capture.h"

struct cap_sink_ops {
	int (*begin)(void *s);
	int (*commit)(void *s);
	int (*set_meta)(void *s, const char *key, const char *value);
	int (*put_proc)(void *s, const struct cygprof_proc *p);
	int (*put_thread)(void *s, const struct cygprof_thread *t);
	int (*put_tree)(void *s, uint32_t thread_idx, const struct cygprof_node *v, size_t n);
	int (*put_sites)(void *s, uint32_t thread_idx, const struct cygprof_callsite *v, size_t n);
	int (*append_events)(void *s, uint32_t thread_idx, const struct cygprof_event *v,
			     size_t n);
	int (*put_object)(void *s, const struct cygprof_object *o);
	int (*put_symbol)(void *s, const struct cygprof_symbol *sym);
	int (*append_mem)(void *s, uint32_t thread_idx, const struct cygprof_mem_event *v,
			  size_t n);
	int (*put_stacks)(void *s, const struct cygprof_stack_node *v, size_t n);
	int (*put_counter)(void *s, const struct cygprof_counter *c);
	int (*append_samples)(void *s, uint32_t counter_id, const struct cygprof_sample *v,
			      size_t n);
	int (*append_psamples)(void *s, const struct cygprof_psample *v, size_t n);
	int (*append_offcpu)(void *s, const struct cygprof_offcpu *v, size_t n);
	/* publish: make the capture visible at its path (the collector does it
	 * early); close: the run is over (flush, seal); discard: give up. */
	int (*publish)(void *s);
	int (*close)(void *s);
	void (*discard)(void *s);
};

struct cap_sink {
	const struct cap_sink_ops *ops;
	void *state;
};

/* The capture sink: every op goes to cap (close and discard release it). */
struct cap_sink cap_sink_capture(struct cygprof_capture *cap);

#endif
