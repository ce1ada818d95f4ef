/* SPDX-License-Identifier: MIT */
/* capture-sink.c - the sink that writes an LMDB capture. */
#include "capture-sink.h"

static int cs_begin(void *s) { return cygprof_capture_begin(s); }
static int cs_commit(void *s) { return cygprof_capture_commit(s); }
static int cs_set_meta(void *s, const char *k, const char *v)
{
	return cygprof_capture_set_meta(s, k, v);
}
static int cs_put_proc(void *s, const struct cygprof_proc *p)
{
	return cygprof_capture_put_proc(s, p);
}
static int cs_put_thread(void *s, const struct cygprof_thread *t)
{
	return cygprof_capture_put_thread(s, t);
}
static int cs_put_tree(void *s, uint32_t t, const struct cygprof_node *v, size_t n)
{
	return cygprof_capture_put_tree(s, t, v, n);
}
static int cs_put_sites(void *s, uint32_t t, const struct cygprof_callsite *v, size_t n)
{
	return cygprof_capture_put_sites(s, t, v, n);
}
static int cs_append_events(void *s, uint32_t t, const struct cygprof_event *v, size_t n)
{
	return cygprof_capture_append_events(s, t, v, n);
}
static int cs_put_object(void *s, const struct cygprof_object *o)
{
	return cygprof_capture_put_object(s, o);
}
static int cs_put_symbol(void *s, const struct cygprof_symbol *sym)
{
	return cygprof_capture_put_symbol(s, sym);
}
static int cs_append_mem(void *s, uint32_t t, const struct cygprof_mem_event *v, size_t n)
{
	return cygprof_capture_append_mem(s, t, v, n);
}
static int cs_put_stacks(void *s, const struct cygprof_stack_node *v, size_t n)
{
	return cygprof_capture_put_stacks(s, v, n);
}
static int cs_put_counter(void *s, const struct cygprof_counter *c)
{
	return cygprof_capture_put_counter(s, c);
}
static int cs_append_samples(void *s, uint32_t id, const struct cygprof_sample *v, size_t n)
{
	return cygprof_capture_append_samples(s, id, v, n);
}
static int cs_append_psamples(void *s, const struct cygprof_psample *v, size_t n)
{
	return cygprof_capture_append_psamples(s, v, n);
}
static int cs_append_offcpu(void *s, const struct cygprof_offcpu *v, size_t n)
{
	return cygprof_capture_append_offcpu(s, v, n);
}
static int cs_publish(void *s) { return cygprof_capture_publish(s); }
static int cs_close(void *s) { return cygprof_capture_close(s); }
static void cs_discard(void *s) { cygprof_capture_discard(s); }

static const struct cap_sink_ops capture_ops = {
	.begin = cs_begin,
	.commit = cs_commit,
	.set_meta = cs_set_meta,
	.put_proc = cs_put_proc,
	.put_thread = cs_put_thread,
	.put_tree = cs_put_tree,
	.put_sites = cs_put_sites,
	.append_events = cs_append_events,
	.put_object = cs_put_object,
	.put_symbol = cs_put_symbol,
	.append_mem = cs_append_mem,
	.put_stacks = cs_put_stacks,
	.put_counter = cs_put_counter,
	.append_samples = cs_append_samples,
	.append_psamples = cs_append_psamples,
	.append_offcpu = cs_append_offcpu,
	.publish = cs_publish,
	.close = cs_close,
	.discard = cs_discard,
};

struct cap_sink cap_sink_capture(struct cygprof_capture *cap)
{
	return (struct cap_sink){ .ops = &capture_ops, .state = cap };
}
