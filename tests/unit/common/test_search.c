#include "config.h"

#include <errno.h>
#include <string.h>

#include "common/search.h"
#include "tests/unit/t.h"

struct match_case {
	const char *in;
	int err;
	const char *out;
};

static const struct match_case cases[] = {
	{"", 0, ""},
	{"   \t ", 0, ""},
	{"requests", 0, "\"requests\""},
	{"  two   words ", 0, "\"two\" \"words\""},
	{"requ*", 0, "\"requ\"*"},
	{"requ***", 0, "\"requ\"*"},
	{"a*b", 0, "\"a*b\""},
	{"*x", 0, "\"*x\""},
	/* FTS5 syntax is only words */
	{"\"", 0, ""},
	{"\"\"", 0, ""},
	{"*", 0, ""},
	{"a\"b", 0, "\"a\"\"b\""},
	{"\"unterminated", 0, "\"\"\"unterminated\""},
	{"NEAR(a b)", 0, "\"NEAR(a\" \"b)\""},
	{"a OR b", 0, "\"a\" \"OR\" \"b\""},
	{"NOT", 0, "\"NOT\""},
	{"name:foo", 0, "\"name:foo\""},
	{"^start", 0, "\"^start\""},
	{"-x", 0, "\"-x\""},
	{"( ) + - ^ : ; { }", 0, ""},
	{"{name summary}:x", 0, "\"{name\" \"summary}:x\""},
	{"caf\xc3\xa9", 0, "\"caf\xc3\xa9\""},
	{"\xe6\x97\xa5\xe6\x9c\xac", 0, "\"\xe6\x97\xa5\xe6\x9c\xac\""},
	/* refused */
	{"\xff", EINVAL, ""},
	{"caf\xc3", EINVAL, ""},
	{"\xc0\xaf", EINVAL, ""},         /* overlong */
	{"\xed\xa0\x80", EINVAL, ""},     /* a surrogate */
	{"\xf4\x90\x80\x80", EINVAL, ""}, /* past U+10FFFF */
	{"a\x01" "b", EINVAL, ""},
	{"a\x7f", EINVAL, ""},
	{"w1 w2 w3 w4 w5 w6 w7 w8 w9 w10 w11 w12 w13 w14 w15 w16 w17", EINVAL,
	 ""},
};

T(match_table)
{
	char out[SEARCH_MAX_MATCH], err[256];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int rc;

		err[0] = '\0';
		rc = search_match(cases[i].in, out, sizeof(out), err,
				  sizeof(err));
		CHECK_INT(rc, cases[i].err);
		if (rc == 0)
			CHECK_STR(out, cases[i].out);
		else
			CHECK(err[0] != '\0' && !strchr(err, '\n'));
		if (t_failed)
			fprintf(stderr, "  case %zu: \"%s\"\n", i, cases[i].in);
	}
}

T(sixteen_words_pass)
{
	char out[SEARCH_MAX_MATCH], err[256];

	CHECK_INT(search_match("a b c d e f g h i j k l m n o p", out,
			       sizeof(out), err, sizeof(err)), 0);
	/* a dropped word does not count */
	CHECK_INT(search_match("a b c d e f g h i j k l m n o p \" * (", out,
			       sizeof(out), err, sizeof(err)), 0);
}

T(length_limit)
{
	char q[SEARCH_MAX_QUERY + 2], out[SEARCH_MAX_MATCH], err[256];

	memset(q, 'a', SEARCH_MAX_QUERY);
	q[SEARCH_MAX_QUERY] = '\0';
	CHECK_INT(search_match(q, out, sizeof(out), err, sizeof(err)), 0);
	CHECK_INT(strlen(out), SEARCH_MAX_QUERY + 2);
	q[SEARCH_MAX_QUERY] = 'a';
	q[SEARCH_MAX_QUERY + 1] = '\0';
	CHECK_INT(search_match(q, out, sizeof(out), err, sizeof(err)), EINVAL);
	CHECK(strstr(err, "longer") != NULL);
}

T(worst_case_fits)
{
	/* sixteen words of quotes and a letter: every byte doubled */
	char q[SEARCH_MAX_QUERY + 1], out[SEARCH_MAX_MATCH], err[256];
	size_t n = 0;

	while (n + 16 <= SEARCH_MAX_QUERY) {
		memset(q + n, '"', 14);
		q[n + 14] = 'x';
		q[n + 15] = ' ';
		n += 16;
	}
	q[n] = '\0';
	CHECK_INT(search_match(q, out, sizeof(out), err, sizeof(err)), 0);
	CHECK(strlen(out) < sizeof(out));
}

T(small_buffer)
{
	char out[9], err[256]; /* the most "ab" may take, quoted */

	CHECK_INT(search_match("abcdefgh", out, sizeof(out), err,
			       sizeof(err)), ENOSPC);
	CHECK_INT(search_match("ab", out, sizeof(out), err, sizeof(err)), 0);
	CHECK_STR(out, "\"ab\"");
}

T(scopes)
{
	char out[64];

	CHECK_INT(search_scopes("", out, sizeof(out)), 0);
	CHECK_STR(out, "");
	CHECK_INT(search_scopes("\n", out, sizeof(out)), 0);
	CHECK_STR(out, "");
	CHECK_INT(search_scopes("\nmain\n", out, sizeof(out)), 0);
	CHECK_STR(out, "{scope} : (\"main\")");
	CHECK_INT(search_scopes("\nroot/private\nhub\n", out, sizeof(out)),
		  0);
	CHECK_STR(out, "{scope} : (\"root/private\" OR \"hub\")");
	CHECK_INT(search_scopes("\na\"b\n", out, sizeof(out)), 0);
	CHECK_STR(out, "{scope} : (\"a\"\"b\")");
	CHECK_INT(search_scopes("\nabcdefghijklmnopqrstuvwxyz0123456789\n"
				"abcdefghij\n", out, sizeof(out)), ENOSPC);
	CHECK_STR(out, "");
}

int main(void)
{
	RUN(match_table);
	RUN(sixteen_words_pass);
	RUN(length_limit);
	RUN(worst_case_fits);
	RUN(small_buffer);
	RUN(scopes);
	return t_done();
}
