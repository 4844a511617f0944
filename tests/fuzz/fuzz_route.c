/* libFuzzer target: request-path decoding and routing. Input is
 * "SCRIPT_NAME|REQUEST_URI" or just a REQUEST_URI. Whatever comes in, a
 * file route has a valid hash and file name, a project route a normalised
 * name, a redirect a clean path, and no accepted path has dot segments. */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/http/route.h"

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	char path[ROUTE_MAX_PATH], mount[ROUTE_MAX_PATH], norm[256];
	char *s = malloc(n + 1), *uri, *bar;
	const char *script = "";
	struct conf c;
	struct route r;
	int err;

	if (!s)
		return 0;
	memcpy(s, d, n);
	s[n] = '\0';
	uri = s;
	bar = strchr(s, '|');
	if (bar) {
		*bar = '\0';
		script = s;
		uri = bar + 1;
	}
	memset(&c, 0, sizeof(c));
	c.index[0].name = "pypi";
	c.index[1].name = "root/pypi";
	c.index[1].type = CONF_INDEX_VIRTUAL;
	c.nindex = 2;
	err = route_request_path(script, NULL, uri, path, sizeof(path), mount,
				 sizeof(mount));
	if (err && err != EINVAL && err != ENAMETOOLONG)
		abort();
	if (!err) {
		route_parse(&c, "GET", path, &r);
		if (r.kind == ROUTE_FILE && (!names_is_sha256(r.sha256) ||
					     !names_is_filename(r.filename)))
			abort();
		if (r.kind == ROUTE_SIMPLE_PROJECT &&
		    (names_normalize(r.project, norm, sizeof(norm)) ||
		     strcmp(norm, r.project)))
			abort();
		if (r.kind == ROUTE_REDIRECT &&
		    (r.location[0] != '/' || strstr(r.location, "..") ||
		     strpbrk(r.location, "\r\n")))
			abort();
		if (r.kind != ROUTE_ERROR &&
		    (strstr(path, "/../") || strstr(path, "/./")))
			abort();
	}
	/* the raw string as a path, and as PATH_INFO */
	route_parse(&c, "HEAD", uri, &r);
	if (route_request_path("", uri, NULL, path, sizeof(path), mount,
			       sizeof(mount)) == 0)
		route_parse(&c, "GET", path, &r);
	free(s);
	return 0;
}
