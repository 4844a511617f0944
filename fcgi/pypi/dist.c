#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/dist/tarscan.h"
#include "common/dist/zipdir.h"
#include "common/gunzip.h"
#include "fcgi/pypi/dist.h"

#define FOUND (-2) /* a tarscan stop code: PKG-INFO is read */

/* Reads len bytes at off into buf; a short file is the upload's fault. */
static int readat(int fd, void *buf, size_t len, uint64_t off, char *err,
                  size_t errlen)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n =
		    pread(fd, (char *)buf + got, len - got, (off_t)(off + got));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = errno;

			snprintf(err, errlen, "read: %s (%d)", strerror(e), e);
			return e;
		}
		if (n == 0) {
			snprintf(err, errlen, "file ends early");
			return EINVAL;
		}
		got += (size_t)n;
	}
	return 0;
}

/* A malloc'd copy of len bytes at off. */
static int readnew(int fd, size_t len, uint64_t off, uint8_t **out, char *err,
                   size_t errlen)
{
	int rc;

	*out = malloc(len ? len : 1);
	if (!*out) {
		snprintf(err, errlen, "out of memory");
		return ENOMEM;
	}
	rc = readat(fd, *out, len, off, err, errlen);
	if (rc) {
		free(*out);
		*out = NULL;
	}
	return rc;
}

/* Whether e is TOP/PKG-INFO, TOP one path component. */
static int is_pkg_info(const char *name, size_t n)
{
	const char *slash = memchr(name, '/', n);

	if (n >= 2 && name[0] == '.' && name[1] == '/') {
		name += 2;
		n -= 2;
		slash = memchr(name, '/', n);
	}
	return slash && slash != name &&
	       (size_t)(name + n - slash) == sizeof("/PKG-INFO") - 1 &&
	       memcmp(slash, "/PKG-INFO", sizeof("/PKG-INFO") - 1) == 0;
}

/* The one TOP/PKG-INFO entry of an sdist zip. */
static int zip_pkg_info(const struct zipdir *z, const uint8_t *cd,
                        struct zipdir_entry *e, char *err, size_t errlen)
{
	struct zipdir_iter it;
	struct zipdir_entry cur;
	int rc, found = 0;

	zipdir_iter_init(&it, z, cd);
	for (;;) {
		rc = zipdir_next(&it, &cur, err, errlen);
		if (rc == ENOENT)
			break;
		if (rc)
			return rc;
		if (!is_pkg_info(cur.name, cur.namelen))
			continue;
		if (found++) {
			snprintf(err, errlen,
			         "sdist has several PKG-INFO "
			         "files at the top");
			return EINVAL;
		}
		*e = cur;
	}
	if (!found) {
		snprintf(err, errlen, "sdist has no {top}/PKG-INFO");
		return EINVAL;
	}
	return 0;
}

/* Reads the metadata entry out of the zip in fd (size bytes). */
static int zip_metadata(int fd, uint64_t size, const struct distname *dn,
                        uint8_t **meta, size_t *metalen, char *err,
                        size_t errlen)
{
	struct zipdir z;
	struct zipdir_entry e;
	uint8_t *tail = NULL, *cdbuf = NULL, *data = NULL, head[30];
	uint8_t *local = NULL;
	const uint8_t *cd;
	size_t taillen, need = 0;
	uint64_t at;
	int rc, tries = 0;

	taillen = size < ZIPDIR_TAIL ? (size_t)size : ZIPDIR_TAIL;
	for (;;) {
		rc = readnew(fd, taillen, size - taillen, &tail, err, errlen);
		if (rc)
			goto out;
		rc = zipdir_open(&z, tail, taillen, size, &need, err, errlen);
		if (rc != EAGAIN)
			break;
		free(tail);
		tail = NULL;
		if (++tries > 2 || need <= taillen || need > DIST_CD_CAP) {
			snprintf(err, errlen, "zip end records out of reach");
			rc = EINVAL;
			goto out;
		}
		taillen = need;
	}
	if (rc)
		goto out;
	cd = zipdir_cd_in(&z, tail, taillen);
	if (!cd) {
		if (z.cd_size > DIST_CD_CAP) {
			snprintf(err, errlen, "central directory too large");
			rc = EINVAL;
			goto out;
		}
		rc = readnew(fd, (size_t)z.cd_size, z.cd_offset, &cdbuf, err,
		             errlen);
		if (rc)
			goto out;
		cd = cdbuf;
	}
	rc = zipdir_check(&z, cd, err, errlen);
	if (rc)
		goto out;
	if (dn->kind == DISTNAME_WHEEL)
		rc = zipdir_find_metadata(&z, cd, dn->project, dn->canon, &e,
		                          err, errlen);
	else
		rc = zip_pkg_info(&z, cd, &e, err, errlen);
	if (rc == ENOENT && dn->kind == DISTNAME_WHEEL) {
		snprintf(err, errlen,
		         "wheel has no %.80s-%.40s.dist-info/METADATA",
		         dn->name, dn->version);
		rc = EINVAL;
	}
	if (rc)
		goto out;
	if (e.csize > DIST_METADATA_CAP + (1u << 20) ||
	    e.usize > DIST_METADATA_CAP) {
		snprintf(err, errlen, "%.*s is larger than %u bytes",
		         (int)(e.namelen > 80 ? 80 : e.namelen), e.name,
		         DIST_METADATA_CAP);
		rc = EINVAL;
		goto out;
	}
	rc = readat(fd, head, sizeof(head), e.offset, err, errlen);
	if (rc)
		goto out;
	rc = zipdir_local(&z, &e, head, sizeof(head), &at, &need, err, errlen);
	if (rc == EAGAIN) {
		rc = readnew(fd, need, e.offset, &local, err, errlen);
		if (rc)
			goto out;
		rc = zipdir_local(&z, &e, local, need, &at, NULL, err, errlen);
		if (rc == EAGAIN)
			rc = EINVAL;
	}
	if (rc)
		goto out;
	rc = readnew(fd, (size_t)e.csize, at, &data, err, errlen);
	if (rc)
		goto out;
	rc = zipdir_inflate(&e, data, (size_t)e.csize, DIST_METADATA_CAP, meta,
	                    metalen, err, errlen);
	if (rc == EFBIG)
		rc = EINVAL;
out:
	free(tail);
	free(cdbuf);
	free(local);
	free(data);
	return rc;
}

/* The sdist tar scan's state. */
struct tgz {
	struct tarscan tar;
	uint8_t *buf;
	size_t len, cap;
	int want;
	char *err;
	size_t errlen;
	int oom;
};

static int tgz_entry(void *arg, const struct tarscan_entry *e)
{
	struct tgz *t = arg;
	size_t n = strlen(e->name);

	if ((e->type != '0' && e->type != '7') || !is_pkg_info(e->name, n))
		return TARSCAN_SKIP;
	if (e->size > DIST_METADATA_CAP) {
		snprintf(t->err, t->errlen, "%s is larger than %u bytes",
		         e->name, DIST_METADATA_CAP);
		return EINVAL;
	}
	t->buf = malloc((size_t)e->size + 1);
	if (!t->buf) {
		t->oom = 1;
		return ENOMEM;
	}
	t->cap = (size_t)e->size;
	return 0;
}

static int tgz_data(void *arg, const uint8_t *d, size_t n)
{
	struct tgz *t = arg;

	if (!d) {
		t->buf[t->len] = '\0';
		return FOUND;
	}
	memcpy(t->buf + t->len, d, n); /* tarscan gives at most e->size */
	t->len += n;
	return 0;
}

static int tgz_sink(void *arg, const uint8_t *d, size_t n)
{
	struct tgz *t = arg;

	return tarscan_feed(&t->tar, d, n, t->err, t->errlen);
}

static const struct tarscan_ops tgz_ops = {tgz_entry, tgz_data};

/* Streams the .tar.gz in fd through gunzip and tarscan to its PKG-INFO. */
static int tgz_metadata(int fd, uint64_t size, uint8_t **meta, size_t *metalen,
                        char *err, size_t errlen)
{
	struct gunzip g;
	struct tgz *t;
	uint8_t chunk[65536];
	uint64_t off = 0;
	int rc;

	t = calloc(1, sizeof(*t));
	if (!t || gunzip_init(&g, DIST_GUNZIP_CAP)) {
		free(t);
		snprintf(err, errlen, "out of memory");
		return ENOMEM;
	}
	t->err = err;
	t->errlen = errlen;
	tarscan_init(&t->tar, &tgz_ops, t);
	rc = 0;
	while (off < size && rc == 0) {
		size_t n = size - off < sizeof(chunk) ? (size_t)(size - off)
		                                      : sizeof(chunk);

		rc = readat(fd, chunk, n, off, err, errlen);
		if (rc == 0)
			rc =
			    gunzip_feed(&g, chunk, n, tgz_sink, t, err, errlen);
		off += n;
	}
	if (rc == 0)
		rc = gunzip_finish(&g, err, errlen);
	if (rc == 0)
		rc = tarscan_finish(&t->tar, err, errlen);
	if (rc == 0) {
		snprintf(err, errlen, "sdist has no {top}/PKG-INFO");
		rc = EINVAL;
	}
	if (rc == FOUND) {
		*meta = t->buf;
		*metalen = t->len;
		t->buf = NULL;
		rc = 0;
	} else if (rc == EFBIG) {
		rc = EINVAL;
	} else if (rc == ENOMEM && t->oom) {
		snprintf(err, errlen, "out of memory");
	}
	gunzip_free(&g);
	free(t->buf);
	free(t);
	return rc;
}

/* Checks the metadata's Name and Version against the upload's. */
static int check_meta(const struct coremeta *m, const struct distname *dn,
                      const char *name, const char *version, const char *what,
                      char *err, size_t errlen)
{
	char norm[NAMES_MAX_PROJECT + 1], canon[DISTNAME_VERSION_MAX];

	if (names_normalize(m->name, norm, sizeof(norm)) ||
	    strcmp(norm, dn->project) != 0) {
		snprintf(err, errlen, "%s says Name: %s, the upload says %s",
		         what, m->name, name);
		return EINVAL;
	}
	if (distname_version_canon(m->version, canon, sizeof(canon)) ||
	    strcmp(canon, dn->canon) != 0) {
		snprintf(err, errlen, "%s says Version: %s, the upload says %s",
		         what, m->version, version);
		return EINVAL;
	}
	return 0;
}

int dist_inspect(int fd, const char *filename, const char *name,
                 const char *version, struct dist_info *out, char *err,
                 size_t errlen)
{
	struct distname dn;
	struct coremeta m;
	struct stat st;
	char why[256];
	const char *what;
	uint8_t *meta = NULL;
	size_t metalen = 0;
	int rc;

	memset(out, 0, sizeof(*out));
	why[0] = '\0';
	rc = distname_check(filename, name, version, &dn, err, errlen);
	if (rc)
		return rc;
	if (fstat(fd, &st) < 0) {
		rc = errno;
		snprintf(err, errlen, "%s: fstat: %s (%d)", filename,
		         strerror(rc), rc);
		return rc;
	}
	what = dn.kind == DISTNAME_WHEEL ? "METADATA" : "PKG-INFO";
	if (dn.kind == DISTNAME_SDIST_TGZ)
		rc = tgz_metadata(fd, (uint64_t)st.st_size, &meta, &metalen,
		                  why, sizeof(why));
	else
		rc = zip_metadata(fd, (uint64_t)st.st_size, &dn, &meta,
		                  &metalen, why, sizeof(why));
	if (rc) {
		snprintf(err, errlen, "%s: %s", filename, why);
		goto out;
	}
	rc = coremeta_parse((const char *)meta, metalen, &m, why, sizeof(why));
	if (rc) {
		snprintf(err, errlen, "%s: %s", filename, why);
		goto out;
	}
	rc = check_meta(&m, &dn, name, version, what, err, errlen);
	if (rc)
		goto out;
	out->kind = dn.kind;
	out->metadata = meta;
	out->metadata_len = metalen;
	meta = NULL;
	memcpy(out->name, m.name, sizeof(out->name));
	memcpy(out->version, m.version, sizeof(out->version));
	memcpy(out->metadata_version, m.metadata_version,
	       sizeof(out->metadata_version));
	memcpy(out->requires_python, m.requires_python,
	       sizeof(out->requires_python));
	memcpy(out->summary, m.summary, sizeof(out->summary));
out:
	free(meta);
	return rc;
}

void dist_info_free(struct dist_info *info)
{
	if (!info)
		return;
	free(info->metadata);
	info->metadata = NULL;
	info->metadata_len = 0;
}
