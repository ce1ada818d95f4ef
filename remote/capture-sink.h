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

/* The calls, by the names of the cygprof_capture_* they mirror. */
static inline int cap_sink_begin(const struct cap_sink *k) { return k->ops->begin(k->state); }
static inline int cap_sink_commit(const struct cap_sink *k) { return k->ops->commit(k->state); }
static inline int cap_sink_set_meta(const struct cap_sink *k, const char *key, const char *value)
{
	return k->ops->set_meta(k->state, key, value);
}
static inline int cap_sink_put_proc(const struct cap_sink *k, const struct cygprof_proc *p)
{
	return k->ops->put_proc(k->state, p);
}
static inline int cap_sink_put_thread(const struct cap_sink *k, const struct cygprof_thread *t)
{
	return k->ops->put_thread(k->state, t);
}
static inline int cap_sink_put_tree(const struct cap_sink *k, uint32_t thread_idx,
				    const struct cygprof_node *v, size_t n)
{
	return k->ops->put_tree(k->state, thread_idx, v, n);
}
static inline int cap_sink_put_sites(const struct cap_sink *k, uint32_t thread_idx,
				     const struct cygprof_callsite *v, size_t n)
{
	return k->ops->put_sites(k->state, thread_idx, v, n);
}
static inline int cap_sink_append_events(const struct cap_sink *k, uint32_t thread_idx,
					 const struct cygprof_event *v, size_t n)
{
	return k->ops->append_events(k->state, thread_idx, v, n);
}
static inline int cap_sink_put_object(const struct cap_sink *k, const struct cygprof_object *o)
{
	return k->ops->put_object(k->state, o);
}
static inline int cap_sink_put_symbol(const struct cap_sink *k, const struct cygprof_symbol *s)
{
	return k->ops->put_symbol(k->state, s);
}
static inline int cap_sink_append_mem(const struct cap_sink *k, uint32_t thread_idx,
				      const struct cygprof_mem_event *v, size_t n)
{
	return k->ops->append_mem(k->state, thread_idx, v, n);
}
static inline int cap_sink_put_stacks(const struct cap_sink *k, const struct cygprof_stack_node *v,
				      size_t n)
{
	return k->ops->put_stacks(k->state, v, n);
}
static inline int cap_sink_put_counter(const struct cap_sink *k, const struct cygprof_counter *c)
{
	return k->ops->put_counter(k->state, c);
}
static inline int cap_sink_append_samples(const struct cap_sink *k, uint32_t counter_id,
					  const struct cygprof_sample *v, size_t n)
{
	return k->ops->append_samples(k->state, counter_id, v, n);
}
static inline int cap_sink_append_psamples(const struct cap_sink *k,
					   const struct cygprof_psample *v, size_t n)
{
	return k->ops->append_psamples(k->state, v, n);
}
static inline int cap_sink_append_offcpu(const struct cap_sink *k, const struct cygprof_offcpu *v,
					 size_t n)
{
	return k->ops->append_offcpu(k->state, v, n);
}
static inline int cap_sink_publish(const struct cap_sink *k) { return k->ops->publish(k->state); }
static inline int cap_sink_close(const struct cap_sink *k) { return k->ops->close(k->state); }
static inline void cap_sink_discard(const struct cap_sink *k) { k->ops->discard(k->state); }

#endif
