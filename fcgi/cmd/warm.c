#include "config.h"

#include <curl/curl.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/dist/requirements.h"
#include "common/dist/wheeltag.h"
#include "common/oci/manifest.h"
#include "fcgi/cmd/warm.h"
#include "fcgi/cmd/warm_http.h"
#include "fcgi/cmd/warm_pick.h"

#define MAX_ARGS  64
#define MAX_FILES 256 /* requirement files, includes counted */
#define MAX_DEPTH 16
#define MAX_FILE  (64 * 1024 * 1024)

#define JSON_ACCEPT "application/vnd.pypi.simple.v1+json"
#define OCI_ACCEPT                                                             \
	"application/vnd.oci.image.index.v1+json, "                            \
	"application/vnd.oci.image.manifest.v1+json, "                         \
	"application/vnd.docker.distribution.manifest.list.v2+json, "          \
	"application/vnd.docker.distribution.manifest.v2+json"

struct opts {
	const char *base, *index;
	const char *reqs[MAX_ARGS], *pythons[MAX_ARGS], *plats[MAX_ARGS];
	const char *images[MAX_ARGS], *iplats[MAX_ARGS];
	size_t nreqs, npythons, nplats, nimages, niplats;
	int jobs, skip_unpinned, tty;
};

/* A requirement file read, and where it came from. */
struct reqfile {
	char path[PATH_MAX];
	struct requirements r;
};

/* One run: files read, targets, jobs, failures. */
struct run {
	struct opts *o;
	struct reqfile *files[MAX_FILES];
	size_t nfiles;
	struct wheeltag_target *targets;
	struct req_env *envs;
	size_t ntargets;
	struct warm_job **jobs;
	size_t njobs;
	long failures;
	long pages; /* of t.done, pages and manifests */
	struct warm_totals t;
};

static void usage(FILE *f)
{
	fputs("usage: larder warm [--url BASE] [--index NAME] -r FILE "
	      "[-r FILE ...]\n"
	      "                   [--python VERSION ...] [--platform TAG ...] "
	      "[--jobs N]\n"
	      "                   [--skip-unpinned]\n"
	      "       larder warm [--url BASE] --image REF [--image REF ...]\n"
	      "                   [--image-platform OS/ARCH[/VARIANT] ...] "
	      "[--jobs N]\n"
	      "BASE defaults to $LARDER_URL, else http://127.0.0.1/; NAME to "
	      "root/pypi;\nVERSION to 3.12; TAG to manylinux_2_17_x86_64; "
	      "OS/ARCH to linux/amd64.\n",
	      f);
}

static int add_arg(const char **v, size_t *n, const char *a)
{
	if (*n >= MAX_ARGS) {
		fprintf(stderr, "larder warm: more than %d of an option\n",
		        MAX_ARGS);
		return -1;
	}
	v[(*n)++] = a;
	return 0;
}

static int parse_args(int argc, char **argv, struct opts *o)
{
	memset(o, 0, sizeof(*o));
	o->base = getenv("LARDER_URL");
	if (!o->base || !*o->base)
		o->base = "http://127.0.0.1/";
	o->index = "root/pypi";
	o->jobs = 4;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		int rc = 0;

		if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0)
			return 1;
		if (strcmp(a, "--skip-unpinned") == 0) {
			o->skip_unpinned = 1;
			continue;
		}
		if (!v)
			return -1;
		i++;
		if (strcmp(a, "--url") == 0)
			o->base = v;
		else if (strcmp(a, "--index") == 0)
			o->index = v;
		else if (strcmp(a, "-r") == 0 ||
		         strcmp(a, "--requirement") == 0)
			rc = add_arg(o->reqs, &o->nreqs, v);
		else if (strcmp(a, "--python") == 0)
			rc = add_arg(o->pythons, &o->npythons, v);
		else if (strcmp(a, "--platform") == 0)
			rc = add_arg(o->plats, &o->nplats, v);
		else if (strcmp(a, "--image") == 0)
			rc = add_arg(o->images, &o->nimages, v);
		else if (strcmp(a, "--image-platform") == 0)
			rc = add_arg(o->iplats, &o->niplats, v);
		else if (strcmp(a, "--jobs") == 0 || strcmp(a, "-j") == 0) {
			char *end;
			long n = strtol(v, &end, 10);

			if (*end || n < 1 || n > 64)
				return -1;
			o->jobs = (int)n;
		} else
			return -1;
		if (rc)
			return -1;
	}
	if (!o->nreqs == !o->nimages)
		return -1;
	if (!o->npythons)
		o->pythons[o->npythons++] = "3.12";
	if (!o->nplats)
		o->plats[o->nplats++] = "manylinux_2_17_x86_64";
	if (!o->niplats)
		o->iplats[o->niplats++] = "linux/amd64";
	return 0;
}

/* BASE + path, with one '/' between. Returns 0 or ENOMEM/E2BIG. */
static int join(struct buf *b, const char *base, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int join(struct buf *b, const char *base, const char *fmt, ...)
{
	size_t n = strlen(base);
	va_list ap;
	int rc;

	buf_reset(b);
	rc = buf_add(b, base, n && base[n - 1] == '/' ? n - 1 : n);
	if (!rc)
		rc = buf_adds(b, "/");
	va_start(ap, fmt);
	if (!rc)
		rc = buf_vaddf(b, fmt, ap);
	va_end(ap);
	return rc;
}

/* ---------------------------------------------------------- requirements */

static int read_whole(const char *path, struct buf *b)
{
	char chunk[65536];
	FILE *f = fopen(path, "rb");
	size_t n;
	int rc = 0;

	if (!f)
		return errno;
	while (!rc && (n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		rc = buf_add(b, chunk, n);
	if (!rc && ferror(f))
		rc = EIO;
	fclose(f);
	return rc;
}

/* Reads path (and what it includes) into run->files. Returns 0, or 2 after
 * saying what is wrong. */
static int load(struct run *run, const char *path, int depth)
{
	char err[512] = "", dir[PATH_MAX], inc[PATH_MAX], *slash;
	struct reqfile *f;
	struct buf b;
	int rc;

	if (depth > MAX_DEPTH || run->nfiles >= MAX_FILES) {
		fprintf(stderr, "larder warm: %s: includes nested too deep\n",
		        path);
		return 2;
	}
	f = calloc(1, sizeof(*f));
	if (!f)
		return 2;
	run->files[run->nfiles++] = f;
	snprintf(f->path, sizeof(f->path), "%s", path);
	buf_init(&b, MAX_FILE);
	rc = read_whole(path, &b);
	if (rc) {
		fprintf(stderr, "larder warm: %s: %s\n", path, strerror(rc));
		buf_free(&b);
		return 2;
	}
	rc = requirements_parse(b.data ? b.data : "", b.len, &f->r, err,
	                        sizeof(err));
	buf_free(&b);
	if (rc) {
		fprintf(stderr, "larder warm: %s: %s\n", path,
		        err[0] ? err : strerror(rc));
		return 2;
	}
	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (slash)
		slash[1] = '\0';
	else
		dir[0] = '\0';
	for (size_t i = 0; i < f->r.n; i++) {
		const struct req_entry *e = &f->r.v[i];

		switch (e->kind) {
		case REQ_INCLUDE:
		case REQ_CONSTRAINT:
			if (e->text[0] == '/')
				snprintf(inc, sizeof(inc), "%s", e->text);
			else
				snprintf(inc, sizeof(inc), "%s%s", dir,
				         e->text);
			rc = load(run, inc, depth + 1);
			if (rc)
				return rc;
			break;
		case REQ_OPTION:
			fprintf(stderr,
			        "larder warm: %s:%d: ignored (larder is the "
			        "index): %s\n",
			        path, e->line, e->text);
			break;
		case REQ_UNPINNED:
			fprintf(stderr,
			        "larder warm: %s:%d: not pinned "
			        "(name==version): %s%s\n",
			        path, e->line, e->text,
			        run->o->skip_unpinned ? ", skipped" : "");
			if (!run->o->skip_unpinned)
				return 2;
			break;
		case REQ_PIN:
			break;
		}
	}
	return 0;
}

/* The marker environment of a platform tag; NULL fields are unknown. */
static void env_of(struct req_env *e, const char *python, const char *plat)
{
	static char full[MAX_ARGS][24];
	static size_t nfull;

	memset(e, 0, sizeof(*e));
	e->python_version = python;
	if (nfull < MAX_ARGS) {
		snprintf(full[nfull], sizeof(full[0]), "%s.0", python);
		e->python_full_version = full[nfull++];
	}
	e->implementation_name = "cpython";
	if (strstr(plat, "linux")) {
		e->sys_platform = "linux";
		e->platform_system = "Linux";
		e->os_name = "posix";
	} else if (strncmp(plat, "macosx", 6) == 0) {
		e->sys_platform = "darwin";
		e->platform_system = "Darwin";
		e->os_name = "posix";
	} else if (strncmp(plat, "win", 3) == 0) {
		e->sys_platform = "win32";
		e->platform_system = "Windows";
		e->os_name = "nt";
	}
	if (strstr(plat, "x86_64"))
		e->platform_machine = "x86_64";
	else if (strstr(plat, "aarch64"))
		e->platform_machine = "aarch64";
	else if (strstr(plat, "arm64"))
		e->platform_machine = "arm64";
	else if (strcmp(plat, "win_amd64") == 0)
		e->platform_machine = "AMD64";
}

static int add_job(struct run *run, struct warm_job *j)
{
	struct warm_job **v;

	if (!j)
		return ENOMEM;
	v = realloc(run->jobs, (run->njobs + 1) * sizeof(*v));
	if (!v) {
		warm_job_free(j);
		return ENOMEM;
	}
	run->jobs = v;
	run->jobs[run->njobs++] = j;
	return 0;
}

static void drop_jobs(struct run *run)
{
	for (size_t i = 0; i < run->njobs; i++)
		warm_job_free(run->jobs[i]);
	free(run->jobs);
	run->jobs = NULL;
	run->njobs = 0;
}

static int have_url(struct run *run, const char *url)
{
	for (size_t i = 0; i < run->njobs; i++)
		if (strcmp(run->jobs[i]->url, url) == 0)
			return 1;
	return 0;
}

static void fail(struct run *run, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void fail(struct run *run, const char *fmt, ...)
{
	va_list ap;

	fputs("warm: FAILED ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	run->failures++;
}

/* The file jobs of one pinned requirement on its project's page. */
static int pick_files(struct run *run, const struct reqfile *f,
                      const struct req_entry *e, const struct warm_page *page,
                      struct warm_job ***files, size_t *nfiles)
{
	static const char *const why[] = {
	    "",
	    "no file of that version on the page",
	    "no file of that version has a hash of the --hash list",
	    "no wheel fits and there is no sdist",
	    "the Requires-Python of every file of it excludes this Python",
	};

	for (size_t t = 0; t < run->ntargets; t++) {
		const struct warm_file *wf;
		struct warm_job *j, **v;
		long k;

		if (!requirements_marker(e->marker, &run->envs[t]))
			continue;
		k = warm_pick(page, e->name, e->version,
		              (const char(*)[65])e->hashes, e->nhashes,
		              &run->targets[t]);
		if (k < 0) {
			fail(run, "%s:%d: %s==%s for %s %s: %s", f->path,
			     e->line, e->name, e->version,
			     run->targets[t].python, run->targets[t].platform,
			     why[-k]);
			continue;
		}
		wf = &page->v[k];
		for (int m = 0; m < 1 + wf->has_meta; m++) {
			const char *sfx = m ? ".metadata" : "";
			char url[8192], label[600];
			int dup = 0;

			snprintf(url, sizeof(url), "%s%s", wf->url, sfx);
			snprintf(label, sizeof(label), "%s%s", wf->filename,
			         sfx);
			for (size_t i = 0; i < *nfiles; i++)
				dup |= strcmp((*files)[i]->url, url) == 0;
			if (dup)
				continue;
			j = warm_job_new(url, label);
			if (!j)
				return ENOMEM;
			memcpy(j->want, m ? wf->meta_sha256 : wf->sha256, 65);
			v = realloc(*files, (*nfiles + 1) * sizeof(*v));
			if (!v) {
				warm_job_free(j);
				return ENOMEM;
			}
			*files = v;
			v[(*nfiles)++] = j;
		}
	}
	return 0;
}

/* Whether e's marker holds for any target. */
static int wanted(const struct run *run, const struct req_entry *e)
{
	for (size_t t = 0; t < run->ntargets; t++)
		if (requirements_marker(e->marker, &run->envs[t]))
			return 1;
	return 0;
}

static int warm_requirements(struct run *run)
{
	struct warm_job **files = NULL;
	size_t nfiles = 0;
	struct buf url;
	int rc = 0;

	buf_init(&url, 1 << 16);
	/* the pages, one per project */
	for (size_t i = 0; i < run->nfiles && !rc; i++)
		for (size_t k = 0; k < run->files[i]->r.n && !rc; k++) {
			const struct req_entry *e = &run->files[i]->r.v[k];
			struct warm_job *j;

			if (e->kind != REQ_PIN || !wanted(run, e))
				continue;
			rc = join(&url, run->o->base, "%s/simple/%s/",
			          run->o->index, e->name);
			if (rc || have_url(run, buf_str(&url)))
				continue;
			j = warm_job_new(buf_str(&url), e->name);
			if (j) {
				j->accept = JSON_ACCEPT;
				j->keep = 1;
			}
			rc = add_job(run, j);
		}
	if (!rc)
		rc = warm_http_run(run->jobs, run->njobs, run->o->jobs,
		                   run->o->tty, "pages", &run->t);
	run->failures += run->t.failed;
	run->pages = run->t.done;
	/* each requirement's files on its page */
	for (size_t i = 0; i < run->nfiles && !rc; i++)
		for (size_t k = 0; k < run->files[i]->r.n && !rc; k++) {
			const struct req_entry *e = &run->files[i]->r.v[k];
			struct warm_job *pj = NULL;
			struct warm_page page;
			char err[256] = "";

			if (e->kind != REQ_PIN || !wanted(run, e))
				continue;
			for (size_t p = 0; p < run->njobs; p++)
				if (strcmp(run->jobs[p]->label, e->name) == 0)
					pj = run->jobs[p];
			if (!pj || pj->failed)
				continue; /* named already */
			rc = warm_page_parse(buf_str(&pj->body), pj->body.len,
			                     pj->url, &page, err, sizeof(err));
			if (rc == EINVAL) {
				fail(run, "%s: %s", pj->url, err);
				pj->failed = 1;
				rc = 0;
			} else if (!rc) {
				rc = pick_files(run, run->files[i], e, &page,
				                &files, &nfiles);
			}
			warm_page_free(&page);
		}
	if (!rc) {
		long before = run->t.failed;

		rc = warm_http_run(files, nfiles, run->o->jobs, run->o->tty,
		                   "files", &run->t);
		run->failures += run->t.failed - before;
	}
	for (size_t i = 0; i < nfiles; i++)
		warm_job_free(files[i]);
	free(files);
	buf_free(&url);
	return rc;
}

/* ---------------------------------------------------------------- images */

/* Splits REF into the repository and a tag or digest. Returns 0 or -1. */
static int split_image(const char *ref, char *name, size_t namelen, char *tag,
                       size_t taglen)
{
	const char *at = strchr(ref, '@'), *slash = strrchr(ref, '/');
	const char *colon = strrchr(ref, ':');
	size_t n;

	if (at) {
		n = (size_t)(at - ref);
		snprintf(tag, taglen, "%s", at + 1);
	} else if (colon && (!slash || colon > slash)) {
		n = (size_t)(colon - ref);
		snprintf(tag, taglen, "%s", colon + 1);
	} else {
		n = strlen(ref);
		snprintf(tag, taglen, "latest");
	}
	if (!n || n >= namelen || !*tag || !oci_name_valid(ref, n))
		return -1;
	memcpy(name, ref, n);
	name[n] = '\0';
	return (at ? oci_digest_check(tag, strlen(tag)) == 0
	           : oci_tag_valid(tag, strlen(tag)))
	           ? 0
	           : -1;
}

/* A GET of NAME's manifest or blob REF (a digest is checked). */
static int image_job(struct run *run, const char *name, const char *kind,
                     const char *ref, int manifest)
{
	char label[OCI_MAX_NAME + OCI_MAX_DIGEST + 2];
	struct warm_job *j;
	struct buf u;
	int rc;

	if (!manifest)
		for (size_t i = 0; i < run->njobs; i++)
			if (strcmp(run->jobs[i]->label, ref) == 0)
				return 0; /* a blob two manifests share */
	buf_init(&u, 1 << 14);
	rc = join(&u, run->o->base, "v2/%s/%s/%s", name, kind, ref);
	if (!rc && manifest) {
		snprintf(label, sizeof(label), "%s%s%s", name,
		         strchr(ref, ':') ? "@" : ":", ref);
		j = warm_job_new(buf_str(&u), label);
	} else {
		j = rc ? NULL : warm_job_new(buf_str(&u), ref);
	}
	buf_free(&u);
	if (!j)
		return ENOMEM;
	if (strncmp(ref, "sha256:", 7) == 0 && strlen(ref) == 71)
		memcpy(j->want, ref + 7, 65);
	if (manifest) {
		j->accept = OCI_ACCEPT;
		j->keep = 1;
	}
	return add_job(run, j);
}

/* Runs the manifest jobs from first on, parsing each into m[]. */
static int run_manifests(struct run *run, size_t first, struct oci_manifest *m,
                         int *ok)
{
	long before = run->t.failed, done = run->t.done;
	int rc;

	rc = warm_http_run(run->jobs + first, run->njobs - first, run->o->jobs,
	                   run->o->tty, "manifests", &run->t);
	run->failures += run->t.failed - before;
	run->pages += run->t.done - done;
	for (size_t i = first; i < run->njobs && !rc; i++) {
		struct warm_job *j = run->jobs[i];
		char err[256] = "";

		ok[i - first] = 0;
		if (j->failed)
			continue;
		if (oci_manifest_parse(buf_str(&j->body), j->body.len,
		                       j->content_type, &m[i - first], err,
		                       sizeof(err)) == 0)
			ok[i - first] = 1;
		else
			fail(run, "%s: %s", j->url, err);
	}
	return rc;
}

static int blobs_of(struct run *run, const char *name,
                    const struct oci_manifest *m)
{
	int rc = 0;

	if (m->config.digest[0])
		rc = image_job(run, name, "blobs", m->config.digest, 0);
	for (size_t i = 0; i < m->n && !rc; i++)
		rc = image_job(run, name, "blobs", m->desc[i].digest, 0);
	return rc;
}

static int warm_image(struct run *run, const char *ref)
{
	char name[OCI_MAX_NAME + 1], tag[OCI_MAX_DIGEST + 1];
	struct oci_manifest top, kids[MAX_ARGS];
	int ok = 0, kid_ok[MAX_ARGS], rc;
	size_t first;

	memset(&top, 0, sizeof(top));
	memset(kids, 0, sizeof(kids));
	if (split_image(ref, name, sizeof(name), tag, sizeof(tag))) {
		fail(run, "%s: not NAME[:TAG] or NAME@DIGEST", ref);
		return 0;
	}
	drop_jobs(run);
	rc = image_job(run, name, "manifests", tag, 1);
	if (!rc)
		rc = run_manifests(run, 0, &top, &ok);
	if (rc || !ok)
		goto out;
	first = run->njobs;
	if (top.is_index) {
		for (size_t i = 0; i < run->o->niplats && !rc; i++) {
			char os[32] = "", arch[32] = "", var[32] = "";
			int k;

			sscanf(run->o->iplats[i], "%31[^/]/%31[^/]/%31s", os,
			       arch, var);
			k = oci_index_pick(&top, os, arch, var);
			if (k < 0)
				fail(run, "%s: no %s image in the index", ref,
				     run->o->iplats[i]);
			else
				rc = image_job(run, name, "manifests",
				               top.desc[k].digest, 1);
		}
		if (!rc)
			rc = run_manifests(run, first, kids, kid_ok);
		for (size_t i = first; i < run->njobs && !rc; i++)
			if (kid_ok[i - first])
				rc = blobs_of(run, name, &kids[i - first]);
	} else {
		rc = blobs_of(run, name, &top);
	}
	/* the blobs are the jobs after the manifests */
	for (first = 0; first < run->njobs && run->jobs[first]->keep; first++)
		;
	if (!rc) {
		long before = run->t.failed;

		rc = warm_http_run(run->jobs + first, run->njobs - first,
		                   run->o->jobs, run->o->tty, "blobs", &run->t);
		run->failures += run->t.failed - before;
	}
out:
	oci_manifest_free(&top);
	for (size_t i = 0; i < MAX_ARGS; i++)
		oci_manifest_free(&kids[i]);
	drop_jobs(run);
	return rc;
}

/* ------------------------------------------------------------------ main */

static int make_targets(struct run *run)
{
	struct opts *o = run->o;
	size_t n = o->npythons * o->nplats;

	run->targets = calloc(n, sizeof(*run->targets));
	run->envs = calloc(n, sizeof(*run->envs));
	if (!run->targets || !run->envs)
		return ENOMEM;
	for (size_t i = 0; i < o->npythons; i++)
		for (size_t k = 0; k < o->nplats; k++) {
			int rc =
			    wheeltag_target_init(&run->targets[run->ntargets],
			                         o->pythons[i], o->plats[k]);

			if (rc) {
				fprintf(stderr,
				        "larder warm: --python %s --platform "
				        "%s: %s\n",
				        o->pythons[i], o->plats[k],
				        rc == EINVAL ? "not a CPython 3.N "
				                       "version and platform "
				                       "tag"
				                     : strerror(rc));
				return rc;
			}
			env_of(&run->envs[run->ntargets++], o->pythons[i],
			       o->plats[k]);
		}
	return 0;
}

int warm_main(int argc, char **argv)
{
	struct opts o;
	struct run run;
	char b[32];
	int rc = 0, status;

	rc = parse_args(argc, argv, &o);
	if (rc) {
		usage(rc > 0 ? stdout : stderr);
		return rc > 0 ? 0 : 2;
	}
	memset(&run, 0, sizeof(run));
	run.o = &o;
	o.tty = isatty(2);
	if (o.nreqs) {
		for (size_t i = 0; i < o.nreqs && !rc; i++)
			rc = load(&run, o.reqs[i], 0);
		if (!rc && make_targets(&run))
			rc = 2;
		if (rc) {
			status = 2;
			goto out;
		}
	}
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		fprintf(stderr, "larder warm: libcurl would not start\n");
		status = 1;
		goto out;
	}
	if (o.nreqs)
		rc = warm_requirements(&run);
	for (size_t i = 0; i < o.nimages && !rc; i++)
		rc = warm_image(&run, o.images[i]);
	curl_global_cleanup();
	if (rc)
		fprintf(stderr, "larder warm: %s\n", strerror(rc));
	{
		long long bytes = run.t.bytes;
		double v = (double)bytes;
		int u = 0;

		while (v >= 1024 && u < 3) {
			v /= 1024;
			u++;
		}
		snprintf(b, sizeof(b), "%.1f %s", v,
		         (const char *[]){"B", "KiB", "MiB", "GiB"}[u]);
	}
	printf("warm: %ld %s and %ld %s (%s): %ld already cached, %ld "
	       "from upstream, %ld unsaid; %ld failed\n",
	       run.pages, o.nreqs ? "pages" : "manifests",
	       run.t.done - run.pages, o.nreqs ? "files" : "blobs", b,
	       run.t.hit, run.t.miss, run.t.unsaid, run.failures);
	status = rc || run.failures ? 1 : 0;
out:
	drop_jobs(&run);
	for (size_t i = 0; i < run.nfiles; i++) {
		requirements_free(&run.files[i]->r);
		free(run.files[i]);
	}
	for (size_t i = 0; i < run.ntargets; i++)
		wheeltag_target_free(&run.targets[i]);
	free(run.targets);
	free(run.envs);
	return status;
}
