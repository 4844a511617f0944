#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "common/names.h"
#include "storage/blob.h"
#include "storage/gc.h"
#include "storage/lru.h"
#include "storage/stats.h"

/* Replaced blobs deleted in one go (gc_collect_replaced). */
#define REPLACED_MAX 32

#define BATCH 256 /* candidates read at a time */

/* Takes DATA/gc.lock. Returns 0 with *fd the caller's to close (which
 * lets go), EWOULDBLOCK, or an errno. */
static int lock(const char *data_dir, int wait, int *fd)
{
	char path[PATH_MAX];
	int err;

	if ((size_t)snprintf(path, sizeof(path), "%s/gc.lock", data_dir) >=
	    sizeof(path))
		return ENAMETOOLONG;
	*fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (*fd < 0) {
		err = errno;
		log_error(err, path, "open");
		return err;
	}
	if (flock(*fd, LOCK_EX | (wait ? 0 : LOCK_NB)) < 0) {
		err = errno == EWOULDBLOCK ? EWOULDBLOCK : errno;
		if (err != EWOULDBLOCK)
			log_error(err, path, "flock");
		close(*fd);
		*fd = -1;
		return err;
	}
	return 0;
}

/* Size and free bytes of the data directory's file system. */
static int fs_space(const char *data_dir, long long *size, long long *avail)
{
	struct statvfs v;

	if (statvfs(data_dir, &v) < 0)
		return errno;
	*size = (long long)v.f_blocks * (long long)v.f_frsize;
	*avail = (long long)v.f_bavail * (long long)v.f_frsize;
	return 0;
}

struct fold {
	struct db *db;
	int err;
};

static void fold_one(const char prefix[17], long long at, void *vctx)
{
	struct fold *f = vctx;

	if (!f->err)
		f->err = db_blob_fold(f->db, prefix, at);
}

/* Moves the use table's times into blobs.used_at, in one transaction:
 * what was touched since the last fold (a second of overlap). */
static int fold(struct db *db, long long now)
{
	struct fold f = {.db = db};
	long long since = lru_folded_at();
	int err;

	err = db_begin(db);
	if (err)
		return err;
	lru_each(since > 0 ? since - 1 : 0, fold_one, &f);
	err = f.err ? f.err : db_commit(db);
	if (err)
		db_rollback(db);
	return err;
}

int gc_due(const char *data_dir, long long max_size, long min_free)
{
	long long bytes = lru_bytes(), size = 0, avail = 0;

	if (max_size > 0 && (bytes < 0 || bytes > max_size))
		return 1;
	return min_free > 0 && fs_space(data_dir, &size, &avail) == 0 &&
	       avail * 100 < size * min_free;
}

/* Evicts one blob: decides, forgets its rows and unlinks it (and its .gz
 * copy) inside one write transaction. A publish, a renderer or the
 * replaced-rendering collector that takes the write lock after it finds
 * the file gone (and stores it again); one that took it before has named
 * the blob, and it stays. Returns 0, EBUSY when it must stay (named, or
 * used within grace by the table), or an errno. */
static int evict_one(struct db *db, const char *data_dir,
                     const struct db_blob *row, long long now,
                     long long cutoff, int dry_run)
{
	char path[PATH_MAX];
	int err, rm;

	/* used since the fold, or just now */
	if (lru_get(row->sha256) > cutoff)
		return EBUSY;
	if (dry_run)
		return db_blob_evict(db, row->sha256, now, 1);
	err = db_begin(db);
	if (err)
		return err;
	err = db_blob_evict(db, row->sha256, now, 0);
	/* handed out while we looked; read again under the lock, just
	 * before the unlink. A request that records its use after this
	 * finds the blob gone when it hands it out (a miss, fcgi/server/send.c),
	 * save one that records it, looks, and hands the path to the web
	 * server between this read and the unlink: a window of a few
	 * system calls, for a blob unused for gc_grace, that only a lock
	 * the warm path takes would close, and it takes none */
	if (!err && lru_get(row->sha256) > cutoff)
		err = EBUSY;
	if (err) {
		db_rollback(db);
		return err;
	}
	rm = blob_remove(data_dir, row->sha256);
	if (rm && rm != ENOENT &&
	    blob_path(data_dir, row->sha256, path, sizeof(path)) == 0)
		log_warn(rm, path, "evicting");
	err = db_commit(db);
	if (err) {
		db_rollback(db);
		if (blob_path(data_dir, row->sha256, path, sizeof(path)) == 0)
			log_error(err, path, "evicted, but its rows stay "
			          "(larder fsck --repair drops them)");
	}
	return err;
}

/* Evicts candidates until the goals are met. */
static int evict(struct db *db, const char *data_dir, const struct gc_opts *o,
                 long long need_bytes, long long need_free, struct gc_report *r)
{
	struct db_blob rows[BATCH];
	char after[65] = "";
	long long now = (long long)time(NULL), cutoff = now - o->grace;
	long long after_at = -1;
	size_t n;
	int err;

	while (r->evicted_bytes < need_bytes || r->evicted_bytes < need_free) {
		err = db_blob_oldest(db, cutoff, after_at, after, rows, BATCH,
		                     &n);
		if (err || n == 0)
			return err;
		for (size_t i = 0; i < n; i++) {
			if (r->evicted_bytes >= need_bytes &&
			    r->evicted_bytes >= need_free)
				break;
			err = evict_one(db, data_dir, &rows[i], now, cutoff,
			                o->dry_run);
			if (err == EBUSY) {
				r->kept++;
				continue;
			}
			if (err)
				return err;
			if (!o->dry_run) {
				stats_add(STATS_EVICTED_BLOBS, 1);
				stats_add(STATS_EVICTED_BYTES,
				          (uint64_t)rows[i].size);
			}
			r->evicted++;
			r->evicted_bytes += rows[i].size;
			if (o->list)
				fprintf(o->list,
				        "%s %s %lld bytes, last used "
				        "%lld s ago\n",
				        o->dry_run ? "would evict" : "evicted",
				        rows[i].sha256, rows[i].size,
				        now - rows[i].used_at);
		}
		after_at = rows[n - 1].used_at;
		snprintf(after, sizeof(after), "%s", rows[n - 1].sha256);
	}
	return 0;
}

int gc_run(struct db *db, const char *data_dir, const struct gc_opts *o,
           struct gc_report *r)
{
	static int warned, reconciled;
	long long now = (long long)time(NULL), need_bytes = 0, need_free = 0;
	long long avail = 0;
	long added, dropped;
	int fd = -1, err;

	memset(r, 0, sizeof(*r));
	/* without the use table every blob looks as old as its commit: a
	 * hot one would go first, and one just handed out too */
	if (!o->dry_run && !lru_ready()) {
		if (!warned)
			log_error(0, data_dir, "lru.shm is not mapped: "
			          "nothing is evicted");
		warned = 1;
		return ENXIO;
	}
	/* a dry run changes nothing, the lock file included */
	err = o->dry_run ? 0 : lock(data_dir, o->wait, &fd);
	if (err)
		return err;
	if (!o->dry_run)
		err = fold(db, now);
	if (!err)
		err = db_blob_totals(db, &r->bytes_before, &r->count_before);
	/* an empty inventory may be a store from before it: once per
	 * process, it is brought in line with blobs/ */
	if (!err && !o->dry_run && r->count_before == 0 && !reconciled) {
		reconciled = 1;
		err = gc_reconcile(db, data_dir, 0, &added, &dropped);
		if (!err && added)
			log_info("gc: %ld blobs from before the inventory "
			         "added to it", added);
		if (!err)
			err = db_blob_totals(db, &r->bytes_before,
			                     &r->count_before);
	}
	if (err)
		goto out;
	if (fs_space(data_dir, &r->fs_size, &avail) == 0)
		r->fs_free_before = avail;
	else
		r->fs_size = 0;
	if (o->max_size > 0 && r->bytes_before + o->incoming > o->max_size) {
		r->over_size = 1;
		need_bytes =
		    r->bytes_before + o->incoming - o->max_size / 100 * 95;
	}
	if (o->min_free > 0 && r->fs_size > 0 &&
	    avail * 100 < r->fs_size * o->min_free) {
		r->low_free = 1;
		need_free = r->fs_size / 100 * (o->min_free + 5) - avail;
	}
	err = evict(db, data_dir, o, need_bytes, need_free, r);
	r->bytes_after = r->bytes_before - r->evicted_bytes;
	r->count_after = r->count_before - r->evicted;
	if (!err && !o->dry_run &&
	    db_blob_totals(db, &r->bytes_after, &r->count_after) == 0)
		lru_reset(r->bytes_after, now);
out:
	if (fd >= 0)
		close(fd);
	return err;
}

struct known {
	char sha256[65];
	int seen; /* its file was found */
};

/* A blob file the inventory lacks, as the walk found it. */
struct found {
	char sha256[65];
	long long size; /* with its .gz copy's */
	long long mtime;
};

struct walk {
	const char *data_dir;
	struct known *rows; /* the inventory, sorted */
	size_t n, cap;
	struct found *adds; /* files not in it */
	size_t nadds, capadds;
	int err;
};

/* Returns v (of *cap items of size each) grown to hold one more than n,
 * or NULL (v stays the caller's). */
static void *grow(void *v, size_t *cap, size_t n, size_t size)
{
	size_t ncap = *cap ? *cap * 2 : 1024;
	void *grown;

	if (n < *cap)
		return v;
	grown = realloc(v, ncap * size);
	if (grown)
		*cap = ncap;
	return grown;
}

static void collect(const char *sha256, long long size, void *vctx)
{
	struct walk *w = vctx;
	struct known *grown;

	(void)size;
	if (w->err)
		return;
	grown = grow(w->rows, &w->cap, w->n, sizeof(*w->rows));
	if (!grown) {
		w->err = ENOMEM;
		return;
	}
	w->rows = grown;
	snprintf(w->rows[w->n].sha256, 65, "%s", sha256);
	w->rows[w->n++].seen = 0;
}

static int by_sha(const void *a, const void *b)
{
	return strcmp(((const struct known *)a)->sha256,
	              ((const struct known *)b)->sha256);
}

/* Notes DIR/name, a blob file, as seen, or as one to add. */
static void add_file(struct walk *w, const char *dir, const char *name)
{
	struct known key, *k;
	struct found *f;
	char path[PATH_MAX];
	struct stat st;
	long long gz;

	if (!names_is_sha256(name))
		return;
	snprintf(key.sha256, sizeof(key.sha256), "%s", name);
	k = w->n ? bsearch(&key, w->rows, w->n, sizeof(*w->rows), by_sha) :
		    NULL;
	if (k) {
		k->seen = 1;
		return;
	}
	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >=
	        sizeof(path) ||
	    stat(path, &st) < 0 || !S_ISREG(st.st_mode))
		return;
	f = grow(w->adds, &w->capadds, w->nadds, sizeof(*w->adds));
	if (!f) {
		w->err = ENOMEM;
		return;
	}
	w->adds = f;
	gz = blob_gz_size(w->data_dir, name); /* a page's copy is its bytes */
	f = &w->adds[w->nadds++];
	snprintf(f->sha256, sizeof(f->sha256), "%s", name);
	f->size = (long long)st.st_size + (gz > 0 ? gz : 0);
	f->mtime = (long long)st.st_mtime;
}

/* Calls fn(w, path, name) for each entry of dir but . and .. */
static int each_entry(struct walk *w, const char *dir,
                      void (*fn)(struct walk *, const char *, const char *))
{
	DIR *d = opendir(dir);
	struct dirent *e;

	if (!d)
		return errno == ENOENT ? 0 : errno;
	while ((e = readdir(d)) != NULL && !w->err)
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			fn(w, dir, e->d_name);
	closedir(d);
	return 0;
}

static void walk_leaf(struct walk *w, const char *dir, const char *name)
{
	char sub[PATH_MAX];

	if ((size_t)snprintf(sub, sizeof(sub), "%s/%s", dir, name) <
	    sizeof(sub))
		each_entry(w, sub, add_file);
}

static void walk_top(struct walk *w, const char *dir, const char *name)
{
	char sub[PATH_MAX];

	if ((size_t)snprintf(sub, sizeof(sub), "%s/%s", dir, name) <
	    sizeof(sub))
		each_entry(w, sub, walk_leaf);
}

/* Adds the rows of the files found, BATCH to a write transaction with a
 * pause between two for the workers waiting: the file is looked at again
 * under the lock (a collector unlinks under it), so no row is added for a
 * blob deleted since the walk. */
static int add_rows(struct db *db, const struct walk *w, long *added)
{
	int err = 0;

	for (size_t i = 0; i < w->nadds && !err; i += BATCH) {
		if (i)
			db_pause();
		err = db_begin(db);
		for (size_t j = i; j < w->nadds && j < i + BATCH && !err;
		     j++) {
			if (!blob_exists(w->data_dir, w->adds[j].sha256))
				continue;
			err = db_blob_add_at(db, w->adds[j].sha256,
			                     w->adds[j].size, w->adds[j].mtime);
			if (!err)
				(*added)++;
		}
		if (!err)
			err = db_commit(db);
		if (err)
			db_rollback(db);
	}
	return err;
}

/* Drops the rows whose file the walk did not see, BATCH to a write
 * transaction, if the file is still missing under the lock (a blob put
 * since the walk keeps its row). With dry_run it only counts. */
static int drop_rows(struct db *db, const struct walk *w, int dry_run,
                     long *dropped)
{
	size_t i = 0, j, batches = 0;
	int err = 0;

	while (i < w->n && !err) {
		if (w->rows[i].seen) {
			i++;
			continue;
		}
		if (batches++ && !dry_run)
			db_pause();
		err = dry_run ? 0 : db_begin(db);
		for (j = 0; i < w->n && j < BATCH && !err; i++) {
			if (w->rows[i].seen)
				continue;
			j++;
			if (blob_exists(w->data_dir, w->rows[i].sha256))
				continue;
			(*dropped)++;
			if (!dry_run)
				err = db_blob_delete(db, w->rows[i].sha256);
		}
		if (dry_run)
			continue;
		if (!err)
			err = db_commit(db);
		if (err)
			db_rollback(db);
	}
	return err;
}

int gc_reconcile(struct db *db, const char *data_dir, int dry_run, long *added,
                 long *dropped)
{
	struct walk w = {.data_dir = data_dir};
	char top[PATH_MAX];
	int err;

	*added = *dropped = 0;
	/* the inventory as it is now, then the walk, without a lock: on a
	 * big store the walk takes longer than a worker waits for one */
	err = db_blob_each(db, collect, &w);
	if (!err)
		err = w.err;
	if (err)
		goto out;
	if (w.n) /* (qsort wants an array, even of none) */
		qsort(w.rows, w.n, sizeof(*w.rows), by_sha);
	snprintf(top, sizeof(top), "%s/blobs/sha256", data_dir);
	err = each_entry(&w, top, walk_top);
	if (!err)
		err = w.err;
	if (err)
		goto out;
	if (dry_run)
		*added = (long)w.nadds;
	else
		err = add_rows(db, &w, added);
	if (!err)
		err = drop_rows(db, &w, dry_run, dropped);
out:
	free(w.rows);
	free(w.adds);
	return err;
}

int gc_after_commit(struct db *db, const char *data_dir,
                    const struct gc_opts *o, struct gc_report *total)
{
	struct gc_opts try = *o;
	struct gc_report r;
	int err = 0;

	try.wait = 0;
	memset(total, 0, sizeof(*total));
	if (!lru_take_added())
		return 0;
	/* a blob committed meanwhile may push it over again: a few rounds */
	for (int round = 0; round < 3; round++) {
		if (!gc_due(data_dir, o->max_size, o->min_free))
			break;
		err = gc_run(db, data_dir, &try, &r);
		if (err == EWOULDBLOCK) {
			lru_added(0); /* look again after the next request */
			return err;
		}
		if (err)
			return err;
		if (!round)
			*total = r;
		else {
			total->evicted += r.evicted;
			total->evicted_bytes += r.evicted_bytes;
			total->bytes_after = r.bytes_after;
			total->count_after = r.count_after;
		}
		if (r.evicted == 0)
			break;
	}
	return 0;
}

/* Whether DATA/lru.shm exists (a dry run must not make one). */
static int access_lru(const char *data_dir)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/lru.shm", data_dir);
	return access(path, F_OK) == 0;
}

/* Prints bytes against a limit: " (95.0% of max_size)" or nothing. */
static void against(FILE *out, long long bytes, long long max_size)
{
	if (max_size > 0)
		fprintf(out, " (%.1f%% of max_size %lld)",
		        100.0 * (double)bytes / (double)max_size, max_size);
	else
		fprintf(out, " (max_size 0: no limit)");
}

int gc_command(struct db *db, const struct conf *c, int dry_run, FILE *out)
{
	struct gc_opts o = {.max_size = c->max_size,
	                    .min_free = c->min_free,
	                    .grace = c->gc_grace,
	                    .dry_run = dry_run,
	                    .wait = 1,
	                    .list = out};
	struct gc_report r;
	long added = 0, dropped = 0;
	int err;

	/* the workers' use times, if they keep any */
	if (!dry_run || access_lru(c->data_dir))
		lru_open(c->data_dir);
	err = gc_reconcile(db, c->data_dir, dry_run, &added, &dropped);
	if (err) {
		log_error(err, c->data_dir, "gc: reconciling the inventory");
		return err;
	}
	fprintf(out,
	        "inventory: %ld %s (blobs not in it), %ld %s (file "
	        "gone)\n",
	        added, dry_run ? "to add" : "added", dropped,
	        dry_run ? "to drop" : "dropped");
	err = gc_run(db, c->data_dir, &o, &r);
	if (err) {
		log_error(err, c->data_dir, "gc");
		return err;
	}
	fprintf(out, "before: %lld bytes in %ld blobs", r.bytes_before,
	        r.count_before);
	against(out, r.bytes_before, c->max_size);
	if (r.fs_size > 0)
		fprintf(out,
		        "; %.1f%% of the file system free (min_free "
		        "%ld%%)",
		        100.0 * (double)r.fs_free_before / (double)r.fs_size,
		        c->min_free);
	fprintf(out, "\n%s %ld blobs, %lld bytes\n",
	        dry_run ? "would evict" : "evicted", r.evicted,
	        r.evicted_bytes);
	if (r.kept)
		fprintf(out,
		        "kept %ld candidates (in use, fresh pages, "
		        "manifests)\n",
		        r.kept);
	fprintf(out, "%s: %lld bytes in %ld blobs",
	        dry_run ? "after (would be)" : "after", r.bytes_after,
	        r.count_after);
	against(out, r.bytes_after, c->max_size);
	fprintf(out, "\n");
	return 0;
}

void gc_collect_replaced(struct db *db, const char *data_dir, long grace)
{
	char due[REPLACED_MAX][65], path[PATH_MAX];
	size_t n = 0;
	long refs;
	int rc;

	if (db_garbage_due(db, (long long)time(NULL) - grace,
			   due, REPLACED_MAX, &n) || n == 0)
		return;
	for (size_t i = 0; i < n; i++) {
		/* the note, the check and the unlink under one write lock:
		 * an upload of the same bytes takes the note first (and the
		 * blob stays), or finds the blob gone and stores it again */
		if (db_begin(db))
			return;
		rc = db_garbage_take(db, due[i]);
		/* a later refresh may have made the same bytes again */
		if (!rc && db_refs(db, due[i], &refs) == 0 && refs == 0 &&
		    blob_path(data_dir, due[i], path,
			      sizeof(path)) == 0) {
			/* (and its .gz copy: storage/blob.h) */
			rc = blob_remove(data_dir, due[i]);
			if (rc && rc != ENOENT)
				log_warn(rc, path, "deleting a replaced blob");
			else
				db_blob_delete(db, due[i]);
		}
		if (db_commit(db))
			db_rollback(db);
	}
}
