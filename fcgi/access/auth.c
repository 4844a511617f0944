#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "fcgi/access/auth.h"

/* A salt and hash no secret matches, checked for an unknown token id. */
static const char unknown_salt[] = "00000000000000000000000000000000";
static const char unknown_hash[] =
	"0000000000000000000000000000000000000000000000000000000000000000";

/* Set while auth_may() asks: a refusal is not answered. */
static int quiet;

/* Answers 401 with the challenge every client understands. */
static int unauthorized(struct req *r, const char *reason)
{
	if (quiet)
		return EACCES;
	req_header(r, "WWW-Authenticate", "Basic realm=\"larder\"");
	req_error(r, 401, reason);
	return EACCES;
}

static int forbidden(struct req *r, const char *reason)
{
	if (quiet)
		return EACCES;
	req_error(r, 403, reason);
	return EACCES;
}

int auth_allow(struct worker *w, struct req *r, int url_idx, int target_idx,
               unsigned action, const char *project)
{
	const struct conf *c = w->conf;
	char id[TOKEN_ID_HEX + 1], secret[TOKEN_SECRET_HEX + 1];
	char why[512], err[256];
	struct db_token t;
	unsigned mask;
	int rc, idx;

	rc = token_from_authorization(req_env(r, "HTTP_AUTHORIZATION"), id,
	                              secret);
	if (rc == ENOENT)
		return unauthorized(r, "credentials required");
	if (rc)
		return unauthorized(r, "bad credentials");
	rc = db_token_get(w->db, id, &t);
	if (rc == ENOENT) {
		/* the hash a known id costs, so an unknown one answers no
		 * faster: nothing tells a guesser which ids exist */
		(void)token_verify(unknown_salt, secret, unknown_hash);
		return unauthorized(r, "bad credentials");
	}
	if (rc) {
		if (!quiet)
			req_error(r, 500, "cannot read the tokens");
		return EACCES;
	}
	/* the secret first: nothing is said of a token to who lacks it */
	if (!token_verify(t.salt, secret, t.hash))
		return unauthorized(r, "bad credentials");
	if (t.revoked)
		return unauthorized(r, "token revoked");
	if (t.expires && (long long)time(NULL) >= t.expires)
		return unauthorized(r, "token expired");
	if (token_actions_parse(t.actions, &mask, err, sizeof(err)) ||
	    (mask & action) != action) {
		snprintf(why, sizeof(why), "token lacks the %s action",
		         token_action_name(action));
		return forbidden(r, why);
	}
	idx = conf_index_find(c, t.index);
	/* a read goes through the URL's index to all its layers: only a
	 * token for it, or for an index it is a layer of, may */
	if (idx < 0 ||
	    (action == TOKEN_READ ? !token_index_covers(c, idx, url_idx) :
	                            !token_index_related(c, idx, url_idx) ||
	                                !token_index_related(c, idx, target_idx))) {
		snprintf(why, sizeof(why),
		         "token is for index %.100s, not "
		         "%.100s",
		         t.index,
		         url_idx >= 0 && (size_t)url_idx < c->nindex
		             ? c->index[url_idx].name
		             : "this one");
		return forbidden(r, why);
	}
	if (project && *project && !names_globs_match(t.projects, project)) {
		snprintf(why, sizeof(why),
		         "token does not cover project "
		         "%.200s",
		         project);
		return forbidden(r, why);
	}
	return 0;
}

int auth_may(struct worker *w, struct req *r, int idx, unsigned action,
	     const char *project)
{
	int rc;

	quiet = 1;
	rc = auth_allow(w, r, idx, idx, action, project);
	quiet = 0;
	return rc;
}

int auth_read_token(const struct worker *w, int idx)
{
	/* per process: a reload replaces the workers, and the config with
	 * them; the pointer is checked all the same */
	static const struct conf *known;
	static unsigned char need[CONF_MAX_INDEXES];

	if (idx < 0 || idx >= CONF_MAX_INDEXES)
		return 0;
	if (known != w->conf) {
		for (size_t i = 0; i < w->conf->nindex && i < CONF_MAX_INDEXES;
		     i++)
			need[i] = (unsigned char)token_read_required(w->conf,
								     (int)i);
		known = w->conf;
	}
	return need[idx];
}
