/* libFuzzer target: the PEP 503 HTML parser, entity decoding, and the
 * renderers on whatever it accepts. */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/pypi/html.h"
#include "common/pypi/simple.h"

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	struct simple_opts o = {.base_url = "https://pypi.org/simple/x/",
				.trusted = "files.pythonhosted.org",
				.max_files = 10000};
	struct simple_page p;
	struct buf out;
	char err[256];

	buf_init(&out, 64 << 20);
	html_unescape((const char *)d, n, &out);
	buf_free(&out);
	for (int list = 0; list < 2; list++) {
		if (html_parse_simple((const char *)d, n, &o, list, &p, err,
				      sizeof(err)))
			continue;
		buf_init(&out, 64 << 20);
		if (simple_render_html(&p, &out))
			abort();
		buf_reset(&out);
		if (simple_render_json(&p, &out))
			abort();
		buf_free(&out);
		simple_page_free(&p);
	}
	return 0;
}
