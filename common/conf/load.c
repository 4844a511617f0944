/* Reading a config from disk: conf_load() and the files include lines
 * name. The parsing itself (conf.c) does no I/O. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/conf/conf.h"
#include "common/conf/keys.h"
#include "common/log.h"

#ifndef SYSCONFDIR
#define SYSCONFDIR "/etc"
#endif

#define DEFAULT_FILE SYSCONFDIR "/larder/larder.conf"
#define MAX_FILE     (1024 * 1024) /* bytes of config file conf_load reads */

/* Reads at most MAX_FILE bytes of path into out. Returns 0 or an errno
 * (EFBIG when the file is bigger). */
static int read_file(const char *path, struct buf *out)
{
	char chunk[8192];
	ssize_t n;
	int fd, err = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return errno;
	for (;;) {
		n = read(fd, chunk, sizeof(chunk));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			err = errno;
		if (n <= 0)
			break;
		err = buf_add(out, chunk, (size_t)n);
		if (err == E2BIG)
			err = EFBIG;
		if (err)
			break;
	}
	close(fd);
	return err;
}

/* A directory glob() cannot read stops it, unless it is not there (a
 * conf.d that was never made holds no files). */
static int glob_error(const char *path, int err)
{
	(void)path;
	return err != ENOENT && err != ENOTDIR;
}

/* include = pattern, for a config read from disk: the files it matches
 * (a relative pattern is relative to the including file's directory),
 * in sorted order; a glob that matches nothing is an empty conf.d, a
 * plain name that is missing an error. */
static int include_files(struct conf_parser *p, const char *pattern)
{
	const char *from = conf_file_of(p, p->line), *slash = strrchr(from, '/');
	char full[PATH_MAX];
	struct buf text;
	glob_t g;
	int n, rc;

	if (pattern[0] == '/' || !slash)
		n = snprintf(full, sizeof(full), "%s", pattern);
	else
		n = snprintf(full, sizeof(full), "%.*s/%s",
		             (int)(slash - from), from, pattern);
	if (n < 0 || (size_t)n >= sizeof(full))
		return conf_fail(p, p->line, "include: path too long");
	memset(&g, 0, sizeof(g));
	rc = glob(full, 0, glob_error, &g);
	if (rc == GLOB_NOMATCH) {
		globfree(&g);
		if (strpbrk(pattern, "*?["))
			return 0;
		return conf_fail(p, p->line, "include = \"%s\": %s: %s",
		                 pattern, full, strerror(ENOENT));
	}
	if (rc) {
		globfree(&g);
		return conf_fail(p, p->line, "include = \"%s\": cannot read "
		                 "%s", pattern, full);
	}
	rc = 0;
	for (size_t i = 0; i < g.gl_pathc && !rc; i++) {
		buf_init(&text, MAX_FILE);
		rc = read_file(g.gl_pathv[i], &text);
		if (rc)
			rc = conf_fail(p, p->line, "include = \"%s\": %s: %s",
			               pattern, g.gl_pathv[i],
			               rc == EFBIG ? "too big" : strerror(rc));
		else
			rc = conf_parse_included(p, g.gl_pathv[i],
			                         buf_str(&text), text.len);
		buf_free(&text);
	}
	globfree(&g);
	return rc;
}

int conf_load(struct conf *c, const char *path, char *err, size_t errlen)
{
	const char *from = "";
	struct buf text;
	int rc, optional = 0;

	buf_init(&text, MAX_FILE);
	log_reason(err, errlen, "%s", "");
	if (!path || !*path) {
		path = getenv("LARDER_CONFIG");
		from = " (from $LARDER_CONFIG)";
	}
	if (!path || !*path) {
		path = DEFAULT_FILE;
		from = "";
		optional = 1;
	}
	rc = conf_defaults(c);
	if (rc) {
		log_reason(err, errlen, "%s: out of memory", path);
		goto out;
	}
	rc = read_file(path, &text);
	if (rc == ENOENT && optional) {
		rc = 0; /* no file: the built-in defaults */
		goto out;
	}
	if (rc == EFBIG) {
		log_reason(err, errlen, "%s%s: bigger than %d bytes", path, from,
		        MAX_FILE);
		goto out;
	}
	if (rc) {
		log_reason(err, errlen, "%s%s: %s (%d)", path, from, strerror(rc),
		        rc);
		goto out;
	}
	rc = conf_parse_with(c, path, buf_str(&text), text.len, include_files, err,
	                errlen);
	if (rc)
		goto out;
	c->source = realpath(path, NULL);
	if (!c->source)
		c->source = strdup(path); /* read it, but it has no name */
	if (!c->source) {
		rc = ENOMEM;
		log_reason(err, errlen, "%s: out of memory", path);
	}
out:
	buf_free(&text);
	if (rc) {
		conf_free(c);
		memset(c, 0, sizeof(*c));
	}
	return rc;
}
