#include "config.h"

#include <stdio.h>
#include <string.h>

#include "fcgi/cmd/cmd.h"
#include "fcgi/cmd/search_cmd.h"
#include "storage/db/db_search.h"
#include "storage/search_note.h"

struct reindex {
	struct db *db;
	const char *data_dir;
	long n;
};

static void one(const char *index, const char *project, const char *meta_sha,
		void *ctx)
{
	struct reindex *x = ctx;

	(void)search_note_meta(x->db, x->data_dir, index, project, meta_sha);
	x->n++;
}

int search_cmd(int argc, char **argv)
{
	const char *path = NULL;
	struct reindex x = {.n = 0};
	struct conf c;
	long dropped = 0;
	int rc = 1, reindex = 0;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "-c") == 0 && i + 1 < argc) {
			path = argv[++i];
		} else if (strcmp(argv[i], "reindex") == 0) {
			reindex = 1;
		} else {
			fprintf(stderr, "usage: larder search reindex "
				"[-c FILE]\n");
			return 2;
		}
	}
	if (!reindex) {
		fprintf(stderr, "usage: larder search reindex [-c FILE]\n");
		return 2;
	}
	if (cmd_load(&c, path))
		return 2;
	if (cmd_become_owner("search", c.data_dir)) {
		conf_free(&c);
		return 2;
	}
	if (db_open(c.data_dir, &x.db)) {
		fprintf(stderr, "larder search: cannot open the store in %s\n",
			c.data_dir);
		goto done;
	}
	x.data_dir = c.data_dir;
	/* names and tags, the rows of what is gone dropped, then what the
	 * metadata says: each project's own transaction is SQLite's */
	if (db_search_names(x.db, &dropped) ||
	    db_search_meta_each(x.db, one, &x)) {
		fprintf(stderr, "larder search: cannot reindex (see above)\n");
		goto done;
	}
	printf("search index: %ld projects read from their metadata, %ld "
	       "rows of what is gone dropped\n", x.n, dropped);
	rc = 0;
done:
	if (x.db)
		db_close(x.db);
	conf_free(&c);
	return rc;
}
