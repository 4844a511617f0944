/* hosted_cmd: yank, unyank and remove from the command line
 * (hosted_cmd.h). */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/names.h"
#include "fcgi/cmd/cmd.h"
#include "fcgi/cmd/hosted_cmd.h"
#include "fcgi/pypi/hosted.h"
#include "fcgi/server/worker.h"

static int usage(void)
{
	fputs("usage: larder yank [-c FILE] INDEX PROJECT VERSION "
	      "[--reason TEXT]\n"
	      "       larder unyank [-c FILE] INDEX PROJECT VERSION\n"
	      "       larder remove [-c FILE] [--force] INDEX PROJECT VERSION "
	      "[FILENAME]\n", stderr);
	return 2;
}

int hosted_cmd(int argc, char **argv)
{
	const char *cmd = argv[0], *path = NULL, *reason = "", *arg[4];
	int remove = strcmp(cmd, "remove") == 0, force = 0, idx, rc;
	char project[NAMES_MAX_PROJECT + 1], err[1024];
	size_t nargs = 0;
	struct worker w;
	struct conf c;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "-c") == 0 && i + 1 < argc)
			path = argv[++i];
		else if (!strcmp(cmd, "yank") && !strcmp(argv[i], "--reason") &&
			 i + 1 < argc)
			reason = argv[++i];
		else if (remove && strcmp(argv[i], "--force") == 0)
			force = 1;
		else if (argv[i][0] != '-' && nargs < 4)
			arg[nargs++] = argv[i];
		else
			return usage();
	}
	if (nargs < 3 || nargs > (remove ? 4u : 3u))
		return usage();
	if (names_normalize(arg[1], project, sizeof(project))) {
		fprintf(stderr, "larder %s: %s is not a project name\n", cmd,
			arg[1]);
		return 2;
	}
	if (cmd_load(&c, path))
		return 2;
	idx = conf_index_find(&c, arg[0]);
	if (idx < 0 || c.index[idx].type != CONF_INDEX_HOSTED) {
		fprintf(stderr, "larder %s: %s is not a hosted index (config: "
			"%s)\n", cmd, arg[0],
			c.source ? c.source : "built-in defaults");
		conf_free(&c);
		return 2;
	}
	if (remove && !c.index[idx].is_volatile && !force) {
		fprintf(stderr, "larder remove: %s is not volatile: yank the "
			"release, or give --force to remove it all the same\n",
			arg[0]);
		conf_free(&c);
		return 1;
	}
	rc = cmd_become_owner(cmd, c.data_dir);
	if (!rc)
		rc = worker_open(&w, &c, 1) ? 2 : 0;
	if (rc) {
		conf_free(&c);
		return 2;
	}
	if (remove)
		rc = hosted_remove(&w, idx, project, arg[2],
				   nargs == 4 ? arg[3] : "", err, sizeof(err));
	else
		rc = hosted_yank(&w, idx, project, arg[2],
				 strcmp(cmd, "yank") == 0, reason, err,
				 sizeof(err));
	if (rc)
		fprintf(stderr, "larder %s: %s\n", cmd, err);
	else
		printf("%s: %s %s %s\n", arg[0],
		       remove ? "removed" : strcmp(cmd, "yank") ? "unyanked" :
								  "yanked",
		       project, nargs == 4 ? arg[3] : arg[2]);
	worker_close(&w);
	conf_free(&c);
	return rc == 0 ? 0 : rc == ENOENT ? 1 : 2;
}
