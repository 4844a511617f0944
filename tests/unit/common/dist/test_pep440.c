#include "config.h"

#include <errno.h>
#include <string.h>

#include "common/dist/pep440.h"
#include "tests/unit/t.h"

static int cmp(const char *a, const char *b)
{
	struct pep440 va, vb;

	if (pep440_parse(a, &va) || pep440_parse(b, &vb))
		return 99;
	return pep440_cmp(&va, &vb);
}

T(parse)
{
	struct pep440 v;

	CHECK_INT(pep440_parse("2!1.2.3rc4.post5.dev6+ubuntu.1", &v), 0);
	CHECK_INT(v.epoch, 2);
	CHECK_INT(v.nrelease, 3);
	CHECK_INT(v.release[2], 3);
	CHECK_INT(v.pre, PEP440_PRE_RC);
	CHECK_INT(v.pre_n, 4);
	CHECK_INT(v.has_post, 1);
	CHECK_INT(v.post, 5);
	CHECK_INT(v.dev, 6);
	CHECK_STR(v.local, "ubuntu.1");
	CHECK_INT(pep440_is_prerelease(&v), 1);
	CHECK_INT(pep440_parse("V1.0-Beta", &v), 0);
	CHECK_INT(v.pre, PEP440_PRE_B);
	CHECK_INT(pep440_parse("1.0.post1", &v), 0);
	CHECK_INT(pep440_is_prerelease(&v), 0);
	CHECK_INT(pep440_parse("1.0", &v), 0);
	CHECK_INT(pep440_is_prerelease(&v), 0);
	CHECK_INT(pep440_parse("1.0.dev0", &v), 0);
	CHECK_INT(pep440_is_prerelease(&v), 1);
	CHECK_INT(pep440_parse("", &v), EINVAL);
	CHECK_INT(pep440_parse("one", &v), EINVAL);
	CHECK_INT(pep440_parse(NULL, &v), EINVAL);
	CHECK_INT(pep440_parse("1.99999999999999999999999", &v), EINVAL);
	CHECK_INT(pep440_parse("1.2.3.4.5.6.7.8.9.10.11.12.13.14.15.16.17",
				&v), EINVAL);
}

T(order)
{
	/* packaging's documented order, each before the next */
	static const char *const seq[] = {
		"1.0.dev456", "1.0a1", "1.0a2.dev456", "1.0a12.dev456",
		"1.0a12", "1.0b1.dev456", "1.0b2", "1.0b2.post345.dev456",
		"1.0b2.post345", "1.0rc1.dev456", "1.0rc1", "1.0",
		"1.0+abc.5", "1.0+abc.7", "1.0+5", "1.0.post456.dev34",
		"1.0.post456", "1.0.15", "1.1.dev1", "1!0.1",
	};
	size_t n = sizeof(seq) / sizeof(seq[0]);

	for (size_t i = 0; i + 1 < n; i++) {
		if (cmp(seq[i], seq[i + 1]) >= 0)
			fprintf(stderr, "  %s !< %s\n", seq[i], seq[i + 1]);
		CHECK(cmp(seq[i], seq[i + 1]) < 0);
		CHECK(cmp(seq[i + 1], seq[i]) > 0);
	}
	CHECK_INT(cmp("1.0", "1.0.0"), 0);
	CHECK_INT(cmp("1.0", "1"), 0);
	CHECK_INT(cmp("1.0RC1", "1.0rc1"), 0);
	CHECK(cmp("1.10", "1.9") > 0);
	CHECK(cmp("1.0+a", "1.0+a.1") < 0);
	CHECK(cmp("1.0+1", "1.0+a") > 0);
	CHECK(cmp("1.0+b", "1.0+abc") > 0);
}

int main(void)
{
	RUN(parse);
	RUN(order);
	return t_done();
}
