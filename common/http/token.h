/* token: larder's upload and read tokens, as text. I/O-free.
 *
 * A token is "lt_" + 16 hex digits of id + "_" + 64 hex digits of secret.
 * The id is public (it names the row in the tokens table, storage/db/db.h);
 * only SHA-256 of the salt's hex and the secret's hex is stored. Clients
 * send it as the password of HTTP Basic (user "__token__", or any user),
 * as the user with an empty password, or as "Authorization: Bearer TOKEN".
 * A token says which actions it allows (a bit mask, written as
 * "upload,yank,delete,read") and which projects (space-separated globs of
 * normalised names: '*' any run, '?' one character).
 */
#ifndef LARDER_TOKEN_H
#define LARDER_TOKEN_H

#include <stddef.h>

#include "common/conf/conf.h"

#define TOKEN_ID_HEX     16
#define TOKEN_SECRET_HEX 64
#define TOKEN_SALT_HEX   32
/* "lt_" id "_" secret */
#define TOKEN_TEXT_LEN (3 + TOKEN_ID_HEX + 1 + TOKEN_SECRET_HEX)
/* What a glob list may hold (db_token.projects). */
/* The longest duration token_duration_parse() takes: 100 years. */
#define TOKEN_MAX_DURATION (100LL * 366 * 86400)

enum token_action {
	TOKEN_UPLOAD = 1,
	TOKEN_YANK = 2,
	TOKEN_DELETE = 4,
	TOKEN_READ = 8,
	TOKEN_PULL = 16, /* a registry's: read images */
	TOKEN_PUSH = 32, /* a registry's: push blobs and manifests */
};
/* The actions of a token for an index, and of one for a registry (whose
 * delete is TOKEN_DELETE too). */
#define TOKEN_ALL_ACTIONS 15u
#define TOKEN_REGISTRY_ACTIONS (TOKEN_PULL | TOKEN_PUSH | TOKEN_DELETE)
#define TOKEN_ANY_ACTIONS 63u
/* What a token for a registry has in its index column: this prefix and
 * the registry's name (an index name never holds ':'). */
#define TOKEN_REGISTRY_PREFIX "registry:"


/* Writes "lt_ID_SECRET" to out (len bytes, at least TOKEN_TEXT_LEN + 1).
 * Returns 0, EINVAL when id or secret is not lowercase hex of its length,
 * or ENAMETOOLONG when out is too small. */
int token_format(const char *id, const char *secret, char *out, size_t len);

/* Reads the n bytes at text as a token: id and secret (lowercase hex, NUL
 * terminated) are written to id and secret. Returns 0 or EINVAL. */
int token_parse(const char *text, size_t n, char id[TOKEN_ID_HEX + 1],
                char secret[TOKEN_SECRET_HEX + 1]);

/* Decodes the n bytes of standard, padded base64 at in into out (len
 * bytes); *outn says how many. Strict: any byte outside the alphabet, a
 * length that is not a multiple of 4, misplaced padding or non-zero spare
 * bits is an error. Returns 0, EINVAL, or ENOBUFS when out is too small. */
int token_base64_decode(const char *in, size_t n, unsigned char *out,
                        size_t len, size_t *outn);

/* Finds the token in an Authorization header value: "Basic B64" whose
 * "user:password" has the token as password (or as user, with an empty
 * password), or "Bearer TOKEN" (schemes in any case). Returns 0 with id
 * and secret filled in, ENOENT when value is NULL or blank (no
 * credentials), EINVAL when it holds no well-formed token. */
int token_from_authorization(const char *value, char id[TOKEN_ID_HEX + 1],
                             char secret[TOKEN_SECRET_HEX + 1]);

/* Reads a comma-separated action list ("upload,yank", blanks around words
 * allowed) into *mask. Returns 0, or EINVAL with a reason in err naming
 * the unknown word (or saying the list is empty). */
int token_actions_parse(const char *list, unsigned *mask, char *err,
                        size_t errlen);

/* Normalises a list of repository globs (OCI names: lowercase letters,
 * digits, '.', '_', '-', '/', and the wildcards '*' and '?'; '*' also runs
 * over '/') with single spaces between globs, into out. Returns 0, or
 * EINVAL with a reason in err: an empty list, another byte, or a list
 * longer than NAMES_MAX_GLOBS (or than out). */
int token_repo_globs_normalize(const char *in, char *out, size_t len,
                               char *err, size_t errlen);

/* Writes mask as "upload,yank,delete,read" (in that order, only the bits
 * set) to out. Returns 0 or ENAMETOOLONG. */
int token_actions_format(unsigned mask, char *out, size_t len);

/* The name of one action bit ("upload"), or "?" for anything else. */
const char *token_action_name(unsigned action);



/* Reads a duration: "never" (*seconds 0) or a positive number with a unit
 * s, m, h or d ("30m", "12h", "90d"), at most TOKEN_MAX_DURATION. Returns
 * 0, or EINVAL with a reason in err. */
int token_duration_parse(const char *text, long long *seconds, char *err,
                         size_t errlen);

/* Writes the stored hash of a secret: hex SHA-256 of the salt's hex
 * digits followed by the secret's. Returns 0 or ENOMEM. */
int token_hash(const char *salt, const char *secret, char hash[65]);

/* Returns 1 when secret hashes with salt to hash (compared in constant
 * time), else 0 (also for a malformed salt or hash). */
int token_verify(const char *salt, const char *secret, const char *hash);

/* Writes the project a distribution file name is of, normalised, to out:
 * a wheel's first component; an sdist's name before its last '-' that a
 * digit follows. Returns 0, or EINVAL when the name gives none. */
int token_file_project(const char *filename, char *out, size_t len);

/* Returns 1 when index b is index a or one of its layers, transitively:
 * what a read token for a may read (a token for one layer of a virtual
 * index must not read its other layers through it), else 0. */
int token_index_covers(const struct conf *c, int a, int b);

/* Returns 1 when index a and index b (positions in c->index) are the same
 * or one is a layer of the other, transitively, else 0. */
int token_index_related(const struct conf *c, int a, int b);

/* Returns 1 when index idx, or any of its layers transitively, has read =
 * token, else 0. */
int token_read_required(const struct conf *c, int idx);

#endif
