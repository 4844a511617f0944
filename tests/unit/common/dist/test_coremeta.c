#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/dist/coremeta.h"
#include "common/dist/distname.h"
#include "tests/unit/t.h"

static char err[256];

static int parse(const char *s, struct coremeta *m)
{
	err[0] = '\0';
	return coremeta_parse(s, strlen(s), m, err, sizeof(err));
}

T(headers)
{
	struct coremeta m;
	const char *s = "Metadata-Version: 2.1\r\n"
	                "Name: Corp_Lib\r\n"
	                "version:   1.0.post1  \r\n"
	                "Summary: a library\r\n"
	                "Requires-Dist: x\r\n"
	                "Requires-Python: >=3.8,\r\n"
	                " <4\r\n"
	                "\r\n"
	                "Body: not a header\n";

	CHECK_INT(parse(s, &m), 0);
	CHECK_STR(m.metadata_version, "2.1");
	CHECK_STR(m.name, "Corp_Lib");
	CHECK_STR(m.version, "1.0.post1");
	CHECK_STR(m.summary, "a library");
	CHECK_STR(m.requires_python, ">=3.8, <4");
	CHECK_STR(s + m.body, "Body: not a header\n");
	/* no body, no final newline */
	CHECK_INT(parse("Metadata-Version: 1.0\nName: a\nVersion: 1", &m), 0);
	CHECK_STR(m.version, "1");
	CHECK_STR(m.requires_python, "");
	/* a folded Description is skipped as a whole */
	CHECK_INT(parse("Metadata-Version: 1.0\nName: a\nDescription: x\n"
	                "        Version: 9\nVersion: 2\n",
	                &m),
	          0);
	CHECK_STR(m.version, "2");
}

T(bad_headers)
{
	struct coremeta m;
	char big[600];

	CHECK_INT(parse("Metadata-Version: 2.1\nName: a\n", &m), EINVAL);
	CHECK_STR(err, "metadata has no Version");
	CHECK_INT(parse("Name: a\nVersion: 1\n", &m), EINVAL);
	CHECK_STR(err, "metadata has no Metadata-Version");
	CHECK_INT(
	    parse("Metadata-Version: 2.1\nName: a\nName: b\nVersion: 1\n", &m),
	    EINVAL);
	CHECK_STR(err, "metadata has Name twice");
	CHECK_INT(parse("Metadata-Version: 2.1\nName a\nVersion: 1\n", &m),
	          EINVAL);
	CHECK_STR(err, "metadata line 2 is not a header");
	CHECK_INT(parse(" Name: a\n", &m), EINVAL);
	CHECK_INT(parse("Metadata-Version: 2.1\nName:\nVersion: 1\n", &m),
	          EINVAL);
	CHECK_STR(err, "metadata has no Name");
	CHECK_INT(coremeta_parse("Name: a\0b\n", 10, &m, err, sizeof(err)),
	          EINVAL);
	CHECK_STR(err, "metadata holds a NUL byte");
	/* a Name too long is refused, a Summary too long is cut */
	memset(big, 'x', sizeof(big));
	memcpy(big, "Name: ", 6);
	big[sizeof(big) - 1] = '\0';
	CHECK_INT(parse(big, &m), EINVAL);
	CHECK_STR(err, "metadata Name is too long");
	memcpy(big, "Summary:", 8);
	big[300] = '\n';
	big[301] = ' ';
	CHECK_INT(parse(big, &m), EINVAL); /* no Name and Version */
	CHECK_INT(strlen(m.summary), COREMETA_MAX_SUMMARY - 1);
}

T(summary_cut_utf8)
{
	struct coremeta m;
	char s[COREMETA_MAX_SUMMARY + 128];
	size_t n;

	n = (size_t)snprintf(s, sizeof(s), "Summary: ");
	while (n < COREMETA_MAX_SUMMARY + 20) {
		s[n++] = (char)0xC3; /* e-acute, two bytes */
		s[n++] = (char)0xA9;
	}
	strcpy(s + n, "\nMetadata-Version: 2.1\nName: a\nVersion: 1\n");
	CHECK_INT(parse(s, &m), 0);
	n = strlen(m.summary);
	CHECK(n < COREMETA_MAX_SUMMARY);
	CHECK_INT(n % 2, 0); /* no half character */
}

static const char *canon(const char *v)
{
	static char out[DISTNAME_VERSION_MAX];

	if (distname_version_canon(v, out, sizeof(out)))
		return "(invalid)";
	return out;
}

T(version_canon)
{
	CHECK_STR(canon("1.0"), "1.0");
	CHECK_STR(canon("1.0.0"), "1.0.0");
	CHECK_STR(canon(" v1.0 "), "1.0");
	CHECK_STR(canon("01.002"), "1.2");
	CHECK_STR(canon("1.0.post1"), "1.0.post1");
	CHECK_STR(canon("1.0-post1"), "1.0.post1");
	CHECK_STR(canon("1.0post1"), "1.0.post1");
	CHECK_STR(canon("1.0_post_1"), "1.0.post1");
	CHECK_STR(canon("1.0-1"), "1.0.post1");
	CHECK_STR(canon("1.0.rev2"), "1.0.post2");
	CHECK_STR(canon("1.0r"), "1.0.post0");
	CHECK_STR(canon("1.0rc1"), "1.0rc1");
	CHECK_STR(canon("1.0RC1"), "1.0rc1");
	CHECK_STR(canon("1.0c1"), "1.0rc1");
	CHECK_STR(canon("1.0-pre.1"), "1.0rc1");
	CHECK_STR(canon("1.0preview"), "1.0rc0");
	CHECK_STR(canon("1.0a1"), "1.0a1");
	CHECK_STR(canon("1.0alpha1"), "1.0a1");
	CHECK_STR(canon("1.0.Beta.2"), "1.0b2");
	CHECK_STR(canon("1.0.dev"), "1.0.dev0");
	CHECK_STR(canon("1.0a1.post2.dev3"), "1.0a1.post2.dev3");
	CHECK_STR(canon("0!1.0"), "1.0");
	CHECK_STR(canon("02!1.0"), "2!1.0");
	CHECK_STR(canon("1.0+Ubuntu-1_x"), "1.0+ubuntu.1.x");
	CHECK(strcmp(canon("1.0"), "1.0.0") != 0);
	CHECK_STR(canon(""), "(invalid)");
	CHECK_STR(canon("abc"), "(invalid)");
	CHECK_STR(canon("1.0abc"), "(invalid)");
	CHECK_STR(canon("1.0-"), "(invalid)");
	CHECK_STR(canon("1.0+"), "(invalid)");
	CHECK_STR(canon("1.0+a..b"), "(invalid)");
	CHECK_STR(canon("!1.0"), "(invalid)");
	CHECK_STR(canon("1.0 1"), "(invalid)");
	{
		char tiny[4];

		CHECK_INT(distname_version_canon("1.0.0", tiny, sizeof(tiny)),
		          ENAMETOOLONG);
	}
}

T(filename_parse)
{
	struct distname d;

	CHECK_INT(distname_parse("corp_lib-1.0-py3-none-any.whl", &d), 0);
	CHECK_INT(d.kind, DISTNAME_WHEEL);
	CHECK_STR(d.name, "corp_lib");
	CHECK_STR(d.version, "1.0");
	CHECK_INT(
	    distname_parse("corp_lib-1.0-1-cp312-cp312-linux_x86_64.whl", &d),
	    0);
	CHECK_STR(d.version, "1.0");
	CHECK_INT(distname_parse("corp-lib-1.0.tar.gz", &d), 0);
	CHECK_INT(d.kind, DISTNAME_SDIST_TGZ);
	CHECK_STR(d.name, "corp-lib");
	CHECK_STR(d.version, "1.0");
	CHECK_INT(distname_parse("corp_lib-1.0rc1.zip", &d), 0);
	CHECK_INT(d.kind, DISTNAME_SDIST_ZIP);
	CHECK_STR(d.version, "1.0rc1");
	CHECK_INT(distname_parse("corp_lib-1.0.tar.bz2", &d), EINVAL);
	CHECK_INT(distname_parse("corp_lib.tar.gz", &d), EINVAL);
	CHECK_INT(distname_parse("-1.0.tar.gz", &d), EINVAL);
	CHECK_INT(distname_parse("corp_lib-.tar.gz", &d), EINVAL);
	CHECK_INT(distname_parse("corp_lib-1.0-py3-none.whl", &d), EINVAL);
	CHECK_INT(distname_parse("../x-1.0.tar.gz", &d), EINVAL);
	CHECK_INT(distname_parse("a/x-1.0.tar.gz", &d), EINVAL);
}

static int check(const char *file, const char *name, const char *version)
{
	struct distname d;

	err[0] = '\0';
	return distname_check(file, name, version, &d, err, sizeof(err));
}

T(filename_check)
{
	struct distname d;

	CHECK_INT(check("corp_lib-1.0-py3-none-any.whl", "corp-lib", "1.0"), 0);
	CHECK_INT(check("Corp.Lib-1.0-py3-none-any.whl", "CORP_lib", "v1.0"),
	          0);
	CHECK_INT(check("corp_lib-1.0_post1-py3-none-any.whl", "corp-lib",
	                "1.0-post1"),
	          0);
	CHECK_INT(check("corp_lib-1.0-py3-none-any.whl", "corp-lib", "1.1"),
	          EINVAL);
	CHECK_STR(err, "filename version 1.0 does not match version 1.1");
	CHECK_INT(check("corp_lib-1.1.tar.gz", "corp-lib", "1.0"), EINVAL);
	CHECK_STR(err, "filename version 1.1 does not match version 1.0");
	CHECK_INT(check("other-1.0-py3-none-any.whl", "corp-lib", "1.0"),
	          EINVAL);
	CHECK_STR(err, "filename project other does not match project "
	               "corp-lib");
	CHECK_INT(check("corp_lib-1.0.0-py3-none-any.whl", "corp-lib", "1.0"),
	          EINVAL);
	CHECK_INT(check("corp_lib-1.0.exe", "corp-lib", "1.0"), EINVAL);
	CHECK_CONTAINS(err, "not a wheel or sdist file name");
	CHECK_INT(check("corp_lib-1.0.tar.gz", "bad name!", "1.0"), EINVAL);
	CHECK_STR(err, "project name bad name! is not valid");
	CHECK_INT(check("corp_lib-1.0.tar.gz", "corp-lib", "one"), EINVAL);
	CHECK_STR(err, "version one is not a PEP 440 version");
	CHECK_INT(check("corp_lib-x.tar.gz", "corp-lib", "1.0"), EINVAL);
	CHECK_STR(err, "filename version x is not a PEP 440 version");
	/* an sdist splits by the project, dashes and all */
	CHECK_INT(distname_check("corp-lib-2fa-1.0.tar.gz", "corp-lib-2fa",
	                         "1.0", &d, err, sizeof(err)),
	          0);
	CHECK_STR(d.name, "corp-lib-2fa");
	CHECK_STR(d.version, "1.0");
	CHECK_STR(d.project, "corp-lib-2fa");
	CHECK_STR(d.canon, "1.0");
	CHECK_INT(distname_check("corp-lib-1.0-1.zip", "corp-lib", "1.0.post1",
	                         &d, err, sizeof(err)),
	          0);
	CHECK_STR(d.version, "1.0-1");
}

struct seen {
	char out[2048];
	int stop_at; /* fn returns EINTR at this header, 0 never */
	int n;
};

static int collect(const char *name, size_t nlen, const char *value,
		   void *ctx)
{
	struct seen *s = ctx;
	size_t len = strlen(s->out);

	s->n++;
	snprintf(s->out + len, sizeof(s->out) - len, "%.*s=[%s]\n", (int)nlen,
		 name, value);
	return s->n == s->stop_at ? EINTR : 0;
}

T(each)
{
	const char *s = "Metadata-Version: 2.1\r\n"
			"Name: corp\r\n"
			"License: line one\r\n"
			"        line two  \r\n"
			"Classifier: A :: B\r\n"
			"Classifier: C\r\n"
			"not a header\r\n"
			"Description: first\r\n"
			"        second\r\n"
			"       |  indented\r\n"
			"        \r\n"
			"        last\r\n"
			"Project-URL: Home, https://example.org/\r\n"
			"\r\n"
			"the body\n";
	struct seen seen = {.stop_at = 0};
	size_t body = 0;

	CHECK_INT(coremeta_each(s, strlen(s), collect, &seen, &body), 0);
	CHECK_STR(seen.out, "Metadata-Version=[2.1]\n"
			    "Name=[corp]\n"
			    "License=[line one line two]\n"
			    "Classifier=[A :: B]\n"
			    "Classifier=[C]\n"
			    "Description=[first\nsecond\n  indented\n\nlast]\n"
			    "Project-URL=[Home, https://example.org/]\n");
	CHECK_STR(s + body, "the body\n");
	/* fn's error stops the walk */
	memset(&seen, 0, sizeof(seen));
	seen.stop_at = 2;
	CHECK_INT(coremeta_each(s, strlen(s), collect, &seen, NULL), EINTR);
	CHECK_INT(seen.n, 2);
	/* no blank line: the body is empty; a NUL is refused */
	memset(&seen, 0, sizeof(seen));
	CHECK_INT(coremeta_each("Name: a\nVersion: 1", 18, collect, &seen,
				&body), 0);
	CHECK_INT(body, 18);
	CHECK_STR(seen.out, "Name=[a]\nVersion=[1]\n");
	CHECK_INT(coremeta_each("Name: a\0", 9, collect, &seen, &body),
		  EINVAL);
	CHECK_INT(coremeta_each("", 0, collect, &seen, &body), 0);
	CHECK_INT(body, 0);
}

T(requires)
{
	char names[4][NAMES_MAX_PROJECT + 1];
	size_t n = 99;
	const char *s = "Metadata-Version: 2.1\n"
	                "Name: a\n"
	                "Version: 1\n"
	                "Requires-Dist: Larder_Demo.B>=1.0\n"
	                "requires-dist: c[x,y] (>=2); python_version < \"3.8\"\n"
	                "Requires-Dist: d; extra == \"x\"\n"
	                "Requires-Dist: e ; sys_platform == 'win32' and "
	                "extra=='t'\n"
	                "Requires-Dist: f; platform_machine == \"extra\"\n"
	                "Requires-Dist: g @ https://example.com/g.whl\n"
	                "Requires-Dist: larder-demo-b\n"
	                "Requires-Dist: -bad\n"
	                "Requires-Dist: extras_lib; os_name == 'posix'\n"
	                "Requires-Dist: h\n"
	                "Requires-Dist: i\n"
	                "\n"
	                "Requires-Dist: body\n";

	CHECK_INT(coremeta_requires(s, strlen(s), names, 4, &n), 0);
	CHECK_INT(n, 4);
	CHECK_STR(names[0], "larder-demo-b");
	CHECK_STR(names[1], "c");
	/* "extra" in quotes is a value, not the variable */
	CHECK_STR(names[2], "f");
	CHECK_STR(names[3], "extras-lib");
	/* the cap */
	CHECK_INT(coremeta_requires(s, strlen(s), names, 1, &n), 0);
	CHECK_INT(n, 1);
	CHECK_INT(coremeta_requires("Name: a\n", 8, names, 4, &n), 0);
	CHECK_INT(n, 0);
	CHECK_INT(coremeta_requires("Requires-Dist: a\0", 17, names, 4, &n),
		  EINVAL);
	{
		/* a name longer than any project's is skipped, not cut
		 * short into another project's name */
		char text[NAMES_MAX_PROJECT + 64];

		snprintf(text, sizeof(text), "Requires-Dist: %0*d\n"
			 "Requires-Dist: z\n", NAMES_MAX_PROJECT + 1, 7);
		CHECK_INT(coremeta_requires(text, strlen(text), names, 4, &n),
			  0);
		CHECK_INT(n, 1);
		CHECK_STR(names[0], "z");
		snprintf(text, sizeof(text), "Requires-Dist: %0*d\n",
			 NAMES_MAX_PROJECT, 7);
		CHECK_INT(coremeta_requires(text, strlen(text), names, 4, &n),
			  0);
		CHECK_INT(n, 1);
	}
}

T(license)
{
	char out[COREMETA_MAX_LICENSE], small[12];
	const char *both = "Name: a\n"
	                   "Classifier: License :: OSI Approved :: MIT License\n"
	                   "License-Expression: GPL-3.0-only OR\n"
	                   "  MIT\n"
	                   "Classifier: License :: Other\n"
	                   "\n"
	                   "License-Expression: in the body\n";
	const char *cls = "Name: a\n"
	                  "License: the whole text of it\n"
	                  "Classifier: Programming Language :: Python\n"
	                  "Classifier: License :: OSI Approved :: MIT License\n"
	                  "classifier: License :: Public Domain\n";

	/* the expression wins wherever it stands, unfolded */
	CHECK_INT(coremeta_license(both, strlen(both), out, sizeof(out)), 0);
	CHECK_STR(out, "GPL-3.0-only OR MIT");
	/* else the license classifiers, whole; never the License field */
	CHECK_INT(coremeta_license(cls, strlen(cls), out, sizeof(out)), 0);
	CHECK_STR(out, "License :: OSI Approved :: MIT License; "
		       "License :: Public Domain");
	CHECK_INT(coremeta_license("Name: a\nLicense: MIT\n", 21, out,
				   sizeof(out)), 0);
	CHECK_STR(out, "");
	/* cut at the caller's size */
	CHECK_INT(coremeta_license(cls, strlen(cls), small, sizeof(small)), 0);
	CHECK_STR(small, "License :: ");
	CHECK_INT(coremeta_license("License-Expression: a\0", 22, out,
				   sizeof(out)), EINVAL);
}

int main(void)
{
	RUN(license);
	RUN(requires);
	RUN(each);
	RUN(headers);
	RUN(bad_headers);
	RUN(summary_cut_utf8);
	RUN(version_canon);
	RUN(filename_parse);
	RUN(filename_check);
	return t_done();
}
