/* cmd: what larder's commands that work on a store share (fsck, gc,
 * token, yank, unyank, remove): loading the config and running as the
 * store's owner. */
#ifndef LARDER_CMD_H
#define LARDER_CMD_H

#include "common/conf/conf.h"

/* Loads the config (path, or the default search) into c. Returns 0, or 1
 * after printing why not. */
int cmd_load(struct conf *c, const char *path);

/* A command run by root on a store that belongs to another user (the
 * service's) becomes that user first: the files it makes (the database's
 * journal, the shared tables) must stay the service's to open. Returns 0,
 * or 2 after saying why it could not. */
int cmd_become_owner(const char *cmd, const char *data_dir);

#endif
