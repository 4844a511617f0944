/* events: the webhook events (storage/webhook.h) a page of a cache index
 * raises when it is stored: a version the index never listed
 * (new-release), a file a policy newly denies (policy-denied). Each is
 * queued in the page's own transaction (fcgi/pypi/pages.c), before its
 * files' rows are written, and only when some webhook asks for it. */
#ifndef LARDER_EVENTS_H
#define LARDER_EVENTS_H

#include "common/conf/conf.h"
#include "common/pypi/simple.h"
#include "fcgi/server/worker.h"

/* Queues a new-release event for each version the files of page and held
 * (the held-back ones: first seen upstream all the same) have that no file
 * the index knew before has: a file unknown to the files table whose
 * version no known file shares. One lookup by primary key per file.
 * Returns 0 or an errno. */
int events_new_releases(struct worker *w, const struct conf_index *ix,
			const char *project, const struct simple_page *page,
			const struct simple_page *held);

/* Queues a policy-denied event for denied file sf of project (reason:
 * the policy and rule) when the index did not already hold it denied for
 * that reason: a page rendered again is no new denial. Returns 0 or an
 * errno. */
int events_denied(struct worker *w, const struct conf_index *ix,
		  const char *project, const struct simple_file *sf,
		  const char *reason);

#endif
