/* SPDX-License-Identifier: MIT */
/* push-cred.c - the credentials of push and record --push (push.h): read
 * from files or the environment, never from the command line, checked,
 * and wiped after use.  No libcurl here: cli_check_env() checks the
 * variables in every executable (cygprof-annotate too). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "push.h"

#define PUSH_TOKEN_MAX 4096

/* The text of a credential file: at most PUSH_TOKEN_MAX bytes, trailing
 * newlines dropped, not empty; with secret, only its owner may read or
 * write it.  Returned in buf (PUSH_TOKEN_MAX + 2 bytes). */
static void cred_file(const char *cmd, const char *opt, const char *file, int secret, char *buf)
{
	struct stat st;
	ssize_t n;
	int fd = open(file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);

	if (fd < 0)
		cli_die(2, "%s: %s %s: %s", cmd, opt, file, strerror(errno));
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		cli_die(2, "%s: %s %s: not a regular file", cmd, opt, file);
	}
	if (secret && (st.st_mode & 077)) {
		close(fd);
		cli_die(2, "%s: %s %s: others may read or write it (mode %04o): "
			"chmod 600 it", cmd, opt, file, (unsigned)(st.st_mode & 07777));
	}
	n = read(fd, buf, PUSH_TOKEN_MAX + 1);
	close(fd);
	if (n < 0)
		cli_die(2, "%s: %s %s: %s", cmd, opt, file, strerror(errno));
	if (n > PUSH_TOKEN_MAX)
		cli_die(2, "%s: %s %s: longer than %d bytes", cmd, opt, file, PUSH_TOKEN_MAX);
	while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
		n--;
	buf[n] = 0;
	if (!n)
		cli_die(2, "%s: %s %s: empty", cmd, opt, file);
}

/* A credential's problem (NULL: none): a header value cannot hold a
 * control character, a token or tenant no space either; basic auth is
 * USER:PASSWORD, the user without ':' (RFC 7617). */
static const char *cred_problem(const char *v, int spaces, int basic)
{
	const char *colon = basic ? strchr(v, ':') : NULL;

	if (strlen(v) > PUSH_TOKEN_MAX)
		return "too long";
	for (const char *q = v; *q; q++)
		if ((unsigned char)*q < 0x20 || (unsigned char)*q == 0x7f ||
		    (!spaces && *q == ' '))
			return spaces ? "a control character in it" : "a space or control character in it";
	if (basic && (!colon || colon == v))
		return "not USER:PASSWORD";
	return NULL;
}

static char *cred_dup(const char *cmd, const char *v)
{
	char *d = strdup(v);

	if (!d)
		cli_die(1, "%s: out of memory", cmd);
	return d;
}

void push_check_env(void)
{
	const char *v, *why;

	if ((v = getenv(PUSH_ENV_TENANT)) && *v && (why = cred_problem(v, 0, 0)))
		cli_die(2, "%s=%s: %s", PUSH_ENV_TENANT, v, why);
	/* a secret: its value is not shown */
	if ((v = getenv(PUSH_ENV_BASIC)) && *v && (why = cred_problem(v, 1, 1)))
		cli_die(2, "%s: %s (the value is not shown)", PUSH_ENV_BASIC, why);
}

void push_credentials(struct push_target *t, const char *cmd, const char *token_file,
		      const char *tenant_file, const char *basic_file)
{
	char buf[PUSH_TOKEN_MAX + 2];
	const char *why, *v;

	if (token_file) {
		cred_file(cmd, "--push-token-file", token_file, 1, buf);
		if (cred_problem(buf, 0, 0))
			cli_die(2, "%s: --push-token-file %s: a space or control character in "
				"the token", cmd, token_file);
		t->token = cred_dup(cmd, buf);
	}
	/* the tenant names no secret: any file, or the variable (a file
	 * given wins) */
	if (tenant_file) {
		cred_file(cmd, "--push-tenant-file", tenant_file, 0, buf);
		if ((why = cred_problem(buf, 0, 0)))
			cli_die(2, "%s: --push-tenant-file %s: %s", cmd, tenant_file, why);
		t->tenant = cred_dup(cmd, buf);
	} else if ((v = getenv(PUSH_ENV_TENANT)) && *v) {
		if ((why = cred_problem(v, 0, 0)))
			cli_die(2, "%s: %s: %s", cmd, PUSH_ENV_TENANT, why);
		t->tenant = cred_dup(cmd, v);
	}
	/* messages about basic auth never show its text */
	if (basic_file) {
		cred_file(cmd, "--push-basic-auth-file", basic_file, 1, buf);
		if ((why = cred_problem(buf, 1, 1)))
			cli_die(2, "%s: --push-basic-auth-file %s: %s", cmd, basic_file, why);
		t->basic = cred_dup(cmd, buf);
	} else if ((v = getenv(PUSH_ENV_BASIC)) && *v) {
		if ((why = cred_problem(v, 1, 1)))
			cli_die(2, "%s: %s: %s", cmd, PUSH_ENV_BASIC, why);
		t->basic = cred_dup(cmd, v);
	}
	explicit_bzero(buf, sizeof buf);
	if (t->token && t->basic)
		cli_die(2, "%s: --push-token-file and basic auth (%s) both give the "
			"Authorization header: give one", cmd,
			basic_file ? "--push-basic-auth-file" : PUSH_ENV_BASIC);
}

void push_credentials_free(struct push_target *t)
{
	char **c[] = {&t->token, &t->tenant, &t->basic};

	for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
		if (*c[i])
			explicit_bzero(*c[i], strlen(*c[i]));
		free(*c[i]);
		*c[i] = NULL;
	}
}
