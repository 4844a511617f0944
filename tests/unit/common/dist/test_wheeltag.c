#include "config.h"

#include <errno.h>
#include <string.h>

#include "common/dist/wheeltag.h"
#include "tests/unit/t.h"

static long rank(const char *py, const char *plat, const char *file)
{
	struct wheeltag_target t;
	long r;

	if (wheeltag_target_init(&t, py, plat))
		return -2;
	r = wheeltag_rank(&t, file);
	wheeltag_target_free(&t);
	return r;
}

#define NP_CP312                                                               \
	"numpy-1.26.4-cp312-cp312-manylinux_2_17_x86_64.manylinux2014_x86_64." \
	"whl"
#define NP_CP311                                                               \
	"numpy-1.26.4-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64." \
	"whl"
#define NP_MUSL  "numpy-1.26.4-cp312-cp312-musllinux_1_1_x86_64.whl"
#define NP_WIN   "numpy-1.26.4-cp312-cp312-win_amd64.whl"
#define NP_MAC   "numpy-1.26.4-cp312-cp312-macosx_11_0_arm64.whl"
#define CRY_ABI3 "cryptography-42.0.5-cp39-abi3-manylinux_2_28_x86_64.whl"
#define CRY_ABI3_OLD                                                           \
	"cryptography-42.0.5-cp39-abi3-manylinux_2_17_x86_64.manylinux2014_"   \
	"x86_64.whl"
#define CRY_ABI3_MAC "cryptography-42.0.5-cp39-abi3-macosx_10_12_universal2.whl"
#define PURE         "requests-2.31.0-py3-none-any.whl"
#define PURE23       "six-1.16.0-py2.py3-none-any.whl"
#define PY2          "futures-3.4.0-py2-none-any.whl"
#define OLDLINUX     "psycopg2_binary-2.9.9-cp312-cp312-manylinux1_x86_64.whl"
#define UNIV2        "charset_normalizer-3.3.2-cp312-cp312-macosx_10_9_universal2.whl"
#define ARM                                                                    \
	"numpy-1.26.4-cp312-cp312-manylinux_2_17_aarch64.manylinux2014_"       \
	"aarch64.whl"
#define BUILD "pkg-1.0-2-py3-none-any.whl"

T(numpy)
{
	const char *lin = "manylinux_2_17_x86_64";

	CHECK(rank("3.12", lin, NP_CP312) >= 0);
	CHECK_INT(rank("3.12", lin, NP_CP311), -1);
	CHECK_INT(rank("3.11", lin, NP_CP312), -1);
	CHECK(rank("3.11", lin, NP_CP311) >= 0);
	CHECK_INT(rank("3.12", lin, NP_MUSL), -1);
	CHECK_INT(rank("3.12", lin, NP_WIN), -1);
	CHECK_INT(rank("3.12", lin, NP_MAC), -1);
	CHECK_INT(rank("3.12", lin, ARM), -1);
	CHECK(rank("3.12", "musllinux_1_1_x86_64", NP_MUSL) >= 0);
	CHECK_INT(rank("3.12", "musllinux_1_1_x86_64", NP_CP312), -1);
	CHECK(rank("3.12", "win_amd64", NP_WIN) >= 0);
	CHECK(rank("3.12", "macosx_11_0_arm64", NP_MAC) >= 0);
	CHECK(rank("3.12", "macosx_14_0_arm64", NP_MAC) >= 0);
	CHECK(rank("3.12", "manylinux_2_17_aarch64", ARM) >= 0);
	/* a specific wheel beats a pure one */
	CHECK(rank("3.12", lin, NP_CP312) < rank("3.12", lin, PURE));
}

T(cryptography_abi3)
{
	const char *lin = "manylinux_2_17_x86_64";

	/* glibc 2.28 is newer than the target's 2.17 */
	CHECK_INT(rank("3.12", lin, CRY_ABI3), -1);
	CHECK(rank("3.12", "manylinux_2_28_x86_64", CRY_ABI3) >= 0);
	CHECK(rank("3.12", lin, CRY_ABI3_OLD) >= 0);
	CHECK(rank("3.9", lin, CRY_ABI3_OLD) >= 0);
	CHECK_INT(rank("3.8", lin, CRY_ABI3_OLD), -1);
	/* the newer glibc is the better pick where both fit */
	CHECK(rank("3.12", "manylinux_2_28_x86_64", CRY_ABI3) <
	      rank("3.12", "manylinux_2_28_x86_64", CRY_ABI3_OLD));
	/* universal2 at 10.12 fits macOS 11 arm64 and x86_64 */
	CHECK(rank("3.12", "macosx_11_0_arm64", CRY_ABI3_MAC) >= 0);
	CHECK(rank("3.12", "macosx_11_0_x86_64", CRY_ABI3_MAC) >= 0);
	CHECK(rank("3.12", "macosx_10_12_x86_64", CRY_ABI3_MAC) >= 0);
	CHECK_INT(rank("3.12", "macosx_10_9_x86_64", CRY_ABI3_MAC), -1);
}

T(pure)
{
	static const char *const plats[] = {
	    "manylinux_2_17_x86_64", "musllinux_1_1_x86_64",
	    "macosx_11_0_arm64", "win_amd64", "any"};

	for (size_t i = 0; i < sizeof(plats) / sizeof(plats[0]); i++) {
		CHECK(rank("3.12", plats[i], PURE) >= 0);
		CHECK(rank("3.8", plats[i], PURE23) >= 0);
		CHECK_INT(rank("3.12", plats[i], PY2), -1);
		CHECK(rank("3.12", plats[i], BUILD) >= 0);
	}
	CHECK_INT(rank("3.12", "any", NP_CP312), -1);
	/* py3-none-any is the last but a few tags */
	CHECK(rank("3.12", "any", "x-1-cp312-none-any.whl") <
	      rank("3.12", "any", PURE));
}

T(legacy_aliases)
{
	CHECK(rank("3.12", "manylinux_2_17_x86_64", OLDLINUX) >= 0);
	CHECK(rank("3.12", "manylinux2014_x86_64", OLDLINUX) >= 0);
	CHECK_INT(rank("3.12", "manylinux1_x86_64", NP_CP312), -1);
	CHECK(rank("3.12", "manylinux_2_17_x86_64",
	           "x-1-cp312-cp312-linux_x86_64.whl") >= 0);
	CHECK(rank("3.12", "macosx_11_0_arm64", UNIV2) >= 0);
	CHECK_INT(rank("3.12", "macosx_11_0_arm64",
	               "x-1-cp312-cp312-macosx_10_9_x86_64.whl"),
	          -1);
	CHECK(rank("3.12", "macosx_11_0_x86_64",
	           "x-1-cp312-cp312-macosx_10_9_x86_64.whl") >= 0);
}

T(order)
{
	struct wheeltag_target t;

	CHECK_INT(wheeltag_target_init(&t, "3.12", "manylinux_2_17_x86_64"), 0);
	CHECK(t.n > 100);
	CHECK_STR(t.tags[0], "cp312-cp312-manylinux_2_17_x86_64");
	CHECK_STR(t.tags[1], "cp312-cp312-manylinux2014_x86_64");
	CHECK_STR(t.tags[2], "cp312-cp312-manylinux_2_16_x86_64");
	CHECK_STR(t.tags[t.n - 1], "py30-none-any");
	CHECK(wheeltag_rank(&t, "x-1-cp312-abi3-manylinux1_x86_64.whl") <
	      wheeltag_rank(&t, "x-1-cp311-abi3-manylinux_2_17_x86_64.whl"));
	CHECK(wheeltag_rank(&t, "x-1-cp312-none-any.whl") <
	      wheeltag_rank(&t, "x-1-py3-none-any.whl"));
	CHECK(wheeltag_rank(&t, "x-1-py312-none-any.whl") <
	      wheeltag_rank(&t, "x-1-py3-none-any.whl"));
	CHECK(wheeltag_rank(&t, "x-1-py3-none-any.whl") <
	      wheeltag_rank(&t, "x-1-py311-none-any.whl"));
	wheeltag_target_free(&t);
}

T(bad_targets)
{
	struct wheeltag_target t;

	CHECK_INT(wheeltag_target_init(&t, "2.7", "any"), EINVAL);
	CHECK_INT(wheeltag_target_init(&t, "3", "any"), EINVAL);
	CHECK_INT(wheeltag_target_init(&t, "3.x", "any"), EINVAL);
	CHECK_INT(wheeltag_target_init(&t, "3.12", ""), EINVAL);
	CHECK_INT(wheeltag_target_init(&t, "3.12", "Linux"), EINVAL);
	CHECK_INT(wheeltag_target_init(&t, "3.12", "manylinux_3_1_x86_64"),
	          EINVAL);
	CHECK_INT(wheeltag_target_init(&t, "3.12", "macosx_x_arm64"), EINVAL);
	CHECK_INT(wheeltag_target_init(&t, "3.12.1", "any"), 0);
	CHECK_STR(t.python, "3.12");
	wheeltag_target_free(&t);
}

T(split)
{
	char n[64], v[64], tags[128];

	CHECK_INT(wheeltag_split(NP_CP312, n, sizeof(n), v, sizeof(v), tags,
	                         sizeof(tags)),
	          0);
	CHECK_STR(n, "numpy");
	CHECK_STR(v, "1.26.4");
	CHECK_STR(tags,
	          "cp312-cp312-manylinux_2_17_x86_64.manylinux2014_x86_64");
	CHECK_INT(wheeltag_split(BUILD, n, sizeof(n), v, sizeof(v), tags,
	                         sizeof(tags)),
	          0);
	CHECK_STR(v, "1.0");
	CHECK_STR(tags, "py3-none-any");
	CHECK_INT(wheeltag_split("x-1.0.tar.gz", n, 64, v, 64, tags, 64),
	          EINVAL);
	CHECK_INT(wheeltag_split("x-1-py3-none.whl", n, 64, v, 64, tags, 64),
	          EINVAL);
	CHECK_INT(
	    wheeltag_split("x--1-py3-none-any.whl", n, 64, v, 64, tags, 64),
	    EINVAL);
	CHECK_INT(wheeltag_split("a-b-c-d-e-f-g.whl", n, 64, v, 64, tags, 64),
	          EINVAL);
	CHECK_INT(wheeltag_split(PURE, n, 4, v, 64, tags, 64), EINVAL);
	CHECK_INT(wheeltag_rank(NULL, "x.tar.gz"), -1);
}

T(sdist)
{
	char v[64];

	CHECK_INT(wheeltag_sdist_version("larder_demo_c-2.0.tar.gz",
	                                 "larder-demo-c", v, sizeof(v)),
	          0);
	CHECK_STR(v, "2.0");
	CHECK_INT(wheeltag_sdist_version("zope.interface-6.2.zip",
	                                 "zope-interface", v, sizeof(v)),
	          0);
	CHECK_STR(v, "6.2");
	CHECK_INT(wheeltag_sdist_version("foo-bar-1.0.tar.gz", "foo-bar", v,
	                                 sizeof(v)),
	          0);
	CHECK_STR(v, "1.0");
	CHECK_INT(
	    wheeltag_sdist_version("foo-bar-1.0.tar.gz", "foo", v, sizeof(v)),
	    0);
	CHECK_STR(v, "bar-1.0");
	CHECK_INT(wheeltag_sdist_version("foo-1.0.rpm", "foo", v, sizeof(v)),
	          EINVAL);
	CHECK_INT(
	    wheeltag_sdist_version("other-1.0.tar.gz", "foo", v, sizeof(v)),
	    EINVAL);
}

T(versions)
{
	CHECK_INT(wheeltag_version_eq("1.0", "1"), 1);
	CHECK_INT(wheeltag_version_eq("1.0.0", "1"), 1);
	CHECK_INT(wheeltag_version_eq("v1.2", "1.2"), 1);
	CHECK_INT(wheeltag_version_eq("1.0RC1", "1.0rc1"), 1);
	CHECK_INT(wheeltag_version_eq("1.0-rc1", "1rc1"), 1);
	CHECK_INT(wheeltag_version_eq("01.2", "1.2"), 1);
	CHECK_INT(wheeltag_version_eq("1.2", "1.20"), 0);
	CHECK_INT(wheeltag_version_eq("1.0.1", "1.1"), 0);
	CHECK_INT(wheeltag_version_eq("2.0", "1.0"), 0);
	CHECK_INT(wheeltag_version_eq("1.0", "1.0.post1"), 0);
	CHECK_INT(wheeltag_version_eq("1.0+local", "1.0"), 0);
}

int main(void)
{
	RUN(numpy);
	RUN(cryptography_abi3);
	RUN(pure);
	RUN(legacy_aliases);
	RUN(order);
	RUN(bad_targets);
	RUN(split);
	RUN(sdist);
	RUN(versions);
	return t_done();
}
