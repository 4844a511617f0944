#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "tests/unit/t.h"

/* Walks a whole document, writing a compact trace of it to out:
 * {k:v,...} [v,...] "s" n(text) t f z(null). Returns 0 or -1. */
static int walk_value(struct json_reader *r, int type, struct buf *out);

static int walk_container(struct json_reader *r, int type, struct buf *out)
{
	int k, t, n = 0;

	buf_adds(out, type == JSON_OBJECT ? "{" : "[");
	for (;;) {
		if (type == JSON_OBJECT) {
			k = json_key(r);
			if (k < 0)
				return -1;
			if (k == 0)
				break;
			buf_addf(out, "%s%s:", n++ ? "," : "", r->str.data);
			t = json_value(r);
		} else {
			t = json_value(r);
			if (t == JSON_END)
				break;
			if (n++)
				buf_adds(out, ",");
		}
		if (walk_value(r, t, out))
			return -1;
	}
	buf_adds(out, type == JSON_OBJECT ? "}" : "]");
	return 0;
}

static int walk_value(struct json_reader *r, int type, struct buf *out)
{
	switch (type) {
	case JSON_OBJECT:
	case JSON_ARRAY:
		return walk_container(r, type, out);
	case JSON_STRING:
		buf_addf(out, "\"%s\"", r->str.data);
		return 0;
	case JSON_NUMBER:
		buf_addf(out, "n(%.*s)", (int)r->numlen, r->num);
		return 0;
	case JSON_TRUE:
		buf_adds(out, "t");
		return 0;
	case JSON_FALSE:
		buf_adds(out, "f");
		return 0;
	case JSON_NULL:
		buf_adds(out, "z");
		return 0;
	default:
		return -1;
	}
}

/* The trace of text, or "ERR: reason". Owned by a static buffer. */
static const char *trace(const char *text)
{
	static struct buf out;
	struct json_reader r;
	int t;

	buf_free(&out);
	buf_init(&out, 1 << 20);
	json_init(&r, text, strlen(text), 4096);
	t = json_value(&r);
	if (walk_value(&r, t, &out) || json_end(&r)) {
		buf_reset(&out);
		buf_addf(&out, "ERR: %s", r.err);
	}
	json_free(&r);
	return buf_str(&out);
}

T(values)
{
	CHECK_STR(trace("{}"), "{}");
	CHECK_STR(trace("[]"), "[]");
	CHECK_STR(trace(" { \"a\" : 1 , \"b\":[true,false,null,\"x\"] } "),
		  "{a:n(1),b:[t,f,z,\"x\"]}");
	CHECK_STR(trace("[[],[[]],{}]"), "[[],[[]],{}]");
	CHECK_STR(trace("-0.5e+10"), "n(-0.5e+10)");
	CHECK_STR(trace("\"top\""), "\"top\"");
	CHECK_STR(trace("[0,-1,12.25,1E3]"), "[n(0),n(-1),n(12.25),n(1E3)]");
}

T(strings_are_decoded)
{
	CHECK_STR(trace("[\"a\\\"b\\\\c\\/d\\n\\t\"]"), "[\"a\"b\\c/d\n\t\"]");
	CHECK_STR(trace("[\"\\u00e9\\u20ac\"]"), "[\"\xc3\xa9\xe2\x82\xac\"]");
	/* a surrogate pair: U+1F600 */
	CHECK_STR(trace("[\"\\ud83d\\ude00\"]"), "[\"\xf0\x9f\x98\x80\"]");
	/* raw UTF-8 passes */
	CHECK_STR(trace("[\"\xc3\xa9\"]"), "[\"\xc3\xa9\"]");
}

T(malformed_documents)
{
	const char *bad[] = {
		"", " ", "{", "[", "[1,]", "[1 2]", "{\"a\"}", "{\"a\":}",
		"{\"a\":1,}", "{a:1}", "{\"a\" 1}", "[tru]", "[nul]", "01",
		"1.", "-", "1e", ".5", "[\"unterminated]", "[\"\\x\"]",
		"[\"\\u12\"]", "[\"\\u0000\"]", "[\"\\udc00\"]",
		"[\"\\ud800\"]", "[\"\\ud800\\u0041\"]", "[\"a\x01\"]",
		"[\"\xc0\xaf\"]", "[\"\xed\xa0\x80\"]", "[\"\xf4\x90\x80\x80\"]",
		"[\"\xe2\x82\"]", "{} {}", "[] x", "]", "}", "[}", "{]",
		"[1]]", "{\"a\":1}}", "nan", "[+1]",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *t = trace(bad[i]);

		if (strncmp(t, "ERR: json: ", 11) != 0) {
			fprintf(stderr, "  accepted %s -> %s\n", bad[i], t);
			t_failed++;
		}
	}
}

T(depth_is_bounded)
{
	char deep[JSON_MAX_DEPTH * 2 + 3];
	size_t n = 0;

	for (int i = 0; i <= JSON_MAX_DEPTH; i++)
		deep[n++] = '[';
	for (int i = 0; i <= JSON_MAX_DEPTH; i++)
		deep[n++] = ']';
	deep[n] = '\0';
	CHECK_CONTAINS(trace(deep), "nested deeper");
	/* one level less is fine */
	deep[0] = ' ';
	deep[n - 1] = '\0';
	CHECK(strncmp(trace(deep), "ERR", 3) != 0);
}

T(long_strings_are_refused)
{
	struct json_reader r;
	char doc[6000];

	doc[0] = '"';
	memset(doc + 1, 'a', 5000);
	doc[5001] = '"';
	doc[5002] = '\0';
	json_init(&r, doc, strlen(doc), 4096);
	CHECK_INT(json_value(&r), JSON_ERROR);
	CHECK_CONTAINS(r.err, "too long");
	json_free(&r);
}

T(skip_leaves_the_container)
{
	const char *doc = "{\"skip\":{\"a\":[1,{\"b\":[]}],\"c\":\"}\"},"
			  "\"keep\":[\"x\",{\"y\":2}],\"last\":true}";
	struct json_reader r;
	int t;

	json_init(&r, doc, strlen(doc), 4096);
	CHECK_INT(json_value(&r), JSON_OBJECT);
	CHECK_INT(json_key(&r), 1);
	CHECK_STR(r.str.data, "skip");
	CHECK_INT(json_value(&r), JSON_OBJECT);
	CHECK_INT(json_skip(&r), 0);
	CHECK_INT(json_key(&r), 1);
	CHECK_STR(r.str.data, "keep");
	CHECK_INT(json_value(&r), JSON_ARRAY);
	CHECK_INT(json_value(&r), JSON_STRING);
	CHECK_STR(r.str.data, "x");
	/* skip the rest of the array mid-way */
	CHECK_INT(json_skip(&r), 0);
	CHECK_INT(json_key(&r), 1);
	CHECK_STR(r.str.data, "last");
	t = json_value(&r);
	CHECK_INT(t, JSON_TRUE);
	CHECK_INT(json_key(&r), 0);
	CHECK_INT(json_end(&r), 0);
	CHECK_INT(json_value(&r), JSON_END);
	json_free(&r);
}

T(misuse_is_an_error)
{
	struct json_reader r;

	json_init(&r, "{\"a\":1}", 7, 64);
	CHECK_INT(json_value(&r), JSON_OBJECT);
	/* a value without its key */
	CHECK_INT(json_value(&r), JSON_ERROR);
	json_free(&r);

	json_init(&r, "[1]", 3, 64);
	CHECK_INT(json_value(&r), JSON_ARRAY);
	CHECK_INT(json_key(&r), -1);
	json_free(&r);
}

T(integers)
{
	struct json_reader r;
	long long v;
	const char *doc = "[123,-45,1.5,2e3,99999999999999999999]";

	json_init(&r, doc, strlen(doc), 64);
	CHECK_INT(json_value(&r), JSON_ARRAY);
	CHECK_INT(json_value(&r), JSON_NUMBER);
	CHECK_INT(json_integer(&r, &v), 0);
	CHECK_INT(v, 123);
	CHECK_INT(json_value(&r), JSON_NUMBER);
	CHECK_INT(json_integer(&r, &v), 0);
	CHECK_INT(v, -45);
	CHECK_INT(json_value(&r), JSON_NUMBER);
	CHECK_INT(json_integer(&r, &v), -1);
	CHECK_INT(json_value(&r), JSON_NUMBER);
	CHECK_INT(json_integer(&r, &v), -1);
	CHECK_INT(json_value(&r), JSON_NUMBER);
	CHECK_INT(json_integer(&r, &v), -1);
	CHECK_INT(json_value(&r), JSON_END);
	json_free(&r);
}

int main(void)
{
	RUN(values);
	RUN(strings_are_decoded);
	RUN(malformed_documents);
	RUN(depth_is_bounded);
	RUN(long_strings_are_refused);
	RUN(skip_leaves_the_container);
	RUN(misuse_is_an_error);
	RUN(integers);
	return t_done();
}
