#include "config.h"

#include <stdio.h>
#include <string.h>

#include "fcgi/pypi/quarantine.h"

void quarantine_note(const struct simple_page *page, struct db_page *row)
{
	snprintf(row->project_status, sizeof(row->project_status), "%s",
		 strcmp(page->status, "active") == 0 ? "" : page->status);
}

int quarantine_refused(struct worker *w, int from, const struct db_file *f)
{
	const struct conf_index *ix = &w->conf->index[from];
	struct db_page p;

	if (ix->type != CONF_INDEX_CACHE || !*f->project)
		return 0;
	/* the row of the leaf that listed the file: a virtual index's own
	 * merged row says quarantined only when all its layers do */
	return db_page_get(w->db, ix->name, f->project, &p) == 0 &&
	       p.status == 200 && strcmp(p.project_status, "quarantined") == 0;
}
