#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "common/pypi/cooldown.h"
#include "common/pypi/simple.h"
#include "tests/unit/t.h"

#define DAY 86400LL
#define NOW 1767225600LL /* 2026-01-01T00:00:00Z */

T(holds)
{
	struct cooldown cd = {.min_age = 7 * DAY, .exempt = "certifi corp-*"};
	long long m;

	CHECK(cooldown_holds(&cd, "foo", NOW - 8 * DAY, NOW, &m) == NULL);
	CHECK_INT(m, -1);
	CHECK_STR(cooldown_holds(&cd, "foo", NOW - 2 * DAY, NOW, &m),
	          "min_release_age");
	CHECK_INT(m, NOW + 5 * DAY);
	/* exactly old enough */
	CHECK(cooldown_holds(&cd, "foo", NOW - 7 * DAY, NOW, &m) == NULL);
	/* no upload time: held, for good */
	CHECK_STR(cooldown_holds(&cd, "foo", -1, NOW, &m), "min_release_age");
	CHECK_INT(m, -1);
	CHECK(cooldown_holds(&cd, "certifi", NOW, NOW, &m) == NULL);
	CHECK(cooldown_holds(&cd, "corp-x", -1, NOW, &m) == NULL);
	/* an unknown project matches no exempt glob */
	CHECK(cooldown_holds(&cd, "", NOW, NOW, NULL) != NULL);

	cd.exclude_newer = NOW - 10 * DAY;
	CHECK_STR(cooldown_holds(&cd, "foo", NOW - 9 * DAY, NOW, &m),
	          "exclude_newer");
	CHECK_INT(m, -1);
	CHECK(cooldown_holds(&cd, "foo", NOW - 10 * DAY, NOW, &m) == NULL);
	cd.min_age = 0;
	CHECK_STR(cooldown_holds(&cd, "foo", -1, NOW, &m), "exclude_newer");
	cd.exclude_newer = 0;
	CHECK(!cooldown_active(&cd));
	CHECK(cooldown_holds(&cd, "foo", -1, NOW, &m) == NULL);
}

T(reasons)
{
	struct cooldown cd = {.min_age = 7 * DAY,
	                      .exclude_newer = NOW,
	                      .exempt = ""};
	char r[200];

	cooldown_reason(&cd, "min_release_age", NOW - 2 * DAY - 5, NOW, r,
	                sizeof(r));
	CHECK_STR(r, "held back by min_release_age = 7d: uploaded "
	             "2025-12-29T23:59:55Z, 2 days ago");
	cooldown_reason(&cd, "exclude_newer", NOW + 3600, NOW + 7200, r,
	                sizeof(r));
	CHECK_STR(r, "held back by exclude_newer = 2026-01-01T00:00:00Z: "
	             "uploaded 2026-01-01T01:00:00Z, 60 minutes ago");
	cooldown_reason(&cd, "min_release_age", -1, NOW, r, sizeof(r));
	CHECK_STR(r, "held back by min_release_age = 7d: the index gave no "
	             "upload time");
	cd.min_age = 90;
	cooldown_reason(&cd, "min_release_age", NOW - 30, NOW, r, sizeof(r));
	CHECK_STR(r, "held back by min_release_age = 90s: uploaded "
	             "2025-12-31T23:59:30Z, 30 seconds ago");
}

static void add_file(struct simple_page *p, const char *name,
                     const char *upload)
{
	struct simple_file *f;

	p->files = realloc(p->files, (p->nfiles + 1) * sizeof(*p->files));
	f = &p->files[p->nfiles++];
	memset(f, 0, sizeof(*f));
	f->filename = strdup(name);
	f->upload_time = upload ? strdup(upload) : NULL;
}

static void add_version(struct simple_page *p, const char *v)
{
	p->versions =
	    realloc(p->versions, (p->nversions + 1) * sizeof(*p->versions));
	p->versions[p->nversions++] = strdup(v);
}

T(split)
{
	struct cooldown cd = {.min_age = 7 * DAY, .exempt = ""};
	struct simple_page p, held;
	long long next;

	memset(&p, 0, sizeof(p));
	add_file(&p, "foo-1.0.tar.gz", "2025-01-01T00:00:00Z");
	add_file(&p, "foo-1.0-py3-none-any.whl", "2025-01-01T00:00:00.5Z");
	add_file(&p, "foo-2.0.tar.gz", "2025-12-30T00:00:00Z");
	add_file(&p, "foo-2.0-py3-none-any.whl", "2025-12-28T00:00:00Z");
	add_file(&p, "foo-1.5.tar.gz", NULL);
	add_file(&p, "foo-1.1.tar.gz", "garbage");
	add_file(&p, "foo-1.2.tar.gz", "2025-12-20T00:00:00Z");
	add_file(&p, "foo-1.2-py3-none-any.whl", "2025-12-31T00:00:00Z");
	add_version(&p, "1.0");
	add_version(&p, "1.1");
	add_version(&p, "1.2");
	add_version(&p, "1.5");
	add_version(&p, "2.0");
	add_version(&p, "3.0"); /* no file at all: not the cooldown's */

	CHECK_INT(cooldown_split(&cd, "foo", &p, NOW, &held, &next), 0);
	CHECK_INT(p.nfiles, 3);
	CHECK_STR(p.files[0].filename, "foo-1.0.tar.gz");
	CHECK_STR(p.files[1].filename, "foo-1.0-py3-none-any.whl");
	CHECK_STR(p.files[2].filename, "foo-1.2.tar.gz");
	CHECK_INT(held.nfiles, 5);
	CHECK_STR(held.files[0].filename, "foo-2.0.tar.gz");
	/* the soonest to mature: 2.0's wheel, on 2026-01-04 */
	CHECK_INT(next, NOW + 3 * DAY);
	CHECK_INT(p.nversions, 3);
	CHECK_STR(p.versions[0], "1.0");
	CHECK_STR(p.versions[1], "1.2");
	CHECK_STR(p.versions[2], "3.0");
	simple_page_free(&held);

	/* three days on, 2.0's wheel is old enough */
	CHECK_INT(cooldown_split(&cd, "foo", &p, NOW + 3 * DAY, &held, &next),
	          0);
	CHECK_INT(held.nfiles, 0);
	CHECK_INT(next, -1);
	simple_page_free(&held);

	/* exempt, or no cooldown: nothing moves */
	cd.exempt = "fo?";
	CHECK_INT(cooldown_split(&cd, "foo", &p, NOW, &held, &next), 0);
	CHECK_INT(held.nfiles, 0);
	CHECK_INT(p.nfiles, 3);
	simple_page_free(&p);
}

int main(void)
{
	RUN(holds);
	RUN(reasons);
	RUN(split);
	return t_done();
}
