// SPDX-License-Identifier: MIT
/* test-debuginfo.c - the debug-file search, source lines, inlined frames and
 * names after the fact (symbols/debuginfo.h, srcline.h), on a small program
 * built with and without -g, stripped and split by objcopy
 * (symbols/meson.build passes the files), laid out in a temporary directory
 * as distributions, --symfs sysroots, containers and debuginfod servers
 * hold them.
 *
 * Usage: test-debuginfo SRC G G.debug G.stripped G.linked G.noaranges
 *                       NOG NOG.debug NOG.stripped
 *   G: built with -g -O2; .linked: --strip-debug with a .gnu_debuglink to
 *   G.debug; .noaranges: without .debug_aranges; NOG: without -g. */
#define _GNU_SOURCE
#include "check.h"
#include "config.h"
#include "debuginfo-private.h"
#include "debuginfo.h"
#include "srcline.h"
#include "symbols.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <gelf.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *SRC, *G, *G_DEBUG, *G_STRIPPED, *G_LINKED, *G_NOARANGES, *NOG, *NOG_DEBUG,
	*NOG_STRIPPED;
static char top[PATH_MAX]; /* the temporary directory */
static char src_real[PATH_MAX];

/* ---- helpers ---------------------------------------------------------------- */

static char warned[16384];
static int nwarn;

static void collect(void *arg, const char *msg)
{
	size_t n = strlen(warned);

	(void)arg;
	nwarn++;
	snprintf(warned + n, sizeof(warned) - n, "%s\n", msg);
}

static struct debuginfo *ctx(void)
{
	struct debuginfo *d = debuginfo_new();

	warned[0] = 0;
	nwarn = 0;
	if (d)
		debuginfo_set_warn(d, collect, NULL);
	return d;
}

/* A path in the temporary directory (rotating static buffers). */
static const char *tpath(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static const char *tpath(const char *fmt, ...)
{
	static char buf[8][PATH_MAX];
	static int k;
	char *b = buf[k++ & 7];
	va_list ap;
	int n = snprintf(b, PATH_MAX, "%s/", top);

	va_start(ap, fmt);
	vsnprintf(b + n, (size_t)(PATH_MAX - n), fmt, ap);
	va_end(ap);
	return b;
}

static void mkdirs(const char *path)
{
	char p[PATH_MAX];

	snprintf(p, sizeof(p), "%s", path);
	for (char *s = p + 1; *s; s++)
		if (*s == '/') {
			*s = 0;
			mkdir(p, 0755);
			*s = '/';
		}
}

/* Copy src to dst, making dst's directories. */
static void copy(const char *src, const char *dst)
{
	char buf[65536];
	ssize_t r;
	int in, out;

	mkdirs(dst);
	in = open(src, O_RDONLY);
	out = open(dst, O_WRONLY | O_CREAT | O_TRUNC, 0755);
	CHECK(in >= 0 && out >= 0);
	while (in >= 0 && out >= 0 && (r = read(in, buf, sizeof(buf))) > 0)
		CHECK(write(out, buf, (size_t)r) == r);
	if (in >= 0)
		close(in);
	if (out >= 0)
		close(out);
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	(void)st;
	(void)flag;
	(void)f;
	return remove(p);
}

/* An empty temporary directory for the next test. */
static void fresh(void)
{
	nftw(top, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	CHECK(mkdir(top, 0700) == 0);
}

static size_t bid_of(const char *path, uint8_t *bid)
{
	struct sym_elf *e;
	size_t n = 0;

	if (!sym_elf_open(path, &e)) {
		n = sym_elf_build_id(e, bid, DBG_BID_MAX);
		sym_elf_close(e);
	}
	CHECK(n >= 8 && n <= DBG_BID_MAX);
	return n;
}

/* DIR/.build-id/xx/yyyy.debug of bid */
static const char *bid_path(const char *dir, const uint8_t *bid, size_t n)
{
	static char buf[4][PATH_MAX];
	static int k;
	char *b = buf[k++ & 3];
	int o = snprintf(b, PATH_MAX, "%s/.build-id/", dir);

	for (size_t i = 0; i < n; i++) {
		o += snprintf(b + o, (size_t)(PATH_MAX - o), "%02x", bid[i]);
		if (!i)
			b[o++] = '/';
	}
	snprintf(b + o, (size_t)(PATH_MAX - o), ".debug");
	return b;
}

/* The line of marker comment "/ * name * /" in SRC. */
static uint32_t marker(const char *name)
{
	char line[512], pat[64];
	uint32_t n = 0;
	FILE *f = fopen(SRC, "r");

	snprintf(pat, sizeof(pat), "/* %s */", name);
	while (f && fgets(line, sizeof(line), f)) {
		n++;
		if (strstr(line, pat)) {
			fclose(f);
			return n;
		}
	}
	if (f)
		fclose(f);
	CHECK_EQ_STR(name, "(a marker of dbg-fixture.c)");
	return 0;
}

/* Value and size of symbol name in the .symtab of file (libelf). */
static int symbol(const char *file, const char *name, uint64_t *value, uint64_t *size)
{
	Elf_Scn *scn = NULL;
	int fd = open(file, O_RDONLY), found = 0;
	Elf *e;

	elf_version(EV_CURRENT);
	e = fd >= 0 ? elf_begin(fd, ELF_C_READ, NULL) : NULL;
	while (e && !found && (scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB || !sh.sh_entsize)
			continue;
		data = elf_getdata(scn, NULL);
		for (size_t i = 0; data && i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym s;
			const char *n;

			if (gelf_getsym(data, (int)i, &s) &&
			    (n = elf_strptr(e, sh.sh_link, s.st_name)) && !strcmp(n, name)) {
				*value = s.st_value;
				*size = s.st_size;
				found = 1;
				break;
			}
		}
	}
	if (e)
		elf_end(e);
	if (fd >= 0)
		close(fd);
	CHECK(found);
	return found;
}

static int has_section(const char *file, const char *name)
{
	Elf_Scn *scn = NULL;
	int fd = open(file, O_RDONLY), found = 0;
	size_t shstrndx;
	Elf *e = fd >= 0 ? elf_begin(fd, ELF_C_READ, NULL) : NULL;

	while (e && !elf_getshdrstrndx(e, &shstrndx) && (scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		const char *n;

		if (gelf_getshdr(scn, &sh) && (n = elf_strptr(e, shstrndx, sh.sh_name)) &&
		    !strcmp(n, name))
			found = 1;
	}
	if (e)
		elf_end(e);
	if (fd >= 0)
		close(fd);
	return found;
}

/* debuginfo_find() of (path, bid): 0 and the file, or the error. */
static int find(struct debuginfo *d, const char *path, const uint8_t *bid, size_t n,
		char *out)
{
	char *f = NULL;
	int r = debuginfo_find(d, path, bid, n, &f);

	snprintf(out, PATH_MAX, "%s", f ? f : "(none)");
	free(f);
	return r;
}

/* ---- the search --------------------------------------------------------------- */

static void test_self(void)
{
	struct debuginfo *d = ctx();
	uint8_t bid[DBG_BID_MAX];
	size_t n = bid_of(G, bid);
	char got[PATH_MAX];

	CHECK_EQ_INT(find(d, G, bid, n, got), 0);
	CHECK_EQ_STR(got, G);
	CHECK_EQ_INT(find(d, G, NULL, 0, got), 0); /* build-id unknown: the file's own */
	CHECK_EQ_INT(find(d, NULL, NULL, 0, got), -ENOENT);
	CHECK_EQ_INT(find(d, "", bid, n, got), -ENOENT);
	CHECK_EQ_INT(debuginfo_add_dir(d, ""), -EINVAL);
	CHECK_EQ_INT(nwarn, 0);
	debuginfo_free(d);
	debuginfo_free(NULL);
}

static void test_build_id(void)
{
	struct debuginfo *d;
	uint8_t bid[DBG_BID_MAX];
	size_t n = bid_of(G, bid);
	const char *prog = tpath("bin/prog"), *dbg = tpath("dbg"), *want;
	char got[PATH_MAX], env[PATH_MAX + 32];

	fresh();
	copy(G_STRIPPED, prog);
	want = bid_path(dbg, bid, n);
	copy(G_DEBUG, want);
	d = ctx();
	CHECK_EQ_INT(find(d, prog, bid, n, got), -ENOENT);
	CHECK_EQ_INT(debuginfo_add_dir(d, tpath("dbg///")), 0);
	/* a failed search is not remembered: the directory serves at once */
	CHECK_EQ_INT(find(d, prog, bid, n, got), 0);
	CHECK_EQ_STR(got, want);
	CHECK_EQ_INT(find(d, prog, NULL, 0, got), 0); /* the object's own build-id */
	CHECK_EQ_STR(got, want);
	CHECK_EQ_INT(nwarn, 0);
	debuginfo_free(d);

	/* CYGPROF_DEBUG_DIRS, empty entries and a missing directory */
	snprintf(env, sizeof(env), "::/nonexistent/dbg:%s:", dbg);
	setenv("CYGPROF_DEBUG_DIRS", env, 1);
	d = ctx();
	CHECK_EQ_INT(debuginfo_add_env(d), 0);
	CHECK_EQ_INT(find(d, prog, bid, n, got), 0);
	CHECK_EQ_STR(got, want);
	unsetenv("CYGPROF_DEBUG_DIRS");

	/* the object gone: its recorded build-id still finds the file */
	unlink(prog);
	CHECK_EQ_INT(find(d, prog, bid, n, got), 0);
	CHECK_EQ_STR(got, want);
	CHECK_EQ_INT(find(d, prog, NULL, 0, got), -ENOENT);
	debuginfo_free(d);
}

static void test_basename(void)
{
	struct debuginfo *d = ctx();
	uint8_t bid[DBG_BID_MAX];
	size_t n = bid_of(G, bid);
	const char *prog = tpath("bin/prog"), *want = tpath("flat/prog.debug");
	char got[PATH_MAX];

	fresh();
	copy(G_STRIPPED, prog);
	copy(G_DEBUG, want);
	CHECK_EQ_INT(debuginfo_add_dir(d, tpath("flat")), 0);
	CHECK_EQ_INT(find(d, prog, bid, n, got), 0);
	CHECK_EQ_STR(got, want);
	CHECK_EQ_INT(nwarn, 0);
	debuginfo_free(d);
}

static void test_debuglink(void)
{
	struct debuginfo *d = ctx();
	uint8_t bid[DBG_BID_MAX];
	size_t n = bid_of(G, bid);
	const char *prog = tpath("bin/prog"), *next = tpath("bin/dbg-fixture-g.debug"),
		   *sub = tpath("bin/.debug/dbg-fixture-g.debug");
	char got[PATH_MAX], want[PATH_MAX * 2];
	int fd;

	fresh();
	copy(G_LINKED, prog);
	copy(G_DEBUG, next);
	CHECK_EQ_INT(find(d, prog, bid, n, got), 0);
	CHECK_EQ_STR(got, next);
	mkdirs(sub);
	CHECK(rename(next, sub) == 0);
	debuginfo_free(d);
	d = ctx();
	CHECK_EQ_INT(find(d, prog, bid, n, got), 0);
	CHECK_EQ_STR(got, sub);
	CHECK_EQ_INT(nwarn, 0);
	debuginfo_free(d);

	/* one byte more: the same build-id, another CRC */
	fd = open(sub, O_WRONLY | O_APPEND);
	CHECK(fd >= 0 && write(fd, "", 1) == 1);
	close(fd);
	d = ctx();
	CHECK_EQ_INT(find(d, prog, bid, n, got), -ENOENT);
	CHECK_EQ_INT(find(d, prog, bid, n, got), -ENOENT);
	snprintf(want, sizeof(want), "%s: CRC does not match the .gnu_debuglink of %s, ignored\n",
		 sub, prog);
	CHECK_EQ_STR(warned, want);
	CHECK_EQ_INT(nwarn, 1);
	debuginfo_free(d);
}

static void test_mismatch(void)
{
	struct debuginfo *d = ctx();
	uint8_t bid[DBG_BID_MAX], other[DBG_BID_MAX];
	size_t n = bid_of(G, bid), on = bid_of(NOG, other);
	const char *prog = tpath("bin/prog"), *wrong;
	char got[PATH_MAX], want[PATH_MAX * 2];

	fresh();
	CHECK(n != on || memcmp(bid, other, n));
	copy(G_STRIPPED, prog);
	wrong = bid_path(tpath("dbg"), bid, n);
	copy(NOG_DEBUG, wrong); /* another build's file at this build-id */
	CHECK_EQ_INT(debuginfo_add_dir(d, tpath("dbg")), 0);
	CHECK_EQ_INT(find(d, prog, bid, n, got), -ENOENT);
	CHECK_EQ_INT(find(d, prog, bid, n, got), -ENOENT);
	snprintf(want, sizeof(want), "%s: build-id does not match %s, ignored\n", wrong, prog);
	CHECK_EQ_STR(warned, want);
	CHECK_EQ_INT(nwarn, 1);
	debuginfo_free(d);

	/* the object was rebuilt since the recording */
	d = ctx();
	CHECK_EQ_INT(find(d, prog, other, on, got), -ENOENT);
	snprintf(want, sizeof(want), "%s: build-id does not match the recorded object, ignored\n",
		 prog);
	CHECK_EQ_STR(warned, want);
	debuginfo_free(d);
}

/* A program built without -g: its debug file has a symbol table only. */
static void test_symtab_only(void)
{
	struct debuginfo *d = ctx();
	uint8_t bid[DBG_BID_MAX];
	size_t n = bid_of(NOG, bid);
	const char *prog = tpath("bin/prog"), *want;
	char got[PATH_MAX];

	fresh();
	copy(NOG_STRIPPED, prog);
	want = bid_path(tpath("dbg"), bid, n);
	copy(NOG_DEBUG, want);
	CHECK(!has_section(NOG_DEBUG, ".debug_info"));
	CHECK_EQ_INT(find(d, prog, bid, n, got), -ENOENT);
	CHECK_EQ_INT(debuginfo_add_dir(d, tpath("dbg")), 0);
	CHECK_EQ_INT(find(d, prog, bid, n, got), 0);
	CHECK_EQ_STR(got, want);
	debuginfo_free(d);
	/* not stripped, no DWARF and nothing separate: nothing to add */
	d = ctx();
	CHECK_EQ_INT(find(d, NOG, bid, n, got), -ENOENT);
	debuginfo_free(d);
}

/* ---- names after the fact ----------------------------------------------------- */

#define BIAS 0x555500000000ull

static void check_name(struct debuginfo *d, const char *path, const uint8_t *bid, size_t n,
		       const char *fn, uint64_t value, uint64_t size)
{
	char *name = NULL;
	uint64_t start = 0, sz = 0;

	CHECK_EQ_INT(sym_name_from_debug(d, path, bid, n, BIAS, BIAS + value + size - 1, &name,
					 &start, &sz),
		     0);
	CHECK_EQ_STR(name, fn);
	CHECK_EQ_U64(start, BIAS + value);
	CHECK_EQ_U64(sz, size);
	free(name);
}

static void test_name_from_debug(void)
{
	struct debuginfo *d = ctx();
	uint8_t bid[DBG_BID_MAX];
	size_t n = bid_of(NOG, bid);
	const char *prog = tpath("bin/prog");
	uint64_t sv = 0, ss = 0, gv = 0, gs = 0, start = 1;
	char *name = (char *)"x";

	fresh();
	symbol(NOG_DEBUG, "fixture_static", &sv, &ss);
	symbol(NOG_DEBUG, "fixture_global", &gv, &gs);
	copy(NOG_STRIPPED, prog);
	copy(NOG_DEBUG, bid_path(tpath("dbg"), bid, n));
	/* stripped, no debug file: the static function has no name */
	CHECK_EQ_INT(sym_name_from_debug(d, prog, bid, n, BIAS, BIAS + sv, &name, &start, NULL),
		     -ENOENT);
	CHECK(name == NULL);
	debuginfo_free(d);

	d = ctx();
	CHECK_EQ_INT(debuginfo_add_dir(d, tpath("dbg")), 0);
	check_name(d, prog, bid, n, "fixture_static", sv, ss);
	check_name(d, prog, bid, n, "fixture_global", gv, gs);
	CHECK_EQ_INT(sym_name_from_debug(d, prog, bid, n, BIAS, BIAS, &name, NULL, NULL), -ENOENT);
	CHECK_EQ_INT(sym_name_from_debug(d, prog, bid, n, BIAS, 0, &name, NULL, NULL), -ENOENT);
	CHECK_EQ_INT(nwarn, 0);
	/* gone: the debug file found by build-id names it still */
	unlink(prog);
	debuginfo_free(d);
	d = ctx();
	CHECK_EQ_INT(debuginfo_add_dir(d, tpath("dbg")), 0);
	check_name(d, prog, bid, n, "fixture_static", sv, ss);
	debuginfo_free(d);

	/* not stripped: its own symbol table; another build's path: refused */
	d = ctx();
	check_name(d, NOG, bid, n, "fixture_static", sv, ss);
	check_name(d, NOG, NULL, 0, "fixture_static", sv, ss);
	CHECK_EQ_INT(sym_name_from_debug(d, G_STRIPPED, bid, n, BIAS, BIAS + sv, &name, NULL,
					 NULL),
		     -ENOENT);
	CHECK_EQ_INT(nwarn, 1);
	debuginfo_free(d);
}

/* A sysroot: the object and its debug file under it, at the paths the
 * capture recorded. */
static void test_symfs(void)
{
	struct debuginfo *d = ctx();
	uint8_t bid[DBG_BID_MAX];
	size_t n = bid_of(NOG, bid);
	const char *rec = "/opt/cygprof-test-symfs/bin/prog", *want;
	uint64_t sv = 0, ss = 0;
	char got[PATH_MAX];

	fresh();
	symbol(NOG_DEBUG, "fixture_static", &sv, &ss);
	copy(NOG_STRIPPED, tpath("root%s", rec));
	want = bid_path(tpath("root/usr/lib/debug"), bid, n);
	copy(NOG_DEBUG, want);
	CHECK_EQ_INT(debuginfo_set_symfs(d, ""), -EINVAL);
	CHECK_EQ_INT(debuginfo_set_symfs(d, "/"), 0); /* the host: nothing added */
	CHECK_EQ_INT(debuginfo_set_symfs(d, "/nonexistent"), 0);
	CHECK_EQ_INT(debuginfo_set_symfs(d, tpath("root/")), 0); /* replaces it */
	CHECK_EQ_INT(find(d, rec, bid, n, got), 0);
	CHECK_EQ_STR(got, want);
	check_name(d, rec, bid, n, "fixture_static", sv, ss);
	CHECK_EQ_INT(nwarn, 0);
	debuginfo_free(d);
}

/* ---- source lines ------------------------------------------------------------- */

/* Lines, definitions and inlined frames of fixture_static in the object
 * recorded at path, as DWARF found by d gives them. */
static void check_lines(const char *label, struct debuginfo *d, const char *path,
			const uint8_t *bid, size_t n)
{
	struct cygprof_object o = {.idx = 3, .bias = BIAS, .path = (char *)path};
	struct srcline *s = srcline_new(d);
	uint32_t l_twice = marker("L_TWICE"), l_call = marker("L_CALL_TWICE");
	uint32_t l_static = marker("L_STATIC"), line;
	uint64_t sv = 0, ss = 0;
	const char *file, *name;
	int inlined = 0, lines = 0;

	printf("# %s\n", label);
	memcpy(o.build_id, bid, n);
	o.build_id_len = (uint32_t)n;
	symbol(G_DEBUG, "fixture_static", &sv, &ss);
	CHECK(ss > 0);
	CHECK_EQ_INT(srcline_function(s, &o, BIAS + sv, &file, &line), 0);
	CHECK_EQ_STR(file, src_real);
	CHECK_EQ_U64(line, l_static);
	{
		/* its range: its definition to its closing brace (or last
		 * statement), not the inlined twice()'s lines above it */
		uint32_t first = 0, last = 0;

		CHECK_EQ_INT(srcline_function_lines(s, &o, BIAS + sv + ss / 2, &file, &first,
						    &last), 0);
		CHECK_EQ_STR(file, src_real);
		CHECK_EQ_U64(first, l_static);
		CHECK(last == l_call + 1 || last == l_call + 2);
		CHECK_EQ_INT(srcline_function_lines(s, &o, BIAS, &file, &first, &last), -ENOENT);
	}
	for (uint64_t a = BIAS + sv; a < BIAS + sv + ss; a++) {
		struct srcline_frame fr[4] = {{0}};
		uint32_t cl;
		size_t nf;

		if (srcline_lookup(s, &o, a, &file, &line))
			continue;
		lines++;
		CHECK_EQ_STR(file, src_real);
		CHECK(line >= l_twice - 1 && line <= l_call + 2);
		if (srcline_inlined(s, &o, a, &name, &cl))
			continue;
		inlined++;
		CHECK_EQ_STR(name, "twice");
		CHECK_EQ_U64(cl, l_call);
		CHECK_EQ_INT(srcline_frames(s, &o, a, fr, 4, &nf), 0);
		CHECK_EQ_U64(nf, 2);
		CHECK_EQ_STR(fr[0].name, "twice");
		CHECK_EQ_STR(fr[0].file, src_real);
		CHECK_EQ_U64(fr[0].line, line);
		CHECK_EQ_STR(fr[1].name, "fixture_static");
		CHECK_EQ_STR(fr[1].file, src_real);
		CHECK_EQ_U64(fr[1].line, l_call);
		CHECK_EQ_INT(srcline_frames(s, &o, a, fr, 1, &nf), 0); /* too short: counted */
		CHECK_EQ_U64(nf, 2);
	}
	CHECK(lines > 0);
	CHECK(inlined > 0);
	CHECK_EQ_INT(srcline_lookup(s, &o, BIAS, &file, &line), -ENOENT);
	srcline_free(s);
}

static void test_srcline(void)
{
	struct debuginfo *d;
	uint8_t bid[DBG_BID_MAX];
	size_t n = bid_of(G, bid);
	const char *prog = tpath("bin/prog"), *dbg = tpath("dbg");
	struct cygprof_object o = {.idx = 1, .path = (char *)"/nonexistent/prog"};
	struct srcline *s;
	const char *file, *name;
	uint32_t line;

	fresh();
	d = ctx();
	check_lines("the object itself", d, G, bid, n);
	CHECK(!has_section(G_NOARANGES, ".debug_aranges"));
	check_lines("no .debug_aranges", d, G_NOARANGES, bid, n);
	debuginfo_free(d);

	copy(G_STRIPPED, prog);
	copy(G_DEBUG, bid_path(dbg, bid, n));
	d = ctx();
	CHECK_EQ_INT(debuginfo_add_dir(d, dbg), 0);
	check_lines("stripped, debug file by build-id", d, prog, bid, n);
	unlink(prog);
	check_lines("the object gone", d, prog, bid, n);
	CHECK_EQ_INT(nwarn, 0);
	debuginfo_free(d);

	copy(G_LINKED, prog);
	copy(G_DEBUG, tpath("bin/dbg-fixture-g.debug"));
	d = ctx();
	check_lines("by .gnu_debuglink", d, prog, bid, n);
	debuginfo_free(d);

	/* nothing: no answer, no error; a srcline of its own */
	s = srcline_new(NULL);
	CHECK(s != NULL);
	CHECK_EQ_INT(srcline_lookup(s, &o, 0x1000, &file, &line), -ENOENT);
	CHECK_EQ_INT(srcline_function(s, &o, 0x1000, &file, &line), -ENOENT);
	CHECK_EQ_INT(srcline_inlined(s, &o, 0x1000, &name, &line), -ENOENT);
	srcline_free(s);
	srcline_free(NULL);
}

/* ---- containers: mount tables ------------------------------------------------- */

static void check_mount(const struct sym_mounts *m, const char *path, const char *want)
{
	char *got = sym_mounts_path(m, path);

	if (want)
		CHECK_EQ_STR(got, want);
	else
		CHECK(!got && errno == ENOENT);
	free(got);
}

static void test_mountinfo(void)
{
	static const char proc[] =
		"100 90 0:50 / / rw,relatime - overlay overlay rw,lowerdir=/l\n"
		"101 100 8:1 /var/lib/flatpak/runtime/x/files /usr ro master:1 - ext4 /dev/sda1 rw\n"
		"102 101 8:1 /var/lib/flatpak/runtime/x-debug/files /usr/lib/debug ro - ext4 /dev/sda1 "
		"rw\n"
		"103 100 0:60 / /tmp rw - tmpfs tmpfs rw\n"
		"104 100 8:1 /home/u/my\\040dir /data rw - ext4 /dev/sda1 rw\n"
		"garbage\n"
		"1 2 3\n"
		"105 100 8:1 relative /rel rw - ext4 /dev/sda1 rw\n"
		"106 100 8:2 / /other rw - ext4 /dev/sdb1 rw"; /* no newline */
	static const char host[] = "20 1 8:1 / / rw - ext4 /dev/sda1 rw\n"
				   "21 20 0:50 / /var/lib/docker/overlay2/abc/merged rw - overlay o rw\n"
				   "22 20 8:1 /var/lib /srv/varlib rw - ext4 /dev/sda1 rw\n";
	struct sym_mounts m;

	CHECK_EQ_INT(sym_mounts_parse(proc, strlen(proc), host, strlen(host), &m), 0);
	CHECK_EQ_U64(m.n, 6);
	check_mount(&m, "/usr/lib/debug/.build-id/ab/cd.debug",
		    "/srv/varlib/flatpak/runtime/x-debug/files/.build-id/ab/cd.debug");
	check_mount(&m, "/usr/bin/prog", "/srv/varlib/flatpak/runtime/x/files/bin/prog");
	check_mount(&m, "/usr", "/srv/varlib/flatpak/runtime/x/files");
	check_mount(&m, "/usrx/y", "/var/lib/docker/overlay2/abc/merged/usrx/y");
	check_mount(&m, "/", "/var/lib/docker/overlay2/abc/merged");
	check_mount(&m, "/data/f", "/home/u/my dir/f");
	check_mount(&m, "/tmp/x", NULL);   /* a tmpfs of its own */
	check_mount(&m, "/other/x", NULL); /* a device the host has not mounted */
	sym_mounts_release(&m);
	sym_mounts_release(&m);
	CHECK_EQ_INT(sym_mounts_parse("", 0, host, strlen(host), &m), 0);
	check_mount(&m, "/x", NULL);
	sym_mounts_release(&m);
}

/* A process in a mount namespace of its own, with a directory of ours
 * mounted at its /usr/lib/debug: its debug file is found through
 * /proc/PID/root while it runs, through the host directory after. */
static void test_add_proc(void)
{
	struct debuginfo *d = ctx();
	uint8_t bid[DBG_BID_MAX];
	size_t n = bid_of(G, bid);
	const char *cdbg = tpath("cdbg");
	char got[PATH_MAX], want[PATH_MAX], proc_want[PATH_MAX], real[PATH_MAX];
	int to[2], from[2];
	char c = 'n';
	pid_t pid;

	CHECK_EQ_INT(debuginfo_add_proc(d, getpid()), 0);
	CHECK_EQ_U64(d->nroots, 0); /* our own namespace */
	CHECK(debuginfo_add_proc(d, 0x7ffffff0) < 0);
	debuginfo_free(d);

	fresh();
	copy(G_DEBUG, bid_path(cdbg, bid, n));
	CHECK(realpath(cdbg, real) != NULL);
	if (access(DBG_SYSTEM_DIR, F_OK) || pipe(to) || pipe(from)) {
		printf("# skipped: no %s\n", DBG_SYSTEM_DIR);
		return;
	}
	pid = fork();
	if (pid == 0) {
		close(to[1]);
		close(from[0]);
		if (!unshare(CLONE_NEWNS) && !mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) &&
		    !mount(real, DBG_SYSTEM_DIR, NULL, MS_BIND, NULL))
			c = 'y';
		if (write(from[1], &c, 1) != 1 || read(to[0], &c, 1) < 0)
			_exit(1);
		_exit(0);
	}
	close(to[0]);
	close(from[1]);
	if (read(from[0], &c, 1) != 1 || c != 'y') {
		printf("# skipped: no mount namespace (not root?)\n");
		close(to[1]);
		waitpid(pid, NULL, 0);
		close(from[0]);
		return;
	}
	d = ctx();
	CHECK_EQ_INT(debuginfo_add_proc(d, pid), 0);
	CHECK_EQ_U64(d->nroots, 2);
	snprintf(proc_want, sizeof(proc_want), "/proc/%d/root%s", (int)pid,
		 bid_path(DBG_SYSTEM_DIR, bid, n));
	CHECK_EQ_INT(find(d, "/nonexistent/prog", bid, n, got), 0);
	CHECK_EQ_STR(got, proc_want);
	close(to[1]); /* it ends */
	waitpid(pid, NULL, 0);
	close(from[0]);
	snprintf(want, sizeof(want), "%s", bid_path(real, bid, n));
	CHECK_EQ_INT(find(d, "/nonexistent/prog", bid, n, got), 0);
	CHECK_EQ_STR(got, want);
	debuginfo_free(d);
}

/* ---- debuginfod ----------------------------------------------------------------- */

/* A one-file HTTP server on 127.0.0.1 that answers GET path with file
 * and anything else with 404, in a child; returns its pid. */
static pid_t serve(const char *path, const char *file, int *port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	socklen_t len = sizeof(sa);
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	pid_t pid;

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (s < 0 || bind(s, (struct sockaddr *)&sa, sizeof(sa)) || listen(s, 8) ||
	    getsockname(s, (struct sockaddr *)&sa, &len))
		return -1;
	*port = ntohs(sa.sin_port);
	pid = fork();
	if (pid) {
		close(s);
		return pid;
	}
	for (;;) {
		char req[8192], head[256], want[PATH_MAX + 16], buf[65536];
		size_t got = 0;
		ssize_t r;
		struct stat st;
		int c = accept(s, NULL, NULL), fd;

		if (c < 0)
			_exit(1);
		while (got < sizeof(req) - 1 && (r = read(c, req + got, sizeof(req) - 1 - got)) > 0) {
			got += (size_t)r;
			req[got] = 0;
			if (strstr(req, "\r\n\r\n"))
				break;
		}
		req[got] = 0;
		snprintf(want, sizeof(want), "GET %s ", path);
		fd = !strncmp(req, want, strlen(want)) ? open(file, O_RDONLY) : -1;
		if (fd < 0 || fstat(fd, &st)) {
			const char *nf = "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n"
					 "Connection: close\r\n\r\n";
			if (write(c, nf, strlen(nf)) < 0)
				_exit(1);
		} else {
			int hn = snprintf(head, sizeof(head),
					  "HTTP/1.1 200 OK\r\nContent-Length: %lld\r\n"
					  "Connection: close\r\n\r\n",
					  (long long)st.st_size);
			if (write(c, head, (size_t)hn) != hn)
				_exit(1);
			while ((r = read(fd, buf, sizeof(buf))) > 0)
				if (write(c, buf, (size_t)r) != r)
					_exit(1);
			close(fd);
		}
		close(c);
	}
}

static void test_debuginfod(void)
{
#if CYGPROF_DEBUGINFOD
	struct debuginfo *d;
	uint8_t bid[DBG_BID_MAX];
	size_t n = bid_of(G, bid);
	char url[64], path[256], got[PATH_MAX];
	int port = 0, k;
	pid_t pid;

	fresh();
	k = snprintf(path, sizeof(path), "/buildid/");
	for (size_t i = 0; i < n; i++)
		k += snprintf(path + k, sizeof(path) - (size_t)k, "%02x", bid[i]);
	snprintf(path + k, sizeof(path) - (size_t)k, "/debuginfo");
	pid = serve(path, G_DEBUG, &port);
	CHECK(pid > 0);
	if (pid <= 0)
		return;
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", port);
	unsetenv("http_proxy");
	unsetenv("HTTP_PROXY");
	unsetenv("all_proxy");
	unsetenv("ALL_PROXY");
	setenv("DEBUGINFOD_CACHE_PATH", tpath("cache"), 1);
	setenv("DEBUGINFOD_TIMEOUT", "20", 1);

	/* without DEBUGINFOD_URLS nothing is asked */
	unsetenv("DEBUGINFOD_URLS");
	d = ctx();
	CHECK_EQ_INT(find(d, "/nonexistent/prog", bid, n, got), -ENOENT);
	debuginfo_free(d);

	setenv("DEBUGINFOD_URLS", url, 1);
	d = ctx();
	CHECK_EQ_INT(find(d, "/nonexistent/prog", bid, n, got), 0);
	CHECK(!strncmp(got, tpath("cache/"), strlen(tpath("cache/"))));
	/* the server has nothing for another build-id */
	bid[0] ^= 1;
	CHECK_EQ_INT(find(d, "/nonexistent/prog", bid, n, got), -ENOENT);
	bid[0] ^= 1;
	check_lines("through debuginfod", d, "/nonexistent/prog", bid, n);
	CHECK_EQ_INT(nwarn, 0);
	debuginfo_free(d);
	unsetenv("DEBUGINFOD_URLS");
	kill(pid, SIGTERM);
	waitpid(pid, NULL, 0);
#else
	printf("# skipped: built with -Ddebuginfod=disabled\n");
#endif
}

int main(int argc, char **argv)
{
	if (argc != 10) {
		fprintf(stderr, "usage: see the top of %s\n", __FILE__);
		return 2;
	}
	SRC = argv[1];
	G = argv[2];
	G_DEBUG = argv[3];
	G_STRIPPED = argv[4];
	G_LINKED = argv[5];
	G_NOARANGES = argv[6];
	NOG = argv[7];
	NOG_DEBUG = argv[8];
	NOG_STRIPPED = argv[9];
	if (!realpath(SRC, src_real)) {
		perror(SRC);
		return 2;
	}
	snprintf(top, sizeof(top), "/tmp/test-debuginfo.XXXXXX");
	if (!mkdtemp(top)) {
		perror("mkdtemp");
		return 2;
	}
	RUN_TEST(test_self);
	RUN_TEST(test_build_id);
	RUN_TEST(test_basename);
	RUN_TEST(test_debuglink);
	RUN_TEST(test_mismatch);
	RUN_TEST(test_symtab_only);
	RUN_TEST(test_name_from_debug);
	RUN_TEST(test_symfs);
	RUN_TEST(test_srcline);
	RUN_TEST(test_mountinfo);
	RUN_TEST(test_add_proc);
	RUN_TEST(test_debuginfod);
	nftw(top, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	CHECK_DONE();
}
