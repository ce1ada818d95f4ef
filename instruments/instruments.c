/* SPDX-License-Identifier: MIT */
/* instruments.c - the table of instruments (instrument.h). */
#include "instrument.h"

#include <string.h>

#include "view.h"

extern const struct instrument instrument_calls, instrument_timeline, instrument_memory,
	instrument_counters, instrument_memdump, instrument_sampling;

const struct instrument *const instruments[] = {
	&instrument_calls,
	&instrument_timeline,
	&instrument_memory,
	&instrument_counters,
	&instrument_memdump,
	&instrument_sampling,
	NULL,
};

const struct instrument *instrument_find(const char *name)
{
	for (size_t i = 0; instruments[i]; i++)
		if (!strcmp(instruments[i]->name, name))
			return instruments[i];
	return NULL;
}

int instrument_present(struct view *v, const char *name)
{
	const struct instrument *in = instrument_find(name);

	return in && in->present(v);
}

int instrument_has_counter(struct view *v, const char *prefix, int want)
{
	const struct cygprof_counter *c;
	size_t n, len = strlen(prefix);

	if (view_counters(v, &c, &n))
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!strncmp(c[i].name, prefix, len) == !!want)
			return 1;
	return 0;
}
