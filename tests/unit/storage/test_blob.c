#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "common/hash/sha256.h"
#include "storage/blob.h"
#include "tests/unit/t.h"

static char dir[] = "/tmp/larder-test-blob-XXXXXX";

/* Inflates the gzip file at path into out (cap bytes). Returns the
 * length, or -1. */
static long inflate_file(const char *path, char *out, size_t cap)
{
	gzFile f = gzopen(path, "rb");
	int n;

	if (!f)
		return -1;
	n = gzread(f, out, (unsigned)cap);
	gzclose(f);
	return n;
}

static long long file_size(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 ? (long long)st.st_size : -1;
}

/* A page that compresses gets its copy, which inflates to it; the size is
 * both files'. */
T(page_gets_copy)
{
	static char page[200000], back[200000];
	char sha[65], want[65], path[PATH_MAX], gz[PATH_MAX];
	long long size = 0;

	for (size_t i = 0; i < sizeof(page); i++)
		page[i] = "{\"files\": [\"a-1.0.whl\"]}\n"[i % 26];
	CHECK_INT(sha256_hex(page, sizeof(page), want), 0);
	CHECK_INT(blob_put_page(dir, page, sizeof(page), sha, &size), 0);
	CHECK_STR(sha, want);
	CHECK_INT(blob_path(dir, sha, path, sizeof(path)), 0);
	CHECK_INT(blob_gz_path(dir, sha, gz, sizeof(gz)), 0);
	CHECK_STR(gz + strlen(path), ".gz");
	CHECK_INT(file_size(path), sizeof(page));
	CHECK(blob_gz_size(dir, sha) > 0);
	CHECK(blob_gz_size(dir, sha) < (long long)sizeof(page) / 10);
	CHECK_INT(size, (long long)sizeof(page) + blob_gz_size(dir, sha));
	CHECK_INT(inflate_file(gz, back, sizeof(back)), sizeof(page));
	CHECK(memcmp(back, page, sizeof(page)) == 0);
	/* stored again: the same bytes, the same size, nothing recompressed */
	CHECK_INT(blob_put_page(dir, page, sizeof(page), sha, &size), 0);
	CHECK_INT(size, (long long)sizeof(page) + blob_gz_size(dir, sha));
	/* a blob from before copies were made gets one */
	CHECK_INT(unlink(gz), 0);
	CHECK_INT(blob_gz_size(dir, sha), -1);
	CHECK_INT(blob_put_page(dir, page, sizeof(page), sha, &size), 0);
	CHECK(blob_gz_size(dir, sha) > 0);
	CHECK_INT(size, (long long)sizeof(page) + blob_gz_size(dir, sha));
	/* removed: the copy and the blob */
	CHECK_INT(blob_remove(dir, sha), 0);
	CHECK_INT(file_size(path), -1);
	CHECK_INT(file_size(gz), -1);
	CHECK_INT(blob_remove(dir, sha), ENOENT);
}

/* A renderer puts its rendering before it takes the write lock, where the
 * writing is; a collector may delete it (a rendering of the same bytes
 * replaced earlier, due for the collector) before the lock is taken.
 * blob_keep_page, under the lock, puts it back, copy and all, and leaves
 * a rendering that is still there as it is (issue 28, item 1). */
T(kept_page_survives_a_collector)
{
	static char page[100000];
	char sha[65], plain[65], path[PATH_MAX];
	long long size = 0, kept = -1;
	struct stat st;

	for (size_t i = 0; i < sizeof(page); i++)
		page[i] = "<a href=\"b-2.0.tar.gz\">b</a>\n"[i % 30];
	CHECK_INT(blob_put_page(dir, page, sizeof(page), sha, &size), 0);
	CHECK_INT(blob_path(dir, sha, path, sizeof(path)), 0);
	CHECK_INT(stat(path, &st), 0);
	/* still there: left as it is (same inode, no rewrite) */
	kept = size;
	CHECK_INT(blob_keep_page(dir, page, sizeof(page), sha, &kept), 0);
	CHECK_INT(kept, size);
	{
		struct stat again;

		CHECK_INT(stat(path, &again), 0);
		CHECK_INT(again.st_ino, st.st_ino);
	}
	/* the collector came in between */
	CHECK_INT(blob_remove(dir, sha), 0);
	CHECK_INT(blob_exists(dir, sha), 0);
	kept = -1;
	CHECK_INT(blob_keep_page(dir, page, sizeof(page), sha, &kept), 0);
	CHECK(blob_exists(dir, sha));
	CHECK(blob_gz_size(dir, sha) > 0);
	CHECK_INT(kept, size);
	/* a plain blob (a registry body) alike */
	CHECK_INT(blob_put(dir, "tag list", 8, plain), 0);
	CHECK_INT(blob_keep(dir, "tag list", 8, plain), 0);
	CHECK_INT(blob_remove(dir, plain), 0);
	CHECK_INT(blob_keep(dir, "tag list", 8, plain), 0);
	CHECK(blob_exists(dir, plain));
	CHECK_INT(blob_remove(dir, plain), 0);
	/* other bytes than the name says: refused, nothing named wrongly */
	CHECK_INT(blob_remove(dir, sha), 0);
	CHECK_INT(blob_keep_page(dir, "other", 5, sha, &kept), EINVAL);
	CHECK_INT(blob_remove(dir, sha), ENOENT);
}

/* An upload's bytes, stored again from its open file under the publish's
 * lock when a collector took the blob (of the same bytes, evictable) in
 * between: the file was unlinked by blob_commit, which found the blob
 * there, but its descriptor still reads (issue 28, item 2). */
T(put_fd_from_an_unlinked_upload)
{
	static const char body[] = "an uploaded wheel's bytes";
	char sha[65], tmp[PATH_MAX], wrong[65];
	struct buf b;
	int fd;

	CHECK_INT(blob_put(dir, body, sizeof(body) - 1, sha), 0);
	CHECK_INT(blob_tmp(dir, tmp, sizeof(tmp), &fd), 0);
	CHECK_INT(write(fd, body, sizeof(body) - 1), sizeof(body) - 1);
	/* the blob is there: the upload's temp file goes, its fd stays */
	CHECK_INT(blob_commit(dir, tmp, fd, sha), 0);
	CHECK(access(tmp, F_OK) != 0);
	CHECK_INT(blob_put_fd(dir, fd, sha), 0);
	/* a collector takes it; the publish stores it again */
	CHECK_INT(blob_remove(dir, sha), 0);
	CHECK_INT(blob_put_fd(dir, fd, sha), 0);
	buf_init(&b, 1024);
	CHECK_INT(blob_read(dir, sha, &b), 0);
	CHECK_INT(b.len, sizeof(body) - 1);
	CHECK(memcmp(b.data, body, b.len) == 0);
	buf_free(&b);
	/* bytes that are not the blob's name: refused, nothing stored */
	snprintf(wrong, sizeof(wrong), "%064d", 7);
	CHECK_INT(blob_put_fd(dir, fd, wrong), EINVAL);
	CHECK_INT(blob_exists(dir, wrong), 0);
	close(fd);
	CHECK_INT(blob_remove(dir, sha), 0);
}

/* Bytes whose gzip is no smaller get no copy; the empty page neither. */
T(incompressible_has_none)
{
	static unsigned char noise[4096];
	unsigned x = 12345;
	char sha[65];
	long long size = 0;

	for (size_t i = 0; i < sizeof(noise); i++) {
		x = x * 1103515245u + 12345u;
		noise[i] = (unsigned char)(x >> 16);
	}
	CHECK_INT(blob_put_page(dir, noise, sizeof(noise), sha, &size), 0);
	CHECK_INT(blob_gz_size(dir, sha), -1);
	CHECK_INT(size, sizeof(noise));
	CHECK(blob_exists(dir, sha));
	CHECK_INT(blob_put_page(dir, "", 0, sha, &size), 0);
	CHECK_INT(blob_gz_size(dir, sha), -1);
	CHECK_INT(size, 0);
	/* no temp file is left behind either way */
	{
		char tmp[PATH_MAX];

		snprintf(tmp, sizeof(tmp), "%s/tmp", dir);
		CHECK_INT(rmdir(tmp), 0);
		CHECK_INT(mkdir(tmp, 0755), 0);
	}
}

/* Whether DATA/tmp is empty (no temp file left behind). */
static int tmp_empty(void)
{
	char tmp[PATH_MAX];

	snprintf(tmp, sizeof(tmp), "%s/tmp", dir);
	if (rmdir(tmp) != 0)
		return 0;
	return mkdir(tmp, 0755) == 0;
}

/* A page answered before its copy gets it afterwards, from the stored
 * blob: published only while the blob is there, never from bytes that
 * are not the blob's, nothing left behind when it is not published. */
T(copy_made_later)
{
	static char page[100000], back[100000];
	char sha[65], path[PATH_MAX], gz[PATH_MAX];
	struct blob_gz g;
	FILE *f;

	for (size_t i = 0; i < sizeof(page); i++)
		page[i] = "{\"files\": [\"b-2.0.whl\"]}\n"[i % 26];
	CHECK_INT(blob_put(dir, page, sizeof(page), sha), 0);
	CHECK_INT(blob_gz_size(dir, sha), -1);
	CHECK_INT(blob_path(dir, sha, path, sizeof(path)), 0);
	CHECK_INT(blob_gz_path(dir, sha, gz, sizeof(gz)), 0);
	/* made, not yet named */
	CHECK_INT(blob_gz_prepare(dir, sha, sizeof(page), &g), 0);
	CHECK(g.fd >= 0);
	CHECK_INT(g.plain, sizeof(page));
	CHECK(g.size > 0 && g.size < (long long)sizeof(page) / 10);
	CHECK_INT(blob_gz_size(dir, sha), -1);
	CHECK_INT(blob_gz_publish(dir, sha, &g), 0);
	CHECK_INT(g.fd, -1);
	CHECK_INT(blob_gz_size(dir, sha), g.size);
	CHECK_INT(inflate_file(gz, back, sizeof(back)), sizeof(page));
	CHECK(memcmp(back, page, sizeof(page)) == 0);
	CHECK((file_size(gz) >= 0) && tmp_empty());
	/* it has its copy: nothing to do */
	CHECK_INT(blob_gz_prepare(dir, sha, sizeof(page), &g), 0);
	CHECK_INT(g.fd, -1);
	/* the blob evicted between the two steps: no copy without its blob */
	CHECK_INT(unlink(gz), 0);
	CHECK_INT(blob_gz_prepare(dir, sha, sizeof(page), &g), 0);
	CHECK(g.fd >= 0);
	CHECK_INT(unlink(path), 0);
	CHECK_INT(blob_gz_publish(dir, sha, &g), ENOENT);
	CHECK_INT(file_size(gz), -1);
	CHECK(tmp_empty());
	CHECK_INT(blob_gz_prepare(dir, sha, sizeof(page), &g), ENOENT);
	/* bytes under its name that are not its own make no copy of them */
	CHECK_INT(blob_put(dir, page, sizeof(page), sha), 0);
	f = fopen(path, "r+");
	CHECK(f != NULL);
	if (f) {
		fputc('X', f);
		fclose(f);
	}
	CHECK_INT(blob_gz_prepare(dir, sha, sizeof(page), &g), EINVAL);
	CHECK_INT(g.fd, -1);
	CHECK_INT(file_size(gz), -1);
	/* nor one of a blob bigger than the caller takes */
	CHECK_INT(unlink(path), 0);
	CHECK_INT(blob_put(dir, page, sizeof(page), sha), 0);
	CHECK_INT(blob_gz_prepare(dir, sha, sizeof(page) - 1, &g), EFBIG);
	CHECK_INT(file_size(gz), -1);
	CHECK(tmp_empty());
	CHECK_INT(blob_remove(dir, sha), 0);
}

static int rm_tree(const char *top)
{
	char cmd[PATH_MAX + 16];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", top);
	return system(cmd);
}

int main(void)
{
	if (!mkdtemp(dir) || blob_init(dir))
		return 1;
	RUN(page_gets_copy);
	RUN(kept_page_survives_a_collector);
	RUN(put_fd_from_an_unlinked_upload);
	RUN(incompressible_has_none);
	RUN(copy_made_later);
	rm_tree(dir);
	return t_done();
}
