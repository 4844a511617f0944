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
#include <time.h>
#include <unistd.h>

#include "common/gunzip.h"
#include "common/hash/sha256.h"
#include "common/names.h"
#include "storage/blob.h"
#include "storage/flight.h"
#include "storage/fsck.h"

struct ctx {
	struct db *db;
	const char *data_dir;
	int repair;
	long grace;
	FILE *out;
	struct fsck_report *r;
	char (*names)[65];   /* the sound blobs seen, for references */
	size_t nnames, cap;
	int scrub;           /* a scrub: no reference check to remember for,
	                        and a blob gone meanwhile (evicted) is fine */
};

/* Keeps the name of a sound blob for the reference check. */
static void remember(struct ctx *c, const char *name)
{
	if (c->nnames == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 1024;
		char (*grown)[65] = realloc(c->names, cap * sizeof(*grown));

		if (!grown)
			return;
		c->names = grown;
		c->cap = cap;
	}
	snprintf(c->names[c->nnames++], 65, "%s", name);
}

static void check_reference(const char *sha, void *vctx)
{
	struct ctx *c = vctx;
	char path[PATH_MAX];
	struct stat st;

	if (blob_path(c->data_dir, sha, path, sizeof(path)) ||
	    stat(path, &st) < 0 || time(NULL) - st.st_mtime <= c->grace)
		return;
	c->r->unreferenced++;
	fprintf(c->out, "unreferenced: %s\n", path);
	if (c->repair && blob_remove(c->data_dir, sha) == 0) {
		db_blob_delete(c->db, sha);
		c->r->repaired++;
		fprintf(c->out, "repaired: removed %s\n", path);
	}
}

/* Hashes a file. Returns 0 or an errno. */
static int hash_file(const char *path, char hex[65])
{
	struct sha256 h;
	char *chunk;
	ssize_t n;
	int fd, err = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno;
	chunk = malloc(1 << 20);
	if (!chunk || sha256_init(&h)) {
		free(chunk);
		close(fd);
		return ENOMEM;
	}
	while ((n = read(fd, chunk, 1 << 20)) > 0)
		sha256_update(&h, chunk, (size_t)n);
	if (n < 0)
		err = errno;
	sha256_final(&h, hex);
	free(chunk);
	close(fd);
	return err;
}

/* Moves a bad file to DATA/quarantine/. */
static void quarantine(struct ctx *c, const char *path, const char *name)
{
	char dir[PATH_MAX], dest[PATH_MAX];

	snprintf(dir, sizeof(dir), "%s/quarantine", c->data_dir);
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return;
	if ((size_t)snprintf(dest, sizeof(dest), "%s/%s.%ld", dir, name,
			     (long)time(NULL)) >= sizeof(dest))
		return;
	if (rename(path, dest) == 0) {
		/* its .gz copy, made from what it held, goes too */
		if (blob_gz_path(c->data_dir, name, dir, sizeof(dir)) == 0)
			unlink(dir);
		db_blob_delete(c->db, name);
		c->r->repaired++;
		fprintf(c->out, "repaired: moved %s to %s\n", path, dest);
	}
}

static int hash_sink(void *arg, const uint8_t *d, size_t n)
{
	sha256_update(arg, d, n);
	return 0;
}

/* Hashes what a gzip file inflates to. Returns 0, or an errno with the
 * reason in why. */
static int hash_gz(const char *path, char hex[65], char *why, size_t whylen)
{
	struct gunzip g;
	struct sha256 h;
	uint8_t *chunk;
	ssize_t n;
	int fd, err;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(why, whylen, "%s", strerror(errno));
		return errno;
	}
	chunk = malloc(1 << 16);
	if (!chunk || sha256_init(&h) || gunzip_init(&g, UINT64_MAX)) {
		free(chunk);
		close(fd);
		snprintf(why, whylen, "out of memory");
		return ENOMEM;
	}
	err = 0;
	while (!err && (n = read(fd, chunk, 1 << 16)) > 0)
		err = gunzip_feed(&g, chunk, (size_t)n, hash_sink, &h, why,
				  whylen);
	if (!err && n < 0) {
		err = errno;
		snprintf(why, whylen, "%s", strerror(err));
	}
	if (!err)
		err = gunzip_finish(&g, why, whylen);
	gunzip_free(&g);
	sha256_final(&h, hex);
	free(chunk);
	close(fd);
	return err;
}

/* A page rendering's gzip'd copy, <hex>.gz (storage/blob.h): it must sit
 * beside its blob and inflate to the blob's bytes. A bad one is deleted on
 * repair (it is made again from the blob at the next refresh). */
static void check_copy(struct ctx *c, const char *path, const char *sha)
{
	char hex[65], why[256] = "";

	c->r->copies++;
	if (!blob_exists(c->data_dir, sha)) {
		/* (blob_remove takes the copy first: only a copy made while
		 * its blob was evicted is left like this) */
		c->r->unreferenced++;
		fprintf(c->out, "gzip'd copy without its blob: %s\n", path);
	} else if (hash_gz(path, hex, why, sizeof(why))) {
		c->r->bad_blobs++;
		fprintf(c->out, "corrupt: %s: %s\n", path, why);
	} else if (strcmp(hex, sha) != 0) {
		c->r->bad_blobs++;
		fprintf(c->out, "corrupt: %s inflates to %s\n", path, hex);
	} else {
		return;
	}
	if (c->repair && unlink(path) == 0) {
		c->r->repaired++;
		fprintf(c->out, "repaired: removed %s\n", path);
	}
}

static void check_blob(struct ctx *c, const char *path, const char *a,
		       const char *b, const char *name)
{
	char hex[65];
	size_t len = strlen(name);
	int err;

	if (len == 64 + 3 && strcmp(name + 64, ".gz") == 0 &&
	    strncmp(name, a, 2) == 0 && strncmp(name + 2, b, 2) == 0) {
		memcpy(hex, name, 64);
		hex[64] = '\0';
		if (names_is_sha256(hex)) {
			check_copy(c, path, hex);
			return;
		}
	}
	c->r->blobs++;
	if (!names_is_sha256(name) || strncmp(name, a, 2) != 0 ||
	    strncmp(name + 2, b, 2) != 0) {
		c->r->bad_blobs++;
		fprintf(c->out, "misplaced: %s\n", path);
		if (c->repair)
			quarantine(c, path, name);
		return;
	}
	err = hash_file(path, hex);
	if (err == ENOENT && c->scrub)
		return; /* evicted since the directory was read */
	if (err) {
		c->r->bad_blobs++;
		fprintf(c->out, "unreadable: %s: %s\n", path, strerror(err));
		return;
	}
	if (strcmp(hex, name) != 0) {
		c->r->bad_blobs++;
		fprintf(c->out, "corrupt: %s hashes to %s\n", path, hex);
		if (c->repair)
			quarantine(c, path, name);
		return;
	}
	if (!c->scrub)
		remember(c, name);
}

/* Lists the entries of a directory other than . and ..; calls fn. */
static void each_entry(const char *dir,
		       void (*fn)(struct ctx *, const char *, const char *,
				  void *),
		       struct ctx *c, void *arg)
{
	struct dirent *e;
	char path[PATH_MAX];
	DIR *d = opendir(dir);

	if (!d)
		return;
	while ((e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir,
				     e->d_name) >= sizeof(path))
			continue;
		fn(c, path, e->d_name, arg);
	}
	closedir(d);
}

static void level3(struct ctx *c, const char *path, const char *name,
		   void *arg)
{
	const char **ab = arg;

	check_blob(c, path, ab[0], ab[1], name);
}

static void level2(struct ctx *c, const char *path, const char *name,
		   void *arg)
{
	const char *ab[2] = {arg, name};

	each_entry(path, level3, c, ab);
}

static void level1(struct ctx *c, const char *path, const char *name,
		   void *arg)
{
	(void)arg;
	each_entry(path, level2, c, (void *)name);
}

/* Whether page row p names a rendering missing from the store. */
static int page_dangles(const struct ctx *c, const struct db_page *p)
{
	return p->status == 200 && (!blob_exists(c->data_dir, p->json_sha) ||
				    !blob_exists(c->data_dir, p->html_sha));
}

/* Whether the page still dangles under the write lock, which collectors
 * unlink under: the rows read before may be from before an eviction
 * whose transaction had unlinked the rendering but not yet committed
 * (the page row goes with it). */
static int page_dangles_locked(struct ctx *c, const char *index,
			       const char *project)
{
	struct db_page now;
	int dangles = 1;

	if (db_begin(c->db))
		return 1;
	if (db_page_get(c->db, index, project, &now) != 0 ||
	    !page_dangles(c, &now))
		dangles = 0;
	db_rollback(c->db);
	return dangles;
}

static void check_page(const char *index, const char *project,
		       const struct db_page *p, void *vctx)
{
	struct ctx *c = vctx;

	c->r->pages++;
	if (!page_dangles(c, p) || !page_dangles_locked(c, index, project))
		return;
	c->r->dangling_pages++;
	fprintf(c->out, "dangling page: [%s] %s: rendering missing\n", index,
		*project ? project : "(project list)");
	if (c->repair && db_page_delete(c->db, index, project) == 0) {
		c->r->repaired++;
		fprintf(c->out, "repaired: forgot page [%s] %s\n", index,
			project);
	}
}

/* Whether the row of sha256 is still there without its blob under the
 * write lock (an eviction drops both in one transaction). */
static int blob_row_lost_locked(struct ctx *c, const char *sha256)
{
	int lost = 1;

	if (db_begin(c->db))
		return 1;
	if (db_blob_has(c->db, sha256) != 0 ||
	    blob_exists(c->data_dir, sha256))
		lost = 0;
	db_rollback(c->db);
	return lost;
}

/* An inventory row must name a blob in the store (eviction drops the
 * row and the file in one transaction, a commit writes the file before
 * the row). */
static void check_inventory(const char *sha256, long long size, void *vctx)
{
	struct ctx *c = vctx;

	(void)size;
	if (blob_exists(c->data_dir, sha256) ||
	    !blob_row_lost_locked(c, sha256))
		return;
	c->r->lost_rows++;
	fprintf(c->out, "inventory row without its blob: %s\n", sha256);
	if (c->repair && db_blob_delete(c->db, sha256) == 0) {
		c->r->repaired++;
		fprintf(c->out, "repaired: dropped inventory row %s\n",
			sha256);
	}
}

/* An uploaded file has no upstream to come back from: a missing blob is
 * a loss to report (restore it from a backup, or upload it again on a
 * volatile index). */
static void check_upload(const char *index, const struct db_hosted *h,
			 void *vctx)
{
	struct ctx *c = vctx;

	if (!blob_exists(c->data_dir, h->sha256)) {
		c->r->lost_uploads++;
		fprintf(c->out, "lost upload: [%s] %s: not in the store\n",
			index, h->filename);
	} else if (*h->meta_sha && !blob_exists(c->data_dir, h->meta_sha)) {
		c->r->lost_uploads++;
		fprintf(c->out, "lost upload: [%s] %s: its metadata is not "
			"in the store\n", index, h->filename);
	}
}

static void check_flight(const char *key, const struct db_flight *row,
			 void *vctx)
{
	struct ctx *c = vctx;
	const char *tmp = row->tmp;

	if (flight_locked(tmp) != FLIGHT_FREE)
		return;
	c->r->dead_flights++;
	fprintf(c->out, "dead claim: %s (%s)\n", key, tmp);
	if (c->repair && flight_reap(c->db, key, tmp) == 0) {
		c->r->repaired++;
		fprintf(c->out, "repaired: dropped claim %s\n", key);
	}
}

static void check_temp(struct ctx *c, const char *path, const char *name,
		       void *arg)
{
	size_t len = strlen(name);
	struct stat st;
	int fd;

	(void)arg;
	if (len < 6 || strcmp(name + len - 5, ".part") != 0)
		return;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	/* as the sweep does: a claimant locks its file just after making
	 * it, so only an unlocked file older than a minute is stray */
	if (fstat(fd, &st) == 0 && time(NULL) - st.st_mtime > 60 &&
	    flock(fd, LOCK_EX | LOCK_NB) == 0) {
		c->r->stray_temps++;
		fprintf(c->out, "stray temp file: %s\n", path);
		if (c->repair && unlink(path) == 0) {
			c->r->repaired++;
			fprintf(c->out, "repaired: removed %s\n", path);
		}
	}
	close(fd);
}

int fsck_run(struct db *db, const char *data_dir, int repair, long grace,
	     FILE *out, struct fsck_report *r)
{
	struct ctx c = {.db = db, .data_dir = data_dir, .repair = repair,
			.grace = grace, .out = out, .r = r};
	char dir[PATH_MAX], msg[512];
	int err;

	memset(r, 0, sizeof(*r));
	fprintf(out, "checking %s\n", data_dir);
	if (db_check(db, msg, sizeof(msg))) {
		r->db_bad = 1;
		fprintf(out, "database: %s\n", msg);
	}
	snprintf(dir, sizeof(dir), "%s/blobs/sha256", data_dir);
	each_entry(dir, level1, &c, NULL);
	err = db_page_each(db, check_page, &c);
	if (!err)
		err = db_unreferenced(db, c.names, c.nnames, check_reference,
				      &c);
	free(c.names);
	if (!err)
		err = db_flight_each(db, check_flight, &c);
	if (!err)
		err = db_blob_each(db, check_inventory, &c);
	if (!err)
		err = db_hosted_each(db, check_upload, &c);
	snprintf(dir, sizeof(dir), "%s/tmp", data_dir);
	each_entry(dir, check_temp, &c, NULL);
	fprintf(out, "%ld blobs, %ld bad, %ld unreferenced; %ld pages, %ld "
		"dangling; %ld dead claims; %ld stray temp files; database %s; "
		"%ld repaired; %ld inventory rows without blob; %ld lost "
		"uploads; %ld gzip'd copies\n",
		r->blobs, r->bad_blobs, r->unreferenced, r->pages,
		r->dangling_pages, r->dead_flights, r->stray_temps,
		r->db_bad ? "BAD" : "ok", r->repaired, r->lost_rows,
		r->lost_uploads, r->copies);
	return err;
}

int fsck_clean(const struct fsck_report *r)
{
	return !r->bad_blobs && !r->dangling_pages && !r->unreferenced &&
	       !r->dead_flights && !r->stray_temps && !r->db_bad &&
	       !r->lost_rows && !r->lost_uploads;
}

int fsck_all_repaired(const struct fsck_report *r)
{
	long found = r->bad_blobs + r->dangling_pages + r->unreferenced +
		     r->dead_flights + r->stray_temps + r->lost_rows +
		     r->lost_uploads;

	return !r->db_bad && !r->lost_uploads && r->repaired >= found;
}

/* ---------------------------------------------------------------- scrub */

#define SCRUB_CURSOR "scrub_cursor"
#define SCRUB_COUNTS "scrub_counts"
#define SCRUB_SAVE_EVERY 256 /* files between two saves of the cursor */

int fsck_scrub_read(struct db *db, struct fsck_scrub_state *s)
{
	char counts[256];
	int rc;

	memset(s, 0, sizeof(*s));
	rc = db_state_get(db, SCRUB_CURSOR, s->cursor, sizeof(s->cursor));
	if (rc && rc != ENOENT)
		return rc;
	rc = db_state_get(db, SCRUB_COUNTS, counts, sizeof(counts));
	if (rc == ENOENT)
		return 0;
	if (rc)
		return rc;
	if (sscanf(counts, "%lld %lld %lld %lld %lld", &s->blobs, &s->bytes,
		   &s->quarantined, &s->passes, &s->last_run) != 5)
		memset(s, 0, sizeof(*s)); /* unreadable: start again */
	return 0;
}

static int scrub_save(struct db *db, const struct fsck_scrub_state *s)
{
	char counts[256];
	int rc;

	snprintf(counts, sizeof(counts), "%lld %lld %lld %lld %lld", s->blobs,
		 s->bytes, s->quarantined, s->passes, s->last_run);
	rc = db_state_put(db, SCRUB_CURSOR, s->cursor);
	return rc ? rc : db_state_put(db, SCRUB_COUNTS, counts);
}

static long long now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static int skip_dot(const struct dirent *e)
{
	return strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

/* The entries of dir other than . and .., sorted by byte order; *n of
 * them, each and the list the caller's to free (free_list). */
static struct dirent **list_sorted(const char *dir, int *n)
{
	struct dirent **list = NULL;

	*n = scandir(dir, &list, skip_dot, by_name);
	if (*n < 0) {
		*n = 0;
		return NULL;
	}
	return list;
}

static void free_list(struct dirent **list, int n)
{
	for (int i = 0; i < n; i++)
		free(list[i]);
	free(list);
}

struct scrub {
	struct ctx c;
	struct fsck_scrub_state *s;
	const char *from;   /* the cursor the run started after */
	long long deadline; /* now_ms() to stop at; 0: none */
	long long max_bytes; /* 0: none */
	long long bytes;    /* read this run */
	long files;         /* looked at this run */
	int stopped;        /* the budget ran out */
};

/* Looks at one file of the store, ab/cd/name, unless the budget is spent
 * (then sets stopped). */
static void scrub_one(struct scrub *x, const char *a, const char *b,
		      const char *name)
{
	char key[sizeof(x->s->cursor)], path[PATH_MAX];
	long bad = x->c.r->bad_blobs, moved = x->c.r->repaired;
	struct stat st;

	if ((size_t)snprintf(key, sizeof(key), "%s/%s/%s", a, b, name) >=
	    sizeof(key) || strcmp(key, x->from) <= 0)
		return;
	if (x->files > 0 &&
	    ((x->deadline && now_ms() >= x->deadline) ||
	     (x->max_bytes && x->bytes >= x->max_bytes))) {
		x->stopped = 1;
		return;
	}
	if ((size_t)snprintf(path, sizeof(path), "%s/blobs/sha256/%s",
			     x->c.data_dir, key) >= sizeof(path))
		return;
	if (lstat(path, &st) < 0 || !S_ISREG(st.st_mode))
		return;
	check_blob(&x->c, path, a, b, name);
	x->files++;
	x->bytes += st.st_size;
	x->s->blobs++;
	x->s->bytes += st.st_size;
	if (x->c.r->bad_blobs > bad && x->c.r->repaired > moved)
		x->s->quarantined += x->c.r->repaired - moved;
	snprintf(x->s->cursor, sizeof(x->s->cursor), "%s", key);
	if (x->files % SCRUB_SAVE_EVERY == 0)
		scrub_save(x->c.db, x->s);
}

static void scrub_walk(struct scrub *x)
{
	char dir[PATH_MAX];
	struct dirent **l1, **l2, **l3;
	int n1, n2, n3;

	snprintf(dir, sizeof(dir), "%s/blobs/sha256", x->c.data_dir);
	l1 = list_sorted(dir, &n1);
	for (int i = 0; i < n1 && !x->stopped; i++) {
		const char *a = l1[i]->d_name;

		/* whole directories before the cursor's are skipped */
		if (*x->from && strncmp(a, x->from, strlen(a)) < 0)
			continue;
		snprintf(dir, sizeof(dir), "%s/blobs/sha256/%s",
			 x->c.data_dir, a);
		l2 = list_sorted(dir, &n2);
		for (int j = 0; j < n2 && !x->stopped; j++) {
			const char *b = l2[j]->d_name;

			snprintf(dir, sizeof(dir), "%s/blobs/sha256/%s/%s",
				 x->c.data_dir, a, b);
			l3 = list_sorted(dir, &n3);
			for (int k = 0; k < n3 && !x->stopped; k++)
				scrub_one(x, a, b, l3[k]->d_name);
			free_list(l3, n3);
		}
		free_list(l2, n2);
	}
	free_list(l1, n1);
}

int fsck_scrub(struct db *db, const char *data_dir, long budget_s,
	       long long max_bytes, FILE *out, struct fsck_report *r,
	       struct fsck_scrub_state *s)
{
	struct scrub x = {.c = {.db = db, .data_dir = data_dir, .repair = 1,
				.out = out, .r = r, .scrub = 1},
			  .s = s, .max_bytes = max_bytes};
	char from[sizeof(s->cursor)];
	long long t0 = now_ms();
	int rc;

	memset(r, 0, sizeof(*r));
	rc = fsck_scrub_read(db, s);
	if (rc)
		return rc;
	snprintf(from, sizeof(from), "%s", s->cursor);
	x.from = from;
	x.deadline = budget_s > 0 ? t0 + budget_s * 1000LL : 0;
	fprintf(out, "scrubbing %s from %s\n", data_dir,
		*from ? from : "the start");
	scrub_walk(&x);
	if (!x.stopped) {
		s->cursor[0] = '\0'; /* the pass is done: the next starts over */
		s->passes++;
	}
	s->last_run = (long long)time(NULL);
	rc = scrub_save(db, s);
	fprintf(out, "scrub: %ld blobs (%lld bytes) in %.1f s, %ld bad, %ld "
		"quarantined; %s\n", x.files, x.bytes,
		(double)(now_ms() - t0) / 1000.0, r->bad_blobs, r->repaired,
		x.stopped ? "stopped at the budget, the next run goes on from "
			    "there" : "the pass is done");
	if (x.stopped)
		fprintf(out, "scrub: cursor %s\n", s->cursor);
	return rc;
}
