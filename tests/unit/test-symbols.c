// SPDX-License-Identifier: MIT
/* test-symbols.c - symbols module: ELF symbols, bias, build-id,
 * demangling; checked against this test's own executable and libc. */
#define _GNU_SOURCE
#include "check.h"
#include "symbols.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <unistd.h>

int main(void);
__attribute__((noinline, used)) int cygprof_test_target_fn(int x);
__attribute__((noinline, used)) int cygprof_test_target_fn(int x)
{
	/* Something the compiler cannot fold away. */
	__asm__ volatile("" : "+r"(x));
	return x * 3 + 1;
}

/* Read a whole /proc file (size unknown in advance). */
static char *read_file(const char *path, size_t *len)
{
	size_t cap = 4096, n = 0;
	char *buf = malloc(cap);
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || !buf) {
		if (fd >= 0)
			close(fd);
		free(buf);
		return NULL;
	}
	for (;;) {
		ssize_t r;

		if (n == cap) {
			char *nb = realloc(buf, cap * 2);

			if (!nb)
				break;
			buf = nb;
			cap *= 2;
		}
		r = read(fd, buf + n, cap - n);
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	*len = n;
	return buf;
}

static struct procmaps self_maps;

static const struct procmap *map_containing(uint64_t addr)
{
	for (size_t i = 0; i < self_maps.n; i++)
		if (self_maps.v[i].start <= addr && addr < self_maps.v[i].end)
			return &self_maps.v[i];
	return NULL;
}

/* Independent view of the main program through dl_iterate_phdr. */
struct main_info {
	bool found;
	uint64_t addr;
	uint8_t build_id[64];
	size_t build_id_len;
};

static int phdr_cb(struct dl_phdr_info *info, size_t sz, void *arg)
{
	struct main_info *mi = arg;

	(void)sz;
	/* The first object is the main program. */
	mi->found = true;
	mi->addr = info->dlpi_addr;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		const char *p, *end;
		size_t align;

		if (ph->p_type != PT_NOTE)
			continue;
		align = ph->p_align == 8 ? 8 : 4;
		p = (const char *)(info->dlpi_addr + ph->p_vaddr);
		end = p + ph->p_memsz;
		while (p + sizeof(ElfW(Nhdr)) <= end) {
			const ElfW(Nhdr) *nh = (const void *)p;
			const char *name = p + sizeof(*nh);
			const char *desc = name + ((nh->n_namesz + align - 1) & ~(align - 1));

			if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
			    !memcmp(name, "GNU", 4) && nh->n_descsz <= sizeof(mi->build_id)) {
				memcpy(mi->build_id, desc, nh->n_descsz);
				mi->build_id_len = nh->n_descsz;
				return 1;
			}
			p = desc + ((nh->n_descsz + align - 1) & ~(align - 1));
		}
	}
	return 1;
}

static void test_self_maps(void)
{
	size_t len = 0;
	char *text = read_file("/proc/self/maps", &len);

	CHECK(text != NULL);
	if (!text)
		return;
	CHECK_EQ_INT(procmaps_parse(text, len, &self_maps), 0);
	CHECK(self_maps.n > 2);
	free(text);
}

static void test_self_exe(void)
{
	uint64_t fn = (uint64_t)(uintptr_t)&cygprof_test_target_fn;
	const struct procmap *map = map_containing(fn);
	struct main_info mi = { 0 };
	struct sym_elf *e = NULL;
	uint64_t bias = 0, bias2 = 1, start = 0, size = 0;
	uint8_t bid[64];
	char exe[4096];
	ssize_t n;

	CHECK_EQ_INT(cygprof_test_target_fn(2), 7);
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	CHECK(n > 0);
	if (n <= 0)
		return;
	exe[n] = '\0';
	CHECK(map != NULL);
	if (!map)
		return;
	CHECK_EQ_STR(map->path, exe);
	CHECK_EQ_INT(map->exec, 1);

	CHECK_EQ_INT(sym_elf_open("/proc/self/exe", &e), 0);
	if (!e)
		return;
	dl_iterate_phdr(phdr_cb, &mi);
	CHECK(mi.found);

	CHECK_EQ_INT(sym_elf_bias(e, map, &bias), 0);
	CHECK_EQ_U64(bias, mi.addr);
	CHECK_EQ_INT(sym_elf_is_dyn(e), mi.addr != 0);
	printf("# executable %s, %s, bias 0x%" PRIx64 "\n", exe,
	       sym_elf_is_dyn(e) ? "ET_DYN" : "ET_EXEC", bias);

	/* Every mapping of the executable gives the same bias. */
	for (size_t i = 0; i < self_maps.n; i++) {
		if (strcmp(self_maps.v[i].path, exe))
			continue;
		CHECK_EQ_INT(sym_elf_bias(e, &self_maps.v[i], &bias2), 0);
		CHECK_EQ_U64(bias2, bias);
	}

	CHECK_EQ_STR(sym_elf_lookup(e, fn - bias, &start, &size), "cygprof_test_target_fn");
	CHECK_EQ_U64(start, fn - bias);
	CHECK(size > 0);
	CHECK_EQ_STR(sym_elf_lookup(e, fn - bias + size - 1, NULL, NULL),
		     "cygprof_test_target_fn");
	start = 0;
	if (sym_elf_lookup(e, fn - bias + size, &start, NULL))
		CHECK(start != fn - bias);
	CHECK(sym_elf_lookup(e, 0, NULL, NULL) == NULL);
	CHECK(sym_elf_lookup(e, UINT64_MAX, NULL, NULL) == NULL);
	CHECK_EQ_STR(sym_elf_lookup(e, (uint64_t)(uintptr_t)&main - bias, NULL, NULL), "main");

	/* Build-id: length 20 (SHA-1) and the bytes in our own memory. */
	CHECK_EQ_U64(sym_elf_build_id(e, NULL, 0), 20);
	CHECK_EQ_U64(mi.build_id_len, 20);
	memset(bid, 0, sizeof(bid));
	CHECK_EQ_U64(sym_elf_build_id(e, bid, sizeof(bid)), 20);
	CHECK(!memcmp(bid, mi.build_id, 20));
	memset(bid, 0xaa, sizeof(bid));
	CHECK_EQ_U64(sym_elf_build_id(e, bid, 4), 20);
	CHECK(!memcmp(bid, mi.build_id, 4) && bid[4] == 0xaa);

	sym_elf_close(e);
}

static void test_libc(void)
{
	void *libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
	/* libc's own definition, not a canonical PLT address in a non-PIE. */
	void *sym = libc ? dlsym(libc, "strtol") : NULL;
	uint64_t addr = (uint64_t)(uintptr_t)sym, bias = 0, start = 0;
	const struct procmap *map;
	struct sym_elf *e = NULL;
	const char *name;

	CHECK(sym != NULL);
	if (!sym)
		goto out;
	map = map_containing(addr);
	CHECK(map != NULL);
	if (!map)
		goto out;
	CHECK_EQ_INT(map->exec, 1);
	CHECK(strstr(map->path, "libc") != NULL);
	CHECK_EQ_INT(sym_elf_open(map->path, &e), 0);
	if (!e)
		goto out;
	CHECK_EQ_INT(sym_elf_is_dyn(e), 1);
	CHECK_EQ_INT(sym_elf_bias(e, map, &bias), 0);
	name = sym_elf_lookup(e, addr - bias, &start, NULL);
	printf("# %s: strtol -> %s, bias 0x%" PRIx64 "\n", map->path, name ? name : "(null)",
	       bias);
	CHECK(name && strstr(name, "strtol"));
	CHECK_EQ_U64(start, addr - bias);
	CHECK(sym_elf_build_id(e, NULL, 0) > 0);
	sym_elf_close(e);
out:
	if (libc)
		dlclose(libc);
}

static void test_errors(void)
{
	char path[] = "/tmp/cygprof-test-symbols-XXXXXX";
	static const char text[] = "this is not an ELF file\n";
	struct sym_elf *e = (void *)1;
	struct procmap m = { .start = 0x1000, .end = 0x2000, .offset = 1ull << 40 };
	uint64_t bias;
	int fd;

	CHECK_EQ_INT(sym_elf_open("/nonexistent/cygprof/no-such-file", &e), -ENOENT);
	CHECK(e == NULL);

	fd = mkstemp(path);
	CHECK(fd >= 0);
	if (fd < 0)
		return;
	CHECK_EQ_INT(write(fd, text, sizeof(text) - 1), (long long)sizeof(text) - 1);
	close(fd);
	CHECK_EQ_INT(sym_elf_open(path, &e), -ENOEXEC);
	/* Empty file. */
	fd = open(path, O_WRONLY | O_TRUNC);
	if (fd >= 0)
		close(fd);
	CHECK_EQ_INT(sym_elf_open(path, &e), -ENOEXEC);
	unlink(path);

	/* Not a regular file: a FIFO (nobody writes into it: an open for
	 * reading without O_NONBLOCK would block forever), a device, a
	 * directory.  Refused without blocking. */
	CHECK(mkfifo(path, 0600) == 0);
	CHECK_EQ_INT(sym_elf_open(path, &e), -ENOTSUP);
	CHECK(e == NULL);
	unlink(path);
	CHECK_EQ_INT(sym_elf_open("/dev/null", &e), -ENOTSUP);
	CHECK_EQ_INT(sym_elf_open("/tmp", &e), -ENOTSUP);
	/* Bigger than the cap (a sparse file). */
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
	CHECK(fd >= 0);
	if (fd >= 0) {
		CHECK(ftruncate(fd, (off_t)SYM_ELF_MAX_SIZE + 1) == 0);
		close(fd);
		CHECK_EQ_INT(sym_elf_open(path, &e), -EFBIG);
		unlink(path);
	}

	/* A mapping offset beyond all segments. */
	CHECK_EQ_INT(sym_elf_open("/proc/self/exe", &e), 0);
	if (e) {
		CHECK_EQ_INT(sym_elf_bias(e, &m, &bias), -ENOENT);
		sym_elf_close(e);
	}
	sym_elf_close(NULL);
}

static void check_demangle(const char *in, const char *want)
{
	char *s = sym_demangle(in);

	CHECK_EQ_STR(s, want);
	free(s);
}

static void test_demangle(void)
{
	check_demangle("_ZN3foo3barEi", "foo::bar(int)");
	check_demangle("main", "main");
	check_demangle("_Z", "_Z");
	check_demangle("_Zinvalid!", "_Zinvalid!");
	check_demangle("_ZNSt6vectorIiSaIiEE9push_backERKi",
		       "std::vector<int, std::allocator<int> >::push_back(int const&)");
	check_demangle("_Z3foov.cold", "foo() [clone .cold]");
	check_demangle("", "");
	CHECK(sym_demangle(NULL) == NULL);
}

int main(void)
{
	RUN_TEST(test_self_maps);
	RUN_TEST(test_self_exe);
	RUN_TEST(test_libc);
	RUN_TEST(test_errors);
	RUN_TEST(test_demangle);
	procmaps_release(&self_maps);
	CHECK_DONE();
}
