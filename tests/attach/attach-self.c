/* SPDX-License-Identifier: MIT */
/* attach-self.c - plays `record --attach` on itself, for the runtime's side
 * of attaching (cyg/cyg-attach.h; tests/attach/attach_runtime.py, test attach-self).
 *
 * Built with -finstrument-functions and started WITHOUT the runtime
 * preloaded: its hooks go to glibc's empty ones.  Usage:
 *   attach-self RUNTIME FD [MODE]
 * RUNTIME is libcygprof-cyg.so, FD the collector's mapping (inherited).
 * It does what the injector does from outside: dlopen the runtime,
 * cygprof_attach_fd(FD), seed its own stack (main, run), point its own GOT
 * slots of the two hooks at the runtime, run, then put the slots back and
 * cygprof_detach().  Recorded (exactly, by whoever reads the capture):
 *   main 1, run 1, work 2, leaf 1500 (main thread: run -> work -> leaf 1000;
 *   a thread created after the attach: worker -> work -> leaf 500);
 * not recorded: the 100 calls of leaf before the attach, the 77 after the
 * detach, and the 55 made through the runtime's hooks after the detach.
 * MODE "noseed": no seed (work has no caller, leaf the same); "exitfirst":
 * the main thread's first hook is the exit of a call made before the
 * attach (work_attach, seeded under run: 1 call), then as above;
 * "reattach": as without a mode, plus a thread `parker` made in the first
 * window (parker -> work -> leaf 200) that waits across the detach; then
 * an attach again (to a second descriptor of the same mapping) inside
 * work_reattach, whose exit is the main thread's first hook then (seeded
 * main -> run -> work_reattach), run -> work -> leaf 300, and parker
 * (seeded) -> work -> leaf 200, whose first hook is that enter; detach.
 * Totals then: main 2, run 2, work_reattach 1, work 5, leaf 2200, worker
 * 1, parker 2.  "smaller": the same, but the attach again is to a mapping
 * of its own, smaller than record's (the stale writers' gids lie past its
 * end): the capture has the first window only (main 1, run 1, work 3, leaf
 * 1700, worker 1, parker 1) and the program checks its own mapping (leaf
 * 500 there).  "abort": first attached by cygprof_attach_path() of
 * /proc/self/fd/FD and undone by cygprof_attach_abort(), as the
 * injector's trampoline does when its attacher died before pointing the
 * hooks (N_LATE calls through the runtime's hooks after it: not recorded),
 * then as without a mode: the capture is the same.
 * Exits 0 when every step returned what it should, else prints why and
 * exits 1.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cyg-lock.h"
#include "cyg-shm.h"

#define N_MAIN 1000
#define N_THREAD 500
#define N_BEFORE 100
#define N_AFTER 77
#define N_LATE 55
#define N_PARK 200
#define N_AGAIN 300

typedef void hook_fn(void *, void *);

static int (*attach_fd)(int);
static int (*attach_seed)(int, const unsigned long *, unsigned);
static int (*detach)(void);
static int (*attach_path)(const char *);
static int (*attach_abort)(int);
static int *attach_state, *attach_collector;
static hook_fn *rt_enter, *rt_exit;
static uintptr_t *slot_enter, *slot_exit;
static uintptr_t orig_enter, orig_exit;
static const char *mode = "";
static volatile unsigned sink;

#define NOINSTR __attribute__((no_instrument_function))

static NOINSTR void fail(const char *what)
{
	fprintf(stderr, "attach-self: %s\n", what);
	exit(1);
}

/* The GOT slot of symbol `name` in the executable: its JUMP_SLOT (PLT) or
 * GLOB_DAT (-fno-plt) relocation, found the way the injector finds it. */
struct find {
	const char *name;
	uintptr_t *slot;
};

static NOINSTR int find_slot(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct find *f = arg;
	const ElfW(Dyn) *dyn = NULL;
	uintptr_t base = info->dlpi_addr, symtab = 0, strtab = 0, rels[2] = {0, 0};
	size_t relsz[2] = {0, 0};

	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
			dyn = (const ElfW(Dyn) *)(base + info->dlpi_phdr[i].p_vaddr);
	if (!dyn)
		return 1;
	for (; dyn->d_tag != DT_NULL; dyn++) {
		/* ld.so relocates these in place on x86-64; not everywhere */
		uintptr_t v = dyn->d_un.d_ptr;
		if (dyn->d_tag == DT_SYMTAB)
			symtab = v;
		else if (dyn->d_tag == DT_STRTAB)
			strtab = v;
		else if (dyn->d_tag == DT_JMPREL)
			rels[0] = v;
		else if (dyn->d_tag == DT_PLTRELSZ)
			relsz[0] = dyn->d_un.d_val;
		else if (dyn->d_tag == DT_RELA)
			rels[1] = v;
		else if (dyn->d_tag == DT_RELASZ)
			relsz[1] = dyn->d_un.d_val;
	}
	if (symtab < base)
		symtab += base;
	if (strtab < base)
		strtab += base;
	for (int k = 0; k < 2; k++) {
		if (!rels[k])
			continue;
		if (rels[k] < base)
			rels[k] += base;
		const ElfW(Rela) *r = (const ElfW(Rela) *)rels[k];
		for (size_t i = 0; i < relsz[k] / sizeof *r; i++) {
			unsigned type = ELF64_R_TYPE(r[i].r_info);
			if (type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT)
				continue;
			const ElfW(Sym) *s = (const ElfW(Sym) *)symtab + ELF64_R_SYM(r[i].r_info);
			if (!strcmp((const char *)strtab + s->st_name, f->name)) {
				f->slot = (uintptr_t *)(base + r[i].r_offset);
				return 1;
			}
		}
	}
	return 1; /* the first object is the executable: stop there */
}

static NOINSTR uintptr_t *got_slot(const char *name)
{
	struct find f = {name, NULL};
	dl_iterate_phdr(find_slot, &f);
	if (!f.slot)
		fail("no GOT slot for a hook: not built with -finstrument-functions?");
	return f.slot;
}

/* Write a GOT slot (read-only after relocation with full RELRO). */
static NOINSTR void poke(uintptr_t *slot, uintptr_t v)
{
	long pg = sysconf(_SC_PAGESIZE);
	uintptr_t page = (uintptr_t)slot & ~(uintptr_t)(pg - 1);

	if (mprotect((void *)page, (size_t)pg, PROT_READ | PROT_WRITE))
		fail("mprotect of the GOT failed");
	__atomic_store_n(slot, v, __ATOMIC_SEQ_CST);
}

static NOINSTR void hooks_to(uintptr_t enter, uintptr_t exit_)
{
	poke(slot_enter, enter);
	poke(slot_exit, exit_);
}

__attribute__((noinline)) static void leaf(unsigned i)
{
	sink += i;
}

__attribute__((noinline)) static void work(unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		leaf(i);
}

__attribute__((noinline)) static void *worker(void *arg)
{
	(void)arg;
	work(N_THREAD);
	return NULL;
}

/* The injector's calls: attach, seed this thread's stack, patch the slots. */
static NOINSTR void do_attach(int fd, const unsigned long *seed, unsigned n)
{
	int r = attach_fd(fd);
	if (r)
		fail(r == -EBADF ? "cygprof_attach_fd: bad fd" : "cygprof_attach_fd failed");
	if (*attach_state != 1)
		fail("cygprof_attach_state is not 1 after the attach");
	if (attach_fd(fd) != -EBUSY)
		fail("a second cygprof_attach_fd did not return -EBUSY");
	if (n && attach_seed((int)gettid(), seed, n))
		fail("cygprof_attach_seed failed");
	if (attach_seed(0, seed, 1) != -EINVAL ||
	    attach_seed((int)gettid(), seed, 257) != -EINVAL)
		fail("cygprof_attach_seed took bad arguments");
	hooks_to((uintptr_t)rt_enter, (uintptr_t)rt_exit);
}

static int the_fd;
static struct cyg_ctl *own; /* mode smaller: the mapping made here */

/* A mapping as the collector makes it (ring/shm-create.c), smallest size. */
static NOINSTR int own_mapping(void)
{
	int fd = memfd_create("cygprof-test", 0);

	if (fd < 0 || ftruncate(fd, (off_t)CYG_SHM_MIN_BYTES) < 0)
		fail("memfd_create failed");
	own = mmap(NULL, CYG_SHM_MIN_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd,
		   0);
	if (own == MAP_FAILED)
		fail("mmap failed");
	own->magic = CYG_SHM_MAGIC;
	own->version = CYG_SHM_VERSION;
	own->size = CYG_SHM_MIN_BYTES;
	own->ring_words = 1024;
	own->max_depth = CYG_DEPTH_MAX;
	own->alloc_off = CYG_AREA_OFF;
	cyg_lock_init(&own->lock);
	cyg_lock_init(&own->alive);
	return fd;
}

/* Calls of fn in the tree under gid of the mapping made here. */
static NOINSTR uint64_t own_calls(uint32_t gid, uint64_t fn, int depth)
{
	const struct cyg_node *n = CYG_NODE((char *)own, gid);
	uint64_t sum = n->fn == fn ? n->calls : 0;

	if (depth > 64)
		fail("a tree deeper than the program's calls in its own mapping");
	for (uint32_t c = n->first_child; c; c = CYG_NODE((char *)own, c)->next_sibling)
		sum += own_calls(c, fn, depth + 1);
	return sum;
}
static sem_t parked, go;
static volatile pid_t parker_tid;

__attribute__((noinline)) static void *parker(void *arg)
{
	(void)arg;
	work(N_PARK);
	parker_tid = gettid();
	sem_post(&parked);
	while (sem_wait(&go))
		;
	work(N_PARK);
	return NULL;
}

extern int main(int, char **);
__attribute__((noinline)) static void run(int fd);

/* work() with the attach in its middle (mode exitfirst): its enter went to
 * glibc, its exit, the main thread's first hook, goes to the runtime. */
__attribute__((noinline)) static void work_attach(unsigned n)
{
	unsigned long seed[3] = {(unsigned long)(uintptr_t)main, (unsigned long)(uintptr_t)run,
				 (unsigned long)(uintptr_t)work_attach};

	for (unsigned i = 0; i < n; i++)
		leaf(i);
	do_attach(the_fd, seed, 3);
}

/* Attach again while this function is open; its exit is the first hook. */
__attribute__((noinline)) static void work_reattach(int fd)
{
	unsigned long seed[3] = {(unsigned long)(uintptr_t)main, (unsigned long)(uintptr_t)run,
				 (unsigned long)(uintptr_t)work_reattach};
	unsigned long pseed[1] = {(unsigned long)(uintptr_t)parker};

	if (attach_fd(fd))
		fail("cygprof_attach_fd after a detach failed");
	if (*attach_state != 1)
		fail("cygprof_attach_state is not 1 after the attach again");
	if (attach_seed((int)gettid(), seed, 3) || attach_seed((int)parker_tid, pseed, 1))
		fail("cygprof_attach_seed failed after the attach again");
	hooks_to((uintptr_t)rt_enter, (uintptr_t)rt_exit);
}

/* Attached and undone as the trampoline undoes it (mode abort). */
static NOINSTR void attach_undone(int fd)
{
	char p[64];

	snprintf(p, sizeof p, "/proc/self/fd/%d", fd);
	if (attach_path("/nonexistent/cygprof-shm") != -ENOENT || *attach_state != 0)
		fail("cygprof_attach_path of a missing file did not return -ENOENT");
	if (attach_path(p))
		fail("cygprof_attach_path failed");
	if (*attach_state != 1 || *attach_collector <= 0)
		fail("cygprof_attach_state is not 1 after cygprof_attach_path");
	if (attach_abort((int)getpid()) != -EINVAL || *attach_state != 1)
		fail("cygprof_attach_abort for another collector undid the attach");
	if (attach_abort(*attach_collector) || *attach_state != 2)
		fail("cygprof_attach_abort did not detach");
	if (attach_abort(*attach_collector) != -EINVAL)
		fail("a second cygprof_attach_abort did not return -EINVAL");
	/* detached: hooks reaching the runtime write nothing */
	hooks_to((uintptr_t)rt_enter, (uintptr_t)rt_exit);
	work(N_LATE);
	hooks_to(orig_enter, orig_exit);
}

__attribute__((noinline)) static void run(int fd)
{
	unsigned long seed[2] = {(unsigned long)(uintptr_t)main, (unsigned long)(uintptr_t)run};
	pthread_t th, park;
	int smaller = !strcmp(mode, "smaller"), again = smaller || !strcmp(mode, "reattach");
	int fd2 = smaller ? own_mapping() : again ? dup(fd) : -1;

	if (!strcmp(mode, "exitfirst")) {
		/* the attach happens inside work_attach: its exit is the
		 * first hook; then leaf N_MAIN times from run */
		the_fd = fd;
		work_attach(N_BEFORE);
		work(N_MAIN);
	} else {
		work(N_BEFORE); /* glibc's empty hooks: nothing recorded */
		if (!strcmp(mode, "abort"))
			attach_undone(fd);
		do_attach(fd, seed, strcmp(mode, "noseed") ? 2 : 0);
		work(N_MAIN);
	}
	/* a thread made after the attach */
	if (pthread_create(&th, NULL, worker, NULL) || pthread_join(th, NULL))
		fail("pthread_create failed");
	if (again) {
		/* one more, which waits across the detach */
		sem_init(&parked, 0, 0);
		sem_init(&go, 0, 0);
		if (pthread_create(&park, NULL, parker, NULL))
			fail("pthread_create failed");
		while (sem_wait(&parked))
			;
	}

	hooks_to(orig_enter, orig_exit); /* what the injector does first */
	if (detach())
		fail("cygprof_detach failed");
	if (*attach_state != 2)
		fail("cygprof_attach_state is not 2 after the detach");
	if (detach() != -EINVAL)
		fail("a second cygprof_detach did not return -EINVAL");
	if (attach_fd(fd) != -EBADF || *attach_state != 2)
		fail("cygprof_attach_fd of a closed fd after the detach did not return -EBADF");
	work(N_AFTER);
	/* hooks still reaching the runtime after the detach write nothing */
	hooks_to((uintptr_t)rt_enter, (uintptr_t)rt_exit);
	work(N_LATE);
	if (pthread_create(&th, NULL, worker, NULL) || pthread_join(th, NULL))
		fail("pthread_create failed");
	hooks_to(orig_enter, orig_exit);
	if (!again)
		return;
	work_reattach(fd2);
	work(N_AGAIN);
	sem_post(&go);
	if (pthread_join(park, NULL))
		fail("pthread_join failed");
	hooks_to(orig_enter, orig_exit);
	if (detach() || *attach_state != 2)
		fail("cygprof_detach after the attach again failed");
	if (smaller) {
		uint64_t leafs = 0;
		for (uint64_t off = own->threads_off; off;) {
			const struct cyg_thread *t = (const void *)((char *)own + off);
			leafs += own_calls(t->root, (uint64_t)(uintptr_t)leaf, 0);
			off = t->next;
		}
		if (own->nthreads != 2 || leafs != N_PARK + N_AGAIN)
			fail("the mapping of the attach again does not hold 2 threads and leaf 500");
	}
}

int main(int argc, char **argv)
{
	void *h;

	if (argc < 3)
		fail("usage: attach-self RUNTIME FD [noseed|exitfirst]");
	if (argc > 3)
		mode = argv[3];
	slot_enter = got_slot("__cyg_profile_func_enter");
	slot_exit = got_slot("__cyg_profile_func_exit");
	orig_enter = *slot_enter;
	orig_exit = *slot_exit;
	h = dlopen(argv[1], RTLD_NOW);
	if (!h) {
		fprintf(stderr, "attach-self: dlopen: %s\n", dlerror());
		return 1;
	}
	attach_fd = (int (*)(int))dlsym(h, "cygprof_attach_fd");
	attach_seed = (int (*)(int, const unsigned long *, unsigned))dlsym(h, "cygprof_attach_seed");
	detach = (int (*)(void))dlsym(h, "cygprof_detach");
	attach_state = (int *)dlsym(h, "cygprof_attach_state");
	attach_collector = (int *)dlsym(h, "cygprof_attach_collector");
	attach_path = (int (*)(const char *))dlsym(h, "cygprof_attach_path");
	attach_abort = (int (*)(int))dlsym(h, "cygprof_attach_abort");
	rt_enter = (hook_fn *)dlsym(h, "__cyg_profile_func_enter");
	rt_exit = (hook_fn *)dlsym(h, "__cyg_profile_func_exit");
	if (!attach_fd || !attach_seed || !detach || !attach_state || !rt_enter || !rt_exit ||
	    !attach_collector || !attach_path || !attach_abort)
		fail("the runtime lacks an attach entry");
	if (*attach_state != 0)
		fail("cygprof_attach_state is not 0 before the attach");
	if (detach() != -EINVAL)
		fail("cygprof_detach before the attach did not return -EINVAL");
	run(atoi(argv[2]));
	printf("attach-self: sink %u\n", sink);
	return 0;
}
