/* SPDX-License-Identifier: MIT */
/* test-import-perf.c - analysis/import-perf.c's reading of `perf script`
 * text: headers with and without a pid, a CPU, a period; timed and
 * counted events; kernel frames dropped; the objects perf named; and the
 * line and reason of each kind of malformed text. */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "import-perf.h"

static int read_text(const char *text, struct perf_script *s)
{
	FILE *f = fmemopen((void *)text, strlen(text), "r");
	int err;

	if (!f)
		return -1;
	err = perf_script_read(f, s);
	fclose(f);
	return err;
}

static const char good[] =
	"# perf script header\n"
	"prog 10/11 1.000000001:     250000 cpu-clock:ppp: \n"
	"\t          401136 spin+0x16 (/tmp/prog)\n"
	"\t    7f0000029d90 __libc_start_call_main+0x80 (/usr/lib/libc.so.6)\n"
	"\n"
	"my prog 12 [001] 2.5:     1000 task-clock: \n"
	"\tffffffff81a0b2c4 do_syscall_64+0x44 ([kernel.kallsyms])\n"
	"\t          401200 worker+0x10 (/tmp/prog)\n"
	"\n"
	"         prog 10/13 3.000000000:      12345 cycles:u: \n"
	"\t          401300 work+0x8 ([unknown])\n";

static void test_read(void)
{
	struct perf_script s;
	const struct perf_sample *x;

	CHECK_EQ_INT(read_text(good, &s), 0);
	CHECK_EQ_U64(s.n, 3);
	CHECK_EQ_U64(s.nframes, 4);
	CHECK_EQ_U64(s.ndsos, 2);
	if (s.n == 3 && s.ndsos == 2) {
		x = &s.s[0];
		CHECK_EQ_U64(x->mono_ns, 1000000001);
		CHECK_EQ_U64(x->pid, 10);
		CHECK_EQ_U64(x->tid, 11);
		CHECK(x->has_period && x->period == 250000 && x->timed && !x->kernel);
		CHECK_EQ_U64(x->nframes, 2);
		CHECK_EQ_U64(s.frames[x->frame0], 0x401136);
		CHECK_EQ_STR(s.dsos[s.dso[x->frame0]], "/tmp/prog");
		CHECK_EQ_STR(s.dsos[s.dso[x->frame0 + 1]], "/usr/lib/libc.so.6");
		CHECK_EQ_U64(x->line, 2);

		x = &s.s[1]; /* a command with a space, no pid, a CPU */
		CHECK_EQ_U64(x->mono_ns, 2500000000);
		CHECK_EQ_U64(x->pid, 0);
		CHECK_EQ_U64(x->tid, 12);
		CHECK(x->timed && x->kernel);
		CHECK_EQ_U64(x->nframes, 1); /* the kernel frame dropped */
		CHECK_EQ_U64(s.frames[x->frame0], 0x401200);

		x = &s.s[2]; /* counted, not timed; perf's [unknown] names no object */
		CHECK(!x->timed && x->has_period && x->period == 12345);
		CHECK_EQ_U64(s.dso[x->frame0], UINT32_MAX);
	}
	perf_script_free(&s);
}

static void test_errors(void)
{
	static const struct {
		const char *text;
		size_t line;
		const char *what;
	} bad[] = {
		{"prog 10/11 nottime cpu-clock:\n", 1, "no 'SECONDS.FRACTION:' time"},
		{"prog x/11 1.5: cpu-clock:\n", 1, "malformed PID/TID"},
		{"\tzz main+0x1 (/x)\n", 1, "outside a sample"},
		{"prog 11 1.5: cpu-clock:\n\tzz main (/x)\n", 2, "without a hexadecimal address"},
		{"prog 11 1.5: cpu-clock:\nprog 11 1.6: cpu-clock:\n", 2, "without the blank line"},
		{"prog 11 1.5: 7\n", 1, "no 'EVENT:'"},
	};
	struct perf_script s;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		CHECK_EQ_INT(read_text(bad[i].text, &s), IMPORT_E_LINE);
		CHECK_EQ_U64(s.err_line, bad[i].line);
		CHECK(s.err_what && strstr(s.err_what, bad[i].what));
		perf_script_free(&s);
	}
	CHECK_EQ_INT(read_text("# only a header\n\n", &s), IMPORT_E_NO_SAMPLES);
	perf_script_free(&s);
}

int main(void)
{
	RUN_TEST(test_read);
	RUN_TEST(test_errors);
	CHECK_DONE();
}
