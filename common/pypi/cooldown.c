/* cooldown: files held back for being too new. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/dist/distname.h"
#include "common/isotime.h"
#include "common/names.h"
#include "common/pypi/cooldown.h"

void cooldown_of(const struct conf *c, const struct conf_index *ix,
                 struct cooldown *cd)
{
	memset(cd, 0, sizeof(*cd));
	cd->exempt = "";
	if (ix->type != CONF_INDEX_CACHE)
		return;
	cd->min_age = conf_inherit(ix->min_release_age, c->min_release_age);
	cd->exclude_newer = conf_inherit(ix->exclude_newer, c->exclude_newer);
	cd->exempt = ix->release_age_exempt ? ix->release_age_exempt
	                                    : c->release_age_exempt;
	if (!cd->exempt)
		cd->exempt = "";
}

int cooldown_active(const struct cooldown *cd)
{
	return cd->min_age > 0 || cd->exclude_newer > 0;
}

const char *cooldown_holds(const struct cooldown *cd, const char *project,
                           long long upload, long long now,
                           long long *mature)
{
	if (mature)
		*mature = -1;
	if (!cooldown_active(cd) ||
	    (*cd->exempt && project && *project &&
	     names_globs_match(cd->exempt, project)))
		return NULL;
	if (upload < 0)
		return cd->min_age > 0 ? "min_release_age" : "exclude_newer";
	if (cd->exclude_newer > 0 && upload > cd->exclude_newer)
		return "exclude_newer";
	if (cd->min_age > 0 && now < upload + cd->min_age) {
		if (mature)
			*mature = upload + cd->min_age;
		return "min_release_age";
	}
	return NULL;
}

/* Seconds as the config would say them: "7d", "36h", "90m", "45s". */
static void duration(long long s, char *out, size_t len)
{
	if (s % 86400 == 0)
		snprintf(out, len, "%lldd", s / 86400);
	else if (s % 3600 == 0)
		snprintf(out, len, "%lldh", s / 3600);
	else if (s % 60 == 0)
		snprintf(out, len, "%lldm", s / 60);
	else
		snprintf(out, len, "%llds", s);
}

/* An age for people: "5 minutes", "2 days". */
static void age(long long s, char *out, size_t len)
{
	if (s < 0)
		s = 0;
	if (s >= 2 * 86400)
		snprintf(out, len, "%lld days", s / 86400);
	else if (s >= 2 * 3600)
		snprintf(out, len, "%lld hours", s / 3600);
	else if (s >= 120)
		snprintf(out, len, "%lld minutes", s / 60);
	else
		snprintf(out, len, "%lld seconds", s);
}

void cooldown_reason(const struct cooldown *cd, const char *key,
                     long long upload, long long now, char *out, size_t len)
{
	char setting[32], when[ISOTIME_LEN], ago[32];
	int newer = !strcmp(key, "exclude_newer");

	if (newer)
		isotime_format(cd->exclude_newer, setting);
	else
		duration(cd->min_age, setting, sizeof(setting));
	if (upload < 0) {
		snprintf(out, len,
		         "held back by %s = %s: the index gave no upload time",
		         key, setting);
		return;
	}
	isotime_format(upload, when);
	age(now - upload, ago, sizeof(ago));
	snprintf(out, len, "held back by %s = %s: uploaded %s, %s ago", key,
	         setting, when, ago);
}

/* The upload time of f, -1 when it has none that parses. */
static long long upload_of(const struct simple_file *f)
{
	long long t;

	if (!f->upload_time ||
	    isotime_parse(f->upload_time, strlen(f->upload_time), &t))
		return -1;
	return t;
}

typedef char version_t[DISTNAME_VERSION_MAX];

static int cmp_version(const void *a, const void *b)
{
	return strcmp(*(const version_t *)a, *(const version_t *)b);
}

/* The canonical versions of files' names that parse, sorted, in *out
 * (the caller's to free). Returns 0 or ENOMEM. */
static int versions_of(const struct simple_file *files, size_t n,
                       version_t **out, size_t *nout)
{
	struct distname d;
	version_t *v = malloc((n ? n : 1) * sizeof(*v));
	size_t k = 0;

	if (!v)
		return ENOMEM;
	for (size_t i = 0; i < n; i++)
		if (distname_parse(files[i].filename, &d) == 0 &&
		    distname_version_canon(d.version, v[k], sizeof(v[k])) == 0)
			k++;
	qsort(v, k, sizeof(*v), cmp_version);
	*out = v;
	*nout = k;
	return 0;
}

static int has_version(version_t *v, size_t n, const char *canon)
{
	version_t key;

	snprintf(key, sizeof(key), "%s", canon);
	return bsearch(key, v, n, sizeof(*v), cmp_version) != NULL;
}

/* Drops the versions of page that held has and page's files do not. */
static int drop_versions(struct simple_page *page,
                         const struct simple_page *held)
{
	version_t *kept = NULL, *gone = NULL, canon;
	size_t nkept = 0, ngone = 0, w = 0;
	int err;

	err = versions_of(page->files, page->nfiles, &kept, &nkept);
	if (!err)
		err = versions_of(held->files, held->nfiles, &gone, &ngone);
	if (err)
		goto out;
	for (size_t i = 0; i < page->nversions; i++) {
		if (distname_version_canon(page->versions[i], canon,
		                           sizeof(canon)) == 0 &&
		    has_version(gone, ngone, canon) &&
		    !has_version(kept, nkept, canon)) {
			free(page->versions[i]);
			continue;
		}
		page->versions[w++] = page->versions[i];
	}
	page->nversions = w;
out:
	free(kept);
	free(gone);
	return err;
}

int cooldown_split(const struct cooldown *cd, const char *project,
                   struct simple_page *page, long long now,
                   struct simple_page *held, long long *next)
{
	size_t n = 0, w = 0;
	long long mature;

	memset(held, 0, sizeof(*held));
	*next = -1;
	if (!cooldown_active(cd) || page->is_list)
		return 0;
	for (size_t i = 0; i < page->nfiles; i++)
		n += cooldown_holds(cd, project, upload_of(&page->files[i]), now,
		                    NULL) != NULL;
	if (n == 0)
		return 0;
	held->files = malloc(n * sizeof(*held->files));
	if (!held->files)
		return ENOMEM;
	for (size_t i = 0; i < page->nfiles; i++) {
		struct simple_file *f = &page->files[i];

		if (!cooldown_holds(cd, project, upload_of(f), now, &mature)) {
			page->files[w++] = *f;
			continue;
		}
		held->files[held->nfiles++] = *f;
		if (mature >= 0 && (*next < 0 || mature < *next))
			*next = mature;
	}
	page->nfiles = w;
	/* the versions are only what the files say: a failure to trim them
	 * leaves a list that is longer than it could be, never a file */
	if (page->nversions)
		drop_versions(page, held);
	return 0;
}
