/* SPDX-License-Identifier: MIT */
/* readfile.c - the whole of a small file in one buffer (readfile.h). */
#include "readfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

int read_file(const char *path, char **buf, size_t *len)
{
	size_t cap = 8192, n = 0;
	char *b = NULL;
	int fd, err = 0;
	ssize_t r;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	b = malloc(cap + 1);
	if (!b) {
		close(fd);
		return -ENOMEM;
	}
	for (;;) {
		r = read(fd, b + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			err = -errno;
			break;
		}
		if (!r)
			break;
		n += (size_t)r;
		if (n == cap) {
			char *t = cap > (SIZE_MAX - 1) / 2 ? NULL : realloc(b, cap * 2 + 1);

			if (!t) {
				err = -ENOMEM;
				break;
			}
			b = t;
			cap *= 2;
		}
	}
	close(fd);
	if (err) {
		free(b);
		return err;
	}
	b[n] = '\0';
	*buf = b;
	*len = n;
	return 0;
}
