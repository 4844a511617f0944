/* db_search against a real database: what the hooks write, what a query
 * keeps (the scopes shown, what is still held), the ranking, a query
 * SQLite refuses, and the rows of what is gone dropped. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/search.h"
#include "storage/db/db.h"
#include "storage/db/db_search.h"
#include "tests/unit/t.h"

static char dir[] = "/tmp/larder-test-search-XXXXXX";
static struct db *db;

static void cleanup(void)
{
	static const char *const files[] = {"larder.db", "larder.db-wal",
					    "larder.db-shm"};
	char path[512];

	if (db)
		db_close(db);
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
		unlink(path);
	}
	rmdir(dir);
}

static void page(const char *index, const char *project, int status)
{
	struct db_page p = {.status = status, .ttl = 600};

	CHECK_INT(db_page_put(db, index, project, &p), 0);
	CHECK_INT(db_search_name(db, index, project), 0);
}

/* Runs words over the scopes; the names found, space-separated, in out. */
static int run(const char *words, const char *indexes, const char *regs,
	       char *out, size_t len)
{
	char match[SEARCH_MAX_MATCH], err[256];
	struct db_search_hit hits[10];
	struct db_search_q q = {.match = match, .name_match = match,
				.exact = {words, words}, .indexes = indexes,
				.registries = regs};
	size_t n = 0;
	int rc;

	if (search_match(words, match, sizeof(match), err, sizeof(err)))
		return EINVAL;
	rc = db_search_query(db, &q, hits, 10, &n, err, sizeof(err));
	out[0] = '\0';
	for (size_t i = 0; i < n; i++)
		snprintf(out + strlen(out), len - strlen(out), "%s%s",
			 i ? " " : "", hits[i].name);
	return rc;
}

T(hooks_and_query)
{
	struct db_oci_ref ref = {.status = 200, .ttl = 600};
	char got[512];

	page("pypi", "widget", 200);
	page("pypi", "widget-tools", 200);
	page("pypi", "gone", 404); /* a remembered miss: not held */
	CHECK_INT(db_search_meta(db, "pypi", "widget-tools", "Tools for "
				 "gadgets", "spanner"), 0);
	CHECK_INT(db_search_meta(db, "pypi", "gone", "gadgets too", ""), 0);
	CHECK_INT(run("gadgets", "\npypi\n", "", got, sizeof(got)), 0);
	CHECK_STR(got, "widget-tools");
	CHECK_INT(run("spanner", "\npypi\n", "", got, sizeof(got)), 0);
	CHECK_STR(got, "widget-tools");
	/* the exact name first, then shorter names */
	CHECK_INT(run("widget", "\npypi\n", "", got, sizeof(got)), 0);
	CHECK_STR(got, "widget widget-tools");
	CHECK_INT(run("widg*", "\npypi\n", "", got, sizeof(got)), 0);
	CHECK_STR(got, "widget widget-tools");
	/* an index not shown */
	CHECK_INT(run("widget", "\nother\n", "", got, sizeof(got)), 0);
	CHECK_STR(got, "");
	/* images: a tag once, digests and list rows are no tags */
	CHECK_INT(db_oci_ref_put(db, "hub", "acme/tool", "v1", &ref), 0);
	CHECK_INT(db_oci_ref_put(db, "hub", "acme/tool", "v1", &ref), 0);
	CHECK_INT(db_oci_ref_put(db, "hub", "acme/tool", "sha256:ab", &ref),
		  0);
	CHECK_INT(db_oci_ref_put(db, "hub", "acme/tool", "/tags", &ref), 0);
	CHECK_INT(db_oci_ref_put(db, "hub", "acme/tool", "edge", &ref), 0);
	CHECK_INT(run("edge", "\npypi\n", "\nhub\n", got, sizeof(got)), 0);
	CHECK_STR(got, "acme/tool");
	CHECK_INT(run("widget", "", "\nhub\n", got, sizeof(got)), 0);
	CHECK_STR(got, "");
	{
		char match[SEARCH_MAX_MATCH], err[256];
		struct db_search_hit hits[2];
		struct db_search_q q = {.match = match, .name_match = match,
					.exact = {"", ""}, .indexes = "",
					.registries = "\nhub\n"};
		size_t n = 0;

		CHECK_INT(search_match("tool", match, sizeof(match), err,
				       sizeof(err)), 0);
		CHECK_INT(db_search_query(db, &q, hits, 2, &n, err,
					  sizeof(err)), 0);
		CHECK_INT(n, 1);
		CHECK_STR(hits[0].tags, "v1 edge");
		/* raw FTS5 syntax errors are the caller's EINVAL */
		q.match = "\"unterminated";
		CHECK_INT(db_search_query(db, &q, hits, 2, &n, err,
					  sizeof(err)), EINVAL);
		CHECK(err[0] != '\0');
		CHECK_INT(n, 0);
	}
}

T(names_drop_what_is_gone)
{
	long dropped = -1;
	char got[512];

	CHECK_INT(db_page_delete(db, "pypi", "widget"), 0);
	CHECK_INT(run("widget", "\npypi\n", "", got, sizeof(got)), 0);
	CHECK_STR(got, "widget-tools");
	CHECK_INT(db_search_names(db, &dropped), 0);
	CHECK_INT(dropped, 2); /* widget, and gone (a 404) */
	CHECK_INT(db_search_names(db, &dropped), 0);
	CHECK_INT(dropped, 0);
	/* the summary of what is held survives a reindex by name */
	CHECK_INT(run("gadgets", "\npypi\n", "", got, sizeof(got)), 0);
	CHECK_STR(got, "widget-tools");
}

int main(void)
{
	if (!mkdtemp(dir) || db_open(dir, &db)) {
		fprintf(stderr, "cannot open a database in %s\n", dir);
		return 1;
	}
	RUN(hooks_and_query);
	RUN(names_drop_what_is_gone);
	cleanup();
	return t_done();
}
