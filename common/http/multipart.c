#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/http/multipart.h"

enum state {
	S_PREAMBLE, /* looking for the first delimiter, bytes dropped */
	S_BODY,     /* a part's data, looking for the next delimiter */
	S_DELIM,    /* a whole "\r\n--boundary" was just matched */
	S_DASH,     /* ... and one '-' after it */
	S_PAD,      /* ... and transport padding after it */
	S_CR,       /* ... and the CR ending its line */
	S_HEADERS,  /* a part's header block */
	S_EPILOGUE, /* after the close delimiter, bytes dropped */
	S_FAILED,
};

/* Locale-free character classes: headers are bytes, not text. */
static int is_alnum(unsigned char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
	       (ch >= '0' && ch <= '9');
}

/* RFC 7230 tchar. */
static int is_tchar(unsigned char ch)
{
	return is_alnum(ch) || (ch && strchr("!#$%&'*+-.^_`|~", ch));
}

/* RFC 2046 bchars. */
static int is_bchar(unsigned char ch)
{
	return is_alnum(ch) || (ch && strchr("'()+_,-./:=? ", ch));
}

static size_t token_len(const char *s)
{
	size_t n = 0;

	while (is_tchar((unsigned char)s[n]))
		n++;
	return n;
}

static const char *skip_ows(const char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	return s;
}

/* Whether the n bytes at s are lit (lowercase), ignoring ASCII case. */
static int ieq(const char *s, size_t n, const char *lit)
{
	if (strlen(lit) != n)
		return 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];

		if (ch >= 'A' && ch <= 'Z')
			ch = (unsigned char)(ch - 'A' + 'a');
		if (ch != (unsigned char)lit[i])
			return 0;
	}
	return 1;
}

/* Reads a parameter's name at *sp: ";" OWS token OWS "=" OWS, leaving *sp
 * at its value. Returns 1 with the name in *name, *nlen; 0 at the end of
 * the header value (a trailing ';' allowed); -1 on a syntax error. */
static int param_name(const char **sp, const char **name, size_t *nlen)
{
	const char *s = skip_ows(*sp);

	if (!*s)
		return 0;
	if (*s != ';')
		return -1;
	s = skip_ows(s + 1);
	if (!*s)
		return 0;
	*name = s;
	*nlen = token_len(s);
	if (!*nlen)
		return -1;
	s = skip_ows(s + *nlen);
	if (*s != '=')
		return -1;
	*sp = skip_ows(s + 1);
	return 1;
}

/* Reads a parameter's value at *sp, a token or a quoted-string, decoding
 * quoted-pairs into out (room bytes, NUL-terminated; out NULL just skips).
 * Returns 0 with the decoded length in *vlen and *sp past the value; -1 on
 * a syntax error (a control character, no closing quote, no value); -2
 * when the value does not fit. */
static int param_value(const char **sp, char *out, size_t room, size_t *vlen)
{
	const char *s = *sp;
	size_t n = 0;

	if (*s != '"') {
		n = token_len(s);
		if (!n)
			return -1;
		if (out && n + 1 > room)
			return -2;
		if (out) {
			memcpy(out, s, n);
			out[n] = '\0';
		}
		*vlen = n;
		*sp = s + n;
		return 0;
	}
	for (s++; *s != '"'; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '\\') {
			s++;
			ch = (unsigned char)*s;
		}
		if ((ch < 0x20 && ch != '\t') || ch == 0x7f)
			return -1; /* the end of the line too */
		if (out && n + 1 >= room)
			return -2;
		if (out)
			out[n] = (char)ch;
		n++;
	}
	if (out)
		out[n] = '\0';
	*vlen = n;
	*sp = s + 1;
	return 0;
}

/* Whether b is a boundary RFC 2046 allows: 1..70 bchars, no final space. */
static int boundary_ok(const char *b)
{
	size_t n = strnlen(b, MULTIPART_MAX_BOUNDARY + 1);

	if (n < 1 || n > MULTIPART_MAX_BOUNDARY || b[n - 1] == ' ')
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!is_bchar((unsigned char)b[i]))
			return 0;
	return 1;
}

int multipart_boundary(const char *content_type, char *out, size_t len)
{
	char b[MULTIPART_MAX_BOUNDARY + 1];
	const char *s, *name;
	size_t n, nlen, blen;
	int have = 0, rc;

	if (out && len)
		out[0] = '\0';
	if (!content_type)
		return EINVAL;
	s = skip_ows(content_type);
	n = token_len(s);
	if (!ieq(s, n, "multipart") || s[n] != '/')
		return EINVAL;
	s += n + 1;
	n = token_len(s);
	if (!ieq(s, n, "form-data"))
		return EINVAL;
	s += n;
	for (;;) {
		rc = param_name(&s, &name, &nlen);
		if (rc < 0)
			return EINVAL;
		if (rc == 0)
			break;
		if (!ieq(name, nlen, "boundary")) {
			if (param_value(&s, NULL, 0, &blen) != 0)
				return EINVAL;
			continue;
		}
		if (have || param_value(&s, b, sizeof(b), &blen) != 0)
			return EINVAL;
		have = 1;
	}
	if (!have || !boundary_ok(b))
		return EINVAL;
	if (!out || strlen(b) + 1 > len)
		return ENAMETOOLONG;
	memcpy(out, b, strlen(b) + 1);
	return 0;
}

/* Fails the parse: "multipart: " and the reason into p->err. Returns
 * EINVAL. */
static int fail(struct multipart *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static int fail(struct multipart *p, const char *fmt, ...)
{
	va_list ap;

	strcpy(p->err, "multipart: ");
	va_start(ap, fmt);
	vsnprintf(p->err + 11, sizeof(p->err) - 11, fmt, ap);
	va_end(ap);
	p->error = EINVAL;
	p->state = S_FAILED;
	return EINVAL;
}

/* Keeps a callback's non-zero return as the parse's result. */
static int stopped(struct multipart *p, int rc)
{
	if (!rc)
		return 0;
	snprintf(p->err, sizeof(p->err),
	         "multipart: stopped by a callback (%d)", rc);
	p->error = rc;
	p->state = S_FAILED;
	return rc;
}

static int emit(struct multipart *p, const char *d, size_t n)
{
	if (!n || !p->cb || !p->cb->data)
		return 0;
	return stopped(p, p->cb->data(p->arg, d, n));
}

static int end_part(struct multipart *p)
{
	if (!p->in_part)
		return 0;
	p->in_part = 0;
	if (!p->cb || !p->cb->end)
		return 0;
	return stopped(p, p->cb->end(p->arg));
}

int multipart_init(struct multipart *p, const char *boundary,
                   const struct multipart_callbacks *cb, void *arg)
{
	memset(p, 0, offsetof(struct multipart, hdr));
	memset(&p->part, 0, sizeof(p->part));
	p->err[0] = '\0';
	p->cb = cb;
	p->arg = arg;
	if (!boundary || !boundary_ok(boundary))
		return fail(p, "bad boundary");
	p->dlen = strlen(boundary) + 4;
	memcpy(p->delim, "\r\n--", 4);
	memcpy(p->delim + 4, boundary, p->dlen - 4);
	p->state = S_PREAMBLE;
	/* the first delimiter may open the body: act as if a CRLF came */
	p->k = 2;
	return 0;
}

/* Scans s[0..n) for the delimiter, in the preamble (dropping bytes) or a
 * part (handing them on). Returns 0 or a failure; *used is n, or the bytes
 * up to the end of a whole delimiter when it moves to S_DELIM.
 *
 * A partial match is p->k bytes of p->delim, "held" when they came in
 * earlier calls: they are not stored, as they are the delimiter's prefix.
 * As the boundary holds no CR, a match can only begin at a CR, and a CR
 * breaking a match begins the next one. */
static int scan(struct multipart *p, const char *s, size_t n, size_t *used)
{
	int body = p->state == S_BODY;
	size_t held = p->k, i = 0;
	int rc;

	while (i < n) {
		if (p->k == 0) {
			const char *cr = memchr(s + i, '\r', n - i);

			if (!cr)
				break;
			i = (size_t)(cr - s);
		}
		if (s[i] == p->delim[p->k]) {
			p->k++;
			i++;
			if (p->k < p->dlen)
				continue;
			/* what came before the delimiter is data */
			if (body && !held) {
				rc = emit(p, s, i - p->dlen);
				if (rc)
					return rc;
			}
			p->k = 0;
			p->state = S_DELIM;
			*used = i;
			return 0;
		}
		/* a broken match: its held bytes are data, and the bytes of
		 * this call up to i stay data to hand on below */
		if (held && body) {
			rc = emit(p, p->delim, held);
			if (rc)
				return rc;
		}
		held = 0;
		p->k = s[i] == '\r';
		i++;
	}
	if (body) {
		rc = emit(p, s, n - (p->k - held));
		if (rc)
			return rc;
	}
	*used = n;
	return 0;
}

/* The "\r\n--boundary" (and a '-' when dash) just matched was not a
 * delimiter after all: it is data of the part, or more preamble. */
static int not_delim(struct multipart *p, int dash)
{
	int rc;

	p->k = 0;
	if (!p->in_part) {
		p->state = S_PREAMBLE;
		return 0;
	}
	p->state = S_BODY;
	rc = emit(p, p->delim, p->dlen);
	if (!rc && dash)
		rc = emit(p, "-", 1);
	return rc;
}

/* Appends the NUL-terminated s to p->strs. Returns it, or NULL when full
 * (which the header cap makes impossible: decoded strings are shorter
 * than the header text they come from). */
static char *keep(struct multipart *p, size_t *used, const char *s, size_t n)
{
	char *out = p->strs + *used;

	if (n + 1 > sizeof(p->strs) - *used)
		return NULL;
	memcpy(out, s, n);
	out[n] = '\0';
	*used += n + 1;
	return out;
}

/* Parses a Content-Disposition value (NUL-terminated) into p->part. */
static int disposition(struct multipart *p, const char *v, size_t *used)
{
	unsigned no = p->parts + 1;
	const char *s = v, *name;
	size_t n, nlen, vlen;
	int rc;

	n = token_len(s);
	if (!ieq(s, n, "form-data"))
		return fail(p, "part %u: Content-Disposition is not form-data",
		            no);
	s += n;
	for (;;) {
		char *out = p->strs + *used;
		int is_name, is_file;

		rc = param_name(&s, &name, &nlen);
		if (rc == 0)
			break;
		if (rc < 0)
			return fail(
			    p, "part %u: bad Content-Disposition parameters",
			    no);
		is_name = ieq(name, nlen, "name");
		is_file = ieq(name, nlen, "filename");
		rc = param_value(&s, is_name || is_file ? out : NULL,
		                 sizeof(p->strs) - *used, &vlen);
		if (rc == -2)
			return fail(p, "part %u: headers too long", no);
		if (rc < 0)
			return fail(
			    p,
			    "part %u: bad Content-Disposition parameter value",
			    no);
		if ((is_name && p->part.name) || (is_file && p->part.filename))
			return fail(p, "part %u: Content-Disposition %s twice",
			            no, is_name ? "name" : "filename");
		if (is_name)
			p->part.name = out;
		if (is_file)
			p->part.filename = out;
		if (is_name || is_file)
			*used += vlen + 1;
	}
	return 0;
}

/* Parses the header block in p->hdr (ending in an empty line) into
 * p->part. */
static int parse_headers(struct multipart *p)
{
	unsigned no = p->parts + 1;
	char *h = p->hdr;
	size_t n = p->hlen - 2, used = 0, i = 0;
	int have_cd = 0, have_ct = 0, rc;

	memset(&p->part, 0, sizeof(p->part));
	p->part.content_type = "";
	p->part.index = p->parts;
	for (size_t j = 0; j < n; j++) {
		if (h[j] == '\0')
			return fail(p, "part %u: NUL in the headers", no);
		if ((h[j] == '\r' && h[j + 1] != '\n') ||
		    (h[j] == '\n' && (j == 0 || h[j - 1] != '\r')))
			return fail(
			    p, "part %u: a header line not ended by CRLF", no);
	}
	if (n && (h[0] == ' ' || h[0] == '\t'))
		return fail(p, "part %u: headers start with white space", no);
	/* unfold obsolete line folding: CRLF before SP or HT is spaces */
	for (size_t j = 0; j + 2 < n; j++)
		if (h[j] == '\r' && (h[j + 2] == ' ' || h[j + 2] == '\t'))
			h[j] = h[j + 1] = ' ';
	while (i < n) {
		char *line = h + i, *eol = memchr(line, '\r', n - i);
		char *colon, *v, *end;
		size_t nlen;

		/* every line ends in CRLF: checked above */
		*eol = '\0';
		i = (size_t)(eol - h) + 2;
		colon = strchr(line, ':');
		nlen = colon ? (size_t)(colon - line) : 0;
		if (!nlen || token_len(line) != nlen)
			return fail(p, "part %u: bad header line", no);
		v = (char *)skip_ows(colon + 1);
		end = v + strlen(v);
		while (end > v && (end[-1] == ' ' || end[-1] == '\t'))
			end--;
		*end = '\0';
		if (ieq(line, nlen, "content-disposition")) {
			if (have_cd)
				return fail(
				    p,
				    "part %u: two Content-Disposition headers",
				    no);
			have_cd = 1;
			rc = disposition(p, v, &used);
			if (rc)
				return rc;
		} else if (ieq(line, nlen, "content-type")) {
			if (have_ct)
				return fail(
				    p, "part %u: two Content-Type headers", no);
			have_ct = 1;
			p->part.content_type =
			    keep(p, &used, v, (size_t)(end - v));
			if (!p->part.content_type)
				return fail(p, "part %u: headers too long", no);
		}
	}
	if (!have_cd)
		return fail(p, "part %u: no Content-Disposition header", no);
	if (!p->part.name || !p->part.name[0])
		return fail(p, "part %u: no Content-Disposition name", no);
	return 0;
}

/* Gathers a part's header block; at its empty line, begins the part. */
static int headers(struct multipart *p, const char *s, size_t n, size_t *used)
{
	size_t i = 0;
	int rc;

	while (i < n) {
		if (p->hlen == MULTIPART_MAX_HEADERS)
			return fail(p, "part %u: headers over %d bytes",
			            p->parts + 1, MULTIPART_MAX_HEADERS);
		p->hdr[p->hlen++] = s[i++];
		if (!(p->hlen == 2 && memcmp(p->hdr, "\r\n", 2) == 0) &&
		    !(p->hlen >= 4 &&
		      memcmp(p->hdr + p->hlen - 4, "\r\n\r\n", 4) == 0))
			continue;
		*used = i;
		rc = parse_headers(p);
		if (rc)
			return rc;
		p->parts++;
		p->in_part = 1;
		p->state = S_BODY;
		p->k = 0;
		if (!p->cb || !p->cb->begin)
			return 0;
		return stopped(p, p->cb->begin(p->arg, &p->part));
	}
	*used = n;
	return 0;
}

/* Handles the byte after a matched "\r\n--boundary": *used is 1 when it
 * was consumed, 0 when it is to be read again in the new state. */
static int after_delim(struct multipart *p, char ch, size_t *used)
{
	int rc;

	*used = 1;
	switch (p->state) {
	case S_DELIM:
		if (ch == '-') {
			p->state = S_DASH;
		} else if (ch == ' ' || ch == '\t') {
			p->state = S_PAD;
		} else if (ch == '\r') {
			p->state = S_CR;
		} else {
			*used = 0;
			return not_delim(p, 0);
		}
		return 0;
	case S_DASH:
		if (ch != '-') {
			*used = 0;
			return not_delim(p, 1);
		}
		p->state = S_EPILOGUE;
		return end_part(p);
	case S_PAD:
		if (ch == '\r')
			p->state = S_CR;
		else if (ch != ' ' && ch != '\t')
			return fail(p, "junk after a boundary");
		return 0;
	default: /* S_CR */
		if (ch != '\n')
			return fail(p, "a boundary line not ended by CRLF");
		rc = end_part(p);
		if (rc)
			return rc;
		if (p->parts == MULTIPART_MAX_PARTS)
			return fail(p, "more than %d parts",
			            MULTIPART_MAX_PARTS);
		p->state = S_HEADERS;
		p->hlen = 0;
		return 0;
	}
}

int multipart_feed(struct multipart *p, const void *data, size_t len)
{
	const char *s = data;
	size_t used = 0;
	int rc = 0;

	while (!p->error && len > 0) {
		switch (p->state) {
		case S_PREAMBLE:
		case S_BODY:
			rc = scan(p, s, len, &used);
			break;
		case S_HEADERS:
			rc = headers(p, s, len, &used);
			break;
		case S_EPILOGUE:
			used = len;
			break;
		default:
			rc = after_delim(p, *s, &used);
			break;
		}
		if (rc)
			return rc;
		s += used;
		len -= used;
	}
	return p->error;
}

int multipart_finish(struct multipart *p)
{
	if (p->error)
		return p->error;
	if (p->state == S_EPILOGUE)
		return 0;
	if (p->state == S_PREAMBLE)
		return fail(p, "no boundary in the body");
	return fail(p, "body ends before the closing boundary");
}
