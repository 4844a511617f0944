/* pypi proc: what PyPI's handlers keep per worker process, beside the
 * transport's struct worker: what an answer leaves for after it is out
 * (the likely file's metadata, a stale page's refresh, the dependencies'
 * pages) and whether a prefetch is under way. A worker process answers one
 * request at a time, so it has one of these; the transport never sees it.
 */
#ifndef LARDER_PYPI_PROC_H
#define LARDER_PYPI_PROC_H

#include <stddef.h>

#include "common/names.h"

/* A file a page names as the likely next download: the one whose
 * metadata a page refresh fetches once the page is answered (conf
 * prefetch_metadata), or a wheel a prefetch fetches after its pages
 * (prefetch_wheel_size). */
struct pypi_hint {
	int index;              /* the cache index that listed it, -1: none */
	char sha256[65];
	char filename[256];
};

/* A page answered stale within stale_while_revalidate, to be refreshed
 * once its answer is out (pages_revalidate()). */
struct pypi_revalidate {
	int index;              /* the cache index, -1: none */
	char project[256];      /* "" for the project list */
	int can_defer;          /* set by a caller that runs
	                           pages_revalidate() after its answer */
};

/* The most dependencies one answer has prefetched (fcgi/pypi/prefetch.h). */
#define PYPI_MAX_DEPS 16

/* The projects a wheel's metadata requires, noted when it is answered,
 * whose pages are prefetched once the answer is out (prefetch_run()). */
struct pypi_deps {
	int index;              /* the index the client asked, -1: none */
	size_t n;
	char name[PYPI_MAX_DEPS][NAMES_MAX_PROJECT + 1]; /* normalised */
};

/* The wheels the pages a prefetch stored list as the likeliest download
 * (simple_likely_wheel()), fetched after those pages (prefetch_run()). */
struct pypi_wheels {
	size_t n;
	struct pypi_hint f[PYPI_MAX_DEPS];
};

/* The renderings a page fetch stored whose gzip'd copies are made once
 * the answer is out (copies_make()): deflating and syncing them
 * would hold the answer (a 2.5 MB page's two: 0.15 s of CPU at level 9,
 * and four fsyncs). */
struct pypi_copies {
	int can_defer;          /* set by a caller that runs
	                           copies_make() after its answer */
	int n;
	char sha256[2][65];
};

struct pypi_proc {
	struct pypi_hint hint;
	struct pypi_copies copies;
	struct pypi_revalidate revalidate;
	struct pypi_deps deps;
	struct pypi_wheels wheels;
	int prefetching;        /* a prefetch's page fetch is under way: the
	                           page it stores is marked as prefetched */
	int prefetched;         /* pages that fetch stored */
};

/* This process's, nothing noted at first (indexes -1). Never NULL. */
struct pypi_proc *pypi_proc(void);

#endif
