/* webhook: signed events queued with the change they report, delivered
 * later in order (webhook.h, docs/webhooks.md). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "common/buf.h"
#include "common/hash/hmac.h"
#include "common/log.h"
#include "storage/db/db_outbox.h"
#include "storage/webhook.h"

#define MAX_SECRET 4096
#define PASS_MAX 64      /* events read per query of a pass */
#define KEEP_DONE 604800 /* delivered and given-up rows kept a week */

/* Whether webhook h takes events of idx. */
static int takes(const struct conf_webhook *h, int registry, const char *idx)
{
	const char *list = registry ? h->registries : h->indexes;

	return !list || conf_list_has(list, idx);
}

int webhook_wanted(const struct conf *c, const char *event)
{
	for (size_t i = 0; i < c->nwebhook; i++)
		if (conf_list_has(c->webhook[i].events, event))
			return 1;
	return 0;
}

int webhook_enqueue(struct db *db, const struct conf *c, const char *event,
                    int registry, const char *idx, const char *project,
                    const char *version, const char *data)
{
	long long now = (long long)time(NULL);
	int err = 0;

	for (size_t i = 0; i < c->nwebhook && !err; i++) {
		const struct conf_webhook *h = &c->webhook[i];

		if (!conf_list_has(h->events, event) ||
		    !takes(h, registry, idx))
			continue;
		err = db_outbox_add(db, h->name, event, idx, project, version,
		                    data, now);
	}
	return err;
}

int webhook_body(struct buf *out, const char *row_body, long long ts,
                 long attempt)
{
	int err = buf_addf(out, "{\"timestamp\":%lld,\"attempt\":%ld", ts,
	                   attempt);

	/* row_body is an object: "{...}", never "{}" (it has an id) */
	if (!err && row_body[0] == '{' && row_body[1] != '}')
		err = buf_adds(out, ",");
	return err ? err : buf_adds(out, row_body + 1);
}

int webhook_sign(const char *secret, const char *body, size_t len,
                 char out[72])
{
	char hex[65];
	int err = hmac_sha256_hex(secret, strlen(secret), body, len, hex);

	out[0] = '\0';
	if (err)
		return err;
	snprintf(out, 72, "sha256=%s", hex);
	return 0;
}

/* Reads the first line of path into out. Returns 0, or an errno with the
 * reason in msg. */
static int read_secret(const char *path, char *out, size_t len, char *msg,
                       size_t msglen)
{
	FILE *f = fopen(path, "re");
	size_t n;

	out[0] = '\0';
	if (!f) {
		int err = errno;

		snprintf(msg, msglen, "secret_file %s: %s", path, strerror(err));
		return err;
	}
	if (!fgets(out, (int)len, f))
		out[0] = '\0';
	fclose(f);
	n = strcspn(out, "\r\n");
	out[n] = '\0';
	if (!n) {
		snprintf(msg, msglen, "secret_file %s: empty first line", path);
		return EINVAL;
	}
	return 0;
}

/* Drops what the receiver answers, up to a limit. */
static size_t drop(char *p, size_t size, size_t n, void *ctx)
{
	size_t *seen = ctx;

	(void)p;
	*seen += size * n;
	return *seen > (1 << 20) ? 0 : size * n;
}

/* POSTs row to hook h. Returns 0 on a 2xx, else an errno with the reason
 * in msg; *status is the HTTP status (0 none). */
static int post(CURL *curl, const struct conf *c,
                const struct conf_webhook *h, const struct db_outbox *row,
                long attempt, int *status, char *msg, size_t msglen,
                char *cls, size_t clslen)
{
	char secret[MAX_SECRET], sig[72], line[160], errbuf[CURL_ERROR_SIZE];
	long long ts = (long long)time(NULL);
	struct curl_slist *hdrs = NULL, *more;
	struct buf body;
	size_t seen = 0;
	long code = 0;
	CURLcode cc;
	int err;

	*status = 0;
	msg[0] = errbuf[0] = '\0';
	buf_init(&body, 2 << 20);
	err = read_secret(h->secret_file, secret, sizeof(secret), msg, msglen);
	err = err ? err : webhook_body(&body, row->body, ts, attempt);
	err = err ? err : webhook_sign(secret, body.data, body.len, sig);
	memset(secret, 0, sizeof(secret));
	if (err) {
		if (!msg[0])
			snprintf(msg, msglen, "%s", strerror(err));
		snprintf(cls, clslen, "cannot read secret_file or sign");
		goto out;
	}
	{
		const char *lines[] = {"Content-Type: application/json",
		                       "Expect:", NULL};

		for (size_t i = 0; lines[i]; i++) {
			more = curl_slist_append(hdrs, lines[i]);
			if (!more)
				goto nomem;
			hdrs = more;
		}
	}
#define HEADER(...)                                                          \
	do {                                                                 \
		snprintf(line, sizeof(line), __VA_ARGS__);                   \
		more = curl_slist_append(hdrs, line);                        \
		if (!more)                                                   \
			goto nomem;                                          \
		hdrs = more;                                                 \
	} while (0)
	HEADER("X-Larder-Event: %s", row->event);
	HEADER("X-Larder-Delivery: %s", row->uuid);
	HEADER("X-Larder-Timestamp: %lld", ts);
	HEADER("X-Larder-Signature-256: %s", sig);
#undef HEADER
	curl_easy_reset(curl);
	curl_easy_setopt(curl, CURLOPT_URL, h->url);
	curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
	/* only the configured URL: a redirect is an answer, not a hop */
	curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, c->connect_timeout);
	curl_easy_setopt(curl, CURLOPT_TIMEOUT,
	                 c->connect_timeout + c->first_byte_timeout);
	curl_easy_setopt(curl, CURLOPT_USERAGENT, "larder/" PACKAGE_VERSION);
	curl_easy_setopt(curl, CURLOPT_POST, 1L);
	curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body.data);
	curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE, (long)body.len);
	curl_easy_setopt(curl, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, drop);
	curl_easy_setopt(curl, CURLOPT_WRITEDATA, &seen);
	cc = curl_easy_perform(curl);
	curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &code);
	curl_easy_setopt(curl, CURLOPT_HTTPHEADER, NULL);
	*status = (int)code;
	if (cc != CURLE_OK && !(cc == CURLE_WRITE_ERROR && code)) {
		snprintf(msg, msglen, "%s",
		         errbuf[0] ? errbuf : curl_easy_strerror(cc));
		snprintf(cls, clslen, "%s", curl_easy_strerror(cc));
		err = EIO;
	} else if (code < 200 || code > 299) {
		snprintf(msg, msglen, "HTTP %ld%s", code,
		         code >= 300 && code < 400 ? " (redirects are not "
		                                     "followed)"
		                                   : "");
		snprintf(cls, clslen, "%s", msg);
		err = EIO;
	}
	goto out;
nomem:
	snprintf(msg, msglen, "out of memory");
	snprintf(cls, clslen, "%s", msg);
	err = ENOMEM;
out:
	curl_slist_free_all(hdrs);
	buf_free(&body);
	return err;
}

/* The wait before try attempts + 1, after attempts failed. */
static long long backoff(const struct conf_webhook *h, long attempts)
{
	long long wait = h->retry_min;

	for (long i = 1; i < attempts && wait < h->retry_max; i++)
		wait *= 2;
	return wait < h->retry_max ? wait : h->retry_max;
}

/* Tries row once and records what came of it: in the outbox (and so on
 * the status page) only the kind of failure, never the receiver's address
 * or the secret's path (curl's own words, and the log, have those).
 * Returns 0 when it was delivered, else an errno with the reason in
 * msg. */
static int try_row(struct db *db, CURL *curl, const struct conf *c,
                   const struct db_outbox *row, char *msg, size_t msglen)
{
	int hook = conf_webhook_find(c, row->hook), status = 0, state, rc;
	long attempts = row->attempts + 1;
	char cls[128] = "";
	long long now, next = 0;

	if (hook < 0) {
		snprintf(msg, msglen, "no [webhook \"%s\"] any more", row->hook);
		db_outbox_tried(db, row->id, DB_OUTBOX_FAILED, attempts, 0,
		                (long long)time(NULL), 0, msg);
		return ENOENT;
	}
	rc = post(curl, c, &c->webhook[hook], row, attempts, &status, msg,
	          msglen, cls, sizeof(cls));
	now = (long long)time(NULL);
	if (!rc) {
		state = DB_OUTBOX_DELIVERED;
	} else {
		next = now + backoff(&c->webhook[hook], attempts);
		state = next > row->created + c->webhook[hook].retry_for
		            ? DB_OUTBOX_FAILED
		            : DB_OUTBOX_PENDING;
		log_warn(0, row->hook, "%s %s of %s: %s%s", row->event,
		         row->uuid, row->idx, msg,
		         state == DB_OUTBOX_FAILED ? "; given up" : "");
	}
	if (db_outbox_tried(db, row->id, state, attempts, next, now, status,
	                    rc ? (cls[0] ? cls : "failed") : ""))
		return rc ? rc : EIO;
	return rc;
}

/* Takes DATA/webhook.lock without waiting. Returns the descriptor, or -1
 * with errno (EWOULDBLOCK: another deliverer has it). */
static int lock_deliverer(const struct conf *c)
{
	char path[PATH_MAX];
	int fd;

	snprintf(path, sizeof(path), "%s/webhook.lock", c->data_dir);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		int err = errno;

		close(fd);
		errno = err;
		return -1;
	}
	return fd;
}

int webhook_deliver(struct db *db, const struct conf *c, size_t *sent,
                    size_t *failed)
{
	struct db_outbox *rows = NULL;
	char msg[256];
	size_t n = 0, ok = 0, bad = 0;
	CURL *curl;
	int fd, err = 0, progress = 1;

	if (sent)
		*sent = 0;
	if (failed)
		*failed = 0;
	fd = lock_deliverer(c);
	if (fd < 0)
		return errno == EWOULDBLOCK ? EAGAIN : errno;
	curl = curl_easy_init();
	if (!curl) {
		close(fd);
		return ENOMEM;
	}
	/* each round delivers the head of every queue that is due; a
	 * delivered head makes the next event of its queue the head */
	while (progress && !err) {
		progress = 0;
		err = db_outbox_due(db, (long long)time(NULL), PASS_MAX, &rows,
		                    &n);
		for (size_t i = 0; i < n && !err; i++) {
			if (try_row(db, curl, c, &rows[i], msg, sizeof(msg))) {
				bad++;
				continue;
			}
			ok++;
			progress = 1;
		}
		db_outbox_free(rows, n);
	}
	if (!err)
		err = db_outbox_prune(db, (long long)time(NULL) - KEEP_DONE);
	curl_easy_cleanup(curl);
	close(fd);
	if (sent)
		*sent = ok;
	if (failed)
		*failed = bad;
	return err;
}

int webhook_ping(struct db *db, const struct conf *c, int hook, char *msg,
                 size_t msglen)
{
	const struct conf_webhook *h = &c->webhook[hook];
	struct db_outbox *rows = NULL;
	long long now = (long long)time(NULL);
	size_t n = 0;
	CURL *curl;
	int fd = -1, err;

	msg[0] = '\0';
	/* the lock, so a deliverer running meanwhile does not send it too */
	for (int i = 0; i < 100 && fd < 0; i++) {
		fd = lock_deliverer(c);
		if (fd < 0 && errno != EWOULDBLOCK)
			break;
		if (fd < 0)
			usleep(100000);
	}
	if (fd < 0) {
		err = errno == EWOULDBLOCK ? EAGAIN : errno;
		snprintf(msg, msglen, "%s/webhook.lock: %s", c->data_dir,
		         err == EAGAIN ? "another deliverer holds it"
		                       : strerror(err));
		return err;
	}
	err = db_outbox_add(db, h->name, "ping", "", "", "",
	                    "{\"zen\":\"larder webhook test\"}", now);
	/* the row just added, tried at once: a ping waits behind no
	 * earlier ping that failed (nothing orders pings) */
	err = err ? err : db_outbox_last(db, &rows, &n);
	if (!err && !n)
		err = ENOENT;
	if (!err) {
		curl = curl_easy_init();
		err = curl ? try_row(db, curl, c, &rows[0], msg, msglen)
		           : ENOMEM;
		if (curl)
			curl_easy_cleanup(curl);
	}
	db_outbox_free(rows, n);
	close(fd);
	if (err && !msg[0])
		snprintf(msg, msglen, "%s", strerror(err));
	return err;
}

int webhook_run(const struct conf *c, volatile sig_atomic_t *stop)
{
	struct db *db = NULL;
	int err;

	if (!c->nwebhook)
		return 0;
	err = db_open(c->data_dir, &db);
	if (err) {
		log_error(err, c->data_dir, "webhook deliverer: database");
		return 1;
	}
	while (!*stop) {
		err = webhook_deliver(db, c, NULL, NULL);
		if (err && err != EAGAIN)
			log_error(err, c->data_dir, "webhook deliverer");
		sleep(1);
	}
	db_close(db);
	return 0;
}
