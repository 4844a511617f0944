/* oci_bearer: the token endpoint and its key (oci_bearer.h). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/rand.h>

#include "common/http/token.h"
#include "common/isotime.h"
#include "common/log.h"
#include "common/oci/auth.h"
#include "fcgi/oci/access.h"
#include "fcgi/oci/bearer.h"
#include "fcgi/oci/oci.h"
#include "storage/blob.h"

static unsigned char key[OCI_ANON_KEY_LEN];
static int have_key;

/* Reads the key at path into key. Returns 0, ENOENT when there is none,
 * or EINVAL (logged) when the file is not a key. */
static int read_key(const char *path)
{
	unsigned char b[OCI_ANON_KEY_LEN + 1];
	size_t n = 0;
	ssize_t got;
	int fd, err = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		if (errno != ENOENT)
			log_error(errno, path, "open");
		return errno;
	}
	while (n < sizeof(b)) {
		got = read(fd, b + n, sizeof(b) - n);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			err = errno;
			log_error(err, path, "read");
			break;
		}
		if (!got)
			break;
		n += (size_t)got;
	}
	close(fd);
	if (!err && n != OCI_ANON_KEY_LEN) {
		log_error(0, path, "not a key of %d bytes", OCI_ANON_KEY_LEN);
		err = EINVAL;
	}
	if (!err)
		memcpy(key, b, sizeof(key));
	OPENSSL_cleanse(b, sizeof(b));
	return err;
}

/* Makes a new key at path, unless another process made one first (then
 * EEXIST). Returns 0 or an errno (logged). */
static int make_key(const char *data_dir, const char *path)
{
	unsigned char b[OCI_ANON_KEY_LEN];
	char tmp[PATH_MAX];
	int fd, err = 0;

	if (RAND_bytes(b, sizeof(b)) != 1) {
		log_error(0, path, "no random bytes for a key");
		return EIO;
	}
	err = blob_tmp(data_dir, tmp, sizeof(tmp), &fd);
	if (err) {
		OPENSSL_cleanse(b, sizeof(b));
		return err;
	}
	if (write(fd, b, sizeof(b)) != (ssize_t)sizeof(b) || fsync(fd) < 0) {
		err = errno ? errno : EIO;
		log_error(err, tmp, "write the key");
	} else if (link(tmp, path) < 0) {
		/* link, not rename: a key another worker made is kept */
		err = errno;
		if (err != EEXIST)
			log_error(err, path, "make the key");
	}
	close(fd);
	unlink(tmp);
	OPENSSL_cleanse(b, sizeof(b));
	return err;
}

int oci_bearer_key(struct worker *w, const unsigned char **out)
{
	char path[PATH_MAX];
	int err;

	if (have_key) {
		*out = key;
		return 0;
	}
	if ((size_t)snprintf(path, sizeof(path), "%s/bearer.key",
			     w->conf->data_dir) >= sizeof(path))
		return ENAMETOOLONG;
	err = read_key(path);
	if (err == ENOENT) {
		err = make_key(w->conf->data_dir, path);
		if (!err || err == EEXIST)
			err = read_key(path);
	}
	if (err)
		return err;
	have_key = 1;
	*out = key;
	return 0;
}

void oci_bearer_serve(struct worker *w, struct req *r)
{
	char text[TOKEN_TEXT_LEN + OCI_ANON_TEXT_LEN + 1];
	char issued[ISOTIME_LEN], body[2 * sizeof(text) + 200];
	long long now = (long long)time(NULL), expires, ttl;
	const unsigned char *k;
	int anonymous, n;

	if (strcmp(r->method, "GET") != 0 && strcmp(r->method, "HEAD") != 0) {
		/* containerd tries an OAuth POST first, then GET */
		req_header(r, "Allow", "GET, HEAD");
		oci_fail(r, 405, "UNSUPPORTED", "the token endpoint takes GET");
		return;
	}
	r->private_index = 1;
	if (oci_access_login(w, r, &anonymous, text, &expires))
		return;
	if (anonymous) {
		ttl = OCI_ANON_TTL;
		if (oci_bearer_key(w, &k) ||
		    oci_anon_token_make(k, OCI_ANON_KEY_LEN, now + ttl, text)) {
			oci_fail(r, 500, "UNKNOWN", "cannot make a token");
			return;
		}
	} else {
		ttl = OCI_BEARER_TTL;
		if (expires && expires - now < ttl)
			ttl = expires - now;
	}
	/* issued_at only when it can be written (docker reads it as RFC 3339) */
	if (isotime_format(now, issued))
		n = snprintf(body, sizeof(body),
			     "{\"token\":\"%s\",\"access_token\":\"%s\","
			     "\"expires_in\":%lld}\n", text, text, ttl);
	else
		n = snprintf(body, sizeof(body),
			     "{\"token\":\"%s\",\"access_token\":\"%s\","
			     "\"expires_in\":%lld,\"issued_at\":\"%s\"}\n",
			     text, text, ttl, issued);
	OPENSSL_cleanse(text, sizeof(text));
	req_header(r, "Cache-Control", "no-store");
	req_header(r, "Pragma", "no-cache");
	req_reply(r, 200, "application/json", body, (size_t)n);
	OPENSSL_cleanse(body, sizeof(body));
}
