#include "config.h"

#include <errno.h>

#include "common/url.h"
#include "tests/unit/t.h"

#define BASE "http://a/b/c/d;p?q"

/* Resolves ref against base; returns the URL, or "ERR <errno>". */
static const char *resolve(const char *base, const char *ref)
{
	static char out[512];
	struct buf b;
	int err;

	buf_init(&b, 4096);
	err = url_resolve(base, ref, &b, NULL);
	if (err)
		snprintf(out, sizeof(out), "ERR %d", err);
	else
		snprintf(out, sizeof(out), "%s", buf_str(&b));
	buf_free(&b);
	return out;
}

/* RFC 3986 section 5.4.1. */
T(rfc3986_normal)
{
	CHECK_STR(resolve(BASE, "g"), "http://a/b/c/g");
	CHECK_STR(resolve(BASE, "./g"), "http://a/b/c/g");
	CHECK_STR(resolve(BASE, "g/"), "http://a/b/c/g/");
	CHECK_STR(resolve(BASE, "/g"), "http://a/g");
	CHECK_STR(resolve(BASE, "//g"), "http://g");
	CHECK_STR(resolve(BASE, "?y"), "http://a/b/c/d;p?y");
	CHECK_STR(resolve(BASE, "g?y"), "http://a/b/c/g?y");
	CHECK_STR(resolve(BASE, "#s"), "http://a/b/c/d;p?q");
	CHECK_STR(resolve(BASE, "g#s"), "http://a/b/c/g");
	CHECK_STR(resolve(BASE, "g?y#s"), "http://a/b/c/g?y");
	CHECK_STR(resolve(BASE, ";x"), "http://a/b/c/;x");
	CHECK_STR(resolve(BASE, "g;x"), "http://a/b/c/g;x");
	CHECK_STR(resolve(BASE, ""), "http://a/b/c/d;p?q");
	CHECK_STR(resolve(BASE, "."), "http://a/b/c/");
	CHECK_STR(resolve(BASE, "./"), "http://a/b/c/");
	CHECK_STR(resolve(BASE, ".."), "http://a/b/");
	CHECK_STR(resolve(BASE, "../"), "http://a/b/");
	CHECK_STR(resolve(BASE, "../g"), "http://a/b/g");
	CHECK_STR(resolve(BASE, "../.."), "http://a/");
	CHECK_STR(resolve(BASE, "../../"), "http://a/");
	CHECK_STR(resolve(BASE, "../../g"), "http://a/g");
}

/* RFC 3986 section 5.4.2. */
T(rfc3986_abnormal)
{
	CHECK_STR(resolve(BASE, "../../../g"), "http://a/g");
	CHECK_STR(resolve(BASE, "../../../../g"), "http://a/g");
	CHECK_STR(resolve(BASE, "/./g"), "http://a/g");
	CHECK_STR(resolve(BASE, "/../g"), "http://a/g");
	CHECK_STR(resolve(BASE, "g."), "http://a/b/c/g.");
	CHECK_STR(resolve(BASE, ".g"), "http://a/b/c/.g");
	CHECK_STR(resolve(BASE, "g.."), "http://a/b/c/g..");
	CHECK_STR(resolve(BASE, "..g"), "http://a/b/c/..g");
	CHECK_STR(resolve(BASE, "./../g"), "http://a/b/g");
	CHECK_STR(resolve(BASE, "./g/."), "http://a/b/c/g/");
	CHECK_STR(resolve(BASE, "g/./h"), "http://a/b/c/g/h");
	CHECK_STR(resolve(BASE, "g/../h"), "http://a/b/c/h");
	CHECK_STR(resolve(BASE, "g;x=1/./y"), "http://a/b/c/g;x=1/y");
	CHECK_STR(resolve(BASE, "g;x=1/../y"), "http://a/b/c/y");
	CHECK_STR(resolve(BASE, "g?y/./x"), "http://a/b/c/g?y/./x");
	CHECK_STR(resolve(BASE, "g?y/../x"), "http://a/b/c/g?y/../x");
	/* "g:h" and "http:g" need a scheme larder refuses or an authority */
	CHECK_STR(resolve(BASE, "g:h"), "ERR 22");
	CHECK_STR(resolve(BASE, "http:g"), "ERR 22");
}

T(pypi_like)
{
	const char *page = "https://pypi.org/simple/requests/";

	CHECK_STR(resolve(page, "../../packages/ab/cd/requests-2.0.tar.gz"),
		  "https://pypi.org/packages/ab/cd/requests-2.0.tar.gz");
	CHECK_STR(resolve(page, "https://files.pythonhosted.org/packages/x.whl"
				"#sha256=00"),
		  "https://files.pythonhosted.org/packages/x.whl");
	CHECK_STR(resolve(page, "//files.pythonhosted.org/p/x.whl"),
		  "https://files.pythonhosted.org/p/x.whl");
	CHECK_STR(resolve("http://h/root/pypi/simple/proj/",
			  "../../files/abc/x.whl"),
		  "http://h/root/pypi/files/abc/x.whl");
	CHECK_STR(resolve("http://h", "x"), "http://h/x");
	CHECK_STR(resolve("HTTPS://H:8443/s/", "X"), "https://H:8443/s/X");
	CHECK_STR(resolve(page, "/a/%2e%2E/b"), "https://pypi.org/a/%2e%2E/b");
}

T(fragment_split)
{
	struct buf b, f;

	buf_init(&b, 4096);
	buf_init(&f, 4096);
	CHECK_INT(url_resolve("https://h/s/p/", "x.whl#sha256=ab&md5=cd", &b,
			      &f),
		  0);
	CHECK_STR(buf_str(&b), "https://h/s/p/x.whl");
	CHECK_STR(buf_str(&f), "sha256=ab&md5=cd");
	buf_reset(&b);
	buf_reset(&f);
	CHECK_INT(url_resolve("https://h/s/p/#base", "y", &b, &f), 0);
	CHECK_STR(buf_str(&b), "https://h/s/p/y");
	CHECK_INT(f.len, 0);
	buf_free(&b);
	buf_free(&f);
}

T(rejected)
{
	const char *page = "https://pypi.org/simple/x/";

	CHECK_STR(resolve(page, "javascript:alert(1)"), "ERR 22");
	CHECK_STR(resolve(page, "JavaScript:alert(1)"), "ERR 22");
	CHECK_STR(resolve(page, "file:///etc/passwd"), "ERR 22");
	CHECK_STR(resolve(page, "data:text/html,hi"), "ERR 22");
	CHECK_STR(resolve(page, "ftp://h/x"), "ERR 22");
	CHECK_STR(resolve(page, "a b"), "ERR 22");
	CHECK_STR(resolve(page, " x"), "ERR 22");
	CHECK_STR(resolve(page, "x\ty"), "ERR 22");
	CHECK_STR(resolve(page, "x\ny"), "ERR 22");
	CHECK_STR(resolve(page, "x\x7f"), "ERR 22");
	CHECK_STR(resolve(page, "x\xc3\xa9"), "ERR 22");
	CHECK_STR(resolve(page, "\\\\evil/x"), "ERR 22");
	CHECK_STR(resolve(page, "x%zz"), "ERR 22");
	CHECK_STR(resolve(page, "x%4"), "ERR 22");
	CHECK_STR(resolve(page, "1x:y"), "ERR 22");
	CHECK_STR(resolve(page, "///x"), "ERR 22");
	CHECK_STR(resolve(page, "//a@b@c/x"), "ERR 22");
	CHECK_STR(resolve(page, "//h:99999/x"), "ERR 22");
	CHECK_STR(resolve(page, "//h:8a/x"), "ERR 22");
	CHECK_STR(resolve("/relative/base", "x"), "ERR 22");
	CHECK_STR(resolve("file:///base/", "x"), "ERR 22");
	CHECK_STR(resolve(page, "//[::1]/x"), "https://[::1]/x");
}

T(limit)
{
	struct buf b;

	buf_init(&b, 10);
	CHECK_INT(url_resolve("https://h/s/", "a-long-name", &b, NULL), E2BIG);
	CHECK_INT(b.len, 0);
	buf_free(&b);
}

T(host)
{
	char h[64];

	CHECK_INT(url_host("https://User:Pw@Files.Example.ORG:8443/x", h,
			   sizeof(h)),
		  0);
	CHECK_STR(h, "files.example.org");
	CHECK_INT(url_host("http://[::1]:80/", h, sizeof(h)), 0);
	CHECK_STR(h, "[::1]");
	CHECK_INT(url_host("http://h", h, sizeof(h)), 0);
	CHECK_STR(h, "h");
	CHECK_INT(url_host("ftp://h/", h, sizeof(h)), EINVAL);
	CHECK_INT(url_host("/x", h, sizeof(h)), EINVAL);
	CHECK_INT(url_host("http:///x", h, sizeof(h)), EINVAL);
	CHECK_INT(url_host("http://h%2e/x", h, sizeof(h)), EINVAL);
	CHECK_INT(url_host("http://averyveryverylonghost/", h, 8),
		  ENAMETOOLONG);
}

T(trusted)
{
	const char *base = "https://pypi.org/simple/x/";
	const char *tr = "files.pythonhosted.org  Mirror.Example:8080";

	CHECK_INT(url_host_trusted("https://PyPI.org:443/p/x", base, NULL), 1);
	CHECK_INT(url_host_trusted("https://evil.org/p/x", base, NULL), 0);
	CHECK_INT(url_host_trusted("https://files.pythonhosted.org/p", base,
				   NULL),
		  0);
	CHECK_INT(url_host_trusted("https://files.pythonhosted.org/p", base,
				   tr),
		  1);
	CHECK_INT(url_host_trusted("https://mirror.example:8080/p", base, tr),
		  1);
	CHECK_INT(url_host_trusted("http://files.pythonhosted.org.evil/p",
				   base, tr),
		  0);
	CHECK_INT(url_host_trusted("https://pythonhosted.org/p", base, tr), 0);
	CHECK_INT(url_host_trusted("https://files.pythonhosted.org@evil/p",
				   base, tr),
		  0);
	CHECK_INT(url_host_trusted("javascript:alert(1)", base, tr), 0);
	CHECK_INT(url_host_trusted("https://x/", base, ""), 0);
}

/* The scheme and the port count, not just the host name. */
T(trusted_scheme_and_port)
{
	const char *base = "https://pypi.org/simple/x/";
	const char *plain = "http://127.0.0.1:8081/simple/";
	const char *tr = "files.pythonhosted.org Mirror.Example:8080";

	/* an https upstream's files stay on https */
	CHECK_INT(url_host_trusted("http://pypi.org/p", base, tr), 0);
	CHECK_INT(url_host_trusted("http://files.pythonhosted.org/p", base, tr),
		  0);
	CHECK_INT(url_host_trusted("http://mirror.example:8080/p", base, tr),
		  0);
	/* the upstream's own host, on another port */
	CHECK_INT(url_host_trusted("https://pypi.org:8443/p", base, tr), 0);
	/* unless the list names that port */
	CHECK_INT(url_host_trusted("https://pypi.org:8443/p", base,
				   "pypi.org:8443"),
		  1);
	CHECK_INT(url_host_trusted("http://localhost:18081/f", "http://localhost:18080/simple/",
				   "localhost:18081"),
		  1);
	CHECK_INT(url_host_trusted("http://localhost:18082/f", "http://localhost:18080/simple/",
				   "localhost:18081"),
		  0);
	/* a trusted name without a port means the default one */
	CHECK_INT(url_host_trusted("https://files.pythonhosted.org:8443/p",
				   base, tr),
		  0);
	/* and a name with a port means that port only */
	CHECK_INT(url_host_trusted("https://mirror.example/p", base, tr), 0);
	CHECK_INT(url_host_trusted("https://mirror.example:80/p", base, tr), 0);
	/* an http upstream may link http or https files */
	CHECK_INT(url_host_trusted("http://127.0.0.1:8081/f", plain, NULL), 1);
	CHECK_INT(url_host_trusted("http://127.0.0.1:8082/f", plain, NULL), 0);
	CHECK_INT(url_host_trusted("http://localhost:8082/f", plain,
				   "localhost:8082"),
		  1);
	CHECK_INT(url_host_trusted("http://localhost:8082/f", plain,
				   "localhost"),
		  0);
	CHECK_INT(url_host_trusted("https://files.pythonhosted.org/f", plain,
				   tr),
		  1);
}

/* "*.suffix" entries: any name under suffix, on the same port rule. */
T(trusted_wildcard)
{
	const char *hub = "https://registry-1.docker.io/";
	const char *plain = "http://127.0.0.1:5000/";
	const char *tr = "*.cloudfront.net *.Quay.IO *.cdn.example:8443";

	CHECK_INT(url_host_trusted("https://d1.cloudfront.net/b", hub, tr), 1);
	CHECK_INT(url_host_trusted("https://a.b.cloudfront.net/b", hub, tr),
		  1);
	CHECK_INT(url_host_trusted("https://CDN01.quay.io/b", hub, tr), 1);
	/* not the suffix itself, nor a name that merely ends like it */
	CHECK_INT(url_host_trusted("https://cloudfront.net/b", hub, tr), 0);
	CHECK_INT(url_host_trusted("https://evilcloudfront.net/b", hub, tr),
		  0);
	CHECK_INT(url_host_trusted("https://.cloudfront.net/b", hub, tr), 0);
	CHECK_INT(url_host_trusted("https://x..cloudfront.net/b", hub, tr),
		  0);
	CHECK_INT(url_host_trusted("https://cloudfront.net.evil/b", hub, tr),
		  0);
	CHECK_INT(url_host_trusted("https://d1.cloudfront.net@evil/b", hub,
				   tr),
		  0);
	/* the port: the scheme's default, or the one given */
	CHECK_INT(url_host_trusted("https://d1.cloudfront.net:8443/b", hub,
				   tr),
		  0);
	CHECK_INT(url_host_trusted("https://a.cdn.example:8443/b", hub, tr),
		  1);
	CHECK_INT(url_host_trusted("https://a.cdn.example/b", hub, tr), 0);
	/* an https upstream's blobs stay on https */
	CHECK_INT(url_host_trusted("http://d1.cloudfront.net/b", hub, tr), 0);
	CHECK_INT(url_host_trusted("http://d1.cloudfront.net/b", plain, tr),
		  1);
	/* a lone "*" or "*." is no wildcard, and matches nothing */
	CHECK_INT(url_host_trusted("https://a.example/b", hub, "* *."), 0);
	CHECK_INT(url_host_trusted("https://a.example/b", hub, "*example"), 0);
}

T(origin)
{
	char o[64];

	CHECK_INT(url_origin("HTTPS://User:Pw@Files.Example.ORG/x?y", o,
			     sizeof(o)), 0);
	CHECK_STR(o, "https://files.example.org:443");
	CHECK_INT(url_origin("http://127.0.0.1:8081/simple/", o, sizeof(o)), 0);
	CHECK_STR(o, "http://127.0.0.1:8081");
	CHECK_INT(url_origin("ftp://h/", o, sizeof(o)), EINVAL);
	CHECK_INT(url_origin("http://averyveryverylonghost.example/", o, 16),
		  ENAMETOOLONG);
}

/* url_redact() into a buffer of len bytes. */
static const char *redact(const char *text, size_t len)
{
	static char out[512];

	return url_redact(text, out, len);
}

T(redact_userinfo)
{
	CHECK_STR(redact("http://mirroruser:s3cretpass@host/simple/", 512),
		  "http://mirroruser:***@host/simple/");
	CHECK_STR(redact("https://TOKEN@host:8443/x", 512),
		  "https://***@host:8443/x");
	CHECK_STR(redact("https://u:@host/", 512), "https://u:***@host/");
	/* the last '@' ends the userinfo (a raw '@' in a password) */
	CHECK_STR(redact("http://u:p@ss@host/", 512), "http://u:***@host/");
	/* nothing to mask: copied as it is */
	CHECK_STR(redact("http://host:81/a@b/?q=1#f", 512),
		  "http://host:81/a@b/?q=1#f");
	CHECK_STR(redact("no URL here: a@b", 512), "no URL here: a@b");
	CHECK_STR(redact("", 512), "");
	/* URLs in running text, each masked */
	CHECK_STR(redact("http://a:b@h/p: Failed to connect to h port 1 "
			 "(from http://c:d@i/q)", 512),
		  "http://a:***@h/p: Failed to connect to h port 1 "
		  "(from http://c:***@i/q)");
	CHECK_STR(redact("key http://a:b@h: message", 512),
		  "key http://a:***@h: message");
	CHECK_STR(redact("\"http://a:b@h\" <http://c:d@i>", 512),
		  "\"http://a:***@h\" <http://c:***@i>");
	/* a mail address after a URL is not its userinfo */
	CHECK_STR(redact("http://h/x ask admin@example.com", 512),
		  "http://h/x ask admin@example.com");
}

T(redact_query)
{
	CHECK_STR(redact("https://b.s3.amazonaws.com/f.whl?X-Amz-Algorithm="
			 "AWS4&X-Amz-Credential=AKIA%2F1&X-Amz-Signature=abc"
			 "&X-Amz-Security-Token=tok#frag", 512),
		  "https://b.s3.amazonaws.com/f.whl?X-Amz-Algorithm=AWS4"
		  "&X-Amz-Credential=***&X-Amz-Signature=***"
		  "&X-Amz-Security-Token=***#frag");
	CHECK_STR(redact("https://h/f?sv=2020&sig=ZZZ: no answer", 512),
		  "https://h/f?sv=2020&sig=***: no answer");
	CHECK_STR(redact("https://h/f?a=1;api_key=k;b=2 x", 512),
		  "https://h/f?a=1;api_key=***;b=2 x");
	/* after the fragment, or outside a URL: not a query */
	CHECK_STR(redact("https://h/f#x?token=t", 512),
		  "https://h/f#x?token=t");
	CHECK_STR(redact("why?token=t", 512), "why?token=t");
	CHECK_STR(redact("https://h/f?token", 512), "https://h/f?token");
}

T(redact_short_buffer)
{
	char out[8];

	/* cut short, NUL-terminated, and never a byte of the secret */
	CHECK_STR(url_redact("http://u:secret@h/", out, sizeof(out)),
		  "http://");
	CHECK_STR(redact("http://u:secret@h/", 12), "http://u:**");
	CHECK_STR(redact("http://u:secret@h/", 1), "");
	CHECK_STR(url_redact("x", out, 0), out); /* len 0: nothing written */
}

int main(void)
{
	RUN(rfc3986_normal);
	RUN(rfc3986_abnormal);
	RUN(pypi_like);
	RUN(fragment_split);
	RUN(rejected);
	RUN(limit);
	RUN(host);
	RUN(trusted);
	RUN(trusted_scheme_and_port);
	RUN(trusted_wildcard);
	RUN(origin);
	RUN(redact_userinfo);
	RUN(redact_query);
	RUN(redact_short_buffer);
	return t_done();
}
