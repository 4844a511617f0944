#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "storage/lru.h"

#define MAGIC 0x314c52554452414cULL /* "LARDRUL1" little-endian */

struct head {
	uint64_t magic;
	uint64_t nslots;
	int64_t bytes;     /* running total, -1 unknown */
	int64_t folded_at; /* last fold into blobs.used_at */
	uint64_t spare[4];
};

struct slot {
	uint64_t key;
	int64_t at;
};

#define FILE_SIZE (sizeof(struct head) + LRU_SLOTS * sizeof(struct slot))

static struct head *head;
static struct slot *slots;
static char mapped_dir[PATH_MAX];
static int added;

#define LOAD(p)     __atomic_load_n(p, __ATOMIC_RELAXED)
#define STORE(p, v) __atomic_store_n(p, v, __ATOMIC_RELAXED)

/* Maps path if it is one of ours. Returns 0, or an errno (EBADF: not
 * ours). */
static int map(const char *path)
{
	struct stat st;
	void *p;
	int fd, err = 0;

	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return errno;
	if (fstat(fd, &st) < 0) {
		err = errno;
		goto out;
	}
	if ((size_t)st.st_size != FILE_SIZE) {
		err = EBADF;
		goto out;
	}
	p = mmap(NULL, FILE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		err = errno;
		goto out;
	}
	if (((struct head *)p)->magic != MAGIC ||
	    ((struct head *)p)->nslots != LRU_SLOTS) {
		munmap(p, FILE_SIZE);
		err = EBADF;
		goto out;
	}
	head = p;
	slots = (struct slot *)(head + 1);
out:
	close(fd);
	return err;
}

/* Writes a fresh table to a temp file and publishes it as path: with
 * link() when replace is 0 (whoever made one first wins), rename()
 * otherwise. Returns 0 or an errno. */
static int make(const char *data_dir, const char *path, int replace)
{
	struct head h = {.magic = MAGIC, .nslots = LRU_SLOTS, .bytes = -1};
	char tmp[PATH_MAX];
	int fd, err = 0;

	if ((size_t)snprintf(tmp, sizeof(tmp), "%s/lru.shm.%ld.tmp", data_dir,
	                     (long)getpid()) >= sizeof(tmp))
		return ENAMETOOLONG;
	fd = open(tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return errno;
	if (ftruncate(fd, (off_t)FILE_SIZE) < 0 ||
	    pwrite(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h))
		err = errno ? errno : EIO;
	close(fd);
	if (!err && replace && rename(tmp, path) < 0)
		err = errno;
	if (!err && !replace && link(tmp, path) < 0 && errno != EEXIST)
		err = errno;
	unlink(tmp);
	return err;
}

int lru_open(const char *data_dir)
{
	char path[PATH_MAX];
	int err;

	if (head && strcmp(mapped_dir, data_dir) == 0)
		return 0;
	lru_close();
	if ((size_t)snprintf(path, sizeof(path), "%s/lru.shm", data_dir) >=
	    sizeof(path))
		return ENAMETOOLONG;
	err = map(path);
	if (err == ENOENT) {
		err = make(data_dir, path, 0);
		if (!err)
			err = map(path);
	}
	if (err == EBADF) {
		log_warn(0, path, "not a use table of this larder: made anew");
		err = make(data_dir, path, 1);
		if (!err)
			err = map(path);
	}
	if (err) {
		log_error(err, path, "use table");
		return err;
	}
	snprintf(mapped_dir, sizeof(mapped_dir), "%s", data_dir);
	return 0;
}

int lru_ready(void)
{
	return head != NULL;
}

void lru_close(void)
{
	if (head)
		munmap(head, FILE_SIZE);
	head = NULL;
	slots = NULL;
	mapped_dir[0] = '\0';
}

/* The first 64 bits of a hex sha256, never 0; 0 for a bad name. */
static uint64_t key_of(const char *sha256)
{
	uint64_t k = 0;

	for (int i = 0; i < 16; i++) {
		char ch = sha256[i];
		int d;

		if (ch >= '0' && ch <= '9')
			d = ch - '0';
		else if (ch >= 'a' && ch <= 'f')
			d = ch - 'a' + 10;
		else
			return 0;
		k = k << 4 | (uint64_t)d;
	}
	return k ? k : 1;
}

void lru_touch(const char *sha256)
{
	uint64_t k = key_of(sha256), home, cur, zero;
	long long now = (long long)time(NULL);
	struct slot *s, *oldest = NULL;

	if (!head || !k)
		return;
	home = k % LRU_SLOTS;
	for (int i = 0; i < LRU_PROBE; i++) {
		s = &slots[(home + (uint64_t)i) % LRU_SLOTS];
		cur = LOAD(&s->key);
		zero = 0;
		if (cur == 0 && !__atomic_compare_exchange_n(
		                    &s->key, &zero, k, 0, __ATOMIC_RELAXED,
		                    __ATOMIC_RELAXED))
			cur = zero; /* someone took it meanwhile: whose? */
		else if (cur == 0)
			cur = k;
		if (cur == k) {
			if (LOAD(&s->at) < now)
				STORE(&s->at, now);
			return;
		}
		if (!oldest || LOAD(&s->at) < LOAD(&oldest->at))
			oldest = s;
	}
	/* the time first: a reader in between sees the old blob as used
	 * now, which only keeps it longer */
	STORE(&oldest->at, now);
	STORE(&oldest->key, k);
}

long long lru_get(const char *sha256)
{
	uint64_t k = key_of(sha256), home;
	struct slot *s;

	if (!head || !k)
		return 0;
	home = k % LRU_SLOTS;
	for (int i = 0; i < LRU_PROBE; i++) {
		s = &slots[(home + (uint64_t)i) % LRU_SLOTS];
		if (LOAD(&s->key) == k)
			return LOAD(&s->at);
	}
	return 0;
}

void lru_each(long long since,
              void (*fn)(const char prefix[17], long long at, void *ctx),
              void *ctx)
{
	char prefix[17];
	uint64_t k;
	long long at;

	for (size_t i = 0; head && i < LRU_SLOTS; i++) {
		k = LOAD(&slots[i].key);
		at = LOAD(&slots[i].at);
		if (!k || at < since)
			continue;
		snprintf(prefix, sizeof(prefix), "%016llx",
		         (unsigned long long)k);
		fn(prefix, at, ctx);
	}
}

void lru_added(long long size)
{
	added = 1;
	if (head && LOAD(&head->bytes) >= 0)
		__atomic_add_fetch(&head->bytes, size, __ATOMIC_RELAXED);
}

int lru_take_added(void)
{
	int was = added;

	added = 0;
	return was;
}

long long lru_bytes(void)
{
	return head ? LOAD(&head->bytes) : -1;
}

void lru_reset(long long bytes, long long folded_at)
{
	if (!head)
		return;
	STORE(&head->bytes, bytes);
	STORE(&head->folded_at, folded_at);
}

long long lru_folded_at(void)
{
	return head ? LOAD(&head->folded_at) : 0;
}
