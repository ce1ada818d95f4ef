/* SPDX-License-Identifier: MIT */
/* test-memdump.c - libcygprof-memdump (memdump/memdump.c) against a table
 * of its own.
 *
 * Built twice (memdump/meson.build): with TEST_FAKE_TABLE=1 this program
 * plays the runtime, exporting cyg__memdump_table() (the executable is
 * linked with --export-dynamic, so the library's dlsym(RTLD_DEFAULT) finds
 * it) that returns a static table with a 20 ms interval; with
 * TEST_FAKE_TABLE=0 there is no such symbol, as in a program run without
 * cygprof, and every call must be a no-op.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "cyg-shm.h"
#include "cygprof/memdump.h"

#define INTERVAL_MS 20

static void sleep_ms(unsigned ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts))
		;
}

static unsigned long dumper_calls[4];
static int dumper_order_bad;
static int dumper_sig_unblocked;

static void dumper(void *data)
{
	unsigned i = (unsigned)(uintptr_t)data;
	unsigned long n = __atomic_add_fetch(&dumper_calls[i], 1, __ATOMIC_SEQ_CST);
	/* dumper 1 is registered after dumper 0: in each round it comes second */
	if (i == 1 && __atomic_load_n(&dumper_calls[0], __ATOMIC_SEQ_CST) != n)
		dumper_order_bad++;
	sigset_t cur;
	pthread_sigmask(SIG_SETMASK, NULL, &cur);
	if (!sigismember(&cur, SIGINT) || !sigismember(&cur, SIGTERM))
		dumper_sig_unblocked++;
	cygprof_memdump_report_byte_total("Dumped", n * 10);
}

#if TEST_FAKE_TABLE

static struct cyg_memdump fake = {.nslots = CYG_MEMDUMP_SLOTS, .interval_ms = INTERVAL_MS};
static int table_calls;

struct cyg_memdump *cyg__memdump_table(void);
__attribute__((visibility("default"))) struct cyg_memdump *cyg__memdump_table(void)
{
	__atomic_add_fetch(&table_calls, 1, __ATOMIC_RELAXED);
	return &fake;
}

static void self_remover(void *data)
{
	__atomic_add_fetch(&dumper_calls[2], 1, __ATOMIC_SEQ_CST);
	cygprof_memdump_unregister(self_remover, data);
}

static struct cyg_memdump_slot *slot_named(const char *name)
{
	struct cyg_memdump_slot *found = NULL;
	int n = 0;
	for (unsigned i = 0; i < CYG_MEMDUMP_SLOTS; i++)
		if (fake.slot[i].state == 2 && !strcmp(fake.slot[i].name, name)) {
			found = &fake.slot[i];
			n++;
		}
	return n == 1 ? found : NULL;
}

static unsigned slots_used(void)
{
	unsigned n = 0;
	for (unsigned i = 0; i < CYG_MEMDUMP_SLOTS; i++)
		n += fake.slot[i].state != 0;
	return n;
}

static void test_total(void)
{
	struct cyg_memdump_slot *s;

	CHECK(cygprof_memdump_needs_report("Total"));
	CHECK_EQ_INT(table_calls, 1);
	CHECK(cygprof_memdump_needs_report("Total")); /* no report yet */
	cygprof_memdump_report_byte_total("Total", 123456789012ULL);
	s = slot_named("Total");
	CHECK(s != NULL);
	if (!s)
		return;
	CHECK_EQ_U64(s->value, 123456789012ULL);
	CHECK_EQ_U64(s->seq, 1);
	CHECK(s->last_ns > 0);
	CHECK(!cygprof_memdump_needs_report("Total"));
	cygprof_memdump_report_byte_total("Total", 7);
	CHECK_EQ_U64(s->value, 7);
	CHECK_EQ_U64(s->seq, 2);
	/* the same name from another pointer finds the same slot */
	char buf[16];
	strcpy(buf, "Total");
	cygprof_memdump_report_byte_total(buf, 9);
	CHECK_EQ_U64(s->value, 9);
	/* the same pointer holding another name does not */
	strcpy(buf, "Other");
	cygprof_memdump_report_byte_total(buf, 11);
	CHECK_EQ_U64(s->value, 9);
	CHECK(slot_named("Other") != NULL && slot_named("Other")->value == 11);
	CHECK_EQ_INT(table_calls, 1); /* looked up once */
}

static void test_needs_report_interval(void)
{
	cygprof_memdump_report_byte_total("Rate", 1);
	CHECK(!cygprof_memdump_needs_report("Rate"));
	sleep_ms(INTERVAL_MS / 2);
	CHECK(!cygprof_memdump_needs_report("Rate"));
	sleep_ms(INTERVAL_MS / 2 + 2);
	CHECK(cygprof_memdump_needs_report("Rate"));
	cygprof_memdump_report_byte_total("Rate", 2);
	CHECK(!cygprof_memdump_needs_report("Rate"));
}

static void test_long_name(void)
{
	char name[100], want[CYG_MEMDUMP_NAME];
	unsigned used = slots_used();
	memset(name, 'x', sizeof name - 1);
	name[sizeof name - 1] = 0;
	memset(want, 'x', sizeof want - 1);
	want[sizeof want - 1] = 0;
	/* longer than a slot holds: refused, never cut into another name */
	errno = 0;
	CHECK_EQ_INT(cygprof_memdump_report_byte_delta(name, 5), -1);
	CHECK_EQ_INT(errno, EINVAL);
	name[CYG_MEMDUMP_NAME] = 0; /* 48 bytes */
	CHECK_EQ_INT(cygprof_memdump_report_byte_total(name, 5), -1);
	CHECK_EQ_INT(slots_used(), used);
	errno = 0;
	CHECK_EQ_INT(cygprof_memdump_report_byte_delta(want, 6), 0); /* 47 bytes */
	CHECK_EQ_INT(errno, 0);
	struct cyg_memdump_slot *s = slot_named(want);
	CHECK(s != NULL && s->value == 6 && s->seq == 1);
	/* a cached pointer now holding a longer name */
	memcpy(name, want, sizeof want);
	CHECK_EQ_INT(cygprof_memdump_report_byte_delta(name, 1), 0);
	name[CYG_MEMDUMP_NAME - 1] = 'x';
	name[CYG_MEMDUMP_NAME] = 0;
	CHECK_EQ_INT(cygprof_memdump_report_byte_delta(name, 1), -1);
	CHECK(s->value == 7 && s->seq == 2);
}

static void test_bad_names(void)
{
	static const char *const bad[] = {"", "a\nb", "a\tb", "a\x1b" "b", "a\x7f",
					  "a\xc2\x85" "b", "a\xff", "\xc0\xae", "a\xe2\x82",
					  "\xed\xa0\x80", "\xf4\x90\x80\x80"};
	unsigned used = slots_used();

	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		errno = 0;
		CHECK_EQ_INT(cygprof_memdump_report_byte_total(bad[i], 1), -1);
		CHECK_EQ_INT(errno, EINVAL);
		errno = 0;
		CHECK_EQ_INT(cygprof_memdump_report_byte_delta(bad[i], 1), -1);
		CHECK_EQ_INT(errno, EINVAL);
		errno = 42;
		CHECK_EQ_INT(cygprof_memdump_needs_report(bad[i]), 0);
		CHECK_EQ_INT(errno, 42);
	}
	CHECK_EQ_INT(cygprof_memdump_report_byte_total(NULL, 1), -1);
	CHECK_EQ_INT(slots_used(), used);
	CHECK_EQ_INT(cygprof_memdump_report_byte_total("Größe", UINT64_MAX), 0);
	struct cyg_memdump_slot *s = slot_named("Größe");
	CHECK(s != NULL && (uint64_t)s->value == UINT64_MAX);
	CHECK_EQ_INT(cygprof_memdump_report_byte_total("\xf0\x9f\x90\x98", 2), 0); /* U+1F418 */
	CHECK_EQ_INT(slots_used(), used + 2);
}

#define NTHREADS 8
#define NDELTAS 200000

static pthread_barrier_t barrier;

static void *delta_thread(void *arg)
{
	unsigned id = (unsigned)(uintptr_t)arg;
	char same[16], mine[16];
	strcpy(same, "Same"); /* every thread its own pointer */
	snprintf(mine, sizeof mine, "Mine%u", id);
	pthread_barrier_wait(&barrier);
	cygprof_memdump_report_byte_delta(same, 1);
	cygprof_memdump_report_byte_delta(mine, (int64_t)id);
	for (int i = 0; i < NDELTAS; i++) {
		cygprof_memdump_report_byte_delta("Delta", 3);
		cygprof_memdump_report_byte_delta("Delta", i & 1 ? -1 : 0);
	}
	return NULL;
}

static void test_deltas_threads(void)
{
	pthread_t th[NTHREADS];
	unsigned before = slots_used();

	pthread_barrier_init(&barrier, NULL, NTHREADS);
	for (unsigned i = 0; i < NTHREADS; i++)
		pthread_create(&th[i], NULL, delta_thread, (void *)(uintptr_t)i);
	for (unsigned i = 0; i < NTHREADS; i++)
		pthread_join(th[i], NULL);
	pthread_barrier_destroy(&barrier);

	struct cyg_memdump_slot *s = slot_named("Delta");
	CHECK(s != NULL);
	if (s) {
		CHECK_EQ_INT(s->value, (int64_t)NTHREADS * NDELTAS * 3 - NTHREADS * NDELTAS / 2);
		CHECK_EQ_U64(s->seq, (uint64_t)NTHREADS * NDELTAS * 2);
	}
	s = slot_named("Same");
	CHECK(s != NULL && s->value == NTHREADS && s->seq == NTHREADS);
	for (unsigned i = 0; i < NTHREADS; i++) {
		char mine[16];
		snprintf(mine, sizeof mine, "Mine%u", i);
		s = slot_named(mine);
		CHECK(s != NULL && s->value == (int64_t)i);
	}
	CHECK_EQ_INT(slots_used(), before + 2 + NTHREADS);
}

static void test_full(void)
{
	char name[32];
	unsigned used = slots_used();
	for (unsigned i = 0; used + i < CYG_MEMDUMP_SLOTS + 5; i++) {
		snprintf(name, sizeof name, "Fill%u", i);
		cygprof_memdump_report_byte_total(name, i);
	}
	CHECK_EQ_INT(slots_used(), CYG_MEMDUMP_SLOTS);
	/* known names still report; new ones are refused */
	CHECK_EQ_INT(cygprof_memdump_report_byte_total("Total", 77), 0);
	CHECK(slot_named("Total") && slot_named("Total")->value == 77);
	errno = 0;
	CHECK_EQ_INT(cygprof_memdump_report_byte_total("Nowhere", 1), -1);
	CHECK_EQ_INT(errno, ENOSPC);
	CHECK(!slot_named("Nowhere"));
	CHECK(!cygprof_memdump_needs_report("Nowhere"));
}

static void test_dumpers(void)
{
	CHECK_EQ_INT(cygprof_memdump_register(NULL, NULL), -1);
	CHECK_EQ_INT(cygprof_memdump_register(dumper, (void *)0), 0);
	CHECK_EQ_INT(cygprof_memdump_register(dumper, (void *)1), 0);
	CHECK_EQ_INT(cygprof_memdump_register(dumper, (void *)1), 0); /* once */
	sleep_ms(10 * INTERVAL_MS + INTERVAL_MS / 2);
	unsigned long a = __atomic_load_n(&dumper_calls[0], __ATOMIC_SEQ_CST);
	unsigned long b = __atomic_load_n(&dumper_calls[1], __ATOMIC_SEQ_CST);
	printf("# dumper rounds in %d ms: %lu, %lu\n", 10 * INTERVAL_MS + INTERVAL_MS / 2, a, b);
	/* a round at once, then one per interval: 11 (a loaded machine is late) */
	CHECK(a >= 5 && a <= 12);
	CHECK(b == a || b + 1 == a);
	CHECK_EQ_INT(dumper_order_bad, 0);
	CHECK_EQ_INT(dumper_sig_unblocked, 0);
	struct cyg_memdump_slot *s = slot_named("Dumped");
	CHECK(s != NULL && s->value > 0);

	/* a dumper that unregisters itself runs once */
	CHECK_EQ_INT(cygprof_memdump_register(self_remover, NULL), 0);
	sleep_ms(4 * INTERVAL_MS);
	CHECK_EQ_U64(dumper_calls[2], 1);

	CHECK_EQ_INT(cygprof_memdump_unregister(dumper, (void *)0), 0);
	unsigned long a0 = __atomic_load_n(&dumper_calls[0], __ATOMIC_SEQ_CST);
	b = __atomic_load_n(&dumper_calls[1], __ATOMIC_SEQ_CST);
	sleep_ms(3 * INTERVAL_MS);
	CHECK_EQ_U64(__atomic_load_n(&dumper_calls[0], __ATOMIC_SEQ_CST), a0);
	CHECK(__atomic_load_n(&dumper_calls[1], __ATOMIC_SEQ_CST) > b);
	CHECK_EQ_INT(cygprof_memdump_unregister(dumper, (void *)0), -1);
}

/* A forked child gets the parent's figures and a dumper thread of its own. */
static void test_fork(void)
{
	unsigned long b = __atomic_load_n(&dumper_calls[1], __ATOMIC_SEQ_CST);
	cygprof_memdump_report_byte_total("Total", 4242);
	pid_t pid = fork();
	if (pid == 0) {
		int bad = 0;
		sleep_ms(4 * INTERVAL_MS);
		bad |= __atomic_load_n(&dumper_calls[1], __ATOMIC_SEQ_CST) <= b + 1;
		bad |= !slot_named("Total") || slot_named("Total")->value != 4242;
		cygprof_memdump_report_byte_delta("Delta", 1);
		_exit(bad ? 1 : 0);
	}
	int st = -1;
	CHECK(pid > 0 && waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK_EQ_INT(cygprof_memdump_unregister(dumper, (void *)1), 0);
}

int main(void)
{
	RUN_TEST(test_total);
	RUN_TEST(test_needs_report_interval);
	RUN_TEST(test_long_name);
	RUN_TEST(test_bad_names);
	RUN_TEST(test_deltas_threads);
	RUN_TEST(test_dumpers);
	RUN_TEST(test_fork);
	RUN_TEST(test_full);
	CHECK_DONE();
}

#else /* no cygprof */

static void test_noop(void)
{
	CHECK_EQ_INT(cygprof_memdump_report_byte_total("Total", 1), 0);
	CHECK_EQ_INT(cygprof_memdump_report_byte_delta("Delta", 1), 0);
	/* the same names refused as under cygprof */
	errno = 0;
	CHECK_EQ_INT(cygprof_memdump_report_byte_total("a\nb", 1), -1);
	CHECK_EQ_INT(errno, EINVAL);
	CHECK_EQ_INT(cygprof_memdump_report_byte_delta("", 1), -1);
	CHECK_EQ_INT(cygprof_memdump_report_byte_total("Größe", 1), 0);
	CHECK_EQ_INT(cygprof_memdump_needs_report("Total"), 0);
	CHECK_EQ_INT(cygprof_memdump_needs_report("Never"), 0);
}

static void test_no_thread(void)
{
	CHECK_EQ_INT(cygprof_memdump_register(dumper, (void *)0), 0);
	sleep_ms(3 * INTERVAL_MS);
	CHECK_EQ_U64(dumper_calls[0], 0);
	CHECK_EQ_INT(cygprof_memdump_unregister(dumper, (void *)0), 0);
	CHECK_EQ_INT(cygprof_memdump_unregister(dumper, (void *)0), -1);
}

static void test_cost(void)
{
	struct timespec a, b;
	const int n = 10000000;
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (int i = 0; i < n; i++) {
		cygprof_memdump_report_byte_delta("Delta", 1);
		__asm__ volatile("" ::: "memory");
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	double ns = ((double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec)) / n;
	printf("# report_byte_delta without cygprof: %.2f ns per call\n", ns);
	/* a few ns (bench/ measures it); here only "no real work per call"
	 * (no lock, no syscall burst), generous for sanitizers on a loaded
	 * machine, where 50 ns was seen */
	CHECK(ns < 1000);
}

int main(void)
{
	RUN_TEST(test_noop);
	RUN_TEST(test_no_thread);
	RUN_TEST(test_cost);
	CHECK_DONE();
}

#endif
