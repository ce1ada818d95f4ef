/* SPDX-License-Identifier: MIT */
/* env.c - every CYGPROF_* variable cygprof, its libraries and its runtime
 * read, checked once at the start of a command (cli_check_env()): a bad
 * value is one line naming the variable and the problem, exit 2, before
 * any program starts.  The readers themselves (capture/, collector/,
 * symbols/, the runtime) cannot print, so they would ignore a bad value
 * silently; the list and its meanings are in cygprof(1), ENVIRONMENT.
 *
 * An empty variable counts as unset, as it does where it is read. */
#define _GNU_SOURCE
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libgen.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "collector.h"
#include "progress.h"
#include "push.h"

#define RT_CALLS "libcygprof-cyg.so"
#define RT_MEMORY "libcygprof-mem.so"

static void bad(const char *var, const char *val, const char *fmt, ...)
	__attribute__((format(printf, 3, 4), noreturn));
static void bad(const char *var, const char *val, const char *fmt, ...)
{
	char why[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof why, fmt, ap);
	va_end(ap);
	cli_die(2, "%s=%s: %s", var, val, why);
}

static const char *env(const char *var)
{
	const char *v = getenv(var);

	return v && *v ? v : NULL;
}

/* ---- CYGPROF_RUNTIME: an ELF shared object of this machine with the hooks -- */

/* The ELF class and machine of this cygprof (its own executable). */
static int own_machine(int *cls, int *machine)
{
	int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	Elf *e;
	GElf_Ehdr eh;
	int ok = 0;

	if (fd < 0)
		return -1;
	if ((e = elf_begin(fd, ELF_C_READ, NULL)) && gelf_getehdr(e, &eh)) {
		*cls = gelf_getclass(e);
		*machine = eh.e_machine;
		ok = 1;
	}
	elf_end(e);
	close(fd);
	return ok ? 0 : -1;
}

/* NULL when path is a runtime cygprof can preload (with malloc too when
 * memory is set), else what is wrong with it, in why. */
static const char *runtime_problem(const char *path, int memory, char *why, size_t len)
{
	/* the hooks (libc has empty ones too), the attach interface
	 * (docs/attach.md), and for --memory the malloc it traces */
	static const char *const need[] = {"__cyg_profile_func_enter", "__cyg_profile_func_exit",
					   "cygprof_attach_fd", "malloc"};
	size_t nneed = memory ? 4 : 3, found = 0;
	int fd, cls = 0, machine = 0, my_cls, my_machine;
	Elf *e = NULL;
	Elf_Scn *scn = NULL;
	GElf_Ehdr eh;
	const char *res = why;

	if (elf_version(EV_CURRENT) == EV_NONE) {
		snprintf(why, len, "cannot read ELF files: %s", elf_errmsg(-1));
		return why;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(why, len, "%s", strerror(errno));
		return why;
	}
	e = elf_begin(fd, ELF_C_READ, NULL);
	if (!e || elf_kind(e) != ELF_K_ELF || !gelf_getehdr(e, &eh)) {
		snprintf(why, len, "not an ELF file");
		goto out;
	}
	cls = gelf_getclass(e);
	machine = eh.e_machine;
	if (eh.e_type != ET_DYN) {
		snprintf(why, len, "not a shared object (ELF type %u)", (unsigned)eh.e_type);
		goto out;
	}
	if (!own_machine(&my_cls, &my_machine) && (cls != my_cls || machine != my_machine)) {
		snprintf(why, len, "built for another machine (ELF class %d, machine %d; this cygprof "
			 "is class %d, machine %d)", cls, machine, my_cls, my_machine);
		goto out;
	}
	/* the exported, defined functions of its dynamic symbol table */
	while ((scn = elf_nextscn(e, scn)) && found != (1u << nneed) - 1) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM || !sh.sh_entsize ||
		    !(d = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sym;
			const char *name;

			if (!gelf_getsym(d, (int)i, &sym) || sym.st_shndx == SHN_UNDEF ||
			    GELF_ST_TYPE(sym.st_info) != STT_FUNC ||
			    GELF_ST_BIND(sym.st_info) == STB_LOCAL ||
			    !(name = elf_strptr(e, sh.sh_link, sym.st_name)))
				continue;
			for (size_t k = 0; k < nneed; k++)
				if (!strcmp(name, need[k]))
					found |= 1u << k;
		}
	}
	for (size_t k = 0; k < nneed; k++)
		if (!(found & (1u << k))) {
			snprintf(why, len, "exports no %s(): not %s", need[k],
				 k == 3 ? "the memory runtime " RT_MEMORY : "a cygprof runtime");
			goto out;
		}
	res = NULL;
out:
	elf_end(e);
	close(fd);
	return res;
}

/* The runtime name (RT_CALLS, RT_MEMORY) CYGPROF_RUNTIME stands for, or
 * NULL when it names no such file: a directory holding it, or the file
 * itself (for RT_MEMORY: when it has malloc, else the RT_MEMORY next to
 * it).  Owned. */
static char *runtime_path(const char *val, const char *name, int *is_dir)
{
	struct stat st;
	char *copy, *path = NULL;

	*is_dir = 0;
	if (stat(val, &st))
		return NULL;
	if (S_ISDIR(st.st_mode)) {
		*is_dir = 1;
		if (asprintf(&path, "%s/%s", val, name) < 0)
			return NULL;
		if (access(path, F_OK)) {
			free(path);
			return NULL;
		}
		return path;
	}
	if (!strcmp(name, RT_CALLS))
		return strdup(val);
	/* the memory runtime: the file itself when it is one */
	char why[256];
	if (!runtime_problem(val, 1, why, sizeof why))
		return strdup(val);
	if (!(copy = strdup(val)))
		return NULL;
	if (asprintf(&path, "%s/%s", dirname(copy), name) < 0)
		path = NULL;
	free(copy);
	if (path && access(path, F_OK)) {
		free(path);
		path = NULL;
	}
	return path;
}

char *cli_env_runtime(const char *name)
{
	const char *val = env("CYGPROF_RUNTIME");
	int memory = !strcmp(name, RT_MEMORY), is_dir;
	char why[256], *path, *real;

	if (!val)
		return NULL;
	path = runtime_path(val, name, &is_dir);
	if (!path) {
		if (access(val, F_OK))
			bad("CYGPROF_RUNTIME", val, "%s", strerror(errno));
		bad("CYGPROF_RUNTIME", val, "no %s %s%s", name,
		    is_dir ? "in this directory" : "next to it",
		    memory ? " (record --memory preloads it)" : "");
	}
	if (runtime_problem(path, memory, why, sizeof why)) {
		if (strcmp(path, val))
			bad("CYGPROF_RUNTIME", val, "%s: %s", path, why);
		bad("CYGPROF_RUNTIME", val, "%s", why);
	}
	real = realpath(path, NULL);
	free(path);
	if (!real)
		cli_die(1, "out of memory");
	return real;
}

/* ---- the others ---------------------------------------------------------- */

static void check_uint(const char *var, uint64_t min, uint64_t max)
{
	const char *val = env(var);
	uint64_t v;

	if (val && cli_scan_uint(val, min, max, &v))
		bad(var, val, "not an integer from %llu to %llu", (unsigned long long)min,
		    (unsigned long long)max);
}

static void check_flag(const char *var)
{
	const char *val = env(var);

	if (val && strcmp(val, "0") && strcmp(val, "1"))
		bad(var, val, "not 0 or 1");
}

static void check_dir(const char *var, const char *val, const char *dir)
{
	struct stat st;

	if (stat(dir, &st))
		bad(var, val, "%s: %s", dir, strerror(errno));
	if (!S_ISDIR(st.st_mode))
		bad(var, val, "%s: not a directory", dir);
}

void cli_check_env(void)
{
	const char *val;
	char *rt;

	/* the runtime record and top preload; its memory variant is checked
	 * when --memory asks for it */
	rt = cli_env_runtime(RT_CALLS);
	free(rt);
	check_uint("CYGPROF_CHECKPOINT_MS", 0, CYGPROF_CHECKPOINT_MAX_MS);
	check_uint("CYGPROF_CAPTURE_MAPSIZE", 65536, SIZE_MAX);
	check_uint("CYGPROF_HANDSHAKE_MS", 1, 600000);
	check_uint("CYGPROF_PROGRESS_DELAY_MS", 0, CLI_PROGRESS_DELAY_MAX_MS);
	check_uint("CYGPROF_HTML_MAX_PAGE", 1, UINT64_MAX);
	check_flag("CYGPROF_FSYNC");
	check_flag("CYGPROF_CAPTURE_COMPACT");
	check_flag("CYGPROF_SAMPLE_FORCE_EPERM");
	check_flag("CYGPROF_RR_TICKS_SOFTWARE");
	if ((val = env("CYGPROF_DEBUG_DIRS"))) {
		char *copy = strdup(val), *save = NULL;

		if (!copy)
			cli_die(1, "out of memory");
		for (char *d = strtok_r(copy, ":", &save); d; d = strtok_r(NULL, ":", &save))
			check_dir("CYGPROF_DEBUG_DIRS", val, d);
		free(copy);
	}
	if ((val = env("CYGPROF_TRACEFS")))
		check_dir("CYGPROF_TRACEFS", val, val);
	/* read by the runtime (cyg/cyg-sample.c): its sampler, for the tests */
	if ((val = env("CYGPROF_CPU_SAMPLER")) && strcmp(val, "perf") && strcmp(val, "timer"))
		bad("CYGPROF_CPU_SAMPLER", val, "perf or timer");
	if ((val = env("CYGPROF_SAMPLES_DUMP"))) {
		char *copy = strdup(val);

		if (!copy)
			cli_die(1, "out of memory");
		check_dir("CYGPROF_SAMPLES_DUMP", val, dirname(copy));
		free(copy);
	}
	/* CYGPROF_PUSH_TENANT, CYGPROF_PUSH_BASIC_AUTH (push.c) */
	push_check_env();
	/* CYGPROF_RR_TICKS_FORCE_MISSING: any text (the reason shown);
	 * CYGPROF_SHM_FD: record sets it for its program, whatever it was */
}
