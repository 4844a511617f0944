#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/http/token.h"
#include "common/names.h"
#include "common/oci/ref.h"
#include "fcgi/oci/access.h"
#include "fcgi/oci/oci.h"
#include "storage/db/db.h"

/* A salt and hash no secret matches, checked for an unknown token id. */
static const char unknown_salt[] = "00000000000000000000000000000000";
static const char unknown_hash[] =
	"0000000000000000000000000000000000000000000000000000000000000000";

/* Set while oci_access_may() asks: a refusal is not answered. */
static int quiet;

static int refuse(struct req *r, int status, const char *code,
                  const char *message)
{
	if (quiet)
		return EACCES;
	if (status == 401)
		req_header(r, "WWW-Authenticate", "Basic realm=\"larder\"");
	oci_fail(r, status, code, message);
	return EACCES;
}

/* Reads and checks r's token into t: it exists, its secret hashes to the
 * stored hash, it is neither revoked nor expired. Returns 0, or EACCES
 * with r answered. */
static int token_of(struct worker *w, struct req *r, struct db_token *t)
{
	char id[TOKEN_ID_HEX + 1], secret[TOKEN_SECRET_HEX + 1];
	int rc, ok;

	rc = token_from_authorization(req_env(r, "HTTP_AUTHORIZATION"), id,
	                              secret);
	if (rc == ENOENT)
		return refuse(r, 401, "UNAUTHORIZED", "credentials required");
	if (rc)
		return refuse(r, 401, "UNAUTHORIZED", "bad credentials");
	rc = db_token_get(w->db, id, t);
	if (rc == ENOENT) {
		/* as long as a known id takes: nothing tells a guesser
		 * which ids exist */
		(void)token_verify(unknown_salt, secret, unknown_hash);
		memset(secret, 0, sizeof(secret));
		return refuse(r, 401, "UNAUTHORIZED", "bad credentials");
	}
	if (rc) {
		memset(secret, 0, sizeof(secret));
		return refuse(r, 500, "UNKNOWN", "cannot read the tokens");
	}
	ok = token_verify(t->salt, secret, t->hash);
	memset(secret, 0, sizeof(secret));
	if (!ok)
		return refuse(r, 401, "UNAUTHORIZED", "bad credentials");
	if (t->revoked)
		return refuse(r, 401, "UNAUTHORIZED", "token revoked");
	if (t->expires && (long long)time(NULL) >= t->expires)
		return refuse(r, 401, "UNAUTHORIZED", "token expired");
	return 0;
}

int oci_access_allow(struct worker *w, struct req *r, int ri,
                     const char *repo, unsigned action)
{
	const struct conf_registry *reg = &w->conf->registry[ri];
	static const char prefix[] = TOKEN_REGISTRY_PREFIX;
	char why[512], err[256];
	struct db_token t;
	unsigned mask;

	if (action == TOKEN_PULL && reg->read != CONF_READ_TOKEN)
		return 0;
	if (token_of(w, r, &t))
		return EACCES;
	if (strncmp(t.index, prefix, sizeof(prefix) - 1) != 0 ||
	    strcmp(t.index + sizeof(prefix) - 1, reg->name) != 0) {
		snprintf(why, sizeof(why), "token is not for registry %.100s",
		         reg->name);
		return refuse(r, 403, "DENIED", why);
	}
	if (token_actions_parse(t.actions, &mask, err, sizeof(err)) ||
	    (mask & action) != action) {
		snprintf(why, sizeof(why), "token lacks the %s action",
		         token_action_name(action));
		return refuse(r, 403, "DENIED", why);
	}
	if (repo && !names_globs_match(t.projects, repo)) {
		snprintf(why, sizeof(why),
		         "token does not cover repository %.200s", repo);
		return refuse(r, 403, "DENIED", why);
	}
	return 0;
}

int oci_access_may(struct worker *w, struct req *r, int ri,
                   const char *repo, unsigned action)
{
	int rc;

	quiet = 1;
	rc = oci_access_allow(w, r, ri, repo, action);
	quiet = 0;
	return rc;
}

int oci_access_base(struct worker *w, struct req *r)
{
	const struct conf *c = w->conf;
	struct db_token t;
	int challenge = 0;

	/* clients (containers/image, docker) learn here whether to send
	 * credentials at all: where any registry takes them, say so */
	for (size_t i = 0; i < c->nregistry; i++)
		if (c->registry[i].type == CONF_REGISTRY_HOSTED ||
		    c->registry[i].read == CONF_READ_TOKEN)
			challenge = 1;
	if (!req_env(r, "HTTP_AUTHORIZATION") && !challenge)
		return 0;
	return token_of(w, r, &t);
}
