/* SPDX-License-Identifier: MIT */
/* rr-ticks.h - rr's tick counter beside each perf sample (record --rr-ticks),
 * and the layout of the PERF_RECORD_SAMPLE records sampling.c reads. */
#ifndef CYGPROF_RR_TICKS_H
#define CYGPROF_RR_TICKS_H

#include <linux/perf_event.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>

/* Unaligned reads of a perf record's fields (host byte order). */
static inline uint64_t perf_u64(const char *p)
{
	uint64_t v;
	memcpy(&v, p, sizeof v);
	return v;
}

static inline uint32_t perf_u32(const char *p)
{
	uint32_t v;
	memcpy(&v, p, sizeof v);
	return v;
}

struct collector;
struct rr_ticks;

/* No tick count: the sample's psample.rr_ticks. */
#define RR_TICKS_NONE UINT64_MAX

/* The fields of a PERF_RECORD_SAMPLE with the sample_type sampling.c asks
 * for: IP | TID | TIME [| ID] | PERIOD [| READ] | CALLCHAIN. */
struct perf_sample_rec {
	uint64_t ip;
	uint32_t pid, tid;
	uint64_t time;
	uint64_t id;       /* the event that took it (its parent's for an inherited one), 0 without */
	uint64_t period;
	uint64_t ticks;    /* the read group's second value, RR_TICKS_NONE without one */
	uint64_t leader_id, ticks_id; /* the read group's ids (0 without) */
	const char *chain; /* nr u64 (unaligned) inside the record */
	uint64_t nr;
	const char *after; /* the first byte after the call chain (regs_user, stack_user...) */
};

/** Parse the body of a PERF_RECORD_SAMPLE (what follows its header, len
 * bytes).  read_group: the event was opened with PERF_SAMPLE_READ and
 * read_format PERF_FORMAT_GROUP | PERF_FORMAT_ID and PERF_SAMPLE_ID
 * (rr_ticks_setup() said so): the id follows the time, and a group {nr,
 * {value, id}[nr]} sits between the period and the call chain; the ticks
 * are its second value (the counter, after the leader).
 * Returns 0, or -1 for a record too short for what it says it holds. */
int perf_sample_parse(const void *body, size_t len, int read_group, struct perf_sample_rec *out);

/* rr's tick counter on one CPU model. */
struct rr_ticks_cpu {
	const char *name;   /* "Intel Skylake", "AMD Zen 2", ... */
	uint64_t config;    /* raw event (PERF_TYPE_RAW) */
};

/** rr's counter for a CPU: vendor the 12 characters of cpuid leaf 0,
 * eax1 the eax of cpuid leaf 1 (family, model, stepping), as rr's
 * PerfCounters tells them apart.  0, or -1 when rr does not count ticks
 * with retired conditional branches there (with the CPU's name in
 * out->name when known). */
int rr_ticks_cpu_of(const char *vendor, uint32_t eax1, struct rr_ticks_cpu *out);

/** record --rr-ticks, from sampling.c's open with the sampling event's
 * attributes leader (not yet opened), in the parent between fork and exec
 * of pid.  Decides whether each sample can carry the thread's count of rr's
 * counter: then it adds PERF_SAMPLE_READ and PERF_FORMAT_GROUP to leader
 * and returns the state to hand to the calls below; else (never asked, or
 * the counter is missing) NULL, after one warning line saying why when
 * asked.  Either way the capture's meta "rr_ticks" says what was done. */
struct rr_ticks *rr_ticks_setup(struct collector *c, struct perf_event_attr *leader, pid_t pid);
/** Open the counter and the reading events on cpu into leader_fd's group
 * (the leader just opened with the attributes rr_ticks_setup() changed, and
 * mapped: the reads go into its ring).  A failure leaves that CPU's samples
 * without ticks and warns once. */
void rr_ticks_member(struct rr_ticks *r, int leader_fd, pid_t pid, int cpu);
/* What a record of the ring means to the tick counts (rr_ticks_classify()). */
enum {
	RR_REC_SAMPLE = 0, /* a sample of the program */
	RR_REC_SWITCH,     /* a read as a thread left a CPU */
	RR_REC_EXEC,       /* a read as a thread exec'd (rr starts again from 0) */
	RR_REC_EXIT,       /* a thread ended (PERF_RECORD_EXIT): forget it */
};

/** What the sample ps is (by its id): RR_REC_SAMPLE, or RR_REC_SWITCH or
 * RR_REC_EXEC for the reads rr_ticks_member() set up (not samples of the program: give
 * them to rr_ticks_settle() in time order); *inst: the CPU whose counter ps
 * read (UINT32_MAX: unknown). */
int rr_ticks_classify(const struct rr_ticks *r, const struct perf_sample_rec *ps,
		      uint32_t *inst);
/** In time order with the samples: a record rr_ticks_classify() (or a
 * PERF_RECORD_EXIT: RR_REC_EXIT) gave what for thread tid, the counter on
 * CPU inst reading value. */
void rr_ticks_settle(struct rr_ticks *r, int what, uint32_t tid, uint32_t inst, uint64_t value);
/** In time order: the thread's tick count at a sample on CPU inst whose
 * counter read value: that plus what its counters on the other CPUs held
 * when it last left them (each CPU counts the thread apart), less the count
 * at its last exec (0 for a sample of the program inside its first exec,
 * before the exec's read).  RR_TICKS_NONE when value is. */
uint64_t rr_ticks_total(struct rr_ticks *r, uint32_t tid, uint32_t inst, uint64_t value);
/** After the last records: lost perf records (PERF_RECORD_LOST*) may have
 * taken reads with them, so the ticks of later samples may be wrong: one
 * warning line, and the capture's meta "rr_ticks" says so. */
void rr_ticks_final(struct rr_ticks *r, struct collector *c, uint64_t lost);
/** Close the counters and free r (NULL: nothing). */
void rr_ticks_free(struct rr_ticks *r);

#endif
