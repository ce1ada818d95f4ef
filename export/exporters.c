/* SPDX-License-Identifier: MIT */
/* exporters.c - the table of formats (export.h). */
#include "export.h"

#include <string.h>

extern const struct exporter export_chrome, export_folded, export_callgrind, export_pprof,
	export_gmon, export_perfetto;

const struct exporter *const exporters[] = {
	&export_chrome,
	&export_folded,
	&export_callgrind,
	&export_pprof,
	&export_gmon,
	&export_perfetto,
	NULL,
};

const struct exporter *exporter_find(const char *name)
{
	for (size_t i = 0; exporters[i]; i++)
		if (!strcmp(exporters[i]->name, name))
			return exporters[i];
	return NULL;
}
