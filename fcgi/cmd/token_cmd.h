/* token_cmd: `larder token add|list|revoke`, the tokens of a store
 * (storage/db/db.h tokens, common/http/token.h):
 *   larder token add --index NAME --actions upload,yank,delete,read
 *                    [--projects GLOB...] [--expires 90d|never]
 *                    [--note TEXT]       prints the new token, once
 *   larder token list                    one tab-separated line a token:
 *                    id, index, actions, projects, created, expires,
 *                    state (active, expired, revoked), note
 *   larder token revoke ID
 */
#ifndef LARDER_TOKEN_CMD_H
#define LARDER_TOKEN_CMD_H

#include <stdio.h>

#include "common/conf/conf.h"

/* Runs the command argv[0] ("add", "list" or "revoke") with its options
 * on the store of c (the caller loaded the config and, as root, became
 * the store's owner). The token or the list goes to out, messages to err.
 * Returns the exit status: 0 done, 1 no such token to revoke, 2 usage,
 * a bad option value (one line saying which) or an I/O error. */
int token_cmd(const struct conf *c, int argc, char **argv, FILE *out,
              FILE *err);

#endif
