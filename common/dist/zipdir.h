/* zipdir: a zip archive's central directory read from buffers the caller
 * supplies, so the caller may hold the whole file or only range reads of
 * it: first its tail (the end records), then the central directory, then
 * the local header and data of the entry it wants. Hostile archives
 * (entries past the central directory, overlapping entries, sizes that
 * lie, too many entries, names with NUL) are refused with a one-line
 * reason. I/O-free; inflating uses zlib.
 *
 *   zipdir_open(tail of the file)        -> where the central directory is
 *   zipdir_iter_init/zipdir_next(cd)     -> each entry
 *   zipdir_local(bytes at entry offset)  -> where its data starts
 *   zipdir_inflate(its data)             -> its bytes, CRC-checked
 */
#ifndef LARDER_ZIPDIR_H
#define LARDER_ZIPDIR_H

#include <stddef.h>
#include <stdint.h>

#define ZIPDIR_MAX_ENTRIES 100000
/* A tail this long (or the whole file) holds the end records of any zip
 * whose comment is at most 64 KiB, and their zip64 forms. */
#define ZIPDIR_TAIL         (22 + 65535 + 20 + 56)
#define ZIPDIR_LOCAL_HEADER 30

struct zipdir {
	uint64_t size;      /* of the whole file */
	uint64_t cd_offset; /* the central directory's first byte */
	uint64_t cd_size;
	uint64_t entries; /* as the end record says */
	uint64_t end;     /* the first end record's offset */
	int zip64;
};

struct zipdir_entry {
	const char *name; /* into the central directory, not NUL-ended */
	size_t namelen;
	uint16_t flags, method;
	uint32_t crc;
	uint64_t csize, usize;
	uint64_t offset; /* of its local header */
	uint64_t index;
};

struct zipdir_iter {
	const struct zipdir *z;
	const uint8_t *cd;
	size_t pos;
	uint64_t index;
};

/* Finds the end of central directory record (and its zip64 locator and
 * record) in tail, the last taillen bytes of a file of size bytes, and
 * fills z. Returns 0; EAGAIN when tail is too short to tell, with *need
 * the tail length to supply (need may be NULL); or EINVAL with a one-line
 * reason in err (errlen bytes). */
int zipdir_open(struct zipdir *z, const uint8_t *tail, size_t taillen,
                uint64_t size, size_t *need, char *err, size_t errlen);

/* The central directory within tail (as given to zipdir_open()), or NULL
 * when tail does not hold all of it: then read z->cd_size bytes at
 * z->cd_offset. */
const uint8_t *zipdir_cd_in(const struct zipdir *z, const uint8_t *tail,
                            size_t taillen);

/* Starts an iteration over cd, the z->cd_size bytes of the central
 * directory, which must outlive it. */
void zipdir_iter_init(struct zipdir_iter *it, const struct zipdir *z,
                      const uint8_t *cd);

/* The next entry into *e (its name points into cd). Returns 0, ENOENT
 * after the last one (when the count and size agree with the end record),
 * or EINVAL with a one-line reason in err. */
int zipdir_next(struct zipdir_iter *it, struct zipdir_entry *e, char *err,
                size_t errlen);

/* Reads every entry of cd and checks none overlaps another and no two
 * share a name. Returns 0, ENOMEM, or EINVAL with a reason in err. */
int zipdir_check(const struct zipdir *z, const uint8_t *cd, char *err,
                 size_t errlen);

/* Finds the wheel's top-level NAME-VERSION.dist-info/METADATA entry into
 * *e. project (PEP 503 normalised) and version (canonicalised, see
 * distname_version_canon()) pick among several .dist-info directories and
 * are required to match when given; either may be NULL to take the only
 * one. Returns 0, ENOENT when there is none (or none matching), or EINVAL
 * (several, or a bad directory); a reason is in err either way. */
int zipdir_find_metadata(const struct zipdir *z, const uint8_t *cd,
                         const char *project, const char *version,
                         struct zipdir_entry *e, char *err, size_t errlen);

/* Reads the local header of e at buf (len bytes from e->offset) and sets
 * *data to the file offset of its data (e->csize bytes). Returns 0; EAGAIN
 * when len is too short, with *need the length to supply (need may be
 * NULL); or EINVAL with a reason in err when the local header disagrees
 * with the central one or its data runs past the central directory's
 * start. */
int zipdir_local(const struct zipdir *z, const struct zipdir_entry *e,
                 const uint8_t *buf, size_t len, uint64_t *data, size_t *need,
                 char *err, size_t errlen);

/* Decompresses e's data (len must be e->csize bytes; stored or deflated)
 * into a malloc'd buffer of e->usize bytes plus a NUL, checking the sizes
 * and the CRC-32. Returns 0 with *out the caller's to free and *outlen
 * set; EFBIG when e->usize exceeds cap; ENOMEM; or EINVAL with a reason in
 * err (encrypted, unknown method, corrupt data, lying sizes, CRC). */
int zipdir_inflate(const struct zipdir_entry *e, const uint8_t *data,
                   size_t len, size_t cap, uint8_t **out, size_t *outlen,
                   char *err, size_t errlen);

#endif
