/* policy_cmd: the policy commands (policy_cmd.h). */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/dist/distname.h"
#include "common/names.h"
#include "common/oci/policy.h"
#include "common/oci/ref.h"
#include "common/pypi/policy.h"
#include "common/pypi/policy_osv.h"
#include "fcgi/cmd/cmd.h"
#include "fcgi/cmd/policy_cmd.h"
#include "fcgi/pypi/license.h"
#include "fcgi/server/worker.h"
#include "storage/db/db.h"

/* The largest advisory file read. */
#define MAX_OSV_FILE (64L << 20)

static int usage(void)
{
	fputs("usage: larder policy import-osv [-c FILE] OSV.json...\n"
	      "       larder policy check [-c FILE] INDEX PROJECT [VERSION]\n"
	      "       larder policy check [-c FILE] REGISTRY IMAGE[:TAG]\n",
	      stderr);
	return 2;
}

/* Reads the whole of path into *out (malloc'd, NUL-terminated). Returns
 * 0 or an errno, with err set. */
static int slurp(const char *path, char **out, size_t *len, char *err,
                 size_t errlen)
{
	FILE *fp = fopen(path, "rb");
	char *data = NULL;
	long n;
	int rc = 0;

	*out = NULL;
	if (!fp) {
		rc = errno;
		snprintf(err, errlen, "%s: %s", path, strerror(rc));
		return rc;
	}
	if (fseek(fp, 0, SEEK_END) || (n = ftell(fp)) < 0 ||
	    fseek(fp, 0, SEEK_SET)) {
		rc = errno ? errno : EIO;
		snprintf(err, errlen, "%s: %s", path, strerror(rc));
		goto out;
	}
	if (n > MAX_OSV_FILE) {
		rc = EFBIG;
		snprintf(err, errlen, "%s: over 64 MB: one advisory a file, "
		         "as an OSV dump has them", path);
		goto out;
	}
	data = malloc((size_t)n + 1);
	if (!data) {
		rc = ENOMEM;
		snprintf(err, errlen, "%s: out of memory", path);
		goto out;
	}
	if (fread(data, 1, (size_t)n, fp) != (size_t)n) {
		rc = EIO;
		snprintf(err, errlen, "%s: short read", path);
		free(data);
		goto out;
	}
	data[n] = 0;
	*out = data;
	*len = (size_t)n;
out:
	fclose(fp);
	return rc;
}

struct import {
	struct db *db;
	long advisories, ranges;
};

static int import_one(const struct policy_osv *adv, void *ctx)
{
	struct import *im = ctx;
	const char **projects = NULL;
	int rc;

	if (adv->n) {
		projects = malloc(adv->n * sizeof(*projects));
		if (!projects)
			return ENOMEM;
		for (size_t i = 0; i < adv->n; i++)
			projects[i] = adv->project[i];
	}
	rc = db_osv_replace(im->db, adv->id, adv->range,
	                    (const char *const *)projects, adv->n);
	/* the pages of its projects are rendered again at their next
	 * request, by the advisories as they are now */
	for (size_t i = 0; !rc && i < adv->n; i++)
		rc = db_policy_expire(im->db, adv->project[i]);
	free(projects);
	im->advisories++;
	im->ranges += (long)adv->n;
	return rc;
}

/* The advisory files, read before the command becomes the store's owner
 * (who may not be able to read them). */
struct osv_files {
	int n;
	const char **name;
	char **data;   /* NULL: could not be read (said already) */
	size_t *len;
	int status;    /* 2 when one could not be read */
};

static int read_files(struct osv_files *of, int n, const char **names)
{
	char err[1024];

	of->n = n;
	of->name = names;
	of->data = calloc((size_t)n, sizeof(*of->data));
	of->len = calloc((size_t)n, sizeof(*of->len));
	if (!of->data || !of->len) {
		fputs("larder policy import-osv: out of memory\n", stderr);
		return ENOMEM;
	}
	for (int i = 0; i < n; i++) {
		if (slurp(names[i], &of->data[i], &of->len[i], err,
		          sizeof(err))) {
			fprintf(stderr, "larder policy import-osv: %s\n", err);
			of->status = 2;
		}
	}
	return 0;
}

static void free_files(struct osv_files *of)
{
	for (int i = 0; of->data && i < of->n; i++)
		free(of->data[i]);
	free(of->data);
	free(of->len);
}

/* larder policy import-osv FILE...: each file in its own transaction. */
static int import_osv(struct worker *w, const struct osv_files *of)
{
	struct import im = {.db = w->db};
	const char *const *files = of->name;
	char err[1024];
	int status = of->status, rc;

	for (int i = 0; i < of->n; i++) {
		long had = im.advisories, ranges = im.ranges;

		if (!of->data[i])
			continue;
		rc = db_begin(w->db);
		if (!rc)
			rc = policy_osv_parse(of->data[i], of->len[i],
			                      import_one, &im, err,
			                      sizeof(err));
		if (!rc)
			rc = db_commit(w->db);
		if (rc) {
			db_rollback(w->db);
			im.advisories = had;
			im.ranges = ranges;
			if (rc == EINVAL)
				fprintf(stderr, "larder policy import-osv: "
				        "%s: %s (nothing of it loaded)\n",
				        files[i], err);
			else
				fprintf(stderr, "larder policy import-osv: "
				        "%s: %s\n", files[i], strerror(rc));
			if (status < (rc == EINVAL ? 1 : 2))
				status = rc == EINVAL ? 1 : 2;
		}
	}
	printf("loaded %ld advisories (%ld PyPI ranges); %lld held\n",
	       im.advisories, im.ranges, db_osv_count(w->db));
	return status;
}

struct check {
	struct worker *w;
	const struct conf *conf;
	const struct conf_index *ix;
	const struct policy *pols;
	size_t npols;
	const char *project;
	const char *version; /* canonical, "" every one */
	const struct policy_vuln *vulns;
	size_t nvulns;
	int files, denied;
};

/* Prints what rule j (allow or deny, as written) did, decided the rule
 * that decided (-1 the default, -2 deny_vulnerable), done whether one
 * before it decided. Returns done for the next rule. */
static int print_rule(int allow, const char *text, int j, int decided,
                      int done)
{
	printf("    %s = %s: %s\n", allow ? "allow" : "deny", text,
	       done            ? "not reached" :
	       j == decided    ? (allow ? "matches: allows" : "matches: denies") :
	                         "does not match");
	return done || j == decided;
}

/* Prints what the default did, done whether a rule decided. */
static void print_default(int default_deny, int done)
{
	printf("    default = %s: %s\n", default_deny ? "deny" : "allow",
	       done ? "not reached" : "decides");
}
/* Prints what each rule of each policy says of filename, and the page's
 * decision (denied, as the files row holds it; NULL when none). */
static void check_file(const char *sha256, const char *filename,
                       const char *row, void *ctx)
{
	struct check *ck = ctx;
	struct policy_file f = {.project = ck->project, .filename = filename,
	                        .vulns = ck->vulns, .nvulns = ck->nvulns};
	char license[COREMETA_MAX_LICENSE];
	int wants = policy_wants_license(ck->pols, ck->npols);
	struct policy_verdict v;
	struct distname d;
	int any = 0;

	if (*ck->version &&
	    (distname_parse(filename, &d) ||
	     distname_version_canon(d.version, d.canon, sizeof(d.canon)) ||
	     strcmp(d.canon, ck->version)))
		return;
	ck->files++;
	printf("%s\n", filename);
	if (wants && license_of(ck->w, (int)(ck->ix - ck->conf->index), sha256,
	                        filename, NULL, license, sizeof(license))) {
		f.license = license;
		printf("  license: %s\n", license);
	} else if (wants) {
		printf("  license: not known (larder holds no metadata of it "
		       "yet, so no license= rule matches)\n");
	}
	for (size_t i = 0; i < ck->npols; i++) {
		const struct policy *p = &ck->pols[i];
		int deny = policy_decide(p, &f, &v), done = 0;

		any |= deny;
		printf("  policy \"%s\": %s\n", p->name,
		       deny ? "denies" : "allows");
		if (p->deny_vulnerable) {
			done = v.rule == -2;
			printf("    deny_vulnerable = yes: %s\n",
			       done ? v.reason : "no advisory names it");
		}
		for (size_t j = 0; j < p->nrules; j++)
			done = print_rule(p->rule[j].allow, p->rule[j].text,
			                  (int)j, v.rule, done);
		print_default(p->default_deny, done);
		if (deny)
			printf("    %s\n", v.reason);
	}
	ck->denied += any;
	if (row)
		printf("  when the page was rendered: %s\n",
		       *row ? row : "allowed");
}

static int check(struct worker *w, int idx, const char *project,
                 const char *version)
{
	const struct conf_index *ix = &w->conf->index[idx];
	struct check ck = {.w = w, .conf = w->conf, .ix = ix,
	                   .project = project,
	                   .version = ""};
	struct policy_vuln *vulns = NULL;
	struct policy *pols = NULL;
	char canon[DISTNAME_VERSION_MAX], name[512];
	size_t npols = 0, nvulns = 0;
	int rc;

	if (version && distname_version_canon(version, canon, sizeof(canon))) {
		fprintf(stderr, "larder policy check: %s is not a PEP 440 "
		        "version\n", version);
		return 2;
	}
	if (version)
		ck.version = canon;
	rc = policy_of(w->conf, ix, &pols, &npols);
	if (rc) {
		fprintf(stderr, "larder policy check: %s: its policies do not "
		        "compile: %s\n", ix->name, strerror(rc));
		return 2;
	}
	if (!npols) {
		printf("%s applies no policy: every file of %s is allowed\n",
		       ix->name, project);
		free(pols);
		return 0;
	}
	rc = db_osv_get(w->db, project, &vulns, &nvulns);
	if (rc) {
		fprintf(stderr, "larder policy check: reading the advisories: "
		        "%s\n", strerror(rc));
		free(pols);
		return 2;
	}
	ck.pols = pols;
	ck.npols = npols;
	ck.vulns = vulns;
	ck.nvulns = nvulns;
	rc = db_policy_files(w->db, ix->name, project, check_file, &ck);
	if (!rc && !ck.files && version) {
		/* no page of it fetched yet: its sdist as it would be named */
		snprintf(name, sizeof(name), "%s-%s.tar.gz", project, canon);
		check_file("", name, NULL, &ck);
		printf("  (no page of %s in %s yet: decided for its sdist's "
		       "name)\n", project, ix->name);
	} else if (!rc && !ck.files) {
		printf("no file of %s in %s yet: give a VERSION to check one\n",
		       project, ix->name);
	}
	free(vulns);
	free(pols);
	if (rc) {
		fprintf(stderr, "larder policy check: reading the files: %s\n",
		        strerror(rc));
		return 2;
	}
	return ck.denied ? 1 : 0;
}

/* What the policies of registry ri decide of image (REPO or REPO:TAG;
 * REPO alone: a manifest by digest no tag names), rule by rule. Returns
 * the exit status: 0 allowed, 1 denied, 2 a bad image or config. */
static int check_image(const struct conf *c, int ri, const char *image)
{
	const struct conf_registry *reg = &c->registry[ri];
	char repo[OCI_MAX_NAME + 1], tag[OCI_MAX_TAG + 1] = "";
	const char *colon = strchr(image, ':');
	size_t rn = colon ? (size_t)(colon - image) : strlen(image);
	struct oci_policy *pols = NULL;
	struct oci_policy_verdict v;
	size_t npols = 0;
	int any = 0, rc;

	if (!rn || rn > OCI_MAX_NAME || !oci_name_valid(image, rn) ||
	    (colon && !oci_tag_valid(colon + 1, strlen(colon + 1)))) {
		fprintf(stderr, "larder policy check: %s is not an image "
		        "name (REPO or REPO:TAG, like library/nginx:1.25)\n",
		        image);
		return 2;
	}
	memcpy(repo, image, rn);
	repo[rn] = 0;
	if (colon)
		snprintf(tag, sizeof(tag), "%s", colon + 1);
	rc = oci_policy_of(c, reg, &pols, &npols);
	if (rc) {
		fprintf(stderr, "larder policy check: %s: its policies do not "
		        "compile: %s\n", reg->name, strerror(rc));
		return 2;
	}
	if (!npols) {
		printf("%s applies no policy: every image is allowed\n",
		       reg->name);
		return 0;
	}
	printf("%s%s%s%s\n", repo, *tag ? ":" : "", tag,
	       *tag ? "" : " (by digest, no tag of it known)");
	for (size_t i = 0; i < npols; i++) {
		const struct oci_policy *p = &pols[i];
		int deny = oci_policy_decide(p, repo, *tag ? tag : NULL, &v);
		int done = 0;

		any |= deny;
		printf("  policy \"%s\": %s\n", p->name,
		       deny ? "denies" : "allows");
		for (size_t j = 0; j < p->nrules; j++)
			done = print_rule(p->rule[j].allow, p->rule[j].text,
			                  (int)j, v.rule, done);
		print_default(p->default_deny, done);
		printf("    %s\n", v.reason);
	}
	free(pols);
	return any;
}

/* Whether the arguments are a command's; says why not. */
static int usage_ok(int is_import, int nargs, const char **arg,
                    char *project)
{
	if (is_import ? nargs < 1 : (nargs < 2 || nargs > 3)) {
		usage();
		return 0;
	}
	if (!is_import &&
	    names_normalize(arg[1], project, NAMES_MAX_PROJECT + 1)) {
		*project = 0;
		if (nargs == 2)
			return 1; /* an image? once the config says whose */
		fprintf(stderr, "larder policy check: %s is not a project "
		        "name\n", arg[1]);
		return 0;
	}
	return 1;
}

/* Runs the command, as the store's owner. Returns the exit status. */
static int run(const char *path, int is_import, int nargs, const char **arg,
               const char *project, const struct osv_files *of)
{
	struct worker w;
	struct conf c;
	int rc, idx = -1, ri;

	if (cmd_load(&c, path))
		return 2;
	if (!is_import) {
		idx = conf_index_find(&c, arg[0]);
		ri = conf_registry_find(&c, arg[0], strlen(arg[0]));
		if (idx < 0 && ri >= 0 && nargs == 2) {
			/* the config alone decides: no store opened */
			rc = check_image(&c, ri, arg[1]);
			conf_free(&c);
			return rc;
		}
		if (!*project) {
			fprintf(stderr, "larder policy check: %s is not a "
			        "project name\n", arg[1]);
			conf_free(&c);
			return 2;
		}
		if (idx < 0 || c.index[idx].type != CONF_INDEX_CACHE) {
			fprintf(stderr, "larder policy check: %s is not a cache "
			        "index or a registry (config: %s)\n", arg[0],
			        c.source ? c.source : "built-in defaults");
			conf_free(&c);
			return 2;
		}
	}
	rc = cmd_become_owner("policy", c.data_dir);
	if (!rc)
		rc = worker_open(&w, &c, 1) ? 2 : 0;
	if (rc) {
		conf_free(&c);
		return 2;
	}
	if (is_import)
		rc = import_osv(&w, of);
	else
		rc = check(&w, idx, project, nargs == 3 ? arg[2] : NULL);
	worker_close(&w);
	conf_free(&c);
	return rc;
}

int policy_main(int argc, char **argv)
{
	const char *path = NULL, **arg;
	struct osv_files of = {0};
	char project[NAMES_MAX_PROJECT + 1] = "";
	int nargs = 0, bad = 0, rc, is_import;

	if (argc < 2)
		return usage();
	is_import = !strcmp(argv[1], "import-osv");
	if (!is_import && strcmp(argv[1], "check"))
		return usage();
	arg = calloc((size_t)argc, sizeof(*arg));
	if (!arg)
		return 2;
	for (int i = 2; i < argc; i++) {
		if (strcmp(argv[i], "-c") == 0 && i + 1 < argc)
			path = argv[++i];
		else if (argv[i][0] != '-')
			arg[nargs++] = argv[i];
		else
			bad = 1;
	}
	rc = !bad && usage_ok(is_import, nargs, arg, project) ? 0 : 2;
	if (bad)
		usage();
	if (!rc && is_import)
		rc = read_files(&of, nargs, arg) ? 2 : 0;
	if (!rc)
		rc = run(path, is_import, nargs, arg, project, &of);
	free_files(&of);
	free(arg);
	return rc;
}
