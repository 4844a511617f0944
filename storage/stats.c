#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "storage/stats.h"

#define MAGIC "LRDSTAT\n"
/* Bump with any change of struct shm below. */
#define LAYOUT 5
/* How long an update waits for the lock before it is skipped. */
#define LOCK_WAIT_NS (50 * 1000000L)

struct top_list {
	uint64_t total;
	struct stats_top_entry e[STATS_TOP_SLOTS];
};

struct shm {
	char magic[8];
	uint32_t version;
	uint32_t size; /* sizeof(struct shm) */
	int64_t created;
	char boot[40];        /* the boot the lock was made in */
	pthread_mutex_t lock; /* the history's roll-over and the lists */
	uint64_t requests[STATS_NKINDS][STATS_NOUTCOMES];
	uint64_t counter[STATS_NCOUNTERS];
	struct stats_hour hours[STATS_HOURS];
	struct top_list top[STATS_NTOPS];
};

static struct shm *map;
static int64_t fixed_hour;

void stats_set_hour(int64_t hour)
{
	fixed_hour = hour;
}

static int64_t this_hour(void)
{
	return fixed_hour ? fixed_hour : (int64_t)time(NULL) / 3600;
}

static int valid(const struct shm *s)
{
	return memcmp(s->magic, MAGIC, 8) == 0 && s->version == LAYOUT &&
	       s->size == sizeof(struct shm);
}

/* This boot's id (/proc/sys/kernel/random/boot_id), "" when unknown. */
static void boot_id(char out[40])
{
	ssize_t n = -1;
	int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);

	if (fd >= 0) {
		n = read(fd, out, 39);
		close(fd);
	}
	if (n < 0)
		n = 0;
	out[n] = '\0';
	out[strcspn(out, "\n")] = '\0';
}

/* (Re)makes the lock: process-shared and robust, so that a process that
 * dies holding it hands it on. Returns 0 or an errno. */
static int lock_init(struct shm *s)
{
	pthread_mutexattr_t ma;
	int rc;

	pthread_mutexattr_init(&ma);
	pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
	pthread_mutexattr_setrobust(&ma, PTHREAD_MUTEX_ROBUST);
	rc = pthread_mutex_init(&s->lock, &ma);
	pthread_mutexattr_destroy(&ma);
	boot_id(s->boot);
	return rc;
}

/* A robust lock is handed on only by a kernel that saw its holder die: one
 * held when the machine went down (the file outlives boots) would be held
 * forever. The first process of a boot makes it again, under an flock of
 * the file so that no other does at the same time. */
static void lock_renew(struct shm *s, int fd)
{
	char now[40];

	boot_id(now);
	if (strcmp(now, s->boot) == 0 || flock(fd, LOCK_EX) < 0)
		return;
	if (strcmp(now, s->boot) != 0 && lock_init(s) == 0)
		log_info("stats: a new boot, the counters' lock made again");
	flock(fd, LOCK_UN);
}

/* Makes a fresh file at path: a temp file next to it, initialised, then
 * renamed over a torn one (replace), or linked where there is none, so
 * that of processes starting together all map the one that won. */
static int create(const char *path, int replace)
{
	char tmp[PATH_MAX];
	struct shm *s;
	int fd, rc = 0;

	if (snprintf(tmp, sizeof(tmp), "%s.%ld.tmp", path, (long)getpid()) >=
	    (int)sizeof(tmp))
		return ENAMETOOLONG;
	fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0 && errno == EEXIST && unlink(tmp) == 0)
		fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0)
		return errno;
	if (ftruncate(fd, sizeof(struct shm)) < 0) {
		rc = errno;
		goto out;
	}
	s = mmap(NULL, sizeof(*s), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (s == MAP_FAILED) {
		rc = errno;
		goto out;
	}
	rc = lock_init(s);
	s->version = LAYOUT;
	s->size = sizeof(struct shm);
	s->created = (int64_t)time(NULL);
	/* the magic last: a file cut short before here is torn */
	memcpy(s->magic, MAGIC, 8);
	if (!rc && msync(s, sizeof(*s), MS_SYNC) < 0)
		rc = errno;
	munmap(s, sizeof(*s));
	if (!rc && replace && rename(tmp, path) < 0)
		rc = errno;
	if (!rc && !replace && link(tmp, path) < 0 && errno != EEXIST)
		rc = errno;
out:
	close(fd);
	if (rc || !replace)
		unlink(tmp);
	return rc;
}

/* Maps path when it holds a valid file. Returns 0, ENOENT (none), or
 * EINVAL (torn or foreign), or another errno. */
static int attach(const char *path, struct shm **out)
{
	struct stat st;
	struct shm *s;
	int fd, rc = 0;

	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return errno;
	if (fstat(fd, &st) < 0) {
		rc = errno;
	} else if (st.st_size != (off_t)sizeof(struct shm)) {
		rc = EINVAL;
	} else {
		s = mmap(NULL, sizeof(*s), PROT_READ | PROT_WRITE, MAP_SHARED,
		         fd, 0);
		if (s == MAP_FAILED) {
			rc = errno;
		} else if (!valid(s)) {
			munmap(s, sizeof(*s));
			rc = EINVAL;
		} else {
			lock_renew(s, fd);
			*out = s;
		}
	}
	close(fd);
	return rc;
}

int stats_open(const char *data_dir)
{
	char path[PATH_MAX];
	struct shm *s = NULL;
	int rc;

	stats_close();
	if (snprintf(path, sizeof(path), "%s/stats.shm", data_dir) >=
	    (int)sizeof(path))
		return ENAMETOOLONG;
	rc = attach(path, &s);
	for (int tries = 0; rc == ENOENT || rc == EINVAL; tries++) {
		if (tries == 3)
			break;
		if (rc == EINVAL)
			log_warn(0, path,
			         "not a stats file of this larder: "
			         "starting a new one");
		rc = create(path, rc == EINVAL);
		if (!rc)
			rc = attach(path, &s);
	}
	if (rc) {
		log_error(rc, path, "stats file: counters are off");
		return rc;
	}
	map = s;
	return 0;
}

void stats_close(void)
{
	if (map)
		munmap(map, sizeof(*map));
	map = NULL;
}

static int lock(struct shm *s)
{
	struct timespec until;
	int rc;

	/* an update is skipped rather than wait long: the lists are an
	 * approximation anyway, and a request must never hang on them */
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_nsec += LOCK_WAIT_NS;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	rc = pthread_mutex_timedlock(&s->lock, &until);

	if (rc == EOWNERDEAD) {
		/* the holder died mid-update: the worst left is one list
		 * entry or one hour half-written, which is still numbers */
		pthread_mutex_consistent(&s->lock);
		rc = 0;
	}
	return rc;
}

/* This hour's slot in the history, rolled over when it held an older
 * hour. */
static struct stats_hour *hour_slot(struct shm *s)
{
	int64_t h = this_hour();
	struct stats_hour *slot = &s->hours[h % STATS_HOURS];

	if (__atomic_load_n(&slot->hour, __ATOMIC_ACQUIRE) == h)
		return slot;
	if (lock(s))
		return slot;
	if (slot->hour != h) {
		__atomic_store_n(&slot->requests, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&slot->hits, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&slot->served_bytes, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&slot->fetched_bytes, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&slot->hour, h, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&s->lock);
	return slot;
}

void stats_request(enum stats_kind kind, enum stats_outcome outcome)
{
	struct stats_hour *h;

	if (!map || kind >= STATS_NKINDS || outcome >= STATS_NOUTCOMES)
		return;
	__atomic_add_fetch(&map->requests[kind][outcome], 1, __ATOMIC_RELAXED);
	if (kind == STATS_OTHER)
		return;
	h = hour_slot(map);
	__atomic_add_fetch(&h->requests, 1, __ATOMIC_RELAXED);
	if (outcome == STATS_HIT || outcome == STATS_REVALIDATED ||
	    outcome == STATS_STALE)
		__atomic_add_fetch(&h->hits, 1, __ATOMIC_RELAXED);
}

void stats_add(enum stats_counter c, uint64_t n)
{
	struct stats_hour *h;

	if (!map || c >= STATS_NCOUNTERS || !n)
		return;
	__atomic_add_fetch(&map->counter[c], n, __ATOMIC_RELAXED);
	if (c != STATS_SERVED_BYTES && c != STATS_FETCHED_BYTES)
		return;
	h = hour_slot(map);
	__atomic_add_fetch(c == STATS_SERVED_BYTES ? &h->served_bytes
	                                           : &h->fetched_bytes,
	                   n, __ATOMIC_RELAXED);
}

void stats_top_add(enum stats_top t, const char *name)
{
	struct top_list *l;
	struct stats_top_entry *min = NULL, *e;

	if (!map || t >= STATS_NTOPS || !name || !*name || lock(map))
		return;
	l = &map->top[t];
	l->total++;
	for (int i = 0; i < STATS_TOP_SLOTS; i++) {
		e = &l->e[i];
		if (e->name[0] &&
		    strncmp(e->name, name, STATS_TOP_NAME - 1) == 0) {
			e->count++;
			goto done;
		}
		if (!min || e->count < min->count)
			min = e;
	}
	/* the least counted name (or an empty slot, count 0) makes room */
	min->error = min->count;
	min->count++;
	snprintf(min->name, sizeof(min->name), "%s", name);
done:
	pthread_mutex_unlock(&map->lock);
}

static int by_count(const void *a, const void *b)
{
	const struct stats_top_entry *x = a, *y = b;

	if (x->count != y->count)
		return x->count < y->count ? 1 : -1;
	return strcmp(x->name, y->name);
}

int stats_read(struct stats_snapshot *out)
{
	int64_t now = this_hour();

	memset(out, 0, sizeof(*out));
	for (int i = 0; i < STATS_HOURS; i++)
		out->hours[i].hour = now - STATS_HOURS + 1 + i;
	if (!map)
		return ENOENT;
	out->created = map->created;
	for (int k = 0; k < STATS_NKINDS; k++)
		for (int o = 0; o < STATS_NOUTCOMES; o++)
			out->requests[k][o] = __atomic_load_n(
			    &map->requests[k][o], __ATOMIC_RELAXED);
	for (int c = 0; c < STATS_NCOUNTERS; c++)
		out->counter[c] =
		    __atomic_load_n(&map->counter[c], __ATOMIC_RELAXED);
	for (int i = 0; i < STATS_HOURS; i++) {
		struct stats_hour *want = &out->hours[i];
		const struct stats_hour *h =
		    &map->hours[want->hour % STATS_HOURS];

		if (__atomic_load_n(&h->hour, __ATOMIC_ACQUIRE) != want->hour)
			continue;
		want->requests =
		    __atomic_load_n(&h->requests, __ATOMIC_RELAXED);
		want->hits = __atomic_load_n(&h->hits, __ATOMIC_RELAXED);
		want->served_bytes =
		    __atomic_load_n(&h->served_bytes, __ATOMIC_RELAXED);
		want->fetched_bytes =
		    __atomic_load_n(&h->fetched_bytes, __ATOMIC_RELAXED);
	}
	if (lock(map) == 0) {
		for (int t = 0; t < STATS_NTOPS; t++) {
			memcpy(out->top[t], map->top[t].e, sizeof(out->top[t]));
			out->top_total[t] = map->top[t].total;
		}
		pthread_mutex_unlock(&map->lock);
	}
	for (int t = 0; t < STATS_NTOPS; t++)
		qsort(out->top[t], STATS_TOP_SLOTS, sizeof(out->top[t][0]),
		      by_count);
	return 0;
}
