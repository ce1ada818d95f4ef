/* SPDX-License-Identifier: MIT */
/* instrument.h - instruments: named bundles of what `cygprof record`
 * records and which commands show it.
 *
 * At record time an instrument turns its data sources on in the
 * collector's options (`record -i memory,counters`; the older flags
 * --timeline, --memory, --counters, --memdump are its aliases).  At report
 * time it says whether a capture holds its data, so `cygprof info` lists
 * the instruments found and every command that needs one says in one line
 * which option records it.
 *
 * Adding an instrument is one file here defining a `const struct
 * instrument instrument_<name>` and one row in instruments.c (see
 * docs/DESIGN.md, "Adding an instrument"). */
#ifndef INSTRUMENTS_INSTRUMENT_H
#define INSTRUMENTS_INSTRUMENT_H

struct collector_opts;
struct view;

struct instrument {
	const char *name;    /* as -i takes it: "memory" */
	const char *summary; /* what it records, one line */
	const char *alias;   /* the record option doing the same, or NULL */
	const char *views;   /* the commands that show it: "cygprof memory" */
	/* record time: turn its data sources on */
	void (*record)(struct collector_opts *o);
	/* report time: 1 when the capture holds its data */
	int (*present)(struct view *v);
};

/* Every instrument, in the order info lists them; NULL-terminated. */
extern const struct instrument *const instruments[];

/** The instrument called name, or NULL. */
const struct instrument *instrument_find(const char *name);
/** Whether the capture of v holds the data of the instrument called name
 * (0 for an unknown name). */
int instrument_present(struct view *v, const char *name);
/** For present(): whether the capture has a counter whose name starts with
 * prefix (want 1) or one whose name does not (want 0). */
int instrument_has_counter(struct view *v, const char *prefix, int want);

#endif
