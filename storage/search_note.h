/* search_note: what the search index (storage/db/db_search.h) learns from
 * a metadata blob just stored: its Summary and Keywords headers. Errors
 * are logged and otherwise ignored: a search index that missed a summary
 * must not fail the upload or the download that stored it. */
#ifndef LARDER_SEARCH_NOTE_H
#define LARDER_SEARCH_NOTE_H

#include "storage/db/db.h"

/* The most bytes of a metadata blob read for its headers: Summary and
 * Keywords come before any long Description. */
#define SEARCH_NOTE_MAX (256 * 1024)

/* Files the Summary and Keywords of the metadata blob meta_sha (in
 * data_dir's store) under project of index; the name alone when meta_sha
 * is "" or cannot be read. Returns 0, or EIO when the write cost the
 * transaction it ran in (storage/db/db_search.h). */
int search_note_meta(struct db *db, const char *data_dir, const char *index,
		     const char *project, const char *meta_sha);

/* As search_note_meta() for every index and project whose page lists the
 * file whose sha256 is file_sha (meta_sha is that file's metadata). */
void search_note_file(struct db *db, const char *data_dir,
		      const char *file_sha, const char *meta_sha);

#endif
