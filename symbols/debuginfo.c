/* SPDX-License-Identifier: MIT */
/* debuginfo.c - the search for an object's debug file (see debuginfo.h):
 * the candidates in order, each checked by build-id and, by debuglink, by
 * CRC, with a warning when refused; debuginfod through libdwfl's client.
 * libdwfl reads the files (libdwelf: build-id, debuglink) and asks
 * debuginfod; the candidates are listed here because libdwfl's own search
 * refuses a file without saying which, accepts a debuglink file with the
 * right build-id whatever its CRC, and knows no roots (--symfs, a
 * container's /usr/lib/debug). */
#include "config.h"
#include "debuginfo-private.h"
#include "symbols.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <elfutils/libdwelf.h>
#include <gelf.h>

static void default_warn(void *arg, const char *msg)
{
	fprintf(stderr, "cygprof: warning: %s\n", msg);
}

struct debuginfo *debuginfo_new(void)
{
	struct debuginfo *d = calloc(1, sizeof(*d));

	if (d)
		d->warn = default_warn;
	return d;
}

static void free_strv(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

void debuginfo_free(struct debuginfo *d)
{
	if (!d)
		return;
	dbg_modules_free(d);
	if (d->dfd)
		dwfl_end(d->dfd);
	free_strv(d->dirs, d->ndirs);
	free_strv(d->warned, d->nwarned);
	for (size_t i = 0; i < d->nroots; i++) {
		free(d->roots[i].prefix);
		sym_mounts_release(&d->roots[i].mounts);
	}
	free(d->roots);
	free(d);
}

static int push_str(char ***v, size_t *n, const char *s, size_t len)
{
	char **t = realloc(*v, (*n + 1) * sizeof(**v));

	if (!t)
		return -ENOMEM;
	*v = t;
	t[*n] = strndup(s, len);
	if (!t[*n])
		return -ENOMEM;
	(*n)++;
	return 0;
}

/* The length of dir without trailing slashes ("/" stays). */
static size_t dir_len(const char *dir)
{
	size_t len = strlen(dir);

	while (len > 1 && dir[len - 1] == '/')
		len--;
	return len;
}

int debuginfo_add_dir(struct debuginfo *d, const char *dir)
{
	size_t len = dir_len(dir);

	if (!len)
		return -EINVAL;
	return push_str(&d->dirs, &d->ndirs, dir, len);
}

int debuginfo_add_env(struct debuginfo *d)
{
	const char *s = getenv("CYGPROF_DEBUG_DIRS");
	int err;

	while (s && *s) {
		const char *e = strchr(s, ':');
		size_t len = e ? (size_t)(e - s) : strlen(s);

		if (len) {
			char *dir = strndup(s, len);

			if (!dir)
				return -ENOMEM;
			err = debuginfo_add_dir(d, dir);
			free(dir);
			if (err)
				return err;
		}
		s += len + (e ? 1 : 0);
	}
	return 0;
}

void debuginfo_set_warn(struct debuginfo *d, debuginfo_warn_fn fn, void *arg)
{
	d->warn = fn;
	d->warn_arg = arg;
}

int debuginfo_set_symfs(struct debuginfo *d, const char *root)
{
	size_t len = dir_len(root);
	char *p;

	if (!len)
		return -EINVAL;
	/* "/" is the host itself: nothing to look under first. */
	if (len == 1 && root[0] == '/')
		return 0;
	p = strndup(root, len);
	if (!p)
		return -ENOMEM;
	if (d->has_symfs) {
		free(d->roots[0].prefix);
		d->roots[0].prefix = p;
		return 0;
	}
	struct dbg_root *v = realloc(d->roots, (d->nroots + 1) * sizeof(*v));

	if (!v) {
		free(p);
		return -ENOMEM;
	}
	memmove(v + 1, v, d->nroots * sizeof(*v));
	memset(&v[0], 0, sizeof(v[0]));
	v[0].prefix = p;
	d->roots = v;
	d->nroots++;
	d->has_symfs = 1;
	return 0;
}

void dbg_warn(struct debuginfo *d, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	if (!d->warn)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	for (size_t i = 0; i < d->nwarned; i++)
		if (!strcmp(d->warned[i], msg))
			return;
	push_str(&d->warned, &d->nwarned, msg, strlen(msg));
	d->warn(d->warn_arg, msg);
}

/* a + b + c, owned; NULL (errno ENOMEM) when out of memory. */
static char *join3(const char *a, const char *b, const char *c)
{
	size_t n = strlen(a) + strlen(b) + strlen(c) + 1;
	char *s = malloc(n);

	if (s)
		snprintf(s, n, "%s%s%s", a, b, c);
	return s;
}

char *dbg_root_path(const struct debuginfo *d, size_t r, const char *path)
{
	const struct dbg_root *root;

	if (r == d->nroots)
		return strdup(path);
	root = &d->roots[r];
	if (path[0] != '/') {
		errno = ENOENT; /* a relative path has no place under a root */
		return NULL;
	}
	if (root->prefix)
		return join3(root->prefix, "", path);
	return sym_mounts_path(&root->mounts, path);
}

/* ---- CRC32 (zlib's polynomial, as .gnu_debuglink) ------------------------ */

uint32_t debuginfo_crc32(uint32_t crc, const void *buf, size_t len)
{
	static uint32_t table[256];
	static int ready;
	const unsigned char *p = buf;
	size_t i;

	if (!ready) {
		uint32_t c, k, j;

		for (k = 0; k < 256; k++) {
			c = k;
			for (j = 0; j < 8; j++)
				c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
			table[k] = c;
		}
		ready = 1;
	}
	crc = ~crc;
	for (i = 0; i < len; i++)
		crc = table[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
	return ~crc;
}

static int file_crc32(const char *path, uint32_t *crc)
{
	unsigned char buf[65536];
	uint32_t c = 0;
	ssize_t r;
	int fd = sym_open_regular(path, SYM_ELF_MAX_SIZE, NULL);

	if (fd < 0)
		return fd;
	while ((r = read(fd, buf, sizeof(buf))) > 0)
		c = debuginfo_crc32(c, buf, (size_t)r);
	close(fd);
	if (r < 0)
		return -EIO;
	*crc = c;
	return 0;
}

/* ---- what a file offers ---------------------------------------------------- */

void dbg_probe_release(struct dbg_probe *p)
{
	free(p->link);
	p->link = NULL;
}

int dbg_probe_file(const char *path, struct dbg_probe *p)
{
	Elf_Scn *scn = NULL;
	const void *bid;
	const char *link;
	struct stat st;
	size_t shstrndx;
	ssize_t n;
	Elf *e;
	int fd, err = 0;

	memset(p, 0, sizeof(*p));
	/* A candidate may be anything a directory holds: only a regular file
	 * of a sane size is opened (no FIFO, no device). */
	fd = sym_open_regular(path, SYM_ELF_MAX_SIZE, NULL);
	if (fd < 0)
		return fd;
	if (fstat(fd, &st)) {
		close(fd);
		return -errno;
	}
	p->dev = st.st_dev;
	p->ino = st.st_ino;
	/* Read, not mapped: the collector probes paths a traced program
	 * named, and a file truncated meanwhile must not raise SIGBUS. */
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ, NULL);
	if (!e || elf_kind(e) != ELF_K_ELF || elf_getshdrstrndx(e, &shstrndx)) {
		err = -ENOEXEC;
		goto out;
	}
	n = dwelf_elf_gnu_build_id(e, &bid);
	if (n > 0 && (size_t)n <= sizeof(p->bid)) {
		memcpy(p->bid, bid, (size_t)n);
		p->bid_len = (size_t)n;
	}
	link = dwelf_elf_gnu_debuglink(e, &p->crc);
	if (link && *link && !(p->link = strdup(link))) {
		err = -ENOMEM;
		goto out;
	}
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS || !sh.sh_size)
			continue;
		if (sh.sh_type == SHT_SYMTAB && sh.sh_entsize && sh.sh_size / sh.sh_entsize > 1)
			p->symtab = true;
		name = elf_strptr(e, shstrndx, sh.sh_name);
		if (name && (!strcmp(name, ".debug_info") || !strcmp(name, ".zdebug_info")))
			p->dwarf = true;
	}
out:
	if (e)
		elf_end(e);
	close(fd);
	if (err)
		dbg_probe_release(p);
	return err;
}

static bool same_bid(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
	return alen == blen && (!alen || !memcmp(a, b, alen));
}

/* ---- the search ------------------------------------------------------------ */

/* What the search found so far: a file with DWARF ends it; the first with
 * only a symbol table answers if none has DWARF. */
struct found {
	char *dwarf;
	char *symtab;
};

/* Check the candidate file (owned: taken or freed).  crc: check the file
 * against it (a debuglink candidate).  Returns 1 when it has DWARF (the
 * search ends), 0 to go on, -ENOMEM. */
static int try_file(struct debuginfo *d, const struct dbg_target *t, char *file,
		    const uint32_t *crc, struct found *f)
{
	struct dbg_probe p;
	const char *of = t->path ? t->path : "the object";
	uint32_t c;
	int r = 0;

	if (!file)
		return errno == ENOMEM ? -ENOMEM : 0;
	if (dbg_probe_file(file, &p)) {
		free(file);
		return 0;
	}
	if (t->self && p.dev == t->self->dev && p.ino == t->self->ino)
		goto refuse; /* the object itself by another name */
	if (t->bid_len && p.bid_len && !same_bid(p.bid, p.bid_len, t->bid, t->bid_len)) {
		dbg_warn(d, "%s: build-id does not match %s, ignored", file, of);
		goto refuse;
	}
	if (!p.dwarf && (!p.symtab || f->symtab))
		goto refuse;
	if (crc) {
		if (file_crc32(file, &c))
			goto refuse;
		if (c != *crc) {
			dbg_warn(d, "%s: CRC does not match the .gnu_debuglink of %s, ignored", file,
				 of);
			goto refuse;
		}
	}
	if (p.dwarf) {
		f->dwarf = file;
		r = 1;
	} else {
		f->symtab = file;
	}
	dbg_probe_release(&p);
	return r;
refuse:
	dbg_probe_release(&p);
	free(file);
	return 0;
}

/* "/.build-id/xx/yyyy...debug": the build-id in hex split after the first
 * byte (buf holds 2 * DBG_BID_MAX + 24 bytes). */
static void bid_path(const uint8_t *bid, size_t len, char *buf)
{
	char *p = buf + sprintf(buf, "/.build-id/");

	for (size_t i = 0; i < len; i++) {
		p += sprintf(p, "%02x", bid[i]);
		if (!i)
			*p++ = '/';
	}
	strcpy(p, ".debug");
}

#define BID_PATH_SIZE (2 * DBG_BID_MAX + 24)

static int by_build_id(struct debuginfo *d, const struct dbg_target *t, struct found *f)
{
	char sub[BID_PATH_SIZE];
	int r = 0;

	if (!t->bid_len || t->bid_len > DBG_BID_MAX)
		return 0;
	bid_path(t->bid, t->bid_len, sub);
	for (size_t i = 0; i < d->ndirs && !r; i++)
		r = try_file(d, t, join3(d->dirs[i], sub, ""), NULL, f);
	/* the system directory under each root, then the host's */
	for (size_t i = 0; i <= d->nroots && !r; i++) {
		char *sys = dbg_root_path(d, i, DBG_SYSTEM_DIR);

		if (!sys && errno == ENOMEM)
			return -ENOMEM;
		if (sys)
			r = try_file(d, t, join3(sys, sub, ""), NULL, f);
		free(sys);
	}
	return r;
}

static int by_basename(struct debuginfo *d, const struct dbg_target *t, struct found *f)
{
	const char *base;
	int r = 0;

	if (!t->path || !d->ndirs)
		return 0;
	base = strrchr(t->path, '/');
	base = base ? base + 1 : t->path;
	if (!*base)
		return 0;
	for (size_t i = 0; i < d->ndirs && !r; i++) {
		char *dir = join3(d->dirs[i], "/", base);

		r = try_file(d, t, dir ? join3(dir, ".debug", "") : NULL, NULL, f);
		free(dir);
	}
	return r;
}

static int by_debuglink(struct debuginfo *d, const struct dbg_target *t, struct found *f)
{
	const char *link = t->self ? t->self->link : NULL;
	uint32_t crc = t->self ? t->self->crc : 0;
	char *dir, *slash;
	int r = 0;

	if (!t->path || !link || strchr(link, '/'))
		return 0;
	dir = strdup(t->path);
	if (!dir)
		return -ENOMEM;
	slash = strrchr(dir, '/');
	if (!slash)
		strcpy(dir, ".");
	else if (slash == dir)
		dir[1] = 0; /* "/prog": the root directory */
	else
		*slash = 0;
	/* next to the object, in its .debug/, under each root then as is */
	for (size_t i = 0; i <= d->nroots && !r; i++) {
		char *od = dbg_root_path(d, i, dir);

		if (!od && errno == ENOMEM) {
			r = -ENOMEM;
			break;
		}
		if (!od)
			continue;
		r = try_file(d, t, join3(od, "/", link), &crc, f);
		if (!r)
			r = try_file(d, t, join3(od, "/.debug/", link), &crc, f);
		free(od);
	}
	/* SYSDIR/<object's directory>/link */
	for (size_t i = 0; i <= d->nroots && !r; i++) {
		char *sys = dbg_root_path(d, i, DBG_SYSTEM_DIR), *sd;

		if (!sys && errno == ENOMEM) {
			r = -ENOMEM;
			break;
		}
		if (!sys)
			continue;
		sd = join3(sys, dir[0] == '/' ? "" : "/", dir);
		r = try_file(d, t, sd ? join3(sd, "/", link) : NULL, &crc, f);
		free(sd);
		free(sys);
	}
	for (size_t i = 0; i < d->ndirs && !r; i++)
		r = try_file(d, t, join3(d->dirs[i], "/", link), &crc, f);
	free(dir);
	return r;
}

/* ---- debuginfod, through libdwfl's client ------------------------------------ */

/* libdwfl's standard search looks in this path first: empty, so that only
 * its debuginfod client answers (our candidates were tried already). */
static char no_path[] = "";
static char *no_path_ptr = no_path;

static int no_elf(Dwfl_Module *mod, void **userdata, const char *name, Dwarf_Addr base,
		  char **file_name, Elf **elfp)
{
	return -1;
}

static const Dwfl_Callbacks dfd_callbacks = {
	.find_elf = no_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.debuginfo_path = &no_path_ptr,
};

/* The file debuginfod has for build-id bid (downloaded into its cache),
 * unchecked.  Only when DEBUGINFOD_URLS is set (and the build has
 * debuginfod: meson option).  Returns 1 with *path owned, 0, -ENOMEM. */
static int ask_debuginfod(struct debuginfo *d, const uint8_t *bid, size_t len, char **path)
{
#if CYGPROF_DEBUGINFOD
	const char *urls = getenv("DEBUGINFOD_URLS");
	char name[2 * DBG_BID_MAX + 1], proc[64], target[PATH_MAX];
	Dwfl_Module *mod;
	ssize_t n;
	int fd;

	*path = NULL;
	if (!len || len > DBG_BID_MAX || !urls || !*urls)
		return 0;
	if (!d->dfd && !(d->dfd = dwfl_begin(&dfd_callbacks)))
		return -ENOMEM;
	/* A module without a file, known by its build-id only; the one of
	 * the previous question is dropped. */
	for (size_t i = 0; i < len; i++)
		sprintf(name + 2 * i, "%02x", bid[i]);
	dwfl_report_begin(d->dfd);
	mod = dwfl_report_module(d->dfd, name, 0, 1);
	if (mod && dwfl_module_report_build_id(mod, bid, len, 0))
		mod = NULL;
	dwfl_report_end(d->dfd, NULL, NULL);
	if (!mod)
		return 0;
	fd = dwfl_standard_find_debuginfo(mod, NULL, NULL, 0, NULL, NULL, 0, path);
	if (fd < 0) {
		free(*path);
		*path = NULL;
		return 0;
	}
	if (!*path) {
		/* libdwfl gives the descriptor only: name the cached file */
		snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
		n = readlink(proc, target, sizeof(target) - 1);
		if (n > 0) {
			target[n] = 0;
			*path = strdup(target);
		}
	}
	close(fd);
	return *path ? 1 : 0;
#else
	*path = NULL;
	return 0;
#endif
}

static int by_debuginfod(struct debuginfo *d, const struct dbg_target *t, struct found *f)
{
	char *path;
	int r = ask_debuginfod(d, t->bid, t->bid_len, &path);

	return r <= 0 ? r : try_file(d, t, path, NULL, f);
}

/* End a search: the file with DWARF, else the one with a symbol table. */
static int found_end(struct found *f, int r, char **out)
{
	*out = NULL;
	if (r >= 0) {
		*out = f->dwarf ? f->dwarf : f->symtab;
		if (f->dwarf)
			free(f->symtab);
		return *out ? 0 : -ENOENT;
	}
	free(f->dwarf);
	free(f->symtab);
	return r;
}

int dbg_search(struct debuginfo *d, const struct dbg_target *t, char **out)
{
	struct found f = {0};
	int r = by_build_id(d, t, &f);

	if (!r)
		r = by_basename(d, t, &f);
	if (!r)
		r = by_debuglink(d, t, &f);
	if (!r && !f.symtab)
		r = by_debuginfod(d, t, &f);
	return found_end(&f, r, out);
}

int dbg_search_build_id(struct debuginfo *d, const char *of, const uint8_t *bid, size_t bid_len,
			char **out)
{
	struct dbg_target t = {of, bid, bid_len, NULL};
	struct found f = {0};
	int r = by_build_id(d, &t, &f);

	if (!r && !f.symtab)
		r = by_debuginfod(d, &t, &f);
	return found_end(&f, r, out);
}

int dbg_find_object(struct debuginfo *d, const struct dbg_target *t, char **file,
		    struct dbg_probe *p)
{
	*file = NULL;
	if (!t->path || !t->path[0])
		return -ENOENT;
	for (size_t i = 0; i <= d->nroots; i++) {
		char *f = dbg_root_path(d, i, t->path);

		if (!f && errno == ENOMEM)
			return -ENOMEM;
		if (!f)
			continue;
		if (dbg_probe_file(f, p)) {
			free(f);
			continue;
		}
		if (t->bid_len && p->bid_len && !same_bid(p->bid, p->bid_len, t->bid, t->bid_len)) {
			/* rebuilt since the recording: neither it nor its debuglink */
			dbg_warn(d, "%s: build-id does not match the recorded object, ignored", f);
			dbg_probe_release(p);
			free(f);
			continue;
		}
		*file = f;
		return 0;
	}
	return -ENOENT;
}

int debuginfo_find(struct debuginfo *d, const char *path, const uint8_t *bid, size_t bid_len,
		   char **out)
{
	struct dbg_target t = {path, bid, bid_len, NULL};
	struct dbg_probe self;
	char *file;
	int r;

	*out = NULL;
	r = dbg_find_object(d, &t, &file, &self);
	if (r == -ENOMEM)
		return r;
	if (!r) {
		if (self.dwarf) {
			*out = file;
			dbg_probe_release(&self);
			return 0;
		}
		free(file);
		t.self = &self;
		if (!bid_len) {
			t.bid = self.bid;
			t.bid_len = self.bid_len;
		}
	}
	r = dbg_search(d, &t, out);
	if (t.self)
		dbg_probe_release(&self);
	return r;
}
