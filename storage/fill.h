/* fill: the owner's side of a file flight. It downloads into the claimed
 * temp file, checks what came against what the page promised, publishes
 * the blob into the store, records the outcome and lets go of the claim.
 * Protocol-free: a wheel, its metadata and an OCI blob go through here
 * alike, in the process that took the miss (no exec, the process's kept
 * upstream connections), or in a child it forked when the fetch must
 * outlive its request (CGI).
 */
#ifndef LARDER_FILL_H
#define LARDER_FILL_H

#include "storage/db/db.h"
#include "storage/fetch.h"
#include "storage/flight.h"

struct fill_want {
	const char *key;              /* flight key, e.g. "blob:<sha256>" */
	const char *url;              /* where the bytes come from */
	const char *expect;           /* sha256 they must have, "" if none */
	long long size;               /* size they must have, -1 unknown */
	const struct fetch_opts *opts;
	long error_ttl;               /* how long a failing host is
	                                 remembered (storage/health.h) */
	const char *meta_of;          /* the bytes are the metadata of this
	                                 file (sha256), or NULL */
	int provisional;              /* with meta_of: no hash vouched for
	                                 them (fill_made()'s provisional) */
};

struct fill_hooks {
	/* after each piece is written: bytes in the temp file so far */
	void (*progress)(long long written, void *ctx);
	/* the bytes are complete and checked (hash, size): before the fsync */
	void (*verified)(const char *sha256, long long size, void *ctx);
	void *ctx;
};

/* Runs the fetch of want as the owner of f (flight_claim made it the
 * owner). hooks may be NULL. With want->meta_of, the files rows of that
 * file are told the blob is their metadata, provisional or not as want
 * says, in the transaction that records the outcome: nobody sees the
 * outcome without it. Whatever happens, the claim is over on
 * return: the row is gone, the temp file published or removed, and f->fd
 * closed, which lets go of the lock. Returns 0 with the blob's hash in
 * sha256 (the blob is in the store), or an errno with a one-line reason in
 * err (EBADMSG: the bytes are not what was promised). */
int fill_run(struct db *db, const char *data_dir, struct flight *f,
	     const struct fill_want *want, const struct fill_hooks *hooks,
	     char sha256[65], char *err, size_t errlen);

/* The reason an outcome of made bytes carries when they were made from
 * bytes nobody verified (fill_made()'s provisional): the blob is the
 * outcome's all the same. */
#define FILL_PROVISIONAL "provisional"

/* Ends the claim f (this process owns it) with bytes this process made
 * rather than fetched (core metadata read out of a wheel), as fill_run()
 * ends a download: the blob published, every files row of meta_of (when
 * not NULL) told its metadata hash, the outcome recorded, the row gone and
 * f->fd closed. When provisional (made from unverified bytes), the rows
 * say so and the outcome's reason is FILL_PROVISIONAL; otherwise the hash
 * replaces a provisional one. With bytes NULL the claim ends in failure,
 * reason (a one-line reason) its outcome. Returns 0 with the blob's hash
 * in sha256, or an errno with a reason in err (the failure given, or the
 * store's). */
int fill_made(struct db *db, const char *data_dir, struct flight *f,
	      const void *bytes, size_t len, const char *meta_of,
	      int provisional, const char *reason, char sha256[65], char *err,
	      size_t errlen);

#endif
