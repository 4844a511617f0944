/* libFuzzer target: core metadata of any shape walks (coremeta_each,
 * coremeta_requires, coremeta_license) and renders into a JSON API document that is valid UTF-8 JSON text, or an
 * error; the first line of the input as a version is read and ordered
 * against 1.0 both ways round consistently (pep440). */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/dist/coremeta.h"
#include "common/dist/pep440.h"
#include "common/names.h"
#include "common/json.h"
#include "common/pypi/pyjson.h"

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);

#define SHA "1111111111111111111111111111111111111111111111111111111111111111"

static const char page_json[] =
	"{\"meta\": {\"api-version\": \"1.1\"}, \"name\": \"p\", \"files\": ["
	"{\"filename\": \"p-1.0-py3-none-any.whl\", \"url\": "
	"\"https://h/p.whl\", \"hashes\": {\"sha256\": \"" SHA "\"}, "
	"\"core-metadata\": true}]}";

static int count(const char *name, size_t nlen, const char *value,
		 void *ctx)
{
	(void)name;
	if (!nlen || !value)
		abort();
	++*(size_t *)ctx;
	return 0;
}

/* Whether the document parses as JSON to its end. */
static void check_json(const struct buf *b)
{
	struct json_reader r;

	json_init(&r, b->data, b->len, b->len + 1);
	if (json_value(&r) != JSON_OBJECT || json_skip(&r) != 0 ||
	    json_end(&r) != 0)
		abort();
	json_free(&r);
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	static struct simple_page page;
	static struct pyjson j;
	static int ready;
	struct pyjson_opts o = {.files_url = "http://l/f/",
				.project_url = "http://l/s/p/",
				.api_url = "http://l/pypi/p/",
				.metadata = (const char *)d, .metalen = n,
				.all_releases = 1};
	struct pep440 a, one;
	struct buf b;
	size_t headers = 0, body = 0;
	char *s, *nl;
	int rc;

	if (!ready) {
		struct simple_opts so = {.base_url = "https://h/"};
		char err[128];

		if (simple_parse_json(page_json, sizeof(page_json) - 1, &so, 0,
				      &page, err, sizeof(err)) ||
		    pyjson_group(&page, "p", &j) || j.nrel != 1)
			abort();
		ready = 1;
	}
	rc = coremeta_each((const char *)d, n, count, &headers, &body);
	if (rc && rc != EINVAL && rc != ENOMEM)
		abort();
	if (!rc && body > n)
		abort();
	{
		/* the prefetch's reading of Requires-Dist: within its cap,
		 * every name normalised */
		char names[COREMETA_MAX_REQUIRES][NAMES_MAX_PROJECT + 1], nm[
			NAMES_MAX_PROJECT + 1];
		size_t nn = 99;

		rc = coremeta_requires((const char *)d, n, names,
				       COREMETA_MAX_REQUIRES, &nn);
		if ((rc && rc != EINVAL && rc != ENOMEM) ||
		    nn > COREMETA_MAX_REQUIRES)
			abort();
		for (size_t i = 0; i < nn; i++)
			if (names_normalize(names[i], nm, sizeof(nm)) ||
			    strcmp(nm, names[i]) != 0)
				abort();
	}
	{
		/* the license= rules' reading: NUL-terminated within its
		 * size, "" on an error */
		char lic[COREMETA_MAX_LICENSE];

		memset(lic, 'x', sizeof(lic));
		rc = coremeta_license((const char *)d, n, lic, sizeof(lic));
		if ((rc && rc != EINVAL && rc != ENOMEM) ||
		    !memchr(lic, '\0', sizeof(lic)))
			abort();
	}
	buf_init(&b, 1 << 24);
	rc = pyjson_render(&page, "p", &j, 0, &o, &b);
	if (rc == 0) {
		if (!json_utf8_valid(b.data))
			abort();
		check_json(&b);
	} else if (rc != E2BIG && rc != ENOMEM) {
		abort();
	}
	buf_free(&b);
	s = malloc(n + 1);
	if (!s)
		return 0;
	memcpy(s, d, n);
	s[n] = '\0';
	nl = strchr(s, '\n');
	if (nl)
		*nl = '\0';
	if (pep440_parse(s, &a) == 0 && pep440_parse("1.0", &one) == 0) {
		int x = pep440_cmp(&a, &one), y = pep440_cmp(&one, &a);

		if ((x < 0) != (y > 0) || (x == 0) != (y == 0) ||
		    pep440_cmp(&a, &a) != 0)
			abort();
	}
	free(s);
	return 0;
}
