#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/buf.h"
#include "common/http/token.h"
#include "common/names.h"
#include "common/oci/auth.h"
#include "common/oci/ref.h"
#include "fcgi/oci/access.h"
#include "fcgi/oci/bearer.h"
#include "fcgi/oci/oci.h"
#include "storage/db/db.h"

/* A salt and hash no secret matches, checked for an unknown token id. */
static const char unknown_salt[] = "00000000000000000000000000000000";
static const char unknown_hash[] =
	"0000000000000000000000000000000000000000000000000000000000000000";

/* One question of access: whom to answer, and how. */
struct ask {
	struct worker *w;
	struct req *r;
	int quiet;           /* oci_access_may(): a refusal is not answered */
	int basic;           /* the token endpoint: challenge for Basic */
	const char *actions; /* the scope's actions, NULL for none */
};

/* Sets larder's Bearer challenge on r: the token endpoint as realm and,
 * for a path that names a repository, the scope asked for. */
static void challenge(const struct ask *a)
{
	char name[OCI_MAX_NAME + 1], value[OCI_MAX_NAME + 4200];
	struct buf realm;
	int rc;

	buf_init(&realm, 4096);
	rc = req_url(a->r, a->w->conf->trust_forwarded, "/v2/token", &realm);
	if (!rc && (!a->actions ||
		    oci_auth_path_name(a->r->path, name, sizeof(name)) ||
		    oci_auth_challenge(buf_str(&realm), name, a->actions,
				       value, sizeof(value))))
		rc = oci_auth_challenge(buf_str(&realm), NULL, NULL, value,
					sizeof(value));
	if (!rc)
		req_header(a->r, "WWW-Authenticate", "%s", value);
	else /* a host larder cannot name: the challenge of old */
		req_header(a->r, "WWW-Authenticate", "Basic realm=\"larder\"");
	buf_free(&realm);
}

static int refuse(const struct ask *a, int status, const char *code,
                  const char *message)
{
	if (a->quiet)
		return EACCES;
	if (status == 401 && a->basic)
		req_header(a->r, "WWW-Authenticate", "Basic realm=\"larder\"");
	else if (status == 401)
		challenge(a);
	oci_fail(a->r, status, code, message);
	return EACCES;
}

/* Reads and checks r's credentials. A larder token: it exists, its
 * secret hashes to the stored hash, it is neither revoked nor expired;
 * returns 0 with it in t (and its text in text, when not NULL). None, or
 * a good anonymous token: returns ENOENT, *anon saying which, r not
 * answered. Else returns EACCES with r answered. */
static int credentials(const struct ask *a, struct db_token *t, int *anon,
                       char *text)
{
	char id[TOKEN_ID_HEX + 1], secret[TOKEN_SECRET_HEX + 1];
	char bearer[OCI_ANON_TEXT_LEN + 1];
	const char *auth = req_env(a->r, "HTTP_AUTHORIZATION");
	const unsigned char *key;
	int rc, ok;

	*anon = 0;
	if (oci_anon_bearer(auth, bearer)) {
		if (oci_bearer_key(a->w, &key))
			return refuse(a, 500, "UNKNOWN",
				      "cannot read the token key");
		rc = oci_anon_token_check(bearer, key, OCI_ANON_KEY_LEN,
					  (long long)time(NULL));
		if (rc == ETIMEDOUT)
			return refuse(a, 401, "UNAUTHORIZED", "token expired");
		if (rc)
			return refuse(a, 401, "UNAUTHORIZED",
				      "bad credentials");
		*anon = 1;
		return ENOENT;
	}
	rc = token_from_authorization(auth, id, secret);
	if (rc == ENOENT)
		return ENOENT;
	if (rc)
		return refuse(a, 401, "UNAUTHORIZED", "bad credentials");
	rc = db_token_get(a->w->db, id, t);
	if (rc == ENOENT) {
		/* as long as a known id takes: nothing tells a guesser
		 * which ids exist */
		(void)token_verify(unknown_salt, secret, unknown_hash);
		memset(secret, 0, sizeof(secret));
		return refuse(a, 401, "UNAUTHORIZED", "bad credentials");
	}
	if (rc) {
		memset(secret, 0, sizeof(secret));
		return refuse(a, 500, "UNKNOWN", "cannot read the tokens");
	}
	ok = token_verify(t->salt, secret, t->hash);
	if (ok && text && token_format(id, secret, text, TOKEN_TEXT_LEN + 1))
		ok = 0;
	memset(secret, 0, sizeof(secret));
	if (!ok)
		return refuse(a, 401, "UNAUTHORIZED", "bad credentials");
	if (t->revoked)
		return refuse(a, 401, "UNAUTHORIZED", "token revoked");
	if (t->expires && (long long)time(NULL) >= t->expires)
		return refuse(a, 401, "UNAUTHORIZED", "token expired");
	return 0;
}

/* The scope's actions a client is to ask the token endpoint for. */
static const char *scope_actions(unsigned action)
{
	switch (action) {
	case TOKEN_PUSH:
		return "pull,push"; /* what docker and skopeo ask */
	case TOKEN_DELETE:
		return "delete";
	default:
		return "pull";
	}
}

static int allow(struct ask *a, int ri, const char *repo, unsigned action)
{
	const struct conf_registry *reg = &a->w->conf->registry[ri];
	static const char prefix[] = TOKEN_REGISTRY_PREFIX;
	char why[512], err[256];
	struct db_token t;
	unsigned mask;
	int rc, anon;

	if (action == TOKEN_PULL && reg->read != CONF_READ_TOKEN)
		return 0;
	a->actions = scope_actions(action);
	rc = credentials(a, &t, &anon, NULL);
	if (rc == ENOENT)
		return refuse(a, 401, "UNAUTHORIZED", "credentials required");
	if (rc)
		return EACCES;
	if (strncmp(t.index, prefix, sizeof(prefix) - 1) != 0 ||
	    strcmp(t.index + sizeof(prefix) - 1, reg->name) != 0) {
		snprintf(why, sizeof(why), "token is not for registry %.100s",
		         reg->name);
		return refuse(a, 403, "DENIED", why);
	}
	if (token_actions_parse(t.actions, &mask, err, sizeof(err)) ||
	    (mask & action) != action) {
		snprintf(why, sizeof(why), "token lacks the %s action",
		         token_action_name(action));
		return refuse(a, 403, "DENIED", why);
	}
	if (repo && !names_globs_match(t.projects, repo)) {
		snprintf(why, sizeof(why),
		         "token does not cover repository %.200s", repo);
		return refuse(a, 403, "DENIED", why);
	}
	return 0;
}

int oci_access_allow(struct worker *w, struct req *r, int ri,
                     const char *repo, unsigned action)
{
	struct ask a = {.w = w, .r = r};

	return allow(&a, ri, repo, action);
}

int oci_access_may(struct worker *w, struct req *r, int ri,
                   const char *repo, unsigned action)
{
	struct ask a = {.w = w, .r = r, .quiet = 1};

	return allow(&a, ri, repo, action);
}

int oci_access_base(struct worker *w, struct req *r)
{
	const struct conf *c = w->conf;
	struct ask a = {.w = w, .r = r};
	struct db_token t;
	int challenged = 0, rc, anon;

	/* clients (containers/image, docker) learn here whether to send
	 * credentials at all: where any registry takes them, say so */
	for (size_t i = 0; i < c->nregistry; i++)
		if (c->registry[i].type == CONF_REGISTRY_HOSTED ||
		    c->registry[i].read == CONF_READ_TOKEN)
			challenged = 1;
	if (!req_env(r, "HTTP_AUTHORIZATION") && !challenged)
		return 0;
	rc = credentials(&a, &t, &anon, NULL);
	if (rc == ENOENT && !anon)
		return refuse(&a, 401, "UNAUTHORIZED", "credentials required");
	return rc == ENOENT ? 0 : rc;
}

int oci_access_login(struct worker *w, struct req *r, int *anonymous,
                     char *text, long long *expires)
{
	struct ask a = {.w = w, .r = r, .basic = 1};
	struct db_token t;
	int rc;

	*expires = 0;
	rc = credentials(&a, &t, anonymous, text);
	if (rc == ENOENT) {
		*anonymous = 1;
		return 0;
	}
	if (rc)
		return EACCES;
	*expires = t.expires;
	return 0;
}
