/* quarantine: PEP 792 project status on the read path. A page row keeps
 * the status its upstream page gave (db_page.project_status); a file of a
 * project whose page says quarantined is refused, even when its bytes
 * were cached before the quarantine, as the PEP has an index offer no
 * distribution of such a project. */
#ifndef LARDER_QUARANTINE_H
#define LARDER_QUARANTINE_H

#include "common/pypi/simple.h"
#include "fcgi/server/worker.h"
#include "storage/db/db.h"

/* Records page's status in row->project_status: "" for active, stated or
 * not. */
void quarantine_note(const struct simple_page *page, struct db_page *row);

/* Whether the file f, listed by the index at position from, is of a
 * project that index's page says is quarantined. One lookup of the page
 * row of f->project in that index; a listing with no project recorded
 * (made before schema 5) is not refused, and neither is a hosted index's
 * file (larder's own projects have no status). */
int quarantine_refused(struct worker *w, int from, const struct db_file *f);

#endif
