/* isotime: RFC 3339 / ISO 8601 date-times in UTC, read as and written from
 * unix seconds, with no time zone database and no I/O: what an upstream's
 * upload-time (PEP 700) and the exclude_newer key hold. */
#ifndef LARDER_ISOTIME_H
#define LARDER_ISOTIME_H

#include <stddef.h>

/* "YYYY-MM-DDTHH:MM:SSZ" and its NUL. */
#define ISOTIME_LEN 21

/* Reads s (len bytes, no NUL needed) as
 *   YYYY-MM-DD[(T|t|' ')HH:MM[:SS[.fraction]][Z|z|+HH:MM|-HH:MM|+HHMM|+HH]]
 * into *out, unix seconds: "2024-01-01T12:00:00.123456Z" as pypi writes
 * it, "2026-01-01T00:00:00+01:00", a date alone (its midnight). No zone
 * means UTC (PEP 700 says UTC; some servers leave the Z out). The
 * fraction is dropped (a time is never later than what it names), a leap
 * second reads as :59. Every field is range-checked, the day against its
 * month and year. Returns 0, or EINVAL (*out untouched). */
int isotime_parse(const char *s, size_t len, long long *out);

/* Writes t (unix seconds, years 0 to 9999) as "YYYY-MM-DDTHH:MM:SSZ" to
 * out. Returns 0, or EINVAL (out "") when t is outside those years. */
int isotime_format(long long t, char out[ISOTIME_LEN]);

#endif
