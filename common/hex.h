/* hex: hexadecimal digits, read and written. I/O-free. */
#ifndef LARDER_HEX_H
#define LARDER_HEX_H

#include <stddef.h>

/* Returns the value (0..15) of the hex digit ch, either case, or -1 when
 * ch is anything else (a negative char included). */
int hex_value(int ch);

/* Returns 1 when the n bytes at s are all lowercase hex digits ([0-9a-f]),
 * else 0; it stops at the first byte that is not, so a NUL-terminated s
 * shorter than n is safe. n == 0 gives 1. */
int hex_is_lower(const char *s, size_t n);

/* Writes the n bytes at p as 2 * n lowercase hex digits and a NUL to out,
 * which the caller supplies with room for 2 * n + 1 bytes. */
void hex_encode(const void *p, size_t n, char *out);

#endif
