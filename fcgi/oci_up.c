#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "common/log.h"
#include "common/url.h"
#include "fcgi/oci_up.h"

/* The scope under which a registry's challenge is remembered: "-" when it
 * wants no token, else the WWW-Authenticate value. */
#define CHALLENGE_SCOPE ""
#define CHALLENGE_TTL   3600 /* seconds */
#define NO_AUTH         "-"
#define TOKEN_MAX_BODY  (64 * 1024)

static int docker_hub(const char *upstream)
{
	char host[256];

	if (url_host(upstream, host, sizeof(host)))
		return 0;
	return !strcmp(host, "registry-1.docker.io") ||
	       !strcmp(host, "docker.io") || !strcmp(host, "index.docker.io");
}

int oci_up_open(struct worker *w, int ri, const char *name, struct oci_up *u)
{
	const struct conf_registry *reg = &w->conf->registry[ri];
	char token[OCI_AUTH_MAX_TOKEN];
	long long until;
	int library;
	size_t n;

	memset(u, 0, sizeof(*u));
	u->reg = reg;
	library = reg->library_prefix == CONF_LIBRARY_YES ||
	          (reg->library_prefix == CONF_LIBRARY_AUTO &&
	           docker_hub(reg->upstream));
	n = (size_t)snprintf(u->name, sizeof(u->name), "%s%s",
	                     library && !strchr(name, '/') ? "library/" : "",
	                     name);
	if (n >= sizeof(u->name) || n > OCI_MAX_NAME)
		return ENAMETOOLONG;
	snprintf(u->scope, sizeof(u->scope), "repository:%s:pull", u->name);
	worker_fetch_opts(w->conf, -1, &u->o);
	u->o.trust_base = reg->upstream;
	u->o.trusted = reg->trusted_hosts;
	u->o.max_body = OCI_UP_MAX_MANIFEST;
	u->o.auth = u->auth;
	if (db_oci_token_get(w->db, reg->name, u->scope, token, sizeof(token),
	                     &until) == 0 &&
	    until > time(NULL))
		snprintf(u->auth, sizeof(u->auth), "Bearer %s", token);
	return 0;
}

int oci_up_url(const struct oci_up *u, const char *what, char *out, size_t len)
{
	size_t n = (size_t)snprintf(out, len, "%sv2/%s/%s", u->reg->upstream,
	                            u->name, what);

	return n < len ? 0 : ENAMETOOLONG;
}

/* Appends s to out, percent-encoded for a query. */
static void query_escape(struct buf *out, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";

	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		    (ch >= '0' && ch <= '9') || strchr("-._~", ch))
			buf_add(out, s, 1);
		else
			buf_addf(out, "%%%c%c", hex[ch >> 4], hex[ch & 15]);
	}
}

/* Writes "Basic base64(user:password)" for the registry's credentials to
 * out; "" when it has none. Returns 0, or an errno with a reason. */
static int basic_auth(const struct conf_registry *reg, char *out, size_t len,
                      char *err, size_t errlen)
{
	char pw[1024], pair[1400];
	unsigned char b64[2000];
	ssize_t n;
	int fd, k;

	out[0] = '\0';
	if (!reg->username || !*reg->username || !reg->password_file ||
	    !*reg->password_file)
		return 0;
	fd = open(reg->password_file, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(err, errlen, "%s: %s", reg->password_file,
		         strerror(errno));
		return EACCES;
	}
	n = read(fd, pw, sizeof(pw) - 1);
	close(fd);
	if (n < 0) {
		snprintf(err, errlen, "%s: %s", reg->password_file,
		         strerror(errno));
		return EACCES;
	}
	pw[n] = '\0';
	pw[strcspn(pw, "\r\n")] = '\0';
	k = snprintf(pair, sizeof(pair), "%s:%s", reg->username, pw);
	if (k < 0 || (size_t)k >= sizeof(pair) ||
	    4 * ((size_t)k + 2) / 3 + 8 >= len) {
		snprintf(err, errlen, "%s: credentials too long",
		         reg->password_file);
		return ENAMETOOLONG;
	}
	EVP_EncodeBlock(b64, (const unsigned char *)pair, k);
	snprintf(out, len, "Basic %s", b64);
	return 0;
}

/* Asks the challenge's realm for a token for u's scope, under the lock
 * every worker takes for that, unless another worker has just stored one
 * other than the refused one (failed, "" none). Returns 0 with u->auth
 * set, or an errno with a reason. */
static int login(struct worker *w, struct oci_up *u, const char *challenge,
                 const char *failed, char *err, size_t errlen)
{
	const struct conf_registry *reg = u->reg;
	char lock[PATH_MAX], basic[2100];
	char token[OCI_AUTH_MAX_TOKEN];
	struct oci_challenge ch;
	struct fetch_opts o;
	struct fetch_page r;
	struct oci_token t;
	struct buf url;
	long long until, now;
	int fd, rc;

	rc = basic_auth(reg, basic, sizeof(basic), err, errlen);
	if (rc)
		return rc;
	rc = oci_challenge_parse(challenge, &ch);
	if (rc == ENOENT && *basic) {
		/* a registry that takes Basic credentials as they are */
		snprintf(u->auth, sizeof(u->auth), "%s", basic);
		return 0;
	}
	if (rc) {
		snprintf(err, errlen, "%s: cannot answer the challenge %.200s",
		         reg->name, challenge);
		return EACCES;
	}
	snprintf(lock, sizeof(lock), "%s/oci-token.lock", w->conf->data_dir);
	fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0 || flock(fd, LOCK_EX) < 0) {
		rc = errno;
		snprintf(err, errlen, "%s: %s", lock, strerror(rc));
		if (fd >= 0)
			close(fd);
		return rc;
	}
	now = time(NULL);
	if (db_oci_token_get(w->db, reg->name, u->scope, token, sizeof(token),
	                     &until) == 0 &&
	    until > now && strcmp(token, failed) != 0) {
		snprintf(u->auth, sizeof(u->auth), "Bearer %s", token);
		close(fd);
		return 0;
	}
	buf_init(&url, 8192);
	buf_addf(&url, "%s%cservice=", ch.realm,
	         strchr(ch.realm, '?') ? '&' : '?');
	query_escape(&url, ch.service);
	buf_addf(&url, "&scope=");
	query_escape(&url, u->scope);
	worker_fetch_opts(w->conf, -1, &o);
	o.trust_base = ch.realm;
	o.max_body = TOKEN_MAX_BODY;
	o.auth = *basic ? basic : NULL;
	rc = fetch_page(&o, buf_str(&url), "application/json", NULL, NULL, &r,
	                err, errlen);
	if (!rc && r.status != 200) {
		snprintf(err, errlen, "%s: token service answered %ld",
		         ch.realm, r.status);
		rc = r.status == 401 || r.status == 403 ? EACCES : EPROTO;
	}
	if (!rc && oci_token_parse(r.body.data, r.body.len, &t, err, errlen))
		rc = EPROTO;
	if (!rc) {
		long margin = t.expires_in > 20 ? 10 : t.expires_in / 2;

		db_oci_token_put(w->db, reg->name, u->scope, t.token,
		                 now + t.expires_in - margin);
		snprintf(u->auth, sizeof(u->auth), "Bearer %s", t.token);
		log_info("%s: token for %s, %ld s", reg->name, u->scope,
		         t.expires_in);
	}
	buf_free(&r.body);
	buf_free(&url);
	close(fd); /* lets go of the lock */
	return rc;
}

static void remember_challenge(struct worker *w, const struct oci_up *u,
                               const char *value)
{
	db_oci_token_put(w->db, u->reg->name, CHALLENGE_SCOPE, value,
	                 (long long)time(NULL) + CHALLENGE_TTL);
}

int oci_up_page(struct worker *w, struct oci_up *u, const char *url,
                const char *accept, const char *etag, int head,
                struct fetch_page *r, char *err, size_t errlen)
{
	char failed[OCI_AUTH_MAX_TOKEN + 16], why[512];
	int rc;

	for (int attempt = 0;; attempt++) {
		rc = head ? fetch_page_head(&u->o, url, accept, r, err, errlen)
		          : fetch_page(&u->o, url, accept, etag, NULL, r, err,
		                       errlen);
		if (rc || r->status != 401 || attempt > 0)
			return rc;
		if (!*r->authenticate)
			return 0;
		remember_challenge(w, u, r->authenticate);
		snprintf(failed, sizeof(failed), "%s",
		         strncmp(u->auth, "Bearer ", 7) ? "" : u->auth + 7);
		if (*failed)
			db_oci_token_delete(w->db, u->reg->name, u->scope);
		if (login(w, u, r->authenticate, failed, why, sizeof(why))) {
			log_warn(0, url, "%s", why);
			return 0; /* the 401 stands */
		}
		buf_free(&r->body);
	}
}

int oci_up_ready(struct worker *w, struct oci_up *u, const char *url,
                 int forget, char *err, size_t errlen)
{
	char known[OCI_AUTH_MAX_TOKEN];
	struct fetch_page r;
	long long until;
	int rc;

	if (forget && *u->auth) {
		db_oci_token_delete(w->db, u->reg->name, u->scope);
		u->auth[0] = '\0';
	}
	if (*u->auth)
		return 0;
	if (!forget &&
	    db_oci_token_get(w->db, u->reg->name, CHALLENGE_SCOPE, known,
	                     sizeof(known), &until) == 0 &&
	    until > time(NULL)) {
		if (!strcmp(known, NO_AUTH) ||
		    login(w, u, known, "", err, errlen) == 0)
			return 0;
		/* its token service failed: ask again whether it wants one */
	}
	/* nobody knows yet: a HEAD (it costs no pull) says, and on a 401
	 * oci_up_page() does the dance */
	rc = oci_up_page(w, u, url, "*/*", NULL, 1, &r, err, errlen);
	if (!rc && r.status != 401 && !*u->auth)
		remember_challenge(w, u, NO_AUTH);
	if (!rc && r.status == 401) {
		snprintf(err, errlen, "%s: upstream refuses access", url);
		rc = EACCES;
	}
	buf_free(&r.body);
	return rc;
}
