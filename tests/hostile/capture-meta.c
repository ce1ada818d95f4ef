/* SPDX-License-Identifier: MIT */
/* capture-meta.c - print one metadata value of a capture (tests only).
 *
 * Usage: capture-meta FILE KEY
 * Prints the value and a newline; exit 0, 3 when the key is absent, 1 when
 * the capture cannot be opened. */
#include <stdio.h>
#include <stdlib.h>

#include "cygprof/cygprof-capture.h"

int main(int argc, char **argv)
{
	struct cygprof_capture *cap;
	char *v = NULL;
	int err;

	if (argc != 3) {
		fprintf(stderr, "usage: capture-meta FILE KEY\n");
		return 2;
	}
	err = cygprof_capture_open(argv[1], &cap);
	if (err) {
		fprintf(stderr, "capture-meta: %s: %s\n", argv[1], cygprof_strerror(err));
		return 1;
	}
	err = cygprof_capture_get_meta(cap, argv[2], &v);
	if (!err)
		printf("%s\n", v);
	free(v);
	cygprof_capture_close(cap);
	return err == CYGPROF_E_NOTFOUND ? 3 : err ? 1 : 0;
}
