#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <openssl/crypto.h>

#include "common/hash/sha256.h"
#include "common/hex.h"
#include "common/http/token.h"
#include "common/names.h"

/* How deep layers may nest before the walk gives up (conf refuses cycles;
 * this only bounds the recursion). */
#define MAX_DEPTH CONF_MAX_INDEXES

int token_format(const char *id, const char *secret, char *out, size_t len)
{
	if (strlen(id) != TOKEN_ID_HEX || !hex_is_lower(id, TOKEN_ID_HEX) ||
	    strlen(secret) != TOKEN_SECRET_HEX ||
	    !hex_is_lower(secret, TOKEN_SECRET_HEX))
		return EINVAL;
	if (len < TOKEN_TEXT_LEN + 1)
		return ENAMETOOLONG;
	snprintf(out, len, "lt_%s_%s", id, secret);
	return 0;
}

int token_parse(const char *text, size_t n, char id[TOKEN_ID_HEX + 1],
                char secret[TOKEN_SECRET_HEX + 1])
{
	const char *s = text + 3 + TOKEN_ID_HEX + 1;

	if (n != TOKEN_TEXT_LEN || memcmp(text, "lt_", 3) != 0 ||
	    text[3 + TOKEN_ID_HEX] != '_' ||
	    !hex_is_lower(text + 3, TOKEN_ID_HEX) ||
	    !hex_is_lower(s, TOKEN_SECRET_HEX))
		return EINVAL;
	memcpy(id, text + 3, TOKEN_ID_HEX);
	id[TOKEN_ID_HEX] = '\0';
	memcpy(secret, s, TOKEN_SECRET_HEX);
	secret[TOKEN_SECRET_HEX] = '\0';
	return 0;
}

/* The value of a base64 digit, or -1. */
static int b64_value(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

int token_base64_decode(const char *in, size_t n, unsigned char *out,
                        size_t len, size_t *outn)
{
	size_t o = 0;

	*outn = 0;
	if (n % 4)
		return EINVAL;
	for (size_t i = 0; i < n; i += 4) {
		int v[4], pad = 0;
		unsigned long bits;

		for (int k = 0; k < 4; k++) {
			unsigned char c = (unsigned char)in[i + k];

			if (c == '=' && i + 4 == n && k >= 2) {
				v[k] = 0;
				pad++;
				continue;
			}
			/* a digit after padding, or padding too early */
			if (pad)
				return EINVAL;
			v[k] = b64_value(c);
			if (v[k] < 0)
				return EINVAL;
		}
		bits = (unsigned long)v[0] << 18 | (unsigned long)v[1] << 12 |
		       (unsigned long)v[2] << 6 | (unsigned long)v[3];
		/* the spare bits of a short group are zero in canonical form */
		if ((pad == 1 && (bits & 0xff)) ||
		    (pad == 2 && (bits & 0xffff)))
			return EINVAL;
		if (o + 3 - (size_t)pad > len)
			return ENOBUFS;
		out[o++] = (unsigned char)(bits >> 16);
		if (pad < 2)
			out[o++] = (unsigned char)(bits >> 8);
		if (pad < 1)
			out[o++] = (unsigned char)bits;
	}
	*outn = o;
	return 0;
}

static int is_blank(char c)
{
	return c == ' ' || c == '\t';
}

/* Whether the n bytes at s start with the scheme word (any case) and a
 * blank. */
static int has_scheme(const char *s, size_t n, const char *word)
{
	size_t w = strlen(word);

	return n > w && strncasecmp(s, word, w) == 0 && is_blank(s[w]);
}

int token_from_authorization(const char *value, char id[TOKEN_ID_HEX + 1],
                             char secret[TOKEN_SECRET_HEX + 1])
{
	/* "user:password" of a Basic value worth reading: a user name of
	 * up to 256 bytes beside a token */
	unsigned char plain[TOKEN_TEXT_LEN + 258];
	const char *s = value, *colon;
	size_t n, m, skip;

	if (!s)
		return ENOENT;
	while (is_blank(*s))
		s++;
	n = strlen(s);
	while (n && is_blank(s[n - 1]))
		n--;
	if (!n)
		return ENOENT;
	if (has_scheme(s, n, "Bearer")) {
		skip = 6;
		while (is_blank(s[skip]))
			skip++;
		return token_parse(s + skip, n - skip, id, secret);
	}
	if (!has_scheme(s, n, "Basic"))
		return EINVAL;
	skip = 5;
	while (is_blank(s[skip]))
		skip++;
	if (token_base64_decode(s + skip, n - skip, plain, sizeof(plain), &m))
		return EINVAL;
	colon = memchr(plain, ':', m);
	if (!colon)
		return EINVAL;
	/* the password is the token; or the user is, with no password */
	skip = (size_t)(colon - (const char *)plain) + 1;
	if (skip < m)
		return token_parse((const char *)plain + skip, m - skip, id,
		                   secret);
	return token_parse((const char *)plain, skip - 1, id, secret);
}

static const char *const action_names[] = {"upload", "yank", "delete",
                                           "read", "pull", "push"};
#define NACTIONS (sizeof(action_names) / sizeof(action_names[0]))

const char *token_action_name(unsigned action)
{
	for (unsigned i = 0; i < NACTIONS; i++)
		if (action == 1u << i)
			return action_names[i];
	return "?";
}

int token_actions_parse(const char *list, unsigned *mask, char *err,
                        size_t errlen)
{
	const char *p = list, *end;
	size_t n;
	unsigned bit;

	*mask = 0;
	for (;;) {
		while (is_blank(*p))
			p++;
		end = p + strcspn(p, ",");
		n = (size_t)(end - p);
		while (n && is_blank(p[n - 1]))
			n--;
		if (n) {
			bit = 0;
			for (unsigned i = 0; i < NACTIONS; i++)
				if (strlen(action_names[i]) == n &&
				    !strncmp(p, action_names[i], n))
					bit = 1u << i;
			if (!bit) {
				snprintf(err, errlen,
				         "unknown action \"%.*s\" "
				         "(expected upload, yank, delete, "
				         "read, or for a registry pull, push, "
				         "delete)",
				         (int)(n > 64 ? 64 : n), p);
				return EINVAL;
			}
			*mask |= bit;
		}
		if (!*end)
			break;
		p = end + 1;
	}
	if (!*mask) {
		snprintf(err, errlen,
		         "no actions given (expected some of "
		         "upload, yank, delete, read, pull, push)");
		return EINVAL;
	}
	return 0;
}

int token_actions_format(unsigned mask, char *out, size_t len)
{
	size_t o = 0, w;

	if (!len)
		return ENAMETOOLONG;
	out[0] = '\0';
	for (unsigned i = 0; i < NACTIONS; i++) {
		if (!(mask & (1u << i)))
			continue;
		w = strlen(action_names[i]) + (o ? 1 : 0);
		if (o + w + 1 > len)
			return ENAMETOOLONG;
		snprintf(out + o, len - o, "%s%s", o ? "," : "",
		         action_names[i]);
		o += w;
	}
	return 0;
}

int token_duration_parse(const char *text, long long *seconds, char *err,
                         size_t errlen)
{
	long long v = 0, unit;
	const char *p = text;

	*seconds = 0;
	if (strcmp(text, "never") == 0)
		return 0;
	while (*p >= '0' && *p <= '9') {
		v = v * 10 + (*p - '0');
		if (v > TOKEN_MAX_DURATION)
			goto bad;
		p++;
	}
	if (p == text || p[0] == '\0' || p[1] != '\0')
		goto bad;
	switch (*p) {
	case 's':
		unit = 1;
		break;
	case 'm':
		unit = 60;
		break;
	case 'h':
		unit = 3600;
		break;
	case 'd':
		unit = 86400;
		break;
	default:
		goto bad;
	}
	if (v <= 0 || v > TOKEN_MAX_DURATION / unit)
		goto bad;
	*seconds = v * unit;
	return 0;
bad:
	snprintf(err, errlen,
	         "expires \"%.64s\": expected a duration "
	         "(30m, 12h, 90d, up to 100 years) or never",
	         text);
	return EINVAL;
}

int token_hash(const char *salt, const char *secret, char hash[65])
{
	struct sha256 h;
	int err;

	hash[0] = '\0';
	err = sha256_init(&h);
	if (err)
		return err;
	sha256_update(&h, salt, strlen(salt));
	sha256_update(&h, secret, strlen(secret));
	sha256_final(&h, hash);
	return 0;
}

int token_verify(const char *salt, const char *secret, const char *hash)
{
	char want[65];

	if (strlen(salt) != TOKEN_SALT_HEX ||
	    !hex_is_lower(salt, TOKEN_SALT_HEX) || strlen(hash) != 64 ||
	    token_hash(salt, secret, want) || strlen(want) != 64)
		return 0;
	return CRYPTO_memcmp(want, hash, 64) == 0;
}

int token_file_project(const char *filename, char *out, size_t len)
{
	char name[NAMES_MAX_FILENAME + 1];
	size_t n = strlen(filename), cut = 0;

	if (n < 5 || n > NAMES_MAX_FILENAME)
		return EINVAL;
	if (!strcmp(filename + n - 4, ".whl")) {
		cut = strcspn(filename, "-");
	} else {
		for (size_t i = 1; i + 1 < n; i++)
			if (filename[i] == '-' && filename[i + 1] >= '0' &&
			    filename[i + 1] <= '9')
				cut = i;
	}
	if (!cut || cut >= n)
		return EINVAL;
	memcpy(name, filename, cut);
	name[cut] = '\0';
	return names_normalize(name, out, len) ? EINVAL : 0;
}

/* Whether index inner is outer or a layer of it, transitively. */
static int contains(const struct conf *c, int outer, int inner, int depth)
{
	const struct conf_index *ix = &c->index[outer];

	if (outer == inner)
		return 1;
	if (depth >= MAX_DEPTH || ix->type != CONF_INDEX_VIRTUAL)
		return 0;
	for (size_t i = 0; i < ix->nlayers; i++)
		if (contains(c, (int)ix->layer[i], inner, depth + 1))
			return 1;
	return 0;
}

int token_index_covers(const struct conf *c, int a, int b)
{
	if (a < 0 || b < 0 || (size_t)a >= c->nindex || (size_t)b >= c->nindex)
		return 0;
	return contains(c, a, b, 0);
}

int token_index_related(const struct conf *c, int a, int b)
{
	if (a < 0 || b < 0 || (size_t)a >= c->nindex || (size_t)b >= c->nindex)
		return 0;
	return contains(c, a, b, 0) || contains(c, b, a, 0);
}

static int read_required(const struct conf *c, int idx, int depth)
{
	const struct conf_index *ix = &c->index[idx];

	if (ix->read == CONF_READ_TOKEN)
		return 1;
	if (depth >= MAX_DEPTH || ix->type != CONF_INDEX_VIRTUAL)
		return 0;
	for (size_t i = 0; i < ix->nlayers; i++)
		if (read_required(c, (int)ix->layer[i], depth + 1))
			return 1;
	return 0;
}

int token_read_required(const struct conf *c, int idx)
{
	if (idx < 0 || (size_t)idx >= c->nindex)
		return 0;
	return read_required(c, idx, 0);
}

int token_repo_globs_normalize(const char *in, char *out, size_t len,
                               char *err, size_t errlen)
{
	size_t o = 0, limit;

	if (!len)
		return EINVAL;
	limit = len - 1 > NAMES_MAX_GLOBS ? NAMES_MAX_GLOBS : len - 1;
	for (const char *p = in; *p; p++) {
		unsigned char c = (unsigned char)*p;

		if (is_blank((char)c)) {
			if (o && out[o - 1] != ' ') {
				if (o >= limit)
					goto too_long;
				out[o++] = ' ';
			}
			continue;
		}
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		      c == '.' || c == '_' || c == '-' || c == '/' ||
		      c == '*' || c == '?')) {
			snprintf(err, errlen, "repository glob \"%.64s\": %s",
			         in,
			         "expected lowercase letters, digits, '.', "
			         "'_', '-', '/', '*' and '?'");
			out[0] = '\0';
			return EINVAL;
		}
		if (o >= limit)
			goto too_long;
		out[o++] = (char)c;
	}
	while (o && out[o - 1] == ' ')
		o--;
	out[o] = '\0';
	if (!o) {
		snprintf(err, errlen, "no repository globs given");
		return EINVAL;
	}
	return 0;
too_long:
	snprintf(err, errlen, "repository globs: longer than %zu bytes",
	         limit);
	out[0] = '\0';
	return EINVAL;
}
