#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hash/blake2b.h"
#include "common/hash/sha256.h"
#include "common/http/multipart.h"
#include "tests/unit/t.h"

#ifndef SRCDIR
#define SRCDIR "."
#endif

/* What the callbacks saw, as text: "<name|filename|type>" at a part's
 * begin ("-" for no filename), its data as it came, "$" at its end. */
struct rec {
	char log[64 * 1024];
	size_t len;
	size_t data;      /* data bytes handed on */
	unsigned begins, ends;
	int stop_begin;   /* return this from begin of part stop_part */
	int stop_data;    /* ... or from its first data call */
	int stop_end;     /* ... or from its end */
	unsigned stop_part;
	int in_stop_part;
};

static void add(struct rec *r, const char *s, size_t n)
{
	if (n > sizeof(r->log) - r->len) {
		n = sizeof(r->log) - r->len;
		t_failed++;
		fprintf(stderr, "  log full\n");
	}
	memcpy(r->log + r->len, s, n);
	r->len += n;
}

static int on_begin(void *arg, const struct multipart_part *part)
{
	struct rec *r = arg;

	CHECK(part->name && part->name[0]);
	CHECK(part->content_type != NULL);
	CHECK_INT(part->index, r->begins);
	add(r, "<", 1);
	add(r, part->name, strlen(part->name));
	add(r, "|", 1);
	if (part->filename)
		add(r, part->filename, strlen(part->filename));
	else
		add(r, "-", 1);
	add(r, "|", 1);
	add(r, part->content_type, strlen(part->content_type));
	add(r, ">", 1);
	r->in_stop_part = r->begins == r->stop_part;
	r->begins++;
	return r->in_stop_part ? r->stop_begin : 0;
}

static int on_data(void *arg, const char *data, size_t len)
{
	struct rec *r = arg;

	CHECK(len > 0);
	CHECK_INT(r->begins, r->ends + 1);
	add(r, data, len);
	r->data += len;
	return r->in_stop_part ? r->stop_data : 0;
}

static int on_end(void *arg)
{
	struct rec *r = arg;

	CHECK_INT(r->begins, r->ends + 1);
	add(r, "$", 1);
	r->ends++;
	return r->in_stop_part ? r->stop_end : 0;
}

static const struct multipart_callbacks cbs = { on_begin, on_data, on_end };

/* Parses body fed in chunks ending at the offsets in cuts (ascending,
 * ncuts of them), then the rest. Returns what the first failing call or
 * multipart_finish returned; p holds the reason. */
static int parse_cuts(struct multipart *p, struct rec *r, const char *bnd,
		      const char *body, size_t len, const size_t *cuts,
		      size_t ncuts)
{
	size_t off = 0;
	int rc;

	r->len = r->data = 0;
	r->begins = r->ends = 0;
	rc = multipart_init(p, bnd, &cbs, r);
	if (rc)
		return rc;
	for (size_t i = 0; i <= ncuts; i++) {
		size_t to = i < ncuts ? cuts[i] : len;

		rc = multipart_feed(p, body + off, to - off);
		if (rc)
			return rc;
		off = to;
	}
	return multipart_finish(p);
}

static int parse(struct multipart *p, struct rec *r, const char *bnd,
		 const char *body, size_t len)
{
	return parse_cuts(p, r, bnd, body, len, NULL, 0);
}

/* Parses body fed step bytes at a time. */
static int parse_step(struct multipart *p, struct rec *r, const char *bnd,
		      const char *body, size_t len, size_t step)
{
	int rc;

	r->len = r->data = 0;
	r->begins = r->ends = 0;
	rc = multipart_init(p, bnd, &cbs, r);
	for (size_t off = 0; !rc && off < len; off += step)
		rc = multipart_feed(p, body + off,
				    len - off < step ? len - off : step);
	return rc ? rc : multipart_finish(p);
}

static struct multipart mp;
static struct rec rec, rec2;

#define LOG_IS(r, want)                                                      \
	do {                                                                 \
		CHECK_INT((r).len, sizeof(want) - 1);                        \
		CHECK((r).len == sizeof(want) - 1 &&                         \
		      memcmp((r).log, want, (r).len) == 0);                  \
	} while (0)

T(boundary_header)
{
	static const struct {
		const char *ct;
		int err;
		const char *b;
	} cases[] = {
		{ "multipart/form-data; boundary=07e435e021b346f08d945369ea"
		  "cd6a8a", 0, "07e435e021b346f08d945369eacd6a8a" },
		{ "Multipart/Form-Data;boundary=abc", 0, "abc" },
		{ "multipart/form-data; charset=utf-8; BOUNDARY=\"a b:c\"", 0,
		  "a b:c" },
		{ "  multipart/form-data ; boundary = x ; x=\"y;z\"", 0, "x" },
		{ "multipart/form-data; boundary=\"q\\\"\"", EINVAL, "" },
		{ "multipart/form-data; boundary=\"'()+_,-./:=?\"", 0,
		  "'()+_,-./:=?" },
		{ "multipart/form-data; boundary=----WebKitFormBoundary7MA4YW"
		  "xkTrZu0gW", 0, "----WebKitFormBoundary7MA4YWxkTrZu0gW" },
		{ "multipart/form-data; boundary=aaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", 0,
		  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		  "aaaaaaaaaaa" },
		{ "multipart/form-data; boundary=aaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", EINVAL, "" },
		{ "multipart/form-data;", EINVAL, "" },
		{ "multipart/form-data", EINVAL, "" },
		{ "multipart/form-data; boundary=", EINVAL, "" },
		{ "multipart/form-data; boundary=\"\"", EINVAL, "" },
		{ "multipart/form-data; boundary=\"ab \"", EINVAL, "" },
		{ "multipart/form-data; boundary=a; boundary=b", EINVAL, "" },
		{ "multipart/form-data; boundary=a!b", EINVAL, "" },
		{ "multipart/form-data; boundary=\"a\r\nb\"", EINVAL, "" },
		{ "multipart/form-data; boundary=\"abc", EINVAL, "" },
		{ "multipart/form-data; boundary abc", EINVAL, "" },
		{ "multipart/form-data x; boundary=abc", EINVAL, "" },
		{ "multipart/mixed; boundary=abc", EINVAL, "" },
		{ "multipart/form-datax; boundary=abc", EINVAL, "" },
		{ "application/x-www-form-urlencoded", EINVAL, "" },
		{ "text/plain; boundary=abc", EINVAL, "" },
		{ "", EINVAL, "" },
	};
	char out[MULTIPART_MAX_BOUNDARY + 1];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int rc = multipart_boundary(cases[i].ct, out, sizeof(out));

		if (rc != cases[i].err)
			fprintf(stderr, "  case %s\n", cases[i].ct);
		CHECK_INT(rc, cases[i].err);
		CHECK_STR(out, cases[i].b);
	}
	CHECK_INT(multipart_boundary(NULL, out, sizeof(out)), EINVAL);
	CHECK_INT(multipart_boundary("multipart/form-data; boundary=abcd",
				     out, 4), ENAMETOOLONG);
	CHECK_INT(multipart_boundary("multipart/form-data; boundary=abc",
				     out, 4), 0);
	CHECK_STR(out, "abc");
}

T(init_bad_boundary)
{
	CHECK_INT(multipart_init(&mp, "", &cbs, &rec), EINVAL);
	CHECK_STR(mp.err, "multipart: bad boundary");
	CHECK_INT(multipart_init(&mp, "a\rb", &cbs, &rec), EINVAL);
	CHECK_INT(multipart_init(&mp, NULL, &cbs, &rec), EINVAL);
	CHECK_INT(multipart_feed(&mp, "x", 1), EINVAL);
}

static char *read_fixture(const char *name, size_t *len)
{
	char path[512];
	FILE *f;
	char *buf = NULL;
	long n;

	snprintf(path, sizeof(path), "%s/tests/unit/data/%s", SRCDIR, name);
	f = fopen(path, "rb");
	if (!f) {
		fprintf(stderr, "  cannot open %s\n", path);
		t_failed++;
		return NULL;
	}
	if (fseek(f, 0, SEEK_END) == 0) {
		n = ftell(f);
		rewind(f);
		buf = n > 0 ? malloc((size_t)n) : NULL;
		if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
			free(buf);
			buf = NULL;
		}
		*len = buf ? (size_t)n : 0;
	}
	fclose(f);
	CHECK(buf != NULL);
	return buf;
}

/* Finds field name's value in a log with one-line text fields. */
static const char *field(const struct rec *r, const char *name, char *out,
			 size_t outlen)
{
	char tag[64];
	const char *s, *e;

	snprintf(tag, sizeof(tag), "<%s|-|>", name);
	s = memmem(r->log, r->len, tag, strlen(tag));
	if (!s)
		return "(absent)";
	s += strlen(tag);
	e = memchr(s, '$', (size_t)(r->log + r->len - s));
	if (!e || (size_t)(e - s) >= outlen)
		return "(bad)";
	memcpy(out, s, (size_t)(e - s));
	out[e - s] = '\0';
	return out;
}

/* A real body, what twine 5 sent for a small wheel (captured with a
 * python http.server), at every split point. Its digests must be those of
 * the file part the parser hands on. */
T(twine_body)
{
	static const char bnd[] = "07e435e021b346f08d945369eacd6a8a";
	static const char head[] =
		"<content|tinypkg-0.1-py3-none-any.whl|"
		"application/octet-stream>";
	char v[200], hex[2 * BLAKE2B_MAX_OUT + 1], b[MULTIPART_MAX_BOUNDARY + 1];
	size_t len = 0;
	char *body = read_fixture("twine-upload.bin", &len);
	const char *file, *end;
	struct blake2b h;

	if (!body)
		return;
	CHECK_INT(multipart_boundary("multipart/form-data; boundary=07e435e"
				     "021b346f08d945369eacd6a8a", b,
				     sizeof(b)), 0);
	CHECK_STR(b, bnd);
	CHECK_INT(parse(&mp, &rec, bnd, body, len), 0);
	CHECK_INT(rec.begins, 26);
	CHECK_INT(rec.ends, 26);
	CHECK_STR(field(&rec, ":action", v, sizeof(v)), "file_upload");
	CHECK_STR(field(&rec, "protocol_version", v, sizeof(v)), "1");
	CHECK_STR(field(&rec, "name", v, sizeof(v)), "tinypkg");
	CHECK_STR(field(&rec, "version", v, sizeof(v)), "0.1");
	CHECK_STR(field(&rec, "filetype", v, sizeof(v)), "bdist_wheel");
	CHECK_STR(field(&rec, "summary", v, sizeof(v)),
		  "a tiny \"quoted\" package");
	CHECK_STR(field(&rec, "license", v, sizeof(v)), "");
	CHECK(memmem(rec.log, rec.len, "<classifiers|-|>Programming Language"
		     " :: Python :: 3$<classifiers|-|>License :: OSI Approved "
		     ":: MIT License$", 105) != NULL);

	/* the file part: 981 bytes, hashed as an upload handler would */
	file = memmem(rec.log, rec.len, head, sizeof(head) - 1);
	CHECK(file != NULL);
	if (!file)
		goto out;
	file += sizeof(head) - 1;
	end = rec.log + rec.len - 1;
	CHECK_INT(end - file, 981);
	CHECK(*end == '$');
	CHECK_INT(blake2b_init(&h, 32), 0);
	blake2b_update(&h, file, (size_t)(end - file));
	blake2b_final_hex(&h, hex);
	CHECK_STR(hex, field(&rec, "blake2_256_digest", v, sizeof(v)));
	CHECK_INT(sha256_hex(file, (size_t)(end - file), hex), 0);
	CHECK_STR(hex, field(&rec, "sha256_digest", v, sizeof(v)));

	/* any split, and a byte at a time, gives the same events */
	for (size_t cut = 0; cut <= len; cut++) {
		CHECK_INT(parse_cuts(&mp, &rec2, bnd, body, len, &cut, 1), 0);
		CHECK(rec2.len == rec.len &&
		      memcmp(rec2.log, rec.log, rec.len) == 0);
		if (t_failed) {
			fprintf(stderr, "  split at %zu\n", cut);
			break;
		}
	}
	CHECK_INT(parse_step(&mp, &rec2, bnd, body, len, 1), 0);
	CHECK(rec2.len == rec.len && memcmp(rec2.log, rec.log, rec.len) == 0);
out:
	free(body);
}

/* A hand-made body: a preamble with delimiter lookalikes, padding after
 * boundaries, quoted names with escapes, a binary file part holding CRLF,
 * "--", prefixes of the delimiter and the whole delimiter followed by
 * what makes it data, an empty file part, and an epilogue. */
#define HB "b0und-ary"
static const char hand_body[] =
	"preamble \r\n--" HB "x is not a boundary\r\n--b0und\r\n"
	"--" HB " \t\r\n"
	"Content-Disposition: form-data; name=\":action\"\r\n"
	"\r\n"
	"file_upload\r\n"
	"--" HB "\r\n"
	"content-disposition: FORM-DATA; NAME=\"a \\\"quoted\\\" name\";"
	" x-ignored=\"1\"\r\n"
	"X-Other: whatever\r\n"
	"\r\n"
	"line one\r\nline two\r\n\r\n"
	"--" HB "\r\n"
	"Content-Disposition: form-data;\r\n name=classifiers\r\n"
	"\r\n"
	"Topic :: Utilities\r\n"
	"--" HB "\r\n"
	"Content-Disposition: form-data; name=\"content\"; "
	"filename=\"we\\\"ird\\\\name.whl\"\r\n"
	"Content-Type:   application/octet-stream  \r\n"
	"\r\n"
	"PK\x03\x04\0\xff\r\n--\r\n-\r\r\n\r\n-\r\n--b0und\r\n--" HB
	"X\r\n--" HB "-x\r\n--" HB "-\r\n\r\r\n--\r\n--" HB
	"\r\n"
	"Content-Disposition: form-data; name=\"empty\"; filename=\"\"\r\n"
	"\r\n"
	"\r\n--" HB "--  \r\n"
	"epilogue\r\n--" HB "\r\nContent-Disposition: junk\r\n\r\n";

static const char hand_log[] =
	"<:action|-|>file_upload$"
	"<a \"quoted\" name|-|>line one\r\nline two\r\n$"
	"<classifiers|-|>Topic :: Utilities$"
	"<content|we\"ird\\name.whl|application/octet-stream>"
	"PK\x03\x04\0\xff\r\n--\r\n-\r\r\n\r\n-\r\n--b0und\r\n--" HB
	"X\r\n--" HB "-x\r\n--" HB "-\r\n\r\r\n--$"
	"<empty||>$";

T(hand_body_every_split)
{
	size_t len = sizeof(hand_body) - 1, cuts[2];

	CHECK_INT(parse(&mp, &rec, HB, hand_body, len), 0);
	LOG_IS(rec, hand_log);
	CHECK_INT(rec.begins, 5);
	for (size_t step = 1; step < 8; step++) {
		CHECK_INT(parse_step(&mp, &rec, HB, hand_body, len, step), 0);
		LOG_IS(rec, hand_log);
	}
	/* every way of cutting it in two and in three */
	for (cuts[0] = 0; cuts[0] <= len && !t_failed; cuts[0]++) {
		CHECK_INT(parse_cuts(&mp, &rec, HB, hand_body, len, cuts, 1),
			  0);
		LOG_IS(rec, hand_log);
		for (cuts[1] = cuts[0]; cuts[1] <= len && !t_failed;
		     cuts[1]++) {
			CHECK_INT(parse_cuts(&mp, &rec, HB, hand_body, len,
					     cuts, 2), 0);
			LOG_IS(rec, hand_log);
		}
	}
	if (t_failed)
		fprintf(stderr, "  cuts %zu %zu\n", cuts[0], cuts[1]);
}

/* Data is handed on once it cannot be part of a delimiter: after every
 * prefix of the body, at most boundary length + 5 bytes of the file part
 * are held back. */
T(streaming_holds_little)
{
	static const char head[] =
		"--" HB "\r\n"
		"Content-Disposition: form-data; name=\"content\"; "
		"filename=\"x.whl\"\r\n\r\n";
	static const char file[] =
		"\r\n-\r\n--b0und-ar\r\n--" HB "-\r\n\r\n\r\nabc\r\n--"
		"b0und-aryZ--\r";
	char body[256];
	size_t hl = sizeof(head) - 1, fl = sizeof(file) - 1;

	memcpy(body, head, hl);
	memcpy(body + hl, file, fl);
	memcpy(body + hl + fl, "\r\n--" HB "--", sizeof(HB) + 5);
	rec.len = rec.data = rec.begins = rec.ends = 0;
	CHECK_INT(multipart_init(&mp, HB, &cbs, &rec), 0);
	CHECK_INT(multipart_feed(&mp, body, hl), 0);
	CHECK_INT(rec.begins, 1);
	for (size_t i = 0; i < fl; i++) {
		CHECK_INT(multipart_feed(&mp, body + hl + i, 1), 0);
		CHECK(rec.data <= i + 1);
		CHECK(rec.data + strlen(HB) + 5 >= i + 1);
	}
	/* plain bytes after a CR are not held */
	CHECK_INT(multipart_feed(&mp, "\r\nq", 3), 0);
	CHECK_INT(rec.data, fl + 3);
	CHECK_INT(multipart_feed(&mp, body + hl + fl, sizeof(HB) + 5), 0);
	CHECK_INT(multipart_finish(&mp), 0);
	CHECK_INT(rec.data, fl + 3);
	CHECK_INT(rec.ends, 1);
}

T(close_and_preamble_forms)
{
	static const char one[] =
		"\r\n--a\r\nContent-Disposition: form-data; name=f\r\n"
		"\r\n\r\n-\r\n--\r\n--b\r\n--a-\r\n--a--";

	/* a close delimiter alone, at the very start: no parts */
	CHECK_INT(parse(&mp, &rec, "a", "--a--", 5), 0);
	CHECK_INT(rec.begins, 0);
	/* a CRLF before the first boundary, a one-byte boundary whose
	 * delimiter lookalikes overlap */
	CHECK_INT(parse(&mp, &rec, "a", one, sizeof(one) - 1), 0);
	LOG_IS(rec, "<f|-|>\r\n-\r\n--\r\n--b\r\n--a-$");
	/* a delimiter must start a line */
	CHECK_INT(parse(&mp, &rec, "a", "x--a--", 6), EINVAL);
	CHECK_STR(mp.err, "multipart: no boundary in the body");
	CHECK_INT(parse(&mp, &rec, "a", "x--a\r\n--a--", 11), 0);
}

T(missing_close)
{
	static const char body[] =
		"--zz\r\nContent-Disposition: form-data; name=\"content\"; "
		"filename=\"x.whl\"\r\n\r\nPK\x03\x04 data\r\n--zz";
	size_t len = sizeof(body) - 1;

	CHECK_INT(parse(&mp, &rec, "zz", body, len), EINVAL);
	CHECK_STR(mp.err, "multipart: body ends before the closing boundary");
	LOG_IS(rec, "<content|x.whl|>PK\x03\x04 data");
	CHECK_INT(rec.ends, 0);
	/* ends in headers, after a boundary line, after "--zz-" */
	CHECK_INT(parse(&mp, &rec, "zz", body, 30), EINVAL);
	CHECK_STR(mp.err, "multipart: body ends before the closing boundary");
	CHECK_INT(parse(&mp, &rec, "zz", "--zz\r\n", 6), EINVAL);
	CHECK_INT(parse(&mp, &rec, "zz", "--zz-", 5), EINVAL);
	CHECK_INT(parse(&mp, &rec, "zz", "", 0), EINVAL);
	CHECK_STR(mp.err, "multipart: no boundary in the body");
	/* and the error sticks */
	CHECK_INT(multipart_feed(&mp, "--zz--", 6), EINVAL);
	CHECK_INT(multipart_finish(&mp), EINVAL);
}

/* A body whose one part has a header block of exactly n bytes. */
static char *big_headers(size_t n, size_t *len)
{
	static const char cd[] = "Content-Disposition: form-data; name=x\r\n";
	static const char pre[] = "--B\r\n", post[] = "v\r\n--B--";
	char *b = malloc(n + 64);
	size_t off = 0, fill;

	memcpy(b, pre, 5);
	off = 5;
	memcpy(b + off, cd, sizeof(cd) - 1);
	off += sizeof(cd) - 1;
	/* "X: aaaa\r\n" filling up to n with the final empty line */
	fill = n - (sizeof(cd) - 1) - 2;
	memcpy(b + off, "X: ", 3);
	memset(b + off + 3, 'a', fill - 5);
	memcpy(b + off + fill - 2, "\r\n\r\n", 4);
	off += fill + 2;
	memcpy(b + off, post, sizeof(post) - 1);
	*len = off + sizeof(post) - 1;
	return b;
}

T(header_overflow)
{
	size_t len;
	char *b = big_headers(MULTIPART_MAX_HEADERS, &len);

	CHECK_INT(parse(&mp, &rec, "B", b, len), 0);
	LOG_IS(rec, "<x|-|>v$");
	free(b);
	b = big_headers(MULTIPART_MAX_HEADERS + 1, &len);
	CHECK_INT(parse(&mp, &rec, "B", b, len), EINVAL);
	CHECK_STR(mp.err, "multipart: part 1: headers over 8192 bytes");
	CHECK_INT(rec.begins, 0);
	CHECK_INT(parse_step(&mp, &rec, "B", b, len, 1), EINVAL);
	CHECK_STR(mp.err, "multipart: part 1: headers over 8192 bytes");
	free(b);
}

T(bad_parts)
{
	static const struct {
		const char *body;
		const char *err;
	} cases[] = {
		{ "--B\r\nContent-Disposition: form-data; filename=\"x\"\r\n"
		  "\r\nv\r\n--B--", "multipart: part 1: no Content-Disposition "
		  "name" },
		{ "--B\r\nContent-Disposition: form-data; name=\"\"\r\n\r\n"
		  "v\r\n--B--", "multipart: part 1: no Content-Disposition "
		  "name" },
		{ "--B\r\nContent-Disposition: form-data; name=a\r\n\r\n\r\n"
		  "--B\r\nContent-Type: text/plain\r\n\r\nv\r\n--B--",
		  "multipart: part 2: no Content-Disposition header" },
		{ "--B\r\n\r\nv\r\n--B--",
		  "multipart: part 1: no Content-Disposition header" },
		{ "--B\r\nContent-Disposition: attachment; name=a\r\n\r\n\r\n"
		  "--B--", "multipart: part 1: Content-Disposition is not "
		  "form-data" },
		{ "--B\r\nContent-Disposition: form-data; name=a; name=b\r\n"
		  "\r\n\r\n--B--", "multipart: part 1: Content-Disposition "
		  "name twice" },
		{ "--B\r\nContent-Disposition: form-data; name=\"a\r\n\r\n\r\n"
		  "--B--", "multipart: part 1: bad Content-Disposition "
		  "parameter value" },
		{ "--B\r\nContent-Disposition: form-data; name=\"a\x01\"\r\n"
		  "\r\n\r\n--B--", "multipart: part 1: bad Content-Disposition "
		  "parameter value" },
		{ "--B\r\nContent-Disposition: form-data name=a\r\n\r\n\r\n"
		  "--B--", "multipart: part 1: bad Content-Disposition "
		  "parameters" },
		{ "--B\r\nContent-Disposition: form-data; name=a\r\n"
		  "Content-Disposition: form-data; name=a\r\n\r\n\r\n--B--",
		  "multipart: part 1: two Content-Disposition headers" },
		{ "--B\r\nContent-Disposition: form-data; name=a\r\n"
		  "Content-Type: a\r\nContent-Type: b\r\n\r\n\r\n--B--",
		  "multipart: part 1: two Content-Type headers" },
		{ "--B\r\nContent-Disposition: form-data; name=a\r\n"
		  "no colon\r\n\r\n\r\n--B--",
		  "multipart: part 1: bad header line" },
		{ "--B\r\nContent-Disposition : form-data; name=a\r\n\r\n\r\n"
		  "--B--", "multipart: part 1: bad header line" },
		{ "--B\r\nContent-Disposition: form-data; name=a\nX: y\r\n\r\n"
		  "\r\n--B--", "multipart: part 1: a header line not ended by "
		  "CRLF" },
		{ "--B\r\nContent-Disposition: form-data; name=a\rX: y\r\n\r\n"
		  "\r\n--B--", "multipart: part 1: a header line not ended by "
		  "CRLF" },
		{ "--B\r\n X: y\r\nContent-Disposition: form-data; name=a\r\n"
		  "\r\n\r\n--B--", "multipart: part 1: headers start with white "
		  "space" },
		{ "--B \tx\r\n", "multipart: junk after a boundary" },
		{ "--B\rx", "multipart: a boundary line not ended by CRLF" },
		{ "--B\n", "multipart: no boundary in the body" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *b = cases[i].body;

		CHECK_INT(parse(&mp, &rec, "B", b, strlen(b)), EINVAL);
		CHECK_STR(mp.err, cases[i].err);
		CHECK_INT(parse_step(&mp, &rec, "B", b, strlen(b), 1), EINVAL);
		CHECK_STR(mp.err, cases[i].err);
	}
	/* a NUL in the headers */
	CHECK_INT(parse(&mp, &rec, "B", "--B\r\nX: \0\r\n\r\n", 13), EINVAL);
	CHECK_STR(mp.err, "multipart: part 1: NUL in the headers");
}

T(empty_file_part)
{
	static const char body[] =
		"--B\r\nContent-Disposition: form-data; name=\"content\"; "
		"filename=\"e.whl\"\r\nContent-Type: application/octet-stream"
		"\r\n\r\n\r\n--B--\r\n";

	CHECK_INT(parse_step(&mp, &rec, "B", body, sizeof(body) - 1, 1), 0);
	LOG_IS(rec, "<content|e.whl|application/octet-stream>$");
	CHECK_INT(rec.data, 0);
}

/* n parts "--B\r\n...name=fNNNN\r\n\r\nv\r\n" and the close. */
static char *many(unsigned n, size_t *len)
{
	char *b = malloc((size_t)n * 64 + 16);
	size_t off = 0;

	for (unsigned i = 0; i < n; i++)
		off += (size_t)sprintf(b + off, "--B\r\nContent-Disposition: "
				       "form-data; name=f%u\r\n\r\nv\r\n", i);
	memcpy(b + off, "--B--", 5);
	*len = off + 5;
	return b;
}

T(many_parts)
{
	size_t len;
	char *b = many(MULTIPART_MAX_PARTS, &len);

	CHECK_INT(parse(&mp, &rec, "B", b, len), 0);
	CHECK_INT(rec.begins, MULTIPART_MAX_PARTS);
	CHECK_INT(rec.ends, MULTIPART_MAX_PARTS);
	CHECK_INT(rec.data, MULTIPART_MAX_PARTS);
	free(b);
	b = many(MULTIPART_MAX_PARTS + 1, &len);
	CHECK_INT(parse(&mp, &rec, "B", b, len), EINVAL);
	CHECK_STR(mp.err, "multipart: more than 1000 parts");
	CHECK_INT(rec.begins, MULTIPART_MAX_PARTS);
	free(b);
}

T(callback_abort)
{
	static const char body[] =
		"--B\r\nContent-Disposition: form-data; name=a\r\n\r\n1\r\n"
		"--B\r\nContent-Disposition: form-data; name=b\r\n\r\n22\r\n"
		"--B--";
	size_t len = sizeof(body) - 1;

	rec.stop_part = 1;
	rec.stop_begin = 42;
	CHECK_INT(parse(&mp, &rec, "B", body, len), 42);
	LOG_IS(rec, "<a|-|>1$<b|-|>");
	CHECK_CONTAINS(mp.err, "stopped by a callback");
	CHECK_INT(multipart_feed(&mp, "x", 1), 42);
	CHECK_INT(multipart_finish(&mp), 42);
	rec.stop_begin = 0;
	rec.stop_data = -5;
	CHECK_INT(parse_step(&mp, &rec, "B", body, len, 1), -5);
	LOG_IS(rec, "<a|-|>1$<b|-|>2");
	rec.stop_data = 0;
	rec.stop_end = ENOSPC;
	CHECK_INT(parse(&mp, &rec, "B", body, len), ENOSPC);
	LOG_IS(rec, "<a|-|>1$<b|-|>22$");
	rec.stop_end = 0;
	/* NULL callbacks are allowed */
	CHECK_INT(multipart_init(&mp, "B", NULL, NULL), 0);
	CHECK_INT(multipart_feed(&mp, body, len), 0);
	CHECK_INT(multipart_finish(&mp), 0);
}

int main(void)
{
	RUN(boundary_header);
	RUN(init_bad_boundary);
	RUN(twine_body);
	RUN(hand_body_every_split);
	RUN(streaming_holds_little);
	RUN(close_and_preamble_forms);
	RUN(missing_close);
	RUN(header_overflow);
	RUN(bad_parts);
	RUN(empty_file_part);
	RUN(many_parts);
	RUN(callback_abort);
	return t_done();
}
