#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "common/gunzip.h"

int gunzip_init(struct gunzip *g, uint64_t cap)
{
	memset(g, 0, sizeof(*g));
	g->cap = cap;
	if (inflateInit2(&g->zs, 16 + 15) != Z_OK)
		return ENOMEM;
	g->live = 1;
	return 0;
}

int gunzip_feed(struct gunzip *g, const uint8_t *d, size_t n, gunzip_sink sink,
                void *arg, char *err, size_t errlen)
{
	uint8_t out[16384];
	int zrc, rc, more = 0;

	if (!g->live)
		return EINVAL;
	while (n > 0 || more) {
		size_t chunk = n > 65536 ? 65536 : n, used, made;

		if (g->ended && n == 0)
			break;
		if (g->ended) {
			/* another member, or zero padding */
			if (d[0] == 0) {
				d++;
				n--;
				continue;
			}
			if (d[0] != 0x1f) {
				snprintf(err, errlen,
				         "bytes after the gzip data");
				return EINVAL;
			}
			if (inflateReset(&g->zs) != Z_OK)
				return EINVAL;
			g->ended = 0;
		}
		g->zs.next_in = (Bytef *)(uintptr_t)d;
		g->zs.avail_in = (uInt)chunk;
		g->zs.next_out = out;
		g->zs.avail_out = sizeof(out);
		zrc = inflate(&g->zs, Z_NO_FLUSH);
		if (zrc != Z_OK && zrc != Z_STREAM_END &&
		    !(zrc == Z_BUF_ERROR && g->zs.avail_out != 0)) {
			snprintf(err, errlen, "not gzip data or corrupt (%s)",
			         g->zs.msg ? g->zs.msg : "zlib error");
			return EINVAL;
		}
		used = chunk - g->zs.avail_in;
		made = sizeof(out) - g->zs.avail_out;
		d += used;
		n -= used;
		if (zrc == Z_STREAM_END)
			g->ended = 1;
		if (made > g->cap - g->total) {
			snprintf(err, errlen,
			         "gzip data inflates past %" PRIu64 " bytes",
			         g->cap);
			return EFBIG;
		}
		g->total += made;
		more = made == sizeof(out);
		if (made) {
			rc = sink(arg, out, made);
			if (rc)
				return rc;
		}
	}
	return 0;
}

int gunzip_finish(struct gunzip *g, char *err, size_t errlen)
{
	if (!g->ended) {
		snprintf(err, errlen, "gzip data is truncated");
		return EINVAL;
	}
	return 0;
}

void gunzip_free(struct gunzip *g)
{
	if (g->live)
		inflateEnd(&g->zs);
	g->live = 0;
}
