/* hosted_cmd: `larder yank`, `larder unyank` and `larder remove`, the
 * command-line side of a hosted index's release changes (hosted.h). */
#ifndef LARDER_HOSTED_CMD_H
#define LARDER_HOSTED_CMD_H

/* Runs the command argv[0] ("yank", "unyank" or "remove") with its
 * arguments. Returns the exit status: 0 done, 1 no such release or
 * refused, 2 usage or I/O error. */
int hosted_cmd(int argc, char **argv);

#endif
