/* search: a user's search words turned into an SQLite FTS5 query that
 * nothing in them can break (/+search, docs/search.md). I/O-free.
 *
 * Each whitespace-separated word becomes one FTS5 string ("..." with a '"'
 * doubled), so a user's quotes, parentheses, '-', ':', '^', AND, OR, NOT
 * and NEAR are words like any other, never syntax. A word that ends in
 * '*' is a prefix ("requ"* finds requests); a '*' anywhere else is a
 * character of the word. The words are ANDed. A word with no letter or
 * digit in it (nothing the tokenizer would keep) is dropped.
 */
#ifndef LARDER_SEARCH_H
#define LARDER_SEARCH_H

#include <stddef.h>

#define SEARCH_MAX_QUERY 256 /* bytes of the words as the user sent them */
#define SEARCH_MAX_TERMS 16  /* words */
/* room for any accepted query's FTS5 text: every byte a doubled quote,
 * plus each word's quotes, '*' and separator */
#define SEARCH_MAX_MATCH (2 * SEARCH_MAX_QUERY + 4 * SEARCH_MAX_TERMS + 1)

/* Turns the words q into an FTS5 query in out (outlen bytes, at least
 * SEARCH_MAX_MATCH for any q this accepts). Returns 0, with out "" when q
 * has no words; or EINVAL with a one-line reason in err when q is longer
 * than SEARCH_MAX_QUERY bytes, is not UTF-8, holds a control character,
 * or has more than SEARCH_MAX_TERMS words; or ENOSPC when out is too
 * small. */
int search_match(const char *q, char *out, size_t outlen, char *err,
		 size_t errlen);

/* Writes to out (outlen bytes) an FTS5 column filter that keeps the rows
 * whose scope column is one of the names in list (each ended by '\n', a
 * '\n' first: "\nmain\nhub\n"), each quoted as search_match() quotes a
 * word: {scope} : ("main" OR "hub"). The tokenizer makes a name a phrase
 * ("root/private" is "root" "private"), so this keeps a superset: the
 * caller checks each row's scope itself. Returns 0, with out "" for an
 * empty list, or ENOSPC. */
int search_scopes(const char *list, char *out, size_t outlen);

#endif
