/* isotime: RFC 3339 / ISO 8601 UTC date-times <-> unix seconds. The day
 * arithmetic is Howard Hinnant's days_from_civil / civil_from_days, exact
 * for the proleptic Gregorian calendar, so nothing here needs timegm() or
 * the process's time zone. */
#include "config.h"

#include <errno.h>
#include <stdio.h>

#include "common/isotime.h"

#define MIN_T (-62167219200LL) /* 0000-01-01T00:00:00Z */
#define MAX_T 253402300799LL   /* 9999-12-31T23:59:59Z */

static long long days_from_civil(long long y, unsigned m, unsigned d)
{
	long long era, yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = y - era * 400;
	doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

static void civil_from_days(long long z, long long *y, unsigned *m,
                            unsigned *d)
{
	long long era, doe, yoe, doy, mp;

	z += 719468;
	era = (z >= 0 ? z : z - 146096) / 146097;
	doe = z - era * 146097;
	yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	mp = (5 * doy + 2) / 153;
	*d = (unsigned)(doy - (153 * mp + 2) / 5 + 1);
	*m = (unsigned)(mp < 10 ? mp + 3 : mp - 9);
	*y = yoe + era * 400 + (*m <= 2);
}

static int is_leap(long long y)
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static unsigned month_days(long long y, unsigned m)
{
	static const unsigned char days[12] = {31, 28, 31, 30, 31, 30,
	                                       31, 31, 30, 31, 30, 31};

	return m == 2 && is_leap(y) ? 29 : days[m - 1];
}

/* Reads exactly n digits at s[*i], moving *i past them. Returns 0 or
 * EINVAL. */
static int digits(const char *s, size_t len, size_t *i, unsigned n,
                  unsigned *out)
{
	unsigned v = 0;

	if (len - *i < n)
		return EINVAL;
	for (unsigned k = 0; k < n; k++) {
		char ch = s[*i + k];

		if (ch < '0' || ch > '9')
			return EINVAL;
		v = v * 10 + (unsigned)(ch - '0');
	}
	*i += n;
	*out = v;
	return 0;
}

/* The character at s[i], or NUL past the end. */
static char at(const char *s, size_t len, size_t i)
{
	return i < len ? s[i] : '\0';
}

/* "Z", "+HH:MM", "-HHMM", "+HH" or nothing at s[*i]: the zone's offset
 * east of UTC in seconds. Returns 0 or EINVAL. */
static int zone(const char *s, size_t len, size_t *i, long *off)
{
	unsigned hh, mm = 0;
	char sign = at(s, len, *i);

	*off = 0;
	if (*i == len)
		return 0;
	if (sign == 'Z' || sign == 'z') {
		(*i)++;
		return 0;
	}
	if (sign != '+' && sign != '-')
		return EINVAL;
	(*i)++;
	if (digits(s, len, i, 2, &hh))
		return EINVAL;
	if (at(s, len, *i) == ':') {
		(*i)++;
		if (digits(s, len, i, 2, &mm))
			return EINVAL;
	} else if (*i < len && digits(s, len, i, 2, &mm)) {
		return EINVAL;
	}
	if (hh > 23 || mm > 59)
		return EINVAL;
	*off = (long)(hh * 3600 + mm * 60) * (sign == '-' ? -1 : 1);
	return 0;
}

int isotime_parse(const char *s, size_t len, long long *out)
{
	unsigned y, mo, d, h = 0, mi = 0, sec = 0;
	size_t i = 0;
	long off = 0;
	char sep;

	if (!s || digits(s, len, &i, 4, &y) || at(s, len, i++) != '-' ||
	    digits(s, len, &i, 2, &mo) || at(s, len, i++) != '-' ||
	    digits(s, len, &i, 2, &d))
		return EINVAL;
	if (mo < 1 || mo > 12 || d < 1 || d > month_days(y, mo))
		return EINVAL;
	if (i < len) {
		sep = s[i++];
		if (sep != 'T' && sep != 't' && sep != ' ')
			return EINVAL;
		if (digits(s, len, &i, 2, &h) || at(s, len, i++) != ':' ||
		    digits(s, len, &i, 2, &mi))
			return EINVAL;
		if (at(s, len, i) == ':') {
			i++;
			if (digits(s, len, &i, 2, &sec))
				return EINVAL;
			if (at(s, len, i) == '.' || at(s, len, i) == ',') {
				size_t start = ++i;

				while (i < len && s[i] >= '0' && s[i] <= '9')
					i++;
				if (i == start)
					return EINVAL;
			}
		}
		if (h > 23 || mi > 59 || sec > 60)
			return EINVAL;
		if (sec == 60)
			sec = 59;
		if (zone(s, len, &i, &off))
			return EINVAL;
	}
	if (i != len)
		return EINVAL;
	*out = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec -
	       off;
	return 0;
}

int isotime_format(long long t, char out[ISOTIME_LEN])
{
	long long days, rem, y;
	unsigned m, d;

	out[0] = '\0';
	if (t < MIN_T || t > MAX_T)
		return EINVAL;
	days = t >= 0 ? t / 86400 : (t - 86399) / 86400;
	rem = t - days * 86400;
	civil_from_days(days, &y, &m, &d);
	snprintf(out, ISOTIME_LEN, "%04u-%02u-%02uT%02u:%02u:%02uZ",
	         (unsigned)y % 10000, m % 100, d % 100,
	         (unsigned)(rem / 3600) % 100, (unsigned)(rem / 60 % 60) % 100,
	         (unsigned)(rem % 60) % 100);
	return 0;
}
