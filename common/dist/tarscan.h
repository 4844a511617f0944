/* tarscan: a streaming tar reader (ustar, GNU long names, pax path and
 * size records) fed already-inflated bytes in chunks of any size. It calls
 * back for each entry and, when asked, for its data. I/O-free. */
#ifndef LARDER_TARSCAN_H
#define LARDER_TARSCAN_H

#include <stddef.h>
#include <stdint.h>

#define TARSCAN_NAME_MAX    4096
#define TARSCAN_PAX_MAX     65536
#define TARSCAN_MAX_ENTRIES 100000
#define TARSCAN_SKIP        (-1)

struct tarscan_entry {
	const char *name; /* NUL-ended, valid during the entry callback */
	uint64_t size;    /* of its data */
	char type;        /* the typeflag: '0' file, '5' directory, ... */
};

struct tarscan_ops {
	/* Returns 0 to be handed the entry's data, TARSCAN_SKIP to skip
	 * it, or another code to stop the scan with. */
	int (*entry)(void *arg, const struct tarscan_entry *e);
	/* The data in chunks, then (NULL, 0) at its end. Returns 0 or a
	 * code to stop the scan with. May be NULL when entry skips all. */
	int (*data)(void *arg, const uint8_t *d, size_t n);
};

struct tarscan {
	const struct tarscan_ops *ops;
	void *arg;
	int state, kind, stopped;
	uint8_t hdr[512];
	size_t hlen;
	uint64_t left;                  /* data bytes of the current record */
	size_t pad;                     /* then padding to the next block */
	char meta[TARSCAN_PAX_MAX + 1]; /* a long name or pax record */
	size_t metalen;
	char name[TARSCAN_NAME_MAX + 1]; /* the next entry's long name */
	int have_name;
	uint64_t size; /* the next entry's pax size */
	int have_size;
	uint64_t entries;
};

/* Sets t up to call ops with arg. */
void tarscan_init(struct tarscan *t, const struct tarscan_ops *ops, void *arg);

/* Scans the n bytes at d. Returns 0; EINVAL with a one-line reason in err
 * (errlen bytes) for a bad header checksum, a name too long, too many
 * entries or a bad pax record; or the code a callback stopped with (and
 * again on every later call). */
int tarscan_feed(struct tarscan *t, const uint8_t *d, size_t n, char *err,
                 size_t errlen);

/* Returns 0 when the input ended at an end-of-archive block or between
 * entries, else EINVAL ("tar is truncated"). */
int tarscan_finish(struct tarscan *t, char *err, size_t errlen);

#endif
