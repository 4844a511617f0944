/* tail: reading a file while a flight fills it.
 *
 * Every requester of a missing file, the owner of its fetch included,
 * reads the owner's temp file as it grows and hands the bytes on; none of
 * them may hand out the last TAIL_HOLD bytes before the bytes are known
 * good (the owner verified them, or the blob is committed), so a client
 * never takes a complete-looking wrong file. A follower whose owner dies takes the
 * fetch over (it becomes the owner and runs fill_run), and one that moves
 * to a restarted fetch goes on only if the new file starts with the bytes
 * it already handed out. Protocol-free: the caller writes the bytes to
 * whatever client it has.
 *
 *     tail_start(&t, ...);
 *     for (;;) {
 *             if (t.owner) { fill_run(...); tail_filled(&t, ...); }
 *             limit = tail_limit(&t, ...);   hand out [t.off, limit)
 *             if (tail_complete(&t)) break;
 *             rc = tail_next(&t, ...);       wait, or settle
 *     }
 *     tail_close(&t);
 */
#ifndef LARDER_TAIL_H
#define LARDER_TAIL_H

#include <sys/types.h>
#include <time.h>

#include "storage/db/db.h"
#include "storage/flight.h"

struct tail {
	struct db *db;
	const char *data_dir;
	const char *key;      /* the flight key */
	const char *expect;   /* sha256 the bytes must have, "" if none */
	long silence;         /* the longest a healthy owner goes quiet */
	struct flight f;      /* the flight followed, or owned */
	int owner;            /* this process must run the fetch (fill_run) */
	int own;              /* this process's fetch is being read */
	int fd;               /* what is read: the temp file, then the blob */
	int prev;             /* the file the bytes handed out came from, while
	                         fd is a restarted fetch not yet checked to
	                         start with them; -1 */
	int in;               /* inotify on the temp file, -1 without */
	long long off;        /* bytes handed out (the caller moves it) */
	long long size;       /* the size to hand out, -1 until known */
	long long avail;      /* bytes in fd, at the last tail_limit() */
	int verified;         /* every byte is there and known good */
	int done;             /* and the blob is committed */
	char sha[65];         /* the blob, once verified */
	int restarts;
	long long seen;       /* avail when it last grew... */
	time_t moved;         /* ...and then */
	char *scratch;        /* for comparing a restarted fetch */
};

enum {
	TAIL_MORE = 0,        /* look again (tail_limit) */
	TAIL_COMPLETE = -1,   /* tail_next: nothing more will come */
};

/* Claims key (flight_key) for a file of size bytes (-1 unknown) that must
 * hash to expect ("" when unknown); silence is fetch_max_silence() of the
 * fetch. Returns 0: t->owner says whether this process must now run the
 * fetch (fill_run on &t->f) or follows another's. EEXIST: the blob is in
 * the store already (t->sha names it). Else an errno with a reason. */
int tail_start(struct tail *t, struct db *db, const char *data_dir,
	       const char *key, const char *expect, long long size,
	       long silence, char *err, size_t errlen);

/* The fetch t owns goes on in another process (a child that holds the
 * claim's descriptor): closes this process's copy of it, and from now on
 * t follows the fetch like anyone else's. */
void tail_handed(struct tail *t);

/* What is held back until the bytes are known good. One byte would do,
 * were it not for Apache: when a FastCGI response breaks, it appends its
 * error page to the body, and with the Content-Length already sent the
 * client may take that page's first bytes for the missing end of the file.
 * No error page is this long. */
#define TAIL_HOLD (64 * 1024)

/* The owner's fill ended (fill_run returned rc, sha256 the blob). */
void tail_filled(struct tail *t, int rc, const char *sha256);

/* The owner's bytes are verified (fill_hooks.verified): the held-back
 * bytes may go. */
void tail_verified(struct tail *t, const char *sha256, long long size);

/* Returns how far bytes may be handed out now (t->off..limit), refreshing
 * what is known of the size and the owner's verdict; -1 with an errno in
 * *rc and a reason in err when what was handed out cannot be finished
 * (the restarted fetch got other bytes, the blob has another size). Once
 * t->size >= 0 and (t->avail > 0 or t->verified), the upstream has
 * answered and a response may start. */
long long tail_limit(struct tail *t, int *rc, char *err, size_t errlen);

/* Reads up to n bytes at t->off (not moving it). Returns what pread
 * does. */
ssize_t tail_read(struct tail *t, void *buf, size_t n);

/* Whether every byte has been handed out and is known good. */
int tail_complete(const struct tail *t);

/* Nothing more can be handed out for now: waits for the file to grow, or,
 * once its owner has let go, finds out how it ended: committed (t->done),
 * died (the fetch is claimed again: t->owner may now be 1), or failed.
 * Returns TAIL_MORE, or an errno with a reason in err (EIO: the fetch
 * failed; ETIMEDOUT: the owner went silent for longer than t->silence). */
int tail_next(struct tail *t, char *err, size_t errlen);

/* Releases what t holds; an owner's claim must have been run or dropped. */
void tail_close(struct tail *t);

#endif
