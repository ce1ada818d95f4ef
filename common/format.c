/* SPDX-License-Identifier: MIT */
/* format.c - byte counts and durations as people read them (format.h). */
#include "format.h"

#include <math.h>
#include <stdio.h>

const char *fmt_bytes_real(char *buf, size_t len, double v)
{
	static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	double a = fabs(v);
	int i = 0;

	while (a >= 1024 && i < 4) {
		a /= 1024;
		v /= 1024;
		i++;
	}
	snprintf(buf, len, i ? "%.1f %s" : "%.0f %s", v, unit[i]);
	return buf;
}

/* FMT_BYTES_EXACT. */
static const char *exact(char *buf, size_t len, uint64_t v)
{
	static const char sfx[] = "KMGTPE";
	int i = -1;

	while (v && !(v & 1023) && i < 5) {
		v >>= 10;
		i++;
	}
	if (i < 0)
		snprintf(buf, len, "%llu", (unsigned long long)v);
	else
		snprintf(buf, len, "%llu%c", (unsigned long long)v, sfx[i]);
	return buf;
}

const char *fmt_bytes(char *buf, size_t len, uint64_t b, enum fmt_bytes_style s)
{
	switch (s) {
	case FMT_BYTES_IEC:
		/* below 1 KiB the count is exact as a double: "%.0f" of it
		 * prints the integer */
		return fmt_bytes_real(buf, len, (double)b);
	case FMT_BYTES_IEC10:
		if (b >= 10ULL << 30)
			snprintf(buf, len, "%.1f GiB", b / 1073741824.0);
		else if (b >= 10ULL << 20)
			snprintf(buf, len, "%.1f MiB", b / 1048576.0);
		else if (b >= 10ULL << 10)
			snprintf(buf, len, "%.1f KiB", b / 1024.0);
		else
			snprintf(buf, len, "%llu B", (unsigned long long)b);
		return buf;
	case FMT_BYTES_KB10:
		if (b >= 10ULL << 20)
			snprintf(buf, len, "%.1f MB", b / 1048576.0);
		else if (b >= 10ULL << 10)
			snprintf(buf, len, "%.1f KB", b / 1024.0);
		else
			snprintf(buf, len, "%llu bytes", (unsigned long long)b);
		return buf;
	case FMT_BYTES_EXACT:
		return exact(buf, len, b);
	}
	snprintf(buf, len, "%llu", (unsigned long long)b);
	return buf;
}

const char *fmt_dur(char *buf, size_t len, uint64_t ns)
{
	if (ns < 1000000ull)
		snprintf(buf, len, "%7.3f us", (double)ns / 1e3);
	else if (ns < 1000000000ull)
		snprintf(buf, len, "%7.3f ms", (double)ns / 1e6);
	else
		snprintf(buf, len, "%7.3f  s", (double)ns / 1e9);
	return buf;
}
