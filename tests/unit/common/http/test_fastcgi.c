#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/http/fastcgi.h"
#include "tests/unit/t.h"

/* A byte string a web server would send, built record by record. */
struct wire {
	unsigned char b[200000];
	size_t n;
};

static void rec(struct wire *w, int type, unsigned id, const void *content,
		size_t len, size_t pad)
{
	fastcgi_header(w->b + w->n, type, (uint16_t)id, len, pad);
	w->n += FASTCGI_HEADER_LEN;
	memcpy(w->b + w->n, content, len);
	w->n += len;
	memset(w->b + w->n, 0xee, pad);
	w->n += pad;
}

static void begin(struct wire *w, unsigned id, int role, int keep)
{
	unsigned char b[8] = {0, (unsigned char)role, keep ? 1 : 0};

	rec(w, FASTCGI_BEGIN_REQUEST, id, b, 8, 0);
}

/* Encodes one pair with the short or long length form as needed. */
static size_t pair(unsigned char *out, const char *name, const char *value)
{
	size_t nl = strlen(name), vl = strlen(value), n = 0;
	size_t lens[2] = {nl, vl};

	for (int i = 0; i < 2; i++) {
		if (lens[i] < 128) {
			out[n++] = (unsigned char)lens[i];
		} else {
			out[n++] = (unsigned char)(0x80 | (lens[i] >> 24));
			out[n++] = (unsigned char)(lens[i] >> 16);
			out[n++] = (unsigned char)(lens[i] >> 8);
			out[n++] = (unsigned char)lens[i];
		}
	}
	memcpy(out + n, name, nl);
	memcpy(out + n + nl, value, vl);
	return n + nl + vl;
}

/* A whole GET request with two variables, in one string. */
static void get_request(struct wire *w, unsigned id, int keep)
{
	unsigned char params[256];
	size_t n = 0;

	begin(w, id, 1, keep);
	n += pair(params + n, "REQUEST_METHOD", "GET");
	n += pair(params + n, "REQUEST_URI", "/pypi/simple/");
	rec(w, FASTCGI_PARAMS, id, params, n, 3);
	rec(w, FASTCGI_PARAMS, id, "", 0, 0);
	rec(w, FASTCGI_STDIN, id, "", 0, 0);
}

/* Feeds the bytes in chunks of step, collecting events in order. */
static int run(struct fastcgi_parser *p, const struct wire *w, size_t step,
	       enum fastcgi_event *evs, int max, struct buf *stdin_bytes)
{
	size_t off = 0;
	int nev = 0;

	while (off < w->n && nev < max) {
		size_t len = w->n - off < step ? w->n - off : step;
		size_t used = 0;

		while (used < len && nev < max) {
			enum fastcgi_event ev;
			size_t u = fastcgi_feed(p, (const char *)w->b + off + used,
						len - used, &ev);

			used += u;
			if (ev == FASTCGI_MORE)
				continue;
			if (ev == FASTCGI_STDIN_DATA && stdin_bytes)
				buf_add(stdin_bytes, p->data, p->len);
			evs[nev++] = ev;
			if (ev == FASTCGI_ERROR)
				return nev;
		}
		off += len;
	}
	return nev;
}

static const char *env_value(const struct fastcgi_parser *p, const char *name)
{
	static char v[4096];
	const char *n, *val;
	size_t off = 0, nl, vl;

	while (fastcgi_pair(p->params.data, p->params.len, &off, &n, &nl, &val,
			    &vl) == 1)
		if (nl == strlen(name) && memcmp(n, name, nl) == 0) {
			memcpy(v, val, vl);
			v[vl] = '\0';
			return v;
		}
	return NULL;
}

T(whole_request_at_once_and_byte_by_byte)
{
	static struct wire w;
	size_t steps[] = {1, 3, 7, 8, 9, 1000};

	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		struct fastcgi_parser p;
		enum fastcgi_event evs[8];
		int n;

		w.n = 0;
		get_request(&w, 1, 1);
		fastcgi_init(&p);
		n = run(&p, &w, steps[i], evs, 8, NULL);
		CHECK_INT(n, 2);
		CHECK_INT(evs[0], FASTCGI_PARAMS_END);
		CHECK_INT(evs[1], FASTCGI_STDIN_END);
		CHECK_INT(p.id, 1);
		CHECK_INT(p.keep_conn, 1);
		CHECK_STR(env_value(&p, "REQUEST_METHOD"), "GET");
		CHECK_STR(env_value(&p, "REQUEST_URI"), "/pypi/simple/");
		CHECK(env_value(&p, "HTTP_HOST") == NULL);
		fastcgi_free(&p);
	}
}

T(next_request_on_a_kept_connection)
{
	static struct wire w;
	struct fastcgi_parser p;
	enum fastcgi_event evs[8];

	w.n = 0;
	get_request(&w, 1, 1);
	fastcgi_init(&p);
	CHECK_INT(run(&p, &w, 1000, evs, 8, NULL), 2);
	fastcgi_next(&p);
	CHECK_INT(p.id, 0);
	w.n = 0;
	get_request(&w, 2, 0);
	CHECK_INT(run(&p, &w, 5, evs, 8, NULL), 2);
	CHECK_INT(p.id, 2);
	CHECK_INT(p.keep_conn, 0);
	fastcgi_free(&p);
}

T(stdin_streams_out_without_copies)
{
	static struct wire w;
	static char body[100000];
	struct fastcgi_parser p;
	enum fastcgi_event evs[64];
	struct buf got;
	int n;

	for (size_t i = 0; i < sizeof(body); i++)
		body[i] = (char)(i * 7);
	w.n = 0;
	begin(&w, 9, 1, 0);
	rec(&w, FASTCGI_PARAMS, 9, "", 0, 0);
	rec(&w, FASTCGI_STDIN, 9, body, 60000, 5);
	rec(&w, FASTCGI_STDIN, 9, body + 60000, 40000, 0);
	rec(&w, FASTCGI_STDIN, 9, "", 0, 0);
	fastcgi_init(&p);
	buf_init(&got, sizeof(body));
	n = run(&p, &w, 4096, evs, 64, &got);
	CHECK(n >= 3);
	CHECK_INT(evs[0], FASTCGI_PARAMS_END);
	CHECK_INT(evs[n - 1], FASTCGI_STDIN_END);
	for (int i = 1; i < n - 1; i++)
		CHECK_INT(evs[i], FASTCGI_STDIN_DATA);
	CHECK_INT(got.len, sizeof(body));
	CHECK(memcmp(got.data, body, sizeof(body)) == 0);
	buf_free(&got);
	fastcgi_free(&p);
}

T(long_pair_lengths)
{
	static struct wire w;
	static char value[3000];
	unsigned char params[4000];
	struct fastcgi_parser p;
	enum fastcgi_event evs[8];
	size_t n;

	memset(value, 'v', sizeof(value) - 1);
	value[sizeof(value) - 1] = '\0';
	n = pair(params, "HTTP_COOKIE", value);
	w.n = 0;
	begin(&w, 1, 1, 0);
	rec(&w, FASTCGI_PARAMS, 1, params, n, 0);
	rec(&w, FASTCGI_PARAMS, 1, "", 0, 0);
	fastcgi_init(&p);
	CHECK_INT(run(&p, &w, 100, evs, 8, NULL), 1);
	CHECK_INT(evs[0], FASTCGI_PARAMS_END);
	CHECK_STR(env_value(&p, "HTTP_COOKIE"), value);
	fastcgi_free(&p);
}

T(management_records_are_answered)
{
	static struct wire w;
	unsigned char q[64];
	struct fastcgi_parser p;
	enum fastcgi_event ev;
	size_t n = 0, used;
	const char *name, *value;
	size_t off = 0, nl, vl;
	int pairs = 0;

	n += pair(q + n, "FCGI_MPXS_CONNS", "");
	n += pair(q + n, "FCGI_NOT_A_THING", "");
	w.n = 0;
	rec(&w, FASTCGI_GET_VALUES, 0, q, n, 0);
	fastcgi_init(&p);
	used = fastcgi_feed(&p, (const char *)w.b, w.n, &ev);
	CHECK_INT(used, w.n);
	CHECK_INT(ev, FASTCGI_REPLY);
	CHECK_INT(p.data[1], FASTCGI_GET_VALUES_RESULT);
	while (fastcgi_pair(p.data + 8, p.len - 8, &off, &name, &nl, &value,
			    &vl) == 1) {
		pairs++;
		CHECK(nl == 15 && memcmp(name, "FCGI_MPXS_CONNS", 15) == 0);
		CHECK(vl == 1 && value[0] == '0');
	}
	CHECK_INT(pairs, 1);
	/* an unknown management type gets FCGI_UNKNOWN_TYPE */
	w.n = 0;
	rec(&w, 42, 0, "x", 1, 7);
	used = fastcgi_feed(&p, (const char *)w.b, w.n, &ev);
	CHECK_INT(ev, FASTCGI_REPLY);
	CHECK_INT(p.data[1], FASTCGI_UNKNOWN_TYPE);
	CHECK_INT((unsigned char)p.data[8], 42);
	/* the padding after it is consumed by the next call */
	if (used < w.n)
		used += fastcgi_feed(&p, (const char *)w.b + used, w.n - used,
				     &ev);
	CHECK_INT(used, w.n);
	CHECK_INT(ev, FASTCGI_MORE);
	fastcgi_free(&p);
}

T(other_roles_are_refused)
{
	static struct wire w;
	struct fastcgi_parser p;
	enum fastcgi_event ev;

	w.n = 0;
	begin(&w, 5, 2, 0); /* FCGI_AUTHORIZER */
	fastcgi_init(&p);
	fastcgi_feed(&p, (const char *)w.b, w.n, &ev);
	CHECK_INT(ev, FASTCGI_REPLY);
	CHECK_INT(p.len, 16);
	CHECK_INT(p.data[1], FASTCGI_END_REQUEST);
	CHECK_INT(p.data[12], 3); /* FCGI_UNKNOWN_ROLE */
	CHECK_INT(p.id, 0);
	fastcgi_free(&p);
}

T(abort_is_reported)
{
	static struct wire w;
	struct fastcgi_parser p;
	enum fastcgi_event evs[8];

	w.n = 0;
	get_request(&w, 3, 1);
	rec(&w, FASTCGI_ABORT_REQUEST, 3, "", 0, 0);
	fastcgi_init(&p);
	CHECK_INT(run(&p, &w, 1000, evs, 8, NULL), 3);
	CHECK_INT(evs[2], FASTCGI_ABORT);
	fastcgi_free(&p);
}

T(protocol_errors)
{
	static struct wire w;
	struct fastcgi_parser p;
	enum fastcgi_event evs[8];
	int n;

	/* wrong version */
	w.n = 0;
	get_request(&w, 1, 0);
	w.b[0] = 2;
	fastcgi_init(&p);
	n = run(&p, &w, 1000, evs, 8, NULL);
	CHECK_INT(n, 1);
	CHECK_INT(evs[0], FASTCGI_ERROR);
	CHECK(p.reason != NULL);
	fastcgi_free(&p);

	/* STDIN before the variables ended */
	w.n = 0;
	begin(&w, 1, 1, 0);
	rec(&w, FASTCGI_STDIN, 1, "abc", 3, 0);
	fastcgi_init(&p);
	n = run(&p, &w, 1000, evs, 8, NULL);
	CHECK_INT(evs[n - 1], FASTCGI_ERROR);
	fastcgi_free(&p);

	/* a second BEGIN_REQUEST while the first is open */
	w.n = 0;
	begin(&w, 1, 1, 0);
	begin(&w, 2, 1, 0);
	fastcgi_init(&p);
	n = run(&p, &w, 1000, evs, 8, NULL);
	CHECK_INT(n, 1);
	CHECK_INT(evs[0], FASTCGI_ERROR);
	fastcgi_free(&p);

	/* a BEGIN_REQUEST body of the wrong size */
	w.n = 0;
	rec(&w, FASTCGI_BEGIN_REQUEST, 1, "\0\1\0", 3, 0);
	fastcgi_init(&p);
	n = run(&p, &w, 1000, evs, 8, NULL);
	CHECK_INT(evs[n - 1], FASTCGI_ERROR);
	fastcgi_free(&p);

	/* too many CGI variables */
	{
		static unsigned char big[FASTCGI_MAX_CONTENT];

		memset(big, 'x', sizeof(big));
		w.n = 0;
		begin(&w, 1, 1, 0);
		rec(&w, FASTCGI_PARAMS, 1, big, sizeof(big), 0);
		rec(&w, FASTCGI_PARAMS, 1, big, sizeof(big), 0);
		fastcgi_init(&p);
		n = run(&p, &w, 70000, evs, 8, NULL);
		CHECK_INT(n, 1);
		CHECK_INT(evs[0], FASTCGI_ERROR);
		fastcgi_free(&p);
	}
}

T(malformed_pairs)
{
	const char *name, *value;
	size_t off = 0, nl, vl;

	/* a name length past the end */
	CHECK_INT(fastcgi_pair("\x05\x01" "ab", 4, &off, &name, &nl, &value,
			       &vl), -1);
	/* a long length cut short */
	off = 0;
	CHECK_INT(fastcgi_pair("\x80\x00", 2, &off, &name, &nl, &value, &vl),
		  -1);
	/* a long value length that overflows what is there */
	off = 0;
	CHECK_INT(fastcgi_pair("\x01\xff\xff\xff\xff" "a", 6, &off, &name, &nl,
			       &value, &vl), -1);
	off = 0;
	CHECK_INT(fastcgi_pair("", 0, &off, &name, &nl, &value, &vl), 0);
}

/* Encodes one pair of given lengths (NULs and all), short lengths. */
static size_t pairn(unsigned char *out, const char *name, size_t nl,
		    const char *value, size_t vl)
{
	out[0] = (unsigned char)nl;
	out[1] = (unsigned char)vl;
	memcpy(out + 2, name, nl);
	memcpy(out + 2 + nl, value, vl);
	return 2 + nl + vl;
}

T(env_is_built_in_order)
{
	unsigned char params[512];
	struct buf env;
	char **envp = NULL;
	const char *why = "unset";
	size_t n = 0;

	n += pair(params + n, "REQUEST_METHOD", "GET");
	n += pair(params + n, "REQUEST_URI", "/pypi/simple/");
	n += pair(params + n, "HTTP_X_EMPTY", "");
	n += pair(params + n, "REQUEST_URI", "/later/wins/");
	buf_init(&env, 4096);
	CHECK_INT(fastcgi_env((const char *)params, n, &env, &envp, &why), 0);
	CHECK(why == NULL);
	CHECK_STR(envp[0], "REQUEST_METHOD=GET");
	CHECK_STR(envp[1], "REQUEST_URI=/pypi/simple/");
	CHECK_STR(envp[2], "HTTP_X_EMPTY=");
	CHECK_STR(envp[3], "REQUEST_URI=/later/wins/");
	CHECK(envp[4] == NULL);
	/* no variables at all: an empty list */
	CHECK_INT(fastcgi_env("", 0, &env, &envp, &why), 0);
	CHECK(envp[0] == NULL);
	buf_free(&env);
	free(envp);
}

T(env_refuses_nul_and_bad_names)
{
	static const struct {
		const char *name;
		size_t nl;
		const char *value;
		size_t vl;
		const char *why;
	} bad[] = {
		/* the injection: one value would read as two variables, the
		 * second a REQUEST_URI of the sender's choosing */
		{"HTTP_X_EVIL", 11, "a\0REQUEST_URI=/+health", 22, "value"},
		{"HTTP_X_EVIL", 11, "\0", 1, "value"},
		{"HTTP_X_EVIL", 11, "a\0", 2, "value"},
		{"HTTP_\0X", 8, "a", 1, "name"},
		{"A=B", 3, "c", 1, "'='"},
		{"", 0, "c", 1, "empty"},
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		unsigned char params[512];
		struct buf env;
		char **envp = NULL;
		const char *why = NULL;
		size_t n = 0;

		n += pair(params + n, "REQUEST_METHOD", "GET");
		n += pair(params + n, "REQUEST_URI", "/nonexistent-path/zzz");
		n += pairn(params + n, bad[i].name, bad[i].nl, bad[i].value,
			   bad[i].vl);
		n += pair(params + n, "SERVER_NAME", "localhost");
		buf_init(&env, 4096);
		CHECK_INT(fastcgi_env((const char *)params, n, &env, &envp,
				      &why), EINVAL);
		CHECK(why != NULL);
		if (why)
			CHECK_CONTAINS(why, bad[i].why);
		/* nothing of the refused request is left to read */
		CHECK(envp != NULL && envp[0] == NULL);
		buf_free(&env);
		free(envp);
	}
}

T(env_refusal_empties_a_used_list)
{
	unsigned char params[512];
	struct buf env;
	char **envp = NULL;
	const char *why;
	size_t n = 0;

	buf_init(&env, 4096);
	n += pair(params + n, "REQUEST_URI", "/a/");
	CHECK_INT(fastcgi_env((const char *)params, n, &env, &envp, &why), 0);
	CHECK_STR(envp[0], "REQUEST_URI=/a/");
	n += pairn(params + n, "X", 1, "\0", 1);
	CHECK_INT(fastcgi_env((const char *)params, n, &env, &envp, &why),
		  EINVAL);
	CHECK(envp[0] == NULL);
	buf_free(&env);
	free(envp);
}

T(env_malformed_and_too_big)
{
	unsigned char params[512];
	struct buf env;
	char **envp = NULL;
	const char *why;
	size_t n = 0;

	buf_init(&env, 64);
	CHECK_INT(fastcgi_env("\x05\x01" "ab", 4, &env, &envp, &why), EBADMSG);
	CHECK(envp[0] == NULL);
	n += pair(params + n, "HTTP_X_LONG",
		  "0123456789012345678901234567890123456789"
		  "0123456789012345678901234567890123456789");
	CHECK_INT(fastcgi_env((const char *)params, n, &env, &envp, &why),
		  ENOMEM);
	CHECK(envp[0] == NULL);
	buf_free(&env);
	free(envp);
}

T(encoders)
{
	unsigned char h[8], end[24];

	fastcgi_header(h, FASTCGI_STDOUT, 0x1234, 65535, 1);
	CHECK_INT(h[0], 1);
	CHECK_INT(h[1], FASTCGI_STDOUT);
	CHECK_INT(h[2], 0x12);
	CHECK_INT(h[3], 0x34);
	CHECK_INT(h[4], 0xff);
	CHECK_INT(h[5], 0xff);
	CHECK_INT(h[6], 1);
	CHECK_INT(fastcgi_end(end, 7, 0), 24);
	CHECK_INT(end[1], FASTCGI_STDOUT);
	CHECK_INT(end[4] | end[5], 0);
	CHECK_INT(end[9], FASTCGI_END_REQUEST);
	CHECK_INT(end[11], 7);
	CHECK_INT(end[13], 8);
	CHECK_INT(end[20], 0); /* FCGI_REQUEST_COMPLETE */
}

int main(void)
{
	RUN(whole_request_at_once_and_byte_by_byte);
	RUN(next_request_on_a_kept_connection);
	RUN(stdin_streams_out_without_copies);
	RUN(long_pair_lengths);
	RUN(management_records_are_answered);
	RUN(other_roles_are_refused);
	RUN(abort_is_reported);
	RUN(protocol_errors);
	RUN(malformed_pairs);
	RUN(env_is_built_in_order);
	RUN(env_refuses_nul_and_bad_names);
	RUN(env_refusal_empties_a_used_list);
	RUN(env_malformed_and_too_big);
	RUN(encoders);
	return t_done();
}
