/* SPDX-License-Identifier: MIT */
/* attach-self.c - plays `record --attach` on itself, for the runtime's side
 * of attaching (cyg/cyg-attach.h; tests/e2e/runtime.py, test attach-self).
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
 * attach (work_attach, seeded under run: 1 call), then as above.
 * Exits 0 when every step returned what it should, else prints why and
 * exits 1.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define N_MAIN 1000
#define N_THREAD 500
#define N_BEFORE 100
#define N_AFTER 77
#define N_LATE 55

typedef void hook_fn(void *, void *);

static int (*attach_fd)(int);
static int (*attach_seed)(int, const unsigned long *, unsigned);
static int (*detach)(void);
static int *attach_state;
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

__attribute__((noinline)) static void run(int fd)
{
	unsigned long seed[2] = {(unsigned long)(uintptr_t)main, (unsigned long)(uintptr_t)run};
	pthread_t th;

	if (!strcmp(mode, "exitfirst")) {
		/* the attach happens inside work_attach: its exit is the
		 * first hook; then leaf N_MAIN times from run */
		the_fd = fd;
		work_attach(N_BEFORE);
		work(N_MAIN);
	} else {
		work(N_BEFORE); /* glibc's empty hooks: nothing recorded */
		do_attach(fd, seed, strcmp(mode, "noseed") ? 2 : 0);
		work(N_MAIN);
	}
	/* a thread made after the attach */
	if (pthread_create(&th, NULL, worker, NULL) || pthread_join(th, NULL))
		fail("pthread_create failed");

	hooks_to(orig_enter, orig_exit); /* what the injector does first */
	if (detach())
		fail("cygprof_detach failed");
	if (*attach_state != 2)
		fail("cygprof_attach_state is not 2 after the detach");
	if (detach() != -EINVAL)
		fail("a second cygprof_detach did not return -EINVAL");
	if (attach_fd(fd) != -EALREADY)
		fail("cygprof_attach_fd after the detach did not return -EALREADY");
	work(N_AFTER);
	/* hooks still reaching the runtime after the detach write nothing */
	hooks_to((uintptr_t)rt_enter, (uintptr_t)rt_exit);
	work(N_LATE);
	if (pthread_create(&th, NULL, worker, NULL) || pthread_join(th, NULL))
		fail("pthread_create failed");
	hooks_to(orig_enter, orig_exit);
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
	rt_enter = (hook_fn *)dlsym(h, "__cyg_profile_func_enter");
	rt_exit = (hook_fn *)dlsym(h, "__cyg_profile_func_exit");
	if (!attach_fd || !attach_seed || !detach || !attach_state || !rt_enter || !rt_exit)
		fail("the runtime lacks an attach entry");
	if (*attach_state != 0)
		fail("cygprof_attach_state is not 0 before the attach");
	if (detach() != -EINVAL)
		fail("cygprof_detach before the attach did not return -EINVAL");
	run(atoi(argv[2]));
	printf("attach-self: sink %u\n", sink);
	return 0;
}
