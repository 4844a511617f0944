/* libFuzzer target: the FastCGI record parser, on what a web server (or
 * anything pretending to be one) might send. The first byte of the input
 * picks how the rest is cut into reads. Whatever comes, the parser never
 * consumes more than it is given, always moves on, reports body bytes that
 * lie inside its input, and walks the variables without overrunning them;
 * the environment made of them has one NAME=VALUE string per pair, or the
 * request is refused (a NUL in a value, a bad name) and it is empty. */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/http/fastcgi.h"

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	struct fastcgi_parser p;
	size_t step, off = 1;

	if (n < 1)
		return 0;
	step = (size_t)(d[0] % 64) + 1;
	fastcgi_init(&p);
	while (off < n) {
		size_t len = n - off < step ? n - off : step;
		const char *chunk = (const char *)d + off;
		size_t used = 0;

		while (used < len) {
			enum fastcgi_event ev;
			size_t u = fastcgi_feed(&p, chunk + used, len - used, &ev);

			if (u > len - used)
				abort();
			if (u == 0 && ev == FASTCGI_MORE)
				abort(); /* no progress */
			if (ev == FASTCGI_STDIN_DATA &&
			    (p.data < chunk + used || p.data + p.len > chunk + used + u))
				abort();
			used += u;
			if (ev == FASTCGI_ERROR) {
				if (!p.reason)
					abort();
				goto out;
			}
			if (ev == FASTCGI_PARAMS_END) {
				const char *name, *value;
				size_t o = 0, nl, vl;

				struct buf env;
				char **envp = NULL;
				const char *why;
				size_t pairs = 0;
				int ok = 1, rc, walked;

				while ((walked = fastcgi_pair(p.params.data, p.params.len,
							  &o, &name, &nl, &value,
							  &vl)) == 1) {
					if (o > p.params.len)
						abort();
					pairs++;
					if (!nl || memchr(name, '=', nl) ||
					    memchr(name, 0, nl) ||
					    memchr(value, 0, vl))
						ok = 0;
				}
				/* the environment: one string per pair, each
				 * NAME=VALUE with a name of its own, or nothing */
				buf_init(&env, 2 * FASTCGI_MAX_PARAMS);
				rc = fastcgi_env(p.params.data, p.params.len, &env,
						 &envp, &why);
				if (!envp || (rc == 0) != (ok && walked == 0))
					abort();
				for (size_t i = 0; rc == 0 && i < pairs; i++)
					if (!envp[i] || envp[i][0] == '=' ||
					    !strchr(envp[i], '='))
						abort();
				if (envp[rc == 0 ? pairs : 0])
					abort();
				buf_free(&env);
				free(envp);
			}
			if (ev == FASTCGI_STDIN_END)
				fastcgi_next(&p);
		}
		off += len;
	}
out:
	fastcgi_free(&p);
	return 0;
}
