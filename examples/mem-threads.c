/* SPDX-License-Identifier: MIT */
/*
 * mem-threads.c - blocks freed by other threads, and address reuse under
 * contention.
 *
 * Usage: mem-threads [M [R]]   (M defaults to 1000, R to 20000)
 *
 * Part 1, producer/consumer: 4 producer threads each call produce() M times;
 * produce() mallocs 32 + 8*p bytes (p = producer index 0..3) and pushes the
 * block into a bounded queue (a fixed array, mutex + condition variables: no
 * allocation).  One consumer thread pops the 4*M blocks and frees each one
 * (consume_one()).  All 4*M frees are cross-thread.
 *
 * Part 2, stress: 4 threads (stress_thread, index i) run R rounds.  Each round:
 *   - stress_alloc() mallocs 16 + 8*(round % 8) bytes and hands the block to
 *     thread (i+1) % 4 through a one-slot mailbox (an atomic pointer);
 *   - the thread takes the block that thread (i+3) % 4 handed it and frees
 *     it: a cross-thread free (glibc's tcache makes the freed address come
 *     back at once in this thread's next malloc: heavy address reuse across
 *     threads);
 *   - stress_temp() does malloc(48) and frees it at once: a temporary.
 *   The sizes per thread sum to R/8 * (16+24+...+72) = R/8 * 352 = 44*R bytes
 *   when 8 divides R.
 * main joins everything; nothing of the program leaks.
 *
 * Expected per function (self = the caller of malloc):
 *   function       self_allocs  self_bytes          self_frees  temporary  leaked
 *   produce        4*M          M*(32+40+48+56)     4*M         0          0
 *                               = 176*M
 *   stress_alloc   4*R          4*44*R = 176*R      4*R         0          0
 *   stress_temp    4*R          4*48*R = 192*R      4*R         4*R        0
 * (M=1000, R=20000: produce 4000 / 176000, stress_alloc 80000 / 3520000,
 *  stress_temp 80000 / 3840000.)
 * total_* of producer == produce's, of stress_thread == stress_alloc's +
 * stress_temp's; consumer and consume_one allocate nothing (self and total 0).
 * Totals: cross_thread_frees == 4*M + 4*R exactly (84000); everything the
 * program allocates is freed (the runtime's own thread bookkeeping may add a
 * few allocations: totals checks subtract them).
 * Exit status 0.  stdout: "mem-threads: produced=<4M> consumed=<4M>
 * handed=<4R> temp=<4R>"
 */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(__clang__)
#define COUNTED __attribute__((noinline, used))
#else
#define COUNTED __attribute__((noinline, noipa))
#endif

#define NPROD 4
#define NSTRESS 4
#define QCAP 64

static unsigned long m_blocks = 1000, r_rounds = 20000;
static void *volatile sink;

/* ---- part 1: producers and a consumer ---------------------------------- */

static struct {
	pthread_mutex_t lock;
	pthread_cond_t not_empty, not_full;
	void *slot[QCAP];
	unsigned head, count;
} q = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER,
       {0}, 0, 0};

static unsigned long n_produced, n_consumed, n_handed, n_temp;

COUNTED static void *produce(unsigned long p, unsigned long i)
{
	unsigned char *b = malloc(32 + 8 * p);

	if (!b)
		abort();
	b[0] = (unsigned char)i;
	b[31] = (unsigned char)p;
	return b;
}

COUNTED static void *producer(void *arg)
{
	unsigned long p = (unsigned long)arg, i;
	void *b;

	for (i = 0; i < m_blocks; i++) {
		b = produce(p, i);
		pthread_mutex_lock(&q.lock);
		while (q.count == QCAP)
			pthread_cond_wait(&q.not_full, &q.lock);
		q.slot[(q.head + q.count) % QCAP] = b;
		q.count++;
		n_produced++;
		pthread_cond_signal(&q.not_empty);
		pthread_mutex_unlock(&q.lock);
	}
	return NULL;
}

COUNTED static void consume_one(void *b)
{
	free(b);
	n_consumed++;
}

COUNTED static void *consumer(void *arg)
{
	unsigned long i, total = NPROD * m_blocks;
	void *b;

	(void)arg;
	for (i = 0; i < total; i++) {
		pthread_mutex_lock(&q.lock);
		while (q.count == 0)
			pthread_cond_wait(&q.not_empty, &q.lock);
		b = q.slot[q.head];
		q.head = (q.head + 1) % QCAP;
		q.count--;
		pthread_cond_signal(&q.not_full);
		pthread_mutex_unlock(&q.lock);
		consume_one(b);
	}
	return NULL;
}

/* ---- part 2: stress ------------------------------------------------------ */

static void *mailbox[NSTRESS]; /* accessed with atomics only */

COUNTED static void *stress_alloc(unsigned long round)
{
	unsigned char *b = malloc(16 + 8 * (round % 8));

	if (!b)
		abort();
	b[0] = (unsigned char)round;
	b[15] = 1;
	return b;
}

COUNTED static void stress_temp(void)
{
	unsigned char *b = malloc(48);

	if (!b)
		abort();
	b[47] = 1;
	sink = b;
	free(b);
	__atomic_fetch_add(&n_temp, 1, __ATOMIC_RELAXED);
}

COUNTED static void *stress_thread(void *arg)
{
	unsigned long me = (unsigned long)arg, next = (me + 1) % NSTRESS, r;
	void *b, *expected;

	for (r = 0; r < r_rounds; r++) {
		b = stress_alloc(r);
		/* hand it over: wait until next's mailbox is empty */
		for (;;) {
			expected = NULL;
			if (__atomic_compare_exchange_n(&mailbox[next], &expected, b, 0,
							__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
				break;
			sched_yield();
		}
		/* take ours */
		while (!(b = __atomic_exchange_n(&mailbox[me], NULL, __ATOMIC_ACQ_REL)))
			sched_yield();
		free(b);
		__atomic_fetch_add(&n_handed, 1, __ATOMIC_RELAXED);
		stress_temp();
	}
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t prod[NPROD], cons, st[NSTRESS];
	unsigned long i;
	char buf[160];
	int len;

	if (argc > 1)
		m_blocks = strtoul(argv[1], NULL, 10);
	if (argc > 2)
		r_rounds = strtoul(argv[2], NULL, 10);

	if (pthread_create(&cons, NULL, consumer, NULL))
		return 1;
	for (i = 0; i < NPROD; i++)
		if (pthread_create(&prod[i], NULL, producer, (void *)i))
			return 1;
	for (i = 0; i < NPROD; i++)
		pthread_join(prod[i], NULL);
	pthread_join(cons, NULL);

	for (i = 0; i < NSTRESS; i++)
		if (pthread_create(&st[i], NULL, stress_thread, (void *)i))
			return 1;
	for (i = 0; i < NSTRESS; i++)
		pthread_join(st[i], NULL);

	len = snprintf(buf, sizeof(buf), "mem-threads: produced=%lu consumed=%lu handed=%lu temp=%lu\n",
		       n_produced, n_consumed, n_handed, n_temp);
	if (write(1, buf, (size_t)len) != len)
		return 1;
	return 0;
}
