/* SPDX-License-Identifier: MIT */
/* replay-main.c - the main of the fuzz-*-replay tests: each file named, or
 * each file of each directory named (a seed corpus), goes once through the
 * harness's LLVMFuzzerTestOneInput, as libFuzzer would pass it.  Linked
 * with one harness (fuzz-capture.c, fuzz-net.c) in every build, so the
 * corpus is replayed without libFuzzer. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
	struct stat st;
	uint8_t *buf;
	FILE *f;
	size_t n;

	f = fopen(path, "rb");
	if (!f || fstat(fileno(f), &st)) {
		perror(path);
		if (f)
			fclose(f);
		return 1;
	}
	buf = malloc((size_t)st.st_size + 1);
	n = buf ? fread(buf, 1, (size_t)st.st_size, f) : 0;
	fclose(f);
	if (!buf || n != (size_t)st.st_size) {
		free(buf);
		fprintf(stderr, "%s: cannot read\n", path);
		return 1;
	}
	LLVMFuzzerTestOneInput(buf, n);
	free(buf);
	printf("ok %s\n", path);
	return 0;
}

int main(int argc, char **argv)
{
	int i, bad = 0, runs = 0;

	for (i = 1; i < argc; i++) {
		struct stat st;
		DIR *d;
		struct dirent *e;
		char p[4096];

		if (stat(argv[i], &st)) {
			perror(argv[i]);
			return 1;
		}
		if (!S_ISDIR(st.st_mode)) {
			bad |= run_file(argv[i]);
			runs++;
			continue;
		}
		d = opendir(argv[i]);
		while (d && (e = readdir(d))) {
			if (e->d_name[0] == '.')
				continue;
			snprintf(p, sizeof(p), "%s/%s", argv[i], e->d_name);
			bad |= run_file(p);
			runs++;
		}
		if (d)
			closedir(d);
	}
	printf("%d inputs replayed\n", runs);
	return bad || !runs;
}
