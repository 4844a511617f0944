#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/dist/distname.h"
#include "common/dist/wheelmeta.h"
#include "common/dist/zipdir.h"
#include "common/names.h"

/* What a local header's extra field is guessed to take when the entry is
 * read with its header in one go: a wrong guess costs one more read. */
#define EXTRA_GUESS 1024

/* Bytes the file holds at [off, off + len), as one read returned them. */
struct piece {
	uint8_t *p;
	uint64_t off;
	size_t len;
};

struct run {
	const struct wheelmeta_src *src;
	uint64_t max_read, size;
	struct wheelmeta_stats *st;
	char *err;
	size_t errlen;
};

/* Reads into a new piece (freeing what *pc held). */
static int get(struct run *r, uint64_t off, int tail, size_t len,
               struct piece *pc)
{
	uint64_t size = 0;
	size_t got = 0;
	int rc;

	if (r->st->bytes + len > r->max_read) {
		snprintf(r->err, r->errlen,
		         "reading it takes more than %llu bytes",
		         (unsigned long long)r->max_read);
		return EFBIG;
	}
	free(pc->p);
	pc->p = malloc(len ? len : 1);
	if (!pc->p) {
		snprintf(r->err, r->errlen, "out of memory");
		return ENOMEM;
	}
	r->st->reads++;
	r->st->bytes += len;
	rc = r->src->read(r->src->ctx, off, tail, len, pc->p, &got, &size,
	                  r->err, r->errlen);
	if (rc)
		return rc;
	if (got > len || (r->size && size != r->size) ||
	    (tail && got != (size < len ? size : len)) ||
	    (!tail && (got != len || off + len > size))) {
		snprintf(r->err, r->errlen,
		         "a read of %zu bytes at %s%llu got "
		         "%zu of a file of %llu",
		         len, tail ? "the end -" : "",
		         (unsigned long long)(tail ? len : off), got,
		         (unsigned long long)size);
		return EIO;
	}
	r->size = size;
	pc->off = tail ? size - got : off;
	pc->len = got;
	return 0;
}

/* The bytes [off, off + len) when pc holds them, else NULL. */
static const uint8_t *within(const struct piece *pc, uint64_t off, uint64_t len)
{
	if (!pc->p || off < pc->off || off - pc->off > pc->len ||
	    len > pc->len - (off - pc->off))
		return NULL;
	return pc->p + (off - pc->off);
}

/* Finds the entry's data (e->csize bytes at *at) in tail or in a read of
 * its own into ent; *data points at it. */
static int entry_data(struct run *r, const struct zipdir *z,
                      const struct zipdir_entry *e, const struct piece *tail,
                      struct piece *ent, const uint8_t **data)
{
	uint64_t at = 0, room, len;
	const uint8_t *h;
	size_t need = 0;
	int rc = EAGAIN;

	h = within(tail, e->offset, ZIPDIR_LOCAL_HEADER);
	if (h)
		rc = zipdir_local(z, e, h, tail->len - (e->offset - tail->off),
		                  &at, &need, r->err, r->errlen);
	if (rc == EAGAIN) {
		/* the header and the data in one read, up to where the
		 * central directory starts (they may not run into it) */
		room = z->cd_offset > e->offset ? z->cd_offset - e->offset : 0;
		len = ZIPDIR_LOCAL_HEADER + e->namelen + EXTRA_GUESS + e->csize;
		if (len > room)
			len = room;
		if (len < ZIPDIR_LOCAL_HEADER + e->namelen)
			len = ZIPDIR_LOCAL_HEADER + e->namelen;
		if (e->offset + len > r->size)
			len = r->size - e->offset;
		rc = get(r, e->offset, 0, (size_t)len, ent);
		if (!rc)
			rc = zipdir_local(z, e, ent->p, ent->len, &at, &need,
			                  r->err, r->errlen);
		if (rc == EAGAIN && need > ent->len &&
		    e->offset + need <= r->size) {
			rc = get(r, e->offset, 0, need, ent);
			if (!rc)
				rc = zipdir_local(z, e, ent->p, ent->len, &at,
				                  NULL, r->err, r->errlen);
		}
		if (rc == EAGAIN) {
			snprintf(r->err, r->errlen,
			         "%.*s: local header out "
			         "of reach",
			         (int)(e->namelen > 80 ? 80 : e->namelen),
			         e->name);
			rc = EINVAL;
		}
	}
	if (rc)
		return rc;
	*data = within(tail, at, e->csize);
	if (!*data)
		*data = within(ent, at, e->csize);
	if (*data)
		return 0;
	rc = get(r, at, 0, (size_t)e->csize, ent);
	*data = ent->p;
	return rc;
}

int wheelmeta_read(const struct wheelmeta_src *src, const char *filename,
                   uint64_t max_read, uint8_t **out, size_t *outlen,
                   struct wheelmeta_stats *stats, char *err, size_t errlen)
{
	struct wheelmeta_stats none;
	struct run r = {.src = src,
	                .max_read = max_read,
	                .st = stats,
	                .err = err,
	                .errlen = errlen};
	struct piece tail = {0}, cdp = {0}, ent = {0};
	struct zipdir z;
	struct zipdir_entry e;
	struct distname dn;
	const uint8_t *cd, *data;
	size_t need = 0;
	int rc;

	*out = NULL;
	*outlen = 0;
	if (!r.st)
		r.st = &none;
	memset(r.st, 0, sizeof(*r.st));
	if (distname_parse(filename, &dn) || dn.kind != DISTNAME_WHEEL ||
	    names_normalize(dn.name, dn.project, sizeof(dn.project)) ||
	    distname_version_canon(dn.version, dn.canon, sizeof(dn.canon))) {
		snprintf(err, errlen, "%s: not a wheel's name", filename);
		return EINVAL;
	}
	rc = get(&r, 0, 1, ZIPDIR_TAIL, &tail);
	if (!rc)
		rc = zipdir_open(&z, tail.p, tail.len, r.size, &need, err,
		                 errlen);
	if (rc == EAGAIN && need > tail.len && need <= r.size) {
		rc = get(&r, 0, 1, need, &tail);
		if (!rc)
			rc = zipdir_open(&z, tail.p, tail.len, r.size, NULL,
			                 err, errlen);
	}
	if (rc == EAGAIN) {
		snprintf(err, errlen, "zip end records out of reach");
		rc = EINVAL;
	}
	if (rc)
		goto out;
	cd = zipdir_cd_in(&z, tail.p, tail.len);
	if (!cd) {
		if (z.cd_size > SIZE_MAX / 2) {
			snprintf(err, errlen, "central directory too large");
			rc = EFBIG;
			goto out;
		}
		rc = get(&r, z.cd_offset, 0, (size_t)z.cd_size, &cdp);
		if (rc)
			goto out;
		cd = cdp.p;
	}
	rc = zipdir_check(&z, cd, err, errlen);
	if (!rc)
		rc = zipdir_find_metadata(&z, cd, dn.project, dn.canon, &e, err,
		                          errlen);
	if (rc == ENOENT)
		rc = EINVAL; /* a wheel without its METADATA */
	if (rc)
		goto out;
	if (e.usize > WHEELMETA_MAX || e.csize > WHEELMETA_MAX + (1u << 20)) {
		snprintf(err, errlen, "%.*s is larger than %u bytes",
		         (int)(e.namelen > 80 ? 80 : e.namelen), e.name,
		         WHEELMETA_MAX);
		rc = EFBIG;
		goto out;
	}
	rc = entry_data(&r, &z, &e, &tail, &ent, &data);
	if (!rc)
		rc = zipdir_inflate(&e, data, (size_t)e.csize, WHEELMETA_MAX,
		                    out, outlen, err, errlen);
out:
	free(tail.p);
	free(cdp.p);
	free(ent.p);
	return rc;
}
