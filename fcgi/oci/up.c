#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "common/hash/sha256.h"
#include "common/log.h"
#include "common/url.h"
#include "fcgi/oci/up.h"
#include "storage/flight.h"

/* What a registry wants is remembered per registry in oci_tokens, beside
 * its tokens, in a row of its own under the scope CHALLENGE_SCOPE (no
 * token's scope is empty), for CHALLENGE_TTL: the row's value is the
 * WWW-Authenticate challenge of its last 401, or NO_AUTH when it answered
 * without asking for any credentials. */
#define CHALLENGE_SCOPE ""
#define CHALLENGE_TTL   3600 /* seconds */
#define NO_AUTH         "-"
#define TOKEN_MAX_BODY  (64 * 1024)
/* Claims on a token tried before giving up: the second is for a worker
 * whose owner finished (or died) without storing one. */
#define TOKEN_ROUNDS 2
#define BEARER       "Bearer "
/* Room for "Basic " and base64(user:password), and what the Basic value
 * may be (u->auth holds it when a registry takes Basic as it is). */
#define BASIC_MAX    2100
#define PASSWORD_MAX 1024

/* u->auth holds "Bearer " and any token a struct oci_token or the token
 * buffers below (OCI_AUTH_MAX_TOKEN bytes with the NUL) can hold, or a
 * Basic value, whole: nothing is cut short. */
_Static_assert(sizeof(BEARER) - 1 + OCI_AUTH_MAX_TOKEN <= OCI_UP_AUTH_MAX,
               "u->auth too small for a token");
_Static_assert(BASIC_MAX <= OCI_UP_AUTH_MAX, "u->auth too small for Basic");
_Static_assert(sizeof(((struct oci_up *)0)->auth) == OCI_UP_AUTH_MAX,
               "u->auth is OCI_UP_AUTH_MAX bytes");

static int docker_hub(const char *upstream)
{
	char host[256];

	if (url_host(upstream, host, sizeof(host)))
		return 0;
	return !strcmp(host, "registry-1.docker.io") ||
	       !strcmp(host, "docker.io") || !strcmp(host, "index.docker.io");
}

static int plain_http(const char *url)
{
	return strncasecmp(url, "http://", 7) == 0;
}

/* Sets u->auth to "Bearer token" (token shorter than OCI_AUTH_MAX_TOKEN,
 * as every token buffer here is: it fits, see above). */
static void set_bearer(struct oci_up *u, const char *token)
{
	snprintf(u->auth, sizeof(u->auth), BEARER "%s", token);
}

/* Writes the token u carries to out (OCI_AUTH_MAX_TOKEN bytes), "" when it
 * carries none (or Basic credentials). */
static void held_token(const struct oci_up *u, char *out)
{
	const size_t n = sizeof(BEARER) - 1;

	snprintf(out, OCI_AUTH_MAX_TOKEN, "%s",
	         strncmp(u->auth, BEARER, n) ? "" : u->auth + n);
}

/* Sets u->auth from the token the database holds for u's scope when it
 * has not expired and is not failed (the one the registry refused; ""
 * none). Returns 1 when it did, else 0. */
static int stored_token(struct worker *w, struct oci_up *u, const char *failed)
{
	char token[OCI_AUTH_MAX_TOKEN];
	long long until;
	int ok;

	ok = db_oci_token_get(w->db, u->reg->name, u->scope, token,
	                      sizeof(token), &until) == 0 &&
	     until > time(NULL) && *token && strcmp(token, failed) != 0;
	if (ok)
		set_bearer(u, token);
	OPENSSL_cleanse(token, sizeof(token));
	return ok;
}

int oci_up_open(struct worker *w, int ri, const char *name, struct oci_up *u)
{
	const struct conf_registry *reg = &w->conf->registry[ri];
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
	stored_token(w, u, "");
	return 0;
}

int oci_up_url(const struct oci_up *u, const char *what, char *out, size_t len)
{
	size_t n = (size_t)snprintf(out, len, "%sv2/%s/%s", u->reg->upstream,
	                            u->name, what);

	return n < len ? 0 : ENAMETOOLONG;
}

/* Appends s to out, percent-encoded for a query. Returns as buf_add(). */
static int query_escape(struct buf *out, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	int rc = 0;

	for (; *s && !rc; s++) {
		unsigned char ch = (unsigned char)*s;

		if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		    (ch >= '0' && ch <= '9') || strchr("-._~", ch))
			rc = buf_add(out, s, 1);
		else
			rc =
			    buf_addf(out, "%%%c%c", hex[ch >> 4], hex[ch & 15]);
	}
	return rc;
}

/* Reads the first line (without its \n or \r\n) of the password file path
 * into pw, len bytes. Returns 0, or EINVAL with a reason in err: the file
 * cannot be read, its first line is empty, longer than len - 1 bytes, or
 * holds a NUL byte. pw is wiped on failure; on success it is the caller's
 * to wipe. */
static int read_password(const char *path, char *pw, size_t len, char *err,
                         size_t errlen)
{
	size_t got = 0, line;
	ssize_t n;
	int fd, rc = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		rc = errno;
		snprintf(err, errlen, "password_file %s: %s (%d)", path,
		         strerror(rc), rc);
		return EINVAL;
	}
	while (got < len) {
		n = read(fd, pw + got, len - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = errno;
			snprintf(err, errlen, "password_file %s: %s (%d)", path,
			         strerror(rc), rc);
			break;
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	if (rc)
		goto fail;
	for (line = 0; line < got && pw[line] != '\n' && pw[line] != '\r';
	     line++)
		;
	if (line == len) {
		snprintf(err, errlen,
		         "password_file %s: its first line is longer than %zu "
		         "bytes",
		         path, len - 1);
		goto fail;
	}
	if (line == 0) {
		snprintf(err, errlen, "password_file %s is empty", path);
		goto fail;
	}
	if (memchr(pw, '\0', line)) {
		snprintf(err, errlen, "password_file %s: a NUL byte in it",
		         path);
		goto fail;
	}
	pw[line] = '\0';
	return 0;
fail:
	OPENSSL_cleanse(pw, len);
	return EINVAL;
}

/* Writes "Basic base64(user:password)" for the registry's credentials to
 * out (len bytes, the caller's to wipe); "" when it has none. Returns 0,
 * or EINVAL with a reason (the password file is unusable, or the pair is
 * too long). */
static int basic_auth(const struct conf_registry *reg, char *out, size_t len,
                      char *err, size_t errlen)
{
	char pw[PASSWORD_MAX], pair[PASSWORD_MAX + 376];
	unsigned char b64[4 * ((sizeof(pair) + 2) / 3) + 1];
	int k, rc;

	out[0] = '\0';
	if (!reg->username || !*reg->username || !reg->password_file ||
	    !*reg->password_file)
		return 0;
	rc = read_password(reg->password_file, pw, sizeof(pw), err, errlen);
	if (rc)
		return rc;
	k = snprintf(pair, sizeof(pair), "%s:%s", reg->username, pw);
	if (k < 0 || (size_t)k >= sizeof(pair) ||
	    6 + 4 * (((size_t)k + 2) / 3) + 1 > len) {
		snprintf(err, errlen, "%s: username and password too long",
		         reg->name);
		rc = EINVAL;
		goto done;
	}
	EVP_EncodeBlock(b64, (const unsigned char *)pair, k);
	snprintf(out, len, "Basic %s", b64);
done:
	OPENSSL_cleanse(pw, sizeof(pw));
	OPENSSL_cleanse(pair, sizeof(pair));
	OPENSSL_cleanse(b64, sizeof(b64));
	return rc;
}

/* The single-flight key of the token for (registry, scope):
 * "token:REGISTRY:SCOPE", or "token:" and the sha256 of both when that is
 * too long for a key. Returns 0 or ENOMEM. */
static int token_key(const char *registry, const char *scope,
                     char key[FLIGHT_KEY_MAX + 1])
{
	struct sha256 h;
	char hex[65];

	if (flight_key(key, "token:%s:%s", registry, scope) == 0)
		return 0;
	if (sha256_init(&h))
		return ENOMEM;
	sha256_update(&h, registry, strlen(registry) + 1); /* with its NUL */
	sha256_update(&h, scope, strlen(scope));
	sha256_final(&h, hex);
	return flight_key(key, "token:%s", hex) ? ENOMEM : 0;
}

/* Owner of the claim: GETs a token for u's scope from the challenge's
 * realm with options o, stores it for every worker and sets u->auth.
 * Returns 0, EACCES when the token service refused (401, 403), or another
 * errno with a reason in err: what fetch_page() returns (ETIMEDOUT,
 * ECONNREFUSED, EREMOTEIO...), EREMOTEIO for another 5xx, EPROTO for
 * another status or an answer that holds no token. Logs no secret. */
static int fetch_token(struct worker *w, struct oci_up *u,
                       const struct oci_challenge *ch,
                       const struct fetch_opts *o, char *err, size_t errlen)
{
	char why[512] = "", realm[1024];
	struct fetch_page r;
	struct oci_token t;
	struct buf url;
	long long now = time(NULL);
	int rc;

	memset(&r, 0, sizeof(r));
	/* the realm as messages name it: masked before it is cut */
	url_redact(ch->realm, realm, sizeof(realm));
	buf_init(&url, 8192);
	rc = buf_addf(&url, "%s%cservice=", ch->realm,
	              strchr(ch->realm, '?') ? '&' : '?');
	if (!rc)
		rc = query_escape(&url, ch->service);
	if (!rc)
		rc = buf_adds(&url, "&scope=");
	if (!rc)
		rc = query_escape(&url, u->scope);
	if (rc) {
		snprintf(err, errlen, "%s: token URL for %s: %s", u->reg->name,
		         u->scope, strerror(rc));
		buf_free(&url);
		return rc;
	}
	rc = fetch_page(o, buf_str(&url), "application/json", NULL, NULL, &r,
	                why, sizeof(why));
	if (rc) {
		snprintf(err, errlen, "token service of %s: %s", u->reg->name,
		         why);
	} else if (r.status == 401 || r.status == 403) {
		snprintf(err, errlen,
		         "token service %.300s refused %s for %s (%ld)",
		         realm, u->scope, u->reg->name, r.status);
		rc = EACCES;
	} else if (r.status != 200) {
		snprintf(err, errlen, "token service %.300s answered %ld",
		         realm, r.status);
		rc = r.status >= 500 || r.status == 429 ? EREMOTEIO : EPROTO;
	} else if (oci_token_parse(r.body.data ? r.body.data : "", r.body.len,
	                           &t, why, sizeof(why))) {
		snprintf(err, errlen, "token service %.300s: %s", realm,
		         why);
		rc = EPROTO;
	} else {
		long margin = t.expires_in > 20 ? 10 : t.expires_in / 2;

		db_oci_token_put(w->db, u->reg->name, u->scope, t.token,
		                 now + t.expires_in - margin);
		set_bearer(u, t.token);
		log_info("%s: token for %s, %ld s", u->reg->name, u->scope,
		         t.expires_in);
		OPENSSL_cleanse(t.token, sizeof(t.token));
	}
	buf_free(&r.body);
	buf_free(&url);
	return rc;
}

/* Answers challenge for u's scope: Basic credentials as they are, or a
 * token, the database's when it holds one other than failed (the one the
 * registry refused; "" none), else fetched by whichever worker claims
 * (registry, scope) first while the others wait for it. Returns 0 with
 * u->auth set, EACCES when refused (the token service refused, the
 * registry asks for credentials none are configured for, or they would go
 * to a plain http realm), or another errno with a reason in err: the
 * token service failed (see fetch_token), the password file is unusable
 * (EINVAL), the challenge cannot be read (EPROTO), the worker fetching the
 * token is still at it after a healthy fetch's time (ETIMEDOUT). */
static int login(struct worker *w, struct oci_up *u, const char *challenge,
                 const char *failed, char *err, size_t errlen)
{
	const struct conf_registry *reg = u->reg;
	char basic[BASIC_MAX], key[FLIGHT_KEY_MAX + 1];
	struct oci_challenge ch;
	struct fetch_opts o;
	struct flight f;
	int rc, owner, over;

	rc = basic_auth(reg, basic, sizeof(basic), err, errlen);
	if (rc)
		return rc;
	rc = oci_challenge_parse(challenge, &ch);
	if (rc == ENOENT && *basic) {
		/* a registry that takes Basic credentials as they are:
		 * they go to the upstream itself, over the scheme it is
		 * configured with */
		snprintf(u->auth, sizeof(u->auth), "%s", basic);
		rc = 0;
		goto out;
	}
	if (rc == ENOENT) {
		snprintf(err, errlen,
		         "%s: the registry asks for credentials (%.200s) and "
		         "none are configured",
		         reg->name, challenge);
		rc = EACCES;
		goto out;
	}
	if (rc) {
		char shown[1024];

		/* masked before it is cut (a realm URL in it) */
		snprintf(err, errlen, "%s: cannot read the challenge %.200s",
		         reg->name, url_redact(challenge, shown, sizeof(shown)));
		rc = EPROTO;
		goto out;
	}
	if (*basic && plain_http(ch.realm) && !plain_http(reg->upstream)) {
		snprintf(
		    err, errlen,
		    "%s: refusing to send credentials to http realm %.300s "
		    "(the upstream is https)",
		    reg->name, ch.realm);
		rc = EACCES;
		goto out;
	}
	rc = token_key(reg->name, u->scope, key);
	if (rc) {
		snprintf(err, errlen, "%s: token key for %s: %s", reg->name,
		         u->scope, strerror(rc));
		goto out;
	}
	/* u's timeouts and retries: a caller with a stale copy to fall back
	 * on, which fetches without retries, does not wait out the token
	 * service's backoff either, nor a longer wait for another worker */
	o = u->o;
	o.trust_base = ch.realm;
	o.trusted = NULL; /* redirects to the realm's own host only */
	o.max_body = TOKEN_MAX_BODY;
	o.auth = *basic ? basic : NULL;
	for (int round = 0; round < TOKEN_ROUNDS; round++) {
		if (stored_token(w, u, failed)) {
			rc = 0;
			goto out;
		}
		rc =
		    flight_claim(w->db, w->conf->data_dir, key, -1, &owner, &f);
		if (rc) {
			snprintf(err, errlen, "%s: cannot claim: %s", key,
			         strerror(rc));
			goto out;
		}
		if (owner) {
			/* another worker may have stored one just before */
			if (stored_token(w, u, failed)) {
				rc = 0;
			} else {
				worker_shed(w);
				rc = fetch_token(w, u, &ch, &o, err, errlen);
			}
			flight_drop(w->db, &f);
			goto out;
		}
		worker_shed(w);
		over = flight_wait(w->db, &f, fetch_max_silence(&o) * 1000);
		if (stored_token(w, u, failed)) {
			rc = 0;
			goto out;
		}
		if (!over) {
			/* longer than a healthy fetch takes: no use waiting
			 * again */
			snprintf(err, errlen,
			         "%s: the token for %s is still being fetched",
			         reg->name, u->scope);
			rc = ETIMEDOUT;
			goto out;
		}
		/* its owner got none (its fetch failed, or it died):
		 * claim again */
	}
	snprintf(err, errlen,
	         "%s: no token for %s: the workers that fetched it got "
	         "none",
	         reg->name, u->scope);
	rc = EREMOTEIO;
out:
	OPENSSL_cleanse(basic, sizeof(basic));
	return rc;
}

static void remember_challenge(struct worker *w, const struct oci_up *u,
                               const char *value)
{
	db_oci_token_put(w->db, u->reg->name, CHALLENGE_SCOPE, value,
	                 (long long)time(NULL) + CHALLENGE_TTL);
}

/* Remembers that the registry answered without a token (unless that is
 * known already): the first blob fetch then asks it nothing first. */
static void note_no_auth(struct worker *w, const struct oci_up *u)
{
	char known[sizeof(NO_AUTH)];
	long long until;

	if (db_oci_token_get(w->db, u->reg->name, CHALLENGE_SCOPE, known,
	                     sizeof(known), &until) == 0 &&
	    !strcmp(known, NO_AUTH) && until > time(NULL))
		return;
	remember_challenge(w, u, NO_AUTH);
}

int oci_up_offline(const struct worker *w, const struct conf_registry *reg)
{
	return conf_inherit(reg->offline, w->conf->offline) > 0;
}

/* ENETDOWN, with the reason in err, when u's registry is offline. */
static int offline(const struct worker *w, const struct oci_up *u,
                   char *err, size_t errlen)
{
	if (!oci_up_offline(w, u->reg))
		return 0;
	snprintf(err, errlen, "registry %s is offline (offline = yes) and "
	         "does not have it", u->reg->name);
	return ENETDOWN;
}

int oci_up_page(struct worker *w, struct oci_up *u, const char *url,
                const char *accept, const char *etag, int head,
                struct fetch_page *r, char *err, size_t errlen)
{
	char failed[OCI_AUTH_MAX_TOKEN];
	int rc;

	if (errlen)
		err[0] = '\0';
	memset(r, 0, sizeof(*r));
	rc = offline(w, u, err, errlen);
	if (rc)
		return rc;
	for (int attempt = 0;; attempt++) {
		rc = head ? fetch_page_head(&u->o, url, accept, r, err, errlen)
		          : fetch_page(&u->o, url, accept, etag, NULL, r, err,
		                       errlen);
		if (!rc && r->status != 401 && !*u->auth && attempt == 0)
			note_no_auth(w, u);
		if (rc || r->status != 401 || attempt > 0 || !*r->authenticate)
			return rc;
		remember_challenge(w, u, r->authenticate);
		/* the token refused is not asked for again, nor deleted:
		 * the row may hold another worker's newer one by now */
		held_token(u, failed);
		rc = login(w, u, r->authenticate, failed, err, errlen);
		OPENSSL_cleanse(failed, sizeof(failed));
		if (rc == EACCES) {
			log_warn(0, url, "%s", err);
			return 0; /* refused: the 401 stands */
		}
		if (rc)
			return rc; /* the token service failed */
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

	if (errlen)
		err[0] = '\0';
	rc = offline(w, u, err, errlen);
	if (rc)
		return rc;
	if (*u->auth && !forget)
		return 0;
	if (!forget && /* and so u carries nothing */
	    db_oci_token_get(w->db, u->reg->name, CHALLENGE_SCOPE, known,
	                     sizeof(known), &until) == 0 &&
	    until > time(NULL)) {
		if (!strcmp(known, NO_AUTH))
			return 0;
		rc = login(w, u, known, "", err, errlen);
		if (rc != EACCES)
			return rc; /* a token, or its service failed */
		/* refused: the registry may want something else now */
		log_warn(0, url, "%s", err);
	}
	/* nobody knows yet, or what u carries was refused: a HEAD (it costs
	 * no pull) with it says, and on a 401 oci_up_page() does the dance,
	 * never taking the refused token again */
	rc = oci_up_page(w, u, url, "*/*", NULL, 1, &r, err, errlen);
	if (!rc && r.status != 401 && !*u->auth)
		remember_challenge(w, u, NO_AUTH);
	if (!rc && r.status == 401) {
		if (!*err)
			snprintf(err, errlen, "%s: upstream refuses access",
			         url);
		rc = EACCES;
	}
	buf_free(&r.body);
	return rc;
}
