/* wheelmeta: a wheel's .dist-info/METADATA read through a source the
 * caller supplies (a stored blob read with pread, or range reads of an
 * upstream URL), in as few and as small reads as zipdir allows: the tail
 * (end records, and for most wheels the whole central directory and the
 * METADATA entry, which wheels put near their end), then the central
 * directory and the entry only when the tail did not hold them. Every read
 * is counted against a cap, so a hostile zip cannot make the caller fetch
 * the whole file piecemeal. I/O-free: the reading is the source's.
 */
#ifndef LARDER_WHEELMETA_H
#define LARDER_WHEELMETA_H

#include <stddef.h>
#include <stdint.h>

/* The bytes a wheel's metadata may have (as a METADATA entry, inflated). */
#define WHEELMETA_MAX (16u << 20)

struct wheelmeta_src {
	/* Reads the len bytes at off into buf, or, with tail set, the last
	 * len bytes of the file (all of it when it is shorter); sets *got to
	 * the bytes read and *size to the size of the whole file. Returns 0
	 * or an errno with a one-line reason in err. */
	int (*read)(void *ctx, uint64_t off, int tail, size_t len, uint8_t *buf,
	            size_t *got, uint64_t *size, char *err, size_t errlen);
	void *ctx;
};

struct wheelmeta_stats {
	unsigned reads; /* calls to src->read */
	uint64_t bytes; /* bytes asked for */
};

/* Reads the METADATA of the wheel called filename from src, reading at
 * most max_read bytes in all. Returns 0 with *out (NUL-ended, the caller's
 * to free) and *outlen; EFBIG when the reads would pass max_read or the
 * entry is larger than WHEELMETA_MAX; EINVAL when filename is no wheel
 * name or the archive is no wheel or lies (a reason in err); or the errno
 * a read returned. stats may be NULL. */
int wheelmeta_read(const struct wheelmeta_src *src, const char *filename,
                   uint64_t max_read, uint8_t **out, size_t *outlen,
                   struct wheelmeta_stats *stats, char *err, size_t errlen);

#endif
