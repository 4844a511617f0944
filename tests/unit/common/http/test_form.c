/* form: urlencoded values. */
#include "config.h"

#include <string.h>

#include "common/http/form.h"
#include "tests/unit/t.h"

static int value(const char *s, const char *key, char *out, size_t len)
{
	return form_value(s, strlen(s), key, out, len);
}

T(finds_and_decodes)
{
	char out[32];

	CHECK_INT(value("reason=broken+build&x=1", "reason", out, sizeof(out)),
		  1);
	CHECK_STR(out, "broken build");
	CHECK_INT(value("a=1&reason=caf%C3%A9%21", "reason", out, sizeof(out)),
		  1);
	CHECK_STR(out, "caf\xc3\xa9!");
	CHECK_INT(value("reasons=1&reason=", "reason", out, sizeof(out)), 1);
	CHECK_STR(out, "");
	CHECK_INT(value("x=1&reason", "reason", out, sizeof(out)), 1);
	CHECK_STR(out, "");
	/* the first of several */
	CHECK_INT(value("reason=a&reason=b", "reason", out, sizeof(out)), 1);
	CHECK_STR(out, "a");
}

T(absent_and_malformed)
{
	char out[8];

	CHECK_INT(value("", "reason", out, sizeof(out)), 0);
	CHECK_INT(value("xreason=1&reasonx=2", "reason", out, sizeof(out)), 0);
	CHECK_INT(value("reason=%4", "reason", out, sizeof(out)), -1);
	CHECK_INT(value("reason=%zz", "reason", out, sizeof(out)), -1);
	CHECK_INT(value("reason=%00", "reason", out, sizeof(out)), -1);
	CHECK_INT(value("reason=%", "reason", out, sizeof(out)), -1);
	/* too long for out: refused, not cut */
	CHECK_INT(value("reason=12345678", "reason", out, sizeof(out)), -1);
	CHECK_INT(value("reason=1234567", "reason", out, sizeof(out)), 1);
	CHECK_STR(out, "1234567");
	/* a pair cut by len */
	CHECK_INT(form_value("reason=abc", 8, "reason", out, sizeof(out)), 1);
	CHECK_STR(out, "a");
}

int main(void)
{
	RUN(finds_and_decodes);
	RUN(absent_and_malformed);
	return t_done();
}
