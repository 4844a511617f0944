/* cmd: config and ownership for larder's store commands (cmd.h). */
#include "config.h"

#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fcgi/cmd/cmd.h"

int cmd_load(struct conf *c, const char *path)
{
	char err[1024];

	if (conf_load(c, path, err, sizeof(err))) {
		fprintf(stderr, "larder: %s\n", err);
		return 1;
	}
	return 0;
}

int cmd_become_owner(const char *cmd, const char *data_dir)
{
	struct stat st;

	if (geteuid() != 0 || stat(data_dir, &st) < 0 || st.st_uid == 0)
		return 0;
	if (setgroups(0, NULL) < 0 || setgid(st.st_gid) < 0 ||
	    setuid(st.st_uid) < 0) {
		fprintf(stderr, "larder %s: cannot become the owner of %s "
			"(uid %ld): %s\n", cmd, data_dir, (long)st.st_uid,
			strerror(errno));
		return 2;
	}
	return 0;
}
