#include "config.h"

#include <errno.h>
#include <string.h>

#include "common/names.h"
#include "tests/unit/t.h"

struct norm_case {
	const char *in;
	int err;
	const char *out;
};

static const struct norm_case norm_cases[] = {
	{ "foo", 0, "foo" },
	{ "Foo", 0, "foo" },
	{ "FOO", 0, "foo" },
	{ "Foo.Bar__baz", 0, "foo-bar-baz" },
	{ "foo-bar", 0, "foo-bar" },
	{ "foo_bar", 0, "foo-bar" },
	{ "foo.bar", 0, "foo-bar" },
	{ "foo--bar", 0, "foo-bar" },
	{ "foo-_.-bar", 0, "foo-bar" },
	{ "Django", 0, "django" },
	{ "zope.interface", 0, "zope-interface" },
	{ "typing_extensions", 0, "typing-extensions" },
	{ "Jinja2", 0, "jinja2" },
	{ "a", 0, "a" },
	{ "A", 0, "a" },
	{ "0", 0, "0" },
	{ "1-2", 0, "1-2" },
	{ "a.b.c", 0, "a-b-c" },
	{ "ruamel.yaml.clib", 0, "ruamel-yaml-clib" },
	{ "", EINVAL, "" },
	{ "-x", EINVAL, "" },
	{ "x-", EINVAL, "" },
	{ "_x", EINVAL, "" },
	{ "x_", EINVAL, "" },
	{ ".x", EINVAL, "" },
	{ "x.", EINVAL, "" },
	{ "-", EINVAL, "" },
	{ ".", EINVAL, "" },
	{ "..", EINVAL, "" },
	{ "a/b", EINVAL, "" },
	{ "a\\b", EINVAL, "" },
	{ "a b", EINVAL, "" },
	{ " a", EINVAL, "" },
	{ "a\n", EINVAL, "" },
	{ "a\rb", EINVAL, "" },
	{ "a%2fb", EINVAL, "" },
	{ "%2e%2e", EINVAL, "" },
	{ "a+b", EINVAL, "" },
	{ "a~b", EINVAL, "" },
	{ "a:b", EINVAL, "" },
	{ "caf\xc3\xa9", EINVAL, "" },     /* UTF-8 e-acute at the end */
	{ "\xc3\xa9t\xc3\xa9", EINVAL, "" },
	{ "na\xc3\xafve", EINVAL, "" },    /* UTF-8 in the middle */
	{ "a\xff" "b", EINVAL, "" },
	{ "\xef\xbc\xa1", EINVAL, "" },    /* fullwidth A */
	{ "K\xe2\x84\xaa", EINVAL, "" },   /* Kelvin sign */
};

T(normalize_table)
{
	char out[NAMES_MAX_PROJECT + 1];
	size_t i;

	for (i = 0; i < sizeof(norm_cases) / sizeof(norm_cases[0]); i++) {
		const struct norm_case *tc = &norm_cases[i];

		int err;

		strcpy(out, "stale");
		err = names_normalize(tc->in, out, sizeof(out));
		CHECK_INT(err, tc->err);
		CHECK_STR(out, tc->out);
		if (err != tc->err || strcmp(out, tc->out) != 0)
			fprintf(stderr, "  case %zu: \"%s\"\n", i, tc->in);
	}
}

T(normalize_null)
{
	char out[8];

	CHECK_INT(names_normalize(NULL, out, sizeof(out)), EINVAL);
	CHECK_STR(out, "");
}

T(normalize_length_limit)
{
	char name[NAMES_MAX_PROJECT + 2];
	char want[NAMES_MAX_PROJECT + 1];
	char out[NAMES_MAX_PROJECT + 1];

	/* exactly 200 is fine */
	memset(name, 'A', NAMES_MAX_PROJECT);
	name[NAMES_MAX_PROJECT] = '\0';
	memset(want, 'a', NAMES_MAX_PROJECT);
	want[NAMES_MAX_PROJECT] = '\0';
	CHECK_INT(names_normalize(name, out, sizeof(out)), 0);
	CHECK_STR(out, want);

	/* 201 is not */
	memset(name, 'a', NAMES_MAX_PROJECT + 1);
	name[NAMES_MAX_PROJECT + 1] = '\0';
	CHECK_INT(names_normalize(name, out, sizeof(out)), EINVAL);
	CHECK_STR(out, "");

	/* the limit is on the name as given, not the normalised form */
	memset(name, 'a', NAMES_MAX_PROJECT + 1);
	memset(name + 1, '_', NAMES_MAX_PROJECT - 1);
	name[NAMES_MAX_PROJECT + 1] = '\0';
	CHECK_INT(names_normalize(name, out, sizeof(out)), EINVAL);
	name[NAMES_MAX_PROJECT] = '\0';
	name[NAMES_MAX_PROJECT - 1] = 'b';
	CHECK_INT(names_normalize(name, out, sizeof(out)), 0);
	CHECK_STR(out, "a-b");
}

T(normalize_small_buffer)
{
	char out[8];

	CHECK_INT(names_normalize("abcdefg", out, 8), 0);
	CHECK_STR(out, "abcdefg");
	CHECK_INT(names_normalize("abcdefgh", out, 8), ENAMETOOLONG);
	CHECK_STR(out, "");
	/* fits only once the runs are folded */
	CHECK_INT(names_normalize("ab___cdef", out, 8), 0);
	CHECK_STR(out, "ab-cdef");
	CHECK_INT(names_normalize("a", out, 1), ENAMETOOLONG);
	CHECK_STR(out, "");
	CHECK_INT(names_normalize("a", out, 2), 0);
	CHECK_STR(out, "a");
	CHECK_INT(names_normalize("a", NULL, 0), ENAMETOOLONG);
	/* validity is checked before size */
	CHECK_INT(names_normalize("-a", out, 1), EINVAL);
}

T(normalize_idempotent)
{
	char once[NAMES_MAX_PROJECT + 1], twice[NAMES_MAX_PROJECT + 1];
	size_t i;

	for (i = 0; i < sizeof(norm_cases) / sizeof(norm_cases[0]); i++) {
		if (norm_cases[i].err)
			continue;
		CHECK_INT(names_normalize(norm_cases[i].in, once,
					  sizeof(once)),
			  0);
		CHECK_INT(names_normalize(once, twice, sizeof(twice)), 0);
		CHECK_STR(twice, once);
	}
}

T(sha256)
{
	const char *good = "e3b0c44298fc1c149afbf4c8996fb924"
			   "27ae41e4649b934ca495991b7852b855";
	char s[80];

	CHECK_INT(names_is_sha256(good), 1);
	CHECK_INT(names_is_sha256("0000000000000000000000000000000000000000"
				  "000000000000000000000000"),
		  1);
	CHECK_INT(names_is_sha256(NULL), 0);
	CHECK_INT(names_is_sha256(""), 0);

	/* 63 and 65 digits */
	strcpy(s, good);
	s[63] = '\0';
	CHECK_INT(names_is_sha256(s), 0);
	strcpy(s, good);
	strcat(s, "0");
	CHECK_INT(names_is_sha256(s), 0);

	/* uppercase */
	strcpy(s, good);
	s[0] = 'E';
	CHECK_INT(names_is_sha256(s), 0);

	/* non-hex anywhere */
	strcpy(s, good);
	s[10] = 'g';
	CHECK_INT(names_is_sha256(s), 0);
	strcpy(s, good);
	s[63] = 'z';
	CHECK_INT(names_is_sha256(s), 0);
	strcpy(s, good);
	s[0] = ' ';
	CHECK_INT(names_is_sha256(s), 0);
	strcpy(s, good);
	s[32] = '/';
	CHECK_INT(names_is_sha256(s), 0);
	strcpy(s, good);
	s[5] = '\0';
	CHECK_INT(names_is_sha256(s), 0);
}

struct fn_case {
	const char *in;
	int ok;
};

static const struct fn_case fn_cases[] = {
	{ "requests-2.31.0-py3-none-any.whl", 1 },
	{ "requests-2.31.0.tar.gz", 1 },
	{ "numpy-1.26.4-cp312-cp312-"
	  "manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
	  1 },
	{ "torch-2.2.0+cpu-cp311-cp311-linux_x86_64.whl", 1 },
	{ "pkg-1.0!2-py3-none-any.whl", 1 },
	{ "a~b", 1 },
	{ "x.whl.metadata", 1 },
	{ "a", 1 },
	{ "A", 1 },
	{ "a..b", 1 },
	{ "", 0 },
	{ ".", 0 },
	{ "..", 0 },
	{ ".hidden", 0 },
	{ "a/b", 0 },
	{ "a\\b", 0 },
	{ "a b", 0 },
	{ "a\nb", 0 },
	{ "a\r", 0 },
	{ "a%2e", 0 },
	{ "a;b", 0 },
	{ "a?b", 0 },
	{ "a#b", 0 },
	{ "a\"b", 0 },
	{ "a'b", 0 },
	{ "a<b", 0 },
	{ "caf\xc3\xa9.whl", 0 },
	{ "a\x7f", 0 },
};

T(filename_table)
{
	size_t i;

	for (i = 0; i < sizeof(fn_cases) / sizeof(fn_cases[0]); i++) {
		int got = names_is_filename(fn_cases[i].in);

		CHECK_INT(got, fn_cases[i].ok);
		if (got != fn_cases[i].ok)
			fprintf(stderr, "  case %zu: \"%s\"\n", i,
				fn_cases[i].in);
	}
	CHECK_INT(names_is_filename(NULL), 0);
}

T(filename_length)
{
	char s[NAMES_MAX_FILENAME + 2];

	memset(s, 'a', NAMES_MAX_FILENAME);
	s[NAMES_MAX_FILENAME] = '\0';
	CHECK_INT(names_is_filename(s), 1);
	s[NAMES_MAX_FILENAME] = 'a';
	s[NAMES_MAX_FILENAME + 1] = '\0';
	CHECK_INT(names_is_filename(s), 0);
}

int main(void)
{
	RUN(normalize_table);
	RUN(normalize_null);
	RUN(normalize_length_limit);
	RUN(normalize_small_buffer);
	RUN(normalize_idempotent);
	RUN(sha256);
	RUN(filename_table);
	RUN(filename_length);
	return t_done();
}
