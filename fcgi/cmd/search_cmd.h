/* search_cmd: `larder search reindex [-c FILE]`: rebuilds the search
 * index (storage/db/db_search.h) from what the store holds. */
#ifndef LARDER_SEARCH_CMD_H
#define LARDER_SEARCH_CMD_H

/* Runs `larder search ...` (argv[0] is "search"). Returns the exit
 * status: 0, 1 when the store could not be read or written, 2 for a bad
 * command line. */
int search_cmd(int argc, char **argv);

#endif
