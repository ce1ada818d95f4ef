/* SPDX-License-Identifier: MIT */
/* test-rr-ticks.c - the PERF_RECORD_SAMPLE layout with and without the read
 * group of record --rr-ticks, and rr's counter by CPU model. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "rr-ticks.h"

/* A PERF_RECORD_SAMPLE body of the layout record --rr-ticks asks for: a
 * cpu-clock leader with PERF_SAMPLE_ID and PERF_SAMPLE_READ, read_format
 * PERF_FORMAT_GROUP | PERF_FORMAT_ID, and rr's counter as its member (IP |
 * TID | TIME | ID | PERIOD | READ | CALLCHAIN): ip 0x401136, pid 4242, tid
 * 4243, time 123456789, id 17, period 1001001, group {2; {1001001, id 17},
 * {5000123, id 18}}, chain {3; PERF_CONTEXT_USER, 0x401136, 0x4011a0}. */
static const uint64_t with_read[] = {
	0x401136,
	4242 | (uint64_t)4243 << 32,
	123456789,
	17,
	1001001,
	2, 1001001, 17, 5000123, 18,
	3, (uint64_t)PERF_CONTEXT_USER, 0x401136, 0x4011a0,
};

/* Recorded: the body of a PERF_RECORD_SAMPLE (misc 2: user, size 120)
 * that Linux 6.18 wrote for a cpu-clock leader (period 1000000, id 1441)
 * with PERF_SAMPLE_ID, PERF_SAMPLE_READ, PERF_FORMAT_GROUP | PERF_FORMAT_ID
 * and a task-clock member (id 1442) standing in for rr's counter, on a
 * spinning process 16311 (a machine without a PMU): the member read
 * 0xfc44f. */
static const uint64_t recorded_read[] = {
	0x561babeea33e, 0x3fb700003fb7, 0x170814640b39, 0x5a1,
	0xf4240, 0x2, 0xf8c8a, 0x5a1,
	0xfc44f, 0x5a2, 0x3, 0xfffffffffffffe00,
	0x561babeea33e, 0x7f2d7ae5924a,
};

/* The same without the read group (record --sample). */
static const uint64_t without_read[] = {
	0x401136,
	4242 | (uint64_t)4243 << 32,
	123456789,
	1001001,
	3, (uint64_t)PERF_CONTEXT_USER, 0x401136, 0x4011a0,
};

static void test_with_read_group(void)
{
	struct perf_sample_rec r;

	CHECK_EQ_INT(perf_sample_parse(with_read, sizeof with_read, 1, &r), 0);
	CHECK_EQ_U64(r.ip, 0x401136);
	CHECK_EQ_U64(r.pid, 4242);
	CHECK_EQ_U64(r.tid, 4243);
	CHECK_EQ_U64(r.time, 123456789);
	CHECK_EQ_U64(r.id, 17);
	CHECK_EQ_U64(r.period, 1001001);
	CHECK_EQ_U64(r.ticks, 5000123);
	CHECK_EQ_U64(r.leader_id, 17);
	CHECK_EQ_U64(r.ticks_id, 18);
	CHECK_EQ_U64(r.nr, 3);
	CHECK_EQ_INT(r.after == (const char *)(with_read + 14), 1);
	uint64_t last;
	memcpy(&last, r.chain + 16, 8);
	CHECK_EQ_U64(last, 0x4011a0);
}

static void test_recorded(void)
{
	struct perf_sample_rec r;

	CHECK_EQ_U64(sizeof recorded_read, 120 - 8);
	CHECK_EQ_INT(perf_sample_parse(recorded_read, sizeof recorded_read, 1, &r), 0);
	CHECK_EQ_U64(r.ip, 0x561babeea33e);
	CHECK_EQ_U64(r.pid, 16311);
	CHECK_EQ_U64(r.tid, 16311);
	CHECK_EQ_U64(r.time, 0x170814640b39);
	CHECK_EQ_U64(r.id, 1441);
	CHECK_EQ_U64(r.period, 1000000);
	CHECK_EQ_U64(r.ticks, 0xfc44f);
	CHECK_EQ_U64(r.leader_id, 1441);
	CHECK_EQ_U64(r.ticks_id, 1442);
	CHECK_EQ_U64(r.nr, 3);
	uint64_t ra;
	memcpy(&ra, r.chain + 16, 8);
	CHECK_EQ_U64(ra, 0x7f2d7ae5924a);
	/* taken for the layout without the group, it does not fit */
	CHECK_EQ_INT(perf_sample_parse(recorded_read, sizeof recorded_read, 0, &r), -1);
}

static void test_without_read_group(void)
{
	struct perf_sample_rec r;

	CHECK_EQ_INT(perf_sample_parse(without_read, sizeof without_read, 0, &r), 0);
	CHECK_EQ_U64(r.ticks, RR_TICKS_NONE);
	CHECK_EQ_U64(r.time, 123456789);
	CHECK_EQ_U64(r.nr, 3);
	uint64_t first;
	memcpy(&first, r.chain, 8);
	CHECK_EQ_U64(first, (uint64_t)PERF_CONTEXT_USER);
}

/* A group of the leader alone (the counter did not open on that CPU). */
static void test_group_of_one(void)
{
	uint64_t b[] = {0x401136, 1 | (uint64_t)1 << 32, 5, 9, 1000, 1, 1000, 9, 1, 0x401136};
	struct perf_sample_rec r;

	CHECK_EQ_INT(perf_sample_parse(b, sizeof b, 1, &r), 0);
	CHECK_EQ_U64(r.ticks, RR_TICKS_NONE);
	CHECK_EQ_U64(r.nr, 1);
	CHECK_EQ_U64(r.leader_id, 9);
	CHECK_EQ_U64(r.ticks_id, 0);
}

static void test_short_records(void)
{
	struct perf_sample_rec r;

	/* every truncation is refused, never read past */
	for (size_t n = 0; n < sizeof with_read; n += 8)
		CHECK_EQ_INT(perf_sample_parse(with_read, n, 1, &r), -1);
	for (size_t n = 0; n < sizeof without_read; n += 8)
		CHECK_EQ_INT(perf_sample_parse(without_read, n, 0, &r), -1);
	/* a group count that does not fit */
	uint64_t b[] = {1, 2, 3, 4, 5, UINT64_MAX / 8, 0, 0};
	CHECK_EQ_INT(perf_sample_parse(b, sizeof b, 1, &r), -1);
	uint64_t c[] = {1, 2, 3, 4, UINT64_MAX};
	CHECK_EQ_INT(perf_sample_parse(c, sizeof c, 0, &r), -1);
}

/* Random bodies in buffers of their exact size (ASan sees any read past
 * them): parsed or refused, a call chain always inside. */
static void test_random(void)
{
	unsigned seed = 12345;
	int bad = 0;

	for (int i = 0; i < 20000; i++) {
		size_t len = (size_t)(rand_r(&seed) % 200);
		unsigned char *b = malloc(len ? len : 1);
		struct perf_sample_rec r;

		for (size_t k = 0; k < len; k++) /* small counts now and then */
			b[k] = (unsigned char)(k % 8 ? (rand_r(&seed) % 4 ? 0 : rand_r(&seed))
						     : rand_r(&seed) % 6);
		for (int rg = 0; rg < 2; rg++)
			if (!perf_sample_parse(b, len, rg, &r) &&
			    (r.chain < (const char *)b ||
			     r.chain + 8 * r.nr > (const char *)b + len))
				bad++;
		free(b);
	}
	CHECK_EQ_INT(bad, 0);
}

static void test_cpu_table(void)
{
	struct rr_ticks_cpu c;

	/* Skylake client: family 6, model 0x5e (ext model 5, model 0xe), stepping 3 */
	CHECK_EQ_INT(rr_ticks_cpu_of("GenuineIntel", 0x506e3, &c), 0);
	CHECK_EQ_U64(c.config, 0x5101c4);
	CHECK_EQ_STR(c.name, "Intel Skylake");
	/* Ice Lake server: model 0x6a */
	CHECK_EQ_INT(rr_ticks_cpu_of("GenuineIntel", 0x606a6, &c), 0);
	CHECK_EQ_U64(c.config, 0x5111c4);
	/* Alder Lake: hybrid, two events: refused */
	CHECK_EQ_INT(rr_ticks_cpu_of("GenuineIntel", 0x90672, &c), -1);
	CHECK_EQ_STR(c.name, "Intel Alder Lake");
	/* Penryn: no conditional-branch counter rr uses */
	CHECK_EQ_INT(rr_ticks_cpu_of("GenuineIntel", 0x10676, &c), -1);
	/* an unknown Intel model */
	CHECK_EQ_INT(rr_ticks_cpu_of("GenuineIntel", 0xff0, &c), -1);
	CHECK_EQ_INT(c.name == NULL, 1);
	/* AMD Zen 2 (family 17h: base 0xf, ext 8), Zen 3 (19h), Zen 5 (1Ah) */
	CHECK_EQ_INT(rr_ticks_cpu_of("AuthenticAMD", 0x830f10, &c), 0);
	CHECK_EQ_U64(c.config, 0x5100d1);
	CHECK_EQ_INT(rr_ticks_cpu_of("AuthenticAMD", 0xa20f10, &c), 0);
	CHECK_EQ_U64(c.config, 0x5100d1);
	CHECK_EQ_INT(rr_ticks_cpu_of("AuthenticAMD", 0xb00f20, &c), 0);
	CHECK_EQ_U64(c.config, 0x5100d1);
	/* AMD family 15h: rr counts taken branches there */
	CHECK_EQ_INT(rr_ticks_cpu_of("AuthenticAMD", 0x600f20, &c), -1);
	CHECK_EQ_STR(c.name, "AMD Family 15h");
	CHECK_EQ_INT(rr_ticks_cpu_of("HygonGenuine", 0x900f00, &c), -1);
}

int main(void)
{
	RUN_TEST(test_with_read_group);
	RUN_TEST(test_recorded);
	RUN_TEST(test_without_read_group);
	RUN_TEST(test_group_of_one);
	RUN_TEST(test_short_records);
	RUN_TEST(test_random);
	RUN_TEST(test_cpu_table);
	CHECK_DONE();
}
