#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "common/dist/tarscan.h"

enum { S_HEADER, S_BODY, S_PAD, S_END };
enum { K_SKIP, K_DATA, K_LONGNAME, K_PAX };

void tarscan_init(struct tarscan *t, const struct tarscan_ops *ops, void *arg)
{
	memset(t, 0, sizeof(*t));
	t->ops = ops;
	t->arg = arg;
	t->state = S_HEADER;
}

/* Reads the octal (or GNU base-256) number in the n bytes at p. */
static int number(const uint8_t *p, size_t n, uint64_t *out)
{
	uint64_t v = 0;
	size_t i = 0;

	if (p[0] & 0x80) {
		if (p[0] != 0x80)
			return EINVAL; /* negative, or too large */
		for (i = 1; i < n; i++) {
			if (v >> 56)
				return EINVAL;
			v = (v << 8) | p[i];
		}
		*out = v;
		return 0;
	}
	while (i < n && p[i] == ' ')
		i++;
	for (; i < n && p[i] >= '0' && p[i] <= '7'; i++) {
		if (v >> 60)
			return EINVAL;
		v = (v << 3) | (uint64_t)(p[i] - '0');
	}
	for (; i < n; i++)
		if (p[i] != ' ' && p[i] != '\0')
			return EINVAL;
	*out = v;
	return 0;
}

static int checksum_ok(const uint8_t *h)
{
	uint64_t want;
	unsigned long u = 0;
	long s = 0;

	if (number(h + 148, 8, &want))
		return 0;
	for (size_t i = 0; i < 512; i++) {
		uint8_t c = (i >= 148 && i < 156) ? ' ' : h[i];

		u += c;
		s += (signed char)c;
	}
	return want == u || (long)want == s;
}

/* Copies the field at p (up to n bytes, NUL-ended or not) to out. */
static size_t field(char *out, const uint8_t *p, size_t n)
{
	size_t len = strnlen((const char *)p, n);

	memcpy(out, p, len);
	out[len] = '\0';
	return len;
}

/* Takes path and size from the pax records in t->meta. */
static int pax(struct tarscan *t, char *err, size_t errlen)
{
	size_t pos = 0;

	while (pos < t->metalen) {
		const char *rec = t->meta + pos, *sp, *eq;
		size_t len = 0, i = 0, left = t->metalen - pos;

		while (i < left && rec[i] >= '0' && rec[i] <= '9' && i < 8)
			len = len * 10 + (size_t)(rec[i++] - '0');
		if (i == 0 || i >= left || rec[i] != ' ' || len <= i + 1 ||
		    len > left || rec[len - 1] != '\n')
			goto bad;
		sp = rec + i + 1;
		eq = memchr(sp, '=', (size_t)(rec + len - 1 - sp));
		if (!eq)
			goto bad;
		if (eq - sp == 4 && memcmp(sp, "path", 4) == 0) {
			size_t vl = (size_t)(rec + len - 1 - (eq + 1));

			if (vl == 0 || vl > TARSCAN_NAME_MAX ||
			    memchr(eq + 1, '\0', vl)) {
				snprintf(err, errlen,
				         "tar pax path is empty, "
				         "too long or has a NUL");
				return EINVAL;
			}
			memcpy(t->name, eq + 1, vl);
			t->name[vl] = '\0';
			t->have_name = 1;
		} else if (eq - sp == 4 && memcmp(sp, "size", 4) == 0) {
			uint64_t v = 0;
			const char *q = eq + 1;

			if (q == rec + len - 1)
				goto bad;
			for (; q < rec + len - 1; q++) {
				if (*q < '0' || *q > '9' || v > UINT64_MAX / 16)
					goto bad;
				v = v * 10 + (uint64_t)(*q - '0');
			}
			t->size = v;
			t->have_size = 1;
		}
		pos += len;
	}
	return 0;
bad:
	snprintf(err, errlen, "tar pax record is corrupt");
	return EINVAL;
}

/* Acts on the 512-byte header in t->hdr. */
static int header(struct tarscan *t, char *err, size_t errlen)
{
	const uint8_t *h = t->hdr;
	char name[TARSCAN_NAME_MAX + 1];
	struct tarscan_entry e;
	uint64_t size;
	size_t n = 0;
	char type = (char)h[156];
	int rc;

	for (n = 0; n < 512 && h[n] == 0; n++)
		;
	if (n == 512) {
		t->state = S_END;
		return 0;
	}
	if (!checksum_ok(h)) {
		snprintf(err, errlen,
		         "tar header %" PRIu64 " has a bad "
		         "checksum",
		         t->entries + 1);
		return EINVAL;
	}
	if (number(h + 124, 12, &size)) {
		snprintf(err, errlen, "tar header has a bad size");
		return EINVAL;
	}
	if (++t->entries > TARSCAN_MAX_ENTRIES) {
		snprintf(err, errlen, "tar has more than %d entries",
		         TARSCAN_MAX_ENTRIES);
		return EINVAL;
	}
	t->left = size;
	t->pad = (size_t)((512 - size % 512) % 512);
	t->state = S_BODY;
	t->metalen = 0;
	if (type == 'L' || type == 'x') {
		if (size > TARSCAN_PAX_MAX ||
		    (type == 'L' && size > TARSCAN_NAME_MAX + 1)) {
			snprintf(err, errlen, "tar %s record too long",
			         type == 'L' ? "long name" : "pax");
			return EINVAL;
		}
		t->kind = type == 'L' ? K_LONGNAME : K_PAX;
		return 0;
	}
	t->kind = K_SKIP;
	if (type == 'K' || type == 'g' || type == 'V')
		return 0; /* long link names, global pax, volume labels */
	if (t->have_size)
		size = t->size;
	if (type >= '1' && type <= '6')
		size = 0;
	t->left = size;
	t->pad = (size_t)((512 - size % 512) % 512);
	if (t->have_name) {
		memcpy(name, t->name, strlen(t->name) + 1);
	} else {
		n = 0;
		if (memcmp(h + 257, "ustar\0", 6) == 0 && h[345]) {
			n = field(name, h + 345, 155);
			name[n++] = '/';
		}
		field(name + n, h, 100);
	}
	t->have_name = 0;
	t->have_size = 0;
	e.name = name;
	e.size = size;
	e.type = type ? type : '0';
	rc = t->ops->entry(t->arg, &e);
	if (rc == 0 && t->ops->data)
		t->kind = K_DATA;
	else if (rc != TARSCAN_SKIP && rc != 0)
		return rc;
	if (size == 0 && t->kind == K_DATA) {
		t->kind = K_SKIP;
		return t->ops->data(t->arg, NULL, 0);
	}
	return 0;
}

/* The current record's body is complete. */
static int body_done(struct tarscan *t, char *err, size_t errlen)
{
	t->state = S_PAD;
	if (t->kind == K_DATA)
		return t->ops->data(t->arg, NULL, 0);
	if (t->kind == K_LONGNAME) {
		size_t len = strnlen(t->meta, t->metalen);

		if (len == 0 || len > TARSCAN_NAME_MAX) {
			snprintf(err, errlen,
			         "tar long name is empty or too "
			         "long");
			return EINVAL;
		}
		memcpy(t->name, t->meta, len);
		t->name[len] = '\0';
		t->have_name = 1;
	}
	if (t->kind == K_PAX)
		return pax(t, err, errlen);
	return 0;
}

int tarscan_feed(struct tarscan *t, const uint8_t *d, size_t n, char *err,
                 size_t errlen)
{
	int rc = 0;

	if (t->stopped)
		return t->stopped;
	while (n > 0 && rc == 0) {
		size_t k;

		switch (t->state) {
		case S_HEADER:
			k = 512 - t->hlen < n ? 512 - t->hlen : n;
			memcpy(t->hdr + t->hlen, d, k);
			t->hlen += k;
			if (t->hlen == 512) {
				t->hlen = 0;
				rc = header(t, err, errlen);
				if (rc == 0 && t->state == S_BODY &&
				    t->left == 0)
					rc = body_done(t, err, errlen);
			}
			break;
		case S_BODY:
			k = t->left < n ? (size_t)t->left : n;
			if (t->kind == K_DATA)
				rc = t->ops->data(t->arg, d, k);
			else if (t->kind != K_SKIP) {
				memcpy(t->meta + t->metalen, d, k);
				t->metalen += k;
			}
			t->left -= k;
			if (rc == 0 && t->left == 0)
				rc = body_done(t, err, errlen);
			break;
		case S_PAD:
			k = t->pad < n ? t->pad : n;
			t->pad -= k;
			if (t->pad == 0)
				t->state = S_HEADER;
			break;
		default:
			k = n; /* after the end: ignored */
			break;
		}
		d += k;
		n -= k;
	}
	if (rc == 0 && t->state == S_PAD && t->pad == 0)
		t->state = S_HEADER;
	if (rc)
		t->stopped = rc;
	return rc;
}

int tarscan_finish(struct tarscan *t, char *err, size_t errlen)
{
	if (t->stopped)
		return t->stopped;
	if (t->state == S_END || (t->state == S_HEADER && t->hlen == 0 &&
	                          !t->have_name && !t->have_size))
		return 0;
	snprintf(err, errlen, "tar is truncated");
	return EINVAL;
}
