/* SPDX-License-Identifier: MIT */
/* attach-elf.c - inspect a running process for record --attach: the GOT
 * slots of the instrumentation hooks, dlopen in its libc, the refusals
 * (docs/attach.md, steps 1 and 2).  Reads /proc and ELF files only: no
 * ptrace. */
#include "config.h"

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attach-elf.h"
#include "procmaps.h"

#ifndef R_X86_64_GLOB_DAT
#define R_X86_64_GLOB_DAT 6
#endif
#ifndef R_X86_64_JUMP_SLOT
#define R_X86_64_JUMP_SLOT 7
#endif

int attach_fail(char *err, size_t n, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, n, fmt, ap);
	va_end(ap);
	return -1;
}

static Elf *open_elf(const char *path, int *fdp)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	Elf *e;

	*fdp = fd;
	if (fd < 0)
		return NULL;
	e = elf_begin(fd, ELF_C_READ, NULL);
	if (!e || elf_kind(e) != ELF_K_ELF) {
		if (e)
			elf_end(e);
		close(fd);
		*fdp = -1;
		return NULL;
	}
	return e;
}

static void close_elf(Elf *e, int fd)
{
	elf_end(e);
	close(fd);
}

/* The load bias of an ELF object mapped with its offset-0 mapping at
 * start: start minus the page-aligned vaddr of the PT_LOAD at offset 0. */
static int load_bias(Elf *e, uint64_t start, uint64_t *bias)
{
	size_t n, i;
	long pg = sysconf(_SC_PAGESIZE);

	if (elf_getphdrnum(e, &n) != 0)
		return -1;
	for (i = 0; i < n; i++) {
		GElf_Phdr ph;
		if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD &&
		    ph.p_offset < (uint64_t)pg) {
			*bias = start - (ph.p_vaddr & ~((uint64_t)pg - 1));
			return 0;
		}
	}
	return -1;
}

/* The GOT slots of the hooks: JUMP_SLOT (PLT calls) preferred, GLOB_DAT
 * (-fno-plt) otherwise. */
static void find_slots(Elf *e, uint64_t base, uint64_t *enter, int *enter_type, uint64_t *exit_,
		       int *exit_type)
{
	Elf_Scn *s = NULL;

	while ((s = elf_nextscn(e, s))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(s, &sh) || sh.sh_type != SHT_RELA || !sh.sh_entsize)
			continue;
		Elf_Scn *syms = elf_getscn(e, sh.sh_link);
		GElf_Shdr ssh;
		Elf_Data *rd = elf_getdata(s, NULL), *sd;
		if (!syms || !gelf_getshdr(syms, &ssh) || !rd || !(sd = elf_getdata(syms, NULL)))
			continue;
		size_t n = sh.sh_size / sh.sh_entsize, i;
		for (i = 0; i < n; i++) {
			GElf_Rela r;
			GElf_Sym sym;
			int type;
			if (!gelf_getrela(rd, (int)i, &r))
				break;
			type = (int)GELF_R_TYPE(r.r_info);
			if ((type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT) ||
			    !gelf_getsym(sd, (int)GELF_R_SYM(r.r_info), &sym))
				continue;
			const char *name = elf_strptr(e, ssh.sh_link, sym.st_name);
			uint64_t *slot;
			int *ty;
			if (!name)
				continue;
			if (!strcmp(name, "__cyg_profile_func_enter"))
				slot = enter, ty = enter_type;
			else if (!strcmp(name, "__cyg_profile_func_exit"))
				slot = exit_, ty = exit_type;
			else
				continue;
			if (*slot && *ty == R_X86_64_JUMP_SLOT)
				continue;
			*slot = base + r.r_offset;
			*ty = type;
		}
	}
}

/* The value of a defined function in .dynsym, its default version when
 * versioned (the hidden bit of .gnu.version clear). 0 when absent. */
static uint64_t dynsym_value_type(Elf *e, const char *want, int type)
{
	Elf_Scn *s = NULL, *dyn = NULL, *ver = NULL;
	GElf_Shdr sh, dsh;
	uint64_t any = 0;

	while ((s = elf_nextscn(e, s))) {
		if (!gelf_getshdr(s, &sh))
			continue;
		if (sh.sh_type == SHT_DYNSYM)
			dyn = s;
		else if (sh.sh_type == SHT_GNU_versym)
			ver = s;
	}
	if (!dyn || !gelf_getshdr(dyn, &dsh) || !dsh.sh_entsize)
		return 0;
	Elf_Data *d = elf_getdata(dyn, NULL), *vd = ver ? elf_getdata(ver, NULL) : NULL;
	size_t n = dsh.sh_size / dsh.sh_entsize, i;
	for (i = 0; d && i < n; i++) {
		GElf_Sym sym;
		GElf_Versym v;
		if (!gelf_getsym(d, (int)i, &sym) || sym.st_shndx == SHN_UNDEF || !sym.st_value ||
		    GELF_ST_TYPE(sym.st_info) != type)
			continue;
		const char *name = elf_strptr(e, dsh.sh_link, sym.st_name);
		if (!name || strcmp(name, want))
			continue;
		if (!vd || !gelf_getversym(vd, (int)i, &v) || !(v & 0x8000))
			return sym.st_value;
		any = sym.st_value;
	}
	return any;
}

static uint64_t dynsym_value(Elf *e, const char *want)
{
	return dynsym_value_type(e, want, STT_FUNC);
}

static int is_libc(const char *path)
{
	const char *b = strrchr(path, '/');

	b = b ? b + 1 : path;
	return !strncmp(b, "libc.so", 7) ||
	       (!strncmp(b, "libc-", 5) && strstr(b, ".so"));
}

static int is_runtime(const char *path)
{
	const char *b = strrchr(path, '/');

	b = b ? b + 1 : path;
	return !strncmp(b, "libcygprof-cyg.so", 17) || !strncmp(b, "libcygprof-mem.so", 17);
}

/* Where the mapped runtime keeps cygprof_attach_state (0 when it has
 * none: a runtime older than attaching). */
static void runtime_state_addr(struct attach_target *t)
{
	char lp[PATH_MAX + 32];
	uint64_t bias, v;
	int fd;
	Elf *e;

	snprintf(lp, sizeof lp, "/proc/%d/root%s", (int)t->pid, t->runtime);
	e = open_elf(lp, &fd);
	if (!e)
		e = open_elf(t->runtime, &fd);
	if (!e)
		return;
	if (load_bias(e, t->runtime_base, &bias) == 0) {
		if ((v = dynsym_value_type(e, "cygprof_attach_state", STT_OBJECT)))
			t->state_addr = bias + v;
		if ((v = dynsym_value_type(e, "cygprof_attach_collector", STT_OBJECT)))
			t->collector_addr = bias + v;
		if ((v = dynsym_value_type(e, "cygprof_attach_boottime", STT_OBJECT)))
			t->boottime_addr = bias + v;
	}
	close_elf(e, fd);
}

/* Room for the call trampoline in the object e mapped with bias: the tail
 * of the last page of an executable PT_LOAD past its file bytes.  The page
 * is mapped executable, but nothing of the object lies there (the rest of
 * the file, if any, is another segment's, mapped elsewhere): the program
 * never runs or reads it, and a write into it (through /proc/PID/mem, a
 * private copy of the page) changes nothing the program sees.  A segment
 * with more memory than file bytes (a bss) is passed over. */
static void tramp_room(Elf *e, uint64_t bias, struct attach_target *t)
{
	long pg = sysconf(_SC_PAGESIZE);
	size_t n, i;

	if (t->tramp_addr || elf_getphdrnum(e, &n) != 0)
		return;
	for (i = 0; i < n; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD || !(ph.p_flags & PF_X) ||
		    ph.p_memsz != ph.p_filesz || !ph.p_filesz)
			continue;
		uint64_t end = bias + ph.p_vaddr + ph.p_filesz;
		uint64_t at = (end + 63) & ~63ULL;
		uint64_t page_end = (end + (uint64_t)pg - 1) & ~((uint64_t)pg - 1);
		if (at + ATTACH_TRAMP_ROOM <= page_end) {
			t->tramp_addr = at;
			return;
		}
	}
}

struct lib_cand {
	uint64_t start;
	char *path;
};

static int lib_seen(const struct lib_cand *v, size_t n, const char *path)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!strcmp(v[i].path, path))
			return 1;
	return 0;
}

/* The hooks' slots of the other objects mapped (instrumented shared
 * libraries); frees the candidates. */
static void lib_slots(struct attach_target *t, struct lib_cand *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		char lp[PATH_MAX + 32];
		uint64_t bias, en = 0, ex = 0;
		int fd, ety = 0, xty = 0;
		Elf *e;

		snprintf(lp, sizeof lp, "/proc/%d/root%s", (int)t->pid, v[i].path);
		e = open_elf(lp, &fd);
		if (!e)
			e = open_elf(v[i].path, &fd);
		if (e && load_bias(e, v[i].start, &bias) == 0) {
			find_slots(e, bias, &en, &ety, &ex, &xty);
			tramp_room(e, bias, t);
			if (en && ex && t->nlibs < ATTACH_MAX_LIBS) {
				t->lib_enter[t->nlibs] = en;
				t->lib_exit[t->nlibs] = ex;
				t->nlibs++;
			}
		}
		if (e)
			close_elf(e, fd);
		free(v[i].path);
	}
}

int attach_inspect(pid_t pid, struct attach_target *t, char *err, size_t errlen)
{
	struct lib_cand libs[ATTACH_MAX_LIBS];
	struct procmaps maps;
	size_t nlibs = 0, i;
	char p[64], kp[PATH_MAX + 16];
	uint64_t exe_start = 0;
	int fd, have_exe = 0, rc;
	Elf *e;
	ssize_t n;

	memset(t, 0, sizeof *t);
	t->pid = pid;
	elf_version(EV_CURRENT);
	snprintf(p, sizeof p, "/proc/%d/exe", (int)pid);
	n = readlink(p, t->exe, sizeof t->exe - 1);
	if (n < 0 && errno == ENOENT)
		return attach_fail(err, errlen, "attach: no process %d", (int)pid);
	if (n < 0)
		return attach_fail(err, errlen, "attach: cannot read the executable of process %d: %s",
			    (int)pid, strerror(errno));
	t->exe[n] = 0;
	/* The maps name the executable as the link does (" (deleted)" too):
	 * compare the paths as the kernel writes them. */
	rc = procmaps_read(pid, &maps);
	if (rc)
		return attach_fail(err, errlen, "attach: cannot read /proc/%d/maps: %s", (int)pid,
				   strerror(-rc));
	for (i = 0; i < maps.n; i++) {
		const struct procmap *m = &maps.v[i];
		const char *path = procmap_kernel_path(m, kp, sizeof kp);
		uint64_t lo = m->start, off = m->offset;

		if (is_runtime(path)) {
			t->profiled = 1;
			if (off == 0 && !t->runtime[0]) {
				snprintf(t->runtime, sizeof t->runtime, "%s", path);
				t->runtime_base = lo;
			}
		}
		if (off != 0)
			continue;
		if (!have_exe && !strcmp(path, t->exe)) {
			exe_start = lo;
			have_exe = 1;
		} else if (!t->libc[0] && is_libc(path)) {
			snprintf(t->libc, sizeof t->libc, "%s", path);
			t->libc_base = lo; /* the start; the bias below */
		} else if (strcmp(path, t->exe) && !is_runtime(path) && !is_libc(path) &&
			   nlibs < ATTACH_MAX_LIBS && !lib_seen(libs, nlibs, path)) {
			libs[nlibs].start = lo;
			libs[nlibs].path = strdup(path);
			nlibs += !!libs[nlibs].path;
		}
	}
	procmaps_release(&maps);
	lib_slots(t, libs, nlibs);

	snprintf(p, sizeof p, "/proc/%d/exe", (int)pid);
	e = open_elf(p, &fd);
	if (!e)
		return attach_fail(err, errlen, "attach: cannot read the executable of process %d (%s)",
			    (int)pid, t->exe);
	GElf_Ehdr eh;
	if (!gelf_getehdr(e, &eh) || eh.e_machine != EM_X86_64) {
		close_elf(e, fd);
		return attach_fail(err, errlen, "attach: process %d is not an x86-64 program", (int)pid);
	}
	if (!have_exe || load_bias(e, exe_start, &t->exe_base) < 0) {
		close_elf(e, fd);
		return attach_fail(err, errlen, "attach: cannot find where %s is mapped in process %d",
			    t->exe, (int)pid);
	}
	find_slots(e, t->exe_base, &t->got_enter, &t->got_enter_type, &t->got_exit,
		   &t->got_exit_type);
	/* the executable's room first, then libc's (below), then a library's */
	uint64_t lib_tramp = t->tramp_addr;
	t->tramp_addr = 0;
	tramp_room(e, t->exe_base, t);
	close_elf(e, fd);

	if (!t->libc[0])
		return attach_fail(err, errlen, "attach: process %d maps no libc (a static program?)",
			    (int)pid);
	char lp[PATH_MAX + 32];
	snprintf(lp, sizeof lp, "/proc/%d/root%s", (int)pid, t->libc);
	e = open_elf(lp, &fd);
	if (!e)
		e = open_elf(t->libc, &fd);
	if (!e || load_bias(e, t->libc_base, &t->libc_base) < 0) {
		if (e)
			close_elf(e, fd);
		return attach_fail(err, errlen, "attach: cannot read %s of process %d", t->libc, (int)pid);
	}
	tramp_room(e, t->libc_base, t);
	if (!t->tramp_addr)
		t->tramp_addr = lib_tramp;
	uint64_t v = dynsym_value(e, "dlopen");
	if (!v)
		v = dynsym_value(e, "__libc_dlopen_mode"); /* glibc before 2.34 */
	uint64_t s = dynsym_value(e, "dlsym");
	if (!s)
		s = dynsym_value(e, "__libc_dlsym");
	uint64_t o = dynsym_value(e, "open"), m = dynsym_value(e, "mmap"),
		 u = dynsym_value(e, "munmap"), de = dynsym_value(e, "dlerror"),
		 cl = dynsym_value(e, "close"), he = dynsym_value(e, "__cyg_profile_func_enter"),
		 hx = dynsym_value(e, "__cyg_profile_func_exit"), so = dynsym_value(e, "socket"),
		 co = dynsym_value(e, "connect"), rm = dynsym_value(e, "recvmsg");
	close_elf(e, fd);
	if (!v || !s)
		return attach_fail(err, errlen, "attach: no dlopen in %s of process %d", t->libc, (int)pid);
	t->dlopen_addr = t->libc_base + v;
	t->dlsym_addr = t->libc_base + s;
	t->open_addr = o ? t->libc_base + o : 0;
	t->mmap_addr = m ? t->libc_base + m : 0;
	t->munmap_addr = u ? t->libc_base + u : 0;
	t->dlerror_addr = de ? t->libc_base + de : 0;
	t->close_addr = cl ? t->libc_base + cl : 0;
	t->socket_addr = so ? t->libc_base + so : 0;
	t->connect_addr = co ? t->libc_base + co : 0;
	t->recvmsg_addr = rm ? t->libc_base + rm : 0;
	t->libc_hook[0] = he ? t->libc_base + he : 0;
	t->libc_hook[1] = hx ? t->libc_base + hx : 0;
	if (t->runtime[0])
		runtime_state_addr(t);
	return 0;
}

/* CAP_SYS_PTRACE in our effective set. */
static int cap_sys_ptrace(void)
{
	char line[256];
	int yes = 0;
	FILE *f = fopen("/proc/self/status", "re");

	if (!f)
		return 0;
	while (fgets(line, sizeof line, f)) {
		unsigned long long cap;
		if (sscanf(line, "CapEff: %llx", &cap) == 1)
			yes = !!(cap & (1ULL << 19));
	}
	fclose(f);
	return yes;
}

/* pid descends from us (Yama's ptrace_scope 1 lets a process trace its
 * descendants). */
static int descendant(pid_t pid)
{
	pid_t self = getpid();
	int hops;

	for (hops = 0; hops < 4096 && pid > 1; hops++) {
		char p[64], line[256];
		pid_t pp = -1;
		snprintf(p, sizeof p, "/proc/%d/status", (int)pid);
		FILE *f = fopen(p, "re");
		if (!f)
			return 0;
		while (fgets(line, sizeof line, f))
			if (sscanf(line, "PPid: %d", &pp) == 1)
				break;
		fclose(f);
		if (pp == self)
			return 1;
		pid = pp;
	}
	return 0;
}

int attach_allowed(pid_t pid, const char *scope_path, char *err, size_t errlen)
{
	char p[64], line[256];
	int scope = 0;
	FILE *f = fopen(scope_path, "re");

	if (f) {
		if (fscanf(f, "%d", &scope) != 1)
			scope = 0;
		fclose(f);
	}
	if (scope >= 3 || (scope == 2 && !cap_sys_ptrace()) ||
	    (scope == 1 && !cap_sys_ptrace() && !descendant(pid)))
		return attach_fail(err, errlen,
			    "attach: ptrace is not allowed here (%s is %d%s)", scope_path, scope,
			    scope == 1 ? ": run as root or set it to 0"
			    : scope == 2 ? ": run as root" : ": no attaching until reboot");
	snprintf(p, sizeof p, "/proc/%d/status", (int)pid);
	f = fopen(p, "re");
	if (!f)
		return attach_fail(err, errlen, "attach: no process %d (%s)", (int)pid,
			    errno == ENOENT ? "it does not exist" : strerror(errno));
	while (fgets(line, sizeof line, f)) {
		int tracer;
		if (sscanf(line, "TracerPid: %d", &tracer) == 1 && tracer) {
			fclose(f);
			return attach_fail(err, errlen, "attach: process %d is already traced by process %d",
				    (int)pid, tracer);
		}
	}
	fclose(f);
	return 0;
}

/* n bytes at addr of process pid's memory. */
static int read_mem(pid_t pid, uint64_t addr, void *buf, size_t n)
{
	char p[64];
	int fd;
	ssize_t got;

	if (!addr)
		return -1;
	snprintf(p, sizeof p, "/proc/%d/mem", (int)pid);
	fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	got = pread(fd, buf, n, (off_t)addr);
	close(fd);
	return got == (ssize_t)n ? 0 : -1;
}

int attach_runtime_state(const struct attach_target *t, int32_t *state)
{
	return read_mem(t->pid, t->state_addr, state, sizeof *state);
}

int attach_attacher_gone(const char *proc, pid_t pid, unsigned long long boot_ns)
{
	char p[PATH_MAX], buf[1024], *q;
	unsigned long long start;
	long tck = sysconf(_SC_CLK_TCK);
	int fd;
	ssize_t n;

	if (pid <= 0)
		return 0;
	snprintf(p, sizeof p, "%s/%d/stat", proc, (int)pid);
	fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT;
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return 1; /* it went between the open and the read */
	buf[n] = 0;
	/* after the command's closing parenthesis: state (field 3), then
	 * starttime is field 22 */
	q = strrchr(buf, ')');
	if (!q || q[1] != ' ')
		return 0;
	q += 2;
	if (*q == 'Z' || *q == 'X')
		return 1;
	for (int field = 3; field < 22; field++) {
		q = strchr(q, ' ');
		if (!q)
			return 0;
		q++;
	}
	if (sscanf(q, "%llu", &start) != 1 || tck <= 0)
		return 0;
	/* starttime is in clock ticks: a process that started after the
	 * attach (by more than one tick) is not the attacher */
	return start * (1000000000ULL / (unsigned long long)tck) >
	       boot_ns + 1000000000ULL / (unsigned long long)tck;
}

int attach_check(pid_t pid, struct attach_target *t, char *err, size_t errlen)
{
	if (pid <= 0 || kill(pid, 0) < 0) {
		if (pid > 0 && errno == EPERM)
			return attach_fail(err, errlen, "attach: process %d belongs to another user",
				    (int)pid);
		return attach_fail(err, errlen, "attach: no process %d", (int)pid);
	}
	if (attach_allowed(pid, "/proc/sys/kernel/yama/ptrace_scope", err, errlen) < 0 ||
	    attach_inspect(pid, t, err, errlen) < 0)
		return -1;
	if (t->profiled) {
		/* a runtime mapped and detached from an earlier attach may be
		 * attached again; one started by record or attached now not */
		int32_t state = -1, by = 0;
		unsigned long long since = 0;
		/* 0: loaded by an attacher that died before the runtime
		 * attached (nothing of it runs: attached as after a detach) */
		if (!attach_runtime_state(t, &state) && (state == 2 || state == 0) &&
		    !strstr(t->runtime, "-mem.so"))
			t->reattach = 1;
		else if (state == 1 && !read_mem(pid, t->collector_addr, &by, sizeof by) && by > 0 &&
			 !read_mem(pid, t->boottime_addr, &since, sizeof since) &&
			 attach_attacher_gone("/proc", by, since))
			/* attached by a cygprof that died without detaching
			 * (killed): the runtime checks again (its mutex) */
			t->reattach = 1, t->dead_attacher = by;
		else
			return attach_fail(err, errlen,
				    "attach: process %d is already being profiled by cygprof",
				    (int)pid);
	}
	if ((!t->got_enter || !t->got_exit) && !t->nlibs)
		return attach_fail(err, errlen,
			    "attach: %s (process %d) was not built with -finstrument-functions",
			    t->exe, (int)pid);
	return 0;
}
