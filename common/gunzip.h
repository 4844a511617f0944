/* gunzip: gzip data inflated as it arrives, in chunks of any size, with a
 * cap on the bytes it may inflate to. I/O-free (zlib). */
#ifndef LARDER_GUNZIP_H
#define LARDER_GUNZIP_H

#include <stddef.h>
#include <stdint.h>
#include <zlib.h>

struct gunzip {
	z_stream zs;
	uint64_t total, cap;
	int ended; /* the last member ended; only more members may follow */
	int live;  /* zs is initialised */
};

/* Takes each chunk of inflated output; returns 0 to go on, or a non-zero
 * code gunzip_feed() returns as it is. */
typedef int (*gunzip_sink)(void *arg, const uint8_t *d, size_t n);

/* Returns 0 or ENOMEM; on success g is the caller's to gunzip_free(). */
int gunzip_init(struct gunzip *g, uint64_t cap);

/* Inflates the n bytes at d, handing the output to sink. Returns 0; EFBIG
 * past the cap; EINVAL with a reason in err (errlen bytes) when the data
 * is no gzip or is corrupt; or the sink's code. */
int gunzip_feed(struct gunzip *g, const uint8_t *d, size_t n, gunzip_sink sink,
                void *arg, char *err, size_t errlen);

/* Returns 0 when the gzip data ended cleanly, else EINVAL ("truncated"). */
int gunzip_finish(struct gunzip *g, char *err, size_t errlen);

void gunzip_free(struct gunzip *g);

#endif
