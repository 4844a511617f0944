/* form: application/x-www-form-urlencoded values (form.h). */
#include "config.h"

#include <string.h>

#include "common/hex.h"
#include "common/http/form.h"

/* Decodes v[0..n) into out. Returns 1, or -1 as form_value. */
static int decode(const char *v, size_t n, char *out, size_t outlen)
{
	size_t o = 0;

	for (size_t i = 0; i < n; i++) {
		int ch = (unsigned char)v[i];

		if (ch == '+') {
			ch = ' ';
		} else if (ch == '%') {
			int hi = i + 2 < n ? hex_value((unsigned char)v[i + 1]) : -1;
			int lo = i + 2 < n ? hex_value((unsigned char)v[i + 2]) : -1;

			if (hi < 0 || lo < 0 || (hi == 0 && lo == 0))
				return -1;
			ch = hi * 16 + lo;
			i += 2;
		}
		if (o + 1 >= outlen)
			return -1;
		out[o++] = (char)ch;
	}
	out[o] = '\0';
	return 1;
}

int form_value(const char *s, size_t len, const char *key, char *out,
	       size_t outlen)
{
	size_t klen = strlen(key);
	const char *p = s, *end = s + len;

	if (outlen == 0)
		return -1;
	while (p < end) {
		const char *amp = memchr(p, '&', (size_t)(end - p));
		const char *pair_end = amp ? amp : end;

		if ((size_t)(pair_end - p) > klen && !memcmp(p, key, klen) &&
		    p[klen] == '=')
			return decode(p + klen + 1,
				      (size_t)(pair_end - p - klen - 1), out,
				      outlen);
		if ((size_t)(pair_end - p) == klen && !memcmp(p, key, klen)) {
			out[0] = '\0';
			return 1;
		}
		p = pair_end + 1;
	}
	return 0;
}
