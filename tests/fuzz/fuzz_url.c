/* libFuzzer target for common/url.c: url_redact() never writes past its
 * buffer, always ends with a NUL, is the same cut short as whole (a prefix
 * of it), and masks nothing more the second time (idempotent); url_resolve,
 * url_origin, url_host and url_host_trusted take any bytes without a
 * crash. */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/url.h"

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	char *s, *whole, *again, cut[17], host[256], origin[300];
	size_t len;
	struct buf b;

	s = malloc(n + 1);
	if (!s)
		return 0;
	memcpy(s, d, n);
	s[n] = '\0';
	len = 2 * n + 64; /* every byte is at most "***" more */
	whole = malloc(len);
	again = malloc(len);
	if (!whole || !again)
		goto out;
	url_redact(s, whole, len);
	if (strlen(whole) >= len - 1)
		abort(); /* the room was enough: nothing was cut */
	url_redact(whole, again, len);
	if (strcmp(whole, again) != 0)
		abort();
	url_redact(s, cut, sizeof(cut));
	if (strncmp(cut, whole, strlen(cut)) != 0)
		abort();

	buf_init(&b, 1 << 16);
	url_resolve("https://u:p@files.example.org/simple/x/", s, &b, NULL);
	buf_free(&b);
	url_origin(s, origin, sizeof(origin));
	url_host(s, host, sizeof(host));
	url_host_trusted(s, "https://pypi.org/simple/", "*.example.org h:81");
out:
	free(again);
	free(whole);
	free(s);
	return 0;
}
