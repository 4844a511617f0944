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

/* An upstream URL as the dump writes it: its password masked. */
static UNUSED const char *shown_url(const char *url)
{
	static char out[4096];

	return url ? url_redact(url, out, sizeof(out)) : NULL;
}

/* Checks that dumping c, parsing that and dumping again gives the same
 * text and the same values (an upstream's password reads back as ***). */
static UNUSED void round_trip(const struct conf *c)
{
	struct conf d;
	struct buf one, two;

	dump(c, &one);
	CHECK_INT(parse(&d, buf_str(&one)), 0);
	CHECK_STR(errbuf, "");
	/* the dump of a parse has no source; give it c's to compare */
	if (c->source)
		d.source = strdup(c->source);
	CHECK_STR(dump(&d, &two), buf_str(&one));

	CHECK_STR(d.data_dir, c->data_dir);
	CHECK_INT(d.sendfile, c->sendfile);
	CHECK_STR(d.sendfile_prefix, c->sendfile_prefix);
	CHECK_INT(d.cache_ttl, c->cache_ttl);
	CHECK_INT(d.max_stale, c->max_stale);
	CHECK_INT(d.negative_ttl, c->negative_ttl);
	CHECK_INT(d.connect_timeout, c->connect_timeout);
	CHECK_INT(d.fetch_timeout, c->fetch_timeout);
	CHECK_INT(d.max_page_size, c->max_page_size);
	CHECK_INT(d.trust_forwarded, c->trust_forwarded);
	CHECK_INT(d.max_requests, c->max_requests);
	CHECK_INT(d.workers, c->workers);
	CHECK_INT(d.nindex, c->nindex);
	for (size_t i = 0; i < d.nindex && i < c->nindex; i++) {
		const struct conf_index *x = &c->index[i], *y = &d.index[i];

		CHECK_STR(y->name, x->name);
		CHECK_INT(y->type, x->type);
		if (x->type == CONF_INDEX_CACHE) {
			CHECK_STR(y->upstream, shown_url(x->upstream));
			CHECK_STR(y->trusted_hosts, x->trusted_hosts);
		} else {
			CHECK_STR(y->layers, x->layers);
			CHECK_INT(y->nlayers, x->nlayers);
			for (size_t l = 0; l < y->nlayers; l++)
				CHECK_INT(y->layer[l], x->layer[l]);
		}
	}
	CHECK_INT(d.nregistry, c->nregistry);
	for (size_t i = 0; i < d.nregistry && i < c->nregistry; i++) {
		const struct conf_registry *x = &c->registry[i];
		const struct conf_registry *y = &d.registry[i];

		CHECK_STR(y->name, x->name);
		if (x->upstream)
			CHECK_STR(y->upstream, shown_url(x->upstream));
		else
			CHECK_INT(y->upstream == NULL, 1);
		CHECK_INT(y->type, x->type);
		CHECK_INT(y->read, x->read);
		CHECK_INT(y->upload_ttl, x->upload_ttl);
		CHECK_INT(y->max_upload_size, x->max_upload_size);
		CHECK_INT(y->allow_delete, x->allow_delete);
		CHECK_INT(y->nlayers, x->nlayers);
		CHECK_INT(y->cache_ttl, x->cache_ttl);
		CHECK_INT(y->max_stale, x->max_stale);
		CHECK_STR(y->trusted_hosts, x->trusted_hosts);
		CHECK_STR(y->username, x->username);
		CHECK_STR(y->password_file, x->password_file);
		CHECK_INT(y->library_prefix, x->library_prefix);
		CHECK_INT(y->is_default, x->is_default);
	}
	buf_free(&one);
	buf_free(&two);
	conf_free(&d);
}

#endif
