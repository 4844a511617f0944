/* simple_merge: the pure part of a virtual index's pages. The pages of one
 * project from several layers become one page (the union of their files,
 * the earlier layer's entry winning for a file name two of them list, and
 * of their versions); project lists become the sorted union of their
 * names. Also the matching of protected_names globs and the project names
 * a file name may belong to. I/O-free. */
#ifndef LARDER_SIMPLE_MERGE_H
#define LARDER_SIMPLE_MERGE_H

#include <stddef.h>

#include "common/names.h"
#include "common/pypi/simple.h"

/* How many project names simple_merge_names() gives at most. */
#define SIMPLE_MERGE_MAX_NAMES 8

/* Merges the n pages in[0..n) (all project pages, or all project lists:
 * in[0].is_list says which) into out, in[0] first. A project page gets
 * every file of in[0], then those of in[1] whose file name it does not
 * have yet, and so on (a name one page lists twice is kept once, its
 * first entry); its name is the first page's that has one; its
 * versions the union in order of appearance (NULL when no page had any);
 * its api-version the lowest any page claims, so that a 1.1 claim (which
 * promises sizes and the versions list) is made only when every page made
 * it; its PEP 792 status the first page's that states one other than
 * active, quarantined only when every page is (a quarantined layer lists
 * no files, and the others' files stay on offer). A project list gets
 * each normalised name once, spelt as the first page listing it spells
 * it, sorted by normalised name. out->dropped is the sum of the pages'.
 * The pages are left as they are; out copies what it keeps. Returns 0,
 * EINVAL (n is 0, or the pages are not of one kind), or ENOMEM; on error
 * out holds nothing to free, on success free it with simple_page_free(). */
int simple_merge(const struct simple_page *in, size_t n,
		 struct simple_page *out);

/* Takes out of the project list p every name whose normalised form
 * matches one of globs (names_globs_match). Returns how many went. */
size_t simple_merge_drop(struct simple_page *p, const char *globs);

/* Writes the normalised project names the distribution file filename may
 * belong to into out (at most max, and at most SIMPLE_MERGE_MAX_NAMES):
 * the part before the first '-' for a wheel, whose name part never holds
 * one; for other files (a legacy sdist may be "corp-lib-1.0.tar.gz") the
 * part before each '-' that has something after it. Parts that are not
 * project names are left out, and so are repeats. Returns how many. */
size_t simple_merge_names(const char *filename,
			  char out[][NAMES_MAX_PROJECT + 1], size_t max);

#endif
