#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "tests/unit/t.h"

T(empty)
{
	struct buf b;

	buf_init(&b, 100);
	CHECK(b.data == NULL);
	CHECK_INT(b.len, 0);
	CHECK_INT(b.max, 100);
	CHECK_STR(buf_str(&b), "");
	buf_reset(&b);
	CHECK_STR(buf_str(&b), "");
	buf_free(&b);
	CHECK_STR(buf_str(&b), "");
	/* free twice is harmless */
	buf_free(&b);
}

T(add)
{
	struct buf b;

	buf_init(&b, 1000);
	CHECK_INT(buf_add(&b, "abc", 3), 0);
	CHECK_INT(b.len, 3);
	CHECK_STR(buf_str(&b), "abc");
	CHECK_INT(buf_adds(&b, "def"), 0);
	CHECK_STR(buf_str(&b), "abcdef");
	CHECK_INT(buf_add(&b, "xyz", 0), 0);
	CHECK_STR(buf_str(&b), "abcdef");
	CHECK_INT(buf_adds(&b, ""), 0);
	CHECK_INT(b.len, 6);
	/* NUL bytes are data */
	CHECK_INT(buf_add(&b, "g\0h", 3), 0);
	CHECK_INT(b.len, 9);
	CHECK(memcmp(b.data, "abcdefg\0h", 9) == 0);
	CHECK(b.data[9] == '\0');
	buf_free(&b);
	CHECK(b.data == NULL);
	CHECK_INT(b.len, 0);
}

T(empty_add_allocates)
{
	struct buf b;

	buf_init(&b, 10);
	CHECK_INT(buf_add(&b, NULL, 0), 0);
	CHECK(b.data != NULL);
	CHECK_STR(buf_str(&b), "");
	buf_free(&b);
}

T(grows)
{
	struct buf b;
	char chunk[1000];
	size_t i;

	memset(chunk, 'x', sizeof(chunk));
	buf_init(&b, 1 << 20);
	for (i = 0; i < 100; i++)
		CHECK_INT(buf_add(&b, chunk, sizeof(chunk)), 0);
	CHECK_INT(b.len, 100000);
	CHECK(b.cap > b.len);
	CHECK(b.cap <= b.max + 1);
	CHECK(b.data[b.len] == '\0');
	for (i = 0; i < b.len; i++) {
		if (b.data[i] != 'x')
			break;
	}
	CHECK_INT(i, 100000);
	buf_free(&b);
}

T(limit)
{
	struct buf b;

	buf_init(&b, 5);
	CHECK_INT(buf_add(&b, "abcde", 5), 0);
	CHECK_STR(buf_str(&b), "abcde");
	/* one byte more is refused and changes nothing */
	CHECK_INT(buf_add(&b, "f", 1), E2BIG);
	CHECK_STR(buf_str(&b), "abcde");
	CHECK_INT(b.len, 5);
	CHECK_INT(buf_add(&b, "", 0), 0);
	CHECK(b.cap <= b.max + 1);
	buf_reset(&b);
	CHECK_INT(buf_add(&b, "abcdef", 6), E2BIG);
	CHECK_STR(buf_str(&b), "");
	CHECK_INT(buf_adds(&b, "abc"), 0);
	CHECK_INT(buf_adds(&b, "def"), E2BIG);
	CHECK_STR(buf_str(&b), "abc");
	/* sizes that would wrap around are refused, not wrapped */
	CHECK_INT(buf_add(&b, "x", SIZE_MAX), E2BIG);
	CHECK_INT(buf_add(&b, "x", SIZE_MAX - 1), E2BIG);
	CHECK_STR(buf_str(&b), "abc");
	buf_free(&b);

	/* a zero limit holds only the empty string */
	buf_init(&b, 0);
	CHECK_INT(buf_add(&b, "", 0), 0);
	CHECK_STR(buf_str(&b), "");
	CHECK_INT(buf_add(&b, "a", 1), E2BIG);
	buf_free(&b);
}

T(limit_large)
{
	struct buf b;
	char *big = malloc(5000);

	CHECK(big != NULL);
	if (!big)
		return;
	memset(big, 'y', 5000);
	buf_init(&b, 4096);
	CHECK_INT(buf_add(&b, big, 4096), 0);
	CHECK_INT(b.len, 4096);
	CHECK_INT(b.cap, 4097);
	CHECK_INT(buf_add(&b, big, 1), E2BIG);
	buf_reset(&b);
	CHECK_INT(buf_add(&b, big, 4097), E2BIG);
	CHECK_INT(buf_add(&b, big, 3000), 0);
	CHECK_INT(buf_add(&b, big, 1097), E2BIG);
	CHECK_INT(buf_add(&b, big, 1096), 0);
	CHECK_INT(b.len, 4096);
	buf_free(&b);
	free(big);
}

T(addf)
{
	struct buf b;

	buf_init(&b, 100);
	CHECK_INT(buf_addf(&b, "%d-%s", 42, "x"), 0);
	CHECK_STR(buf_str(&b), "42-x");
	CHECK_INT(buf_addf(&b, "%s", ""), 0);
	CHECK_STR(buf_str(&b), "42-x");
	CHECK_INT(buf_addf(&b, "/%05.1f/%c", 3.14159, 'z'), 0);
	CHECK_STR(buf_str(&b), "42-x/003.1/z");
	CHECK_INT(buf_addf(&b, "%%"), 0);
	CHECK_STR(buf_str(&b), "42-x/003.1/z%");
	buf_free(&b);

	/* on a fresh buffer, with an empty result */
	buf_init(&b, 100);
	CHECK_INT(buf_addf(&b, "%s", ""), 0);
	CHECK(b.data != NULL);
	CHECK_STR(buf_str(&b), "");
	buf_free(&b);
}

T(addf_limit)
{
	struct buf b;

	buf_init(&b, 10);
	CHECK_INT(buf_addf(&b, "%s", "0123456789"), 0);
	CHECK_INT(buf_addf(&b, "%d", 1), E2BIG);
	CHECK_STR(buf_str(&b), "0123456789");
	buf_reset(&b);
	CHECK_INT(buf_addf(&b, "%s%s", "012345", "6789a"), E2BIG);
	CHECK_STR(buf_str(&b), "");
	CHECK_INT(b.len, 0);
	CHECK_INT(buf_addf(&b, "%.3s", "abcdef"), 0);
	CHECK_STR(buf_str(&b), "abc");
	buf_free(&b);
}

T(addf_grows)
{
	struct buf b;
	char want[2001];
	int i;

	buf_init(&b, 1 << 16);
	for (i = 0; i < 200; i++)
		CHECK_INT(buf_addf(&b, "%010d", i), 0);
	CHECK_INT(b.len, 2000);
	CHECK_INT(strncmp(buf_str(&b), "0000000000000000000100000000020", 31),
		  0);
	CHECK_INT(strcmp(buf_str(&b) + 1990, "0000000199"), 0);
	buf_free(&b);

	/* one call bigger than the first allocation */
	memset(want, 'q', 2000);
	want[2000] = '\0';
	buf_init(&b, 1 << 16);
	CHECK_INT(buf_addf(&b, "%s", want), 0);
	CHECK_STR(buf_str(&b), want);
	buf_free(&b);
}

T(add_html)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
		{ "", "" },
		{ "plain", "plain" },
		{ "&", "&amp;" },
		{ "<", "&lt;" },
		{ ">", "&gt;" },
		{ "\"", "&quot;" },
		{ "'", "&#39;" },
		{ "a&b<c>d\"e'f", "a&amp;b&lt;c&gt;d&quot;e&#39;f" },
		{ "<<>>", "&lt;&lt;&gt;&gt;" },
		{ "&amp;", "&amp;amp;" },
		{ "<script>alert('x')</script>",
		  "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;" },
		{ "x.whl#sha256=ab", "x.whl#sha256=ab" },
		{ "caf\xc3\xa9", "caf\xc3\xa9" },
		{ "tail&", "tail&amp;" },
		{ "&head", "&amp;head" },
	};
	struct buf b;
	size_t i;

	buf_init(&b, 1000);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		buf_reset(&b);
		CHECK_INT(buf_add_html(&b, cases[i].in), 0);
		CHECK_STR(buf_str(&b), cases[i].out);
	}
	/* appends to what is there */
	buf_reset(&b);
	CHECK_INT(buf_adds(&b, "<a href=\""), 0);
	CHECK_INT(buf_add_html(&b, "/x?a=1&b=\"2\""), 0);
	CHECK_INT(buf_adds(&b, "\">"), 0);
	CHECK_STR(buf_str(&b), "<a href=\"/x?a=1&amp;b=&quot;2&quot;\">");
	buf_free(&b);
}

T(add_html_limit)
{
	struct buf b;

	/* the escape, not the input, must fit */
	buf_init(&b, 4);
	CHECK_INT(buf_add_html(&b, "abcd"), 0);
	buf_reset(&b);
	CHECK_INT(buf_add_html(&b, "&"), E2BIG);
	CHECK(b.len <= b.max);
	buf_free(&b);

	buf_init(&b, 5);
	CHECK_INT(buf_add_html(&b, "&"), 0);
	CHECK_STR(buf_str(&b), "&amp;");
	CHECK_INT(buf_add_html(&b, "x"), E2BIG);
	CHECK_STR(buf_str(&b), "&amp;");
	buf_free(&b);
}

T(reset)
{
	struct buf b;
	char *before;

	buf_init(&b, 100);
	CHECK_INT(buf_adds(&b, "hello"), 0);
	before = b.data;
	buf_reset(&b);
	CHECK_INT(b.len, 0);
	CHECK_STR(buf_str(&b), "");
	/* the allocation is kept and reused */
	CHECK(b.data == before);
	CHECK(b.cap > 0);
	CHECK_INT(buf_adds(&b, "bye"), 0);
	CHECK_STR(buf_str(&b), "bye");
	CHECK(b.data == before);
	/* the limit counts from empty again */
	buf_reset(&b);
	CHECK_INT(b.max, 100);
	buf_free(&b);
}

T(steal)
{
	struct buf b;
	char *s;

	buf_init(&b, 100);
	CHECK_INT(buf_adds(&b, "mine"), 0);
	s = buf_steal(&b);
	CHECK_STR(s, "mine");
	CHECK(b.data == NULL);
	CHECK_INT(b.len, 0);
	CHECK_INT(b.cap, 0);
	CHECK_INT(b.max, 100);
	CHECK_STR(buf_str(&b), "");
	/* the buffer is reusable and s is independent of it */
	CHECK_INT(buf_adds(&b, "next"), 0);
	CHECK_STR(buf_str(&b), "next");
	CHECK_STR(s, "mine");
	free(s);
	buf_free(&b);

	/* an empty buffer gives "", not NULL */
	buf_init(&b, 100);
	s = buf_steal(&b);
	CHECK(s != NULL);
	if (s)
		CHECK_STR(s, "");
	free(s);
	/* and so does a reset one */
	CHECK_INT(buf_adds(&b, "x"), 0);
	buf_reset(&b);
	s = buf_steal(&b);
	CHECK_STR(s, "");
	free(s);
	buf_free(&b);
}

int main(void)
{
	RUN(empty);
	RUN(add);
	RUN(empty_add_allocates);
	RUN(grows);
	RUN(limit);
	RUN(limit_large);
	RUN(addf);
	RUN(addf_limit);
	RUN(addf_grows);
	RUN(add_html);
	RUN(add_html_limit);
	RUN(reset);
	RUN(steal);
	return t_done();
}
