#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "common/dist/distname.h"
#include "common/dist/zipdir.h"
#include "common/names.h"

#define SIG_EOCD    0x06054b50u
#define SIG_LOC64   0x07064b50u
#define SIG_EOCD64  0x06064b50u
#define SIG_CENTRAL 0x02014b50u
#define SIG_LOCAL   0x04034b50u

#define EOCD_LEN    22
#define LOC64_LEN   20
#define EOCD64_LEN  56
#define CENTRAL_LEN 46

static uint16_t le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | (p[1] << 8));
}

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
	       ((uint32_t)p[3] << 24);
}

static uint64_t le64(const uint8_t *p)
{
	return (uint64_t)le32(p) | ((uint64_t)le32(p + 4) << 32);
}

/* Returns EINVAL after writing the reason, so a check is one line. */
static int bad(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int bad(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return EINVAL;
}

/* Reads the zip64 locator before the EOCD at rec (absolute offset eocd)
 * and the record it points to. */
static int open64(struct zipdir *z, const uint8_t *tail, size_t taillen,
                  uint64_t base, uint64_t eocd, size_t *need, char *err,
                  size_t errlen)
{
	const uint8_t *loc, *r;
	uint64_t off, recsize;

	if (eocd < LOC64_LEN)
		return bad(err, errlen, "zip64 locator missing");
	if (eocd - LOC64_LEN < base) {
		if (need)
			*need = (size_t)(z->size - (eocd - LOC64_LEN));
		return EAGAIN;
	}
	loc = tail + (eocd - LOC64_LEN - base);
	if (le32(loc) != SIG_LOC64)
		return bad(err, errlen, "zip64 locator missing");
	if (le32(loc + 4) != 0 || le32(loc + 16) > 1)
		return bad(err, errlen, "zip spans several disks");
	off = le64(loc + 8);
	if (off > eocd - LOC64_LEN || eocd - LOC64_LEN - off < EOCD64_LEN)
		return bad(err, errlen, "zip64 end record past its locator");
	if (off < base) {
		if (need)
			*need = (size_t)(z->size - off);
		return EAGAIN;
	}
	r = tail + (off - base);
	if (le32(r) != SIG_EOCD64)
		return bad(err, errlen, "zip64 end record missing");
	recsize = le64(r + 4);
	if (recsize != eocd - LOC64_LEN - off - 12)
		return bad(err, errlen, "zip64 end record size is wrong");
	if (le32(r + 16) != 0 || le32(r + 20) != 0 ||
	    le64(r + 24) != le64(r + 32))
		return bad(err, errlen, "zip spans several disks");
	z->entries = le64(r + 32);
	z->cd_size = le64(r + 40);
	z->cd_offset = le64(r + 48);
	z->end = off;
	z->zip64 = 1;
	return 0;
}

int zipdir_open(struct zipdir *z, const uint8_t *tail, size_t taillen,
                uint64_t size, size_t *need, char *err, size_t errlen)
{
	uint64_t base, eocd;
	const uint8_t *r = NULL;
	size_t want;
	int rc;

	if (err && errlen)
		err[0] = '\0';
	memset(z, 0, sizeof(*z));
	if (taillen > size || (!tail && taillen))
		return bad(err, errlen, "tail longer than the file");
	z->size = size;
	base = size - taillen;
	for (size_t i = taillen >= EOCD_LEN ? taillen - EOCD_LEN + 1 : 0;
	     i-- > 0;) {
		if (taillen - i > EOCD_LEN + 65535)
			break;
		if (le32(tail + i) == SIG_EOCD &&
		    le16(tail + i + 20) == taillen - i - EOCD_LEN) {
			r = tail + i;
			break;
		}
	}
	if (!r) {
		want = size < ZIPDIR_TAIL ? (size_t)size : ZIPDIR_TAIL;
		if (taillen < want) {
			if (need)
				*need = want;
			return EAGAIN;
		}
		return bad(err, errlen,
		           "not a zip (no end of central "
		           "directory)");
	}
	eocd = base + (uint64_t)(r - tail);
	if (le16(r + 4) != 0 || le16(r + 6) != 0 || le16(r + 8) != le16(r + 10))
		return bad(err, errlen, "zip spans several disks");
	z->entries = le16(r + 10);
	z->cd_size = le32(r + 12);
	z->cd_offset = le32(r + 16);
	z->end = eocd;
	if (eocd >= LOC64_LEN && eocd - LOC64_LEN < base) {
		/* a zip64 locator, if any, is not in the tail */
		if (need)
			*need = (size_t)(size - eocd + LOC64_LEN);
		return EAGAIN;
	}
	if (z->entries == 0xFFFF || z->cd_size == 0xFFFFFFFF ||
	    z->cd_offset == 0xFFFFFFFF ||
	    (eocd >= base + LOC64_LEN && le32(r - LOC64_LEN) == SIG_LOC64)) {
		rc = open64(z, tail, taillen, base, eocd, need, err, errlen);
		if (rc)
			return rc;
	}
	if (z->cd_offset > z->end || z->end - z->cd_offset != z->cd_size)
		return bad(err, errlen,
		           "central directory is not where the "
		           "end record says");
	if (z->entries > ZIPDIR_MAX_ENTRIES)
		return bad(err, errlen,
		           "zip has too many entries (%" PRIu64 ", at most %d)",
		           z->entries, ZIPDIR_MAX_ENTRIES);
	if (z->cd_size / CENTRAL_LEN < z->entries)
		return bad(err, errlen,
		           "central directory too small for its "
		           "%" PRIu64 " entries",
		           z->entries);
	if (z->cd_size > SIZE_MAX)
		return bad(err, errlen, "central directory too large");
	return 0;
}

const uint8_t *zipdir_cd_in(const struct zipdir *z, const uint8_t *tail,
                            size_t taillen)
{
	uint64_t base = z->size - taillen;

	if (z->cd_offset < base)
		return NULL;
	return tail + (z->cd_offset - base);
}

void zipdir_iter_init(struct zipdir_iter *it, const struct zipdir *z,
                      const uint8_t *cd)
{
	it->z = z;
	it->cd = cd;
	it->pos = 0;
	it->index = 0;
}

/* Takes the zip64 values of e from its extra field x (n bytes); disk is
 * the 16-bit disk number. */
static int extra64(struct zipdir_entry *e, const uint8_t *x, size_t n,
                   int disk64, char *err, size_t errlen)
{
	int w_us = e->usize == 0xFFFFFFFF, w_cs = e->csize == 0xFFFFFFFF;
	int w_off = e->offset == 0xFFFFFFFF;

	if (!w_us && !w_cs && !w_off && !disk64)
		return 0;
	while (n >= 4) {
		size_t id = le16(x), len = le16(x + 2), k = 4;

		if (len > n - 4)
			break;
		if (id == 0x0001) {
			if (w_us && k + 8 <= len + 4) {
				e->usize = le64(x + k);
				k += 8;
				w_us = 0;
			}
			if (w_cs && k + 8 <= len + 4) {
				e->csize = le64(x + k);
				k += 8;
				w_cs = 0;
			}
			if (w_off && k + 8 <= len + 4) {
				e->offset = le64(x + k);
				k += 8;
				w_off = 0;
			}
			if (disk64 && k + 4 <= len + 4 && le32(x + k) == 0)
				disk64 = 0;
			break;
		}
		x += 4 + len;
		n -= 4 + len;
	}
	if (w_us || w_cs || w_off || disk64)
		return bad(err, errlen, "entry %.*s lacks its zip64 sizes",
		           (int)(e->namelen > 80 ? 80 : e->namelen), e->name);
	return 0;
}

int zipdir_next(struct zipdir_iter *it, struct zipdir_entry *e, char *err,
                size_t errlen)
{
	const struct zipdir *z = it->z;
	const uint8_t *p;
	size_t n, m, k, left = (size_t)z->cd_size - it->pos;
	uint16_t disk;
	int rc;

	memset(e, 0, sizeof(*e));
	if (left == 0) {
		if (it->index != z->entries)
			return bad(err, errlen,
			           "central directory has %" PRIu64
			           " entries, the end record says %" PRIu64,
			           it->index, z->entries);
		return ENOENT;
	}
	if (it->index >= z->entries)
		return bad(err, errlen,
		           "central directory has more entries "
		           "than the end record says");
	p = it->cd + it->pos;
	if (left < CENTRAL_LEN || le32(p) != SIG_CENTRAL)
		return bad(err, errlen,
		           "central directory entry %" PRIu64 " is corrupt",
		           it->index);
	n = le16(p + 28);
	m = le16(p + 30);
	k = le16(p + 32);
	if (CENTRAL_LEN + n + m + k > left)
		return bad(err, errlen,
		           "central directory entry %" PRIu64
		           " runs past its end",
		           it->index);
	e->flags = le16(p + 8);
	e->method = le16(p + 10);
	e->crc = le32(p + 16);
	e->csize = le32(p + 20);
	e->usize = le32(p + 24);
	disk = le16(p + 34);
	e->offset = le32(p + 42);
	e->name = (const char *)p + CENTRAL_LEN;
	e->namelen = n;
	e->index = it->index;
	if (n == 0)
		return bad(err, errlen, "entry %" PRIu64 " has no name",
		           it->index);
	if (memchr(e->name, '\0', n))
		return bad(err, errlen,
		           "entry %" PRIu64 " has a NUL in its "
		           "name",
		           it->index);
	rc = extra64(e, p + CENTRAL_LEN + n, m, disk == 0xFFFF, err, errlen);
	if (rc)
		return rc;
	if (disk != 0 && disk != 0xFFFF)
		return bad(err, errlen, "zip spans several disks");
	if (e->offset > z->cd_offset ||
	    z->cd_offset - e->offset < ZIPDIR_LOCAL_HEADER + n ||
	    z->cd_offset - e->offset - ZIPDIR_LOCAL_HEADER - n < e->csize)
		return bad(err, errlen,
		           "entry %.*s lies past the start of "
		           "the central directory",
		           (int)(n > 80 ? 80 : n), e->name);
	it->pos += CENTRAL_LEN + n + m + k;
	it->index++;
	return 0;
}

/* A local entry's span, for the overlap check. */
struct span {
	uint64_t start, end;
};

static int by_start(const void *a, const void *b)
{
	const struct span *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

static int by_name(const void *a, const void *b)
{
	const struct zipdir_entry *x = a, *y = b;
	size_t n = x->namelen < y->namelen ? x->namelen : y->namelen;
	int c = memcmp(x->name, y->name, n);

	if (c)
		return c;
	return x->namelen < y->namelen ? -1 : x->namelen > y->namelen;
}

int zipdir_check(const struct zipdir *z, const uint8_t *cd, char *err,
                 size_t errlen)
{
	struct zipdir_iter it;
	struct zipdir_entry *ents = NULL, cur;
	struct span *sp = NULL;
	size_t n = 0;
	int rc;

	if (z->entries) {
		ents = calloc((size_t)z->entries, sizeof(*ents));
		sp = calloc((size_t)z->entries, sizeof(*sp));
		if (!ents || !sp) {
			rc = ENOMEM;
			goto out;
		}
	}
	zipdir_iter_init(&it, z, cd);
	for (;;) {
		rc = zipdir_next(&it, &cur, err, errlen);
		if (rc == ENOENT)
			break;
		if (rc)
			goto out;
		ents[n] = cur; /* zipdir_next() keeps n below z->entries */
		sp[n].start = ents[n].offset;
		sp[n].end = ents[n].offset + ZIPDIR_LOCAL_HEADER +
		            ents[n].namelen + ents[n].csize;
		n++;
	}
	rc = 0;
	if (n < 2)
		goto out;
	qsort(sp, n, sizeof(*sp), by_start);
	for (size_t i = 1; i < n; i++)
		if (sp[i].start < sp[i - 1].end) {
			rc = bad(err, errlen,
			         "entries overlap at offset %" PRIu64,
			         sp[i].start);
			goto out;
		}
	qsort(ents, n, sizeof(*ents), by_name);
	for (size_t i = 1; i < n; i++)
		if (by_name(&ents[i - 1], &ents[i]) == 0) {
			rc = bad(
			    err, errlen, "entry %.*s appears twice",
			    (int)(ents[i].namelen > 80 ? 80 : ents[i].namelen),
			    ents[i].name);
			goto out;
		}
out:
	free(ents);
	free(sp);
	return rc;
}

/* Whether dist-info directory dir (n bytes, without ".dist-info") is
 * project-version, trying each '-' as the split. */
static int dir_matches(const char *dir, size_t n, const char *project,
                       const char *version)
{
	char name[NAMES_MAX_PROJECT + 1], norm[NAMES_MAX_PROJECT + 1];
	char ver[DISTNAME_VERSION_MAX], canon[DISTNAME_VERSION_MAX];

	for (size_t i = 1; i + 1 < n; i++) {
		if (dir[i] != '-' || i > NAMES_MAX_PROJECT ||
		    n - i - 1 >= sizeof(ver))
			continue;
		memcpy(name, dir, i);
		name[i] = '\0';
		memcpy(ver, dir + i + 1, n - i - 1);
		ver[n - i - 1] = '\0';
		if (project && (names_normalize(name, norm, sizeof(norm)) ||
		                strcmp(norm, project) != 0))
			continue;
		if (version &&
		    (distname_version_canon(ver, canon, sizeof(canon)) ||
		     strcmp(canon, version) != 0))
			continue;
		return 1;
	}
	return 0;
}

#define SUFFIX ".dist-info/METADATA"

int zipdir_find_metadata(const struct zipdir *z, const uint8_t *cd,
                         const char *project, const char *version,
                         struct zipdir_entry *e, char *err, size_t errlen)
{
	struct zipdir_iter it;
	struct zipdir_entry cur, first;
	size_t sl = strlen(SUFFIX), found = 0, matched = 0;
	int rc, pick = project || version;

	zipdir_iter_init(&it, z, cd);
	memset(e, 0, sizeof(*e));
	memset(&first, 0, sizeof(first));
	for (;;) {
		rc = zipdir_next(&it, &cur, err, errlen);
		if (rc == ENOENT)
			break;
		if (rc)
			return rc;
		if (cur.namelen <= sl ||
		    memcmp(cur.name + cur.namelen - sl, SUFFIX, sl) != 0 ||
		    memchr(cur.name, '/', cur.namelen - sl))
			continue;
		if (found++ == 0)
			first = cur;
		if (pick &&
		    dir_matches(cur.name, cur.namelen - sl, project, version)) {
			if (matched++)
				return bad(err, errlen,
				           "wheel has two "
				           "matching .dist-info "
				           "directories");
			*e = cur;
		}
	}
	if (found == 0) {
		bad(err, errlen, "wheel has no .dist-info/METADATA");
		return ENOENT;
	}
	if (pick && !matched) {
		bad(err, errlen,
		    "wheel has no %s-%s.dist-info/METADATA (it has "
		    "%.*s)",
		    project ? project : "*", version ? version : "*",
		    (int)(first.namelen > 80 ? 80 : first.namelen), first.name);
		return ENOENT;
	}
	if (!pick) {
		if (found > 1)
			return bad(err, errlen,
			           "wheel has %zu .dist-info "
			           "directories",
			           found);
		*e = first;
	}
	return 0;
}

int zipdir_local(const struct zipdir *z, const struct zipdir_entry *e,
                 const uint8_t *buf, size_t len, uint64_t *data, size_t *need,
                 char *err, size_t errlen)
{
	size_t n, m;
	uint32_t lcs, lus;
	int nm = (int)(e->namelen > 80 ? 80 : e->namelen);

	if (len < ZIPDIR_LOCAL_HEADER) {
		if (need)
			*need = ZIPDIR_LOCAL_HEADER + e->namelen;
		return EAGAIN;
	}
	if (le32(buf) != SIG_LOCAL)
		return bad(err, errlen, "entry %.*s has no local header", nm,
		           e->name);
	n = le16(buf + 26);
	m = le16(buf + 28);
	if (n != e->namelen)
		return bad(err, errlen, "entry %.*s has another local name", nm,
		           e->name);
	if (len < ZIPDIR_LOCAL_HEADER + n) {
		if (need)
			*need = ZIPDIR_LOCAL_HEADER + n + m;
		return EAGAIN;
	}
	if (memcmp(buf + ZIPDIR_LOCAL_HEADER, e->name, n) != 0)
		return bad(err, errlen, "entry %.*s has another local name", nm,
		           e->name);
	if (le16(buf + 8) != e->method)
		return bad(err, errlen, "entry %.*s has another local method",
		           nm, e->name);
	lcs = le32(buf + 18);
	lus = le32(buf + 22);
	if (!(le16(buf + 6) & 0x08) &&
	    (le32(buf + 14) != e->crc ||
	     (lcs != 0xFFFFFFFF && lcs != e->csize) ||
	     (lus != 0xFFFFFFFF && lus != e->usize)))
		return bad(err, errlen,
		           "entry %.*s: local sizes differ from "
		           "the central directory",
		           nm, e->name);
	*data = e->offset + ZIPDIR_LOCAL_HEADER + n + m;
	if (*data > z->cd_offset || z->cd_offset - *data < e->csize)
		return bad(err, errlen,
		           "entry %.*s runs into the central "
		           "directory",
		           nm, e->name);
	return 0;
}

int zipdir_inflate(const struct zipdir_entry *e, const uint8_t *data,
                   size_t len, size_t cap, uint8_t **out, size_t *outlen,
                   char *err, size_t errlen)
{
	z_stream zs;
	uint8_t *buf = NULL;
	int nm = (int)(e->namelen > 80 ? 80 : e->namelen), zrc, rc = 0;

	*out = NULL;
	*outlen = 0;
	if (e->flags & 0x01)
		return bad(err, errlen, "entry %.*s is encrypted", nm, e->name);
	if (e->method != 0 && e->method != 8)
		return bad(err, errlen,
		           "entry %.*s: compression method %u is "
		           "not supported",
		           nm, e->name, e->method);
	if (len != e->csize)
		return bad(err, errlen,
		           "entry %.*s: %zu bytes given for %" PRIu64, nm,
		           e->name, len, e->csize);
	if (len > 0xFFFFFFF0u || e->usize > 0xFFFFFFF0u) {
		bad(err, errlen, "entry %.*s is too large", nm, e->name);
		return EFBIG;
	}
	if (e->usize > cap) {
		bad(err, errlen, "entry %.*s is %" PRIu64 " bytes, over %zu",
		    nm, e->name, e->usize, cap);
		return EFBIG;
	}
	buf = malloc((size_t)e->usize + 1);
	if (!buf)
		return ENOMEM;
	if (e->method == 0) {
		if (e->csize != e->usize) {
			rc = bad(err, errlen, "stored entry %.*s: sizes differ",
			         nm, e->name);
			goto out;
		}
		memcpy(buf, data, len);
	} else {
		memset(&zs, 0, sizeof(zs));
		if (inflateInit2(&zs, -15) != Z_OK) {
			rc = ENOMEM;
			goto out;
		}
		zs.next_in = (Bytef *)(uintptr_t)data;
		zs.avail_in = (uInt)len;
		zs.next_out = buf;
		/* one byte more than said, to see a size that lies */
		zs.avail_out = (uInt)e->usize + 1;
		zrc = inflate(&zs, Z_FINISH);
		if (zrc != Z_STREAM_END && zs.avail_out == 0)
			rc = bad(err, errlen,
			         "entry %.*s inflates past its "
			         "stated size",
			         nm, e->name);
		else if (zrc != Z_STREAM_END)
			rc =
			    bad(err, errlen, "entry %.*s: corrupt deflate data",
			        nm, e->name);
		else if (zs.total_out != e->usize || zs.avail_in != 0)
			rc = bad(err, errlen, "entry %.*s: sizes lie", nm,
			         e->name);
		inflateEnd(&zs);
		if (rc)
			goto out;
	}
	if (crc32(0L, buf, (uInt)e->usize) != e->crc) {
		rc = bad(err, errlen, "entry %.*s: CRC-32 mismatch", nm,
		         e->name);
		goto out;
	}
	buf[e->usize] = '\0';
	*out = buf;
	*outlen = (size_t)e->usize;
	buf = NULL;
out:
	free(buf);
	return rc;
}
