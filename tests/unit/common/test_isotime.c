#include "config.h"

#include <errno.h>
#include <string.h>

#include "common/isotime.h"
#include "tests/unit/t.h"

static long long parsed(const char *s)
{
	long long t = -42;

	if (isotime_parse(s, strlen(s), &t))
		return -42;
	return t;
}

T(parse_forms)
{
	static const struct {
		const char *in;
		long long want;
	} cases[] = {
	    {"1970-01-01T00:00:00Z", 0},
	    {"2026-01-01T00:00:00Z", 1767225600},
	    {"2026-01-01", 1767225600},
	    {"2026-01-01T00:00Z", 1767225600},
	    {"2026-01-01T00:00:00", 1767225600},
	    {"2026-01-01t00:00:00z", 1767225600},
	    {"2026-01-01 00:00:00Z", 1767225600},
	    /* pypi's, fraction dropped */
	    {"2024-01-01T12:00:00.123456Z", 1704110400},
	    {"2024-01-01T12:00:00,9Z", 1704110400},
	    {"2026-01-01T00:00:00+00:00", 1767225600},
	    {"2026-01-01T01:00:00+01:00", 1767225600},
	    {"2025-12-31T19:00:00-05:00", 1767225600},
	    {"2026-01-01T05:30:00+0530", 1767225600},
	    {"2026-01-01T02:00:00+02", 1767225600},
	    /* leap day, leap second */
	    {"2024-02-29T00:00:00Z", 1709164800},
	    {"2016-12-31T23:59:60Z", 1483228799},
	    {"2000-02-29T00:00:00Z", 951782400},
	    {"1969-12-31T23:59:59Z", -1},
	    {"9999-12-31T23:59:59Z", 253402300799LL},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (parsed(cases[i].in) != cases[i].want) {
			fprintf(stderr, "  %s: got %lld, want %lld\n",
			        cases[i].in, parsed(cases[i].in),
			        cases[i].want);
			t_failed++;
		}
	}
}

T(parse_refuses)
{
	static const char *const bad[] = {
	    "",
	    "2026",
	    "2026-1-01",
	    "2026-13-01",
	    "2026-00-01",
	    "2026-02-29",
	    "1900-02-29",
	    "2026-04-31",
	    "2026-01-00",
	    "2026-01-01T",
	    "2026-01-01T24:00:00Z",
	    "2026-01-01T23:60:00Z",
	    "2026-01-01T23:59:61Z",
	    "2026-01-01T1:00:00Z",
	    "2026-01-01T10:00:00.Z",
	    "2026-01-01T10:00:00ZZ",
	    "2026-01-01T10:00:00+24:00",
	    "2026-01-01T10:00:00+01:60",
	    "2026-01-01T10:00:00+1",
	    "2026-01-01T10:00:00+01:0",
	    "2026-01-01T10:00:00 UTC",
	    "2026-01-01X10:00:00Z",
	    " 2026-01-01",
	    "2026-01-01 ",
	    "+2026-01-01",
	    "２026-01-01",
	};
	long long t = 7;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (isotime_parse(bad[i], strlen(bad[i]), &t) != EINVAL) {
			fprintf(stderr, "  \"%s\" was accepted\n", bad[i]);
			t_failed++;
		}
	}
	CHECK_INT(t, 7);
	CHECK_INT(isotime_parse(NULL, 0, &t), EINVAL);
}

T(parse_length_bounds)
{
	const char s[] = "2026-01-01T00:00:00Z trailing";
	long long t;

	/* len, not the NUL, ends the text */
	CHECK_INT(isotime_parse(s, 20, &t), 0);
	CHECK_INT(t, 1767225600);
	CHECK_INT(isotime_parse(s, 10, &t), 0);
	CHECK_INT(isotime_parse(s, 19, &t), 0);
	CHECK_INT(isotime_parse(s, 18, &t), EINVAL);
	CHECK_INT(isotime_parse(s, 21, &t), EINVAL);
}

T(format_round_trip)
{
	static const long long ts[] = {0,          -1,         1767225600,
	                               1709164800, 951782400,  253402300799LL,
	                               -62167219200LL, 1704110399};
	char out[ISOTIME_LEN];
	long long back;

	CHECK_INT(isotime_format(1767225600, out), 0);
	CHECK_STR(out, "2026-01-01T00:00:00Z");
	CHECK_INT(isotime_format(-1, out), 0);
	CHECK_STR(out, "1969-12-31T23:59:59Z");
	for (size_t i = 0; i < sizeof(ts) / sizeof(ts[0]); i++) {
		CHECK_INT(isotime_format(ts[i], out), 0);
		CHECK_INT(isotime_parse(out, strlen(out), &back), 0);
		CHECK_INT(back, ts[i]);
	}
	CHECK_INT(isotime_format(253402300800LL, out), EINVAL);
	CHECK_STR(out, "");
	CHECK_INT(isotime_format(-62167219201LL, out), EINVAL);
}

/* Every day over four centuries reads back as itself. */
T(every_day)
{
	char out[ISOTIME_LEN];
	long long back;

	for (long long t = 946684800LL - 200LL * 365 * 86400;
	     t < 946684800LL + 200LL * 365 * 86400; t += 86400 + 3661) {
		if (isotime_format(t, out) ||
		    isotime_parse(out, strlen(out), &back) || back != t) {
			fprintf(stderr, "  %lld: %s\n", t, out);
			t_failed++;
			break;
		}
	}
}

int main(void)
{
	RUN(parse_forms);
	RUN(parse_refuses);
	RUN(parse_length_bounds);
	RUN(format_round_trip);
	RUN(every_day);
	return t_done();
}
