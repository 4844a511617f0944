#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "common/dist/coremeta.h"
#include "common/log.h"
#include "storage/blob.h"
#include "storage/db/db_search.h"
#include "storage/search_note.h"

struct heads {
	char summary[512];
	char keywords[512];
};

/* Copies v into out (len bytes), cut at a UTF-8 boundary. */
static void copy_cut(char *out, size_t len, const char *v)
{
	size_t n = strlen(v);

	if (n >= len) {
		n = len - 1;
		while (n > 0 && ((unsigned char)v[n] & 0xc0) == 0x80)
			n--;
	}
	memcpy(out, v, n);
	out[n] = '\0';
}

static int on_header(const char *name, size_t nlen, const char *value,
		     void *ctx)
{
	struct heads *h = ctx;

	if (nlen == 7 && strncasecmp(name, "Summary", 7) == 0)
		copy_cut(h->summary, sizeof(h->summary), value);
	else if (nlen == 8 && strncasecmp(name, "Keywords", 8) == 0)
		copy_cut(h->keywords, sizeof(h->keywords), value);
	return 0;
}

/* Reads the headers of the metadata blob sha into h. Returns 0 or an
 * errno (logged). */
static int read_heads(const char *data_dir, const char *sha, struct heads *h)
{
	char path[PATH_MAX];
	char *buf = NULL;
	size_t len = 0;
	ssize_t got;
	int fd = -1, rc = 0;

	memset(h, 0, sizeof(*h));
	path[0] = '\0';
	rc = blob_path(data_dir, sha, path, sizeof(path));
	if (rc)
		goto done;
	buf = malloc(SEARCH_NOTE_MAX);
	if (!buf) {
		rc = ENOMEM;
		goto done;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		rc = errno;
		goto done;
	}
	while (len < SEARCH_NOTE_MAX &&
	       (got = read(fd, buf + len, SEARCH_NOTE_MAX - len)) != 0) {
		if (got < 0) {
			if (errno == EINTR)
				continue;
			rc = errno;
			goto done;
		}
		len += (size_t)got;
	}
	rc = coremeta_each(buf, len, on_header, h, NULL);
done:
	if (rc)
		log_warn(rc, path, "search: reading the metadata %s", sha);
	if (fd >= 0)
		close(fd);
	free(buf);
	return rc;
}

int search_note_meta(struct db *db, const char *data_dir, const char *index,
		     const char *project, const char *meta_sha)
{
	struct heads h;

	if (*meta_sha && !read_heads(data_dir, meta_sha, &h))
		return db_search_meta(db, index, project, h.summary,
				      h.keywords);
	return db_search_name(db, index, project);
}

void search_note_file(struct db *db, const char *data_dir,
		      const char *file_sha, const char *meta_sha)
{
	struct heads h;

	if (!read_heads(data_dir, meta_sha, &h))
		(void)db_search_meta_file(db, file_sha, meta_sha, h.summary,
					  h.keywords);
}
