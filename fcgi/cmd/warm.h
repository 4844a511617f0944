/* warm: `larder warm`, which fills a running larder's cache ahead of time
 * as an HTTP client of it (through the web server in front of it): the
 * pages and files of pinned requirements for given Pythons and platforms,
 * or the manifests and blobs of container images. docs/warm.md.
 */
#ifndef LARDER_WARM_H
#define LARDER_WARM_H

/* Runs `larder warm` with argv[0] "warm". Returns the exit status: 0 when
 * everything was fetched, 1 when something failed (each failure named on
 * stderr), 2 on usage or an unreadable or unpinned requirements file. */
int warm_main(int argc, char **argv);

#endif
