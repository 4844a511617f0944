/* libFuzzer target: the PEP 691 JSON page parser and both renderers. What
 * parses renders; the rendered JSON parses again with the same files. */
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
	struct simple_opts back = {.base_url = "http://h/root/pypi/simple/x/",
				   .max_files = 10000};
	struct simple_page p, q;
	struct buf json, html;
	char err[256];

	for (int list = 0; list < 2; list++) {
		if (simple_parse_json((const char *)d, n, &o, list, &p, err,
				      sizeof(err)))
			continue;
		/* the prefetch's picks: a file of the page, and a wheel
		 * whenever one with metadata is picked */
		{
			int m = simple_likely_metadata(&p);
			int w = simple_likely_wheel(&p);

			if (m >= (int)p.nfiles || w >= (int)p.nfiles ||
			    (m >= 0 && w < 0))
				abort();
		}
		buf_init(&json, 64 << 20);
		buf_init(&html, 64 << 20);
		if (simple_render_json(&p, &json) || simple_render_html(&p, &html))
			abort();
		if (simple_parse_json(json.data, json.len, &back, list, &q, err,
				      sizeof(err)))
			abort();
		if (q.nfiles != p.nfiles || q.nprojects != p.nprojects)
			abort();
		simple_page_free(&q);
		if (html_parse_simple(html.data, html.len, &back, list, &q, err,
				      sizeof(err)))
			abort();
		if (q.nfiles != p.nfiles)
			abort();
		simple_page_free(&q);
		buf_free(&json);
		buf_free(&html);
		simple_page_free(&p);
	}
	return 0;
}
