/* SPDX-License-Identifier: MIT */
/* term.c - the terminal cygprof top takes over, and puts back (see
 * term.h). */
#define _GNU_SOURCE
#include "term.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

/* What is to be put back at exit: the terminal's mode, the screen, the
 * descriptors 0-2 (the program's output went elsewhere). */
static struct termios saved_tty;
static int tty_fd = -1, tty_changed, screen_on, saved_fd[3] = {-1, -1, -1};
static FILE *view_out; /* the view's stream on saved_fd[1] */
static volatile sig_atomic_t winched;

static void on_winch(int sig)
{
	(void)sig;
	winched = 1;
}

void top_term_restore(void)
{
	if (view_out)
		fflush(view_out);
	if (screen_on && saved_fd[1] >= 0) {
		static const char leave[] = "\033[?25h\033[?1049l";
		ssize_t w = write(saved_fd[1], leave, sizeof leave - 1);
		(void)w;
		screen_on = 0;
	}
	if (tty_changed) {
		tcsetattr(tty_fd, TCSANOW, &saved_tty);
		tty_changed = 0;
	}
	for (int fd = 0; fd < 3; fd++)
		if (saved_fd[fd] >= 0) {
			dup2(saved_fd[fd], fd);
			if (fd == 1 && view_out) {
				fclose(view_out);
				view_out = NULL;
			} else {
				close(saved_fd[fd]);
			}
			saved_fd[fd] = -1;
		}
}

int top_term_keys(int fd, int no_signals)
{
	struct termios raw;

	if (tcgetattr(fd, &saved_tty))
		return 0;
	raw = saved_tty;
	raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
	if (no_signals)
		raw.c_lflag &= ~(tcflag_t)ISIG;
	raw.c_cc[VMIN] = 0;
	raw.c_cc[VTIME] = 0;
	tty_fd = fd;
	if (tcsetattr(fd, TCSANOW, &raw))
		return 0;
	tty_changed = 1;
	return 1;
}

/* A failed step: err is what (may be NULL) and why, everything put back. */
static int fail(char *err, size_t errlen, const char *what)
{
	int e = errno;

	snprintf(err, errlen, "%s%s%s", what ? what : "", what ? ": " : "", strerror(e));
	top_term_restore();
	return -e;
}

int top_term_redirect(const char *path, int in_too, FILE **view, char *err, size_t errlen)
{
	int out, in = -1;

	for (int fd = 0; fd < 3; fd++) {
		saved_fd[fd] = fcntl(fd, F_DUPFD_CLOEXEC, 3);
		if (saved_fd[fd] < 0)
			return fail(err, errlen, "cannot keep the terminal");
	}
	out = open(path, O_WRONLY | O_CREAT | O_APPEND | O_NOCTTY | O_CLOEXEC, 0666);
	if (out < 0) {
		char what[4200];
		snprintf(what, sizeof what, "cannot open %s for the program's output", path);
		return fail(err, errlen, what);
	}
	if (in_too && ((in = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0 || dup2(in, 0) < 0))
		return fail(err, errlen, "cannot redirect the program's input");
	if (dup2(out, 1) < 0 || dup2(out, 2) < 0)
		return fail(err, errlen, "cannot redirect the program's output");
	if (in >= 0)
		close(in);
	close(out);
	*view = view_out = fdopen(saved_fd[1], "w");
	if (!view_out)
		return fail(err, errlen, NULL);
	return 0;
}

int top_term_saved_in(void)
{
	return saved_fd[0];
}

void top_term_screen(FILE *out)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_winch;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGWINCH, &sa, NULL);
	winched = 1;
	fputs("\033[?1049h\033[?25l", out);
	fflush(out);
	screen_on = 1;
}

int top_term_winched(void)
{
	int w = winched;

	winched = 0;
	return w;
}

int top_term_winch_pending(void)
{
	return winched;
}

void top_term_size(FILE *out, unsigned *rows, unsigned *cols)
{
	struct winsize ws;

	*rows = 24;
	*cols = 80;
	if (!ioctl(fileno(out), TIOCGWINSZ, &ws) && ws.ws_row && ws.ws_col) {
		*rows = ws.ws_row;
		*cols = ws.ws_col;
	}
}

void top_term_draw(FILE *out, const char *buf, size_t len, unsigned rows, unsigned cols)
{
	unsigned col = 0, row = 0;

	fputs("\033[H", out);
	for (size_t i = 0; i < len && row < rows; i++) {
		if (buf[i] == '\n') {
			fputs("\033[K", out);
			if (++row < rows)
				fputs("\r\n", out);
			col = 0;
		} else if (col < cols) {
			fputc(buf[i], out);
			col++;
		}
	}
	fputs("\033[K\033[J", out);
	fflush(out);
}
