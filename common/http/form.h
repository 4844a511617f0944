/* form: application/x-www-form-urlencoded text (a query string, a small
 * form body). I/O-free. */
#ifndef LARDER_FORM_H
#define LARDER_FORM_H

#include <stddef.h>

/* Finds the first key=value pair of key in s[0..len) ('&'-separated) and
 * decodes its value ('+' is a space, %XX a byte) into out (outlen bytes,
 * NUL-terminated). Returns 1 when found, 0 when key is not there, -1 when
 * its value is malformed (a bad escape, %00, or longer than outlen - 1). */
int form_value(const char *s, size_t len, const char *key, char *out,
	       size_t outlen);

#endif
