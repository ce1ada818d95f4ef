/* SPDX-License-Identifier: MIT */
/* term.h - the terminal cygprof top takes over: the program's output moved
 * to a file (our own copies of descriptors 0-2 kept for the view, the keys
 * and the messages), cbreak mode for the keys, the alternate screen, the
 * window's size and its changes, and a view drawn over the last one.
 * Everything is put back by top_term_restore() (idempotent: call it at
 * exit).  One terminal per process: the state is the module's.
 *
 * Error convention: negative errno, with a message in err; nothing here
 * exits. */
#ifndef CYGPROF_TOP_TERM_H
#define CYGPROF_TOP_TERM_H

#include <stddef.h>
#include <stdio.h>

/** PROG's standard output and error to path (appended; with in_too its
 * input from /dev/null): our copies of 0-2 (close-on-exec: PROG does not
 * get them) are kept.  *view: the view's stream on our copy of the
 * standard output.  On error everything is put back. */
int top_term_redirect(const char *path, int in_too, FILE **view, char *err, size_t errlen);

/** Our copy of the standard input after top_term_redirect() (-1 before). */
int top_term_saved_in(void);

/** cbreak mode on fd (keys without Enter, no echo).  no_signals: ^C and ^Z
 * come as keys (the full screen: ^C quits as q does, ^Z would leave the
 * terminal in the view's mode).  Returns 1 when set, 0 when fd is no
 * terminal or refused. */
int top_term_keys(int fd, int no_signals);

/** The full screen on out: the alternate screen, no cursor, and the
 * window's changes noted (top_term_winched()). */
void top_term_screen(FILE *out);

/** Whether the window changed (or the screen started) since the last call. */
int top_term_winched(void);

/** Peek at top_term_winched()'s flag without clearing it. */
int top_term_winch_pending(void);

/** The window's size on out (24x80 when unknown). */
void top_term_size(FILE *out, unsigned *rows, unsigned *cols);

/** Draw the text buf (len bytes, lines ending in '\n') over the screen from
 * its top left corner: at most rows lines, each cut at cols columns and
 * cleared to its end, the rest of the screen cleared. */
void top_term_draw(FILE *out, const char *buf, size_t len, unsigned rows, unsigned cols);

/** Put the terminal back: its mode, the normal screen, descriptors 0-2 (the
 * view's stream is closed). */
void top_term_restore(void);

#endif
