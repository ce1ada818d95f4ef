/* SPDX-License-Identifier: MIT */
/* debuginfo.c - locate the DWARF of an object: the object itself, a separate
 * debug file by build-id or .gnu_debuglink, or debuginfod (see debuginfo.h). */
#include "debuginfo.h"
#include "symbols.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gelf.h>
#include <libelf.h>

#define SYSTEM_DEBUG_DIR "/usr/lib/debug"
#define MAX_BUILD_ID 64

struct debuginfod_fns {
	void *handle;
	void *client;
	void *(*begin)(void);
	int (*find_debuginfo)(void *client, const unsigned char *id, int len, char **path);
	void (*end)(void *client);
};

struct debuginfo {
	char **dirs;
	size_t ndirs;
	char **warned;
	size_t nwarned;
	debuginfo_warn_fn warn;
	void *warn_arg;
	int dfd_tried;
	struct debuginfod_fns dfd;
};

/* What the search needs to know about an ELF file. */
struct elf_facts {
	int has_debug;             /* a .debug_info with contents */
	uint8_t bid[MAX_BUILD_ID]; /* GNU build-id */
	size_t bid_len;
	char *link;                /* .gnu_debuglink name (owned), NULL when none */
	uint32_t link_crc;
};

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

void debuginfo_free(struct debuginfo *d)
{
	size_t i;

	if (!d)
		return;
	for (i = 0; i < d->ndirs; i++)
		free(d->dirs[i]);
	free(d->dirs);
	for (i = 0; i < d->nwarned; i++)
		free(d->warned[i]);
	free(d->warned);
	if (d->dfd.client && d->dfd.end)
		d->dfd.end(d->dfd.client);
	if (d->dfd.handle)
		dlclose(d->dfd.handle);
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

int debuginfo_add_dir(struct debuginfo *d, const char *dir)
{
	size_t len = strlen(dir);

	while (len > 1 && dir[len - 1] == '/')
		len--;
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

static void warnf(struct debuginfo *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void warnf(struct debuginfo *d, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	size_t i;

	if (!d->warn)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	for (i = 0; i < d->nwarned; i++)
		if (!strcmp(d->warned[i], msg))
			return;
	push_str(&d->warned, &d->nwarned, msg, strlen(msg));
	d->warn(d->warn_arg, msg);
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

/* ---- ELF facts ------------------------------------------------------------- */

static void read_notes(Elf_Data *data, struct elf_facts *f)
{
	size_t off = 0, name_off, desc_off;
	GElf_Nhdr nh;

	while (data && off < data->d_size &&
	       (off = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
		    !memcmp((char *)data->d_buf + name_off, "GNU", 4) && nh.n_descsz &&
		    nh.n_descsz <= MAX_BUILD_ID) {
			memcpy(f->bid, (char *)data->d_buf + desc_off, nh.n_descsz);
			f->bid_len = nh.n_descsz;
			return;
		}
	}
}

static void read_debuglink(Elf *e, Elf_Data *data, struct elf_facts *f)
{
	const char *s = data ? data->d_buf : NULL;
	size_t len, off;
	const unsigned char *c;
	GElf_Ehdr eh;

	if (!s || !data->d_size)
		return;
	len = strnlen(s, data->d_size);
	off = (len + 4) & ~(size_t)3;
	if (!len || len == data->d_size || off + 4 > data->d_size || !gelf_getehdr(e, &eh))
		return;
	c = (const unsigned char *)s + off;
	if (eh.e_ident[EI_DATA] == ELFDATA2MSB)
		f->link_crc = (uint32_t)c[0] << 24 | (uint32_t)c[1] << 16 | (uint32_t)c[2] << 8 | c[3];
	else
		f->link_crc = (uint32_t)c[3] << 24 | (uint32_t)c[2] << 16 | (uint32_t)c[1] << 8 | c[0];
	f->link = strndup(s, len);
}

/* -ENOENT when the file is missing, -ENOEXEC when it is not ELF. */
static int elf_facts(const char *path, struct elf_facts *f)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	Elf *e;
	int fd;

	memset(f, 0, sizeof(*f));
	/* A candidate may be anything a directory holds: only a regular file
	 * of a sane size is opened (no FIFO, no device). */
	fd = sym_open_regular(path, SYM_ELF_MAX_SIZE, NULL);
	if (fd < 0)
		return fd;
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ, NULL);
	if (!e || elf_kind(e) != ELF_K_ELF || elf_getshdrstrndx(e, &shstrndx)) {
		if (e)
			elf_end(e);
		close(fd);
		return -ENOEXEC;
	}
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh))
			continue;
		name = elf_strptr(e, shstrndx, sh.sh_name);
		if (!name)
			continue;
		if (sh.sh_type == SHT_NOTE && !f->bid_len)
			read_notes(elf_getdata(scn, NULL), f);
		else if (!strcmp(name, ".debug_info") && sh.sh_type != SHT_NOBITS && sh.sh_size)
			f->has_debug = 1;
		else if (!strcmp(name, ".gnu_debuglink") && !f->link)
			read_debuglink(e, elf_getdata(scn, NULL), f);
	}
	elf_end(e);
	close(fd);
	return 0;
}

/* ---- the search ------------------------------------------------------------ */

struct target {
	const char *path; /* the object, may be NULL */
	const uint8_t *bid;
	size_t bid_len;
};

/* A candidate debug file: 1 accepted, 0 not usable (missing, no DWARF or
 * refused with a warning). crc: check against *crc when not NULL. */
static int try_candidate(struct debuginfo *d, const struct target *t, const char *file,
			 const uint32_t *crc)
{
	struct elf_facts f;
	uint32_t c;
	int ok = 0;

	if (t->path && !strcmp(file, t->path))
		return 0;
	if (elf_facts(file, &f))
		return 0;
	if (t->bid_len && f.bid_len &&
	    (f.bid_len != t->bid_len || memcmp(f.bid, t->bid, t->bid_len))) {
		warnf(d, "%s: build-id does not match %s, ignored", file,
		      t->path ? t->path : "the object");
		goto out;
	}
	if (!f.has_debug)
		goto out;
	if (crc) {
		if (file_crc32(file, &c))
			goto out;
		if (c != *crc) {
			warnf(d, "%s: CRC does not match the .gnu_debuglink of %s, ignored", file,
			      t->path);
			goto out;
		}
	}
	ok = 1;
out:
	free(f.link);
	return ok;
}

static char *join(const char *a, const char *b, const char *c)
{
	size_t n = strlen(a) + strlen(b) + strlen(c) + 1;
	char *s = malloc(n);

	if (s)
		snprintf(s, n, "%s%s%s", a, b, c);
	return s;
}

/* "xx/yyyy...": the build-id in hex split after the first byte. */
static void bid_path(const uint8_t *bid, size_t len, char *buf)
{
	size_t i;
	char *p = buf;

	for (i = 0; i < len; i++) {
		p += sprintf(p, "%02x", bid[i]);
		if (!i)
			*p++ = '/';
	}
	*p = 0;
}

/* Try dir + sub; on success *out takes the path.  -ENOMEM, 1 found, 0 not. */
static int try_path(struct debuginfo *d, const struct target *t, const char *dir,
		    const char *sub, const uint32_t *crc, char **out)
{
	char *p = join(dir, "/", sub);

	if (!p)
		return -ENOMEM;
	if (try_candidate(d, t, p, crc)) {
		*out = p;
		return 1;
	}
	free(p);
	return 0;
}

static int by_build_id(struct debuginfo *d, const struct target *t, char **out)
{
	char sub[sizeof(".build-id/") + 2 * MAX_BUILD_ID + 8];
	size_t i;
	int r;

	if (!t->bid_len)
		return 0;
	strcpy(sub, ".build-id/");
	bid_path(t->bid, t->bid_len, sub + strlen(sub));
	strcat(sub, ".debug");
	for (i = 0; i <= d->ndirs; i++) {
		r = try_path(d, t, i < d->ndirs ? d->dirs[i] : SYSTEM_DEBUG_DIR, sub, NULL, out);
		if (r)
			return r;
	}
	return 0;
}

static int by_basename(struct debuginfo *d, const struct target *t, char **out)
{
	const char *base;
	char *sub;
	size_t i;
	int r = 0;

	if (!t->path || !d->ndirs)
		return 0;
	base = strrchr(t->path, '/');
	base = base ? base + 1 : t->path;
	sub = join(base, ".debug", "");
	if (!sub)
		return -ENOMEM;
	for (i = 0; i < d->ndirs && !r; i++)
		r = try_path(d, t, d->dirs[i], sub, NULL, out);
	free(sub);
	return r;
}

static int by_debuglink(struct debuginfo *d, const struct target *t, const char *link,
			uint32_t crc, char **out)
{
	char *dir, *slash, *sysdir = NULL, *dotdebug = NULL;
	size_t i;
	int r = 0;

	if (!t->path || !link || strchr(link, '/'))
		return 0;
	dir = strdup(t->path);
	if (!dir)
		return -ENOMEM;
	slash = strrchr(dir, '/');
	if (slash)
		*slash = 0;
	else
		strcpy(dir, ".");
	dotdebug = join(dir, "/.debug", "");
	sysdir = join(SYSTEM_DEBUG_DIR, dir[0] == '/' ? "" : "/", dir);
	if (!dotdebug || !sysdir) {
		r = -ENOMEM;
		goto out;
	}
	r = try_path(d, t, dir, link, &crc, out);
	if (!r)
		r = try_path(d, t, dotdebug, link, &crc, out);
	if (!r)
		r = try_path(d, t, sysdir, link, &crc, out);
	for (i = 0; i < d->ndirs && !r; i++)
		r = try_path(d, t, d->dirs[i], link, &crc, out);
out:
	free(dir);
	free(dotdebug);
	free(sysdir);
	return r;
}

static int by_debuginfod(struct debuginfo *d, const struct target *t, char **out)
{
	const char *urls = getenv("DEBUGINFOD_URLS");
	char *path = NULL;
	int fd;

	if (!t->bid_len || !urls || !*urls)
		return 0;
	if (!d->dfd_tried) {
		d->dfd_tried = 1;
		d->dfd.handle = dlopen("libdebuginfod.so.1", RTLD_NOW | RTLD_LOCAL);
		if (d->dfd.handle) {
			*(void **)&d->dfd.begin = dlsym(d->dfd.handle, "debuginfod_begin");
			*(void **)&d->dfd.find_debuginfo =
				dlsym(d->dfd.handle, "debuginfod_find_debuginfo");
			*(void **)&d->dfd.end = dlsym(d->dfd.handle, "debuginfod_end");
			if (d->dfd.begin && d->dfd.find_debuginfo && d->dfd.end)
				d->dfd.client = d->dfd.begin();
		}
	}
	if (!d->dfd.client)
		return 0;
	fd = d->dfd.find_debuginfo(d->dfd.client, t->bid, (int)t->bid_len, &path);
	if (fd < 0 || !path) {
		if (fd >= 0)
			close(fd);
		free(path);
		return 0;
	}
	close(fd);
	if (try_candidate(d, t, path, NULL)) {
		*out = path;
		return 1;
	}
	free(path);
	return 0;
}

int debuginfo_find(struct debuginfo *d, const char *path, const uint8_t *bid, size_t bid_len,
		   char **out)
{
	struct elf_facts self = {0};
	struct target t = {path, bid, bid_len};
	int have_self = 0, r;

	*out = NULL;
	if (path && path[0] && !elf_facts(path, &self)) {
		have_self = 1;
		if (bid_len && self.bid_len &&
		    (self.bid_len != bid_len || memcmp(self.bid, bid, bid_len))) {
			/* rebuilt since the recording: neither it nor its debuglink */
			warnf(d, "%s: build-id does not match the recorded object, ignored", path);
			free(self.link);
			self.link = NULL;
			have_self = 0;
		} else if (!bid_len && self.bid_len) {
			t.bid = self.bid;
			t.bid_len = self.bid_len;
		}
		if (have_self && self.has_debug) {
			*out = strdup(path);
			free(self.link);
			return *out ? 0 : -ENOMEM;
		}
	}
	r = by_build_id(d, &t, out);
	if (!r)
		r = by_basename(d, &t, out);
	if (!r && have_self && self.link)
		r = by_debuglink(d, &t, self.link, self.link_crc, out);
	if (!r)
		r = by_debuginfod(d, &t, out);
	free(self.link);
	if (r < 0)
		return r;
	return r ? 0 : -ENOENT;
}
