/* conf_t.h: what the config tests share: parsing text over the defaults,
 * expecting a failure, and reading files. Included by each
 * tests/unit/common/conf/test_conf_*.c after tests/unit/t.h (its checks
 * count into that file's t_failed). */
#ifndef LARDER_CONF_T_H
#define LARDER_CONF_T_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/conf/conf.h"
#include "tests/unit/t.h"

#define UNUSED __attribute__((unused))

static UNUSED char errbuf[1024];

/* A registry's trusted_hosts unless set. */
#define REGISTRY_HOSTS                                                         \
	"production.cloudflare.docker.com *.cloudflarestorage.com "            \
	"*.cloudfront.net pkg-containers.githubusercontent.com *.quay.io "     \
	"storage.googleapis.com"

/* Parses text over the defaults into c (which the caller frees). */
static UNUSED int parse(struct conf *c, const char *text)
{
	int rc = conf_defaults(c);

	errbuf[0] = '\0';
	if (rc)
		return rc;
	return conf_parse(c, "larder.conf", text, strlen(text), errbuf,
	                  sizeof(errbuf));
}

/* Parses text over the defaults, expecting EINVAL; returns the message. */
static UNUSED const char *fails(const char *text)
{
	struct conf c;
	int rc = parse(&c, text);

	if (rc != EINVAL) {
		fprintf(stderr, "  parse gave %d, want EINVAL, for:\n%s\n", rc,
		        text);
		t_failed++;
	}
	conf_free(&c);
	return errbuf;
}

/* Parses "[larder]\nKEY = VALUE\n", expecting success, into c. */
static UNUSED int parse_larder(struct conf *c, const char *key, const char *value)
{
	char text[512];
	int rc;

	snprintf(text, sizeof(text), "[larder]\n%s = %s\n", key, value);
	rc = parse(c, text);
	if (rc)
		fprintf(stderr, "  %s: %s\n", text, errbuf);
	return rc;
}

static UNUSED const char *fails_larder(const char *key, const char *value)
{
	char text[512];

	snprintf(text, sizeof(text), "[larder]\n%s = %s\n", key, value);
	return fails(text);
}

/* A cache index "c" with upstream value; expects success. */
static UNUSED int parse_upstream(struct conf *c, const char *value)
{
	char text[512];
	int rc;

	snprintf(text, sizeof(text),
	         "[index \"c\"]\ntype = cache\nupstream = %s\n", value);
	rc = parse(c, text);
	if (rc)
		fprintf(stderr, "  %s: %s\n", text, errbuf);
	return rc;
}

static UNUSED const char *dump(const struct conf *c, struct buf *b)
{
	buf_init(b, 1 << 20);
	CHECK_INT(conf_dump(c, b), 0);
	return buf_str(b);
}

static UNUSED char *read_all(const char *path)
{
	struct buf b;
	char chunk[4096];
	size_t n;
	FILE *f = fopen(path, "r");

	buf_init(&b, 1 << 20);
	if (!f)
		return NULL;
	for (;;) {
		n = fread(chunk, 1, sizeof(chunk), f);
		if (n == 0)
			break;
		if (buf_add(&b, chunk, n))
			break;
	}
	fclose(f);
	return buf_steal(&b);
}

/* Writes text to a new temp file; returns its path (to free). */
static UNUSED char *temp_file(const char *text)
{
	char *path = strdup("/tmp/test_conf.XXXXXX");
	int fd;

	if (!path)
		return NULL;
	fd = mkstemp(path);
	if (fd < 0) {
		free(path);
		return NULL;
	}
	if (write(fd, text, strlen(text)) != (ssize_t)strlen(text))
		t_failed++;
	close(fd);
	return path;
}

static UNUSED const char *const registry_keys[] = {
    "upstream", "cache_ttl",     "max_stale",      "trusted_hosts",
    "username", "password_file", "library_prefix", "default",
};

#endif
