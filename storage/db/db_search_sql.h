/* db_search_sql: the text of the search index's tables and statements,
 * for db.c (the schema string and the statement table) and db_search.c.
 * Not for use outside storage/db/. */
#ifndef LARDER_DB_SEARCH_SQL_H
#define LARDER_DB_SEARCH_SQL_H

/* What /+search finds (schema 11): one row per project of a cache or
 * hosted index (kind 'pypi', scope the index) and per repository of a
 * registry (kind 'oci', scope the registry), an FTS5 index of its text
 * and one of its names alone (a word common in summaries costs nothing
 * there), kept by triggers. A row outlives what it names (an evicted page, a
 * removed upload, a deleted manifest): the query keeps only rows whose
 * project or repository is still held, and `larder search reindex' drops
 * the others. */
#define SEARCH_SCHEMA                                                        \
	"CREATE TABLE IF NOT EXISTS search_docs ("                           \
	"  id INTEGER PRIMARY KEY, kind TEXT NOT NULL, scope TEXT NOT NULL," \
	"  name TEXT NOT NULL, summary TEXT NOT NULL DEFAULT '',"            \
	"  keywords TEXT NOT NULL DEFAULT '', tags TEXT NOT NULL DEFAULT ''," \
	"  UNIQUE (kind, scope, name));"                                     \
	"CREATE INDEX IF NOT EXISTS search_docs_name ON search_docs (name);" \
	"CREATE VIRTUAL TABLE IF NOT EXISTS search_fts USING fts5("          \
	"  scope, name, summary, keywords, tags,"                            \
	"  content = 'search_docs', content_rowid = 'id');"                 \
	"CREATE TRIGGER IF NOT EXISTS search_docs_ai AFTER INSERT ON"        \
	"  search_docs BEGIN INSERT INTO search_fts (rowid, scope, name,"    \
	"  summary, keywords, tags) VALUES (new.id, new.scope, new.name,"    \
	"  new.summary, new.keywords, new.tags); END;"                       \
	"CREATE TRIGGER IF NOT EXISTS search_docs_ad AFTER DELETE ON"        \
	"  search_docs BEGIN INSERT INTO search_fts (search_fts, rowid,"     \
	"  scope, name, summary, keywords, tags) VALUES ('delete', old.id,"  \
	"  old.scope, old.name, old.summary, old.keywords, old.tags); END;"  \
	"CREATE TRIGGER IF NOT EXISTS search_docs_au AFTER UPDATE ON"        \
	"  search_docs BEGIN INSERT INTO search_fts (search_fts, rowid,"     \
	"  scope, name, summary, keywords, tags) VALUES ('delete', old.id,"  \
	"  old.scope, old.name, old.summary, old.keywords, old.tags);"       \
	"  INSERT INTO search_fts (rowid, scope, name, summary, keywords,"   \
	"  tags) VALUES (new.id, new.scope, new.name, new.summary,"          \
	"  new.keywords, new.tags); END;"                                    \
	"CREATE VIRTUAL TABLE IF NOT EXISTS search_names USING fts5(name,"   \
	"  content = 'search_docs', content_rowid = 'id');"                 \
	"CREATE TRIGGER IF NOT EXISTS search_names_ai AFTER INSERT ON"       \
	"  search_docs BEGIN INSERT INTO search_names (rowid, name) VALUES"  \
	"  (new.id, new.name); END;"                                         \
	"CREATE TRIGGER IF NOT EXISTS search_names_ad AFTER DELETE ON"       \
	"  search_docs BEGIN INSERT INTO search_names (search_names, rowid," \
	"  name) VALUES ('delete', old.id, old.name); END;"                  \
	"CREATE TRIGGER IF NOT EXISTS search_names_au AFTER UPDATE OF name"  \
	"  ON search_docs BEGIN INSERT INTO search_names (search_names,"     \
	"  rowid, name) VALUES ('delete', old.id, old.name);"                \
	"  INSERT INTO search_names (rowid, name) VALUES (new.id, new.name);" \
	"  END;"

/* An image's tags, as one space-separated column: what is neither a
 * digest nor a list row (as S_OCI_TAGS), at most this many bytes. */
#define SEARCH_TAGS_MAX 2000

/* What a store from before schema 11 holds, indexed by name (and an
 * image's tags): run once when the schema is brought up. Summaries and
 * keywords are in the metadata blobs, which SQL cannot read: `larder
 * search reindex' adds them. */
#define SEARCH_FROM_STORE                                                    \
	"INSERT OR IGNORE INTO search_docs (kind, scope, name)"              \
	" SELECT DISTINCT 'pypi', idx, project FROM hosted;"                 \
	"INSERT OR IGNORE INTO search_docs (kind, scope, name)"              \
	" SELECT DISTINCT 'pypi', idx, project FROM pages"                   \
	" WHERE status = 200;"                                               \
	"INSERT OR IGNORE INTO search_docs (kind, scope, name, tags)"        \
	" SELECT 'oci', registry, name, substr(coalesce(group_concat("       \
	" CASE WHEN ref NOT LIKE '%:%' AND ref NOT LIKE '/%' THEN ref END,"  \
	" ' '), ''), 1, 2000) FROM oci_refs WHERE status = 200"              \
	" GROUP BY registry, name;"

/* How many matches of the words, and of the words in a name, are ranked
 * (db_search_query()). */
#define SEARCH_CANDIDATES "300"

/* Whether the row d (of search_docs) still names something held. */
#define SEARCH_HELD                                                          \
	"(CASE d.kind WHEN 'pypi' THEN"                                      \
	" EXISTS (SELECT 1 FROM hosted h WHERE h.idx = d.scope"              \
	" AND h.project = d.name) OR EXISTS (SELECT 1 FROM pages p"          \
	" WHERE p.idx = d.scope AND p.project = d.name AND p.status = 200)"  \
	" ELSE EXISTS (SELECT 1 FROM oci_refs o WHERE o.registry = d.scope"  \
	" AND o.name = d.name AND o.status = 200) END)"

#define SEARCH_STATEMENTS                                                    \
	[S_SEARCH_NAME] = "INSERT OR IGNORE INTO search_docs (kind, scope,"  \
			  " name) VALUES ('pypi', ?1, ?2)",                  \
	[S_SEARCH_META] = "INSERT INTO search_docs (kind, scope, name,"      \
			  " summary, keywords) VALUES ('pypi', ?1, ?2, ?3,"  \
			  " ?4) ON CONFLICT (kind, scope, name) DO UPDATE"   \
			  " SET summary = excluded.summary,"                 \
			  " keywords = excluded.keywords"                    \
			  " WHERE summary != excluded.summary"               \
			  " OR keywords != excluded.keywords",               \
	/* every index and project whose page lists the file ?1 */          \
	[S_SEARCH_META_FILE] = "INSERT INTO search_docs (kind, scope, name," \
			       " summary, keywords) SELECT DISTINCT 'pypi',"  \
			       " idx, project, ?2, ?3 FROM files"             \
			       " WHERE sha256 = ?1 AND project != ''"         \
			       " AND meta_prov = 0 AND meta_sha IN (?4, '')"  \
			       " ON CONFLICT (kind, scope, name) DO UPDATE"   \
			       " SET summary = excluded.summary,"             \
			       " keywords = excluded.keywords"                \
			       " WHERE summary != excluded.summary"           \
			       " OR keywords != excluded.keywords",           \
	[S_SEARCH_TAG] = "INSERT INTO search_docs (kind, scope, name, tags)" \
			 " VALUES ('oci', ?1, ?2, ?3) ON CONFLICT (kind,"     \
			 " scope, name) DO UPDATE SET tags = trim(tags || ' '" \
			 " || excluded.tags) WHERE excluded.tags != ''"       \
			 " AND instr(' ' || tags || ' ', ' ' || excluded.tags" \
			 " || ' ') = 0 AND length(tags) + length(excluded.tags)" \
			 " < 2000",                                          \
	/* ?2 and ?3: the indexes and registries that may be shown, each   \
	 * name between newlines. FTS5's bm25() reads every match's sizes   \
	 * (300 ms for a word in 60,000 of 100,000 summaries), so the       \
	 * candidates are bounded: the exact name (?6, ?7), the first       \
	 * SEARCH_CANDIDATES matches in a name (?8 in search_names),        \
	 * the first SEARCH_CANDIDATES anywhere (?1); ranked in that order, \
	 * a shorter name first */                                          \
	[S_SEARCH_QUERY] = "SELECT d.kind, d.scope, d.name, d.summary,"      \
			   " d.keywords, d.tags FROM (SELECT id, min(k) AS k" \
			   " FROM (SELECT id, 0 AS k FROM search_docs"        \
			   " WHERE name IN (?6, ?7) UNION ALL SELECT * FROM"  \
			   " (SELECT rowid, 1 FROM search_names WHERE"        \
			   " search_names MATCH ?8 LIMIT " SEARCH_CANDIDATES  \
			   ") UNION ALL SELECT * FROM (SELECT rowid, 2 FROM"  \
			   " search_fts WHERE search_fts MATCH ?1 LIMIT "     \
			   SEARCH_CANDIDATES ")) GROUP BY id) c"             \
			   " JOIN search_docs d ON d.id = c.id"               \
			   " WHERE instr(CASE d.kind WHEN 'pypi' THEN ?2"     \
			   " ELSE ?3 END, char(10) || d.scope || char(10))"   \
			   " > 0 AND " SEARCH_HELD                           \
			   " ORDER BY c.k, length(d.name), d.name"            \
			   " LIMIT ?4 OFFSET ?5",                            \
	[S_SEARCH_DROP] = "DELETE FROM search_docs WHERE id IN (SELECT d.id" \
			  " FROM search_docs d WHERE NOT " SEARCH_HELD ")",

#endif
