/* SPDX-License-Identifier: MIT */
/* view-json.c - the processes and threads of a view as JSON, the one
 * writer behind report, info and their kin (view.h); strings through
 * common/json.h.  Returns errors, never exits: cli/json.c's
 * cli_json_procs()/_threads() die on them. */
#include <inttypes.h>
#include <stdio.h>

#include "json.h"
#include "view.h"

int view_json_procs(struct view *v, FILE *f)
{
	const struct cygprof_proc *procs;
	size_t n, i;
	char eb[32];
	int err;

	err = view_procs(v, &procs, &n);
	if (err)
		return err;
	fprintf(f, "\"processes\": [");
	for (i = 0; i < n; i++) {
		const struct cygprof_proc *p = &procs[i];

		fprintf(f, "%s\n    {\"idx\": %u, \"pid\": %u, \"ppid\": %u, \"command\": ",
			i ? "," : "", p->idx, p->pid, p->ppid);
		json_str(f, p->command);
		fprintf(f, ", \"exe\": ");
		json_str(f, p->exe);
		fprintf(f, ", \"end\": ");
		json_str(f, view_proc_end(p, eb, sizeof(eb)));
		fprintf(f, ", \"start_ns\": %" PRIu64 ", \"end_ns\": %" PRIu64 "}", p->start_ns,
			p->end_ns);
	}
	fprintf(f, "%s]", n ? "\n  " : "");
	return 0;
}

int view_json_threads(struct view *v, FILE *f, int totals)
{
	const struct cygprof_thread *threads;
	const struct view_tree *tree;
	size_t n, i;
	char name[16];
	int err;

	err = view_threads(v, &threads, &n);
	if (err)
		return err;
	fprintf(f, "\"threads\": [");
	for (i = 0; i < n; i++) {
		const struct cygprof_thread *t = &threads[i];

		fprintf(f, "%s\n    {\"idx\": %u, \"tid\": %u, \"pid\": %u, \"name\": ", i ? "," : "",
			t->idx, t->tid, view_thread_pid(v, t));
		json_str(f, view_thread_name(t, name));
		fprintf(f, ", \"flags\": %u, \"calls\": %" PRIu64 ", \"events\": %" PRIu64
			", \"lost\": %" PRIu64 ", \"waits\": %" PRIu64 ", \"wait_ns\": %" PRIu64
			", \"unpaired\": %" PRIu64 ", \"unwound\": %" PRIu64 ", \"overflow\": %" PRIu64
			", \"sig_lost\": %" PRIu64 ", \"mem_lost\": %" PRIu64,
			t->flags, t->calls, t->events, t->lost, t->waits, t->wait_ns, t->unpaired,
			t->unwound, t->overflow, t->sig_lost, t->mem_lost);
		if (totals) {
			err = view_tree(v, t->idx, &tree);
			if (err)
				return err;
			fprintf(f, ", \"total_ns\": %" PRIu64, tree->total_ns);
		}
		fprintf(f, "}");
	}
	fprintf(f, "%s]", n ? "\n  " : "");
	return 0;
}
