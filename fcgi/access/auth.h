/* auth: who may do what, by token (common/http/token.h, storage/db/db.h tokens).
 *
 * Every handler that needs a token calls auth_allow() before it does any
 * work: it answers the refusal itself. Reads of an index that has read =
 * token, or a layer that has, are checked in dispatch (fcgi/dispatch.c)
 * before the page or file handler runs.
 */
#ifndef LARDER_AUTH_H
#define LARDER_AUTH_H

#include "common/conf/conf.h"
#include "common/http/token.h"
#include "fcgi/server/req.h"
#include "fcgi/server/worker.h"

/* Whether r may do action (one enum token_action bit) on project in index
 * target_idx, asked for through the URL of index url_idx (the same, or a
 * virtual index target_idx is a layer of): the token in HTTP_AUTHORIZATION
 * (Basic, any user, the token as password; or Bearer) exists, its secret
 * hashes to the stored hash, it is neither revoked nor expired, its index
 * is related by layering to both url_idx and target_idx, it has the
 * action, and one of its globs matches project. project "" is the project
 * list (any token with the action passes); NULL skips the project check.
 * Returns 0 when allowed. Otherwise it has answered r: 401 (with
 * WWW-Authenticate: Basic realm="larder") for no credentials ("credentials
 * required"), a malformed or unknown token or a wrong secret ("bad
 * credentials"), "token expired" or "token revoked"; 403 for a token
 * without the action, the index or the project; 500 when the tokens table
 * cannot be read; and returns EACCES. */
int auth_allow(struct worker *w, struct req *r, int url_idx, int target_idx,
               unsigned action, const char *project);

/* As auth_allow() on index idx through its own URL, but answers nothing:
 * 0 or EACCES. */
int auth_may(struct worker *w, struct req *r, int idx, unsigned action,
	     const char *project);

/* Whether reading index idx needs a token (token_read_required(): it or
 * a layer has read = token), worked out once per process and config, so
 * that an anonymous index costs one look per request. */
int auth_read_token(const struct worker *w, int idx);

#endif
