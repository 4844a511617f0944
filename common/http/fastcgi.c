#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/http/fastcgi.h"

#define VERSION_1 1
#define ROLE_RESPONDER 1
#define KEEP_CONN 1
#define STATUS_UNKNOWN_ROLE 3

void fastcgi_init(struct fastcgi_parser *p)
{
	memset(p, 0, sizeof(*p));
	buf_init(&p->params, FASTCGI_MAX_PARAMS);
}

void fastcgi_free(struct fastcgi_parser *p)
{
	buf_free(&p->params);
}

void fastcgi_next(struct fastcgi_parser *p)
{
	p->id = 0;
	p->keep_conn = 0;
	p->params_done = p->stdin_done = 0;
	buf_reset(&p->params);
}

void fastcgi_header(unsigned char out[FASTCGI_HEADER_LEN], int type,
		    uint16_t id, size_t content_len, size_t padding_len)
{
	out[0] = VERSION_1;
	out[1] = (unsigned char)type;
	out[2] = (unsigned char)(id >> 8);
	out[3] = (unsigned char)id;
	out[4] = (unsigned char)(content_len >> 8);
	out[5] = (unsigned char)content_len;
	out[6] = (unsigned char)padding_len;
	out[7] = 0;
}

/* An END_REQUEST record: header and body, 16 bytes. */
static void end_request(unsigned char out[16], uint16_t id,
			uint32_t app_status, int protocol_status)
{
	fastcgi_header(out, FASTCGI_END_REQUEST, id, 8, 0);
	out[8] = (unsigned char)(app_status >> 24);
	out[9] = (unsigned char)(app_status >> 16);
	out[10] = (unsigned char)(app_status >> 8);
	out[11] = (unsigned char)app_status;
	out[12] = (unsigned char)protocol_status;
	memset(out + 13, 0, 3);
}

size_t fastcgi_end(unsigned char out[24], uint16_t id, uint32_t app_status)
{
	fastcgi_header(out, FASTCGI_STDOUT, id, 0, 0);
	end_request(out + 8, id, app_status, 0);
	return 24;
}

/* Reads one length of a name-value pair: 1 byte below 128, else 4. */
static int pair_len(const unsigned char *d, size_t len, size_t *off,
		    size_t *out)
{
	if (*off >= len)
		return -1;
	if (!(d[*off] & 0x80)) {
		*out = d[(*off)++];
		return 0;
	}
	if (len - *off < 4)
		return -1;
	*out = ((size_t)(d[*off] & 0x7f) << 24) | ((size_t)d[*off + 1] << 16) |
	       ((size_t)d[*off + 2] << 8) | d[*off + 3];
	*off += 4;
	return 0;
}

int fastcgi_pair(const char *data, size_t len, size_t *off, const char **name,
		 size_t *nlen, const char **value, size_t *vlen)
{
	const unsigned char *d = (const unsigned char *)data;
	size_t o = *off;

	if (o >= len)
		return 0;
	if (pair_len(d, len, &o, nlen) || pair_len(d, len, &o, vlen))
		return -1;
	if (*nlen > len - o || *vlen > len - o - *nlen)
		return -1;
	*name = data + o;
	*value = data + o + *nlen;
	*off = o + *nlen + *vlen;
	return 1;
}

/* Checks one pair for what fastcgi_env() refuses. Returns NULL or why. */
static const char *bad_pair(const char *name, size_t nl, const char *value,
			    size_t vl)
{
	if (!nl)
		return "an empty FastCGI parameter name";
	if (memchr(name, '\0', nl))
		return "a NUL byte in a FastCGI parameter name";
	if (memchr(name, '=', nl))
		return "'=' in a FastCGI parameter name";
	if (memchr(value, '\0', vl))
		return "a NUL byte in a FastCGI parameter value";
	return NULL;
}

/* Sets *envp to an empty list (reusing the array). Returns 0 or ENOMEM. */
static int empty_env(char ***envp)
{
	char **e = realloc(*envp, sizeof(*e));

	if (!e)
		return ENOMEM;
	*envp = e;
	e[0] = NULL;
	return 0;
}

int fastcgi_env(const char *data, size_t len, struct buf *env, char ***envp,
		const char **why)
{
	const char *name, *value;
	size_t off = 0, nl, vl, count = 0, pos = 0;
	char **e;
	int rc, err = 0;

	*why = NULL;
	buf_reset(env);
	while ((rc = fastcgi_pair(data, len, &off, &name, &nl, &value,
				  &vl)) == 1) {
		*why = bad_pair(name, nl, value, vl);
		if (*why) {
			err = EINVAL;
			goto fail;
		}
		if (buf_add(env, name, nl) || buf_add(env, "=", 1) ||
		    buf_add(env, value, vl) || buf_add(env, "", 1)) {
			err = ENOMEM;
			goto fail;
		}
		count++;
	}
	if (rc < 0) {
		err = EBADMSG;
		goto fail;
	}
	e = realloc(*envp, (count + 1) * sizeof(*e));
	if (!e) {
		err = ENOMEM;
		goto fail;
	}
	*envp = e;
	for (size_t i = 0; i < count; i++) {
		e[i] = env->data + pos;
		pos += strlen(e[i]) + 1;
	}
	e[count] = NULL;
	return 0;
fail:
	buf_reset(env);
	if (*envp) /* an array holds one place at least */
		(*envp)[0] = NULL;
	else if (empty_env(envp))
		return ENOMEM;
	return err;
}

/* Appends a pair with short (one-byte) lengths to out at *n, if it fits. */
static void put_pair(unsigned char *out, size_t cap, size_t *n,
		     const char *name, const char *value)
{
	size_t nl = strlen(name), vl = strlen(value);

	if (*n + 2 + nl + vl > cap)
		return;
	out[(*n)++] = (unsigned char)nl;
	out[(*n)++] = (unsigned char)vl;
	memcpy(out + *n, name, nl);
	*n += nl;
	memcpy(out + *n, value, vl);
	*n += vl;
}

/* Answers FCGI_GET_VALUES with the variables it asks for that we know. */
static void get_values(struct fastcgi_parser *p)
{
	static const char *const known[][2] = {
		{"FCGI_MAX_CONNS", "64"},
		{"FCGI_MAX_REQS", "64"},
		{"FCGI_MPXS_CONNS", "0"},
	};
	const char *name, *value;
	size_t off = 0, nl, vl, n = FASTCGI_HEADER_LEN;

	while (fastcgi_pair((const char *)p->body, p->body_have, &off, &name,
			    &nl, &value, &vl) == 1) {
		for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
			if (strlen(known[i][0]) == nl &&
			    memcmp(known[i][0], name, nl) == 0)
				put_pair(p->reply, sizeof(p->reply), &n,
					 known[i][0], known[i][1]);
	}
	fastcgi_header(p->reply, FASTCGI_GET_VALUES_RESULT, 0,
		       n - FASTCGI_HEADER_LEN, 0);
	p->data = (const char *)p->reply;
	p->len = n;
}

static enum fastcgi_event fail(struct fastcgi_parser *p, const char *why)
{
	p->reason = why;
	return FASTCGI_ERROR;
}

/* The whole content of the current record has been read: acts on it. */
static enum fastcgi_event record_done(struct fastcgi_parser *p)
{
	switch (p->type) {
	case FASTCGI_BEGIN_REQUEST:
		if (p->rec_id == 0 || p->body_have != 8)
			return fail(p, "malformed FCGI_BEGIN_REQUEST");
		if (p->id != 0)
			return fail(p, "a second request on a busy connection");
		if (((p->body[0] << 8) | p->body[1]) != ROLE_RESPONDER) {
			end_request(p->reply, p->rec_id, 0, STATUS_UNKNOWN_ROLE);
			p->data = (const char *)p->reply;
			p->len = 16;
			return FASTCGI_REPLY;
		}
		p->id = p->rec_id;
		p->keep_conn = p->body[2] & KEEP_CONN;
		return FASTCGI_MORE;
	case FASTCGI_PARAMS:
		if (p->rec_id != p->id)
			return FASTCGI_MORE;
		if (p->id == 0 || p->params_done)
			return fail(p, "FCGI_PARAMS out of place");
		if (p->body_have == 0) { /* the empty record ends them */
			p->params_done = 1;
			return FASTCGI_PARAMS_END;
		}
		return FASTCGI_MORE;
	case FASTCGI_STDIN:
		if (p->rec_id != p->id || !p->id)
			return FASTCGI_MORE;
		if (p->body_have == 0) { /* checked by record_start */
			p->stdin_done = 1;
			return FASTCGI_STDIN_END;
		}
		return FASTCGI_MORE;
	case FASTCGI_ABORT_REQUEST:
		return p->rec_id == p->id && p->id ? FASTCGI_ABORT :
						     FASTCGI_MORE;
	case FASTCGI_GET_VALUES:
		if (p->rec_id != 0)
			return FASTCGI_MORE;
		get_values(p);
		return FASTCGI_REPLY;
	default:
		if (p->rec_id != 0 || p->type == FASTCGI_GET_VALUES_RESULT ||
		    p->type == FASTCGI_UNKNOWN_TYPE)
			return FASTCGI_MORE; /* DATA and the like: ignored */
		/* a management record we do not know */
		fastcgi_header(p->reply, FASTCGI_UNKNOWN_TYPE, 0, 8, 0);
		memset(p->reply + 8, 0, 8);
		p->reply[8] = (unsigned char)p->type;
		p->data = (const char *)p->reply;
		p->len = 16;
		return FASTCGI_REPLY;
	}
}

/* Starts the record whose header is in p->hdr. */
static enum fastcgi_event record_start(struct fastcgi_parser *p)
{
	if (p->hdr[0] != VERSION_1)
		return fail(p, "not FastCGI version 1");
	p->type = p->hdr[1];
	p->rec_id = (uint16_t)((p->hdr[2] << 8) | p->hdr[3]);
	p->content_left = ((size_t)p->hdr[4] << 8) | p->hdr[5];
	p->padding_left = p->hdr[6];
	p->body_have = 0;
	if (p->type == FASTCGI_STDIN && p->rec_id == p->id && p->id &&
	    (!p->params_done || p->stdin_done))
		return fail(p, "FCGI_STDIN out of place");
	return FASTCGI_MORE;
}

size_t fastcgi_feed(struct fastcgi_parser *p, const char *data, size_t len,
		    enum fastcgi_event *ev)
{
	size_t used = 0, n;

	*ev = FASTCGI_MORE;
	p->data = NULL;
	p->len = 0;
	while (used < len) {
		if (p->hdr_have < FASTCGI_HEADER_LEN) {
			n = FASTCGI_HEADER_LEN - p->hdr_have;
			if (n > len - used)
				n = len - used;
			memcpy(p->hdr + p->hdr_have, data + used, n);
			p->hdr_have += n;
			used += n;
			if (p->hdr_have < FASTCGI_HEADER_LEN)
				break;
			*ev = record_start(p);
			if (*ev == FASTCGI_ERROR)
				return used;
			if (p->content_left == 0) {
				/* an empty record is complete at once */
				*ev = record_done(p);
				if (p->padding_left == 0)
					p->hdr_have = 0;
				if (*ev != FASTCGI_MORE)
					return used;
			}
			continue;
		}
		if (p->content_left > 0) {
			n = p->content_left < len - used ? p->content_left :
							   len - used;
			if (p->type == FASTCGI_STDIN && p->rec_id == p->id) {
				p->content_left -= n;
				if (p->content_left == 0 && p->padding_left == 0)
					p->hdr_have = 0;
				p->data = data + used;
				p->len = n;
				p->body_have = n;
				*ev = FASTCGI_STDIN_DATA;
				return used + n;
			}
			if (p->type == FASTCGI_PARAMS && p->rec_id == p->id &&
			    p->id) {
				if (buf_add(&p->params, data + used, n)) {
					*ev = fail(p, "CGI variables too large");
					return used;
				}
			} else if (p->body_have + n <= sizeof(p->body)) {
				memcpy(p->body + p->body_have, data + used, n);
			} else if (p->type == FASTCGI_BEGIN_REQUEST) {
				*ev = fail(p, "malformed FCGI_BEGIN_REQUEST");
				return used;
			}
			p->body_have += n;
			p->content_left -= n;
			used += n;
			if (p->content_left > 0)
				break;
			if (p->body_have > sizeof(p->body) &&
			    p->type != FASTCGI_PARAMS)
				p->body_have = 0; /* too big to read: empty */
			*ev = record_done(p);
			if (p->padding_left == 0)
				p->hdr_have = 0;
			if (*ev != FASTCGI_MORE)
				return used;
			continue;
		}
		/* the content is read: what is left is padding */
		n = p->padding_left < len - used ? p->padding_left : len - used;
		p->padding_left -= n;
		used += n;
		if (p->padding_left == 0)
			p->hdr_have = 0;
	}
	return used;
}
