#include "config.h"

#include <errno.h>
#include <string.h>

#include "fcgi/cmd/warm_pick.h"
#include "tests/unit/t.h"

#define H(c)                                                                   \
	c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c  \
	    c c c c c c c c c c c c c c c c c c c c c c c c c c c c c
#define HA H("a")
#define HB H("b")
#define HC H("c")
#define HD H("d")
#define HE H("e")

static const char page[] =
    "{\"meta\": {\"api-version\": \"1.1\"}, \"name\": \"warm-np\","
    " \"versions\": [\"1.0\"], \"files\": ["
    "{\"filename\": \"warm_np-1.0-cp312-cp312-manylinux_2_17_x86_64."
    "manylinux2014_x86_64.whl\", \"url\": \"../../files/a/x.whl\","
    " \"hashes\": {\"md5\": \"x\", \"sha256\": \"" HA "\"},"
    " \"core-metadata\": {\"sha256\": \"" HE "\"}, \"yanked\": false},"
    "{\"filename\": \"warm_np-1.0-cp312-cp312-manylinux1_x86_64.whl\","
    " \"url\": \"https://files.example/b.whl\","
    " \"hashes\": {\"sha256\": \"" HB "\"}, \"dist-info-metadata\": true},"
    "{\"filename\": \"Warm.NP-1.0.tar.gz\", \"url\": \"c.tar.gz\","
    " \"hashes\": {\"sha256\": \"" HC "\"}, \"core-metadata\": false},"
    "{\"filename\": \"warm_np-0.9-py3-none-any.whl\", \"url\": \"d.whl\","
    " \"hashes\": {\"sha256\": \"" HD "\"}},"
    "{\"filename\": \"no-url.whl\"},"
    "{\"url\": \"no-filename\"}"
    "]}";

#define PAGE_URL "http://larder.test/root/pypi/simple/warm-np/"

static struct wheeltag_target target(const char *py, const char *plat)
{
	struct wheeltag_target t;

	if (wheeltag_target_init(&t, py, plat))
		memset(&t, 0, sizeof(t));
	return t;
}

T(parse)
{
	struct warm_page p;
	char err[200];

	CHECK_INT(
	    warm_page_parse(page, strlen(page), PAGE_URL, &p, err, sizeof(err)),
	    0);
	CHECK_INT(p.n, 4);
	if (p.n == 4) {
		CHECK_STR(p.v[0].url,
		          "http://larder.test/root/pypi/files/a/x.whl");
		CHECK_STR(p.v[0].sha256, HA);
		CHECK_INT(p.v[0].has_meta, 1);
		CHECK_STR(p.v[0].meta_sha256, HE);
		CHECK_STR(p.v[1].url, "https://files.example/b.whl");
		CHECK_INT(p.v[1].has_meta, 1);
		CHECK_STR(p.v[1].meta_sha256, "");
		CHECK_STR(p.v[2].url, PAGE_URL "c.tar.gz");
		CHECK_INT(p.v[2].has_meta, 0);
	}
	warm_page_free(&p);
	CHECK_INT(warm_page_parse("[]", 2, PAGE_URL, &p, err, sizeof(err)),
	          EINVAL);
	CHECK_CONTAINS(err, "PEP 691");
	warm_page_free(&p);
	CHECK_INT(warm_page_parse("{\"files\": [", 11, PAGE_URL, &p, err,
	                          sizeof(err)),
	          EINVAL);
	warm_page_free(&p);
	CHECK_INT(warm_page_parse("{\"files\": []} x", 15, PAGE_URL, &p, err,
	                          sizeof(err)),
	          EINVAL);
	warm_page_free(&p);
}

T(pick)
{
	struct wheeltag_target lin = target("3.12", "manylinux_2_17_x86_64");
	struct wheeltag_target old = target("3.12", "manylinux1_x86_64");
	struct wheeltag_target win = target("3.12", "win_amd64");
	struct wheeltag_target py311 = target("3.11", "manylinux_2_17_x86_64");
	const char hashes[2][65] = {HB, HC};
	const char bad[1][65] = {HD};
	struct warm_page p;
	char err[200];

	CHECK_INT(
	    warm_page_parse(page, strlen(page), PAGE_URL, &p, err, sizeof(err)),
	    0);
	/* the newer glibc where it fits, the older where not */
	CHECK_INT(warm_pick(&p, "warm-np", "1.0", NULL, 0, &lin), 0);
	CHECK_INT(warm_pick(&p, "warm-np", "1.0.0", NULL, 0, &lin), 0);
	CHECK_INT(warm_pick(&p, "warm-np", "1.0", NULL, 0, &old), 1);
	/* no wheel fits: the sdist, whose name is spelt its own way */
	CHECK_INT(warm_pick(&p, "warm-np", "1.0", NULL, 0, &win), 2);
	CHECK_INT(warm_pick(&p, "warm-np", "1.0", NULL, 0, &py311), 2);
	/* hashes narrow the choice */
	CHECK_INT(warm_pick(&p, "warm-np", "1.0", hashes, 2, &lin), 1);
	CHECK_INT(warm_pick(&p, "warm-np", "1.0", hashes + 1, 1, &lin), 2);
	CHECK_INT(warm_pick(&p, "warm-np", "1.0", bad, 1, &lin),
	          WARM_PICK_NO_HASH);
	CHECK_INT(warm_pick(&p, "warm-np", "0.9", NULL, 0, &win), 3);
	CHECK_INT(warm_pick(&p, "warm-np", "2.0", NULL, 0, &lin),
	          WARM_PICK_NO_VERSION);
	CHECK_INT(warm_pick(&p, "other", "1.0", NULL, 0, &lin),
	          WARM_PICK_NO_VERSION);
	warm_page_free(&p);
	wheeltag_target_free(&lin);
	wheeltag_target_free(&old);
	wheeltag_target_free(&win);
	wheeltag_target_free(&py311);
}

T(no_fit)
{
	static const char one[] =
	    "{\"files\": [{\"filename\": \"x-1-cp312-cp312-win_amd64.whl\","
	    " \"url\": \"x.whl\"}]}";
	struct wheeltag_target lin = target("3.12", "manylinux_2_17_x86_64");
	struct warm_page p;
	char err[200];

	CHECK_INT(
	    warm_page_parse(one, strlen(one), PAGE_URL, &p, err, sizeof(err)),
	    0);
	CHECK_INT(warm_pick(&p, "x", "1", NULL, 0, &lin), WARM_PICK_NO_FIT);
	/* a file without a sha256 matches no --hash list */
	CHECK_INT(warm_pick(&p, "x", "1", (const char(*)[65]) "", 1, &lin),
	          WARM_PICK_NO_HASH);
	warm_page_free(&p);
	wheeltag_target_free(&lin);
}

T(requires_python)
{
	static const char rp[] =
	    "{\"files\": ["
	    "{\"filename\": \"x-1-py3-none-any.whl\", \"url\": \"a.whl\","
	    " \"requires-python\": \">=3.12, <4\"},"
	    "{\"filename\": \"x-1.tar.gz\", \"url\": \"x.tar.gz\","
	    " \"requires-python\": \"!=3.10.*,>= 3.8\"},"
	    "{\"filename\": \"y-1.tar.gz\", \"url\": \"y.tar.gz\","
	    " \"requires-python\": \"~=3.13\"},"
	    "{\"filename\": \"z-1.tar.gz\", \"url\": \"z.tar.gz\","
	    " \"requires-python\": \"not a specifier\"}"
	    "]}";
	struct wheeltag_target t312 = target("3.12", "any");
	struct wheeltag_target t311 = target("3.11", "any");
	struct wheeltag_target t310 = target("3.10", "any");
	struct warm_page p;
	char err[200];

	CHECK_INT(
	    warm_page_parse(rp, strlen(rp), PAGE_URL, &p, err, sizeof(err)), 0);
	CHECK_INT(p.n, 4);
	if (p.n == 4)
		CHECK_STR(p.v[0].requires_python, ">=3.12, <4");
	CHECK_INT(warm_pick(&p, "x", "1", NULL, 0, &t312), 0);
	CHECK_INT(warm_pick(&p, "x", "1", NULL, 0, &t311), 1);
	CHECK_INT(warm_pick(&p, "x", "1", NULL, 0, &t310), WARM_PICK_NO_PYTHON);
	CHECK_INT(warm_pick(&p, "y", "1", NULL, 0, &t312), WARM_PICK_NO_PYTHON);
	CHECK_INT(warm_pick(&p, "z", "1", NULL, 0, &t310), 3);
	warm_page_free(&p);
	wheeltag_target_free(&t312);
	wheeltag_target_free(&t311);
	wheeltag_target_free(&t310);
}

int main(void)
{
	RUN(parse);
	RUN(pick);
	RUN(no_fit);
	RUN(requires_python);
	return t_done();
}
