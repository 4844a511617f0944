#include "config.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "common/hex.h"
#include "tests/unit/t.h"

/* What hex_value should say about ch, worked out another way. */
static int want_value(int ch)
{
	static const char lower[] = "0123456789abcdef";
	static const char upper[] = "0123456789ABCDEF";

	for (int i = 0; i < 16; i++)
		if (ch == lower[i] || ch == upper[i])
			return i;
	return -1;
}

T(value_every_byte)
{
	for (int ch = 0; ch < 256; ch++) {
		int before = t_failed;

		CHECK_INT(hex_value(ch), want_value(ch));
		if (t_failed != before)
			fprintf(stderr, "  byte 0x%02x\n", ch);
	}
}

T(value_edges)
{
	CHECK_INT(hex_value('0'), 0);
	CHECK_INT(hex_value('9'), 9);
	CHECK_INT(hex_value('a'), 10);
	CHECK_INT(hex_value('F'), 15);
	/* the neighbours of each range */
	CHECK_INT(hex_value('/'), -1);
	CHECK_INT(hex_value(':'), -1);
	CHECK_INT(hex_value('`'), -1);
	CHECK_INT(hex_value('g'), -1);
	CHECK_INT(hex_value('@'), -1);
	CHECK_INT(hex_value('G'), -1);
	CHECK_INT(hex_value('\0'), -1);
	/* a char above 0x7f passed without a cast, and EOF */
	CHECK_INT(hex_value((char)0xb0), -1);
	CHECK_INT(hex_value(-1), -1);
	CHECK_INT(hex_value(INT_MIN), -1);
	CHECK_INT(hex_value(256 + '0'), -1);
}

T(is_lower)
{
	CHECK_INT(hex_is_lower("0123456789abcdef", 16), 1);
	CHECK_INT(hex_is_lower("", 0), 1);
	CHECK_INT(hex_is_lower("xyz", 0), 1);
	CHECK_INT(hex_is_lower("0123456789ABCDEF", 16), 0);
	CHECK_INT(hex_is_lower("abcdeF", 6), 0);
	CHECK_INT(hex_is_lower("abcdeg", 6), 0);
	CHECK_INT(hex_is_lower("ab cd", 5), 0);
	CHECK_INT(hex_is_lower("\xb0\x31", 2), 0);
	/* only n bytes are looked at */
	CHECK_INT(hex_is_lower("abcZ", 3), 1);
	CHECK_INT(hex_is_lower("abcZ", 4), 0);
}

T(is_lower_stops_at_nul)
{
	/* an exact-size heap copy: ASan reports any read past the NUL */
	char *s = malloc(3);

	CHECK(s != NULL);
	if (!s)
		return;
	memcpy(s, "ab", 3);
	CHECK_INT(hex_is_lower(s, 64), 0);
	free(s);
}

T(encode_vectors)
{
	char out[64];

	hex_encode("", 0, out);
	CHECK_STR(out, "");
	hex_encode("\x00", 1, out);
	CHECK_STR(out, "00");
	hex_encode("\xff", 1, out);
	CHECK_STR(out, "ff");
	hex_encode("\x01\x23\x45\x67\x89\xab\xcd\xef", 8, out);
	CHECK_STR(out, "0123456789abcdef");
	hex_encode("\xde\xad\xbe\xef\x0a\xf0", 6, out);
	CHECK_STR(out, "deadbeef0af0");
	hex_encode("abc", 3, out);
	CHECK_STR(out, "616263");
}

T(encode_every_byte)
{
	unsigned char b[256];
	/* exact size: ASan reports a write past the NUL */
	char *out = malloc(2 * sizeof(b) + 1);

	CHECK(out != NULL);
	if (!out)
		return;
	for (int i = 0; i < 256; i++)
		b[i] = (unsigned char)i;
	hex_encode(b, sizeof(b), out);
	CHECK_INT(strlen(out), 2 * sizeof(b));
	CHECK_INT(hex_is_lower(out, 2 * sizeof(b)), 1);
	for (int i = 0; i < 256; i++) {
		int v = hex_value((unsigned char)out[2 * i]) * 16 +
		        hex_value((unsigned char)out[2 * i + 1]);

		CHECK_INT(v, i);
	}
	free(out);
}

T(encode_leaves_rest)
{
	char out[8];

	memset(out, 'x', sizeof(out));
	hex_encode("\x12\x34", 2, out);
	CHECK_STR(out, "1234");
	CHECK_INT(out[5], 'x');
}

int main(void)
{
	RUN(value_every_byte);
	RUN(value_edges);
	RUN(is_lower);
	RUN(is_lower_stops_at_nul);
	RUN(encode_vectors);
	RUN(encode_every_byte);
	RUN(encode_leaves_rest);
	return t_done();
}
