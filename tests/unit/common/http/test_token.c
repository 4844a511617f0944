#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/conf/conf.h"
#include "common/http/token.h"
#include "common/names.h"
#include "tests/unit/t.h"

#define ID "0123456789abcdef"
#define SECRET "00112233445566778899aabbccddeeff" \
	       "00112233445566778899aabbccddeeff"
#define TOKEN "lt_" ID "_" SECRET
/* base64 of "__token__:" TOKEN, of TOKEN ":" and of "__token__:x" */
#define B64_USER_PW "X190b2tlbl9fOmx0XzAxMjM0NTY3ODlhYmNkZWZfMDAxMTIyMzM0" \
	"NDU1NjY3Nzg4OTlhYWJiY2NkZGVlZmYwMDExMjIzMzQ0NTU2Njc3ODg5OWFhYmJjY2R" \
	"kZWVmZg=="
#define B64_TOKEN_USER "bHRfMDEyMzQ1Njc4OWFiY2RlZl8wMDExMjIzMzQ0NTU2Njc3ODg5" \
	"OWFhYmJjY2RkZWVmZjAwMTEyMjMzNDQ1NTY2Nzc4ODk5YWFiYmNjZGRlZWZmOg=="

T(format_and_parse)
{
	char out[TOKEN_TEXT_LEN + 1], id[17], secret[65];

	CHECK_INT(token_format(ID, SECRET, out, sizeof(out)), 0);
	CHECK_STR(out, TOKEN);
	CHECK_INT(token_format(ID, SECRET, out, sizeof(out) - 1),
		  ENAMETOOLONG);
	CHECK_INT(token_format("0123", SECRET, out, sizeof(out)), EINVAL);
	CHECK_INT(token_format("0123456789ABCDEF", SECRET, out, sizeof(out)),
		  EINVAL);
	CHECK_INT(token_parse(TOKEN, strlen(TOKEN), id, secret), 0);
	CHECK_STR(id, ID);
	CHECK_STR(secret, SECRET);
	/* a byte short, a byte long, upper case, wrong prefix, no '_' */
	CHECK_INT(token_parse(TOKEN, strlen(TOKEN) - 1, id, secret), EINVAL);
	CHECK_INT(token_parse(TOKEN "0", strlen(TOKEN) + 1, id, secret),
		  EINVAL);
	CHECK_INT(token_parse("lt_0123456789ABCDEF_" SECRET,
			      strlen(TOKEN), id, secret), EINVAL);
	CHECK_INT(token_parse("xt_" ID "_" SECRET, strlen(TOKEN), id, secret),
		  EINVAL);
	CHECK_INT(token_parse("lt_" ID "-" SECRET, strlen(TOKEN), id, secret),
		  EINVAL);
}

T(base64_strict)
{
	unsigned char out[16];
	size_t n;

	CHECK_INT(token_base64_decode("", 0, out, sizeof(out), &n), 0);
	CHECK_INT(n, 0);
	CHECK_INT(token_base64_decode("YQ==", 4, out, sizeof(out), &n), 0);
	CHECK_INT(n, 1);
	CHECK(out[0] == 'a');
	CHECK_INT(token_base64_decode("YWI=", 4, out, sizeof(out), &n), 0);
	CHECK_INT(n, 2);
	CHECK_INT(token_base64_decode("YWJj", 4, out, sizeof(out), &n), 0);
	CHECK_INT(n, 3);
	CHECK(memcmp(out, "abc", 3) == 0);
	CHECK_INT(token_base64_decode("+/+/", 4, out, sizeof(out), &n), 0);
	CHECK(out[0] == 0xfb && out[1] == 0xff && out[2] == 0xbf);
	/* unpadded, padding inside, too much padding, a bad byte, spare
	 * bits set, URL-safe alphabet */
	CHECK_INT(token_base64_decode("YQ", 2, out, sizeof(out), &n), EINVAL);
	CHECK_INT(token_base64_decode("YQ==YWJj", 8, out, sizeof(out), &n),
		  EINVAL);
	CHECK_INT(token_base64_decode("Y===", 4, out, sizeof(out), &n), EINVAL);
	CHECK_INT(token_base64_decode("Y=Q=", 4, out, sizeof(out), &n), EINVAL);
	CHECK_INT(token_base64_decode("YW J", 4, out, sizeof(out), &n), EINVAL);
	CHECK_INT(token_base64_decode("YR==", 4, out, sizeof(out), &n), EINVAL);
	CHECK_INT(token_base64_decode("YWJ=", 4, out, sizeof(out), &n), EINVAL);
	CHECK_INT(token_base64_decode("-_-_", 4, out, sizeof(out), &n), EINVAL);
	CHECK_INT(token_base64_decode("YWJjYWJj", 8, out, 5, &n), ENOBUFS);
}

T(authorization_header)
{
	char id[17], secret[65];

	CHECK_INT(token_from_authorization("Basic " B64_USER_PW, id, secret),
		  0);
	CHECK_STR(id, ID);
	CHECK_STR(secret, SECRET);
	memset(id, 0, sizeof(id));
	CHECK_INT(token_from_authorization("basic  " B64_TOKEN_USER " ", id,
					   secret), 0);
	CHECK_STR(id, ID);
	CHECK_INT(token_from_authorization("Bearer " TOKEN, id, secret), 0);
	CHECK_STR(secret, SECRET);
	CHECK_INT(token_from_authorization("BEARER\t" TOKEN, id, secret), 0);
	CHECK_INT(token_from_authorization(NULL, id, secret), ENOENT);
	CHECK_INT(token_from_authorization("", id, secret), ENOENT);
	CHECK_INT(token_from_authorization("  ", id, secret), ENOENT);
	/* "__token__:x", a password that is no token */
	CHECK_INT(token_from_authorization("Basic X190b2tlbl9fOng=", id,
					   secret), EINVAL);
	/* "abc" has no ':' */
	CHECK_INT(token_from_authorization("Basic YWJj", id, secret), EINVAL);
	CHECK_INT(token_from_authorization("Basic", id, secret), EINVAL);
	CHECK_INT(token_from_authorization("Basic !!!!", id, secret), EINVAL);
	CHECK_INT(token_from_authorization("Bearer", id, secret), EINVAL);
	CHECK_INT(token_from_authorization("Bearer " TOKEN "x", id, secret),
		  EINVAL);
	CHECK_INT(token_from_authorization("Digest " TOKEN, id, secret),
		  EINVAL);
	CHECK_INT(token_from_authorization(TOKEN, id, secret), EINVAL);
}

T(actions)
{
	char err[256] = "", out[64];
	unsigned m = 0;

	CHECK_INT(token_actions_parse("upload,yank,delete,read", &m, err,
				      sizeof(err)), 0);
	CHECK_INT(m, TOKEN_ALL_ACTIONS);
	CHECK_INT(token_actions_parse(" read , upload ", &m, err,
				      sizeof(err)), 0);
	CHECK_INT(m, TOKEN_READ | TOKEN_UPLOAD);
	CHECK_INT(token_actions_format(m, out, sizeof(out)), 0);
	CHECK_STR(out, "upload,read");
	CHECK_INT(token_actions_parse("upload,,yank", &m, err, sizeof(err)),
		  0);
	CHECK_INT(m, TOKEN_UPLOAD | TOKEN_YANK);
	CHECK_INT(token_actions_parse("upload,publish", &m, err, sizeof(err)),
		  EINVAL);
	CHECK_CONTAINS(err, "unknown action \"publish\"");
	CHECK_INT(token_actions_parse("Upload", &m, err, sizeof(err)), EINVAL);
	CHECK_INT(token_actions_parse("uploa", &m, err, sizeof(err)), EINVAL);
	CHECK_INT(token_actions_parse("", &m, err, sizeof(err)), EINVAL);
	CHECK_CONTAINS(err, "no actions");
	CHECK_INT(token_actions_parse(" , ", &m, err, sizeof(err)), EINVAL);
	CHECK_INT(token_actions_format(TOKEN_DELETE, out, sizeof(out)), 0);
	CHECK_STR(out, "delete");
	CHECK_INT(token_actions_format(TOKEN_ALL_ACTIONS, out, 10),
		  ENAMETOOLONG);
	CHECK_STR(token_action_name(TOKEN_YANK), "yank");
	CHECK_STR(token_action_name(3), "?");
}

T(globs)
{
	char out[512], err[256] = "";

	CHECK_INT(names_globs_normalize("Corp_* internal.?", out, sizeof(out),
					err, sizeof(err)), 0);
	CHECK_STR(out, "corp-* internal-?");
	CHECK_INT(names_globs_normalize("  *  ", out, sizeof(out), err,
					sizeof(err)), 0);
	CHECK_STR(out, "*");
	CHECK_INT(names_globs_normalize("a--b__c _x", out, sizeof(out), err,
					sizeof(err)), 0);
	CHECK_STR(out, "a-b-c x");
	CHECK_INT(names_globs_normalize("", out, sizeof(out), err,
					sizeof(err)), EINVAL);
	CHECK_CONTAINS(err, "no project globs");
	CHECK_INT(names_globs_normalize("corp/*", out, sizeof(out), err,
					sizeof(err)), EINVAL);
	CHECK_CONTAINS(err, "corp/*");
	CHECK_INT(names_globs_normalize("abcdef", out, 6, err, sizeof(err)),
		  EINVAL);
	CHECK_INT(names_globs_normalize("abcde", out, 6, err, sizeof(err)), 0);

	CHECK_INT(names_globs_match("*", "anything"), 1);
	CHECK_INT(names_globs_match("corp-*", "corp-lib"), 1);
	CHECK_INT(names_globs_match("corp-*", "corp-"), 1);
	CHECK_INT(names_globs_match("corp-*", "corp"), 0);
	CHECK_INT(names_globs_match("corp-*", "xcorp-lib"), 0);
	CHECK_INT(names_globs_match("a?c", "abc"), 1);
	CHECK_INT(names_globs_match("a?c", "ac"), 0);
	CHECK_INT(names_globs_match("a?c", "abbc"), 0);
	CHECK_INT(names_globs_match("*-lib", "corp-x-lib"), 1);
	CHECK_INT(names_globs_match("*a*b*c", "xxaxxbxxc"), 1);
	CHECK_INT(names_globs_match("*a*b*c", "xxaxxcxxb"), 0);
	CHECK_INT(names_globs_match("foo bar-* baz", "bar-1"), 1);
	CHECK_INT(names_globs_match("foo bar-* baz", "baz"), 1);
	CHECK_INT(names_globs_match("foo bar-* baz", "ba"), 0);
	CHECK_INT(names_globs_match("", "x"), 0);
	CHECK_INT(names_globs_match("**", ""), 1);
	CHECK_INT(names_globs_match("?", ""), 0);
	/* a star is a wildcard even facing a star */
	CHECK_INT(names_globs_match("*", "*a"), 1);
	CHECK_INT(names_globs_match("a*", "a*b"), 1);
}

T(durations)
{
	char err[256] = "";
	long long s = -1;

	CHECK_INT(token_duration_parse("never", &s, err, sizeof(err)), 0);
	CHECK_INT(s, 0);
	CHECK_INT(token_duration_parse("30m", &s, err, sizeof(err)), 0);
	CHECK_INT(s, 1800);
	CHECK_INT(token_duration_parse("12h", &s, err, sizeof(err)), 0);
	CHECK_INT(s, 43200);
	CHECK_INT(token_duration_parse("90d", &s, err, sizeof(err)), 0);
	CHECK_INT(s, 90 * 86400);
	CHECK_INT(token_duration_parse("5s", &s, err, sizeof(err)), 0);
	CHECK_INT(s, 5);
	CHECK_INT(token_duration_parse("36600d", &s, err, sizeof(err)), 0);
	CHECK_INT(token_duration_parse("36601d", &s, err, sizeof(err)),
		  EINVAL);
	CHECK_INT(token_duration_parse("99999999999999999999d", &s, err,
				       sizeof(err)), EINVAL);
	CHECK_INT(token_duration_parse("0d", &s, err, sizeof(err)), EINVAL);
	CHECK_INT(token_duration_parse("90", &s, err, sizeof(err)), EINVAL);
	CHECK_INT(token_duration_parse("d", &s, err, sizeof(err)), EINVAL);
	CHECK_INT(token_duration_parse("9w", &s, err, sizeof(err)), EINVAL);
	CHECK_INT(token_duration_parse("-5d", &s, err, sizeof(err)), EINVAL);
	CHECK_INT(token_duration_parse("5dd", &s, err, sizeof(err)), EINVAL);
	CHECK_INT(token_duration_parse("", &s, err, sizeof(err)), EINVAL);
	CHECK_CONTAINS(err, "expected a duration");
}

T(hash_and_verify)
{
#define SALT "000102030405060708090a0b0c0d0e0f"
	static const char salt[] = SALT;
	char hash[65], other[65];

	CHECK_INT(token_hash(salt, SECRET, hash), 0);
	CHECK_INT((long long)strlen(hash), 64);
	/* SHA-256 of the salt's hex then the secret's, as text */
	CHECK_INT(token_hash("", SALT SECRET, other), 0);
	CHECK_STR(hash, other);
	CHECK_INT(token_verify(salt, SECRET, hash), 1);
	CHECK_INT(token_verify(salt, "1011223344556677" "8899aabbccddeeff"
			       "0011223344556677" "8899aabbccddeeff", hash), 0);
	CHECK_INT(token_verify("100102030405060708090a0b0c0d0e0f", SECRET,
			       hash), 0);
	CHECK_INT(token_verify("short", SECRET, hash), 0);
	hash[63] = hash[63] == '0' ? '1' : '0';
	CHECK_INT(token_verify(salt, SECRET, hash), 0);
	hash[63] = '\0';
	CHECK_INT(token_verify(salt, SECRET, hash), 0);
}

T(file_projects)
{
	char p[256];

	CHECK_INT(token_file_project("Corp_Lib-1.0-py3-none-any.whl", p,
				     sizeof(p)), 0);
	CHECK_STR(p, "corp-lib");
	CHECK_INT(token_file_project("corp-lib-1.0.tar.gz", p, sizeof(p)), 0);
	CHECK_STR(p, "corp-lib");
	CHECK_INT(token_file_project("corp_lib-1.0.tar.gz", p, sizeof(p)), 0);
	CHECK_STR(p, "corp-lib");
	CHECK_INT(token_file_project("zope.interface-5.4.0.zip", p,
				     sizeof(p)), 0);
	CHECK_STR(p, "zope-interface");
	CHECK_INT(token_file_project("noversion.tar.gz", p, sizeof(p)),
		  EINVAL);
	CHECK_INT(token_file_project("-1.0.tar.gz", p, sizeof(p)), EINVAL);
	CHECK_INT(token_file_project("x.whl", p, sizeof(p)), EINVAL);
}

static const char layered[] =
	"[index \"pypi\"]\ntype = cache\nupstream = https://pypi.org/simple/\n"
	"[index \"root/private\"]\ntype = hosted\nread = token\n"
	"[index \"team/private\"]\ntype = hosted\n"
	"[index \"root/pypi\"]\ntype = virtual\n"
	"layers = root/private pypi\n"
	"[index \"outer\"]\ntype = virtual\nlayers = root/pypi\n"
	"[index \"team\"]\ntype = virtual\nlayers = team/private pypi\n";

T(index_relations)
{
	char err[512] = "";
	struct conf c;
	int pypi, priv, team_priv, rp, outer, team;

	CHECK_INT(conf_defaults(&c), 0);
	CHECK_INT(conf_parse(&c, "t", layered, strlen(layered), err,
			     sizeof(err)), 0);
	if (*err)
		fprintf(stderr, "  %s\n", err);
	pypi = conf_index_find(&c, "pypi");
	priv = conf_index_find(&c, "root/private");
	team_priv = conf_index_find(&c, "team/private");
	rp = conf_index_find(&c, "root/pypi");
	outer = conf_index_find(&c, "outer");
	team = conf_index_find(&c, "team");
	CHECK(pypi >= 0 && priv >= 0 && team_priv >= 0 && rp >= 0 &&
	      outer >= 0 && team >= 0);
	CHECK_INT(token_index_related(&c, priv, priv), 1);
	CHECK_INT(token_index_related(&c, priv, rp), 1);
	CHECK_INT(token_index_related(&c, rp, priv), 1);
	CHECK_INT(token_index_related(&c, priv, outer), 1);
	CHECK_INT(token_index_related(&c, outer, priv), 1);
	CHECK_INT(token_index_related(&c, outer, pypi), 1);
	/* siblings are not related */
	CHECK_INT(token_index_related(&c, priv, pypi), 0);
	CHECK_INT(token_index_related(&c, priv, team_priv), 0);
	CHECK_INT(token_index_related(&c, priv, team), 0);
	CHECK_INT(token_index_related(&c, rp, team), 0);
	CHECK_INT(token_index_related(&c, -1, priv), 0);
	CHECK_INT(token_index_related(&c, priv, 99), 0);

	CHECK_INT(token_read_required(&c, priv), 1);
	CHECK_INT(token_read_required(&c, rp), 1);
	CHECK_INT(token_read_required(&c, outer), 1);
	CHECK_INT(token_read_required(&c, pypi), 0);
	CHECK_INT(token_read_required(&c, team_priv), 0);
	CHECK_INT(token_read_required(&c, team), 0);
	CHECK_INT(token_read_required(&c, -1), 0);
	conf_free(&c);
}

int main(void)
{
	RUN(format_and_parse);
	RUN(base64_strict);
	RUN(authorization_header);
	RUN(actions);
	RUN(globs);
	RUN(durations);
	RUN(hash_and_verify);
	RUN(file_projects);
	RUN(index_relations);
	return t_done();
}
